/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Private to `perfmon bench`: what its files share.
 * kern/perfmon/cmd/perfmon_bench.c has the measurements (cycles,
 * instructions), the printing, the rows of reads, of attach and detach, and
 * the driver; kern/perfmon/cmd/perfmon_bench_switch.c the context-switch rows
 * (4); kern/perfmon/cmd/perfmon_bench_intr.c the rows of the overflow
 * interrupt and of samples (6); kern/perfmon/cmd/perfmon_bench_turn.c the
 * multiplexing turn (8).  PERFMON_BENCH_ names are the benchmark's.
 */

#ifndef KERN_PERFMON_BENCH_I_H
#define KERN_PERFMON_BENCH_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/bench.h"
#include "kern/perfmon.h"

struct syscnt;

#define PERFMON_BENCH_SAMPLES_DEFAULT   2000
#define PERFMON_BENCH_SAMPLES_QUICK     50
#define PERFMON_BENCH_SAMPLES_MAX       100000
#define PERFMON_BENCH_BATCH             16
#define PERFMON_BENCH_SWITCH_YIELDS     2000
#define PERFMON_BENCH_SWITCH_ROUNDS     11
#define PERFMON_BENCH_QUICK_YIELDS      100
#define PERFMON_BENCH_QUICK_ROUNDS      3
#define PERFMON_BENCH_SWITCH_MAX_EVS    4

/*
 * Instruction counts: the smallest of PERFMON_BENCH_INSN_TRIES, and the
 * ping-pong.
 */
#define PERFMON_BENCH_INSN_TRIES        5
#define PERFMON_BENCH_INSN_YIELDS       20
#define PERFMON_BENCH_INSN_ROUNDS       3
#define PERFMON_BENCH_INSN_PAUSE_MS     10  /* between tries that step NMIs */
#define PERFMON_BENCH_QUICK_INSN_TRIES  3
#define PERFMON_BENCH_INSN_RETAKES      3   /* of all tries, disturbed */
#define PERFMON_BENCH_QUICK_INSN_ROUNDS 2

/*
 * The sampling rows: a `test` event sampling every PERFMON_BENCH_SAMPLE_PERIOD
 * events with `perfmon record`'s fields, into a buffer of
 * PERFMON_BENCH_SBUF_SIZE bytes per CPU; the call-chain row adds events from
 * PERFMON_BENCH_CHAIN_SHORT and from PERFMON_BENCH_CHAIN_LONG more calls deep.
 */
#define PERFMON_BENCH_SAMPLE_PERIOD     1000
#define PERFMON_BENCH_SAMPLE_FIELDS     (PERFMON_SF_IP | PERFMON_SF_TID \
                                         | PERFMON_SF_TIME | PERFMON_SF_CPU \
                                         | PERFMON_SF_PERIOD)
#define PERFMON_BENCH_SBUF_SIZE         65536
#define PERFMON_BENCH_CHAIN_SHORT       2
#define PERFMON_BENCH_CHAIN_LONG        18

/* Not measured, or no budget. */
#define PERFMON_BENCH_NONE              UINT64_MAX

/*
 * Instruction budgets, in perfmon_bench_budgets[]
 * (kern/perfmon/cmd/perfmon_bench.c): the whole row's count, the target
 * the path was designed to.
 */
enum {
    PERFMON_BENCH_BUDGET_READ_CPU,     /* 2a: a local CPU-event read */
    PERFMON_BENCH_BUDGET_READ_THREAD,  /* 2b: an own-thread event read */
    PERFMON_BENCH_BUDGET_HOOK,         /* 4h: the hook, no event */
    PERFMON_BENCH_BUDGET_SWITCH_1,     /* 4e: added, 1 shared event */
    PERFMON_BENCH_BUDGET_SWITCH_4,     /* 4f: added, 4 shared events */
    PERFMON_BENCH_BUDGET_SWITCH_SPLIT, /* 4g: added, 1 unshared each side */
    PERFMON_BENCH_BUDGET_FOLD,         /* 6f: the NMI's fold, beyond 6d */
    PERFMON_BENCH_BUDGET_SAMPLE,       /* 6s: a sample, no call chain */
    PERFMON_BENCH_BUDGET_FRAME,        /* 6g: a call-chain frame */
    PERFMON_BENCH_BUDGET_TURN,         /* 8: a multiplexing turn */
    PERFMON_BENCH_BUDGET_REGION_OFF,   /* 2m: region markers, idle */
    PERFMON_BENCH_BUDGET_REGION_ARMED, /* 2n: region markers, 1 event armed */
    PERFMON_BENCH_NR_BUDGETS,
};

/* A counter read raw: the one behind an event of the benchmark's own. */
struct perfmon_bench_counter {
    struct perfmon_dev *dev;
    uint64_t raw_event;
    unsigned int hw_id;
    bool found;
};

/*
 * State of one run.  The insns_ fields are the instruction counts other
 * rows' budgets are made of (PERFMON_BENCH_NONE: not counted).
 */
