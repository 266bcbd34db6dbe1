/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of the devices' self-test contract (kern/perfmon/perfmon_selftest.c):
 * each report function's line (verdict, padded name, what was measured,
 * what was expected) and the run's totals, ratios in thousandths near
 * overflow and by zero, and the spin loop's TSC cycles.  The loop itself
 * (kern/workload.c) is a stand-in here that moves the fake TSC.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fakes/fake_smp.h"
#include "kern/perfmon_selftest.h"
#include "kern/workload.h"

static char lines[8][PERFMON_SELFTEST_LINE_SIZE];
static unsigned int nr_lines;
static uint64_t spun;

static void
keep_line(void *arg, const char *line)
{
    (void)arg;
    assert_true(nr_lines < 8);
    snprintf(lines[nr_lines++], sizeof(lines[0]), "%s", line);
}

/* Three TSC cycles an iteration, so that the loop's cost is known. */
void
workload_spin_loop(uint64_t n)
{
    spun += n;
    fake_cpu_advance_tsc(3 * n);
}

static int
setup(void **state)
{
    (void)state;
    fake_cpu_reset(1);
    nr_lines = 0;
    spun = 0;
    return 0;
}

static void
test_lines_and_totals(void **state)
{
    struct perfmon_selftest st = { .print = keep_line };

    (void)state;
    perfmon_selftest_range(&st, "in range", 1500, 1000, 2000);
    perfmon_selftest_range(&st, "exact, missed", 7, 8, 8);
    perfmon_selftest_milli(&st, "ratio", 1005, 950, 1050);
    perfmon_selftest_hex(&st, "register", 0x1f, 0x3f);
    perfmon_selftest_skip(&st, "skipped", "no such counter");
    perfmon_selftest_fail(&st, "failed", "the counter did not start");

    assert_int_equal(nr_lines, 6);
    assert_string_equal(lines[0],
                        "PASS  in range                                       "
                        "1,500 (expected 1,000..2,000)");
    assert_string_equal(lines[1],
                        "FAIL  exact, missed                                  "
                        "7 (expected 8)");
    assert_string_equal(lines[2],
                        "PASS  ratio                                          "
                        "1.005 (expected 0.950..1.050)");
    assert_string_equal(lines[3],
                        "FAIL  register                                       "
                        "0x1f (expected 0x3f)");
    assert_string_equal(lines[4],
                        "SKIP  skipped                                        "
                        "no such counter");
    assert_string_equal(lines[5],
                        "FAIL  failed                                         "
                        "the counter did not start");
    assert_int_equal(st.nr_pass, 2);
    assert_int_equal(st.nr_fail, 3);
    assert_int_equal(st.nr_skip, 1);
}

static void
test_ratio(void **state)
{
    (void)state;
    assert_int_equal(perfmon_selftest_ratio(1, 3), 333);
    assert_int_equal(perfmon_selftest_ratio(5, 0), 0);
    /* Past 2^54 the product would overflow: divide first. */
    assert_int_equal(perfmon_selftest_ratio(UINT64_MAX / 2, UINT64_MAX / 4),
                     2000);
}

static void
test_spin(void **state)
{
    (void)state;
    assert_int_equal(perfmon_selftest_spin(100), 300);
    assert_int_equal(spun, 100);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_lines_and_totals, setup),
        cmocka_unit_test_setup(test_ratio, setup),
        cmocka_unit_test_setup(test_spin, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
