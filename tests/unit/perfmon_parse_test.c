/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of kern/perfmon/cmd/perfmon_parse.c, the pure half of the `perfmon` command:
 * perf-style event lists (names, aliases, raw codes, modifiers, every kind
 * of bad syntax, overlong input, too many events), CPU lists, edit
 * distance and suggestions, -j branch filters (names, formatting).
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
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_parse.h"

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
test_pmu_names(void **state)
{
    (void)state;
    assert_int_equal(perfmon_parse_events(
        "step/instructions/,step/instructions-nmi/:k,soft/r7/:u,cs",
        events, MAXEV, NULL), 4);
    assert_string_equal(events[0].spec, "step/instructions/");
    assert_string_equal(events[0].pmu, "step");
    assert_string_equal(events[0].name, "instructions");
    assert_int_equal(events[0].flags, PERFMON_EF_MODE);
    assert_string_equal(events[1].pmu, "step");
    assert_string_equal(events[1].name, "instructions-nmi");
    assert_int_equal(events[1].flags, PERFMON_EF_KERN);
    assert_string_equal(events[2].pmu, "soft");
    assert_int_equal(events[2].raw_code, 7);
    assert_int_equal(events[2].flags, PERFMON_EF_USER | PERFMON_EF_RAW);
    assert_string_equal(events[2].spec, "soft/r7/:u");
    /* A plain name names no device. */
    assert_string_equal(events[3].pmu, "");
}

/*
 * A list refused with -EINVAL: the reason given contains reason_part, and
 * the item blamed is item.
 */
static void
check_bad(const char *list, const char *reason_part, const char *item)
{
    struct perfmon_parse_error err;
    int error;

    memset(&err, 0, sizeof(err));
    error = perfmon_parse_events(list, events, MAXEV, &err);

    if (error != -EINVAL) {
        fail_msg("%s: %d, not -EINVAL", list, error);
    }

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
    static const struct {
        const char *list;
        const char *reason_part;
        const char *item;
    } bad[] = {
        { "", "empty event list", "" },
        { ",", "empty event name", "" },
        { "cycles,", "empty event name", "" },
        { "cycles,,cs", "empty event name", "" },
        { ":u", "empty event name", ":u" },
        { "cycles:", "modifier", "cycles:" },
        { "cs,cycles:p", "modifier", "cycles:p" },
        { "cycles:uh", "modifier", "cycles:uh" },
        { "cycles:U", "modifier", "cycles:U" },
        { "cs:uu", "each at most once", "cs:uu" },
        { "cs:kuk", "each at most once", "cs:kuk" },
        { "cycles:u:k", "more than one", "cycles:u:k" },
        { "{cycles,{instructions}}", "group inside a group",
          "{instructions}}" },
        { "cycles},cs", "closes no group", "cycles}" },
        { "{cycles,cs", "without its '}'", "" },
        { "{}", "empty event name", "" },
        { "{cs}:x", "bad group modifier", "{cs}:x" },
        { "{cs}:", "bad group modifier", "{cs}:" },
        { "c{s", "brace inside", "c{s" },
        { "{cs}x", "brace inside", "cs}x" },
        { "cs:Dk:", "more than one", "cs:Dk:" },
        { "step/instructions", "bad PMU item", "step/instructions" },
        { "step//", "bad PMU item", "step//" },
        { "/cycles/", "bad PMU item", "/cycles/" },
        { "st ep/cycles/", "bad PMU item", "st ep/cycles/" },
        { "step/cycles/k", "bad PMU item", "step/cycles/k" },
        { "step/cycles//", "bad PMU item", "step/cycles//" },
        { "step/cycles/:", "modifier", "step/cycles/:" },
        { "step/cycles/:u:k", "more than one", "step/cycles/:u:k" },
        { "cy cles", "bad character", "cy cles" },
        { "cycles\t", "bad character", "cycles\t" },
        { "cyc=1", "bad character", "cyc=1" },
        { "r1FFFFFFFFFFFFFFFF", "64 bits", "r1FFFFFFFFFFFFFFFF" },
        { "\xe9v", "bad character", "\xe9v" },
    };

    (void)state;

    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        check_bad(bad[i].list, bad[i].reason_part, bad[i].item);
    }

    assert_int_equal(perfmon_parse_events(NULL, events, MAXEV, NULL),
                     -EINVAL);
    assert_int_equal(perfmon_parse_events("cs", NULL, MAXEV, NULL), -EINVAL);
}

