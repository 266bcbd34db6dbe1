/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel tests of cross-CPU calls (kern/xcall.h): a call runs on the
 * CPU asked for, with interrupts disabled, and has finished when
 * xcall_call() returns; a call to the local CPU runs directly; a CPU that
 * is not online is refused with -EINVAL; and every CPU calling every CPU at
 * once, thousands of times, loses, duplicates or misplaces no call.
 */

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/clock.h"
#include "kern/error.h"
#include "kern/ktest.h"
#include "kern/param.h"
#include "kern/syscnt.h"
#include "kern/thread.h"
#include "kern/xcall.h"
#include "tests/kernel/ktest_util.h"

/* Rounds of calls to every CPU made by each CPU in the concurrent test. */
#define XCALL_TEST_ROUNDS       1000

struct xcall_test_probe {
    unsigned int target;
    unsigned int ran_on;
    bool intr_enabled;
    unsigned int nr_runs;
    volatile bool finished;
};

static void
xcall_test_probe_fn(void *arg)
{
    struct xcall_test_probe *probe = arg;

    probe->ran_on = cpu_id();
    probe->intr_enabled = cpu_intr_enabled();
    probe->nr_runs++;

    /* Make a caller that returns early see an unfinished call. */
    for (volatile unsigned int i = 0; i < 20000; i++) {
        continue;
    }

    probe->finished = true;
}

/* From this thread to each CPU in turn (the local one included). */
static int
xcall_test_each_cpu(void)
{
    struct xcall_test_probe probe;
    unsigned int n = cpu_count();

    for (unsigned int cpu = 0; cpu < n; cpu++) {
        probe = (struct xcall_test_probe){ .target = cpu, .ran_on = ~0U,
                                           .intr_enabled = true };
        KTEST_ASSERT_EQ(xcall_call(xcall_test_probe_fn, &probe, cpu), 0);
        KTEST_ASSERT(probe.finished);
        KTEST_ASSERT_EQ(probe.nr_runs, 1);
        KTEST_ASSERT_EQ(probe.ran_on, cpu);
        KTEST_ASSERT(!probe.intr_enabled);
        /* Interrupts are enabled again for the caller. */
        KTEST_ASSERT(cpu_intr_enabled());
    }

    return KTEST_PASS;
}

KTEST_DEFINE(xcall, each_cpu, xcall_test_each_cpu);

/* The local CPU: run directly, interrupts disabled, caller pinned. */
static int
xcall_test_local(void)
{
    struct thread *self = thread_self();
    uint64_t saved = thread_get_affinity(self);
    struct xcall_test_probe probe = { .ran_on = ~0U, .intr_enabled = true };
    unsigned int cpu;
    struct syscnt *sent;
    uint64_t sent_before;
    int error;

    cpu = ktest_cpu_now();
    KTEST_ASSERT_EQ(thread_set_affinity(self, THREAD_CPUMASK(cpu)), 0);
    sent = ktest_syscnt_cpu("xcall_sent", cpu);
    sent_before = sent == NULL ? 0 : syscnt_read(sent);

    error = xcall_call(xcall_test_probe_fn, &probe, cpu);
    thread_set_affinity(self, saved);

    KTEST_ASSERT_EQ(error, 0);
    KTEST_ASSERT_EQ(probe.nr_runs, 1);
    KTEST_ASSERT_EQ(probe.ran_on, cpu);
    KTEST_ASSERT(!probe.intr_enabled);
    KTEST_ASSERT(cpu_intr_enabled());

    /* Nothing was sent through the IPI path for a local call. */
    KTEST_ASSERT(sent != NULL);
    KTEST_ASSERT_EQ(syscnt_read(sent), sent_before);
    return KTEST_PASS;
}

KTEST_DEFINE(xcall, local_runs_directly, xcall_test_local);

static int
xcall_test_offline_cpu(void)
{
    struct xcall_test_probe probe = { .nr_runs = 0 };
    unsigned int bad[] = { cpu_count(), CPU_MAX, CPU_MAX + 1, ~0U };

    for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        KTEST_ASSERT_EQ(xcall_call(xcall_test_probe_fn, &probe, bad[i]),
                        -EINVAL);
    }

    KTEST_ASSERT_EQ(probe.nr_runs, 0);
    return KTEST_PASS;
}

