/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of multiplexing in the perfmon core (kern/perfmon/perfmon_sched.c,
 * kern/perfmon/perfmon.c) against the fake devices of fdev.c: events that fit are
 * never moved and run all the time they are enabled; N events over K
 * counters each run about K/N of the time, and their scaled counts
 * estimate the truth; a group runs all together or not at all; a pinned
 * event always counts, exactly; a thread's times add up across switches
 * and migrations without drift; a fixed counter is used for its event; a
 * counter reserved later is given up by the flexible event on it; group
 * and pinning errors; a pinned event takes its counter from a flexible
 * one, which moves at once; a member joining a running group with no
 * counter left makes the whole group wait; perfmon_rotate_local; perfmon.mux_ms.
 *
 * Time is the fake TSC; a multiplexing interval is PERFMON_MUX_MS_DEFAULT
 * clock ticks (perfmon_tick() called that many times on the CPU).
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
#include "fakes/fake_log.h"
#include "fakes/fake_smp.h"
#include "fdev.h"
#include "kern/cmdline.h"
#include "kern/error.h"
#include "kern/log.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_control.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon/perfmon_i.h"

#define TSC_PER_INTERVAL    30000       /* 10 us at the fake 3 GHz */

static const uint64_t raws[] = {
    RAW_CYCLES, RAW_INSNS, RAW_BRANCH, RAW_MISS, RAW_OTHER, 0x42, 0x43,
};

/* One multiplexing interval on cpu: time passes, then the ticks. */
static void
interval(unsigned int cpu)
{
    struct fake_ctx ctx;

    fake_cpu_advance_tsc(TSC_PER_INTERVAL);
    fake_ctx_enter(&ctx, cpu);

    for (unsigned int i = 0; i < PERFMON_MUX_MS_DEFAULT; i++) {
        perfmon_tick(cpu);
    }

    fake_ctx_exit(&ctx);
}

/* n of each of the first nr raw events happen on cpu. */
static void
happen(struct fdev *fd, unsigned int cpu, unsigned int nr, uint64_t n)
{
    for (unsigned int i = 0; i < nr; i++) {
        fdev_count(fd, cpu, raws[i], n);
    }
}

static void
cpu_events(struct perfmon_event *evs, unsigned int nr, unsigned int cpu,
           unsigned int flags)
{
    for (unsigned int i = 0; i < nr; i++) {
        init_ok(&evs[i], raws[i], PERFMON_EF_KERN | PERFMON_EF_RAW | flags);
        assert_int_equal(perfmon_event_attach_cpu(&evs[i], cpu), 0);
    }
}

static void
detach_all(struct perfmon_event *evs, unsigned int nr)
{
    for (unsigned int i = 0; i < nr; i++) {
        assert_int_equal(perfmon_event_detach(&evs[i]), 0);
    }
}

/* count * enabled / running: perf's estimate. */
static uint64_t
scaled(struct perfmon_event *ev, uint64_t *enabledp, uint64_t *runningp)
{
    uint64_t enabled, running, count;

    count = perfmon_event_read_times(ev, &enabled, &running);
    *enabledp = enabled;
    *runningp = running;
    return (running == 0) ? 0 : count * enabled / running;
}

static void
test_fits_never_rotated(void **state)
{
    struct perfmon_event evs[2];
    uint64_t enabled, running;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    cpu_events(evs, 2, 1, 0);

    for (unsigned int i = 0; i < 50; i++) {
        happen(fd, 1, 2, 10);
        interval(1);
    }

    /* Started once each, never moved; the tick had nothing to do. */
    assert_int_equal(fd->nr_start, 2);
    assert_int_equal(perfmon_mux_cpus, 0);
    assert_int_equal(syscnt_value("perfmon_nr_rotations/1"), 0);

    for (unsigned int i = 0; i < 2; i++) {
        assert_int_equal(perfmon_event_read_times(&evs[i], &enabled,
                                                  &running), 500);
        assert_int_equal(enabled, 50 * TSC_PER_INTERVAL / 3);
        assert_int_equal(running, enabled);
    }

    detach_all(evs, 2);
    fdev_assert_idle(fd);
}

/*
 * N events over K counters: each runs about K/N of the time, whatever
 * their slots ran for earlier users (slot 0 ran alone a long time first).
 */
static void
test_fair_turns(void **state)
{
    enum { N = 6, K = 2, ROUNDS = 600, RATE = 1000 };
    struct perfmon_event evs[N];
    uint64_t enabled, running, sum_running = 0;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, K, true);
    cpu_events(evs, 1, 1, 0);

    for (unsigned int i = 0; i < ROUNDS; i++) {
        interval(1);
    }

    detach_all(evs, 1);
    cpu_events(evs, N, 1, 0);
    assert_true(perfmon_mux_cpus & (1ULL << 1));

    for (unsigned int i = 0; i < ROUNDS; i++) {
        happen(fd, 1, N, RATE);
        interval(1);
    }

    for (unsigned int i = 0; i < N; i++) {
        uint64_t estimate = scaled(&evs[i], &enabled, &running);

        /* K/N of the time, within 2% of it; the estimate within 2%. */
        assert_int_equal(enabled, ROUNDS * TSC_PER_INTERVAL / 3);
        assert_in_range(running * N * 100 / (enabled * K), 98, 102);
        assert_in_range(estimate * 100 / ((uint64_t)ROUNDS * RATE), 98,
                        102);
        sum_running += running;
    }

    /* The K counters were always busy: no time lost between turns. */
    assert_int_equal(sum_running, K * enabled);
    detach_all(evs, N);
    assert_int_equal(perfmon_mux_cpus, 0);
    assert_int_equal(fd->nr_start, fd->nr_stop);
    fdev_assert_idle(fd);
}