/* Where a refused list went wrong: the item's first character. */
static void
test_error_position(void **state)
{
    struct perfmon_parse_error err;

    (void)state;
    assert_int_equal(perfmon_parse_events("cs,cycles:p", events, MAXEV,
                                          &err), -EINVAL);
    assert_int_equal(err.pos, 4);
    assert_int_equal(perfmon_parse_events("{cs,cycles", events, MAXEV,
                                          &err), -EINVAL);
    assert_int_equal(err.pos, 11);
    assert_int_equal(perfmon_parse_events("", events, MAXEV, &err), -EINVAL);
    assert_int_equal(err.pos, 0);
}

/* Groups: members, their first event, the group's modifiers, pinning. */
static void
test_groups(void **state)
{
    (void)state;
    assert_int_equal(perfmon_parse_events("cs,{cycles,instructions:u}:kD,"
                                          "{r1a},branches:D", events, MAXEV,
                                          NULL), 5);
    assert_int_equal(events[0].group, -1);
    assert_int_equal(events[0].flags, PERFMON_EF_MODE);
    assert_int_equal(events[1].group, 1);
    assert_string_equal(events[1].name, "cycles");
    assert_string_equal(events[1].spec, "cycles");
    assert_int_equal(events[1].flags, PERFMON_EF_KERN | PERFMON_EF_PINNED);
    assert_int_equal(events[2].group, 1);
    assert_string_equal(events[2].spec, "instructions:u");
    assert_int_equal(events[2].flags, PERFMON_EF_USER | PERFMON_EF_PINNED);
    assert_int_equal(events[3].group, 3);
    assert_int_equal(events[3].raw_code, 0x1a);
    assert_int_equal(events[3].flags, PERFMON_EF_MODE | PERFMON_EF_RAW);
    assert_int_equal(events[4].group, -1);
    assert_int_equal(events[4].flags, PERFMON_EF_MODE | PERFMON_EF_PINNED);
}

/* A list refused for a bad term: the term blamed and where it starts. */
static void
check_bad_term(const char *list, const char *reason_part, const char *term,
               unsigned int pos)
{
    struct perfmon_parse_error err;

    check_bad(list, reason_part, term);
    memset(&err, 0, sizeof(err));
    perfmon_parse_events(list, events, MAXEV, &err);

    if (err.pos != pos) {
        fail_msg("%s: position %u, not %u", list, err.pos, pos);
    }
}

static void
test_terms(void **state)
{
    struct perfmon_parse_error err;

    (void)state;
    assert_int_equal(perfmon_parse_events("cpu/event=0xd1,umask=0x20,cmask=1,"
                                          "inv,edge,any,period=1000,"
                                          "name=l3miss/:u", events, MAXEV,
                                          &err), 1);
    assert_string_equal(events[0].pmu, "cpu");
    assert_string_equal(events[0].spec, "l3miss");
    assert_int_equal(events[0].raw_code, 0xd1 | (0x20 << 8) | (1ULL << 24)
                                         | (1ULL << 23) | (1ULL << 18)
                                         | (1ULL << 21));
    assert_int_equal(events[0].period, 1000);
    assert_int_equal(events[0].flags, PERFMON_EF_USER | PERFMON_EF_RAW);

    /* Commas between the slashes are the terms'; 12-bit event selects. */
    assert_int_equal(perfmon_parse_events("cpu/event=0x1c0,umask=1/,cycles,"
                                          "cpu/config=0x412e,inv=0/", events,
                                          MAXEV, &err), 3);
    assert_int_equal(events[0].raw_code, 0xc0 | (1 << 8) | (1ULL << 32));
    assert_string_equal(events[0].spec, "cpu/event=0x1c0,umask=1/");
    assert_int_equal(events[0].period, 0);
    assert_string_equal(events[1].name, "cycles");
    assert_int_equal(events[2].raw_code, 0x412e);

    check_bad_term("cpu/event=0xc0,bogus=1/", "unknown term", "bogus=1", 16);
    check_bad_term("cycles,cpu/event=0xc0,umask=0x100/", "too large",
                   "umask=0x100", 23);
    check_bad_term("{cycles,cpu/event=0xc0,foo/}", "unknown term", "foo", 24);
    check_bad_term("cpu/event=0x1000/", "too large", "event=0x1000", 5);
    check_bad_term("cpu/event=1,event=2/", "twice", "event=2", 13);
    check_bad_term("cpu/event=1,inv=2/", "flag", "inv=2", 13);
    check_bad_term("cpu/event=1,cmask=/", "bad or too large", "cmask=", 13);
    check_bad_term("cpu/event=0xg/", "bad or too large", "event=0xg", 5);
    check_bad_term("cpu/event=1,,umask=1/", "empty term", "", 13);
    check_bad_term("cpu/event=1,period=0/", "above 0", "period=0", 13);
    check_bad_term("cpu/event=1,name=a b/", "bad name=", "name=a b", 13);
    check_bad_term("cpu/umask=1/", "without event=", "umask=1", 5);
    check_bad_term("cycles/freq=0/", "freq must be above 0", "freq=0", 8);
    check_bad_term("cycles/period=1,period=2/", "twice", "period=2", 17);
    check_bad_term("cpu/event=99999999999999999999/", "too large",
                   "event=99999999999999999999", 5);
}

