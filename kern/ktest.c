/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel test runner with KTAP output, the leak check after each test
 * and the failures injected by ktest.fail (kern/ktest.h).
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/clock.h"
#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/kmem.h"
#include "kern/ktest.h"
#include "kern/perfmon.h"
#include "kern/pmem.h"
#include "kern/string.h"
#include "kern/thread.h"

extern const struct ktest __start_ktest_cases[];
extern const struct ktest __stop_ktest_cases[];

/* Longest item of the test= and ktest.fail= lists, NUL included. */
#define KTEST_ITEM_SIZE     96

/* What the leak check compares before and after a test. */
struct ktest_state {
    unsigned int nr_devs;
    unsigned int nr_pmcs_used[PERFMON_MAX_DEVS];
    size_t nr_objs;
    size_t obj_bytes;
    size_t nr_free_pages;
    uint64_t affinity;
};

/* The running test. */
static const char *ktest_skip_msg;
static bool ktest_failed;
static unsigned int ktest_nr_checks;
static unsigned int ktest_fail_at;      /* check failing on purpose, or 0 */
static struct ktest_state ktest_before;

unsigned int
ktest_count(void)
{
    return __stop_ktest_cases - __start_ktest_cases;
}

void
ktest_diag(const char *fmt, ...)
{
    va_list ap;

    kprintf("    # ");
    va_start(ap, fmt);
    kvprintf(fmt, ap);
    va_end(ap);
    kprintf("\n");
}

void
ktest_skip_reason(const char *reason)
{
    ktest_skip_msg = reason;
}

void
ktest_fail(void)
{
    ktest_failed = true;
}

int
ktest_result(void)
{
    return ktest_failed ? KTEST_FAIL : KTEST_PASS;
}

/* ---- leak check --------------------------------------------------------- */

static void
ktest_state_get(struct ktest_state *state)
{
    struct perfmon_dev_info info;
    struct kmem_stats heap;

    state->nr_devs = MIN(perfmon_nr_devs(), PERFMON_MAX_DEVS);

    for (unsigned int i = 0; i < state->nr_devs; i++) {
        state->nr_pmcs_used[i] =
            (perfmon_dev_get_info(perfmon_dev_get(i), &info) == 0)
            ? info.nr_pmcs_used : 0;
    }

    kmem_stats_get(&heap);
    state->nr_objs = heap.nr_allocs;
    state->obj_bytes = heap.bytes_in_use;
    state->nr_free_pages = pmem_nr_free();
    state->affinity = thread_get_affinity(thread_self());
}

/*
 * Count the ways now differs from before; with what non-NULL, also print a
 * diagnostic line for each, starting with what.
 */
static unsigned int
ktest_state_diff(const char *what, const struct ktest_state *before,
                 const struct ktest_state *now)
{
    unsigned int n = 0;

    /* A device registered meanwhile had no counter in use before. */
    for (unsigned int i = 0; i < now->nr_devs; i++) {
        unsigned int was = (i < before->nr_devs) ? before->nr_pmcs_used[i]
                                                 : 0;

        if (now->nr_pmcs_used[i] != was) {
            n++;

            if (what != NULL) {
                ktest_diag("%s: perfmon %s: counters in use: %u, before the "
                           "test: %u", what, perfmon_dev_get(i)->name,
                           now->nr_pmcs_used[i], was);
            }
        }
    }

    if (now->nr_objs != before->nr_objs
        || now->obj_bytes != before->obj_bytes) {
        n++;

        if (what != NULL) {
            ktest_diag("%s: heap: objects: %zu (%zu bytes), before the test: "
                       "%zu (%zu bytes)", what, now->nr_objs, now->obj_bytes,
                       before->nr_objs, before->obj_bytes);
        }
    }

    if (now->nr_free_pages != before->nr_free_pages) {
        n++;

        if (what != NULL) {
            ktest_diag("%s: pages free: %zu, before the test: %zu", what,
                       now->nr_free_pages, before->nr_free_pages);
        }
    }

    if (now->affinity != before->affinity) {
        n++;

        if (what != NULL) {
            ktest_diag("%s: test thread affinity: %#llx, before the test: "
                       "%#llx", what,
                       (unsigned long long)now->affinity,
                       (unsigned long long)before->affinity);
        }
    }

    return n;
}

/*
 * Interrupts and preemption, enabled for every test: report and enable
 * them, or the runner could not even sleep.
 */
