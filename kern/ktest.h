/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel tests.
 *
 * Any module registers tests with KTEST_DEFINE(suite, name, fn); booting
 * with `test` on the command line runs them all, after every init
 * operation, from a thread, and prints the results as KTAP version 1: one
 * nested block per suite.  Then the kernel leaves QEMU through
 * isa-debug-exit with the success or failure status.  `test=SUITE,...`
 * runs the named suites only.
 *
 * A test returns KTEST_PASS, KTEST_SKIP (with ktest_skip_reason() set) or
 * KTEST_FAIL; KTEST_ASSERT() reports the failing expression as a KTAP
 * diagnostic line and fails the test.
 */

#ifndef KERN_KTEST_H
#define KERN_KTEST_H

#include "kern/macros.h"

#define KTEST_PASS      0
#define KTEST_FAIL      (-1)
#define KTEST_SKIP      1

typedef int (*ktest_fn_t)(void);

struct ktest {
    const char *suite;
    const char *name;
    ktest_fn_t fn;
} __aligned(8);

#define KTEST_DEFINE(suite_, name_, fn_)                                \
    static const struct ktest ktest_##suite_##_##name_                  \
    __section("ktest_cases") __used __aligned(8) = {                    \
        #suite_, #name_, fn_                                            \
    }

/* Print a KTAP diagnostic line ("    # ...") for the running test. */
void ktest_diag(const char *fmt, ...) __format_printf(1, 2);

/* Set the reason shown with "# SKIP" before returning KTEST_SKIP. */
void ktest_skip_reason(const char *reason);

#define KTEST_ASSERT(expr)                                              \
    do {                                                                \
        if (!(expr)) {                                                  \
            ktest_diag("%s:%d: assertion failed: %s", __FILE__,         \
                       __LINE__, #expr);                                \
            return KTEST_FAIL;                                          \
        }                                                               \
    } while (0)

#define KTEST_ASSERT_EQ(a, b)                                           \
    do {                                                                \
        long long ktest_a_ = (long long)(a), ktest_b_ = (long long)(b); \
        if (ktest_a_ != ktest_b_) {                                     \
            ktest_diag("%s:%d: %s == %lld, expected %s == %lld",        \
                       __FILE__, __LINE__, #a, ktest_a_, #b, ktest_b_); \
            return KTEST_FAIL;                                          \
        }                                                               \
    } while (0)

/*
 * Return the number of tests linked into this kernel: 0 in the user image,
 * which is built without tests/kernel/ (see the Makefile).
 */
unsigned int ktest_count(void);

/*
 * Run the tests (all, or the suite named by the `test=` option), print
 * KTAP and return the number of failures.
 */
unsigned int ktest_run_all(void);

#endif /* KERN_KTEST_H */
