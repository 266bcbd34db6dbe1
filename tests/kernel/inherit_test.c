/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel tests of events enabled together and of inheritance, with the
 * software PMU's test event: a thread whose children and grandchildren
 * each add exactly N to the test event on whatever CPU they run is counted
 * exactly K * N (and its own) by an inherited event, read while children
 * sleep and after they exit, and only its own without inheritance; CPU
 * events attached disabled, then enabled at once and disabled at once
 * around nothing, count cpu-clock within that span only.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/ktest.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/swevent.h"
#include "kern/thread.h"
#include "tests/kernel/ktest_util.h"

#define IT_CHILDREN     4               /* K, each with one grandchild */
#define IT_ADD          1000            /* N */
#define IT_OWN          7               /* the root's own */
#define IT_WAIT_MS      5000
#define IT_SETUP_MS     20              /* stands for perfmon stat's setup */

/*
 * The family the tests run: a root thread held at a gate until its event
 * is attached, children that add IT_ADD, create a grandchild that adds
 * IT_ADD, and sleep until released (so that a read sees them alive).
 */
struct it_family {
    volatile bool go;
    volatile bool release;
    volatile unsigned int nr_sleeping;
};

static struct it_family it_family;

static void
it_wait(volatile bool *flag)
{
    while (!*flag) {
        thread_msleep(1);
    }
}

static void
it_grandchild(void *arg)
{
    (void)arg;
    swevent_add(SWEVENT_TEST, IT_ADD);
}

static void
it_child(void *arg)
{
    struct thread *grandchild;

    (void)arg;
    swevent_add(SWEVENT_TEST, IT_ADD);

    if (thread_create(&grandchild, "it-grandchild", it_grandchild, NULL,
                      THREAD_CPUMASK_ALL) == 0) {
        thread_join(grandchild);
    }

    __atomic_fetch_add(&it_family.nr_sleeping, 1, __ATOMIC_SEQ_CST);
    it_wait(&it_family.release);
}

static void
it_root(void *arg)
{
    struct thread *children[IT_CHILDREN];
    unsigned int n = 0;

    (void)arg;
    it_wait(&it_family.go);
    swevent_add(SWEVENT_TEST, IT_OWN);

    for (unsigned int i = 0; i < IT_CHILDREN; i++) {
        if (thread_create(&children[n], "it-child", it_child, NULL,
                          THREAD_CPUMASK_ALL) == 0) {
            n++;
        }
    }

    for (unsigned int i = 0; i < n; i++) {
        thread_join(children[i]);
    }
}

static bool
it_all_sleeping(void *arg)
{
    (void)arg;
    return it_family.nr_sleeping == IT_CHILDREN;
}

/*
 * Run the family with an event of flags on the root; the count read while
 * the children sleep and the final one.
 */
static int
it_run(unsigned int flags, uint64_t *alivep, uint64_t *finalp)
{
    struct perfmon_event ev;
    struct thread *root = NULL;
    int result = KTEST_FAIL;

    it_family = (struct it_family){ .go = false };
    KTEST_ASSERT_EQ(perfmon_event_init(&ev, PERFMON_EV_TEST, flags), 0);
    KTEST_ASSERT_EQ(perfmon_event_set_dev(&ev, perfmon_dev_find("soft")), 0);
    KTEST_ASSERT_EQ(thread_create(&root, "it-root", it_root, NULL,
                                  THREAD_CPUMASK_ALL), 0);
    KTEST_CHECK_EQ(perfmon_event_attach(&ev, root), 0);
    it_family.go = true;
    KTEST_CHECK(ktest_wait_until(it_all_sleeping, NULL, IT_WAIT_MS));
    *alivep = perfmon_event_read(&ev);
    it_family.release = true;
    thread_join(root);
    root = NULL;
    *finalp = perfmon_event_read(&ev);
    KTEST_CHECK_EQ(perfmon_event_detach(&ev), 0);
    KTEST_CHECK_EQ(perfmon_event_read(&ev), *finalp);
    result = ktest_result();

out:
    it_family.go = true;
    it_family.release = true;

    if (root != NULL) {
        thread_join(root);
    }

    if (perfmon_event_attached(&ev)) {
        perfmon_event_detach(&ev);
    }

    return result;
}

static int
it_children_counted(void)
{
    const uint64_t all = 2ULL * IT_CHILDREN * IT_ADD + IT_OWN;
    uint64_t alive = 0, final = 0;

    KTEST_ASSERT_EQ(it_run(PERFMON_EF_KERN | PERFMON_EF_INHERIT, &alive,
                           &final), KTEST_PASS);
    ktest_diag("inherited: %llu while the children slept, %llu at the end",
               (unsigned long long)alive, (unsigned long long)final);
    KTEST_ASSERT_EQ(alive, all);
    KTEST_ASSERT_EQ(final, all);

    KTEST_ASSERT_EQ(it_run(PERFMON_EF_KERN, &alive, &final), KTEST_PASS);
    KTEST_ASSERT_EQ(alive, IT_OWN);
    KTEST_ASSERT_EQ(final, IT_OWN);
    return KTEST_PASS;
}

KTEST_DEFINE(inherit, children_counted, it_children_counted);

/*
 * perfmon stat's CPU mode around a command that returns at once: events
 * attached disabled, a pause standing for perfmon's own setup, then the
 * start time, all enabled at once, all disabled at once, the end time.
 * Every CPU's cpu-clock must lie within that span: the setup before it is
 * not counted (an event counting from its attach would count the pause).
 * How short the span is depends on how fast the CPUs answer an xcall, a
 * wall-clock figure: it is reported, not judged.
 */
static int
it_cpu_span(void)
{
    struct perfmon_event evs[CPU_MAX];
    struct perfmon_event *set[CPU_MAX];
    unsigned int nr = cpu_count();
    uint64_t start, span;

    for (unsigned int cpu = 0; cpu < nr; cpu++) {
        set[cpu] = &evs[cpu];
        perfmon_event_init(&evs[cpu], PERFMON_EV_TASK_CLOCK,
                           PERFMON_EF_KERN | PERFMON_EF_DISABLED);
    }

    for (unsigned int cpu = 0; cpu < nr; cpu++) {
        KTEST_CHECK_EQ(perfmon_event_attach_cpu(&evs[cpu], cpu), 0);
    }

    thread_msleep(IT_SETUP_MS);
    start = cpu_rdtsc();
    KTEST_CHECK_EQ(perfmon_events_enable(set, nr), 0);
    KTEST_CHECK_EQ(perfmon_events_disable(set, nr), 0);
    span = cpu_rdtsc() - start;

    for (unsigned int cpu = 0; cpu < nr; cpu++) {
        uint64_t clock = perfmon_event_read(&evs[cpu]);

        ktest_diag("cpu%u: %llu us of cpu-clock in a span of %llu us", cpu,
                   (unsigned long long)(clock * 1000000 / cpu_tsc_freq()),
                   (unsigned long long)(span * 1000000 / cpu_tsc_freq()));
        KTEST_CHECK(clock <= span);
    }

out:
    for (unsigned int cpu = 0; cpu < nr; cpu++) {
        if (perfmon_event_attached(&evs[cpu])) {
            perfmon_event_detach(&evs[cpu]);
        }
    }

    return ktest_result();
}

KTEST_DEFINE(inherit, cpu_span, it_cpu_span);
