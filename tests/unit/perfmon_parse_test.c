/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of kern/perfmon_parse.c, the pure half of the `perfmon` command:
 * perf-style event lists (names, aliases, raw codes, modifiers, every kind
 * of bad syntax, overlong input, too many events), CPU lists, the generic
 * name table, edit distance and suggestions, and the integer formatting of
 * counts, ratios and repeated-run statistics at the edges of 64 bits.
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
#include "kern/perfmon.h"
#include "kern/perfmon_parse.h"

#define MAXEV   PERFMON_PARSE_MAX_EVENTS

static struct perfmon_parse_event events[MAXEV + 1];

static void
test_names_and_modifiers(void **state)
{
    struct perfmon_parse_error err;

    (void)state;
    assert_int_equal(perfmon_parse_events("cycles", events, MAXEV, &err), 1);
    assert_string_equal(events[0].spec, "cycles");
    assert_string_equal(events[0].name, "cycles");
    assert_int_equal(events[0].flags, PERFMON_EF_MODE);

    assert_int_equal(perfmon_parse_events(
        "task-clock,cs,cpu-migrations:u,branch-misses:k,cycles:uk,"
        "instructions:ku,my_ev.2", events, MAXEV, &err), 7);
    assert_string_equal(events[0].name, "task-clock");
    assert_string_equal(events[1].name, "cs");
    assert_string_equal(events[2].spec, "cpu-migrations:u");
    assert_string_equal(events[2].name, "cpu-migrations");
    assert_int_equal(events[2].flags, PERFMON_EF_USER);
    assert_string_equal(events[3].name, "branch-misses");
    assert_int_equal(events[3].flags, PERFMON_EF_KERN);
    assert_int_equal(events[4].flags, PERFMON_EF_MODE);
    assert_int_equal(events[5].flags, PERFMON_EF_MODE);
    assert_string_equal(events[5].spec, "instructions:ku");
    assert_string_equal(events[6].name, "my_ev.2");

    /* Repeats are allowed, as in perf. */
    assert_int_equal(perfmon_parse_events("cs,cs", events, MAXEV, NULL), 2);
}

static void
test_raw_codes(void **state)
{
    (void)state;
    assert_int_equal(perfmon_parse_events("r01c2,r7:u,r0,rFFFFFFFFFFFFFFFF",
                                          events, MAXEV, NULL), 4);
    assert_int_equal(events[0].flags, PERFMON_EF_MODE | PERFMON_EF_RAW);
    assert_int_equal(events[0].raw_code, 0x1c2);
    assert_string_equal(events[0].name, "");
    assert_string_equal(events[0].spec, "r01c2");
    assert_int_equal(events[1].raw_code, 7);
    assert_int_equal(events[1].flags, PERFMON_EF_USER | PERFMON_EF_RAW);
    assert_string_equal(events[1].spec, "r7:u");
    assert_int_equal(events[2].raw_code, 0);
    assert_true(events[2].flags & PERFMON_EF_RAW);
    assert_true(events[3].raw_code == UINT64_MAX);

    /* Not r + hex digits: plain names. */
    assert_int_equal(perfmon_parse_events("r,rx1,ref-cycles", events, MAXEV,
                                          NULL), 3);
    assert_string_equal(events[0].name, "r");
    assert_false(events[0].flags & PERFMON_EF_RAW);
    assert_string_equal(events[1].name, "rx1");
    assert_false(events[1].flags & PERFMON_EF_RAW);
    assert_string_equal(events[2].name, "ref-cycles");
    assert_false(events[2].flags & PERFMON_EF_RAW);
}

static void
check_bad(const char *list, int expected, const char *reason_part,
          const char *item)
{
    struct perfmon_parse_error err;

    memset(&err, 0, sizeof(err));
    assert_int_equal(perfmon_parse_events(list, events, MAXEV, &err),
                     expected);
    assert_non_null(err.reason);

    if (strstr(err.reason, reason_part) == NULL) {
        fail_msg("%s: reason \"%s\" lacks \"%s\"", list, err.reason,
                 reason_part);
    }

    assert_string_equal(err.item, item);
}

