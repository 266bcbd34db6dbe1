/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Microbenchmark helpers, and the `xcallbench` command (perfmon's
 * benchmark is kern/perfmon/cmd/perfmon_bench.c).
 */

#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/bench.h"
#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/shell.h"
#include "kern/thread.h"
#include "kern/xcall.h"

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

/* xcallbench: round trips of an empty xcall ---------------------------------- */

#define XCALL_BENCH_DEFAULT     1000
#define XCALL_BENCH_MAX         100000
#define XCALL_BENCH_WARMUP      100

static void
xcall_bench_nop(void *arg)
{
    (void)arg;
}

/* Time n round trips to cpu, using samples[] for each one's TSC cycles. */
static void
xcall_bench_cpu(unsigned int cpu, uint64_t *samples, size_t n,
                struct bench_result *result)
{
    for (size_t i = 0; i < XCALL_BENCH_WARMUP; i++) {
        xcall_call(xcall_bench_nop, NULL, cpu);
    }

    for (size_t i = 0; i < n; i++) {
        uint64_t start = cpu_rdtsc();

        xcall_call(xcall_bench_nop, NULL, cpu);
        samples[i] = cpu_rdtsc() - start;
    }

    bench_summarize(samples, n, result);
}

static int
xcall_cmd_bench(int argc, char **argv)
{
    uint64_t n = XCALL_BENCH_DEFAULT, *samples, affinity;
    unsigned int self;

    if (argc > 2 || (argc == 2 && (cmdline_parse_u64(argv[1], &n) != 0
                                   || n == 0 || n > XCALL_BENCH_MAX))) {
        kprintf("usage: xcallbench [N]  (1..%u round trips per CPU)\n",
                XCALL_BENCH_MAX);
        return SHELL_ERR_REPORTED;
    }

    samples = kmem_alloc(n * sizeof(*samples));

    if (samples == NULL) {
        return -ENOMEM;
    }

    /* Stay on one CPU, so that "local" and "remote" keep their meaning. */
    affinity = thread_get_affinity(thread_self());
    thread_preempt_disable();
    self = cpu_id();
    thread_preempt_enable();
    thread_set_affinity(thread_self(), THREAD_CPUMASK(self));
    kprintf("xcall round trip from cpu%u, empty function, %lu calls each, "
            "TSC cycles:\n", self, n);

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        struct bench_result result;

        xcall_bench_cpu(cpu, samples, n, &result);
        kprintf("  to cpu%-3u %s  min %8lu  median %8lu\n", cpu,
                cpu == self ? "(local) " : "(remote)", result.min,
                result.median);
    }

    thread_set_affinity(thread_self(), affinity);
    kmem_free(samples, n * sizeof(*samples));
    return 0;
}

SHELL_COMMAND(xcallbench, "xcallbench", "[N]",
              "time xcall round trips from this CPU to every CPU",
              xcall_cmd_bench);
