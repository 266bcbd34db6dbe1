/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of enabling, disabling and inheritance in the perfmon core
 * (kern/perfmon/perfmon.c, kern/perfmon/perfmon_inherit.c) against the fake devices of
 * fdev.c: events attached disabled count nothing and hold no hardware
 * counter; a set of events starts and stops in one call per thread or CPU,
 * so they all cover one span; enabled and running times follow the TSC
 * only while an event is enabled (for a thread event: while its thread
 * runs); inherited events count the threads their thread creates, and
 * theirs, across switches, migrations and exits, name the threads they
 * make in their sampling buffers, and release everything when detached,
 * changing nothing `perfmon info` reads before it has the lock that reader
 * holds.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/cpu.h"
#include "fakes/fake_kmem.h"
#include "fakes/fake_smp.h"
#include "fdev.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/perfmon_ring.h"

/* The fake TSC runs at 3 GHz: 3 cycles a nanosecond. */
#define CYCLES_PER_NS   3

/* ---- enable and disable ---------------------------------------------------- */

static void
test_attach_disabled_counts_nothing(void **state)
{
    struct perfmon_event ev;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    init_ok(&ev, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN | PERFMON_EF_DISABLED);
    assert_int_equal(perfmon_event_attach(&ev, self), 0);
    assert_true(perfmon_event_attached(&ev));
    assert_false(perfmon_event_enabled(&ev));

    /* Attached, the counter reserved, but nothing started or counted. */
    assert_int_equal(fd->nr_start, 0);
    fdev_count(fd, 0, RAW_INSNS, 100);
    assert_int_equal(perfmon_event_read(&ev), 0);

    assert_int_equal(perfmon_event_enable(&ev), 0);
    assert_true(perfmon_event_enabled(&ev));
    assert_int_equal(fd->nr_start, 1);
    fdev_count(fd, 0, RAW_INSNS, 10);
    assert_int_equal(perfmon_event_read(&ev), 10);

    /* Disabled: the counter stops, the count stays. */
    assert_int_equal(perfmon_event_disable(&ev), 0);
    assert_int_equal(fd->nr_stop, 1);
    fdev_count(fd, 0, RAW_INSNS, 1000);
    assert_int_equal(perfmon_event_read(&ev), 10);

    /* Twice is once. */
    assert_int_equal(perfmon_event_disable(&ev), 0);
    assert_int_equal(perfmon_event_enable(&ev), 0);
    assert_int_equal(perfmon_event_enable(&ev), 0);
    assert_int_equal(fd->nr_start, 2);
    fdev_count(fd, 0, RAW_INSNS, 5);
    assert_int_equal(perfmon_event_read(&ev), 15);

    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(perfmon_event_read(&ev), 15);
    assert_int_equal(fd->nr_start, fd->nr_stop);
    fdev_assert_idle(fd);

    /* Attached again disabled, as its flags say: it counts on from 15. */
    assert_int_equal(perfmon_event_attach(&ev, self), 0);
    fdev_count(fd, 0, RAW_INSNS, 5);
    assert_int_equal(perfmon_event_read(&ev), 15);
    assert_int_equal(perfmon_event_enable(&ev), 0);
    fdev_count(fd, 0, RAW_INSNS, 1);
    assert_int_equal(perfmon_event_read(&ev), 16);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

static void
test_disabled_event_holds_its_counter(void **state)
{
    struct perfmon_event evs[5];
    static const uint64_t raws[] = {
        RAW_CYCLES, RAW_INSNS, RAW_BRANCH, RAW_MISS, RAW_OTHER,
    };
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);

    for (unsigned int i = 0; i < 4; i++) {
        init_ok(&evs[i], raws[i], PERFMON_EF_KERN | PERFMON_EF_RAW
                                  | PERFMON_EF_DISABLED | PERFMON_EF_PINNED);
        assert_int_equal(perfmon_event_attach_cpu(&evs[i], 1), 0);
    }

    /* A pinned event enabled later cannot fail for want of a counter. */
    init_ok(&evs[4], raws[4], PERFMON_EF_KERN | PERFMON_EF_RAW
                              | PERFMON_EF_PINNED);
    assert_int_equal(perfmon_event_attach_cpu(&evs[4], 1), -EAGAIN);
    assert_int_equal(fd->nr_start, 0);

    for (unsigned int i = 0; i < 4; i++) {
        assert_int_equal(perfmon_event_enable(&evs[i]), 0);
        fdev_count(fd, 1, raws[i], i + 1);
        assert_int_equal(perfmon_event_read(&evs[i]), i + 1);
        assert_int_equal(perfmon_event_detach(&evs[i]), 0);
    }

    fdev_assert_idle(fd);
}

