/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of a multiplexing turn (kern/perfmon/perfmon_sched.c and
 * perfmon_turn.c): it moves only what changes, and runs the same events
 * as a turn that places everything again would;
 * perfmon_rotate_local_moved() counts what it moved.  The rest of
 * multiplexing is in perfmon_mux_test.c.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <cmocka.h>

#include "arch/x86/cpu.h"
#include "fakes/fake_smp.h"
#include "fdev.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_control.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/perfmon/perfmon_sched.h"
#include "kern/perfmon/perfmon_turn.h"

#define TSC_PER_INTERVAL    30000       /* 10 us at the fake 3 GHz */

/* One multiplexing interval of clock ticks on cpu. */
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

/*
 * A turn computes the units a full placement would run, then moves only
 * what changes.  On random sets of events (groups among them, events one
 * counter only can count, more than the counters) over random intervals
 * and counts, the runs through every turn are the same as with turns that
 * place everything again (the reference), turn after turn.  Events come
 * with turns between them, so that a group's members have shares of
 * their own (the unit's is its smallest).  A third of the seeds make
 * only events alone (no group, or one of their own; now and then a
 * pinned one first, in a slot a flexible one had), which all counters can
 * count but now and then: the
 * turn that needs no order, whose
 * counters pass in place (or stop and start: a device that cannot pass
 * them, every other such seed).
 */
static uint64_t turn_rand_state;

static uint64_t
turn_rand(uint64_t bound)
{
    turn_rand_state = turn_rand_state * 6364136223846793005ULL
                      + 1442695040888963407ULL;
    return (turn_rand_state >> 11) % bound;
}

/* The counters passed on in place in the runs, for the test's check. */
static unsigned int turn_nr_transfers;

#define TURN_MAX_EVS        12
#define TURN_NR_TURNS       40

/* The seeds of events alone: a third. */
static bool
seed_alone(uint64_t seed)
{
    return seed % 3 == 0;
}

/*
 * Every active slot's turn_enabled and turn_running on cpu agree with its
 * record's times (struct perfmon_cpu): a turn's share of it is what
 * clocking the record to its now would give; and one with no enabled time
 * yet started no later than turn_zero_at, so that a turn at a later now
 * finds enabled time in every slot.  Checked after every step of the runs
 * below, through starts, stops, passes in place, activations and
 * switches.
 */
static void
assert_turn_offsets(unsigned int cpu_index)
{
    const struct perfmon_cpu *cpu = &perfmon_cpus[cpu_index];

    for (uint64_t slots = cpu->active_mask; slots != 0;
         slots &= slots - 1) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);
        const struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
        bool sched = (cpu->sched_mask & perfmon_slot_bit(slot)) != 0;

        assert_int_equal(cpu->turn_enabled[slot] + pmc->stamp, pmc->enabled);
        assert_int_equal(cpu->turn_running[slot] + (sched ? pmc->stamp : 0),
                         pmc->running);
        assert_true(pmc->enabled != 0 || pmc->stamp <= cpu->turn_zero_at);
    }
}