/* Whether exactly all or none of the slots of mask run on cpu. */
static bool
all_or_none(unsigned int cpu, uint64_t mask)
{
    uint64_t running = perfmon_cpus[cpu].sched_mask & mask;

    return running == 0 || running == mask;
}

static void
test_group_all_or_nothing(void **state)
{
    struct perfmon_event g[2], others[3];
    struct perfmon_event *set[2] = { &g[0], &g[1] };
    uint64_t e0, r0, e1, r1, group_slots;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 2, true);

    /* {cycles, instructions} attached disabled, enabled together. */
    for (unsigned int i = 0; i < 2; i++) {
        init_ok(&g[i], raws[i],
                PERFMON_EF_KERN | PERFMON_EF_RAW | PERFMON_EF_DISABLED);
        assert_int_equal(perfmon_event_set_group(&g[i], &g[0]), 0);
        assert_int_equal(perfmon_event_attach_cpu(&g[i], 1), 0);
    }

    for (unsigned int i = 0; i < 3; i++) {
        init_ok(&others[i], raws[2 + i], PERFMON_EF_KERN | PERFMON_EF_RAW);
        assert_int_equal(perfmon_event_attach_cpu(&others[i], 1), 0);
    }

    assert_int_equal(perfmon_events_enable(set, 2), 0);
    group_slots = perfmon_slot_bit(g[0].slot) | perfmon_slot_bit(g[1].slot);

    for (unsigned int i = 0; i < 400; i++) {
        happen(fd, 1, 2, 7);
        interval(1);
        assert_true(all_or_none(1, group_slots));
    }

    /* Equal running times, equal counts: the ratio is meaningful. */
    assert_int_equal(perfmon_event_read_times(&g[0], &e0, &r0),
                     perfmon_event_read_times(&g[1], &e1, &r1));
    assert_int_equal(r0, r1);
    assert_int_equal(e0, e1);
    assert_true(r0 > 0 && r0 < e0);
    detach_all(others, 3);
    detach_all(g, 2);
    fdev_assert_idle(fd);
}

static void
test_pinned_never_rotated(void **state)
{
    struct perfmon_event pin, flex[3];
    uint64_t enabled, running;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 2, true);
    init_ok(&pin, RAW_OTHER, PERFMON_EF_KERN | PERFMON_EF_RAW
                             | PERFMON_EF_PINNED);
    assert_int_equal(perfmon_event_attach_cpu(&pin, 1), 0);
    cpu_events(flex, 3, 1, 0);

    for (unsigned int i = 0; i < 300; i++) {
        happen(fd, 1, 3, 5);
        fdev_count(fd, 1, RAW_OTHER, 3);
        interval(1);
    }

    /* Exact, all the time; the others share the one counter left. */
    assert_int_equal(perfmon_event_read_times(&pin, &enabled, &running),
                     900);
    assert_int_equal(running, enabled);

    for (unsigned int i = 0; i < 3; i++) {
        perfmon_event_read_times(&flex[i], &enabled, &running);
        assert_in_range(running * 300 / enabled, 97, 103);
    }

    detach_all(flex, 3);
    assert_int_equal(perfmon_event_detach(&pin), 0);
    fdev_assert_idle(fd);
}

/*
 * A thread with three events on two counters, switched out, in, and
 * migrated: enabled is exactly its run time, and at every moment two of
 * the three ran.
 */
static void
test_thread_times_no_drift(void **state)
{
    struct perfmon_event evs[3];
    struct thread *t = fake_thread_create("t");
    uint64_t enabled, running, sum = 0, total = 0;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 2, true);

    for (unsigned int i = 0; i < 3; i++) {
        init_ok(&evs[i], raws[i], PERFMON_EF_KERN | PERFMON_EF_RAW);
        assert_int_equal(perfmon_event_attach(&evs[i], t), 0);
    }

    for (unsigned int round = 0; round < 30; round++) {
        unsigned int cpu = 1 + round % 3;

        fake_thread_migrate(t, cpu);
        fake_thread_switch(cpu, t);

        for (unsigned int i = 0; i < 1 + round % 5; i++) {
            interval(cpu);
            total += TSC_PER_INTERVAL;
        }

        fake_thread_switch(cpu, NULL);
        fake_cpu_advance_tsc(TSC_PER_INTERVAL);     /* not its time */
    }

    for (unsigned int i = 0; i < 3; i++) {
        perfmon_event_read_times(&evs[i], &enabled, &running);
        assert_int_equal(enabled, total / 3);
        assert_true(running > 0 && running < enabled);
        sum += running;
    }

    assert_int_equal(sum, 2 * enabled);
    assert_int_equal(perfmon_mux_cpus, 0);
    detach_all(evs, 3);
    fdev_assert_idle(fd);
}