static void
test_enable_errors_change_nothing(void **state)
{
    struct perfmon_event a, b;
    struct perfmon_event *set[2] = { &a, &b };
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    init_ok(&a, PERFMON_EV_CYCLE, PERFMON_EF_KERN | PERFMON_EF_DISABLED);
    init_ok(&b, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&a, 0), 0);

    /* b is not attached: a is not enabled either. */
    assert_int_equal(perfmon_events_enable(set, 2), -EINVAL);
    assert_false(perfmon_event_enabled(&a));
    assert_int_equal(fd->nr_start, 0);
    assert_int_equal(perfmon_event_enable(NULL), -EINVAL);
    assert_int_equal(perfmon_event_disable(&b), -EINVAL);
    assert_int_equal(perfmon_events_disable(NULL, 1), -EINVAL);
    set[1] = NULL;
    assert_int_equal(perfmon_events_enable(set, 2), -EINVAL);
    assert_int_equal(perfmon_events_enable(set, 1), 0);
    assert_true(perfmon_event_enabled(&a));
    assert_int_equal(perfmon_events_enable(set, 0), 0);
    assert_false(perfmon_event_enabled(&b));
    assert_int_equal(perfmon_event_detach(&a), 0);

    /* INHERIT is for thread events. */
    init_ok(&b, PERFMON_EV_CYCLE, PERFMON_EF_KERN | PERFMON_EF_INHERIT);
    assert_int_equal(perfmon_event_attach_cpu(&b, 0), -EINVAL);
    fdev_assert_idle(fd);
}

/* The events of test_enable_set_per_cpu, and what the hook injected. */
static struct fdev *set_fd;
static unsigned int set_calls[NR_CPUS];

/* Events on a CPU just before the enable or disable call runs there. */
static void
set_hook(unsigned int cpu)
{
    set_calls[cpu]++;
    fdev_count(set_fd, cpu, RAW_CYCLES, 1000);
    fdev_count(set_fd, cpu, RAW_INSNS, 1000);
}

static void
test_enable_set_per_cpu(void **state)
{
    struct perfmon_event evs[2][NR_CPUS];
    struct perfmon_event *set[2 * NR_CPUS];
    unsigned int n = 0;

    (void)state;
    set_fd = fdev_add(0, 48, 4, true);
    memset(set_calls, 0, sizeof(set_calls));

    for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++) {
        init_ok(&evs[0][cpu], PERFMON_EV_CYCLE,
                PERFMON_EF_KERN | PERFMON_EF_DISABLED);
        init_ok(&evs[1][cpu], PERFMON_EV_INSTRUCTION,
                PERFMON_EF_KERN | PERFMON_EF_DISABLED);
        assert_int_equal(perfmon_event_attach_cpu(&evs[0][cpu], cpu), 0);
        assert_int_equal(perfmon_event_attach_cpu(&evs[1][cpu], cpu), 0);
        set[n++] = &evs[0][cpu];
        set[n++] = &evs[1][cpu];
    }

    /* One call per CPU, acting on both of its events. */
    fake_xcall_set_hook(set_hook);
    assert_int_equal(perfmon_events_enable(set, n), 0);
    fake_xcall_set_hook(NULL);

    for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++) {
        assert_int_equal(set_calls[cpu], 1);
        fdev_count(set_fd, cpu, RAW_CYCLES, 10 + cpu);
        fdev_count(set_fd, cpu, RAW_INSNS, 20 + cpu);
    }

    /*
     * The events before the enable are nobody's, those before the disable
     * everybody's, and those after it nobody's again.
     */
    fake_xcall_set_hook(set_hook);
    assert_int_equal(perfmon_events_disable(set, n), 0);
    fake_xcall_set_hook(NULL);

    for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++) {
        assert_int_equal(set_calls[cpu], 2);
        fdev_count(set_fd, cpu, RAW_CYCLES, 1000);
        assert_int_equal(perfmon_event_read(&evs[0][cpu]), 1010 + cpu);
        assert_int_equal(perfmon_event_read(&evs[1][cpu]), 1020 + cpu);
        assert_int_equal(perfmon_event_detach(&evs[0][cpu]), 0);
        assert_int_equal(perfmon_event_detach(&evs[1][cpu]), 0);
    }
}

