/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Microbenchmark helpers shared by the benchmark commands (xcallbench,
 * perfmon bench): timing an operation many times in TSC cycles and
 * summarizing the samples by their minimum and median, which resist the
 * noise of interrupts and of a hypervisor better than a mean does.
 */

#ifndef KERN_BENCH_H
#define KERN_BENCH_H

#include <stddef.h>
#include <stdint.h>

struct bench_result {
    uint64_t min;
    uint64_t median;
};

/* Sort samples in place and summarize them.  n must be at least 1. */
void bench_summarize(uint64_t *samples, size_t n, struct bench_result *result);

#endif /* KERN_BENCH_H */
