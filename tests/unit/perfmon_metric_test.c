/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of kern/perfmon/cmd/perfmon_metric.c, the fixed-point metric
 * evaluator: the values of the formulas the tables carry (IPC, TopDown
 * level 1) against exact fractions, precedence and parentheses, names
 * with '-' and '.', division by zero, range, syntax errors and where
 * they are, and the walk over a formula's event names.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kern/error.h"
#include "kern/perfmon/cmd/perfmon_metric.h"

struct count {
    const char *name;
    uint64_t value;
};

static const struct count counts[] = {
    { "cycles", 3000 }, { "instructions", 4500 }, { "branch-misses", 7 },
    { "branches", 700 }, { "IDQ_UOPS_NOT_DELIVERED.CORE", 1200 },
    { "CPU_CLK_UNHALTED.THREAD", 1000 }, { "UOPS_RETIRED.RETIRE_SLOTS", 2000 },
    { "UOPS_ISSUED.ANY", 2400 }, { "INT_MISC.RECOVERY_CYCLES", 50 },
    { "zero", 0 }, { "huge", PERFMON_METRIC_MAX_COUNT },
    { "toohuge", PERFMON_METRIC_MAX_COUNT + 1 },
};

static int
value(void *arg, const char *name, size_t len, uint64_t *countp)
{
    (void)arg;

    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        if (strlen(counts[i].name) == len
            && memcmp(counts[i].name, name, len) == 0) {
            *countp = counts[i].value;
            return 0;
        }
    }

    return -ENOENT;
}

/* formula's value, to within 1e-4 (two decimals are printed). */
static void
check(const char *formula, double want)
{
    int64_t v = 0;
    size_t pos;
    int error = perfmon_metric_eval(formula, value, NULL, &v, &pos);
    double got = (double)v / PERFMON_METRIC_ONE;

    if (error != 0) {
        fail_msg("%s: error %d at %zu", formula, error, pos);
    }

    if (got - want > 1e-4 || want - got > 1e-4) {
        fail_msg("%s: %.9f, not %.9f", formula, got, want);
    }
}

static void
check_error(const char *formula, int want, size_t want_pos)
{
    int64_t v = 12345;
    size_t pos = 999;
    int error = perfmon_metric_eval(formula, value, NULL, &v, &pos);

    if (error != want || (want == -EINVAL && pos != want_pos)) {
        fail_msg("%s: error %d at %zu, not %d at %zu", formula, error, pos,
                 want, want_pos);
    }

    assert_int_equal(v, 12345);
}

static void
test_values(void **state)
{
    (void)state;
    check("instructions / cycles", 1.5);
    check("cycles / instructions", 2.0 / 3.0);
    check("100 * branch-misses / branches", 1.0);
    check("1000 * branch-misses / instructions", 7000.0 / 4500.0);
    /* Skylake-SP's TopDown level 1, per thread. */
    check("(100 * (IDQ_UOPS_NOT_DELIVERED.CORE / (4 * "
          "CPU_CLK_UNHALTED.THREAD)))", 30.0);
    check("(100 * (((UOPS_ISSUED.ANY - UOPS_RETIRED.RETIRE_SLOTS) + (4 * "
          "INT_MISC.RECOVERY_CYCLES)) / (4 * CPU_CLK_UNHALTED.THREAD)))",
          15.0);
    check("(100 * (UOPS_RETIRED.RETIRE_SLOTS / (4 * "
          "CPU_CLK_UNHALTED.THREAD)))", 50.0);
    /* Precedence, left to right, negative results, decimals. */
    check("1 + 2 * 3", 7.0);
    check("(1 + 2) * 3", 9.0);
    check("8 / 4 / 2", 1.0);
    check("1 - 2 - 3", -4.0);
    check("(0 - 3) * (0 - 2)", 6.0);
    check("(0 - 3) / 2", -1.5);
    check("0.5 * 3", 1.5);
    check("1.25 * 1000000", 1250000.0);
    check("0.000001 * 1000000", 0.953674);
    check("  ( cycles )  ", 3000.0);
    check("huge / huge", 1.0);
}