static void
test_enable_set_thread_one_call(void **state)
{
    struct perfmon_event evs[3];
    struct perfmon_event *set[3] = { &evs[0], &evs[1], &evs[2] };
    struct thread *t = fake_thread_create("t");
    static const uint64_t ids[] = {
        PERFMON_EV_CYCLE, PERFMON_EV_INSTRUCTION, PERFMON_EV_BRANCH,
    };
    struct fdev *fd;
    unsigned int calls;

    (void)state;
    fd = fdev_add(0, 48, 4, true);

    for (unsigned int i = 0; i < 3; i++) {
        init_ok(&evs[i], ids[i], PERFMON_EF_KERN | PERFMON_EF_DISABLED);
        assert_int_equal(perfmon_event_attach(&evs[i], t), 0);
    }

    fake_thread_switch(2, t);
    assert_int_equal(fd->nr_start, 0);
    calls = fake_thread_nr_calls();
    assert_int_equal(perfmon_events_enable(set, 3), 0);
    assert_int_equal(fake_thread_nr_calls(), calls + 1);
    assert_int_equal(fd->nr_start, 3);
    fdev_count(fd, 2, RAW_CYCLES, 7);
    fdev_count(fd, 2, RAW_BRANCH, 9);

    /* Switched out and in: enabled events follow the thread. */
    fake_thread_switch(2, NULL);
    fdev_count(fd, 2, RAW_CYCLES, 100);
    fake_thread_migrate(t, 3);
    fake_thread_switch(3, t);
    fdev_count(fd, 3, RAW_CYCLES, 1);

    calls = fake_thread_nr_calls();
    assert_int_equal(perfmon_events_disable(set, 3), 0);
    assert_int_equal(fake_thread_nr_calls(), calls + 1);
    assert_int_equal(t->perfmon_td.active_mask, 0);
    assert_int_equal(t->perfmon_td.loaded_mask, 0);
    fdev_count(fd, 3, RAW_CYCLES, 1000);
    assert_int_equal(perfmon_event_read(&evs[0]), 8);
    assert_int_equal(perfmon_event_read(&evs[1]), 0);
    assert_int_equal(perfmon_event_read(&evs[2]), 9);

    /* Disabled events need no switch work: the thread has none active. */
    fake_thread_switch(3, NULL);
    fake_thread_switch(3, t);
    assert_int_equal(fd->nr_start, fd->nr_stop);

    for (unsigned int i = 0; i < 3; i++) {
        assert_int_equal(perfmon_event_detach(&evs[i]), 0);
    }
}

/* ---- times ------------------------------------------------------------------ */

