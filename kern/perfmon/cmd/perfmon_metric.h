/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Metrics: formulas over event counts, evaluated in fixed point (the
 * kernel has no floating point).  A formula is numbers (decimal, with at
 * most 6 decimals), event names (letters, digits, '_', '.', ':' and '-'
 * inside a name: "branch-misses"), the binary operators + - * / and
 * parentheses; an operator '-' stands between blanks or next to a
 * parenthesis.  A division by zero makes the whole value undefined, as
 * perf prints none.  Pure and reentrant: nothing here touches hardware,
 * threads or locks.
 */

#ifndef KERN_PERFMON_METRIC_H
#define KERN_PERFMON_METRIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Fixed point: a value v stands for v / PERFMON_METRIC_ONE.  Counts up to
 * PERFMON_METRIC_MAX_COUNT fit; intermediate values beyond the range are
 * refused (-ERANGE), never wrapped.
 */
#define PERFMON_METRIC_SHIFT        20
#define PERFMON_METRIC_ONE          (1LL << PERFMON_METRIC_SHIFT)
#define PERFMON_METRIC_MAX_COUNT    ((1ULL << (62 - PERFMON_METRIC_SHIFT)) - 1)

/* Longest formula, deepest nesting of parentheses. */
#define PERFMON_METRIC_MAX_LEN      1023
#define PERFMON_METRIC_MAX_DEPTH    32

/*
 * The count of the event named by name[0..len) (not NUL-terminated), in
 * *countp: 0, or an error (-ENOENT for a name it does not know) that the
 * evaluation returns.
 */
typedef int (*perfmon_metric_value_fn)(void *arg, const char *name,
                                       size_t len, uint64_t *countp);

/*
 * Evaluate formula, fetching each event's count through value.  Returns 0
 * and the value in *resultp (fixed point), or -EINVAL for bad syntax
 * (*errposp: where, from 0), -E2BIG for a formula too long or too deep,
 * -ERANGE when a value leaves the fixed-point range, -EDOM for a division
 * by zero, or value's error.  value may be called several times for one
 * name.
 */
int perfmon_metric_eval(const char *formula, perfmon_metric_value_fn value,
                        void *arg, int64_t *resultp, size_t *errposp);

/*
 * Call fn once for each distinct event name in formula, in order of first
 * appearance (up to 64 distinct names); returns how many, or eval's
 * syntax errors.  fn's error stops the walk and is returned.
 */
int perfmon_metric_events(const char *formula,
                          int (*fn)(void *arg, const char *name, size_t len),
                          void *arg);

/*
 * The metrics every machine with the generic events has (IPC, CPI,
 * branch-miss and cache-miss rates, misses per kilo-instruction): the
 * i-th one's name and formula, false past the last.
 */
bool perfmon_metric_builtin(unsigned int i, const char **namep,
                            const char **formulap);

/*
 * A fixed-point value as text with two decimals ("1.23", "-0.50"), in
 * buf.
 */
void perfmon_metric_format(int64_t value, char *buf, size_t size);

#endif /* KERN_PERFMON_METRIC_H */