/* perf's `EVENT/period=N/` and `EVENT/freq=N/`, and `{...}:S`. */
static void
test_sampling_terms(void **state)
{
    struct perfmon_parse_error err;

    (void)state;
    assert_int_equal(perfmon_parse_events("cycles/period=5000/,"
                                          "branch-misses/freq=99/:k,"
                                          "cache-references/name=refs/,"
                                          "cpu/event=0xc0,freq=7/", events,
                                          MAXEV, &err), 4);
    assert_string_equal(events[0].name, "cycles");
    assert_string_equal(events[0].pmu, "");
    assert_string_equal(events[0].spec, "cycles/period=5000/");
    assert_int_equal(events[0].period, 5000);
    assert_int_equal(events[0].freq, 0);
    assert_string_equal(events[1].name, "branch-misses");
    assert_int_equal(events[1].freq, 99);
    assert_int_equal(events[1].flags, PERFMON_EF_KERN);
    assert_string_equal(events[2].name, "cache-references");
    assert_string_equal(events[2].spec, "refs");
    assert_string_equal(events[3].pmu, "cpu");
    assert_int_equal(events[3].raw_code, 0xc0);
    assert_int_equal(events[3].freq, 7);
    assert_false(events[0].leader_sample);

    assert_int_equal(perfmon_parse_events("{cycles,branch-misses}:S,"
                                          "instructions", events, MAXEV,
                                          &err), 3);
    assert_true(events[0].leader_sample);
    assert_true(events[1].leader_sample);
    assert_false(events[2].leader_sample);
    assert_int_equal(events[1].group, 0);
    assert_int_equal(perfmon_parse_events("{cycles,cs}:uS", events, MAXEV,
                                          &err), 2);
    assert_true(events[0].leader_sample);
    assert_int_equal(events[0].flags, PERFMON_EF_USER);

    /* S reads a group: on an item, or twice, it is a typo. */
    check_bad("cycles:S", "bad modifier", "cycles:S");
    check_bad("{cycles,cs}:SS", "bad group modifier", "cs}:SS");
    check_bad("a/b/c/period=1/", "bad PMU item", "a/b/c/period=1/");
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
    assert_string_equal(err.reason, "event name too long (at most 95 characters)");
    assert_int_equal(strlen(err.item), PERFMON_PARSE_NAME_SIZE - 1);

    /* A list of exactly the maximum length parses; one more is refused. */
    p = list;

    for (unsigned int i = 0; i < 5; i++) {
        p += sprintf(p, "%s%095u", (i == 0) ? "" : ",", i);
    }

    memset(p, 'b', PERFMON_PARSE_LIST_MAX - (size_t)(p - list));
    list[PERFMON_PARSE_LIST_MAX] = '\0';
    assert_int_equal(strlen(list), PERFMON_PARSE_LIST_MAX);
    /* 5 * 95 + 4 = 479 characters, then 32 b's appended to the last item. */
    assert_int_equal(perfmon_parse_events(list, events, MAXEV, &err), -E2BIG);
    assert_string_equal(err.reason, "event name too long (at most 95 characters)");
    list[479] = ',';
    assert_int_equal(perfmon_parse_events(list, events, MAXEV, &err), 6);
    assert_string_equal(events[5].name, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");

    list[PERFMON_PARSE_LIST_MAX] = 'c';
    list[PERFMON_PARSE_LIST_MAX + 1] = '\0';
    assert_int_equal(perfmon_parse_events(list, events, MAXEV, &err), -E2BIG);
    assert_string_equal(err.reason, "event list too long (at most 511 characters)");
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
    assert_string_equal(err.reason, "too many events (at most 16 in all)");
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
test_filter_names(void **state)
{
    char buf[80];

    (void)state;
    assert_string_equal(perfmon_parse_branch_name(PERFMON_BRF_ANY_CALL),
                        "any_call");
    assert_string_equal(perfmon_parse_branch_name(PERFMON_BRF_USER), "u");
    assert_null(perfmon_parse_branch_name(0x8000));
    assert_null(perfmon_parse_branch_name(PERFMON_BRF_MODE));
    perfmon_parse_branch_fmt(buf, sizeof(buf), PERFMON_BRF_MASK);
    assert_string_equal(buf, "any,any_call,any_ret,ind_call,call,cond,"
                             "ind_jmp,u,k");
    perfmon_parse_branch_fmt(buf, sizeof(buf), 0);
    assert_string_equal(buf, "");
    perfmon_parse_branch_fmt(buf, 8, PERFMON_BRF_MASK);
    assert_string_equal(buf, "any,any");
}

/* -j lists: perf's names, "ret" for any_ret, and what is refused. */
static void
test_filter_parse(void **state)
{
    static const struct {
        const char *list;
        int error;
        unsigned int filter;
        const char *bad;
    } cases[] = {
        { "any", 0, PERFMON_BRF_ANY, "" },
        { "any,u,k", 0, PERFMON_BRF_ANY | PERFMON_BRF_MODE, "" },
        { "call,ret,ind_call,cond", 0, PERFMON_BRF_CALL | PERFMON_BRF_ANY_RET
          | PERFMON_BRF_IND_CALL | PERFMON_BRF_COND, "" },
        { "any_call,any_ret,ind_jmp,k", 0, PERFMON_BRF_ANY_CALL
          | PERFMON_BRF_ANY_RET | PERFMON_BRF_IND_JMP | PERFMON_BRF_KERN, "" },
        { "u", 0, PERFMON_BRF_USER, "" },
        { "", -EINVAL, 0, "" },
        { "any,", -EINVAL, 0, "" },
        { ",any", -EINVAL, 0, "" },
        { "any,,k", -EINVAL, 0, "" },
        { "anyx", -EINVAL, 0, "anyx" },
        { "an", -EINVAL, 0, "an" },
        { "cond,returns", -EINVAL, 0, "returns" },
        { "hv", -EOPNOTSUPP, 0, "hv" },
        { "any,in_tx", -EOPNOTSUPP, 0, "in_tx" },
        { "call_stack,u", -EOPNOTSUPP, 0, "call_stack" },
        { "save_type", -EOPNOTSUPP, 0, "save_type" },
    };
    unsigned int filter;
    char bad[12];

    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        filter = 0x5a5a;

        assert_int_equal(perfmon_parse_branch_filter(cases[i].list, &filter,
                                                     bad, sizeof(bad)),
                         cases[i].error);
        assert_string_equal(bad, cases[i].bad);
        assert_int_equal(filter, cases[i].error ? 0x5a5aU : cases[i].filter);
    }

    /* NULL arguments; the offending item is cut to fit. */
    assert_int_equal(perfmon_parse_branch_filter("any", NULL, bad,
                                                 sizeof(bad)), -EINVAL);
    assert_int_equal(perfmon_parse_branch_filter(NULL, &filter, bad,
                                                 sizeof(bad)), -EINVAL);
    assert_int_equal(perfmon_parse_branch_filter("abcdefghijkl", &filter,
                                                 bad, sizeof(bad)), -EINVAL);
    assert_string_equal(bad, "abcdefghijk");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_and_modifiers),
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_terms),
        cmocka_unit_test(test_sampling_terms),
        cmocka_unit_test(test_error_position),
        cmocka_unit_test(test_raw_codes),
        cmocka_unit_test(test_pmu_names),
        cmocka_unit_test(test_bad_syntax),
        cmocka_unit_test(test_overlong_input),
        cmocka_unit_test(test_too_many_events),
        cmocka_unit_test(test_cpulist),
        cmocka_unit_test(test_distance),
        cmocka_unit_test(test_suggest),
        cmocka_unit_test(test_filter_names),
        cmocka_unit_test(test_filter_parse),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
