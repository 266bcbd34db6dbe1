/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel test of the inline id of the calling thread (thread_self_id(),
 * kern/thread.h, what sample records carry): two threads per CPU, pinned
 * and yielding to each other, and one that moves over every CPU, each
 * find their own id after every switch, and the caller (the test
 * runner's thread) finds its own.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/ktest.h"
#include "kern/thread.h"

#define THREAD_SELF_ID_TEST_ROUNDS  200

/* Pinned threads per CPU, and one that migrates. */
#define THREAD_SELF_ID_TEST_PER_CPU 2

struct thread_self_id_test {
    bool migrate;
    unsigned int nr_checks;
    unsigned int nr_wrong;
};

/* The per-CPU id is the calling thread's, read with migration excluded. */
static bool
thread_self_id_test_right(void)
{
    bool right;

    thread_preempt_disable();
    right = thread_self_id() == thread_id(thread_self());
    thread_preempt_enable();
    return right;
}

static void
thread_self_id_test_fn(void *arg)
{
    struct thread_self_id_test *t = arg;
    unsigned int n = cpu_count();

    for (unsigned int i = 0; i < THREAD_SELF_ID_TEST_ROUNDS; i++) {
        if (t->migrate && n > 1
            && thread_set_affinity(thread_self(), THREAD_CPUMASK(i % n))) {
            t->nr_wrong++;
        }

        t->nr_wrong += !thread_self_id_test_right();
        t->nr_checks++;
        thread_yield();
    }
}

static int
thread_self_id_test_switches(void)
{
    struct thread_self_id_test t[CPU_MAX * THREAD_SELF_ID_TEST_PER_CPU + 1];
    struct thread *threads[CPU_MAX * THREAD_SELF_ID_TEST_PER_CPU + 1];
    unsigned int n = cpu_count(), nr = 0, nr_checks = 0, nr_wrong = 0;

    for (unsigned int i = 0; i < n * THREAD_SELF_ID_TEST_PER_CPU + 1; i++) {
        bool migrate = (i == n * THREAD_SELF_ID_TEST_PER_CPU);

        t[i] = (struct thread_self_id_test){ .migrate = migrate };

        if (thread_create(&threads[i], "self_id", thread_self_id_test_fn,
                          &t[i], migrate ? THREAD_CPUMASK_ALL
                                         : THREAD_CPUMASK(i % n)) != 0) {
            break;
        }

        nr++;
    }

    for (unsigned int i = 0; i < nr; i++) {
        thread_join(threads[i]);
        nr_checks += t[i].nr_checks;
        nr_wrong += t[i].nr_wrong;
    }

    KTEST_CHECK_EQ(nr, n * THREAD_SELF_ID_TEST_PER_CPU + 1);
    KTEST_CHECK_EQ(nr_checks, nr * THREAD_SELF_ID_TEST_ROUNDS);
    KTEST_CHECK_EQ(nr_wrong, 0);
    KTEST_CHECK(thread_self_id() != 0);
    KTEST_CHECK(thread_self_id_test_right());

out:
    return ktest_result();
}

KTEST_DEFINE(thread, self_id_at_switches, thread_self_id_test_switches);
