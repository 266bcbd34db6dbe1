/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Row 8 of `perfmon bench`: a multiplexing turn, counted from a state set
 * afresh before each counted turn, so that it runs the same path in every
 * run.
 *
 * A turn's path follows the shares of time the events got so far, which
 * the TSC sets: from whatever state the last turn left, a turn may move
 * two events or none.  So each counted turn starts from the same state:
 * one more event than the software PMU has counters, each its own group,
 * attached to this CPU one after the other.  The first ones hold the
 * counters and have run all their enabled time; the last waits and has
 * run none.  The turn then does the same every time: the waiting event
 * arrives, the last holder (equal shares: the highest slot) leaves, the
 * others keep their counters.  A try in which another turn came first (a
 * clock tick's: the CPU's perfmon_nr_rotations says) is not counted.
 *
 * Row 8 is that turn, judged; row 8m the same over the events it moved,
 * as perfmon_rotate_local_moved() counts them in one more such turn.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/bench.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_control.h"
#include "kern/perfmon/cmd/perfmon_bench_i.h"
#include "kern/printf.h"
#include "kern/syscnt.h"
#include "kern/thread.h"

/* Tries for each counted turn, at most: a tick may take the turn first. */
#define PERFMON_BENCH_TURN_ATTEMPTS     4

/*
 * The events taking turns: nr attached to the benchmark's CPU.  The
 * benchmark's thread only.
 */
struct perfmon_bench_turn {
    struct perfmon_event evs[PERFMON_DEV_MAX_PMCS + 1];
    unsigned int nr;
};

/* The turns cpu took, a system counter of the core's; 0 without it. */
static uint64_t
perfmon_bench_turns(unsigned int cpu)
{
    char name[SYSCNT_NAME_SIZE];
    const struct syscnt *turns;

    ksnprintf(name, sizeof(name), "perfmon_nr_rotations/%u", cpu);
    turns = syscnt_lookup(name);
    return (turns != NULL) ? syscnt_read(turns) : 0;
}

static void
perfmon_bench_op_rotate(struct perfmon_bench_run *run, void *arg)
{
    (void)run;
    (void)arg;
    perfmon_rotate_local();
}

static void
perfmon_bench_turn_detach(struct perfmon_bench_turn *turn)
{
    while (turn->nr > 0) {
        perfmon_event_detach(&turn->evs[--turn->nr]);
    }
}

/*
 * Attach nr events of the software PMU afresh, each its own group; the
 * last waits.  False (none left attached) when one cannot be.
 */
static bool
perfmon_bench_turn_attach(struct perfmon_bench_run *run,
                          struct perfmon_bench_turn *turn, unsigned int nr)
{
    /*
     * Nothing of ours waits yet: this takes no turn, and starts the
     * tick's count to the next one again.
     */
    perfmon_rotate_local();

    for (turn->nr = 0; turn->nr < nr; turn->nr++) {
        struct perfmon_event *ev = &turn->evs[turn->nr];

        if (perfmon_event_init(ev, PERFMON_EV_TEST, PERFMON_EF_KERN) != 0
            || perfmon_event_set_dev(ev, run->soft.dev) != 0
            || perfmon_event_set_group(ev, ev) != 0
            || perfmon_event_attach_cpu(ev, run->self) != 0) {
            perfmon_bench_turn_detach(turn);
            return false;
        }
    }

    return true;
}

/*
 * The instructions of the turn from the fresh state, beyond an empty
 * call: the smallest of run->insn_tries tries that no other turn reached
 * first.  PERFMON_BENCH_NONE without the step PMU or without such a try.
 */
static uint64_t
perfmon_bench_turn_insns(struct perfmon_bench_run *run,
                         struct perfmon_bench_turn *turn, unsigned int nr)
{
    uint64_t base = PERFMON_BENCH_NONE, count = PERFMON_BENCH_NONE;
    unsigned int counted = 0;
    struct perfmon_event steps;

