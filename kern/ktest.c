/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel test runner with KTAP output.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/ktest.h"
#include "kern/string.h"

extern const struct ktest __start_ktest_cases[];
extern const struct ktest __stop_ktest_cases[];

static const char *ktest_skip_msg;

/* Whether the running test recorded a failure. */
static bool ktest_failed;

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

/* The selected suite name, or NULL for all. */
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

static unsigned int
ktest_run_one(const struct ktest *t, unsigned int index)
{
    int result;

    ktest_skip_msg = NULL;
    ktest_failed = false;
    result = t->fn();

    /* A recorded failure stands, whatever the test returned after it. */
    if (ktest_failed) {
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
