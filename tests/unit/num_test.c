/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of kern/num.c: the integer formatting of counts and ratios, the
 * 128-bit multiply-divide, the integer square root and repeated-run
 * statistics, at the edges of 64 bits.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kern/error.h"
#include "kern/num.h"

static void
test_fmt_count(void **state)
{
    char buf[32];

    (void)state;
    num_fmt_count(buf, sizeof(buf), 0);
    assert_string_equal(buf, "0");
    num_fmt_count(buf, sizeof(buf), 999);
    assert_string_equal(buf, "999");
    num_fmt_count(buf, sizeof(buf), 1000);
    assert_string_equal(buf, "1,000");
    num_fmt_count(buf, sizeof(buf), 1234567);
    assert_string_equal(buf, "1,234,567");
    assert_int_equal(num_fmt_count(buf, sizeof(buf), UINT64_MAX), 26);
    assert_string_equal(buf, "18,446,744,073,709,551,615");

    /* Truncated like snprintf, the needed length returned. */
    assert_int_equal(num_fmt_count(buf, 4, 1234567), 9);
    assert_string_equal(buf, "1,2");
}

static void
check_ratio(uint64_t num, uint64_t den, unsigned int decimals,
            const char *expected)
{
    char buf[48];

    num_fmt_ratio(buf, sizeof(buf), num, den, decimals, true);
    assert_string_equal(buf, expected);
}

static void
test_fmt_ratio(void **state)
{
    (void)state;
    check_ratio(1, 3, 2, "0.33");
    check_ratio(2, 3, 2, "0.67");
    check_ratio(1, 8, 2, "0.13");           /* 0.125: half rounds up */
    check_ratio(999995, 1000000, 2, "1.00");  /* carry into the integer */
    check_ratio(1999, 1000, 2, "2.00");
    check_ratio(1234567, 1, 0, "1,234,567");
    check_ratio(1234567891, 1000, 3, "1,234,567.891");
    check_ratio(5, 0, 2, "0.00");
    check_ratio(0, 7, 3, "0.000");
    check_ratio(1, 3, 9, "0.333333333");
    check_ratio(1, 3, 12, "0.333333333");   /* at most 9 decimals */
    check_ratio(UINT64_MAX, 1, 2, "18,446,744,073,709,551,615.00");
    check_ratio(UINT64_MAX, UINT64_MAX - 1, 4, "1.0000");
    check_ratio(UINT64_MAX - 1, UINT64_MAX, 2, "1.00");
    check_ratio(UINT64_MAX / 3, UINT64_MAX, 3, "0.333");
}

static void
test_fmt_ratio_plain(void **state)
{
    char buf[48];

    (void)state;
    /* For -x output: no grouping, which would clash with a ',' separator. */
    num_fmt_ratio(buf, sizeof(buf), 1234567891, 1000, 3, false);
    assert_string_equal(buf, "1234567.891");
    num_fmt_ratio(buf, sizeof(buf), 12345678, 1, 0, false);
    assert_string_equal(buf, "12345678");
    assert_int_equal(num_fmt_ratio(buf, 6, 1234567891, 1000, 3, false),
                     11);
    assert_string_equal(buf, "12345");
}

/* Truncated to hundredths of a percent, then written with two decimals. */
static void
test_fmt_percent(void **state)
{
    char buf[32];

    (void)state;
    num_fmt_percent(buf, sizeof(buf), 1, 3, false);
    assert_string_equal(buf, "33.33");
    num_fmt_percent(buf, sizeof(buf), 2, 3, false);
    assert_string_equal(buf, "66.66");
    num_fmt_percent(buf, sizeof(buf), 25000, 1, true);
    assert_string_equal(buf, "2,500,000.00");
    num_fmt_percent(buf, sizeof(buf), 5, 0, false);
    assert_string_equal(buf, "0.00");
}