static void
run_turns(bool full, uint64_t seed, uint64_t *sets)
{
    struct perfmon_event evs[TURN_MAX_EVS];
    unsigned int nr, attached = 0;
    bool alone = seed_alone(seed);
    struct fdev *fd;

    setup(NULL);
    perfmon_sched_full_turns = full;
    turn_rand_state = seed;
    fd = fdev_add(0, 48, 2 + (unsigned int)turn_rand(4), true);
    nr = 3 + (unsigned int)turn_rand(TURN_MAX_EVS - 2);

    if (alone && (seed / 3) % 2 != 0) {
        fd->ops.transfer = NULL;
    }

    for (unsigned int i = 0; i < nr; i++) {
        uint64_t raw = (turn_rand(alone ? 40 : 5) == 0)
                       ? (RAW_ONLY0 | (i + 1) << 8) : 0x1000 + i;
        unsigned int leader = (unsigned int)turn_rand(i + 1);
        bool pinned = alone && i == 0 && turn_rand(2) == 0;

        /*
         * A pinned event takes the slot a flexible one of the same
         * counters had: what the slot's fixed part still says of those
         * must not make a turn take it for flexible.
         */
        if (pinned) {
            init_ok(&evs[i], raw, PERFMON_EF_KERN | PERFMON_EF_RAW);
            assert_int_equal(perfmon_event_attach_cpu(&evs[i], 1), 0);
            assert_int_equal(perfmon_event_detach(&evs[i]), 0);
        }

        init_ok(&evs[i], raw, PERFMON_EF_KERN | PERFMON_EF_RAW
                              | (pinned ? PERFMON_EF_PINNED : 0));

        /* Its own group, or one of an earlier leader's (or none). */
        if (alone) {
            if (!pinned && leader % 2 == 0) {
                assert_int_equal(perfmon_event_set_group(&evs[i], &evs[i]),
                                 0);
            }
        } else if (leader == i || turn_rand(3) == 0) {
            assert_int_equal(perfmon_event_set_group(&evs[i], &evs[i]), 0);
        } else if (evs[leader].group == &evs[leader]
                   && perfmon_event_attached(&evs[leader])) {
            assert_int_equal(perfmon_event_set_group(&evs[i], &evs[leader]),
                             0);
        }

        if (perfmon_event_attach_cpu(&evs[i], 1) != 0) {
            evs[i].state = 0;
            continue;
        }

        attached |= 1U << i;

        /*
         * Sometimes turns before the next event comes: a member joining
         * later has its own share, smaller or larger than its group's.
         */
        if (turn_rand(3) == 0) {
            interval(1);
        }

        assert_turn_offsets(1);
    }

    for (unsigned int t = 0; t < TURN_NR_TURNS; t++) {
        fdev_count(fd, 1, 0x1000 + turn_rand(nr), turn_rand(1000));

        for (unsigned int i = 0, n = 1 + (unsigned int)turn_rand(3); i < n;
             i++) {
            interval(1);
            assert_turn_offsets(1);
        }

        sets[t] = perfmon_cpus[1].sched_mask;
    }

    turn_nr_transfers += fd->nr_transfer;

    for (unsigned int i = nr; i-- > 0;) {
        if (attached & (1U << i)) {
            assert_int_equal(perfmon_event_detach(&evs[i]), 0);
        }
    }
}

/*
 * Run seeds 1..TURN_NR_SEEDS of run with full turns and incremental ones
 * and check that they agree: how many times the runs changed, and how
 * many turns of the seeds keep() picks took the simple path, in *simple.
 */
#define TURN_NR_SEEDS       90

static unsigned int
check_turns(void (*run)(bool, uint64_t, uint64_t *),
            bool (*keep)(uint64_t seed), unsigned int *simple)
{
    uint64_t full[TURN_NR_TURNS], incremental[TURN_NR_TURNS];
    unsigned int changes = 0;

    *simple = 0;

    for (uint64_t seed = 1; seed <= TURN_NR_SEEDS; seed++) {
        run(true, seed, full);
        assert_int_equal(perfmon_sched_nr_simple_turns, 0);
        run(false, seed, incremental);
        *simple += keep(seed) ? perfmon_sched_nr_simple_turns : 0;

        for (unsigned int t = 0; t < TURN_NR_TURNS; t++) {
            assert_int_equal(incremental[t], full[t]);
            changes += (t != 0 && full[t] != full[t - 1]);
        }
    }

    return changes;
}

static bool
seed_any(uint64_t seed)
{
    (void)seed;
    return true;
}

/*
 * The count of a turn's slots over its counters, by one byte sum for
 * both, is the difference of their bits set, on random and extreme
 * masks.
 */
static void
test_nr_over(void **state)
{
    static const uint64_t edges[] = { 0, 1, ~0ULL, 1ULL << 63, 0xffff,
                                      0xff00ff00ff00ff00ULL };

    (void)state;
    turn_rand_state = 7;

    for (unsigned int i = 0; i < ARRAY_SIZE(edges); i++) {
        for (unsigned int j = 0; j < ARRAY_SIZE(edges); j++) {
            assert_int_equal(perfmon_turn_nr_over(edges[i], edges[j]),
                             __builtin_popcountll(edges[i])
                             - __builtin_popcountll(edges[j]));
        }
    }

    for (unsigned int i = 0; i < 100000; i++) {
        uint64_t a = turn_rand(UINT64_MAX) ^ (turn_rand(UINT64_MAX) << 40);
        uint64_t b = turn_rand(UINT64_MAX) ^ (turn_rand(UINT64_MAX) << 40);

        a &= (i % 3 == 0) ? turn_rand(UINT64_MAX) : ~0ULL;
        assert_int_equal(perfmon_turn_nr_over(a, b),
                         __builtin_popcountll(a) - __builtin_popcountll(b));
    }
}

static void
test_turn_moves_what_changes(void **state)
{
    unsigned int simple;

    (void)state;

    /*
     * The runs did take turns, the seeds of events alone without order,
     * passing counters on in place where the device could.
     */
    turn_nr_transfers = 0;
    assert_true(check_turns(run_turns, seed_alone, &simple) > 150);
    assert_true(simple > 1000);
    assert_true(turn_nr_transfers > 200);
}