/*
 * A thread with six events on two counters that never stays for a whole
 * multiplexing interval: its events still take turns, at its switches.
 */
static void
test_thread_turns_at_switches(void **state)
{
    enum { N = 6, K = 2, ROUNDS = 600, RATE = 100 };
    struct perfmon_event evs[N];
    struct thread *t = fake_thread_create("t");
    uint64_t enabled, running;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, K, true);

    for (unsigned int i = 0; i < N; i++) {
        init_ok(&evs[i], raws[i], PERFMON_EF_KERN | PERFMON_EF_RAW);
        assert_int_equal(perfmon_event_attach(&evs[i], t), 0);
    }

    for (unsigned int round = 0; round < ROUNDS; round++) {
        unsigned int cpu = 1 + round % 3;

        fake_thread_migrate(t, cpu);
        fake_thread_switch(cpu, t);
        happen(fd, cpu, N, RATE);
        fake_cpu_advance_tsc(TSC_PER_INTERVAL / 10);
        fake_thread_switch(cpu, NULL);
    }

    for (unsigned int i = 0; i < N; i++) {
        uint64_t estimate = scaled(&evs[i], &enabled, &running);

        assert_in_range(running * N * 100 / (enabled * K), 95, 105);
        assert_in_range(estimate * 100 / ((uint64_t)ROUNDS * RATE), 95, 105);
    }

    detach_all(evs, N);
    fdev_assert_idle(fd);
}

/*
 * Three CPU events on two counters, and a thread with one event taking
 * turns on the CPU with one without: switching in the thread, whose event
 * waits, is a turn; switching in the other is none (the counter the first
 * thread's event gives up goes to a waiting one at once), so CPU events
 * do not change places at every switch.
 */
static void
test_turn_only_when_next_waits(void **state)
{
    struct thread *a = fake_thread_create("a"), *b = fake_thread_create("b");
    struct perfmon_event evs[3], ev;
    uint64_t before;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 2, true);
    cpu_events(evs, 3, 1, 0);
    init_ok(&ev, RAW_OTHER, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_attach(&ev, a), 0);
    fake_thread_switch(1, a);
    before = syscnt_value("perfmon_nr_rotations/1");

    for (unsigned int i = 0; i < 10; i++) {
        fake_thread_switch(1, b);
        fake_thread_switch(1, a);
    }

    assert_int_equal(syscnt_value("perfmon_nr_rotations/1") - before, 10);
    fake_thread_switch(1, NULL);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    detach_all(evs, 3);
    fdev_assert_idle(fd);
}

/* A fixed counter takes its event, leaving the general ones free. */
static void
test_fixed_counter_preferred(void **state)
{
    struct perfmon_event evs[3];
    struct fdev *fd;

    (void)state;
    fd = fdev_init(0, 48, 3, true);
    fd->fixed_cycles = true;            /* hw 2 counts cycles only */
    assert_int_equal(perfmon_register(&fd->dev), 0);
    cpu_events(evs, 3, 1, 0);           /* cycles, insns, branches */
    assert_true(fd->counters[1][2].running);
    assert_int_equal(fd->counters[1][2].raw_event, RAW_CYCLES);
    assert_int_equal(perfmon_mux_cpus, 0);
    detach_all(evs, 3);
    fdev_assert_idle(fd);
}

/* A counter reserved later: the flexible event on it moves off. */
static void
test_reserved_counter_evicts(void **state)
{
    struct perfmon_event ev;
    unsigned int hw;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 2, true);
    init_ok(&ev, RAW_INSNS, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 1), 0);
    assert_true(fd->counters[1][0].running);
    fdev_count(fd, 1, RAW_INSNS, 10);

    assert_int_equal(perfmon_dev_alloc(&fd->dev, RAW_CYCLES, PERFMON_EF_KERN,
                                       &hw), 0);
    assert_int_equal(hw, 0);
    assert_false(fd->counters[1][0].running);
    assert_true(fd->counters[1][1].running);
    fdev_count(fd, 1, RAW_INSNS, 5);
    assert_int_equal(perfmon_event_read(&ev), 15);

    perfmon_dev_free(&fd->dev, hw);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    fdev_assert_idle(fd);
}

/*
 * Counter constraints in a group: the leader could count anywhere, the
 * member on counter 0 only.  Placed in slot order the leader would take
 * counter 0 and the group never run; the scheduler matches them.  A
 * second member that also needs counter 0 can never count with the
 * first, and is refused.
 */