static unsigned int
ktest_leak_check_context(void)
{
    unsigned int n = 0;

    if (!cpu_intr_enabled()) {
        ktest_diag("leak: interrupts left disabled");
        cpu_intr_enable();
        n++;
    }

    if (!thread_preempt_enabled()) {
        ktest_diag("leak: preemption left disabled");

        while (!thread_preempt_enabled()) {
            thread_preempt_enable();
        }

        n++;
    }

    return n;
}

/* Return the number of leaks of the test that just returned. */
static unsigned int
ktest_leak_check(const struct ktest_state *before)
{
    unsigned int n = ktest_leak_check_context();
    struct ktest_state now;
    uint64_t deadline;

    /* The scheduler frees a thread a moment after its join returns. */
    deadline = clock_get_time() + clock_ticks_from_ms(KTEST_SETTLE_MS);

    for (;;) {
        ktest_state_get(&now);

        if (ktest_state_diff(NULL, before, &now) == 0
            || clock_get_time() > deadline) {
            break;
        }

        thread_msleep(1);
    }

    n += ktest_state_diff("leak", before, &now);

    /* Not for the next test to run pinned. */
    if (now.affinity != before->affinity) {
        thread_set_affinity(thread_self(), before->affinity);
    }

    return n;
}

/* ---- boot options ------------------------------------------------------- */

/*
 * Copy the first item of a comma-separated list into item[KTEST_ITEM_SIZE]
 * (an empty string when it does not fit, so that it names nothing) and
 * return the rest of the list, or NULL when there is no item left.
 */
static const char *
ktest_list_next(const char *list, char *item)
{
    const char *end;
    size_t n;

    if (list == NULL || *list == '\0') {
        return NULL;
    }

    end = strchr(list, ',');
    n = (end == NULL) ? strlen(list) : (size_t)(end - list);
    n = (n < KTEST_ITEM_SIZE) ? n : 0;
    memcpy(item, list, n);
    item[n] = '\0';
    return (end == NULL) ? list + strlen(list) : end + 1;
}

/* Whether s is "SUITE.NAME" of t. */
static bool
ktest_is_named(const struct ktest *t, const char *s)
{
    size_t suite_len = strlen(t->suite);

    return strncmp(s, t->suite, suite_len) == 0 && s[suite_len] == '.'
           && strcmp(s + suite_len + 1, t->name) == 0;
}

/*
 * Split an item of ktest.fail, SUITE.NAME[@N], at the '@'; return N, 1
 * without it, 0 when malformed.
 */
static unsigned int
ktest_fail_item_split(char *item)
{
    char *at = strchr(item, '@');
    uint64_t check = 1;

    if (at != NULL) {
        *at = '\0';

        if (cmdline_parse_u64(at + 1, &check) != 0 || check == 0
            || check > UINT32_MAX) {
            return 0;
        }
    }

    return (unsigned int)check;
}

/* The check of t that ktest.fail makes fail, or 0. */
static unsigned int
ktest_fail_check_of(const struct ktest *t)
{
    const char *list = cmdline_get("ktest.fail");
    char item[KTEST_ITEM_SIZE];

    while ((list = ktest_list_next(list, item)) != NULL) {
        unsigned int check = ktest_fail_item_split(item);

        if (ktest_is_named(t, item)) {
            return check;
        }
    }

    return 0;
}

/* The `test=` list, or NULL for all. */
static const char *
ktest_filter(void)
{
    const char *value = cmdline_get("test");

    if (value == NULL || value[0] == '\0' || strcmp(value, "all") == 0) {
        return NULL;
    }

    return value;
}

/*
 * The filter is a comma-separated list of SUITE and SUITE.NAME items.  A
 * hidden test runs only when named.
 */
static bool
ktest_selected(const struct ktest *t)
{
    const char *filter = ktest_filter();
    char item[KTEST_ITEM_SIZE];

    if (filter == NULL) {
        return !t->hidden;
    }

    while ((filter = ktest_list_next(filter, item)) != NULL) {
        if ((!t->hidden && strcmp(item, t->suite) == 0)
            || ktest_is_named(t, item)) {
            return true;
        }
    }

    return false;
}

/* ---- checks ------------------------------------------------------------- */

bool
ktest_check_begin(const char *file, unsigned int line, const char *text)
{
    struct ktest_state now;

    if (++ktest_nr_checks != ktest_fail_at) {
        return true;
    }

    ktest_diag("%s:%u: check %u fails on purpose (ktest.fail): %s", file,
               line, ktest_nr_checks, text);
    ktest_state_get(&now);

    if (ktest_state_diff("held", &ktest_before, &now) == 0) {
        ktest_diag("held: nothing");
    }

    ktest_fail();
    return false;
}