/*
 * The same with threads: two threads with events of their own (single
 * events, grouped ones now and then) and CPU events beside them, switched
 * in and out of CPU 1 in random order with random time between.  A
 * switch to a thread with slots waiting is a turn, taken on that
 * thread's shares, which follow it from switch to switch: the runs after
 * every switch and every tick are the same as with turns that place
 * everything again.
 */
static void
run_thread_turns(bool full, uint64_t seed, uint64_t *sets)
{
    struct perfmon_event evs[TURN_MAX_EVS];
    struct thread *ts[2];
    unsigned int nr, attached = 0;
    struct fdev *fd;

    setup(NULL);
    perfmon_sched_full_turns = full;
    turn_rand_state = seed;
    fd = fdev_add(0, 48, 2 + (unsigned int)turn_rand(3), true);
    ts[0] = fake_thread_create("a");
    ts[1] = fake_thread_create("b");
    fake_thread_migrate(ts[0], 1);
    fake_thread_migrate(ts[1], 1);
    nr = 3 + (unsigned int)turn_rand(TURN_MAX_EVS - 2);

    for (unsigned int i = 0; i < nr; i++) {
        unsigned int who = (unsigned int)turn_rand(3);
        int error;

        init_ok(&evs[i], 0x1000 + i, PERFMON_EF_KERN | PERFMON_EF_RAW);

        /* Now and then a member of the group the one before leads. */
        if (i > 0 && turn_rand(6) == 0
            && evs[i - 1].group == &evs[i - 1]) {
            assert_int_equal(perfmon_event_set_group(&evs[i], &evs[i - 1]),
                             0);
            who = 3;
        } else if (turn_rand(4) == 0) {
            assert_int_equal(perfmon_event_set_group(&evs[i], &evs[i]), 0);
        }

        if (who == 3) {
            error = (evs[i - 1].thread != NULL)
                    ? perfmon_event_attach(&evs[i], evs[i - 1].thread)
                    : perfmon_event_attach_cpu(&evs[i], 1);
        } else if (who == 0) {
            error = perfmon_event_attach_cpu(&evs[i], 1);
        } else {
            error = perfmon_event_attach(&evs[i], ts[who - 1]);
        }

        if (error != 0) {
            evs[i].state = 0;
            continue;
        }

        attached |= 1U << i;
    }

    for (unsigned int t = 0; t < TURN_NR_TURNS; t++) {
        unsigned int r = (unsigned int)turn_rand(3);
        struct thread *next = (r < 2) ? ts[r] : NULL;

        if (next != fake_thread_current(1)) {
            fake_thread_switch(1, next);
        }

        fake_cpu_advance_tsc(1 + turn_rand(TSC_PER_INTERVAL));

        assert_turn_offsets(1);

        if (turn_rand(3) == 0) {
            interval(1);
        }

        assert_turn_offsets(1);
        sets[t] = perfmon_cpus[1].sched_mask;
    }

    if (fake_thread_current(1) != NULL) {
        fake_thread_switch(1, NULL);
    }

    for (unsigned int i = nr; i-- > 0;) {
        if (attached & (1U << i)) {
            assert_int_equal(perfmon_event_detach(&evs[i]), 0);
        }
    }

    fdev_assert_idle(fd);
}

static void
test_thread_turns_move_what_changes(void **state)
{
    unsigned int simple;

    (void)state;
    assert_true(check_turns(run_thread_turns, seed_any, &simple) > 150);
    assert_true(simple > 500);
}

/*
 * The turn the benchmark counts events moved by: of 3 events on 2
 * counters, the one that waited comes in and one of the others goes out;
 * with nothing waiting, nothing moves.
 */
static void
test_rotate_local_moved(void **state)
{
    struct perfmon_event evs[3];
    struct perfmon_cpu *cpu = &perfmon_cpus[1];
    struct fake_ctx ctx;

    (void)state;
    fdev_add(0, 48, 2, true);

    for (unsigned int i = 0; i < 3; i++) {
        init_ok(&evs[i], 0x1000 + i, PERFMON_EF_KERN | PERFMON_EF_RAW);
        assert_int_equal(perfmon_event_attach_cpu(&evs[i], 1), 0);
    }

    assert_false(cpu->sched_mask & perfmon_slot_bit(evs[2].slot));
    fake_cpu_advance_tsc(TSC_PER_INTERVAL);
    fake_ctx_enter(&ctx, 1);
    assert_int_equal(perfmon_rotate_local_moved(), 2);
    fake_ctx_exit(&ctx);
    assert_true(cpu->sched_mask & perfmon_slot_bit(evs[2].slot));
    assert_int_equal(__builtin_popcountll(cpu->sched_mask), 2);

    assert_int_equal(perfmon_event_detach(&evs[2]), 0);
    fake_ctx_enter(&ctx, 1);
    assert_int_equal(perfmon_rotate_local_moved(), 0);
    fake_ctx_exit(&ctx);
    assert_int_equal(perfmon_event_detach(&evs[1]), 0);
    assert_int_equal(perfmon_event_detach(&evs[0]), 0);
}