static void
test_group_constraints(void **state)
{
    struct perfmon_event g[3], other;
    uint64_t masks[3] = { 0x1, 0x3, 0x1 };
    uint64_t e, r;
    struct fdev *fd;

    (void)state;
    assert_true(perfmon_counters_fit(masks, 2));
    assert_false(perfmon_counters_fit(masks, 3));
    assert_true(perfmon_counters_fit(masks, 0));

    fd = fdev_add(0, 48, 3, true);
    init_ok(&g[0], RAW_OTHER, PERFMON_EF_KERN | PERFMON_EF_RAW);
    init_ok(&g[1], RAW_ONLY0, PERFMON_EF_KERN | PERFMON_EF_RAW);
    init_ok(&g[2], 0x100 | RAW_ONLY0, PERFMON_EF_KERN | PERFMON_EF_RAW);

    for (unsigned int i = 0; i < 3; i++) {
        assert_int_equal(perfmon_event_set_group(&g[i], &g[0]), 0);
    }

    assert_int_equal(perfmon_event_attach_cpu(&g[0], 1), 0);
    assert_int_equal(perfmon_event_attach_cpu(&g[1], 1), 0);
    assert_int_equal(perfmon_event_attach_cpu(&g[2], 1), -ENOSPC);

    /* Flexible events beside them: all take turns, the group counts. */
    init_ok(&other, RAW_INSNS, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_attach_cpu(&other, 1), 0);
    init_ok(&g[2], RAW_BRANCH, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_attach_cpu(&g[2], 1), 0);

    for (unsigned int i = 0; i < 100; i++) {
        fdev_count(fd, 1, RAW_ONLY0, 3);
        interval(1);
    }

    assert_true(perfmon_event_read_times(&g[1], &e, &r) > 0);
    assert_true(r > 0);
    assert_int_equal(perfmon_event_detach(&other), 0);
    assert_int_equal(perfmon_event_detach(&g[2]), 0);
    assert_int_equal(perfmon_event_detach(&g[1]), 0);
    assert_int_equal(perfmon_event_detach(&g[0]), 0);
    fdev_assert_idle(fd);
}

/*
 * What a slot needs besides a counter (an extra register holding a value)
 * is held once per slot, shared by slots asking the same value, and let
 * go with the slot: another value is refused (-EAGAIN) while it is held,
 * a pinned event that cannot have it reserves no counter either, and
 * every event gone, nothing is held.
 */
static void
test_held_resources(void **state)
{
    struct perfmon_event a, a2, b, pinned;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    init_ok(&a, 0x100 | RAW_HELD, PERFMON_EF_KERN | PERFMON_EF_RAW);
    init_ok(&a2, 0x100 | RAW_HELD, PERFMON_EF_USER | PERFMON_EF_RAW);
    init_ok(&b, 0x200 | RAW_HELD, PERFMON_EF_KERN | PERFMON_EF_RAW);
    init_ok(&pinned, 0x200 | RAW_HELD,
            PERFMON_EF_KERN | PERFMON_EF_RAW | PERFMON_EF_PINNED);

    assert_int_equal(perfmon_event_attach_cpu(&a, 1), 0);
    assert_int_equal(perfmon_event_attach_cpu(&a2, 1), 0);
    assert_int_equal(fd->held_refs, 2);
    assert_int_equal(perfmon_event_attach_cpu(&b, 1), -EAGAIN);
    assert_int_equal(perfmon_event_attach_cpu(&pinned, 1), -EAGAIN);
    assert_int_equal(fd->hw_used, 0);

    assert_int_equal(perfmon_event_detach(&a), 0);
    assert_int_equal(perfmon_event_attach_cpu(&b, 1), -EAGAIN);
    assert_int_equal(perfmon_event_detach(&a2), 0);
    assert_int_equal(fd->held_refs, 0);
    assert_int_equal(perfmon_event_attach_cpu(&pinned, 1), 0);
    assert_int_equal(perfmon_event_attach_cpu(&b, 1), 0);
    assert_int_equal(fd->held_refs, 2);
    assert_int_equal(perfmon_event_detach(&b), 0);
    assert_int_equal(perfmon_event_detach(&pinned), 0);
    fdev_assert_idle(fd);
}