bool
ktest_check_true(bool holds, const char *file, unsigned int line,
                 const char *expr)
{
    if (!holds) {
        ktest_diag("%s:%u: assertion failed: %s", file, line, expr);
        ktest_fail();
    }

    return holds;
}

bool
ktest_check_eq(long long a, long long b, const char *file, unsigned int line,
               const char *expr_a, const char *expr_b)
{
    if (a != b) {
        ktest_diag("%s:%u: %s == %lld, expected %s == %lld", file, line,
                   expr_a, a, expr_b, b);
        ktest_fail();
    }

    return a == b;
}

/* ---- running ------------------------------------------------------------ */

/*
 * Suites are groups of consecutive entries with the same suite name; one
 * is announced with its first selected test.
 */
static bool
ktest_suite_first(const struct ktest *t)
{
    for (const struct ktest *u = __start_ktest_cases; u < t; u++) {
        if (strcmp(u->suite, t->suite) == 0 && ktest_selected(u)) {
            return false;
        }
    }

    return true;
}

static unsigned int
ktest_count_suites(void)
{
    unsigned int n = 0;

    for (const struct ktest *t = __start_ktest_cases; t < __stop_ktest_cases;
         t++) {
        if (ktest_selected(t) && ktest_suite_first(t)) {
            n++;
        }
    }

    return n;
}

static unsigned int
ktest_run_one(const struct ktest *t, unsigned int index)
{
    int result;

    ktest_state_get(&ktest_before);
    ktest_skip_msg = NULL;
    ktest_failed = false;
    ktest_nr_checks = 0;
    ktest_fail_at = ktest_fail_check_of(t);
    result = t->fn();

    if (ktest_fail_at > ktest_nr_checks) {
        ktest_diag("ktest.fail: check %u asked for, %u ran", ktest_fail_at,
                   ktest_nr_checks);
        ktest_fail();
    }

    /* A recorded failure stands, whatever the test returned after it. */
    if (ktest_failed) {
        result = KTEST_FAIL;
    }

    if (ktest_leak_check(&ktest_before) != 0) {
        result = KTEST_FAIL;
    }

    if (result == KTEST_SKIP) {
        kprintf("    ok %u %s # SKIP %s\n", index, t->name,
                ktest_skip_msg != NULL ? ktest_skip_msg : "");
        return 0;
    }

    kprintf("    %s %u %s\n", result == KTEST_PASS ? "ok" : "not ok", index,
            t->name);
    return result == KTEST_PASS ? 0 : 1;
}

static unsigned int
ktest_run_suite(const char *suite, unsigned int index)
{
    unsigned int n = 0, failed = 0;

    for (const struct ktest *t = __start_ktest_cases; t < __stop_ktest_cases;
         t++) {
        n += strcmp(t->suite, suite) == 0 && ktest_selected(t);
    }

    kprintf("    KTAP version 1\n    # Subtest: %s\n    1..%u\n", suite, n);
    n = 0;

    for (const struct ktest *t = __start_ktest_cases; t < __stop_ktest_cases;
         t++) {
        if (strcmp(t->suite, suite) == 0 && ktest_selected(t)) {
            failed += ktest_run_one(t, ++n);
        }
    }

    kprintf("%s %u %s\n", failed == 0 ? "ok" : "not ok", index, suite);
    return failed;
}

/*
 * Items of ktest.fail that make no test of this run fail: a misspelt name
 * must not pass for a cleanup path that works.  Return their number.
 */
static unsigned int
ktest_fail_check_names(void)
{
    const char *list = cmdline_get("ktest.fail");
    char item[KTEST_ITEM_SIZE];
    unsigned int n = 0;

    while ((list = ktest_list_next(list, item)) != NULL) {
        bool found = false;

        if (ktest_fail_item_split(item) != 0) {
            for (const struct ktest *t = __start_ktest_cases;
                 t < __stop_ktest_cases; t++) {
                found |= ktest_selected(t) && ktest_is_named(t, item);
            }
        }

        if (!found) {
            kprintf("# ktest.fail: %s: not a test of this run, or a bad "
                    "@N\n", item);
            n++;
        }
    }

    return n;
}

unsigned int
ktest_run_all(void)
{
    unsigned int index = 0, failed = 0;

    kprintf("KTAP version 1\n1..%u\n", ktest_count_suites());

    for (const struct ktest *t = __start_ktest_cases; t < __stop_ktest_cases;
         t++) {
        if (ktest_selected(t) && ktest_suite_first(t)) {
            failed += ktest_run_suite(t->suite, ++index);
        }
    }

    failed += ktest_fail_check_names();
    kprintf("# ktest: %u failed\n", failed);
    return failed;
}