static void
test_muldiv_isqrt(void **state)
{
    (void)state;
    assert_true(num_muldiv(6, 7, 3) == 14);
    assert_true(num_muldiv(7, 1, 2) == 3);
    assert_true(num_muldiv(UINT64_MAX, UINT64_MAX, UINT64_MAX)
                == UINT64_MAX);
    assert_true(num_muldiv(1ULL << 63, 4, 8) == 1ULL << 62);
    assert_true(num_muldiv(UINT64_MAX, 1000000000, 3000000000ULL)
                == UINT64_MAX / 3);
    assert_true(num_muldiv(UINT64_MAX, 2, 1) == UINT64_MAX);
    assert_true(num_muldiv(5, 5, 0) == 0);

    assert_true(num_isqrt(0) == 0);
    assert_true(num_isqrt(1) == 1);
    assert_true(num_isqrt(3) == 1);
    assert_true(num_isqrt(4) == 2);
    assert_true(num_isqrt(99) == 9);
    assert_true(num_isqrt(1000000000000000000ULL) == 1000000000);
    assert_true(num_isqrt(UINT64_MAX) == 0xffffffffULL);
    assert_true(num_isqrt(0xfffffffe00000001ULL) == 0xffffffffULL);
    assert_true(num_isqrt(0xfffffffe00000000ULL) == 0xfffffffeULL);
}

static void
check_stats(const uint64_t *v, unsigned int nr, uint64_t mean, uint64_t rsd)
{
    uint64_t got_mean, got_rsd;

    assert_int_equal(num_stats(v, nr, &got_mean, &got_rsd), 0);
    assert_true(got_mean == mean);

    if (got_rsd != rsd) {
        fail_msg("rsd %llu, expected %llu", (unsigned long long)got_rsd,
                 (unsigned long long)rsd);
    }
}

static void
test_stats(void **state)
{
    uint64_t mean, rsd;

    (void)state;
    check_stats((uint64_t[]){ 100, 100, 100 }, 3, 100, 0);
    /* sd of the mean = sqrt(200 / 1 / 2) = 10: 10% of 100. */
    check_stats((uint64_t[]){ 90, 110 }, 2, 100, 1000);
    /* sqrt(10 / 4 / 5) = 0.7071 of 3: 23.57%. */
    check_stats((uint64_t[]){ 1, 2, 3, 4, 5 }, 5, 3, 2357);
    /* 2 of 1,000,000,000: far below a hundredth of a percent. */
    check_stats((uint64_t[]){ 999999998, 1000000002 }, 2, 1000000000, 0);
    /* Large values: deviations of 5e15 around 1.005e18, 0.4975%. */
    check_stats((uint64_t[]){ 1000000000000000000ULL,
                              1010000000000000000ULL }, 2,
                1005000000000000000ULL, 49);
    /* Near the top: no overflow in the mean nor in the squares. */
    check_stats((uint64_t[]){ UINT64_MAX, UINT64_MAX - 2 }, 2,
                UINT64_MAX - 1, 0);
    /* 100% at the very edge: 31 significant bits may leave it one low. */
    assert_int_equal(num_stats((uint64_t[]){ UINT64_MAX, 0 }, 2, &mean,
                                   &rsd), 0);
    assert_true(mean == UINT64_MAX / 2);
    assert_in_range(rsd, 9999, 10000);
    check_stats((uint64_t[]){ 42 }, 1, 42, 0);
    check_stats((uint64_t[]){ 0, 0, 0 }, 3, 0, 0);

    assert_int_equal(num_stats(NULL, 2, &mean, &rsd), -EINVAL);
    assert_int_equal(num_stats((uint64_t[]){ 1 }, 0, &mean, &rsd),
                     -EINVAL);
    assert_int_equal(num_stats((uint64_t[]){ 1 }, 1, NULL, &rsd),
                     -EINVAL);
    assert_int_equal(num_stats((uint64_t[]){ 1 }, 1, &mean, NULL),
                     -EINVAL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fmt_count),
        cmocka_unit_test(test_fmt_ratio),
        cmocka_unit_test(test_fmt_ratio_plain),
        cmocka_unit_test(test_fmt_percent),
        cmocka_unit_test(test_muldiv_isqrt),
        cmocka_unit_test(test_stats),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
