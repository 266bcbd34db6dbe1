/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon bench`, row 6: the software PMU's overflow interrupt (an NMI)
 * and the samples it writes.  An add that completes a period of the
 * `test` event makes the soft PMU raise its self-NMI and wait for the
 * core to fold the wrap: the add's time is the NMI's round trip, and its
 * instructions, counted with the handlers stepped, include the NMI's.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/unwind.h"
#include "kern/bench.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/console.h"
#include "kern/perfmon/cmd/perfmon_bench_i.h"
#include "kern/printf.h"
#include "kern/swevent.h"
#include "kern/symtab.h"
#include "kern/thread.h"

/*
 * An add of a whole period to the `test` event, which wraps its counter
 * exactly once; with overflow NMIs the software PMU raises its self-NMI
 * and waits for the core to fold the wrap, so the add's time is the NMI's
 * round trip (send, entry, fold, callbacks, return) seen by the code that
 * caused it.
 */
static void
perfmon_bench_op_add(struct perfmon_bench_run *run, void *arg)
{
    const uint64_t *amount = arg;

    (void)run;
    swevent_add(SWEVENT_TEST, *amount);
}

/*
 * The soft PMU's overflow interrupt when it is not the device's (nothing
 * wrapped): the core's entry and the device's status query.  Interrupts
 * disabled, as in the interrupt.
 */
static void
perfmon_bench_op_overflow_none(struct perfmon_bench_run *run, void *arg)
{
    (void)arg;
    perfmon_overflow_intr(run->soft.dev, NULL);
}

static void
perfmon_bench_rows_overflow(struct perfmon_bench_run *run, uint64_t period)
{
    struct bench_result plain, wrap;
    uint64_t one = 1, insns, device;

    perfmon_bench_measure(run, perfmon_bench_op_add, &one, 1, false, &plain);
    insns = perfmon_bench_insns(run, perfmon_bench_op_add, &one, false, false);
    perfmon_bench_print(run, "6a", "add to the test event, no wrap", insns,
                        PERFMON_BENCH_NONE, &plain, NULL);
    perfmon_bench_measure(run, perfmon_bench_op_add, &period, 1, false, &wrap);
    insns =
        perfmon_bench_insns(run, perfmon_bench_op_add, &period, false, true);
    perfmon_bench_print(run, "6", "add that wraps: soft PMU NMI round trip",
                        insns, PERFMON_BENCH_NONE, &wrap, &plain);
    run->insns_overflow =
        perfmon_bench_insns_handlers(run, perfmon_bench_op_add, &period);
    perfmon_bench_print(run, "6n", "  of which the overflow NMI, one counter",
                        run->insns_overflow, PERFMON_BENCH_NONE, NULL, NULL);
    device = perfmon_bench_insns(run, perfmon_bench_op_overflow_none, NULL,
                                 true, false);
    perfmon_bench_print(run, "6d", "  device's handler: NMI not its own",
                        device, PERFMON_BENCH_NONE, NULL, NULL);
    perfmon_bench_print(
        run, "6f", "  fold of one counter, beyond 6d",
        perfmon_bench_sub(run->insns_overflow, device),
        perfmon_bench_budget(PERFMON_BENCH_BUDGET_FOLD), NULL, NULL);
}

/* Events added depth calls deep: frames for the call chain to walk. */
struct perfmon_bench_deep {
    unsigned int depth;
    uint64_t amount;
};

static void __attribute__((noinline))
perfmon_bench_add_deep(unsigned int depth, uint64_t amount)
{
    if (depth == 0) {
        swevent_add(SWEVENT_TEST, amount);
    } else {
        perfmon_bench_add_deep(depth - 1, amount);
    }

    barrier();      /* not a tail call: the frame stays */
}

static void
perfmon_bench_op_add_deep(struct perfmon_bench_run *run, void *arg)
{
    const struct perfmon_bench_deep *deep = arg;

    (void)run;
    perfmon_bench_add_deep(deep->depth, deep->amount);
}

/*
 * Instructions of the overflow NMI of a sampling `test` event of this
 * thread with fields, for an add that completes its period from depth
 * calls deep.  PERFMON_BENCH_NONE when the event cannot sample.
 */
static uint64_t
perfmon_bench_sample_nmi(struct perfmon_bench_run *run, unsigned int fields,
              unsigned int depth)
{
    struct perfmon_sampling sampling = { .period = PERFMON_BENCH_SAMPLE_PERIOD,
                                         .fields = fields };
    struct perfmon_bench_deep deep = { depth, PERFMON_BENCH_SAMPLE_PERIOD };
    struct perfmon_event event;
    uint64_t insns = PERFMON_BENCH_NONE;
    int error;

    error = perfmon_sbuf_create(&sampling.sbuf, PERFMON_BENCH_SBUF_SIZE);

    if (error) {
        return PERFMON_BENCH_NONE;
    }

    error = perfmon_event_init(&event, PERFMON_EV_TEST, PERFMON_EF_KERN);

    if (!error) {
        error = perfmon_event_set_sampling(&event, &sampling);
    }

    if (!error) {
        error = perfmon_event_attach(&event, thread_self());
    }

    if (!error) {
        insns = perfmon_bench_insns_handlers(run, perfmon_bench_op_add_deep,
                                             &deep);
        perfmon_event_detach(&event);
    }

    perfmon_sbuf_destroy(sampling.sbuf);
    return insns;
}

/*
 * A call chain walked from depth calls deep, as the overflow interrupt
 * walks it into a sample (the frames go straight into the record there,
 * raw: the reader checks them, arch/x86/unwind.h): the per-frame row.
 * The interrupt itself cannot be used for it here: the step PMU steps
 * the thread, the single-step trap is taken before the pending NMI
 * (Intel SDM vol. 3A, 6.9, priorities), and the NMI lands on the #DB
 * handler's first instruction, where no caller can be proven: its chain
 * is that address alone, at any depth.
 */
struct perfmon_bench_walk {
    unsigned int depth;
    bool walk;                          /* false: the calls alone */
    unsigned int nr_ips;
    uint64_t ips[PERFMON_MAX_CALLCHAIN];
};

static void __attribute__((noinline))
perfmon_bench_walk_here(struct perfmon_bench_walk *walk)
{
    struct unwind_stack stack;
    struct unwind_env env = {
        .stacks = &stack,
        .nr_stacks = 1,
    };

    walk->nr_ips = 0;

    if (walk->walk
        && thread_stack_bounds(thread_self(), &stack.lo, &stack.hi)) {
        symtab_unwind_env(&env);
        walk->nr_ips = unwind_fp_raw(
            &env, (uint64_t)(uintptr_t)__builtin_frame_address(0), walk->ips,
            PERFMON_MAX_CALLCHAIN);
    }
}

static void __attribute__((noinline))
perfmon_bench_walk_deep(struct perfmon_bench_walk *walk, unsigned int depth)
{
    if (depth == 0) {
        perfmon_bench_walk_here(walk);
    } else {
        perfmon_bench_walk_deep(walk, depth - 1);
    }

    barrier();      /* not a tail call: the frame stays */
}

static void
perfmon_bench_op_walk(struct perfmon_bench_run *run, void *arg)
{
    struct perfmon_bench_walk *walk = arg;

    (void)run;
    perfmon_bench_walk_deep(walk, walk->depth);
}

/*
 * The instructions of each frame of a call chain: walks from
 * PERFMON_BENCH_CHAIN_LONG and PERFMON_BENCH_CHAIN_SHORT calls deep,
 * which must differ by as many frames, less the calls that made the
 * frames (the same depths, not walked).
 */
static uint64_t
perfmon_bench_frame_insns(struct perfmon_bench_run *run)
{
    static struct perfmon_bench_walk walks[2][2];
    uint64_t insns[2][2];

    for (unsigned int w = 0; w < 2; w++) {
        for (unsigned int d = 0; d < 2; d++) {
            walks[w][d].walk = (w != 0);
            walks[w][d].depth = (d != 0) ? PERFMON_BENCH_CHAIN_LONG
                                         : PERFMON_BENCH_CHAIN_SHORT;
            insns[w][d] = perfmon_bench_insns(run, perfmon_bench_op_walk,
                                              &walks[w][d], true, false);

            if (insns[w][d] == PERFMON_BENCH_NONE) {
                return PERFMON_BENCH_NONE;
            }
        }
    }

    if (walks[1][1].nr_ips - walks[1][0].nr_ips
        != PERFMON_BENCH_CHAIN_LONG - PERFMON_BENCH_CHAIN_SHORT) {
        return PERFMON_BENCH_NONE;
    }

    return perfmon_bench_sub(perfmon_bench_sub(insns[1][1], insns[1][0]),
                             perfmon_bench_sub(insns[0][1], insns[0][0]))
           / (PERFMON_BENCH_CHAIN_LONG - PERFMON_BENCH_CHAIN_SHORT);
}

static void
perfmon_bench_rows_sample(struct perfmon_bench_run *run)
{
    uint64_t sample;

    sample = perfmon_bench_sample_nmi(run, PERFMON_BENCH_SAMPLE_FIELDS, 0);
    perfmon_bench_print(run, "6s", "sample written, no call chain (beyond 6n)",
                        perfmon_bench_sub(sample, run->insns_overflow),
                        perfmon_bench_budget(PERFMON_BENCH_BUDGET_SAMPLE),
                        NULL, NULL);
    perfmon_bench_print(run, "6g", "each call-chain frame of a sample",
                        perfmon_bench_frame_insns(run),
                        perfmon_bench_budget(PERFMON_BENCH_BUDGET_FRAME),
                        NULL, NULL);
}

int
perfmon_bench_rows_intr(struct perfmon_bench_run *run)
{
    struct perfmon_dev_info info;

    perfmon_dev_get_info(run->soft.dev, &info);

    if (!info.overflow_intr) {
        kprintf("%-4s %-44s (boot with softpmu.overflow=nmi)\n", "6",
                "soft PMU overflow NMI round trip");
        return 0;
    }

    perfmon_bench_rows_overflow(run, (info.width >= 64) ? UINT64_MAX
                                              : 1ULL << info.width);
    perfmon_bench_rows_sample(run);

    return 0;
}

