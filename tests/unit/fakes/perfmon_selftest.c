/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fake of kern/perfmon_selftest.c for the host tests of the x86 PMU
 * self-test (arch/x86/pmu_selftest.c): the report functions format their
 * lines as the kernel does and keep them for the test
 * (fake_perfmon_selftest.h); the spin loop is the modelled CPU's: each
 * iteration retires PERFMON_SELFTEST_SPIN_INSNS instructions and one
 * branch in FAKE_SELFTEST_CYCLES_PER_ITER cycles, reference cycles tick
 * with the TSC, which runs with the cycles, and the PMIs raised meanwhile
 * are delivered through the driver's path, as NMIs come during a loop.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fakes/fake_perfmon_selftest.h"
#include "fakes/pmu_perfmon.h"
#include "kern/perfmon.h"
#include "kern/perfmon_selftest.h"
#include "msr_model.h"

static char fake_lines[FAKE_SELFTEST_MAX_LINES][160];
static unsigned int fake_nr_lines;

static void
fake_selftest_add(struct perfmon_selftest *st, const char *verdict,
                  const char *name, const char *measured, const char *expected)
{
    if (fake_nr_lines == FAKE_SELFTEST_MAX_LINES) {
        return;
    }

    snprintf(fake_lines[fake_nr_lines++], sizeof(fake_lines[0]),
             "%-4s  %s: %s%s%s%s", verdict, name, measured,
             expected ? " (expected " : "", expected ? expected : "",
             expected ? ")" : "");
    (void)st;
}

uint64_t
perfmon_selftest_spin(uint64_t n)
{
    struct perfmon_dev *dev = fake_perfmon_dev();
    uint64_t cycles = n * FAKE_SELFTEST_CYCLES_PER_ITER;

    msr_model_inject_spread(MSR_MODEL_EV_INSTRUCTIONS,
                            n * PERFMON_SELFTEST_SPIN_INSNS, cycles, false);
    msr_model_inject_spread(MSR_MODEL_EV_BRANCH, n, cycles, false);
    msr_model_inject_spread(MSR_MODEL_EV_CYCLES, cycles, cycles, false);
    msr_model_inject_spread(MSR_MODEL_EV_REF_CYCLES, cycles, cycles, false);

    while (msr_model_take_nmi()) {
        perfmon_overflow_intr(dev, NULL);
    }

    return cycles;
}

uint64_t
perfmon_selftest_ratio(uint64_t num, uint64_t den)
{
    return (den == 0) ? 0 : num * 1000 / den;
}

static void
fake_selftest_verdict(struct perfmon_selftest *st, bool pass, const char *name,
                      const char *measured, const char *expected)
{
    if (pass) {
        st->nr_pass++;
    } else {
        st->nr_fail++;
    }

    fake_selftest_add(st, pass ? "PASS" : "FAIL", name, measured, expected);
}

void
perfmon_selftest_range(struct perfmon_selftest *st, const char *name,
                       uint64_t value, uint64_t lo, uint64_t hi)
{
    char measured[32], expected[64];

    snprintf(measured, sizeof(measured), "%llu", (unsigned long long)value);
    snprintf(expected, sizeof(expected), "%llu..%llu", (unsigned long long)lo,
             (unsigned long long)hi);
    fake_selftest_verdict(st, value >= lo && value <= hi, name, measured,
                          expected);
}

void
perfmon_selftest_milli(struct perfmon_selftest *st, const char *name,
                       uint64_t value, uint64_t lo, uint64_t hi)
{
    char measured[32], expected[64];

    snprintf(measured, sizeof(measured), "%llu.%03llu",
             (unsigned long long)(value / 1000),
             (unsigned long long)(value % 1000));
    snprintf(expected, sizeof(expected), "%llu..%llu milli",
             (unsigned long long)lo, (unsigned long long)hi);
    fake_selftest_verdict(st, value >= lo && value <= hi, name, measured,
                          expected);
}

void
perfmon_selftest_hex(struct perfmon_selftest *st, const char *name,
                     uint64_t value, uint64_t expected)
{
    char measured[24], want[24];

    snprintf(measured, sizeof(measured), "%#llx", (unsigned long long)value);
    snprintf(want, sizeof(want), "%#llx", (unsigned long long)expected);
    fake_selftest_verdict(st, value == expected, name, measured, want);
}

void
perfmon_selftest_skip(struct perfmon_selftest *st, const char *name,
                      const char *why)
{
    st->nr_skip++;
    fake_selftest_add(st, "SKIP", name, why, NULL);
}

void
perfmon_selftest_fail(struct perfmon_selftest *st, const char *name,
                      const char *why)
{
    st->nr_fail++;
    fake_selftest_add(st, "FAIL", name, why, NULL);
}

void
fake_perfmon_selftest_reset(void)
{
    fake_nr_lines = 0;
}

unsigned int
fake_perfmon_selftest_nr_lines(void)
{
    return fake_nr_lines;
}

const char *
fake_perfmon_selftest_line(unsigned int i)
{
    return (i < fake_nr_lines) ? fake_lines[i] : NULL;
}

const char *
fake_perfmon_selftest_find(const char *text)
{
    for (unsigned int i = 0; i < fake_nr_lines; i++) {
        if (strstr(fake_lines[i], text) != NULL) {
            return fake_lines[i];
        }
    }

    return NULL;
}
