/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon bench`, row 4: context switches.  Two threads pinned to one
 * CPU yield to each other, without events, with the perfmon hook off,
 * with 1 or 4 events each (shared: both count the same events), and with
 * one event each on different counters; the added rows are differences
 * to the switch without events, next to the raw counter operations a
 * switch cannot avoid.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/bench.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_control.h"
#include "kern/perfmon/cmd/perfmon_bench_i.h"
#include "kern/printf.h"
#include "kern/spinlock.h"
#include "kern/string.h"
#include "kern/syscnt.h"
#include "kern/thread.h"

/*
 * The events the context-switch rows attach to each ping-pong thread:
 * none fires during the ping-pong (the threads are pinned, nothing sends
 * them NMIs or xcalls), so that the rows show what the hook costs, not
 * what counting an event costs (`context-switches` would fire at every
 * switch: another 164 instructions each, in the soft PMU).
 */
static const unsigned int
perfmon_bench_switch_events[PERFMON_BENCH_SWITCH_MAX_EVS] = {
    PERFMON_EV_TEST, PERFMON_EV_MIGRATION, PERFMON_EV_NMI, PERFMON_EV_XCALL,
};

/*
 * Row 4g: one event per thread, on two different counters, so that every
 * switch stops one counter and starts the other.  Neither event fires
 * during the ping-pong.
 */
static const unsigned int perfmon_bench_switch_split_events[2] = {
    PERFMON_EV_TEST, PERFMON_EV_NMI,
};

/*
 * Two threads pinned to one CPU yield to each other: the first measures
 * its yields, each of which is two switches, in TSC cycles, or with steps
 * (a CPU event of the step PMU on their CPU) in instructions, the reads'
 * own count taken off; its partner only yields, until told to stop.  The
 * first yields PERFMON_BENCH_PINGPONG_WARMUP times before it measures, so
 * that its partner, whenever it first ran, is in its loop all along the
 * window: what the partner runs there is then always the same, one turn
 * of its loop per yield (with code of its own before or after the loop in
 * the window, a count would move with which thread saw go first).
 */
#define PERFMON_BENCH_PINGPONG_WARMUP  2

/*
 * How often an instruction round is taken before the bench gives up on
 * it: a round another thread ran in counted that thread's instructions
 * too, one in which the CPU spun on a lock counted its spins, and a count
 * the bench judges must depend neither on when timers fire nor on what
 * other CPUs do.
 */
#define PERFMON_BENCH_SWITCH_TRIES      8

/*
 * A round's ping-pong, shared by its two threads; the measuring thread
 * writes the results, read once both are joined.
 */
struct perfmon_bench_pingpong {
    volatile bool go;               /* the measuring thread may start */
    volatile bool stop;             /* the partner may end its loop */
    uint64_t cost;
    unsigned int yields;
    struct perfmon_event *steps;
    const struct syscnt *switches;  /* the CPU's switches, or NULL */
    unsigned int cpu;               /* theirs */
    bool disturbed;                 /* another thread ran, or a lock spun */
};

/*
 * The step count is read in place, interrupts off: an interrupt's perfmon
 * section (the clock's multiplexing turn) under a read would make it read
 * again, and move the window's edge by the instructions read twice.
 */
static uint64_t
perfmon_bench_pingpong_now(const struct perfmon_bench_pingpong *pp)
{
    uint64_t value;

    if (pp->steps == NULL) {
        return cpu_rdtsc();
    }

    if (!perfmon_event_read_here(pp->steps, false, &value)) {
        value = perfmon_event_read(pp->steps);
    }

    return value;
}

static void
perfmon_bench_pingpong_yield(unsigned int n)
{
    for (unsigned int i = 0; i < n; i++) {
        thread_yield();
    }
}

static void
perfmon_bench_pingpong_main(void *arg)
{
    struct perfmon_bench_pingpong *pp = arg;
    uint64_t start, overhead, switches = 0;
    unsigned long spins = 0;

    while (!READ_ONCE(pp->go)) {
        thread_yield();
    }

    perfmon_bench_pingpong_yield(PERFMON_BENCH_PINGPONG_WARMUP);
    start = perfmon_bench_pingpong_now(pp);
    overhead = perfmon_bench_pingpong_now(pp) - start;

    if (pp->switches != NULL) {
        switches = syscnt_read(pp->switches);
        spins = spinlock_contended(pp->cpu);
    }

    start = perfmon_bench_pingpong_now(pp);
    perfmon_bench_pingpong_yield(pp->yields);
    pp->cost = perfmon_bench_pingpong_now(pp) - start - overhead;

    /*
     * Each yield is two switches, to the partner and back: any more, and
     * another thread (a timer's, a poll's) ran on the CPU and was counted
     * with them.  A lock the CPU found taken (a run queue lock another
     * CPU's balancer held) was spun for, as long as that CPU took.  Both
     * are read outside the measured window, and add nothing to its count.
     */
    if (pp->switches != NULL) {
        pp->disturbed = syscnt_read(pp->switches) - switches
                        != 2 * (uint64_t)pp->yields
                        || spinlock_contended(pp->cpu) != spins;
    }

    WRITE_ONCE(pp->stop, true);
}

static void
perfmon_bench_pingpong_partner(void *arg)
{
    struct perfmon_bench_pingpong *pp = arg;

    while (!READ_ONCE(pp->stop)) {
        thread_yield();
    }
}

static void
perfmon_bench_detach_all(struct perfmon_event *events, unsigned int n)
{
    for (unsigned int i = 0; i < n; i++) {
        if (perfmon_event_attached(&events[i])) {
            perfmon_event_detach(&events[i]);
        }
    }
}

static int
perfmon_bench_attach_switch_events(struct perfmon_event *events,
                                   const unsigned int *ids,
                                   unsigned int nr_events,
                                   struct thread *thread)
{
    for (unsigned int i = 0; i < nr_events; i++) {
        int error = perfmon_event_init(&events[i], ids[i], PERFMON_EF_KERN);

        if (!error) {
            error = perfmon_event_attach(&events[i], thread);
        }

        if (error) {
            perfmon_bench_detach_all(events, i);
            return error;
        }
    }

    return 0;
}

/*
 * One round: the cost of yields per ping-pong thread, that is 2 * yields
 * switches, with nr_events events on each thread (split: one event per
 * thread, a different one on each); steps: in instructions, and -EAGAIN
 * when another thread ran on the CPU meanwhile or it spun on a lock (those
 * instructions were counted too).
 */
static int
perfmon_bench_switch_round(struct perfmon_bench_run *run,
                           unsigned int nr_events, bool split,
                           unsigned int yields, struct perfmon_event *steps,
                           uint64_t *costp)
{
    struct perfmon_event events[2][PERFMON_BENCH_SWITCH_MAX_EVS];
    const struct syscnt *switches = perfmon_bench_switches(run->remote);
    struct perfmon_bench_pingpong pp;
    struct thread *threads[2];
    int error = 0;

    memset(events, 0, sizeof(events));
    memset(&pp, 0, sizeof(pp));
    pp.yields = yields;
    pp.steps = steps;
    pp.switches = (steps != NULL) ? switches : NULL;
    pp.cpu = run->remote;

    for (unsigned int i = 0; i < 2; i++) {
        error = thread_create(&threads[i], "bench-pingpong",
                              (i == 0) ? perfmon_bench_pingpong_main
                                       : perfmon_bench_pingpong_partner,
                              &pp, THREAD_CPUMASK(run->remote));

        if (error) {
            if (i == 1) {
                WRITE_ONCE(pp.go, true);
                thread_join(threads[0]);
            }

            return error;
        }
    }

    for (unsigned int i = 0; i < 2 && !error; i++) {
        error = perfmon_bench_attach_switch_events(
            events[i],
            split ? &perfmon_bench_switch_split_events[i]
                  : perfmon_bench_switch_events,
            nr_events, threads[i]);
    }

    WRITE_ONCE(pp.go, true);
    thread_join(threads[0]);
    thread_join(threads[1]);
    perfmon_bench_detach_all(events[0], nr_events);
    perfmon_bench_detach_all(events[1], nr_events);
    *costp = pp.cost;
    return (!error && pp.disturbed) ? -EAGAIN : error;
}

/* The configurations of row 4, measured in turn within each round. */
enum perfmon_bench_switch_config {
    PERFMON_BENCH_SWITCH_OFF,   /* perfmon hook off, no event */
    PERFMON_BENCH_SWITCH_NONE,  /* hook on, no event */
    PERFMON_BENCH_SWITCH_ONE,   /* 1 event per thread */
    PERFMON_BENCH_SWITCH_FOUR,  /* the most events per thread */
    PERFMON_BENCH_SWITCH_SPLIT, /* 1 event per thread, not shared */
    PERFMON_BENCH_SWITCH_NR_CONFIGS,
};

static int
perfmon_bench_switch_config_round(struct perfmon_bench_run *run,
                                  enum perfmon_bench_switch_config config,
                                  unsigned int yields,
                                  struct perfmon_event *steps, uint64_t *costp)
{
    static const unsigned int nr_events[PERFMON_BENCH_SWITCH_NR_CONFIGS] = {
        0, 0, 1, PERFMON_BENCH_SWITCH_MAX_EVS, 1,
    };
    bool hook = perfmon_switch_hook_enabled();
    int error;

    if (config != PERFMON_BENCH_SWITCH_OFF) {
        return perfmon_bench_switch_round(run, nr_events[config],
                                          config == PERFMON_BENCH_SWITCH_SPLIT,
                                          yields, steps, costp);
    }

    /* Refused while some thread has an event: its counts would be wrong. */
    error = perfmon_set_switch_hook(false);

    if (!error) {
        error =
            perfmon_bench_switch_round(run, 0, false, yields, steps, costp);
        perfmon_set_switch_hook(hook);
    }

    return error;
}

/*
 * Cycles per switch: every configuration once per round, in turn, so that
 * a slow phase of the host (QEMU's vCPU threads share its cores) weighs on
 * all of them alike.
 */
static int
perfmon_bench_switch_measure(struct perfmon_bench_run *run,
                  struct bench_result results[PERFMON_BENCH_SWITCH_NR_CONFIGS])
{
    uint64_t samples[PERFMON_BENCH_SWITCH_NR_CONFIGS]
                    [PERFMON_BENCH_SWITCH_ROUNDS];

    for (unsigned int i = 0; i < run->switch_rounds; i++) {
        for (unsigned int c = 0; c < PERFMON_BENCH_SWITCH_NR_CONFIGS; c++) {
            int error = perfmon_bench_switch_config_round(
                run, c, run->switch_yields, NULL, &samples[c][i]);

            if (error) {
                return error;
            }

            samples[c][i] /= 2 * run->switch_yields;
        }
    }

    for (unsigned int c = 0; c < PERFMON_BENCH_SWITCH_NR_CONFIGS; c++) {
        bench_summarize(samples[c], run->switch_rounds, &results[c]);
    }

    return 0;
}

/*
 * Instructions of PERFMON_BENCH_INSN_YIELDS yields each way (2 *
 * PERFMON_BENCH_INSN_YIELDS switches), the smallest of insn_rounds, per
 * configuration, counted by a CPU event of the step PMU on the ping-pong CPU:
 * everything it runs, both threads and both sides of every switch.
 */
static int
perfmon_bench_switch_count(struct perfmon_bench_run *run,
                uint64_t totals[PERFMON_BENCH_SWITCH_NR_CONFIGS])
{
    struct perfmon_event steps;
    int error;

    for (unsigned int c = 0; c < PERFMON_BENCH_SWITCH_NR_CONFIGS; c++) {
        totals[c] = PERFMON_BENCH_NONE;
    }

    if (run->step == NULL) {
        return 0;
    }

    error = perfmon_bench_step_init(run, &steps, false);

    if (!error) {
        error = perfmon_event_attach_cpu(&steps, run->remote);
    }

    for (unsigned int i = 0; i < run->insn_rounds && !error; i++) {
        for (unsigned int c = 0; c < PERFMON_BENCH_SWITCH_NR_CONFIGS && !error;
             c++) {
            uint64_t total;
            unsigned int tries = 0;

            /* A round another thread ran in is taken again. */
            do {
                error = perfmon_bench_switch_config_round(
                    run, c, PERFMON_BENCH_INSN_YIELDS, &steps, &total);
            } while (error == -EAGAIN
                     && ++tries < PERFMON_BENCH_SWITCH_TRIES);

            if (!error) {
                totals[c] = MIN(totals[c], total);
            }
        }
    }

    if (perfmon_event_attached(&steps)) {
        perfmon_event_detach(&steps);
    }

    return error;
}

/* Per switch, from a count over 2 * PERFMON_BENCH_INSN_YIELDS switches,
 * rounded. */
static uint64_t
perfmon_bench_per_switch(uint64_t total)
{
    if (total == PERFMON_BENCH_NONE) {
        return PERFMON_BENCH_NONE;
    }

    return (total + PERFMON_BENCH_INSN_YIELDS)
           / (2 * PERFMON_BENCH_INSN_YIELDS);
}

/* The counter work a switch cannot avoid: stop, read and start, per counter.
 */
static void
perfmon_bench_op_raw_switch(struct perfmon_bench_run *run, void *arg)
{
    const struct perfmon_bench_counter *counter = &run->soft;
    struct perfmon_dev *dev = counter->dev;

    (void)arg;
    dev->ops->stop(dev, counter->hw_id);
    dev->ops->read(dev, counter->hw_id);
    dev->ops->start(dev, counter->hw_id, counter->raw_event, PERFMON_EF_KERN);
}

/* An added-cost row: with minus none, per switch, in both views. */
static void
perfmon_bench_print_added(
    struct perfmon_bench_run *run, const char *id, const char *what,
    enum perfmon_bench_switch_config with,
    const struct bench_result cycles[PERFMON_BENCH_SWITCH_NR_CONFIGS],
    const uint64_t totals[PERFMON_BENCH_SWITCH_NR_CONFIGS],
    enum perfmon_bench_switch_config none, uint64_t budget,
    unsigned int nr_counters)
{
    struct bench_result added, unavoidable;
    const struct bench_result *raw = &run->raw_switch_ops;

    added.min = cycles[with].min > cycles[none].min
                ? cycles[with].min - cycles[none].min : 0;
    added.median = cycles[with].median > cycles[none].median
                   ? cycles[with].median - cycles[none].median : 0;
    unavoidable.min = raw->min * nr_counters;
    unavoidable.median = raw->median * nr_counters;
    perfmon_bench_print(run, id, what,
                        perfmon_bench_per_switch(
                            perfmon_bench_sub(totals[with], totals[none])),
                        budget, &added,
                        nr_counters != 0 ? &unavoidable : NULL);
}

int
perfmon_bench_rows_switch(struct perfmon_bench_run *run)
{
    static const char *const whats[PERFMON_BENCH_SWITCH_NR_CONFIGS] = {
        "context switch, perfmon hook off",
        "context switch, no event anywhere",
        "context switch, 1 event per thread",
        "context switch, 4 events per thread",
        "context switch, 1 event each, not shared",
    };
    static const char *const ids[PERFMON_BENCH_SWITCH_NR_CONFIGS] = {
        "4a", "4b", "4c", "4d", "4s",
    };
    struct bench_result r[PERFMON_BENCH_SWITCH_NR_CONFIGS];
    uint64_t totals[PERFMON_BENCH_SWITCH_NR_CONFIGS], budget;
    int error;

    perfmon_bench_measure(run, perfmon_bench_op_raw_switch, NULL,
                          PERFMON_BENCH_BATCH, true, &run->raw_switch_ops);
    run->insns_raw_switch_ops = perfmon_bench_insns(
        run, perfmon_bench_op_raw_switch, NULL, true, false);
    perfmon_bench_print(run, "4r", "raw stop+read+start, one counter",
                        run->insns_raw_switch_ops, PERFMON_BENCH_NONE,
                        &run->raw_switch_ops, NULL);
    error = perfmon_bench_switch_measure(run, r);

    if (!error) {
        error = perfmon_bench_switch_count(run, totals);
    }

    if (error) {
        return error;
    }

    for (unsigned int c = 0; c < PERFMON_BENCH_SWITCH_NR_CONFIGS; c++) {
        perfmon_bench_print(
            run, ids[c], whats[c], perfmon_bench_per_switch(totals[c]),
            PERFMON_BENCH_NONE, &r[c],
            c == PERFMON_BENCH_SWITCH_NONE ? &r[PERFMON_BENCH_SWITCH_OFF]
                                           : NULL);
    }

    perfmon_bench_print_added(
        run, "4h", "added by the hook, no event anywhere",
        PERFMON_BENCH_SWITCH_NONE, r, totals, PERFMON_BENCH_SWITCH_OFF,
        perfmon_bench_budget(PERFMON_BENCH_BUDGET_HOOK), 0);
    budget = perfmon_bench_budget(PERFMON_BENCH_BUDGET_SWITCH_1);
    perfmon_bench_print_added(run, "4e", "added per switch, 1 event",
                              PERFMON_BENCH_SWITCH_ONE, r, totals,
                              PERFMON_BENCH_SWITCH_NONE, budget, 1);
    budget = perfmon_bench_budget(PERFMON_BENCH_BUDGET_SWITCH_4);
    perfmon_bench_print_added(run, "4f", "added per switch, 4 events",
                              PERFMON_BENCH_SWITCH_FOUR, r, totals,
                              PERFMON_BENCH_SWITCH_NONE, budget,
                              PERFMON_BENCH_SWITCH_MAX_EVS);
    budget = perfmon_bench_budget(PERFMON_BENCH_BUDGET_SWITCH_SPLIT);
    perfmon_bench_print_added(run, "4g",
                              "added per switch, 1 event, not shared",
                              PERFMON_BENCH_SWITCH_SPLIT, r, totals,
                              PERFMON_BENCH_SWITCH_NONE, budget, 1);
    return 0;
}