static void
test_bad_syntax(void **state)
{
    (void)state;
    check_bad("", -EINVAL, "empty event list", "");
    check_bad(",", -EINVAL, "empty event name", "");
    check_bad("cycles,", -EINVAL, "empty event name", "");
    check_bad("cycles,,cs", -EINVAL, "empty event name", "");
    check_bad(":u", -EINVAL, "empty event name", ":u");
    check_bad("cycles:", -EINVAL, "modifier", "cycles:");
    check_bad("cs,cycles:p", -EINVAL, "modifier", "cycles:p");
    check_bad("cycles:uh", -EINVAL, "modifier", "cycles:uh");
    check_bad("cycles:U", -EINVAL, "modifier", "cycles:U");
    check_bad("cycles:u:k", -EINVAL, "more than one", "cycles:u:k");
    check_bad("{cycles,instructions}", -EINVAL, "groups", "{cycles");
    check_bad("cpu/event=0xc2/", -EINVAL, "PMU terms", "cpu/event=0xc2/");
    check_bad("cy cles", -EINVAL, "bad character", "cy cles");
    check_bad("cycles\t", -EINVAL, "bad character", "cycles\t");
    check_bad("cyc=1", -EINVAL, "bad character", "cyc=1");
    check_bad("r1FFFFFFFFFFFFFFFF", -EINVAL, "64 bits", "r1FFFFFFFFFFFFFFFF");
    check_bad("\xe9v", -EINVAL, "bad character", "\xe9v");

    assert_int_equal(perfmon_parse_events(NULL, events, MAXEV, NULL),
                     -EINVAL);
    assert_int_equal(perfmon_parse_events("cs", NULL, MAXEV, NULL), -EINVAL);
}

static void
test_overlong_input(void **state)
{
    char list[PERFMON_PARSE_LIST_MAX + 2];
    char name[PERFMON_PARSE_NAME_SIZE + 1];
    struct perfmon_parse_error err;
    char *p;

    (void)state;

    /* The longest name fits, one more character does not. */
    memset(name, 'a', PERFMON_PARSE_NAME_SIZE - 1);
    name[PERFMON_PARSE_NAME_SIZE - 1] = '\0';
    assert_int_equal(perfmon_parse_events(name, events, MAXEV, &err), 1);
    assert_string_equal(events[0].name, name);
    strcat(name, "a");
    assert_int_equal(perfmon_parse_events(name, events, MAXEV, &err), -E2BIG);
    assert_string_equal(err.reason, "event name too long");
    assert_int_equal(strlen(err.item), PERFMON_PARSE_NAME_SIZE - 1);

    /* A list of exactly the maximum length parses; one more is refused. */
    p = list;

    for (unsigned int i = 0; i < 8; i++) {
        p += sprintf(p, "%s%030u", (i == 0) ? "" : ",", i);
    }

    memset(p, 'b', PERFMON_PARSE_LIST_MAX - (size_t)(p - list));
    list[PERFMON_PARSE_LIST_MAX] = '\0';
    assert_int_equal(strlen(list), PERFMON_PARSE_LIST_MAX);
    /* 8 * 31 = 248 characters, then 7 b's appended to the last item. */
    assert_int_equal(perfmon_parse_events(list, events, MAXEV, &err), -E2BIG);
    assert_string_equal(err.reason, "event name too long");
    list[247] = ',';
    assert_int_equal(perfmon_parse_events(list, events, MAXEV, &err), 9);
    assert_string_equal(events[8].name, "bbbbbbb");

    list[PERFMON_PARSE_LIST_MAX] = 'c';
    list[PERFMON_PARSE_LIST_MAX + 1] = '\0';
    assert_int_equal(perfmon_parse_events(list, events, MAXEV, &err), -E2BIG);
    assert_string_equal(err.reason, "event list too long");
}