static void
test_times_follow_enabled_spans(void **state)
{
    struct perfmon_event te, ce;
    struct thread *t = fake_thread_create("t");
    uint64_t enabled, running;

    (void)state;
    fdev_add(0, 48, 4, true);
    init_ok(&te, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&ce, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN | PERFMON_EF_DISABLED);
    assert_int_equal(perfmon_event_attach(&te, t), 0);
    assert_int_equal(perfmon_event_attach_cpu(&ce, 1), 0);

    /* A thread event's time passes only while its thread runs. */
    fake_cpu_advance_tsc(3000);
    fake_thread_switch(1, t);
    fake_cpu_advance_tsc(600);
    perfmon_event_read_times(&te, &enabled, &running);
    assert_int_equal(enabled, 600 / CYCLES_PER_NS);
    assert_int_equal(running, enabled);
    fake_thread_switch(1, NULL);
    fake_cpu_advance_tsc(9000);
    fake_thread_migrate(t, 2);
    fake_thread_switch(2, t);
    fake_cpu_advance_tsc(300);
    fake_thread_switch(2, NULL);
    perfmon_event_read_times(&te, &enabled, &running);
    assert_int_equal(enabled, 900 / CYCLES_PER_NS);
    assert_int_equal(running, enabled);

    /* A CPU event's while it is enabled. */
    perfmon_event_read_times(&ce, &enabled, NULL);
    assert_int_equal(enabled, 0);
    assert_int_equal(perfmon_event_enable(&ce), 0);
    fake_cpu_advance_tsc(1500);
    perfmon_event_read_times(&ce, &enabled, &running);
    assert_int_equal(enabled, 1500 / CYCLES_PER_NS);
    assert_int_equal(running, enabled);
    assert_int_equal(perfmon_event_disable(&ce), 0);
    fake_cpu_advance_tsc(1500);
    assert_int_equal(perfmon_event_enable(&ce), 0);
    fake_cpu_advance_tsc(30);
    assert_int_equal(perfmon_event_detach(&ce), 0);
    perfmon_event_read_times(&ce, &enabled, &running);
    assert_int_equal(enabled, 1530 / CYCLES_PER_NS);
    assert_int_equal(running, enabled);

    /* Read in place on the calling CPU, times included. */
    assert_int_equal(perfmon_event_detach(&te), 0);
    init_ok(&te, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach(&te, self), 0);
    fake_cpu_advance_tsc(60);
    assert_int_equal(perfmon_event_read_times(&te, &enabled, &running), 0);
    assert_int_equal(enabled, 60 / CYCLES_PER_NS);
    assert_int_equal(running, enabled);
    assert_int_equal(perfmon_event_read_times(NULL, &enabled, &running), 0);
    assert_int_equal(enabled, 0);
    assert_int_equal(perfmon_event_detach(&te), 0);
}

/* ---- inheritance ------------------------------------------------------------ */

static void
fork_ok(struct thread *parent, const char *name, struct thread **childp)
{
    assert_int_equal(fake_thread_fork(parent, name, childp), 0);
}

/* An instructions event counting the kernel in t and its new threads. */
static void
attach_inherited(struct perfmon_event *ev, struct thread *t)
{
    init_ok(ev, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN | PERFMON_EF_INHERIT);
    assert_int_equal(perfmon_event_attach(ev, t), 0);
}

/*
 * p runs on CPU 1 and creates a thread, which then runs on CPU 2: what
 * each of them counts happens on a CPU of its own.  Returns the child.
 */
static struct thread *
fork_onto_cpu2(struct thread *p)
{
    struct thread *c;

    fake_thread_switch(1, p);
    fork_ok(p, "c", &c);
    fake_thread_switch(2, c);
    return c;
}

static void
test_inherit_children_and_grandchildren(void **state)
{
    struct perfmon_event inh, own;
    struct thread *p = fake_thread_create("p"), *c, *g;
    uint64_t enabled, running;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    attach_inherited(&inh, p);
    init_ok(&own, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach(&own, p), 0);
    fake_thread_switch(1, p);
    fdev_count(fd, 1, RAW_INSNS, 100);

    /* A child, created while p is counted, counts on its own CPU. */
    fork_ok(p, "c", &c);
    fake_thread_migrate(c, 2);
    fake_thread_switch(2, c);
    fake_cpu_advance_tsc(300);
    fdev_count(fd, 2, RAW_INSNS, 50);
    assert_int_equal(perfmon_event_read(&inh), 150);
    assert_int_equal(perfmon_event_read(&own), 100);

    /* Its child too; read while running elsewhere and while not running. */
    fork_ok(c, "g", &g);
    fake_thread_migrate(g, 3);
    fake_thread_switch(3, g);
    fdev_count(fd, 3, RAW_INSNS, 7);
    assert_int_equal(perfmon_event_read(&inh), 157);
    fake_thread_switch(3, NULL);
    fdev_count(fd, 3, RAW_INSNS, 1000);
    assert_int_equal(perfmon_event_read(&inh), 157);

    /* Times add up too: p and c ran while the TSC moved 300 cycles. */
    perfmon_event_read_times(&inh, &enabled, &running);
    assert_int_equal(enabled, 2 * 300 / CYCLES_PER_NS);
    assert_int_equal(running, enabled);

    /* A child exits: its count stays, its counter and thread go. */
    assert_int_equal(g->nr_refs, 2);
    fake_thread_exit(g);
    assert_int_equal(g->nr_refs, 1);
    assert_null(g->perfmon_td.members);
    assert_int_equal(g->perfmon_td.active_mask, 0);
    assert_int_equal(perfmon_event_read(&inh), 157);

    /* Detaching releases every child, and keeps their counts. */
    assert_int_equal(perfmon_event_detach(&inh), 0);
    assert_int_equal(c->nr_refs, 1);
    assert_int_equal(c->perfmon_td.active_mask, 0);
    assert_null(c->perfmon_td.members);
    assert_null(p->perfmon_td.members);
    assert_int_equal(perfmon_event_read(&inh), 157);
    fdev_count(fd, 2, RAW_INSNS, 1000);
    assert_int_equal(perfmon_event_read(&inh), 157);

    /* No more children: a thread created now gets nothing. */
    fork_ok(p, "late", &g);
    assert_int_equal(g->perfmon_td.active_mask, 0);
    assert_int_equal(perfmon_event_detach(&own), 0);
    fake_thread_switch(2, NULL);
    fake_thread_switch(1, NULL);
    assert_int_equal(fd->nr_start, fd->nr_stop);
    fdev_assert_idle(fd);
    assert_int_equal(fake_kmem_live(), 0);
}

