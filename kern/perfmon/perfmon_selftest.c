/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The self-test contract of the devices (kern/perfmon_selftest.h): the
 * loop the checks measure, and the report, one line per check with its
 * verdict, its name, what it measured and what it expected, counted into
 * the run's totals.  A device's checks (arch/x86/pmu_selftest.c) and the
 * `perfmon selftest` command (kern/perfmon/cmd/perfmon_selftest.c) both
 * use it; it knows neither.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/perfmon_selftest.h"
#include "kern/printf.h"
#include "kern/workload.h"

/* Names padded to this width, so that the values line up. */
#define PERFMON_SELFTEST_NAME_WIDTH 46

uint64_t
perfmon_selftest_spin(uint64_t n)
{
    uint64_t start = cpu_rdtsc();

    workload_spin_loop(n);
    return cpu_rdtsc() - start;
}

uint64_t
perfmon_selftest_ratio(uint64_t num, uint64_t den)
{
    if (den == 0) {
        return 0;
    }

    /* Exact while num < 2^54, which counts of a run of this test are. */
    if (num < (UINT64_MAX / 1000)) {
        return num * 1000 / den;
    }

    return num / den * 1000;
}

static void
perfmon_selftest_line(struct perfmon_selftest *st, const char *verdict,
                      const char *name, const char *measured,
                      const char *expected)
{
    char line[PERFMON_SELFTEST_LINE_SIZE];

    if (st->check != NULL) {
        st->check(st->arg, verdict, name, measured, expected);
        return;
    }

    if (expected != NULL) {
        ksnprintf(line, sizeof(line), "%-4s  %-*s %s (expected %s)", verdict,
                  PERFMON_SELFTEST_NAME_WIDTH, name, measured, expected);
    } else {
        ksnprintf(line, sizeof(line), "%-4s  %-*s %s", verdict,
                  PERFMON_SELFTEST_NAME_WIDTH, name, measured);
    }

    st->print(st->arg, line);
}

static void
perfmon_selftest_verdict(struct perfmon_selftest *st, bool pass,
                         const char *name, const char *measured,
                         const char *expected)
{
    if (pass) {
        st->nr_pass++;
    } else {
        st->nr_fail++;
    }

    perfmon_selftest_line(st, pass ? "PASS" : "FAIL", name, measured,
                          expected);
}

void
perfmon_selftest_range(struct perfmon_selftest *st, const char *name,
                       uint64_t value, uint64_t lo, uint64_t hi)
{
    char measured[32], expected[64];

    ksnprintf(measured, sizeof(measured), "%'llu", (unsigned long long)value);

    if (lo == hi) {
        ksnprintf(expected, sizeof(expected), "%'llu", (unsigned long long)lo);
    } else {
        ksnprintf(expected, sizeof(expected), "%'llu..%'llu",
                  (unsigned long long)lo, (unsigned long long)hi);
    }

    perfmon_selftest_verdict(st, value >= lo && value <= hi, name, measured,
                             expected);
}

void
perfmon_selftest_milli(struct perfmon_selftest *st, const char *name,
                       uint64_t value, uint64_t lo, uint64_t hi)
{
    char measured[32], expected[64];

    ksnprintf(measured, sizeof(measured), "%llu.%03llu",
              (unsigned long long)(value / 1000),
              (unsigned long long)(value % 1000));
    ksnprintf(expected, sizeof(expected), "%llu.%03llu..%llu.%03llu",
              (unsigned long long)(lo / 1000), (unsigned long long)(lo % 1000),
              (unsigned long long)(hi / 1000), (unsigned long long)(hi % 1000));
    perfmon_selftest_verdict(st, value >= lo && value <= hi, name, measured,
                             expected);
}

void
perfmon_selftest_hex(struct perfmon_selftest *st, const char *name,
                     uint64_t value, uint64_t expected)
{
    char measured[24], want[24];

    ksnprintf(measured, sizeof(measured), "%#llx", (unsigned long long)value);
    ksnprintf(want, sizeof(want), "%#llx", (unsigned long long)expected);
    perfmon_selftest_verdict(st, value == expected, name, measured, want);
}

void
perfmon_selftest_skip(struct perfmon_selftest *st, const char *name,
                      const char *why)
{
    st->nr_skip++;
    perfmon_selftest_line(st, "SKIP", name, why, NULL);
}

void
perfmon_selftest_fail(struct perfmon_selftest *st, const char *name,
                      const char *why)
{
    st->nr_fail++;
    perfmon_selftest_line(st, "FAIL", name, why, NULL);
}