static void
test_too_many_events(void **state)
{
    char list[PERFMON_PARSE_LIST_MAX + 1] = "";
    struct perfmon_parse_error err;

    (void)state;

    for (unsigned int i = 0; i < MAXEV; i++) {
        strcat(list, (i == 0) ? "cs" : ",cs");
    }

    assert_int_equal(perfmon_parse_events(list, events, MAXEV, &err), MAXEV);
    strcat(list, ",cycles");
    assert_int_equal(perfmon_parse_events(list, events, MAXEV, &err), -E2BIG);
    assert_string_equal(err.reason, "too many events");
    assert_string_equal(err.item, "cycles");

    /* max bounds the writes: the slot past it is never touched. */
    memset(&events[2], 0x5a, sizeof(events[2]));
    assert_int_equal(perfmon_parse_events("cs,cs,cs", events, 2, &err),
                     -E2BIG);
    assert_int_equal(events[2].spec[0], 0x5a);
}

static void
check_cpus(const char *s, unsigned int nr, int expected, uint64_t mask)
{
    uint64_t got = 0xdeadbeef;

    assert_int_equal(perfmon_parse_cpulist(s, nr, &got), expected);

    if (expected == 0) {
        assert_true(got == mask);
    } else {
        assert_true(got == 0xdeadbeef);
    }
}

static void
test_cpulist(void **state)
{
    (void)state;
    check_cpus("0", 4, 0, 0x1);
    check_cpus("0,2-3", 4, 0, 0xd);
    check_cpus("3,1", 4, 0, 0xa);
    check_cpus("1-1", 4, 0, 0x2);
    check_cpus("0-3,1-2,2", 4, 0, 0xf);
    check_cpus("007", 8, 0, 0x80);
    check_cpus("0-63", 64, 0, UINT64_MAX);
    check_cpus("63", 200, 0, 1ULL << 63);

    check_cpus("4", 4, -ERANGE, 0);
    check_cpus("0,2-4", 4, -ERANGE, 0);
    check_cpus("64", 200, -ERANGE, 0);
    check_cpus("99999999999999999999999", 4, -ERANGE, 0);

    check_cpus("", 4, -EINVAL, 0);
    check_cpus(",", 4, -EINVAL, 0);
    check_cpus("1,", 4, -EINVAL, 0);
    check_cpus(",1", 4, -EINVAL, 0);
    check_cpus("1,,2", 4, -EINVAL, 0);
    check_cpus("3-1", 4, -EINVAL, 0);
    check_cpus("1-", 4, -EINVAL, 0);
    check_cpus("-1", 4, -EINVAL, 0);
    check_cpus("1--2", 4, -EINVAL, 0);
    check_cpus("1-2-3", 4, -EINVAL, 0);
    check_cpus("a", 4, -EINVAL, 0);
    check_cpus("1 ", 4, -EINVAL, 0);
    check_cpus(" 1", 4, -EINVAL, 0);
    check_cpus("0x1", 4, -EINVAL, 0);
    /* The first problem decides: a range error before a syntax error. */
    check_cpus("9,x", 4, -ERANGE, 0);
    check_cpus("x,9", 4, -EINVAL, 0);

    assert_int_equal(perfmon_parse_cpulist(NULL, 4, &(uint64_t){ 0 }),
                     -EINVAL);
    assert_int_equal(perfmon_parse_cpulist("0", 4, NULL), -EINVAL);
}

static void
test_name_table(void **state)
{
    bool canonical[PERFMON_NR_EVENTS] = { false };
    unsigned int nr = perfmon_parse_nr_names();

    (void)state;
    assert_true(nr >= PERFMON_NR_EVENTS);
    assert_null(perfmon_parse_name_get(nr));

    for (unsigned int i = 0; i < nr; i++) {
        const struct perfmon_parse_name *n = perfmon_parse_name_get(i);

        assert_non_null(n);
        assert_true(n->id < PERFMON_NR_EVENTS);

        if (n->alias) {
            /* An alias follows its canonical name. */
            assert_true(canonical[n->id]);
            assert_null(n->desc);
        } else {
            assert_false(canonical[n->id]);
            assert_non_null(n->desc);
            canonical[n->id] = true;
        }
    }

    for (unsigned int id = 0; id < PERFMON_NR_EVENTS; id++) {
        assert_true(canonical[id]);
    }

    assert_string_equal(perfmon_parse_name_get(0)->name, "cycles");
}