static void
test_group_errors(void **state)
{
    struct perfmon_event l, m[4], other;
    struct thread *t = fake_thread_create("t");
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 3, true);
    fdev_add(1, 48, 4, true);
    init_ok(&l, RAW_CYCLES, PERFMON_EF_KERN | PERFMON_EF_RAW);
    init_ok(&other, RAW_INSNS, PERFMON_EF_KERN | PERFMON_EF_RAW);

    assert_int_equal(perfmon_event_set_group(NULL, &l), -EINVAL);
    assert_int_equal(perfmon_event_set_group(&other, &l), -EINVAL);
    assert_int_equal(perfmon_event_set_group(&l, &l), 0);

    /* The leader first. */
    for (unsigned int i = 0; i < 4; i++) {
        init_ok(&m[i], raws[1 + i], PERFMON_EF_KERN | PERFMON_EF_RAW);
        assert_int_equal(perfmon_event_set_group(&m[i], &l), 0);
    }

    assert_int_equal(perfmon_event_attach_cpu(&m[0], 1), -EINVAL);
    assert_int_equal(perfmon_event_attach_cpu(&l, 1), 0);
    assert_int_equal(perfmon_event_set_group(&l, NULL), -EINVAL);

    /* Where the leader is, pinned as it is, on its device. */
    assert_int_equal(perfmon_event_attach_cpu(&m[0], 2), -EINVAL);
    assert_int_equal(perfmon_event_attach(&m[0], t), -EINVAL);
    m[0].flags |= PERFMON_EF_PINNED;
    assert_int_equal(perfmon_event_attach_cpu(&m[0], 1), -EINVAL);
    m[0].flags &= ~PERFMON_EF_PINNED;
    assert_int_equal(perfmon_event_set_dev(&m[0], &fdevs[1].dev), 0);
    assert_int_equal(perfmon_event_attach_cpu(&m[0], 1), -EINVAL);
    assert_int_equal(perfmon_event_set_dev(&m[0], NULL), 0);

    /* Three counters: the leader and two members, not three. */
    assert_int_equal(perfmon_event_attach_cpu(&m[0], 1), 0);
    assert_int_equal(perfmon_event_attach_cpu(&m[1], 1), 0);
    assert_int_equal(perfmon_event_attach_cpu(&m[2], 1), -ENOSPC);
    assert_int_equal(perfmon_event_detach(&m[1]), 0);
    assert_int_equal(perfmon_event_attach_cpu(&m[2], 1), 0);
    assert_int_equal(perfmon_event_detach(&m[2]), 0);
    assert_int_equal(perfmon_event_detach(&m[0]), 0);
    assert_int_equal(perfmon_event_detach(&l), 0);

    /*
     * A leader detached and made anew while a member still counts: the
     * member is given back cleanly, and the leader leads afresh.
     */
    assert_int_equal(perfmon_event_set_group(&l, &l), 0);
    assert_int_equal(perfmon_event_attach_cpu(&l, 1), 0);
    assert_int_equal(perfmon_event_attach_cpu(&m[0], 1), 0);
    assert_int_equal(perfmon_event_detach(&l), 0);
    init_ok(&l, RAW_CYCLES, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_set_group(&l, &l), 0);
    assert_int_equal(perfmon_event_attach_cpu(&l, 1), 0);
    assert_int_equal(perfmon_event_detach(&m[0]), 0);
    assert_int_equal(perfmon_event_attach_cpu(&m[1], 1), 0);
    assert_int_equal(perfmon_event_attach_cpu(&m[2], 1), 0);
    assert_int_equal(perfmon_event_attach_cpu(&m[3], 1), -ENOSPC);
    assert_int_equal(perfmon_event_detach(&m[1]), 0);
    assert_int_equal(perfmon_event_detach(&m[2]), 0);
    assert_int_equal(perfmon_event_detach(&l), 0);
    fdev_assert_idle(fd);
}

/*
 * A leader detached before its member, then made anew at the same place
 * and leading a new group: the member left behind is no part of it.  It
 * takes none of the new group's counters (three: the new leader and two
 * members fit), shares no slot with a new member counting its event, and
 * takes turns apart from the new group.
 */
static void
test_group_leader_detached_first(void **state)
{
    struct perfmon_event l, old, m[2];
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 3, true);
    init_ok(&l, RAW_CYCLES, PERFMON_EF_KERN | PERFMON_EF_RAW);
    init_ok(&old, raws[1], PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_set_group(&l, &l), 0);
    assert_int_equal(perfmon_event_set_group(&old, &l), 0);
    assert_int_equal(perfmon_event_attach_cpu(&l, 1), 0);
    assert_int_equal(perfmon_event_attach_cpu(&old, 1), 0);
    assert_int_equal(perfmon_event_detach(&l), 0);

    init_ok(&l, RAW_CYCLES, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_set_group(&l, &l), 0);
    assert_int_equal(perfmon_event_attach_cpu(&l, 1), 0);

    for (unsigned int i = 0; i < 2; i++) {
        init_ok(&m[i], raws[1 + i], PERFMON_EF_KERN | PERFMON_EF_RAW);
        assert_int_equal(perfmon_event_set_group(&m[i], &l), 0);
        assert_int_equal(perfmon_event_attach_cpu(&m[i], 1), 0);
    }

    assert_int_not_equal(m[0].slot, old.slot);

    /*
     * Four on three counters: old runs, the new group waits for all of
     * its three, then has them at the next turn while old waits.
     */
    happen(fd, 1, 3, 1000);
    assert_true(perfmon_event_read(&old) == 1000);
    assert_true(perfmon_event_read(&l) == 0);
    interval(1);
    happen(fd, 1, 3, 1000);
    assert_true(perfmon_event_read(&old) == 1000);
    assert_true(perfmon_event_read(&l) == 1000);
    assert_true(perfmon_event_read(&m[0]) == 1000);
    assert_true(perfmon_event_read(&m[1]) == 1000);

    assert_int_equal(perfmon_event_detach(&old), 0);
    assert_int_equal(perfmon_event_detach(&m[0]), 0);
    assert_int_equal(perfmon_event_detach(&m[1]), 0);
    assert_int_equal(perfmon_event_detach(&l), 0);
    fdev_assert_idle(fd);
}

