/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Helpers shared by the in-kernel tests: waiting with a deadline, the CPU
 * the caller runs on, pinning the test thread to it and back, per-CPU
 * system counters.  Thread context.
 */

#ifndef TESTS_KERNEL_KTEST_UTIL_H
#define TESTS_KERNEL_KTEST_UTIL_H

#include <stdbool.h>
#include <stdint.h>

struct syscnt;

/* The clock time ms milliseconds from now, for ktest_expired(). */
uint64_t ktest_deadline(unsigned int ms);

/* Whether the clock is past deadline. */
bool ktest_expired(uint64_t deadline);

/*
 * Sleep in 1 ms steps until *flag is set, or done(arg) holds; false when
 * ms milliseconds pass first.
 */
bool ktest_wait_flag(volatile bool *flag, unsigned int ms);
bool ktest_wait_until(bool (*done)(void *arg), void *arg, unsigned int ms);

/* The CPU the caller runs on, read with migration excluded. */
unsigned int ktest_cpu_now(void);

/*
 * Pin the calling thread to the CPU it runs on, stored in *cpup, and
 * return its affinity for ktest_unpin_self().
 */
uint64_t ktest_pin_self(unsigned int *cpup);
void ktest_unpin_self(uint64_t saved);

/*
 * The per-CPU system counter "prefix/cpu" (kern/syscnt.h), or NULL; its
 * value, 0 when there is none.
 */
struct syscnt *ktest_syscnt_cpu(const char *prefix, unsigned int cpu);
uint64_t ktest_syscnt_read_cpu(const char *prefix, unsigned int cpu);

#endif /* TESTS_KERNEL_KTEST_UTIL_H */