static void
test_distance(void **state)
{
    (void)state;
    assert_int_equal(perfmon_parse_distance("", ""), 0);
    assert_int_equal(perfmon_parse_distance("abc", ""), 3);
    assert_int_equal(perfmon_parse_distance("", "abc"), 3);
    assert_int_equal(perfmon_parse_distance("cycles", "cycles"), 0);
    assert_int_equal(perfmon_parse_distance("cycle", "cycles"), 1);
    assert_int_equal(perfmon_parse_distance("cyclez", "cycles"), 1);
    assert_int_equal(perfmon_parse_distance("kitten", "sitting"), 3);
    assert_int_equal(perfmon_parse_distance("flaw", "lawn"), 2);
    assert_int_equal(perfmon_parse_distance("intsructions", "instructions"),
                     2);
}

static void
test_suggest(void **state)
{
    static const char *const cands[] = {
        "cycles", "cpu-cycles", "instructions", "context-switches", "cs",
        "cpu-migrations", "migrations", "task-clock", "cycles", NULL,
    };
    const char *out[4];

    (void)state;
    assert_int_equal(perfmon_parse_suggest("cyclez", cands,
                                           ARRAY_SIZE(cands), out, 4), 1);
    assert_string_equal(out[0], "cycles");

    assert_int_equal(perfmon_parse_suggest("instrucions", cands,
                                           ARRAY_SIZE(cands), out, 4), 1);
    assert_string_equal(out[0], "instructions");

    /* A prefix of 3 characters or more counts as close. */
    assert_int_equal(perfmon_parse_suggest("context", cands,
                                           ARRAY_SIZE(cands), out, 4), 1);
    assert_string_equal(out[0], "context-switches");

    /* Ties come in table order; max_out bounds them. */
    assert_int_equal(perfmon_parse_suggest("cpu-", cands, ARRAY_SIZE(cands),
                                           out, 4), 2);
    assert_string_equal(out[0], "cpu-cycles");
    assert_string_equal(out[1], "cpu-migrations");
    assert_int_equal(perfmon_parse_suggest("cpu-", cands, ARRAY_SIZE(cands),
                                           out, 1), 1);
    assert_string_equal(out[0], "cpu-cycles");

    /* Nothing close: nothing offered. */
    assert_int_equal(perfmon_parse_suggest("zzzzzzzz", cands,
                                           ARRAY_SIZE(cands), out, 4), 0);
    assert_int_equal(perfmon_parse_suggest("qq", cands, ARRAY_SIZE(cands),
                                           out, 4), 1);
    assert_string_equal(out[0], "cs");

    assert_int_equal(perfmon_parse_suggest(NULL, cands, 1, out, 4), 0);
    assert_int_equal(perfmon_parse_suggest("x", NULL, 1, out, 4), 0);
    assert_int_equal(perfmon_parse_suggest("x", cands, 1, NULL, 4), 0);
}

static void
test_fmt_count(void **state)
{
    char buf[32];

    (void)state;
    perfmon_fmt_count(buf, sizeof(buf), 0);
    assert_string_equal(buf, "0");
    perfmon_fmt_count(buf, sizeof(buf), 999);
    assert_string_equal(buf, "999");
    perfmon_fmt_count(buf, sizeof(buf), 1000);
    assert_string_equal(buf, "1,000");
    perfmon_fmt_count(buf, sizeof(buf), 1234567);
    assert_string_equal(buf, "1,234,567");
    assert_int_equal(perfmon_fmt_count(buf, sizeof(buf), UINT64_MAX), 26);
    assert_string_equal(buf, "18,446,744,073,709,551,615");

    /* Truncated like snprintf, the needed length returned. */
    assert_int_equal(perfmon_fmt_count(buf, 4, 1234567), 9);
    assert_string_equal(buf, "1,2");
}

