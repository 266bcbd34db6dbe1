/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of the runner's leak check (kern/ktest.h), hidden: each leaks on
 * purpose, so the runner must report it as failing with a "leak:" line,
 * and each runs only when `test=` names it (tests/boot/boot_ktest.py).
 * What they leak stays leaked until the machine stops, so their storage is
 * static: an event on a counter's user list must outlive the test.
 */

#include <stdbool.h>
#include <stdint.h>

#include "kern/ktest.h"
#include "kern/perfmon.h"
#include "kern/thread.h"

static struct perfmon_event ktest_test_event;

/* A CPU event left attached: a counter stays in use. */
static int
ktest_test_leak_event(void)
{
    struct perfmon_event *ev = &ktest_test_event;

    KTEST_ASSERT_EQ(perfmon_event_init(ev, PERFMON_EV_TEST, PERFMON_EF_KERN),
                    0);
    KTEST_ASSERT_EQ(perfmon_event_set_dev(ev, perfmon_dev_find("soft")), 0);
    KTEST_ASSERT_EQ(perfmon_event_attach_cpu(ev, 0), 0);
    return KTEST_PASS;
}

KTEST_DEFINE_HIDDEN(ktest, leak_event, ktest_test_leak_event);

static void
ktest_test_sleeper_fn(void *arg)
{
    (void)arg;

    for (;;) {
        thread_msleep(1000);
    }
}

/* A thread never joined: its structure and stack stay on the heap. */
static int
ktest_test_leak_thread(void)
{
    struct thread *t;

    KTEST_ASSERT_EQ(thread_create(&t, "ktest_leak", ktest_test_sleeper_fn,
                                  NULL, THREAD_CPUMASK_ALL), 0);
    return KTEST_PASS;
}

KTEST_DEFINE_HIDDEN(ktest, leak_thread, ktest_test_leak_thread);

/* The test thread left pinned: the runner reports it and unpins it. */
static int
ktest_test_leak_affinity(void)
{
    KTEST_ASSERT_EQ(thread_set_affinity(thread_self(), THREAD_CPUMASK(0)),
                    0);
    return KTEST_PASS;
}

KTEST_DEFINE_HIDDEN(ktest, leak_affinity, ktest_test_leak_affinity);
