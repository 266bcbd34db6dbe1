/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fakes for the host tests of the x86 PMU self-test
 * (arch/x86/pmu_selftest.c), which link the core's self-test contract
 * (kern/perfmon/perfmon_selftest.c): a print callback keeps the lines for
 * the test (fake_perfmon_selftest.h), and kern/workload.c's spin loop is
 * the modelled CPU's: each iteration retires WORKLOAD_SPIN_INSNS
 * instructions and one branch in FAKE_SELFTEST_CYCLES_PER_ITER cycles,
 * reference cycles tick with the TSC, which runs with the cycles (the
 * fake TSC moves by as many), and the PMIs raised meanwhile are delivered
 * through the driver's path, as NMIs come during a loop.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fakes/fake_perfmon_selftest.h"
#include "fakes/fake_smp.h"
#include "fakes/pmu_perfmon.h"
#include "kern/perfmon.h"
#include "kern/perfmon_selftest.h"
#include "kern/workload.h"
#include "msr_model.h"

static char fake_lines[FAKE_SELFTEST_MAX_LINES][PERFMON_SELFTEST_LINE_SIZE];
static unsigned int fake_nr_lines;

void
workload_spin_loop(uint64_t n)
{
    struct perfmon_dev *dev = fake_perfmon_dev();
    uint64_t cycles = n * FAKE_SELFTEST_CYCLES_PER_ITER;

    msr_model_inject_spread(MSR_MODEL_EV_INSTRUCTIONS,
                            n * WORKLOAD_SPIN_INSNS, cycles, false);
    msr_model_inject_spread(MSR_MODEL_EV_BRANCH, n, cycles, false);
    msr_model_inject_spread(MSR_MODEL_EV_CYCLES, cycles, cycles, false);
    msr_model_inject_spread(MSR_MODEL_EV_REF_CYCLES, cycles, cycles, false);

    while (msr_model_take_nmi()) {
        perfmon_overflow_intr(dev, NULL);
    }

    fake_cpu_advance_tsc(cycles);
}

void
fake_perfmon_selftest_print(void *arg, const char *line)
{
    (void)arg;

    if (fake_nr_lines < FAKE_SELFTEST_MAX_LINES) {
        snprintf(fake_lines[fake_nr_lines++], sizeof(fake_lines[0]), "%s",
                 line);
    }
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