/* A pinned and a flexible event of one raw event: two slots, both count. */
static void
test_pinned_and_flexible_apart(void **state)
{
    struct perfmon_event pin, flex;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    init_ok(&pin, RAW_CYCLES,
            PERFMON_EF_KERN | PERFMON_EF_RAW | PERFMON_EF_PINNED);
    init_ok(&flex, RAW_CYCLES, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_attach_cpu(&pin, 1), 0);
    assert_int_equal(perfmon_event_attach_cpu(&flex, 1), 0);
    assert_int_not_equal(pin.slot, flex.slot);
    assert_int_equal(fd->nr_start, 2);
    happen(fd, 1, 1, 100);
    assert_true(perfmon_event_read(&pin) == 100);
    assert_true(perfmon_event_read(&flex) == 100);
    assert_int_equal(perfmon_event_detach(&pin), 0);
    assert_int_equal(perfmon_event_detach(&flex), 0);
    fdev_assert_idle(fd);
}

/* A counter freed while a slot waits goes to it at once, not at a tick. */
static void
test_freed_counter_taken_at_once(void **state)
{
    struct perfmon_event evs[3];
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 2, true);
    cpu_events(evs, 3, 1, 0);
    happen(fd, 1, 3, 100);
    assert_true(perfmon_event_read(&evs[2]) == 0);
    assert_int_equal(perfmon_event_detach(&evs[1]), 0);
    happen(fd, 1, 3, 100);
    assert_true(perfmon_event_read(&evs[0]) == 200);
    assert_true(perfmon_event_read(&evs[2]) == 100);
    assert_int_equal(perfmon_event_detach(&evs[0]), 0);
    assert_int_equal(perfmon_event_detach(&evs[2]), 0);
    fdev_assert_idle(fd);
}

/* Turns come once per perfmon.mux_ms, the first one and every later. */
static void
test_one_rotation_per_interval(void **state)
{
    struct perfmon_event evs[3];

    (void)state;
    fdev_add(0, 48, 2, true);
    cpu_events(evs, 3, 1, 0);

    for (unsigned int i = 1; i <= 5; i++) {
        interval(1);
        assert_int_equal(syscnt_value("perfmon_nr_rotations/1"), i);
    }

    detach_all(evs, 3);
}

/*
 * A sampling slot released, and its slot reused by counting events of
 * two threads: a switch between them keeps the counter running (no
 * stop and start, as for any counting slot both threads use).
 */
static void
test_released_sampling_slot_counts(void **state)
{
    struct thread *a = fake_thread_create("a"), *b = fake_thread_create("b");
    struct perfmon_event ev, ea, eb;
    struct perfmon_sampling s = { .period = 1000, .id = 1 };
    struct perfmon_sbuf *sbuf;
    unsigned int starts;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    assert_int_equal(perfmon_sbuf_create(&sbuf, 4096), 0);
    s.sbuf = sbuf;
    init_ok(&ev, RAW_CYCLES, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_set_sampling(&ev, &s), 0);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 1), 0);
    assert_int_equal(perfmon_event_detach(&ev), 0);

    init_ok(&ea, RAW_CYCLES, PERFMON_EF_KERN | PERFMON_EF_RAW);
    init_ok(&eb, RAW_CYCLES, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_attach(&ea, a), 0);
    assert_int_equal(perfmon_event_attach(&eb, b), 0);
    assert_int_equal(ea.slot, ev.slot);
    assert_int_equal(eb.slot, ev.slot);
    fake_thread_switch(1, a);
    happen(fd, 1, 1, 10);
    starts = fd->nr_start;
    fake_thread_switch(1, b);
    assert_int_equal(fd->nr_start, starts);
    happen(fd, 1, 1, 20);
    fake_thread_switch(1, NULL);
    assert_true(perfmon_event_read(&ea) == 10);
    assert_true(perfmon_event_read(&eb) == 20);
    assert_int_equal(perfmon_event_detach(&ea), 0);
    assert_int_equal(perfmon_event_detach(&eb), 0);
    perfmon_sbuf_destroy(sbuf);
    fdev_assert_idle(fd);
}

/*
 * A thread event that ran alone a long time, disabled, then enabled
 * again where three CPU events take turns on two counters: it has run
 * none of its time since the enable, so it takes the first turn; its
 * history (it always ran) would put it last.
 */
static void
test_reenabled_takes_turns_afresh(void **state)
{
    struct thread *t = fake_thread_create("t");
    struct perfmon_event e, evs[3];
    uint64_t enabled, running, before;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 2, true);
    init_ok(&e, RAW_OTHER, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_attach(&e, t), 0);
    fake_thread_switch(1, t);

    for (unsigned int i = 0; i < 100; i++) {
        interval(1);
    }

    assert_int_equal(perfmon_event_disable(&e), 0);
    cpu_events(evs, 3, 1, 0);

    for (unsigned int i = 0; i < 30; i++) {
        interval(1);
    }

    assert_int_equal(perfmon_event_enable(&e), 0);
    perfmon_event_read_times(&e, &enabled, &before);
    interval(1);
    fake_cpu_advance_tsc(300);
    fdev_count(fd, 1, RAW_OTHER, 100);
    assert_true(perfmon_event_read_times(&e, &enabled, &running) == 100);
    assert_true(running > before);
    fake_thread_switch(1, NULL);
    assert_int_equal(perfmon_event_detach(&e), 0);
    detach_all(evs, 3);
    fdev_assert_idle(fd);
}