static void
test_inherit_off_counts_the_thread_alone(void **state)
{
    struct perfmon_event ev;
    struct thread *p = fake_thread_create("p"), *c;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    init_ok(&ev, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach(&ev, p), 0);
    c = fork_onto_cpu2(p);
    assert_null(c->perfmon_td.members);
    fdev_count(fd, 1, RAW_INSNS, 3);
    fdev_count(fd, 2, RAW_INSNS, 50);
    assert_int_equal(perfmon_event_read(&ev), 3);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

static void
test_inherit_follows_enable(void **state)
{
    struct perfmon_event ev;
    struct thread *p = fake_thread_create("p"), *c;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    init_ok(&ev, PERFMON_EV_INSTRUCTION,
            PERFMON_EF_KERN | PERFMON_EF_INHERIT | PERFMON_EF_DISABLED);
    assert_int_equal(perfmon_event_attach(&ev, p), 0);

    /* Created while the parent event is disabled: the child is too. */
    c = fork_onto_cpu2(p);
    fdev_count(fd, 2, RAW_INSNS, 50);
    assert_int_equal(perfmon_event_read(&ev), 0);

    assert_int_equal(perfmon_event_enable(&ev), 0);
    fdev_count(fd, 2, RAW_INSNS, 5);
    fdev_count(fd, 1, RAW_INSNS, 1);
    assert_int_equal(perfmon_event_read(&ev), 6);

    assert_int_equal(perfmon_event_disable(&ev), 0);
    fdev_count(fd, 2, RAW_INSNS, 500);
    assert_int_equal(perfmon_event_read(&ev), 6);
    assert_int_equal(c->perfmon_td.active_mask, 0);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    fdev_assert_idle(fd);
}

/* The thread to exit in the middle of the next thread_call() on it. */
static struct thread *exit_on_call;

static void
exit_hook(struct thread *thread)
{
    if (thread == exit_on_call) {
        exit_on_call = NULL;
        fake_thread_exit(thread);
    }
}

static void
test_inherit_child_exits_during_read(void **state)
{
    struct perfmon_event ev;
    struct thread *p = fake_thread_create("p"), *c;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    attach_inherited(&ev, p);
    c = fork_onto_cpu2(p);
    fdev_count(fd, 2, RAW_INSNS, 40);

    /* The owner reads c while c exits: the owner releases it, once. */
    exit_on_call = c;
    fake_thread_set_call_hook(exit_hook);
    assert_int_equal(perfmon_event_read(&ev), 40);
    fake_thread_set_call_hook(NULL);
    assert_null(exit_on_call);
    assert_int_equal(c->nr_refs, 1);
    assert_null(c->perfmon_td.members);
    assert_int_equal(perfmon_event_read(&ev), 40);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(perfmon_event_read(&ev), 40);
    assert_int_equal(fake_kmem_live(), 0);
}

/*
 * Exits run in the middle of thread_call()s: on the nth call (counted
 * from 1) on exit_script[i].on, exit_script[i].exits exits.
 */
static struct {
    struct thread *on;
    unsigned int nth;
    struct thread *exits;
} exit_script[2];

static void
exit_script_hook(struct thread *thread)
{
    for (size_t i = 0; i < ARRAY_SIZE(exit_script); i++) {
        if (exit_script[i].on == thread && --exit_script[i].nth == 0) {
            exit_script[i].on = NULL;
            fake_thread_exit(exit_script[i].exits);
        }
    }
}

/*
 * Two children exit together while the owner reads: the one being read
 * (left to the owner, which releases it after the read), and the next
 * on the owner's walk, while the owner releases the first.  The walk
 * must not step onto the second once its exit freed it.
 */
static void
test_inherit_children_exit_during_walk(void **state)
{
    struct perfmon_event ev;
    struct thread *p = fake_thread_create("p"), *c1, *c2;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    attach_inherited(&ev, p);
    c1 = fork_onto_cpu2(p);
    fork_ok(p, "c2", &c2);
    fake_thread_migrate(c2, 3);
    fake_thread_switch(3, c2);
    fdev_count(fd, 2, RAW_INSNS, 40);
    fdev_count(fd, 3, RAW_INSNS, 7);

    /* The walk takes the newest child first: c2, then c1. */
    exit_script[0].on = c2;
    exit_script[0].nth = 1;             /* the read of c2 */
    exit_script[0].exits = c2;
    exit_script[1].on = c2;
    exit_script[1].nth = 2;             /* the detach of c2, after it */
    exit_script[1].exits = c1;
    fake_thread_set_call_hook(exit_script_hook);
    assert_int_equal(perfmon_event_read(&ev), 47);
    fake_thread_set_call_hook(NULL);
    assert_null(exit_script[0].on);
    assert_null(exit_script[1].on);
    assert_null(c1->perfmon_td.members);
    assert_null(c2->perfmon_td.members);
    assert_int_equal(c1->nr_refs, 1);
    assert_int_equal(c2->nr_refs, 1);
    assert_int_equal(perfmon_event_read(&ev), 47);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(perfmon_event_read(&ev), 47);
    fake_thread_switch(1, NULL);
    fdev_assert_idle(fd);
    assert_int_equal(fake_kmem_live(), 0);
}

static void
test_inherit_fork_out_of_memory(void **state)
{
    struct perfmon_event a, b;
    struct thread *p = fake_thread_create("p"), *c;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    init_ok(&a, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN | PERFMON_EF_INHERIT);
    init_ok(&b, PERFMON_EV_CYCLE, PERFMON_EF_KERN | PERFMON_EF_INHERIT);

    fake_kmem_fail_after_n(0);
    assert_int_equal(perfmon_event_attach(&a, p), -ENOMEM);
    assert_false(perfmon_event_attached(&a));
    fdev_assert_idle(fd);
    assert_int_equal(p->nr_refs, 1);
    fake_kmem_fail_after_n(FAKE_KMEM_NEVER);

    assert_int_equal(perfmon_event_attach(&a, p), 0);
    assert_int_equal(perfmon_event_attach(&b, p), 0);
    fake_thread_switch(1, p);

    /* The second child cannot be made: neither is kept. */
    fake_kmem_fail_after_n(1);
    assert_int_equal(fake_thread_fork(p, "c", &c), -ENOMEM);
    fake_kmem_fail_after_n(FAKE_KMEM_NEVER);
    assert_int_equal(c->perfmon_td.active_mask, 0);
    assert_null(c->perfmon_td.members);
    assert_int_equal(c->nr_refs, 1);

    fork_ok(p, "c2", &c);
    assert_int_equal(c->nr_refs, 3);
    assert_int_equal(perfmon_event_detach(&a), 0);
    assert_int_equal(perfmon_event_detach(&b), 0);
    assert_int_equal(c->nr_refs, 1);
    assert_int_equal(fake_kmem_live(), 0);
}

/*
 * A thread with two inherited events: detaching the older one takes its
 * record out from behind the newer; the thread's own exit changes nothing
 * for the events counting it.
 */
static void
test_inherit_two_families(void **state)
{
    struct perfmon_event a, b;
    struct thread *p = fake_thread_create("p");
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    attach_inherited(&a, p);
    attach_inherited(&b, p);
    fork_onto_cpu2(p);
    fdev_count(fd, 2, RAW_INSNS, 5);
    assert_int_equal(perfmon_event_detach(&a), 0);
    assert_int_equal(perfmon_event_read(&a), 5);
    assert_non_null(p->perfmon_td.members);
    assert_null(p->perfmon_td.members->next);

    fake_thread_exit(p);
    fdev_count(fd, 2, RAW_INSNS, 1);
    assert_int_equal(perfmon_event_read(&b), 6);
    assert_int_equal(perfmon_event_detach(&b), 0);
    assert_null(p->perfmon_td.members);
    assert_int_equal(fake_kmem_live(), 0);
}

/* What perfmon_pmc_foreach showed of the one counter in use. */
static struct perfmon_pmc_info shown;

static void
show_fn(const struct perfmon_pmc_info *info, void *arg)
{
    (void)arg;
    shown = *info;
}

static void
test_inherit_children_shown(void **state)
{
    struct perfmon_event ev;
    struct thread *p = fake_thread_create("p"), *c;

    (void)state;
    fdev_add(0, 48, 4, true);
    attach_inherited(&ev, p);
    fake_thread_switch(1, p);
    fork_ok(p, "c", &c);
    perfmon_pmc_foreach(show_fn, NULL);
    assert_int_equal(shown.nr_users, 2);

    /* Newest first: the child, then the event it inherits from. */
    assert_ptr_equal(shown.users[0].thread, c);
    assert_true(shown.users[0].inherited);
    assert_ptr_equal(shown.users[1].thread, p);
    assert_false(shown.users[1].inherited);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * `perfmon info` (perfmon_pmc_foreach) tells children from roots by their
 * family pointers, under perfmon_lock, while the root may be detached on
 * another CPU.  The walk holds the lock on CPU 2 when CPU 0 detaches the
 * root; where the detach first waits for the lock the walk runs, holding
 * it throughout, and must still see the family whole: nothing it reads
 * changes before the detach has the lock.
 */
static struct thread *walked_child;
static bool walked;

static void
walk_while_detaching(struct spinlock *lock)
{
    unsigned int cpu = cpu_id();

    assert_ptr_equal(lock, &perfmon_lock);
    fake_cpu_set_id(2);

    /* The walk's own hold, taken up by perfmon_pmc_foreach at once. */
    spinlock_unlock(&perfmon_lock);
    perfmon_pmc_foreach(show_fn, NULL);
    fake_cpu_set_id(cpu);
    assert_int_equal(shown.nr_users, 2);
    assert_ptr_equal(shown.users[0].thread, walked_child);
    assert_true(shown.users[0].inherited);
    assert_false(shown.users[1].inherited);
    walked = true;
}

static void
test_inherit_detach_waits_for_info(void **state)
{
    struct perfmon_event ev;
    struct thread *p = fake_thread_create("p");

    (void)state;
    fdev_add(0, 48, 4, true);
    attach_inherited(&ev, p);
    fake_thread_switch(1, p);
    fork_ok(p, "c", &walked_child);
    walked = false;

    fake_cpu_set_id(2);
    spinlock_lock(&perfmon_lock);
    fake_cpu_set_id(0);
    fake_spinlock_set_contended_hook(walk_while_detaching);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    fake_spinlock_set_contended_hook(NULL);
    assert_true(walked);
    assert_false(perfmon_lock.locked);

    /* After the walk, the detach took the family and its slot away. */
    memset(&shown, 0, sizeof(shown));
    perfmon_pmc_foreach(show_fn, NULL);
    assert_int_equal(shown.nr_users, 0);
    fake_thread_switch(1, NULL);
    assert_int_equal(fake_kmem_live(), 0);
}

/* The COMM records of cpu's ring in sbuf: how many, the last one's. */
static unsigned int
comm_records(struct perfmon_sbuf *sbuf, unsigned int cpu, uint32_t *tidp,
             char *name)
{
    uint64_t rec[PERFMON_RING_MAX_REC / sizeof(uint64_t)];
    unsigned int nr = 0;
    size_t size;

    while ((size = perfmon_sbuf_read(sbuf, cpu, rec, sizeof(rec))) != 0) {
        const struct perfmon_rec_hdr *hdr = (const void *)rec;

        if (hdr->type == PERFMON_REC_COMM) {
            assert_true(size >= sizeof(*hdr) + PERFMON_REC_NAME_SIZE);
            *tidp = hdr->misc;
            memcpy(name, hdr + 1, PERFMON_REC_NAME_SIZE);
            nr++;
        }
    }

    return nr;
}

/*
 * A thread made under inherited sampling events is named in the ring of
 * the CPU that made it, once for each buffer, before it runs: its samples
 * may be read when it is gone.  A counting family names nothing.
 */
static void
test_inherit_names_new_threads(void **state)
{
    struct thread *p = fake_thread_create("p"), *c, *d;
    struct perfmon_sampling s = { .period = 1000 }, s2;
    struct perfmon_event a, b, count;
    struct perfmon_sbuf *other;
    char name[PERFMON_REC_NAME_SIZE];
    uint32_t tid = 0;

    (void)state;
    fdev_add(0, 48, 4, true);
    assert_int_equal(perfmon_sbuf_create(&s.sbuf, PERFMON_SBUF_MIN), 0);
    assert_int_equal(perfmon_sbuf_create(&other, PERFMON_SBUF_MIN), 0);
    s2 = s;
    init_ok(&a, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN | PERFMON_EF_INHERIT);
    init_ok(&b, PERFMON_EV_CYCLE, PERFMON_EF_KERN | PERFMON_EF_INHERIT);
    assert_int_equal(perfmon_event_set_sampling(&a, &s), 0);
    assert_int_equal(perfmon_event_set_sampling(&b, &s2), 0);
    attach_inherited(&count, p);
    assert_int_equal(perfmon_event_attach(&a, p), 0);
    assert_int_equal(perfmon_event_attach(&b, p), 0);
    fake_thread_switch(1, p);

    /* Two families, one buffer: one record. */
    fork_ok(p, "a-long-thread-name", &c);
    assert_int_equal(comm_records(s.sbuf, 1, &tid, name), 1);
    assert_int_equal(tid, thread_id(c));
    assert_string_equal(name, "a-long-thread-name");
    assert_int_equal(comm_records(s.sbuf, 0, &tid, name), 0);
    fake_thread_exit(c);
    fake_thread_switch(1, p);

    /* Each buffer its own. */
    assert_int_equal(perfmon_event_detach(&b), 0);
    s2.sbuf = other;
    assert_int_equal(perfmon_event_set_sampling(&b, &s2), 0);
    assert_int_equal(perfmon_event_attach(&b, p), 0);
    fork_ok(p, "d", &d);
    assert_int_equal(comm_records(s.sbuf, 1, &tid, name), 1);
    assert_int_equal(comm_records(other, 1, &tid, name), 1);
    assert_int_equal(tid, thread_id(d));
    assert_string_equal(name, "d");
    fake_thread_exit(d);
    fake_thread_switch(1, p);

    /* Counting alone: nothing written. */
    assert_int_equal(perfmon_event_detach(&a), 0);
    assert_int_equal(perfmon_event_detach(&b), 0);
    fork_ok(p, "e", &d);
    assert_int_equal(comm_records(s.sbuf, 1, &tid, name), 0);
    assert_int_equal(comm_records(other, 1, &tid, name), 0);
    fake_thread_exit(d);
    assert_int_equal(perfmon_event_detach(&count), 0);
    perfmon_sbuf_destroy(s.sbuf);
    perfmon_sbuf_destroy(other);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_attach_disabled_counts_nothing, setup),
        cmocka_unit_test_setup(test_disabled_event_holds_its_counter, setup),
        cmocka_unit_test_setup(test_enable_errors_change_nothing, setup),
        cmocka_unit_test_setup(test_enable_set_per_cpu, setup),
        cmocka_unit_test_setup(test_enable_set_thread_one_call, setup),
        cmocka_unit_test_setup(test_times_follow_enabled_spans, setup),
        cmocka_unit_test_setup(test_inherit_children_and_grandchildren,
                               setup),
        cmocka_unit_test_setup(test_inherit_off_counts_the_thread_alone,
                               setup),
        cmocka_unit_test_setup(test_inherit_follows_enable, setup),
        cmocka_unit_test_setup(test_inherit_child_exits_during_read, setup),
        cmocka_unit_test_setup(test_inherit_children_exit_during_walk, setup),
        cmocka_unit_test_setup(test_inherit_fork_out_of_memory, setup),
        cmocka_unit_test_setup(test_inherit_children_shown, setup),
        cmocka_unit_test_setup(test_inherit_two_families, setup),
        cmocka_unit_test_setup(test_inherit_detach_waits_for_info, setup),
        cmocka_unit_test_setup(test_inherit_names_new_threads, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
