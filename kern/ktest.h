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
 * isa-debug-exit with the success or failure status.
 *
 * A test returns KTEST_PASS, KTEST_SKIP (with ktest_skip_reason() set) or
 * KTEST_FAIL.  Checks print the failing expression as a KTAP diagnostic
 * line and record the failure, in one of two ways:
 *
 *   KTEST_ASSERT(expr), KTEST_ASSERT_EQ(a, b): then return KTEST_FAIL at
 *   once.  Only where the test holds nothing.
 *
 *   KTEST_CHECK(expr), KTEST_CHECK_EQ(a, b): then `goto out`.  A test that
 *   takes anything the next test could trip over (attached events, threads,
 *   its thread's affinity, registered callbacks, memory, scheduled timers)
 *   ends with an `out:` label that gives back whatever it still holds, on
 *   success and failure alike, then returns ktest_result().
 *
 * Why a cleanup label and not a cleanup stack that the runner unwinds
 * after the test returns (KUnit's deferred actions): what tests hold lives
 * in their stack frame (events on a counter's user list, the state a
 * thread they started reads), and is gone by the time the runner could
 * release it.  At `out:` the frame is still there, the release code sits
 * in the function that took the resources, in reverse order, as in the
 * kernel's own error paths.
 *
 * Leak check: after each test, the runner checks that the system is back
 * where the test found it: the same number of counters in use on each
 * perfmon device, of heap objects and bytes, of free pages, the same
 * affinity for the test thread, interrupts and preemption enabled.  Each
 * difference is a diagnostic line "leak: ..." and fails the test.  Threads
 * show as heap objects (structure and stack): the runner waits up to
 * KTEST_SETTLE_MS for the scheduler to free those that exited.  It puts
 * the affinity, interrupts and preemption back, so that the next test does
 * not run pinned; what else leaked stays leaked.
 *
 * Boot options:
 *
 *   test, test=all: every test but the hidden ones.
 *
 *   test=ITEM,...: ITEM is a suite (its tests but the hidden ones) or
 *   SUITE.NAME (that test, hidden or not).
 *
 *   ktest.fail=SUITE.NAME[@N],...: check N (1 when not given; KTEST_ASSERT
 *   and KTEST_CHECK alike, counted from the start of the test) of each
 *   test named fails on purpose, without being evaluated: as if the call
 *   it checks had failed and, as calls do on error, left things as they
 *   were.  A diagnostic line says so, followed by "held: ..." lines for
 *   whatever the test holds at that point, in the terms of the leak check;
 *   the leak check after the test then shows whether its cleanup path
 *   gave it all back (tests/boot/boot_ktest.py).  A test named that runs
 *   fewer checks fails too; an item that names no test of the run, or
 *   with a malformed N, is one more failure.
 *
 * KTEST_DEFINE_HIDDEN defines a test that only runs when `test=` names it:
 * tests of the runner itself that fail on purpose, like one that leaks.
 */

#ifndef KERN_KTEST_H
#define KERN_KTEST_H

#include <stdbool.h>

#include "kern/macros.h"

#define KTEST_PASS      0
#define KTEST_FAIL      (-1)
#define KTEST_SKIP      1

/* How long the leak check waits for exited threads to be freed. */
#define KTEST_SETTLE_MS 1000

typedef int (*ktest_fn_t)(void);

struct ktest {
    const char *suite;
    const char *name;
    ktest_fn_t fn;
    bool hidden;
} __aligned(8);

#define KTEST_DEFINE_(suite_, name_, fn_, hidden_)                      \
    static const struct ktest ktest_##suite_##_##name_                  \
    __section("ktest_cases") __used __aligned(8) = {                    \
        #suite_, #name_, fn_, hidden_                                   \
    }

#define KTEST_DEFINE(suite_, name_, fn_) \
    KTEST_DEFINE_(suite_, name_, fn_, false)
#define KTEST_DEFINE_HIDDEN(suite_, name_, fn_) \
    KTEST_DEFINE_(suite_, name_, fn_, true)

/* Print a KTAP diagnostic line ("    # ...") for the running test. */
void ktest_diag(const char *fmt, ...) __format_printf(1, 2);

/* Set the reason shown with "# SKIP" before returning KTEST_SKIP. */
void ktest_skip_reason(const char *reason);

/*
 * For the macros below.  ktest_check_begin() counts a check of the running
 * test (text is its expression) and returns false when ktest.fail makes it
 * fail on purpose, recorded and reported; then the check is not evaluated.
 * The others report a check that does not hold (at file:line, with the
 * expression, or both expressions and their values), record the failure
 * and return whether it holds.
 */
bool ktest_check_begin(const char *file, unsigned int line,
                       const char *text);
bool ktest_check_true(bool holds, const char *file, unsigned int line,
                      const char *expr);
bool ktest_check_eq(long long a, long long b, const char *file,
                    unsigned int line, const char *expr_a,
                    const char *expr_b);

/* The texts are the expressions as written, stringified by the callers. */
#define KTEST_CHECK_TRUE_(expr, text)                                   \
    (ktest_check_begin(__FILE__, __LINE__, text)                        \
     && ktest_check_true((expr), __FILE__, __LINE__, text))

#define KTEST_CHECK_EQ_(a, b, text_a, text_b)                           \
    (ktest_check_begin(__FILE__, __LINE__, text_a " == " text_b)        \
     && ktest_check_eq((long long)(a), (long long)(b), __FILE__,        \
                       __LINE__, text_a, text_b))

/* Run the statement on_failure when check is false. */
#define KTEST_ON_FAILURE_(check, on_failure)                            \
    do {                                                                \
        if (!(check)) {                                                 \
            on_failure;                                                 \
        }                                                               \
    } while (0)

#define KTEST_ASSERT(expr)                                              \
    KTEST_ON_FAILURE_(KTEST_CHECK_TRUE_(expr, #expr), return KTEST_FAIL)

#define KTEST_ASSERT_EQ(a, b)                                           \
    KTEST_ON_FAILURE_(KTEST_CHECK_EQ_(a, b, #a, #b), return KTEST_FAIL)

#define KTEST_CHECK(expr)                                               \
    KTEST_ON_FAILURE_(KTEST_CHECK_TRUE_(expr, #expr), goto out)

#define KTEST_CHECK_EQ(a, b)                                            \
    KTEST_ON_FAILURE_(KTEST_CHECK_EQ_(a, b, #a, #b), goto out)

/*
 * Record a failure of the running test found otherwise than by a check
 * (say what failed with ktest_diag() first).  The test thread only.
 */
void ktest_fail(void);

/* KTEST_FAIL when the running test recorded a failure, else KTEST_PASS. */
int ktest_result(void);

/*
 * Return the number of tests linked into this kernel: 0 in the user image,
 * which is built without tests/kernel/ (see the Makefile).
 */
unsigned int ktest_count(void);

/*
 * Run the tests selected by the `test` option, print KTAP and return the
 * number of failures.
 */
unsigned int ktest_run_all(void);

#endif /* KERN_KTEST_H */
