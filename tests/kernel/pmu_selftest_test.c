/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel suite "pmu_selftest" (run alone with `test=pmu_selftest`; with
 * the "pmu" suite it is what tools/hwcheck boots): `perfmon selftest` as a
 * KTAP test, its lines as diagnostics.  Everywhere, the software-PMU
 * checks; where the guest sees a PMU (tools/hwcheck under
 * `-enable-kvm -cpu host`), every hardware check too.  A FAIL line fails
 * the test; SKIPs do not.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/ktest.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_selftest.h"

static void
pmu_selftest_test_print(void *arg, const char *line)
{
    (void)arg;
    ktest_diag("%s", line);
}

static int
pmu_selftest_test_run(void)
{
    struct perfmon_selftest st = { .print = pmu_selftest_test_print };
    unsigned int failed;

    failed = perfmon_selftest_run(&st);
    KTEST_ASSERT_EQ(failed, 0);
    KTEST_ASSERT(st.nr_pass > 0);
    KTEST_ASSERT(!st.stopped);
    return KTEST_PASS;
}

KTEST_DEFINE(pmu_selftest, run, pmu_selftest_test_run);