/*
 * Overflow interrupts of a pinned counter landing inside the stop of a
 * flexible event, then inside the start of another, in multiplexing
 * turns (a device that cannot pass a counter on in place): each is left
 * pending there and folded at the section's end, not dropped with the
 * stopped counters' own.
 */
static void
test_nmi_at_stop_and_start(void **state)
{
    struct perfmon_event pin, evs[3];
    static const uint64_t ids[] = { RAW_CYCLES, RAW_INSNS, RAW_BRANCH };
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 16, 3, true);
    fd->ops.transfer = NULL;
    init_ok(&pin, RAW_OTHER,
            PERFMON_EF_KERN | PERFMON_EF_RAW | PERFMON_EF_PINNED);
    assert_int_equal(perfmon_event_attach_cpu(&pin, 1), 0);

    for (unsigned int i = 0; i < 3; i++) {
        init_ok(&evs[i], ids[i], PERFMON_EF_KERN | PERFMON_EF_RAW);
        assert_int_equal(perfmon_event_attach_cpu(&evs[i], 1), 0);
    }

    fdev_count(fd, 1, RAW_OTHER, 10);
    fdev_count(fd, 1, RAW_CYCLES, 20);

    /*
     * Counter 0 is pinned; a turn stops one, starts one: one wrap each.
     */
    fdev_script_nmi(fd, FDEV_STEP_STOP, 1, 0, 65536);
    interval(1);
    fdev_script_done(fd);
    assert_true(perfmon_event_read(&pin) == 10 + 65536);
    fdev_script_nmi(fd, FDEV_STEP_START, 1, 0, 65536);
    interval(1);
    fdev_script_done(fd);
    assert_true(perfmon_event_read(&pin) == 10 + 2 * 65536);
    assert_true(perfmon_event_read(&evs[0]) == 20);
    assert_int_equal(perfmon_event_detach(&pin), 0);
    detach_all(evs, 3);
    fdev_assert_idle(fd);
}

/*
 * A pinned event reserves a counter a flexible event already runs on: the
 * flexible one moves to another counter at once, counting on.
 */
static void
test_pinned_takes_its_counter(void **state)
{
    struct perfmon_event flex, pin;
    struct perfmon_cpu *cpu = &perfmon_cpus[1];
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 2, true);
    init_ok(&flex, RAW_INSNS, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_attach_cpu(&flex, 1), 0);
    assert_int_equal(cpu->pmcs[flex.slot].hw_id, 0);
    fdev_count(fd, 1, RAW_INSNS, 10);

    init_ok(&pin, RAW_CYCLES,
            PERFMON_EF_KERN | PERFMON_EF_RAW | PERFMON_EF_PINNED);
    assert_int_equal(perfmon_event_attach_cpu(&pin, 1), 0);
    assert_int_equal(perfmon_pmcs[pin.slot].hw_id, 0);
    assert_true(cpu->sched_mask & perfmon_slot_bit(pin.slot));
    assert_true(cpu->sched_mask & perfmon_slot_bit(flex.slot));
    assert_int_equal(cpu->pmcs[flex.slot].hw_id, 1);
    assert_int_equal(perfmon_mux_cpus, 0);

    fdev_count(fd, 1, RAW_INSNS, 5);
    fdev_count(fd, 1, RAW_CYCLES, 7);
    assert_int_equal(perfmon_event_read(&flex), 15);
    assert_int_equal(perfmon_event_read(&pin), 7);
    detach_all(&pin, 1);
    detach_all(&flex, 1);
    fdev_assert_idle(fd);
}

/*
 * A member joins its group while the group runs and no counter is left:
 * the whole group waits, then takes its turns whole.
 */
static void
test_member_joins_full(void **state)
{
    struct perfmon_event l, m, other;
    struct perfmon_cpu *cpu = &perfmon_cpus[1];
    uint64_t group_slots, el, rl, em, rm;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 2, true);
    init_ok(&l, RAW_CYCLES, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_set_group(&l, &l), 0);
    assert_int_equal(perfmon_event_attach_cpu(&l, 1), 0);
    init_ok(&other, RAW_BRANCH, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_attach_cpu(&other, 1), 0);
    assert_true(cpu->sched_mask & perfmon_slot_bit(l.slot));

    init_ok(&m, RAW_INSNS, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_set_group(&m, &l), 0);
    assert_int_equal(perfmon_event_attach_cpu(&m, 1), 0);
    group_slots = perfmon_slot_bit(l.slot) | perfmon_slot_bit(m.slot);
    assert_false(cpu->sched_mask & group_slots);
    assert_true(cpu->sched_mask & perfmon_slot_bit(other.slot));
    assert_true(perfmon_mux_cpus & (1ULL << 1));

    for (unsigned int i = 0; i < 100; i++) {
        happen(fd, 1, 3, 5);
        interval(1);
        assert_true(all_or_none(1, group_slots));
    }

    assert_int_equal(perfmon_event_read_times(&l, &el, &rl),
                     perfmon_event_read_times(&m, &em, &rm));
    assert_int_equal(rl, rm);
    assert_true(rl > 0);
    detach_all(&m, 1);
    detach_all(&l, 1);
    detach_all(&other, 1);
    fdev_assert_idle(fd);
}