static void
check_ratio(uint64_t num, uint64_t den, unsigned int decimals,
            const char *expected)
{
    char buf[48];

    perfmon_fmt_ratio(buf, sizeof(buf), num, den, decimals, true);
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
    perfmon_fmt_ratio(buf, sizeof(buf), 1234567891, 1000, 3, false);
    assert_string_equal(buf, "1234567.891");
    perfmon_fmt_ratio(buf, sizeof(buf), 12345678, 1, 0, false);
    assert_string_equal(buf, "12345678");
    assert_int_equal(perfmon_fmt_ratio(buf, 6, 1234567891, 1000, 3, false),
                     11);
    assert_string_equal(buf, "12345");
}

static void
test_muldiv_isqrt(void **state)
{
    (void)state;
    assert_true(perfmon_muldiv(6, 7, 3) == 14);
    assert_true(perfmon_muldiv(7, 1, 2) == 3);
    assert_true(perfmon_muldiv(UINT64_MAX, UINT64_MAX, UINT64_MAX)
                == UINT64_MAX);
    assert_true(perfmon_muldiv(1ULL << 63, 4, 8) == 1ULL << 62);
    assert_true(perfmon_muldiv(UINT64_MAX, 1000000000, 3000000000ULL)
                == UINT64_MAX / 3);
    assert_true(perfmon_muldiv(UINT64_MAX, 2, 1) == UINT64_MAX);
    assert_true(perfmon_muldiv(5, 5, 0) == 0);

    assert_true(perfmon_isqrt(0) == 0);
    assert_true(perfmon_isqrt(1) == 1);
    assert_true(perfmon_isqrt(3) == 1);
    assert_true(perfmon_isqrt(4) == 2);
    assert_true(perfmon_isqrt(99) == 9);
    assert_true(perfmon_isqrt(1000000000000000000ULL) == 1000000000);
    assert_true(perfmon_isqrt(UINT64_MAX) == 0xffffffffULL);
    assert_true(perfmon_isqrt(0xfffffffe00000001ULL) == 0xffffffffULL);
    assert_true(perfmon_isqrt(0xfffffffe00000000ULL) == 0xfffffffeULL);
}

static void
check_stats(const uint64_t *v, unsigned int nr, uint64_t mean, uint64_t rsd)
{
    uint64_t got_mean, got_rsd;

    assert_int_equal(perfmon_stats(v, nr, &got_mean, &got_rsd), 0);
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
    assert_int_equal(perfmon_stats((uint64_t[]){ UINT64_MAX, 0 }, 2, &mean,
                                   &rsd), 0);
    assert_true(mean == UINT64_MAX / 2);
    assert_in_range(rsd, 9999, 10000);
    check_stats((uint64_t[]){ 42 }, 1, 42, 0);
    check_stats((uint64_t[]){ 0, 0, 0 }, 3, 0, 0);

    assert_int_equal(perfmon_stats(NULL, 2, &mean, &rsd), -EINVAL);
    assert_int_equal(perfmon_stats((uint64_t[]){ 1 }, 0, &mean, &rsd),
                     -EINVAL);
    assert_int_equal(perfmon_stats((uint64_t[]){ 1 }, 1, NULL, &rsd),
                     -EINVAL);
    assert_int_equal(perfmon_stats((uint64_t[]){ 1 }, 1, &mean, NULL),
                     -EINVAL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_modifiers),
        cmocka_unit_test(test_raw_codes),
        cmocka_unit_test(test_bad_syntax),
        cmocka_unit_test(test_overlong_input),
        cmocka_unit_test(test_too_many_events),
        cmocka_unit_test(test_cpulist),
        cmocka_unit_test(test_name_table),
        cmocka_unit_test(test_distance),
        cmocka_unit_test(test_suggest),
        cmocka_unit_test(test_fmt_count),
        cmocka_unit_test(test_fmt_ratio),
        cmocka_unit_test(test_fmt_ratio_plain),
        cmocka_unit_test(test_muldiv_isqrt),
        cmocka_unit_test(test_stats),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
