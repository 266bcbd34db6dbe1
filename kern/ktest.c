/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel test runner with KTAP output, and the leak check after each
 * test (kern/ktest.h).
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

/* ---- checks ------------------------------------------------------------- */

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

/* ---- selection ---------------------------------------------------------- */

/* The selected suite names, or NULL for all. */
static const char *
ktest_filter(void)
{
    const char *value = cmdline_get("test");

    if (value == NULL || value[0] == '\0' || strcmp(value, "all") == 0) {
        return NULL;
    }

    return value;
}

/* The filter is a comma-separated list of suite names. */
static bool
ktest_selected(const struct ktest *t)
{
    const char *filter = ktest_filter();
    size_t len = strlen(t->suite);

    if (filter == NULL) {
        return true;
    }

    while (*filter != '\0') {
        const char *end = strchr(filter, ',');
        size_t n = end == NULL ? strlen(filter) : (size_t)(end - filter);

        if (n == len && strncmp(filter, t->suite, n) == 0) {
            return true;
        }

        filter += n + (end != NULL);
    }

    return false;
}

/* Suites are groups of consecutive entries with the same suite name. */
static bool
ktest_suite_first(const struct ktest *t)
{
    for (const struct ktest *u = __start_ktest_cases; u < t; u++) {
        if (strcmp(u->suite, t->suite) == 0) {
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

/* ---- running ------------------------------------------------------------ */

static unsigned int
ktest_run_one(const struct ktest *t, unsigned int index)
{
    int result;

    ktest_state_get(&ktest_before);
    ktest_skip_msg = NULL;
    ktest_failed = false;
    result = t->fn();

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
        n += strcmp(t->suite, suite) == 0;
    }

    kprintf("    KTAP version 1\n    # Subtest: %s\n    1..%u\n", suite, n);
    n = 0;

    for (const struct ktest *t = __start_ktest_cases; t < __stop_ktest_cases;
         t++) {
        if (strcmp(t->suite, suite) == 0) {
            failed += ktest_run_one(t, ++n);
        }
    }

    kprintf("%s %u %s\n", failed == 0 ? "ok" : "not ok", index, suite);
    return failed;
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

    kprintf("# ktest: %u failed\n", failed);
    return failed;
}