/* perfmon_rotate_local: a turn now, the waiting event first. */
static void
test_rotate_local(void **state)
{
    struct perfmon_event evs[3];
    struct perfmon_cpu *cpu = &perfmon_cpus[1];
    struct fake_ctx ctx;
    uint64_t waiting;

    (void)state;
    fdev_add(0, 48, 2, true);
    cpu_events(evs, 3, 1, 0);
    waiting = perfmon_slot_bit(evs[2].slot);
    assert_false(cpu->sched_mask & waiting);

    fake_cpu_advance_tsc(TSC_PER_INTERVAL);
    fake_ctx_enter(&ctx, 1);
    perfmon_rotate_local();
    fake_ctx_exit(&ctx);

    assert_true(cpu->sched_mask & waiting);
    assert_int_equal(syscnt_value("perfmon_nr_rotations/1"), 1);
    detach_all(evs, 3);
}

/* Clock ticks on cpu until its first turn (at most 2000). */
static unsigned int
ticks_to_turn(unsigned int cpu)
{
    uint64_t before = syscnt_value("perfmon_nr_rotations/1");
    unsigned int ticks = 0;
    struct fake_ctx ctx;

    fake_ctx_enter(&ctx, cpu);

    while (syscnt_value("perfmon_nr_rotations/1") == before && ticks < 2000) {
        perfmon_tick(cpu);
        ticks++;
    }

    fake_ctx_exit(&ctx);
    return ticks;
}

/* Turns every perfmon.mux_ms; out of range: a warning, and the default. */
static void
test_mux_ms_option(void **state)
{
    static const struct {
        const char *line;
        unsigned int ticks;
        bool warned;
    } cases[] = {
        { "perfmon.mux_ms=9", 9, false },
        { "perfmon.mux_ms=1", 1, false },
        { "perfmon.mux_ms=0", PERFMON_MUX_MS_DEFAULT, true },
        { "perfmon.mux_ms=1001", PERFMON_MUX_MS_DEFAULT, true },
        { "perfmon.mux_ms=soon", PERFMON_MUX_MS_DEFAULT, true },
        { "", PERFMON_MUX_MS_DEFAULT, false },
    };
    struct perfmon_event evs[3];

    (void)state;

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        assert_int_equal(cmdline_parse(cases[i].line), 0);
        fake_syscnt_reset();
        fake_log_reset();
        perfmon_reset();
        assert_int_equal(fake_log_count(LOG_WARNING) != 0, cases[i].warned);

        if (cases[i].warned) {
            assert_non_null(strstr(fake_log_last(),
                                   "perfmon.mux_ms must be 1..1000"));
        }

        fdev_add(0, 48, 2, true);
        cpu_events(evs, 3, 1, 0);
        assert_int_equal(ticks_to_turn(1), cases[i].ticks);
        detach_all(evs, 3);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_fits_never_rotated, setup),
        cmocka_unit_test_setup(test_fair_turns, setup),
        cmocka_unit_test_setup(test_group_all_or_nothing, setup),
        cmocka_unit_test_setup(test_pinned_never_rotated, setup),
        cmocka_unit_test_setup(test_thread_times_no_drift, setup),
        cmocka_unit_test_setup(test_thread_turns_at_switches, setup),
        cmocka_unit_test_setup(test_turn_only_when_next_waits, setup),
        cmocka_unit_test_setup(test_fixed_counter_preferred, setup),
        cmocka_unit_test_setup(test_reserved_counter_evicts, setup),
        cmocka_unit_test_setup(test_group_constraints, setup),
        cmocka_unit_test_setup(test_held_resources, setup),
        cmocka_unit_test_setup(test_group_errors, setup),
        cmocka_unit_test_setup(test_group_leader_detached_first, setup),
        cmocka_unit_test_setup(test_pinned_and_flexible_apart, setup),
        cmocka_unit_test_setup(test_freed_counter_taken_at_once, setup),
        cmocka_unit_test_setup(test_one_rotation_per_interval, setup),
        cmocka_unit_test_setup(test_released_sampling_slot_counts, setup),
        cmocka_unit_test_setup(test_reenabled_takes_turns_afresh, setup),
        cmocka_unit_test_setup(test_nmi_at_stop_and_start, setup),
        cmocka_unit_test_setup(test_pinned_takes_its_counter, setup),
        cmocka_unit_test_setup(test_member_joins_full, setup),
        cmocka_unit_test_setup(test_rotate_local, setup),
        cmocka_unit_test_setup(test_mux_ms_option, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