static void
test_errors(void **state)
{
    char deep[PERFMON_METRIC_MAX_DEPTH * 2 + 8];
    int64_t v;

    (void)state;
    check_error("cycles / zero", -EDOM, 0);
    /* A syntax error wins over an arithmetic one before it. */
    check_error("cycles / zero + (1", -EINVAL, 18);
    check_error("instructions / (cycles - cycles)", -EDOM, 0);
    check_error("toohuge", -ERANGE, 0);
    check_error("huge * huge", -ERANGE, 0);
    check_error("huge / 0.000001", -ERANGE, 0);
    check_error("nosuch + 1", -ENOENT, 0);
    check_error("", -EINVAL, 0);
    check_error("1 +", -EINVAL, 3);
    check_error("(1 + 2", -EINVAL, 6);
    check_error("1 + 2)", -EINVAL, 5);
    check_error("cycles instructions", -EINVAL, 7);
    check_error("1.1234567", -EINVAL, 8);
    check_error("2 ^ 3", -EINVAL, 2);
    check_error("- 1", -EINVAL, 0);

    memset(deep, '(', PERFMON_METRIC_MAX_DEPTH + 1);
    strcpy(&deep[PERFMON_METRIC_MAX_DEPTH + 1], "1");
    check_error(deep, -E2BIG, 0);
    memset(deep, 0, sizeof(deep));
    memset(deep, '(', PERFMON_METRIC_MAX_DEPTH);
    deep[PERFMON_METRIC_MAX_DEPTH] = '1';
    memset(&deep[PERFMON_METRIC_MAX_DEPTH + 1], ')', PERFMON_METRIC_MAX_DEPTH);
    assert_int_equal(perfmon_metric_eval(deep, value, NULL, &v, NULL), 0);
    assert_int_equal(v, PERFMON_METRIC_ONE);
    assert_int_equal(perfmon_metric_eval(NULL, value, NULL, &v, NULL),
                     -EINVAL);
}

struct seen {
    char names[8][64];
    unsigned int nr;
};

static int
note(void *arg, const char *name, size_t len)
{
    struct seen *s = arg;

    snprintf(s->names[s->nr++], sizeof(s->names[0]), "%.*s", (int)len, name);
    return 0;
}

static int
refuse(void *arg, const char *name, size_t len)
{
    (void)arg;
    (void)name;
    (void)len;
    return -ENOENT;
}

static void
test_events(void **state)
{
    struct seen s = { .nr = 0 };

    (void)state;
    assert_int_equal(perfmon_metric_events("(branch-misses / (branches - "
                                           "branch-misses)) / zero", note,
                                           &s), 3);
    assert_string_equal(s.names[0], "branch-misses");
    assert_string_equal(s.names[1], "branches");
    assert_string_equal(s.names[2], "zero");
    assert_int_equal(perfmon_metric_events("a +", note, &s), -EINVAL);
    assert_int_equal(perfmon_metric_events("a", refuse, NULL), -ENOENT);
}

static void
test_format(void **state)
{
    char buf[32];

    (void)state;
    perfmon_metric_format(PERFMON_METRIC_ONE * 3 / 2, buf, sizeof(buf));
    assert_string_equal(buf, "1.50");
    perfmon_metric_format(-PERFMON_METRIC_ONE / 4, buf, sizeof(buf));
    assert_string_equal(buf, "-0.25");
    perfmon_metric_format(PERFMON_METRIC_ONE / 1000, buf, sizeof(buf));
    assert_string_equal(buf, "0.00");
    perfmon_metric_format((int64_t)12345 * PERFMON_METRIC_ONE, buf,
                          sizeof(buf));
    assert_string_equal(buf, "12345.00");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_format),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
