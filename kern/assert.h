/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Assertions.
 *
 * assert() checks an invariant and, when it does not hold, reports the file,
 * line and expression through a kernel panic (with registers and a
 * backtrace).  Assertions stay enabled in every kernel build: they are how
 * misuse fails loudly in tests.
 *
 * In host unit tests (TALLY_HOST_TEST) a failed assertion goes to cmocka's
 * mock_assert(), so tests can check that misuse is caught with
 * expect_assert_failure().
 */

#ifndef KERN_ASSERT_H
#define KERN_ASSERT_H

#ifdef TALLY_HOST_TEST

void mock_assert(const int result, const char *const expression,
                 const char *const file, const int line);

#define assert(expr) \
    mock_assert(!!(expr), #expr, __FILE__, __LINE__)

#else /* TALLY_HOST_TEST */

#include "kern/macros.h"

void assert_fail(const char *expr, const char *file, int line,
                 const char *func) __noreturn;

#define assert(expr)                                            \
    do {                                                        \
        if (unlikely(!(expr))) {                                \
            assert_fail(#expr, __FILE__, __LINE__, __func__);   \
        }                                                       \
    } while (0)

#endif /* TALLY_HOST_TEST */

#endif /* KERN_ASSERT_H */