/*
 * A turn at the time an event arrived: its share is 0 (no enabled time
 * yet), below the others' (all their time run), so it takes the counter
 * of the one with the highest slot, as a full placement does.  The turn
 * must see the arrival's lack of time as a share of 0 over 1, not as 0
 * over 0 (which no cross product tells from the others').
 */
static void
test_turn_at_arrival(void **state)
{
    struct perfmon_event evs[3];
    struct perfmon_cpu *cpu = &perfmon_cpus[1];
    struct fake_ctx ctx;

    (void)state;
    fdev_add(0, 48, 2, true);

    for (unsigned int i = 0; i < 3; i++) {
        init_ok(&evs[i], 0x1000 + i, PERFMON_EF_KERN | PERFMON_EF_RAW);

        if (i == 2) {
            fake_cpu_advance_tsc(TSC_PER_INTERVAL);
        }

        assert_int_equal(perfmon_event_attach_cpu(&evs[i], 1), 0);
    }

    assert_false(cpu->sched_mask & perfmon_slot_bit(evs[2].slot));
    fake_ctx_enter(&ctx, 1);
    assert_int_equal(perfmon_rotate_local_moved(), 2);
    fake_ctx_exit(&ctx);
    assert_true(cpu->sched_mask & perfmon_slot_bit(evs[2].slot));
    assert_true(cpu->sched_mask & perfmon_slot_bit(evs[0].slot));

    for (unsigned int i = 3; i-- > 0;) {
        assert_int_equal(perfmon_event_detach(&evs[i]), 0);
    }
}

/*
 * A turn of events alone passes the counter of the one leaving on to the
 * one arriving in place: one transfer, no stop nor start.  The count up
 * to the hand-over is the leaving one's, the events of its kind in the
 * transfer included, and so is a wrap it made before, whose interrupt
 * comes after: the arriving one counts only its own events from then on.
 * Two events on one counter: the first runs, the second waits.
 */
static void
test_turn_passes_counter_in_place(void **state)
{
    struct perfmon_event evs[2];
    struct perfmon_cpu *cpu = &perfmon_cpus[1];
    uint64_t enabled, running;
    struct fdev *fd;
    unsigned int starts;

    (void)state;
    fd = fdev_add(0, 16, 1, true);
    init_ok(&evs[0], RAW_INSNS, PERFMON_EF_KERN | PERFMON_EF_RAW);
    init_ok(&evs[1], RAW_BRANCH, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_attach_cpu(&evs[0], 1), 0);
    assert_int_equal(perfmon_event_attach_cpu(&evs[1], 1), 0);
    assert_true(cpu->sched_mask & perfmon_slot_bit(evs[0].slot));
    starts = fd->nr_start;
    fdev_count(fd, 1, RAW_INSNS, 60000);
    fdev_count(fd, 1, RAW_INSNS, 10000);      /* wraps; no NMI yet */
    fdev_count(fd, 1, RAW_BRANCH, 7);         /* nobody's */

    /* In the transfer, before the hand-over: 3 more of the first's. */
    fdev_script_nmi(fd, FDEV_STEP_TRANSFER, 1, -1, 3);
    interval(1);
    fdev_script_done(fd);
    assert_int_equal(fd->nr_transfer, 1);
    assert_int_equal(fd->nr_start, starts);
    assert_int_equal(fd->nr_stop, 0);
    assert_true(cpu->sched_mask & perfmon_slot_bit(evs[1].slot));
    assert_false(cpu->sched_mask & perfmon_slot_bit(evs[0].slot));
    fdev_nmi(fd, 1);
    fdev_count(fd, 1, RAW_INSNS, 11);         /* nobody's */
    fdev_count(fd, 1, RAW_BRANCH, 5);
    assert_int_equal(perfmon_event_read(&evs[0]), 70003);
    assert_int_equal(perfmon_event_read(&evs[1]), 5);


    /* And back: the second's count stays with it. */
    interval(1);
    assert_int_equal(fd->nr_transfer, 2);
    fdev_count(fd, 1, RAW_INSNS, 13);
    assert_int_equal(perfmon_event_read(&evs[0]), 70016);
    assert_int_equal(perfmon_event_read(&evs[1]), 5);

    /* Each ran one interval of the two, to the hand-over and from it. */
    perfmon_event_read_times(&evs[0], &enabled, &running);
    assert_true(running != 0 && running * 2 == enabled);
    perfmon_event_read_times(&evs[1], &enabled, &running);
    assert_true(running != 0 && running * 2 == enabled);
    assert_int_equal(perfmon_event_detach(&evs[1]), 0);
    assert_int_equal(perfmon_event_detach(&evs[0]), 0);
    fdev_assert_idle(fd);
}