KTEST_DEFINE(xcall, offline_cpu_refused, xcall_test_offline_cpu);

/*
 * All to all, concurrently.  calls[dst][src] counts the calls src made that
 * ran on dst; each caller has at most one call in flight, so a slot has one
 * writer at a time, but the increment is atomic anyway.
 */
static unsigned int xcall_test_calls[CPU_MAX][CPU_MAX];
static unsigned int xcall_test_errors;              /* atomic */
static volatile bool xcall_test_go;

struct xcall_test_arg {
    unsigned int src;
    unsigned int dst;
};

static void
xcall_test_count_fn(void *arg)
{
    const struct xcall_test_arg *a = arg;

    if (cpu_id() != a->dst || cpu_intr_enabled()) {
        __atomic_fetch_add(&xcall_test_errors, 1, __ATOMIC_RELAXED);
    }

    __atomic_fetch_add(&xcall_test_calls[a->dst][a->src], 1,
                       __ATOMIC_RELAXED);
}

static void
xcall_test_caller(void *arg)
{
    unsigned int self = (unsigned int)(uintptr_t)arg, n = cpu_count();
    struct xcall_test_arg args[CPU_MAX];

    while (!xcall_test_go) {
        thread_yield();
    }

    for (unsigned int dst = 0; dst < n; dst++) {
        args[dst].src = self;
        args[dst].dst = dst;
    }

    for (unsigned int round = 0; round < XCALL_TEST_ROUNDS; round++) {
        /* Rotate the start so that all CPUs do not hit one target at once. */
        for (unsigned int i = 0; i < n; i++) {
            unsigned int dst = (self + round + i) % n;

            if (xcall_call(xcall_test_count_fn, &args[dst], dst) != 0
                || cpu_id() != self) {
                __atomic_fetch_add(&xcall_test_errors, 1, __ATOMIC_RELAXED);
            }
        }
    }
}

static int
xcall_test_all_to_all(void)
{
    struct thread *threads[CPU_MAX];
    unsigned int n = cpu_count(), created = 0;
    uint64_t start, elapsed;
    int error = 0;

    for (unsigned int i = 0; i < CPU_MAX; i++) {
        for (unsigned int j = 0; j < CPU_MAX; j++) {
            xcall_test_calls[i][j] = 0;
        }
    }

    xcall_test_errors = 0;
    xcall_test_go = false;

    for (unsigned int cpu = 0; cpu < n; cpu++) {
        error = thread_create(&threads[cpu], "xcall_test", xcall_test_caller,
                              (void *)(uintptr_t)cpu, THREAD_CPUMASK(cpu));

        if (error) {
            break;
        }

        created++;
    }

    start = clock_get_time();
    xcall_test_go = true;

    for (unsigned int i = 0; i < created; i++) {
        thread_join(threads[i]);
    }

    elapsed = clock_get_time() - start;
    KTEST_ASSERT_EQ(error, 0);
    ktest_diag("%u CPUs x %u calls each: %lu ms", n,
               XCALL_TEST_ROUNDS * n, clock_ms_from_ticks(elapsed));
    KTEST_ASSERT_EQ(__atomic_load_n(&xcall_test_errors, __ATOMIC_ACQUIRE), 0);

    for (unsigned int dst = 0; dst < n; dst++) {
        for (unsigned int src = 0; src < n; src++) {
            unsigned int got = __atomic_load_n(&xcall_test_calls[dst][src],
                                               __ATOMIC_ACQUIRE);

            if (got != XCALL_TEST_ROUNDS) {
                ktest_diag("cpu%u -> cpu%u: %u calls ran, expected %u", src,
                           dst, got, XCALL_TEST_ROUNDS);
                return KTEST_FAIL;
            }
        }
    }

    return KTEST_PASS;
}

KTEST_DEFINE(xcall, all_to_all_concurrent, xcall_test_all_to_all);
