/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel suite "pmu_accuracy" (what tools/hwcheck boots with the step
 * PMU where the guest has a PMU): `perfmon selftest --accuracy` as a KTAP
 * test, its tables as diagnostics: the multiplexing error, and where
 * there is a hardware PMU its over-count and skid against the step PMU.
 * Skipped without the step PMU (boot with perfmon.step=on); a measurement
 * that cannot be set up fails it.
 */

#include <stdbool.h>
#include <stddef.h>

#include "kern/ktest.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_accuracy.h"

static void
pmu_accuracy_test_print(void *arg, const char *line)
{
    (void)arg;
    ktest_diag("%s", line);
}

static int
pmu_accuracy_test_run(void)
{
    struct perfmon_accuracy_out out = { .print = pmu_accuracy_test_print };

    if (perfmon_dev_find("step") == NULL) {
        ktest_skip_reason("no step PMU (boot with perfmon.step=on)");
        return KTEST_SKIP;
    }

    KTEST_ASSERT_EQ(perfmon_accuracy_run(&out, NULL), 0);
    return KTEST_PASS;
}

KTEST_DEFINE(pmu_accuracy, run, pmu_accuracy_test_run);