/*
 * An event in a group of its own is a single slot too: the turn passes
 * its counter on in place (`perf stat -e '{a}','{b}'` multiplexes so).
 */
static void
test_turn_passes_groups_of_one(void **state)
{
    struct perfmon_event evs[2];
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 1, true);

    for (unsigned int i = 0; i < 2; i++) {
        init_ok(&evs[i], RAW_INSNS + i, PERFMON_EF_KERN | PERFMON_EF_RAW);
        assert_int_equal(perfmon_event_set_group(&evs[i], &evs[i]), 0);
        assert_int_equal(perfmon_event_attach_cpu(&evs[i], 1), 0);
    }

    fdev_count(fd, 1, RAW_INSNS, 40);
    interval(1);
    fdev_count(fd, 1, RAW_INSNS + 1, 9);
    interval(1);
    assert_int_equal(fd->nr_transfer, 2);
    assert_int_equal(fd->nr_stop, 0);
    assert_int_equal(perfmon_event_read(&evs[0]), 40);
    assert_int_equal(perfmon_event_read(&evs[1]), 9);
    assert_int_equal(perfmon_event_detach(&evs[1]), 0);
    assert_int_equal(perfmon_event_detach(&evs[0]), 0);
    fdev_assert_idle(fd);
}

/*
 * The turn passes no sampling slot's counter on in place (its counter is
 * read for its progress at its stop, armed at its start): it stops and
 * starts, as on a device without the transfer operation.  One counter,
 * two events: a sampling one and a counting one, then two counting ones
 * on a device that cannot pass.
 */
static void
test_turn_passes_only_what_may(void **state)
{
    struct perfmon_sampling smp = { .period = 1000, .id = 1 };
    struct perfmon_event evs[2];
    struct perfmon_sbuf *sbuf;
    struct fdev *fd;
    uint64_t (*transfer)(struct perfmon_dev *, unsigned int, uint64_t,
                         unsigned int, unsigned int *, uintptr_t *);

    (void)state;
    fd = fdev_add(0, 48, 1, true);
    transfer = fd->ops.transfer;
    assert_int_equal(perfmon_sbuf_create(&sbuf, 4096), 0);
    smp.sbuf = sbuf;

    for (unsigned int sampling = 0; sampling < 2; sampling++) {
        for (unsigned int i = 0; i < 2; i++) {
            init_ok(&evs[i], RAW_INSNS + i, PERFMON_EF_KERN | PERFMON_EF_RAW);
        }

        if (sampling != 0) {
            assert_int_equal(perfmon_event_set_sampling(&evs[sampling - 1],
                                                        &smp), 0);
        } else {
            fd->ops.transfer = NULL;
        }

        for (unsigned int i = 0; i < 2; i++) {
            assert_int_equal(perfmon_event_attach_cpu(&evs[i], 1), 0);
        }

        fd->nr_stop = 0;
        interval(1);
        interval(1);
        assert_int_equal(fd->nr_stop, 2);
        assert_int_equal(fd->nr_transfer, 0);
        assert_int_equal(perfmon_event_detach(&evs[1]), 0);
        assert_int_equal(perfmon_event_detach(&evs[0]), 0);
        fd->ops.transfer = transfer;
    }

    perfmon_sbuf_destroy(sbuf);
    fdev_assert_idle(fd);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nr_over),
        cmocka_unit_test_setup(test_turn_moves_what_changes, setup),
        cmocka_unit_test_setup(test_thread_turns_move_what_changes, setup),
        cmocka_unit_test_setup(test_rotate_local_moved, setup),
        cmocka_unit_test_setup(test_turn_at_arrival, setup),
        cmocka_unit_test_setup(test_turn_passes_counter_in_place, setup),
        cmocka_unit_test_setup(test_turn_passes_groups_of_one, setup),
        cmocka_unit_test_setup(test_turn_passes_only_what_may, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
