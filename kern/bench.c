/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Microbenchmark helpers.
 */

#include <stddef.h>
#include <stdint.h>

#include "kern/assert.h"
#include "kern/bench.h"

/* Shell sort: samples are at most a few hundred thousand, no qsort here. */
static void
bench_sort(uint64_t *v, size_t n)
{
    for (size_t gap = n / 2; gap > 0; gap /= 2) {
        for (size_t i = gap; i < n; i++) {
            uint64_t x = v[i];
            size_t j = i;

            while (j >= gap && v[j - gap] > x) {
                v[j] = v[j - gap];
                j -= gap;
            }

            v[j] = x;
        }
    }
}

void
bench_summarize(uint64_t *samples, size_t n, struct bench_result *result)
{
    assert(n != 0);
    bench_sort(samples, n);
    result->min = samples[0];
    result->median = samples[n / 2];
}