    for (unsigned int i = 0;
         run->step != NULL && counted < run->insn_tries
         && i < run->insn_tries * PERFMON_BENCH_TURN_ATTEMPTS; i++) {
        uint64_t turns, c, b;

        if (!perfmon_bench_turn_attach(run, turn, nr)) {
            break;
        }

        /* Attached last, so that setting the state up is not stepped. */
        if (perfmon_bench_step_init(run, &steps, false) != 0
            || perfmon_event_attach(&steps, thread_self()) != 0) {
            perfmon_bench_turn_detach(turn);
            break;
        }

        turns = perfmon_bench_turns(run->self);
        c = perfmon_bench_insns_once(run, &steps, perfmon_bench_op_rotate,
                                     NULL, false);
        turns = perfmon_bench_turns(run->self) - turns;
        b = perfmon_bench_insns_once(run, &steps, perfmon_bench_op_nop, NULL,
                                     false);
        perfmon_event_detach(&steps);
        perfmon_bench_turn_detach(turn);

        if (turns == 1) {
            count = MIN(count, c);
            base = MIN(base, b);
            counted++;
        }
    }

    if (counted == 0) {
        return PERFMON_BENCH_NONE;
    }

    return (count > base) ? count - base : 0;
}

/* How many events the turn from the fresh state moves; 0: not known. */
static unsigned int
perfmon_bench_turn_moved(struct perfmon_bench_run *run,
                         struct perfmon_bench_turn *turn, unsigned int nr)
{
    for (unsigned int i = 0; i < PERFMON_BENCH_TURN_ATTEMPTS; i++) {
        uint64_t turns;
        unsigned int moved;

        if (!perfmon_bench_turn_attach(run, turn, nr)) {
            break;
        }

        turns = perfmon_bench_turns(run->self);
        moved = perfmon_rotate_local_moved();
        turns = perfmon_bench_turns(run->self) - turns;
        perfmon_bench_turn_detach(turn);

        if (turns == 1) {
            return moved;
        }
    }

    return 0;
}

int
perfmon_bench_row_rotation(struct perfmon_bench_run *run)
{
    struct perfmon_bench_turn turn = { .nr = 0 };
    struct perfmon_dev_info info;
    unsigned int nr, moved;
    struct bench_result r;
    uint64_t insns;
    char what[48];

    perfmon_dev_get_info(run->soft.dev, &info);
    nr = info.nr_pmcs + 1;

    /*
     * The benchmark's own CPU event would take turns too, with a share
     * its past set: off meanwhile, the turns are the row's events' alone.
     */
    if (nr > ARRAY_SIZE(turn.evs)
        || perfmon_event_disable(&run->cpu_event) != 0) {
        return 0;
    }

    if (!perfmon_bench_turn_attach(run, &turn, nr)) {
        return perfmon_event_enable(&run->cpu_event);
    }

    /* Cycles: turn after turn, wherever the shares take them. */
    perfmon_bench_measure(run, perfmon_bench_op_rotate, NULL, 1, false, &r);
    perfmon_bench_turn_detach(&turn);
    insns = perfmon_bench_turn_insns(run, &turn, nr);
    ksnprintf(what, sizeof(what), "a multiplexing turn (%u on %u)", nr,
              info.nr_pmcs);
    perfmon_bench_print(run, "8", what, insns,
                        perfmon_bench_budget(PERFMON_BENCH_BUDGET_TURN), &r,
                        NULL);
    moved = perfmon_bench_turn_moved(run, &turn, nr);

    if (insns != PERFMON_BENCH_NONE && moved != 0) {
        ksnprintf(what, sizeof(what), "  per event moved: %lu (%u moved)",
                  (unsigned long)(insns / moved), moved);
        perfmon_bench_print(run, "8m", what, PERFMON_BENCH_NONE,
                            PERFMON_BENCH_NONE, NULL, NULL);
    }

    return perfmon_event_enable(&run->cpu_event);
}