struct perfmon_bench_run {
    unsigned int self;              /* the CPU the benchmark runs on */
    unsigned int remote;            /* another CPU, or self with one CPU */
    size_t nr_samples;
    uint64_t *samples;
    unsigned int switch_yields;     /* per ping-pong thread and round */
    unsigned int switch_rounds;
    unsigned int insn_tries;
    unsigned int insn_rounds;       /* ping-pong rounds, counting */
    struct perfmon_bench_counter soft;  /* the counter of cpu_event */
    struct perfmon_dev *step;       /* the step PMU, or NULL */
    struct perfmon_event cpu_event;     /* `test` on self */
    struct perfmon_event self_event;    /* `test` on this thread */
    struct bench_result raw_read;
    struct bench_result xcall;
    struct bench_result raw_switch_ops; /* stop + read + start, one counter */
    uint64_t insns_raw_read;
    uint64_t insns_raw_switch_ops;
    uint64_t insns_overflow;        /* row 6n, for the sampling rows */
    unsigned int nr_met;            /* budgets */
    unsigned int nr_missed;
};

typedef void (*perfmon_bench_op_fn_t)(struct perfmon_bench_run *run,
                                      void *arg);

/*
 * Print a row: its instruction count and budget (PERFMON_BENCH_NONE: none),
 * its cycles (NULL: not timed) and the row they are compared with (NULL:
 * none).  A row with a budget is counted as met or missed.
 */
void perfmon_bench_print(struct perfmon_bench_run *run, const char *id,
                         const char *what, uint64_t insns, uint64_t budget,
                         const struct bench_result *cycles,
                         const struct bench_result *base);

/* The budget of a row (PERFMON_BENCH_BUDGET_*). */
uint64_t perfmon_bench_budget(unsigned int budget);

/* The context switches of cpu, a system counter of the scheduler's. */
const struct syscnt *perfmon_bench_switches(unsigned int cpu);

/* a - b, PERFMON_BENCH_NONE when either is. */
uint64_t perfmon_bench_sub(uint64_t a, uint64_t b);

/*
 * Cycles of fn(run, arg), batch calls per sample, run->nr_samples
 * samples; intr_off: with interrupts disabled.
 */
void perfmon_bench_measure(struct perfmon_bench_run *run,
                           perfmon_bench_op_fn_t fn, void *arg,
                           unsigned int batch, bool intr_off,
                           struct bench_result *result);

/*
 * Initialise an event of the step PMU: instructions, or with nmis
 * instructions-nmi, which steps NMI handlers too.
 */
int perfmon_bench_step_init(const struct perfmon_bench_run *run,
                            struct perfmon_event *event, bool nmis);

/*
 * The instructions of one call of fn beyond an empty call, counted on the
 * calling thread (nmis: with the NMI handlers that run meanwhile);
 * intr_off: called with interrupts disabled, as device operations are.
 * The smallest of insn_tries tries; all are taken again (up to
 * PERFMON_BENCH_INSN_RETAKES times) when, not stepping NMIs, this CPU
 * switched (another thread ran, or preempted this one) or spun on a lock
 * meanwhile: such instructions depend on when timers fired and on what
 * other CPUs did.  PERFMON_BENCH_NONE without the step PMU.
 * perfmon_bench_insns_handlers(): of
 * those, the ones of the NMI handlers fn caused.
 */
uint64_t perfmon_bench_insns(struct perfmon_bench_run *run,
                             perfmon_bench_op_fn_t fn, void *arg,
                             bool intr_off, bool nmis);
uint64_t perfmon_bench_insns_handlers(struct perfmon_bench_run *run,
                                      perfmon_bench_op_fn_t fn, void *arg);

/*
 * The instructions of one call of fn as steps (a step event attached to
 * the calling thread) counts them, the empty call's not taken off; the
 * empty call itself, perfmon_bench_op_nop(), for the caller to take off.
 */
uint64_t perfmon_bench_insns_once(struct perfmon_bench_run *run,
                                  struct perfmon_event *steps,
                                  perfmon_bench_op_fn_t fn, void *arg,
                                  bool intr_off);
void perfmon_bench_op_nop(struct perfmon_bench_run *run, void *arg);

/* The rows of kern/perfmon/cmd/perfmon_bench_switch.c and
 * kern/perfmon/cmd/perfmon_bench_intr.c. */
int perfmon_bench_rows_switch(struct perfmon_bench_run *run);
int perfmon_bench_rows_intr(struct perfmon_bench_run *run);

/* Row 8: kern/perfmon/cmd/perfmon_bench_turn.c. */
int perfmon_bench_row_rotation(struct perfmon_bench_run *run);

/* Rows 2m, 2n: kern/perfmon/cmd/perfmon_bench_region.c. */
int perfmon_bench_rows_region(struct perfmon_bench_run *run);

#endif /* KERN_PERFMON_BENCH_I_H */
