/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The per-CPU counter record (perfmon_cpu.c): private to the core, for
 * the files above it (see perfmon_i.h for the order).
 */

#ifndef KERN_PERFMON_CPU_H
#define KERN_PERFMON_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/msr.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/syscnt.h"

/*
 * A counter slot on one CPU.  nr_refs counts the enabled CPU events and
 * loaded threads needing the counter to run here; dev and mask (its
 * width's) are the slot's, set on every CPU when the slot is allocated
 * (perfmon_cpu_slot_setup: a slot's device is its index's, a device's
 * width the one it registered with), for the reads, which use nothing
 * else of the slot's device, and with how to read the
 * counter (read_how and read_arg, the device's read_method at start; a
 * slot holding no counter here reads its own prev, perfmon_cpu_init) and
 * the most a read may find the counter past prev without folding
 * (peek_max).  The fields a read uses come first, in one cache line, with
 * the offset of the slot's value in a struct perfmon_td (td_offset, fixed
 * at init), so that the context switch finds both of a slot's records
 * without a multiply.  value grows by the difference between raw reads,
 * taken modulo 2^width.  wrap_seen: a plain
 * update saw the raw value go backwards, so the overflow interrupt of that
 * wrap must not add a period again.  enabled and running count from 0
 * when the slot last became active here (its first user came): they grow
 * with the TSC (perfmon_cpu_pmc_clock) while it has users here and while
 * it holds a hardware counter here (its bit in sched_mask).  They are what
 * a multiplexing turn compares (perfmon_turn_share, by the CPU's
 * turn_enabled and turn_running), and a CPU event takes them as a base at
 * its enable and differences after: nothing reads them once the last user
 * left, so nothing clocks them then.  raw_event and flags: the slot's,
 * for the device's transfer to the slot, which then needs no other
 * record.
 *
 * A sampling slot also keeps, while it runs here: the period, the events
 * still to count to the next sample from armed_value (the value when the
 * counter was last armed: it overflows after min(left, what the device can
 * arm) events; while the slot waits for a counter, left alone says it:
 * perfmon_cpu_pmc_stop charged what it had counted), the value and TSC at
 * the last sample (frequency mode),
 * the floor throttling put under the period, and the period of the sample
 * due in the current interrupt.
 */
struct perfmon_cpu_pmc {
    uint64_t prev;
    uint64_t value;
    uint64_t mask;
    uint64_t peek_max;                  /* mask >> PERFMON_PEEK_SHIFT */
    unsigned int read_how;              /* PERFMON_READ_*, from start */
    unsigned int hw_id;
    uintptr_t read_arg;
    struct perfmon_dev *dev;
    unsigned int nr_refs;
    bool wrap_seen;
    bool freq;                          /* sampling in frequency mode */
    uint16_t td_offset;                 /* of the slot's value in a thread */
    uint64_t stamp;                     /* TSC the times are counted to */
    uint64_t enabled;                   /* TSC cycles with nr_refs > 0 */
    uint64_t running;                   /* and holding a counter */
    uint64_t raw_event;                 /* the slot's, for a transfer */
    unsigned int flags;

    uint64_t period;
    int64_t left;
    uint64_t armed_value;
    uint64_t sample_value;
    uint64_t sample_tsc;
    uint64_t min_period;
    uint64_t due_period;
};

/* Local reads fold past 1/16 of a period (perfmon_cpu_pmc_peek). */
#define PERFMON_PEEK_SHIFT          4

/*
 * A device's counters on one CPU, for the scheduler (kern/perfmon/perfmon_sched.c):
 * hw_used, the hardware counters started here (pinned and flexible
 * slots); waiting, the active flexible slots that have none (they take
 * turns); slot_of_hw, which slot holds each hardware counter, for the
 * overflow interrupt (set before the slot is marked running, cleared
 * after it stops being: a stale entry is filtered by sched_mask).
 * turn_order: the units of the last turn by share (their representative
 * slots, nr_turn_order of them), where the next turn's sort starts: any
 * order sorts right, this one takes the fewest steps.  turn_memo_*: the
 * last simple turn's slots, the counters they fit on and how many more
 * the slots are (a cache, checked against both masks).  Aligned on a
 * cache line, which makes it two of them: the interrupt finds its
 * device's map by a shift, not a multiply.
 */
struct perfmon_cpu_dev {
    uint64_t hw_used;
    uint64_t waiting;
    uint8_t slot_of_hw[64];             /* slot + 1 holding it, 0: none */
    uint8_t turn_order[PERFMON_DEV_MAX_PMCS];
    unsigned int nr_turn_order;
    int turn_memo_over;
    uint64_t turn_memo_slots;
    uint64_t turn_memo_fit;
} __aligned(CACHE_LINE_SIZE);

_Static_assert((sizeof(struct perfmon_cpu_dev)
                & (sizeof(struct perfmon_cpu_dev) - 1)) == 0,
               "a device's state is indexed by a shift");

_Static_assert(PERFMON_MAX_PMCS < UINT8_MAX, "slot_of_hw holds slot + 1");
_Static_assert(sizeof(struct perfmon_td) <= UINT16_MAX,
               "td_offset holds an offset in a thread's state");

/*
 * Overflow interrupts nest at most this deep on one CPU: an NMI landing in
 * a soft or step PMU's deadline call, which is no NMI.
 */
#define PERFMON_INTR_MAX_DEPTH      2

/*
 * Per-CPU PMU state, changed by its own CPU only, with interrupts disabled
 * (xcalls, thread_call, the context switch hook, the overflow interrupt).
 * active_mask (slots with nr_refs > 0) is also read by the poll timer on
 * other CPUs, as a hint.  sched_mask: the active slots that hold a
 * hardware counter here, the ones folded, polled and interrupted.
 * grouped: at least the active slots of the groups with more than one
 * slot active here (a turn without them needs no order; set as a group's
 * second slot becomes active, brought up to date by the turn).
 *
 * gen grows by one in every section that may change the state (see
 * perfmon_cpu_enter and the overflow interrupt).  It lets thread context
 * on the same CPU read the state without disabling interrupts: such a
 * section, when it interrupts the reader, completes before the reader
 * resumes, so an unchanged gen across the reads means nothing changed
 * under them (see perfmon_event_read_local).  The context switch's
 * section leaves gen alone but when it loads or unloads slots other than
 * by passing a counter on (perfmon_td.c).
 *
 * pass_memo: the passes of a counter in place the context switch found
 * allowed last (perfmon_td_switch_change), each its slot out, its slot
 * in and the counter (perfmon_td_pass_key), with pass_memo_gen, gen plus
 * perfmon_cpu_slot_gen then: while neither moved, only passes and
 * switches that keep every slot changed the state here, and what allowed
 * the pass still holds (perfmon_td.c says why).
 *
 * turn_enabled, turn_running: an active slot's times, clocked to any now,
 * are turn_enabled[slot] + now and turn_running[slot] (+ now while it
 * holds a counter): its record's less its stamp, which a clock keeps, so
 * they are set again (perfmon_cpu_pmc_turn_sync) only where the times are
 * set otherwise or its bit in sched_mask changes.  turn_counters: its
 * counters when flexible, 0 when pinned.  Arrays, read by a turn's pass
 * by slot (no record).  turn_zero_at: the latest time a slot's times
 * started from 0 here (an activation, a pass): at any later now, every
 * active slot has enabled time.
 */
struct perfmon_cpu {
    bool busy;
    unsigned long gen;
    uint64_t pending;                   /* slots, set by the NMI while busy */
    uint64_t active_mask;
    uint64_t sched_mask;
    uint64_t now;                       /* TSC at the section's start */
    struct perfmon_td *td;              /* the thread loaded here, or NULL */
    unsigned long intr_depth;           /* overflow interrupts running */
    bool in_intr;                       /* the interrupt's own fold runs */
    uint64_t due;                       /* slots with a sample due in it */
    uint64_t window_end;                /* clock_cpu_ticks(), window's end */
    const uint64_t *ticks;              /* clock_cpu_ticks_word(), set up */
    uint64_t window_cycles;             /* spent sampling in the window */
    struct syscnt nr_overflows;
    struct syscnt nr_intrs;
    struct syscnt nr_polls;
    struct syscnt nr_unsampled;
    struct syscnt nr_throttles;
    struct syscnt nr_rotations;
    unsigned int mux_ticks;             /* clock ticks since a rotation */
    uint64_t grouped;
    uint64_t pass_memo[2];
    unsigned long pass_memo_gen[2];
    struct perfmon_cpu_dev devs[PERFMON_MAX_DEVS];
    struct perfmon_cpu_pmc pmcs[PERFMON_MAX_PMCS];
    uint64_t turn_enabled[PERFMON_MAX_PMCS];
    uint64_t turn_running[PERFMON_MAX_PMCS];
    uint64_t turn_counters[PERFMON_MAX_PMCS];
    uint64_t turn_zero_at;
} __aligned(CACHE_LINE_SIZE);

extern struct perfmon_cpu perfmon_cpus[CPU_MAX];

/*
 * Grows by one at every slot allocation (perfmon_cpu_slot_setup), under
 * the allocator's lock: a slot's fixed part may have changed.  Read
 * without it by the context switch (pass_memo_gen).
 */
extern unsigned long perfmon_cpu_slot_gen;

static inline struct perfmon_cpu *
perfmon_cpu_get(unsigned int cpu)
{
    assert(cpu < CPU_MAX);
    return &perfmon_cpus[cpu];
}

/*
 * The calling CPU's state, in one load through its struct cpu (set by
 * perfmon_cpu_init, from perfmon_setup: after smp_setup, through
 * timer_setup, as it must be, smp_setup clearing each AP's struct cpu
 * when it starts it): no multiply.  Preemption or interrupts disabled.
 */
static inline __attribute__((always_inline)) struct perfmon_cpu *
perfmon_cpu_self(void)
{
#ifdef TALLY_HOST_TEST
    return cpu_self()->perfmon;
#else
    return cpu_local_read_ptr(perfmon);
#endif
}

/*
 * The record of slot on cpu, in two instructions: a multiply and an add,
 * where the compiler takes three for a size that is no power of two, and
 * the array's offset goes into each access's displacement.  For the
 * context switch's loops, which find a record per slot.
 */
static inline __attribute__((always_inline)) struct perfmon_cpu_pmc *
perfmon_cpu_pmc_of(struct perfmon_cpu *cpu, uint64_t slot)
{
    char *base;

    __asm__("imulq %2, %1, %0\n\taddq %3, %0"
            : "=&r"(base)
            : "rm"(slot), "i"(sizeof(struct perfmon_cpu_pmc)), "r"(cpu));
    return (struct perfmon_cpu_pmc *)(base + offsetof(struct perfmon_cpu,
                                                      pmcs));
}

/*
 * The raw value of the counter a slot holds on this CPU, in *rawp, by the
 * method the device gave at start, when that calls nothing; false for
 * PERFMON_READ_OP.
 */
static inline __attribute__((always_inline)) bool
perfmon_cpu_pmc_raw_direct(const struct perfmon_cpu_pmc *pmc, uint64_t *rawp)
{
    if (likely(pmc->read_how == PERFMON_READ_MEM)) {
        *rawp = *(const volatile uint64_t *)pmc->read_arg;
        return true;
    }

    /*
     * Loaded again, not kept from the first test: that one then compares
     * in memory, one instruction less on the common path.
     */
    if (READ_ONCE(pmc->read_how) == PERFMON_READ_RDPMC) {
        *rawp = msr_rdpmc((uint32_t)pmc->read_arg);
        return true;
    }

    return false;
}

/* The same, whatever the method: no call but for PERFMON_READ_OP. */
static inline __attribute__((always_inline)) uint64_t
perfmon_cpu_pmc_raw(const struct perfmon_cpu_pmc *pmc)
{
    uint64_t raw;

    if (perfmon_cpu_pmc_raw_direct(pmc, &raw)) {
        return raw;
    }

    return pmc->dev->ops->read(pmc->dev, pmc->hw_id);
}

/*
 * perfmon_cpu_enter/leave: a section on the local CPU's state (interrupts
 *   disabled; cpu->now set).  The leave (inline, below) folds what an NMI
 *   left pending, out of line: perfmon_cpu_leave_pending, busy clear.
 * perfmon_cpu_fold: fold slots (those holding a counter here); ovf: the
 *   overflow interrupt says they wrapped.  perfmon_cpu_fold_intr: the
 *   same with ovf, for the interrupt's own fold (cpu->in_intr), inline
 *   for sampling and counting slots read without a call;
 *   perfmon_cpu_fold_intr_sampling (inline, below): that of one
 *   sampling slot known to run here, in a section entered with nothing
 *   pending.
 * perfmon_cpu_pmc_start: give slot the hardware counter hw_id here and
 *   start it; perfmon_cpu_pmc_stop: fold (unless folded: the counts were
 *   just taken at now), stop and take it back.
 * perfmon_cpu_pmc_transfer: pass the counter slot out holds here (a
 *   counting slot, folded at the hand-over) on to slot in (counting, not
 *   running here), reprogrammed in place by the device's transfer; the
 *   count goes on.
 * perfmon_cpu_pmc_update: fold the counter slot holds here into its
 *   64-bit value (ovf: the device's interrupt says it wrapped); the
 *   inline perfmon_cpu_pmc_fold() below takes the common case itself.
 * perfmon_cpu_pmc_sample_init: a sampling slot becomes active here, with
 *   a thread's saved progress or afresh; perfmon_cpu_pmc_sample_save: a
 *   thread's sampling slot stops here, its progress kept in tpmc.
 * perfmon_cpu_poll_xcall: fold dev's counters on the calling CPU (the
 *   poll timer's xcall); perfmon_cpu_active_slots: the slots holding a
 *   counter on cpu (a hint, any context).
 * perfmon_cpu_init: cpu's records, none counting, and its struct cpu's
 *   pointer to it (setup).  perfmon_cpu_slot_setup: slot, of dev, was
 *   allocated (active on no CPU; thread context, under the allocator's
 *   lock): every CPU's record of it names the device, its mask and its
 *   event, and every CPU's turn_counters its counters.
 * All in a section on cpu but the last four.
 */
struct perfmon_cpu *perfmon_cpu_enter(void);
void perfmon_cpu_leave_pending(struct perfmon_cpu *cpu);
void perfmon_cpu_fold(struct perfmon_cpu *cpu, uint64_t slots, bool ovf);
void perfmon_cpu_fold_intr(struct perfmon_cpu *cpu, uint64_t slots);
void perfmon_cpu_pmc_start(struct perfmon_cpu *cpu, unsigned int slot,
                           unsigned int hw_id, uint64_t now);
void perfmon_cpu_pmc_stop(struct perfmon_cpu *cpu, unsigned int slot,
                          uint64_t now, bool folded);
void perfmon_cpu_pmc_update(struct perfmon_cpu *cpu, unsigned int slot,
                            bool ovf);
void perfmon_cpu_pmc_sample_init(struct perfmon_cpu *cpu, unsigned int slot,
                                 const struct perfmon_td_pmc *saved);
void perfmon_cpu_pmc_sample_save(struct perfmon_cpu *cpu, unsigned int slot,
                                 struct perfmon_td_pmc *tpmc);
void perfmon_cpu_poll_xcall(void *dev);
uint64_t perfmon_cpu_active_slots(unsigned int cpu);
void perfmon_cpu_init(unsigned int cpu);
void perfmon_cpu_slot_setup(unsigned int slot, struct perfmon_dev *dev);

/*
 * Add n to a word of the calling CPU's state that its own interrupts and
 * NMIs read (gen, intr_depth): one instruction, which none of them can
 * split, so no lock prefix.
 */
static inline __attribute__((always_inline)) void
perfmon_cpu_word_add(unsigned long *word, unsigned long n)
{
#ifdef TALLY_HOST_TEST
    WRITE_ONCE(*word, *word + n);
#else
    __asm__ __volatile__("addq %1, %0" : "+m"(*word) : "er"(n));
#endif
}

/*
 * The start of a section on the calling CPU's state: busy set, gen moved
 * on, before any of the state changes.
 */
static inline __attribute__((always_inline)) void
perfmon_cpu_begin(struct perfmon_cpu *cpu)
{
    WRITE_ONCE(cpu->busy, true);
    perfmon_cpu_word_add(&cpu->gen, 1);
    barrier();
}

/*
 * The start of the context switch's section on cpu, the calling CPU's
 * (perfmon_cpu_self()): perfmon_cpu_enter() inline and without its checks,
 * which the switch's caller meets (interrupts disabled, no section open
 * here).  It leaves gen as it is: the readers gen protects run with
 * preemption disabled, so no switch ever lands inside one (the general
 * switch moves it, for the passes known: see struct perfmon_cpu).  It
 * returns the section's time and leaves cpu->now to the caller, to set
 * before calling what reads it: the switch that keeps its counters reads
 * none.
 */
static inline __attribute__((always_inline)) uint64_t
perfmon_cpu_enter_switch(struct perfmon_cpu *cpu)
{
    WRITE_ONCE(cpu->busy, true);
    barrier();
    return cpu_rdtsc();
}

/*
 * The slots an NMI left pending on cpu, the calling CPU, and whether
 * there are any: after a compiler barrier, which makes the load one from
 * memory, taken once, after what comes before (an aligned word: the NMI
 * cannot split it); not a READ_ONCE, so that the compiler tests it in
 * memory, in one instruction.
 */
static inline __attribute__((always_inline)) uint64_t
perfmon_cpu_pending_mask(const struct perfmon_cpu *cpu)
{
    barrier();
    return cpu->pending;
}

static inline __attribute__((always_inline)) bool
perfmon_cpu_pending(const struct perfmon_cpu *cpu)
{
    return perfmon_cpu_pending_mask(cpu) != 0;
}

/* The end of a section: clear busy, fold what an NMI left pending. */
static inline __attribute__((always_inline)) void
perfmon_cpu_leave(struct perfmon_cpu *cpu)
{
    barrier();
    WRITE_ONCE(cpu->busy, false);

    if (unlikely(perfmon_cpu_pending(cpu))) {
        perfmon_cpu_leave_pending(cpu);
    }
}

/*
 * Count the time since the slot's stamp into its times: enabled while it
 * has users here, running while it holds a counter.  Called before either
 * changes, and to read them.
 */
static inline __attribute__((always_inline)) void
perfmon_cpu_pmc_clock(struct perfmon_cpu *cpu, unsigned int slot,
                      uint64_t now)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    uint64_t dt = now - pmc->stamp;

    if (pmc->nr_refs != 0) {
        pmc->enabled += dt;

        if (cpu->sched_mask & perfmon_slot_bit(slot)) {
            pmc->running += dt;
        }
    }

    pmc->stamp = now;
}

/* The same for a slot known to be active, its record pmc, running or not. */
static inline __attribute__((always_inline)) void
perfmon_cpu_pmc_clock_active(struct perfmon_cpu_pmc *pmc, uint64_t now,
                             bool running)
{
    uint64_t dt = now - pmc->stamp;

    pmc->enabled += dt;

    if (running) {
        pmc->running += dt;
    }

    pmc->stamp = now;
}

/* Slot's turn_enabled and turn_running from its record (perfmon_cpu). */
static inline void
perfmon_cpu_pmc_turn_sync(struct perfmon_cpu *cpu, unsigned int slot)
{
    const struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    bool sched = (cpu->sched_mask & perfmon_slot_bit(slot)) != 0;

    cpu->turn_enabled[slot] = pmc->enabled - pmc->stamp;
    cpu->turn_running[slot] = pmc->running - (sched ? pmc->stamp : 0);
}

/*
 * A thread's clock at now (kern/perfmon_types.h): when it is loaded, now
 * is its CPU's TSC, in a section there.
 */
static inline __attribute__((always_inline)) uint64_t
perfmon_cpu_td_clock(const struct perfmon_td *td, uint64_t now)
{
    return td->clock + ((td->loaded_mask != 0) ? now : 0);
}

/*
 * Slot of td (active) starts (run) or stops running with the thread's
 * clock at now: its running time is kept as an offset to the clock from
 * then on, or as the time.
 */
static inline __attribute__((always_inline)) void
perfmon_cpu_td_set_running(struct perfmon_td *td, unsigned int slot,
                           uint64_t now, bool run)
{
    struct perfmon_td_pmc *tpmc = &td->pmcs[slot];
    uint64_t bit = perfmon_slot_bit(slot);

    if (run == ((td->run_mask & bit) != 0)) {
        return;
    }

    if (run) {
        tpmc->running -= perfmon_cpu_td_clock(td, now);
        td->run_mask |= bit;
    } else {
        tpmc->running += perfmon_cpu_td_clock(td, now);
        td->run_mask &= ~bit;
    }
}

/*
 * Slot starts (run) or stops holding a counter here at now: the thread
 * loaded here, when the slot is one of its loaded ones, runs it with its
 * clock from now on, or stops.  (The context switch clears cpu->td while
 * it moves counters between two threads, and sets the incoming one's
 * mask itself.)
 */
static inline __attribute__((always_inline)) void
perfmon_cpu_td_pmc_run(struct perfmon_cpu *cpu, unsigned int slot,
                       uint64_t now, bool run)
{
    struct perfmon_td *td = cpu->td;

    if (td != NULL && (td->loaded_mask & perfmon_slot_bit(slot))) {
        perfmon_cpu_td_set_running(td, slot, now, run);
    }
}

/*
 * A thread's counts on slot at now; value: the CPU's value of the slot,
 * folded, when the slot is loaded (ignored otherwise).
 */
static inline __attribute__((always_inline)) void
perfmon_cpu_td_pmc_counts(const struct perfmon_td *td, unsigned int slot,
                          uint64_t value, uint64_t now,
                          struct perfmon_counts *counts)
{
    const struct perfmon_td_pmc *tpmc = &td->pmcs[slot];
    uint64_t bit = perfmon_slot_bit(slot), clock, enabled, running;

    clock = perfmon_cpu_td_clock(td, now);
    value = tpmc->value + ((td->loaded_mask & bit) ? value : 0);
    enabled = tpmc->enabled + ((td->active_mask & bit) ? clock : 0);
    running = tpmc->running + ((td->run_mask & bit) ? clock : 0);
    *counts = (struct perfmon_counts){
        .value = value, .enabled = enabled, .running = running,
    };
}

/*
 * Fold the counter slot holds here (entered): inline when the device
 * gave a read method, nothing is pending and the counter did not wrap;
 * perfmon_cpu_pmc_update() otherwise.  An NMI that marks the slot
 * pending after the read sends it there too, which reads again with the
 * overflow, as its own loop would.
 */
static inline __attribute__((always_inline)) void
perfmon_cpu_pmc_fold(struct perfmon_cpu *cpu, unsigned int slot)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    uint64_t bit = perfmon_slot_bit(slot), raw;

    if (likely(pmc->read_how != PERFMON_READ_OP)
        && !(READ_ONCE(cpu->pending) & bit)) {
        barrier();
        raw = perfmon_cpu_pmc_raw(pmc) & pmc->mask;
        barrier();

        if (likely(raw >= pmc->prev)) {
            pmc->value += raw - pmc->prev;
            pmc->prev = raw;

            if (likely(!(READ_ONCE(cpu->pending) & bit))) {
                return;
            }
        }
    }

    perfmon_cpu_pmc_update(cpu, slot, false);
}

/*
 * The arithmetic of the overflow interrupt's fold of the counter pmc holds
 * on cpu, raw just read: the difference since the last fold, and the wrap
 * the interrupt reports where the difference does not show it, unless a
 * plain fold saw the counter go backwards and counted it then.  Returns
 * raw masked, the new prev, which the caller stores (or leaves to an arm
 * that follows with nothing reading it between).
 */
static inline __attribute__((always_inline)) uint64_t
perfmon_cpu_pmc_add_ovf_value(struct perfmon_cpu *cpu,
                              struct perfmon_cpu_pmc *pmc, uint64_t raw)
{
    uint64_t mask = pmc->mask, prev = pmc->prev, delta;

    raw &= mask;
    delta = (raw - prev) & mask;

    if (raw < prev || likely(!pmc->wrap_seen)) {
        if (raw >= prev) {
            delta += mask + 1;          /* 0 at width 64: a no-op mod 2^64 */
        }

        perfmon_syscnt_inc_local(&cpu->nr_overflows);
    }

    pmc->wrap_seen = false;
    pmc->value += delta;
    return raw;
}

/* The same, prev stored. */
static inline __attribute__((always_inline)) void
perfmon_cpu_pmc_add_ovf(struct perfmon_cpu *cpu, struct perfmon_cpu_pmc *pmc,
                        uint64_t raw)
{
    pmc->prev = perfmon_cpu_pmc_add_ovf_value(cpu, pmc, raw);
}

/*
 * The arithmetic of a plain fold (no interrupt says the counter wrapped)
 * of the counter pmc holds on cpu, raw just read: the difference since the
 * last fold; a counter gone backwards wrapped, counted now and marked
 * seen, so that the interrupt of that wrap adds no period again.
 */
static inline __attribute__((always_inline)) void
perfmon_cpu_pmc_add(struct perfmon_cpu *cpu, struct perfmon_cpu_pmc *pmc,
                    uint64_t raw)
{
    uint64_t mask = pmc->mask, prev = pmc->prev, delta;

    raw &= mask;
    delta = raw - prev;

    /* Only a wrap's difference needs the width. */
    if (unlikely(raw < prev)) {
        pmc->wrap_seen = true;
        perfmon_syscnt_inc_local(&cpu->nr_overflows);
        delta &= mask;
    }

    pmc->value += delta;
    pmc->prev = raw;
}

/*
 * The overflow interrupt's fold of a slot whose counter it says
 * overflowed, in the interrupt's own section: perfmon_cpu_pmc_update()
 * with ovf, inline when the device gave a read method and nothing is
 * pending for the slot.  An overflow an NMI marks pending meanwhile sends
 * it there too, which reads again with it.  Returns true when it folded
 * inline: then a sampling slot is still to account and arm (which
 * perfmon_cpu_pmc_update() does for one itself).
 */
static inline __attribute__((always_inline)) bool
perfmon_cpu_pmc_fold_ovf(struct perfmon_cpu *cpu, unsigned int slot)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    uint64_t bit = perfmon_slot_bit(slot), raw;

    __asm__("" : "+r"(pmc));    /* kept, not recomputed from slot */

    if (READ_ONCE(cpu->pending) & bit) {
        perfmon_cpu_pmc_update(cpu, slot, true);
        return false;
    }

    barrier();

    if (!perfmon_cpu_pmc_raw_direct(pmc, &raw)) {
        perfmon_cpu_pmc_update(cpu, slot, true);
        return false;
    }

    barrier();
    perfmon_cpu_pmc_add_ovf(cpu, pmc, raw);

    if (unlikely(READ_ONCE(cpu->pending) & bit)) {
        perfmon_cpu_pmc_update(cpu, slot, false);
        return false;
    }

    return true;
}

/*
 * The same in an interrupt's section entered with nothing pending (the
 * interrupt's common path): no test of pending.  For a counting slot, an
 * overflow an NMI marks pending meanwhile is the section's leave's to
 * fold, which reads again with it; a sampling slot's must be folded
 * before its arm writes the counter (perfmon_cpu_fold_intr_sampling).
 * pmc: the slot's record, which the caller has at hand.  True when it
 * folded inline, as perfmon_cpu_pmc_fold_ovf().
 */
static inline __attribute__((always_inline)) bool
perfmon_cpu_pmc_fold_ovf_alone(struct perfmon_cpu *cpu, unsigned int slot,
                               struct perfmon_cpu_pmc *pmc)
{
    uint64_t raw;

    __asm__("" : "+r"(pmc));    /* kept, not recomputed from slot */
    barrier();

    if (!perfmon_cpu_pmc_raw_direct(pmc, &raw)) {
        perfmon_cpu_pmc_update(cpu, slot, true);
        return false;
    }

    barrier();
    perfmon_cpu_pmc_add_ovf(cpu, pmc, raw);
    return true;
}

/*
 * Load a sampling counter so that it overflows after the events left to
 * the next sample, or as many as the device can arm: a longer period takes
 * several overflows, the intermediate ones writing no sample.  A counter
 * read in memory is that word, loaded by a store (kern/perfmon_dev.h).
 * left > 0 and wrap_seen is false, by construction, not tested: the
 * callers are the start, which makes both so, and
 * perfmon_cpu_pmc_overflowed(), which comes right after a fold with the
 * overflow (which clears wrap_seen) and leaves left positive (see there).
 */
static inline __attribute__((always_inline)) void
perfmon_cpu_pmc_arm(struct perfmon_cpu_pmc *pmc)
{
    struct perfmon_dev *dev = pmc->dev;
    uint64_t events;

    events = MAX(MIN((uint64_t)pmc->left, dev->arm_max), dev->arm_min);
    pmc->prev = (0 - events) & pmc->mask;
    pmc->armed_value = pmc->value;

    if (likely(pmc->read_how == PERFMON_READ_MEM)) {
        *(volatile uint64_t *)pmc->read_arg = pmc->prev;
    } else {
        dev->ops->write(dev, pmc->hw_id, pmc->prev);
    }
}

/*
 * Arm a sampling counter for the next sample once one was due, left the
 * events then still left (0 or less, so that adding the period cannot
 * overflow): one sample, however far past the period the counter got.
 */
static inline __attribute__((always_inline)) void
perfmon_cpu_pmc_arm_next(struct perfmon_cpu_pmc *pmc, int64_t left)
{
    int64_t period = (int64_t)pmc->period;

    left += period;
    pmc->left = (left <= 0) ? period : left;
    perfmon_cpu_pmc_arm(pmc);
}

/*
 * perfmon_cpu_pmc_adjust: frequency mode's new period at a sample.
 * perfmon_cpu_fold_intr_update: perfmon_cpu_pmc_update() in the
 * interrupt's own fold, true when it left a sample due.
 */
void perfmon_cpu_pmc_adjust(struct perfmon_cpu_pmc *pmc,
                            const struct perfmon_sampling *sampling);
bool perfmon_cpu_fold_intr_update(struct perfmon_cpu *cpu, unsigned int slot,
                                  bool ovf);

/*
 * A sampling counter overflowed: count what it counted against the events
 * left, take a sample when they are used up (only in the interrupt's own
 * fold, intr: then the interrupted frame is the one the sample must show;
 * true then, the sample's period in *periodp), and arm it again.  pmc:
 * the slot's record.  left stays positive: it was, or a period (never 0:
 * at least the device's arm_min) is added to a left above minus the
 * period, or it is the period.  The arm is in both branches, each
 * returning a constant, so that the caller's test of the result is on
 * no path.
 */
static inline __attribute__((always_inline)) bool
perfmon_cpu_pmc_overflowed_period(struct perfmon_cpu *cpu, uint64_t slot,
                                  struct perfmon_cpu_pmc *pmc, bool intr,
                                  uint64_t *periodp)
{
    int64_t left;

    left = pmc->left - (int64_t)(pmc->value - pmc->armed_value);

    if (likely(left > 0)) {
        pmc->left = left;
        perfmon_cpu_pmc_arm(pmc);
        return false;
    }

    if (!intr) {
        perfmon_syscnt_inc_local(&cpu->nr_unsampled);
    }

    /*
     * A fixed period: nothing to time, and the TSC is not read.  The
     * sample's period is the one before the adjustment; a fixed one is
     * loaded again after the arm, which may call: nothing is kept across
     * the call.
     */
    if (unlikely(pmc->freq)) {
        if (intr) {
            *periodp = pmc->period;
        }

        /* The slot's index worked out here, from nothing kept before. */
        __asm__("" : "+r"(slot));
        perfmon_cpu_pmc_adjust(pmc, perfmon_pmcs[slot].sampling);
        perfmon_cpu_pmc_arm_next(pmc, left);
        return intr;
    }

    perfmon_cpu_pmc_arm_next(pmc, left);

    if (intr) {
        *periodp = READ_ONCE(pmc->period);
    }

    return intr;
}

/* The same, the sample's period in the slot's due_period. */
static inline __attribute__((always_inline)) bool
perfmon_cpu_pmc_overflowed(struct perfmon_cpu *cpu, unsigned int slot,
                           struct perfmon_cpu_pmc *pmc, bool intr)
{
    return perfmon_cpu_pmc_overflowed_period(cpu, slot, pmc, intr,
                                             &pmc->due_period);
}

/*
 * The interrupt's fold of one sampling slot known to run here (pmc its
 * record), in a section entered with nothing pending: true when it left
 * a sample due, its period in *periodp (cpu->due is not used).  The arm
 * writes the counter: an NMI of the same counter that landed after the
 * read is folded first, by the loop that takes it (and then arms),
 * perfmon_cpu_fold_intr_update().
 */
static inline __attribute__((always_inline)) bool
perfmon_cpu_fold_intr_sampling(struct perfmon_cpu *cpu, uint64_t slot,
                               struct perfmon_cpu_pmc *pmc, uint64_t *periodp)
{
    uint64_t raw;
    bool due;

    __asm__("" : "+r"(pmc));    /* kept, not recomputed from slot */
    barrier();

    if (unlikely(!perfmon_cpu_pmc_raw_direct(pmc, &raw))) {
        __asm__("" : "+r"(slot));       /* narrowed here, not before */
        due = perfmon_cpu_fold_intr_update(cpu, (unsigned int)slot, true);
        *periodp = pmc->due_period;     /* used only when due */
        return due;
    }

    barrier();
    raw = perfmon_cpu_pmc_add_ovf_value(cpu, pmc, raw);

    if (unlikely(READ_ONCE(cpu->pending) & perfmon_slot_bit(slot))) {
        pmc->prev = raw;
        __asm__("" : "+r"(slot));
        due = perfmon_cpu_fold_intr_update(cpu, (unsigned int)slot, false);
        *periodp = pmc->due_period;
        return due;
    }

    /*
     * prev is left to the arm, which sets it next: an NMI landing now
     * leaves its overflow pending, for the section's leave, after it.
     */
    return perfmon_cpu_pmc_overflowed_period(cpu, slot, pmc, true, periodp);
}

/* The slot's 64-bit value on this CPU, folded (entered). */
static inline __attribute__((always_inline)) uint64_t
perfmon_cpu_pmc_value(struct perfmon_cpu *cpu, unsigned int slot)
{
    if (cpu->sched_mask & perfmon_slot_bit(slot)) {
        perfmon_cpu_pmc_fold(cpu, slot);
    }

    return cpu->pmcs[slot].value;
}

/* The slot's counts on this CPU at now, folded (entered). */
static inline __attribute__((always_inline)) void
perfmon_cpu_pmc_counts(struct perfmon_cpu *cpu, unsigned int slot,
                       uint64_t now, struct perfmon_counts *counts)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];

    if (cpu->sched_mask & perfmon_slot_bit(slot)) {
        perfmon_cpu_pmc_fold(cpu, slot);
    }

    perfmon_cpu_pmc_clock(cpu, slot, now);
    counts->value = pmc->value;
    counts->enabled = pmc->enabled;
    counts->running = pmc->running;
}

/*
 * The record of a slot holding no counter here reads its own prev: a
 * read's difference is then 0, so the fast read needs no test of
 * sched_mask to know it is not counting here.
 */
static inline __attribute__((always_inline)) void
perfmon_cpu_pmc_set_idle(struct perfmon_cpu_pmc *pmc)
{
    pmc->read_how = PERFMON_READ_MEM;
    pmc->read_arg = (uintptr_t)&pmc->prev;
}

/*
 * perfmon_cpu_pmc_transfer()'s fold of out (its record from) at the
 * hand-over, raw the value then, when an NMI left something pending:
 * an overflow marked for out or for in (the slot the map names for the
 * counter now) is out's, folded as the interrupt says, their bits
 * cleared; in goes on from it.  Out of line: rare.  Returns cpu, so that
 * the caller keeps nothing but from across it.
 */
struct perfmon_cpu *perfmon_cpu_pmc_handover_pending(
    struct perfmon_cpu *cpu, struct perfmon_cpu_pmc *from, uint64_t raw);

/*
 * Pass the counter slot out holds here (its record from, its bit obit, its
 * device's state cdev) on to slot in (its record to, its bit ibit),
 * reprogrammed in place by the device's transfer for in's event (in not
 * running), inline in the one frame of the switch's pass.  The device
 * returns the raw value at the hand-over: out's count is folded up to it,
 * and in starts from it, so what the counter counted of out's event after
 * out's last fold is out's, never in's (for a clock passed on to an event
 * counter, thousands of cycles).  in reads the counter as out did, unless
 * the device says otherwise: it is handed the method.  in takes out's
 * wrap_seen: the device keeps the overflow status, and the NMI of a wrap
 * out's fold counted comes for in, which must not add a period again.
 *
 * The map names in before the device's call, so that only the record
 * and the section's pending mask are used after it (the fewest values
 * kept across the call).  in runs before the map says so and out stops
 * after: an NMI in between finds one of them running, and inside the
 * section an NMI only marks the slot the map names pending.  So an
 * overflow marked for either by the fold after the call, out (before
 * the map changed) or in (after), is out's: an NMI comes after its wrap,
 * and the count before the hand-over is out's.  One marked for in after
 * the fold is taken as one of the count that goes on, folded for in at
 * the section's end.  Its callers, the context switch's pass
 * (perfmon_sched_pass) and a multiplexing turn of single slots
 * (perfmon_sched_move_simple), checked that out runs and counts, that in
 * does not run nor sample, and move the slots' and the threads' clocks
 * themselves.  Returns cpu, reloaded after the call.
 */
static inline __attribute__((always_inline)) struct perfmon_cpu *
perfmon_cpu_pmc_transfer(struct perfmon_cpu *cpu, struct perfmon_cpu_dev *cdev,
                         struct perfmon_cpu_pmc *from, uint64_t obit,
                         struct perfmon_cpu_pmc *to, unsigned int in,
                         uint64_t ibit)
{
    struct perfmon_dev *dev = from->dev;
    unsigned int hw_id = from->hw_id;   /* kept, not loaded again */
    uint64_t raw;

    /*
     * No NMI looks at in's record before the map names it.  Its device
     * and mask are out's already (perfmon_cpu_slot_setup).
     */
    to->read_how = from->read_how;
    to->read_arg = from->read_arg;
    to->hw_id = hw_id;
    WRITE_ONCE(cpu->sched_mask, cpu->sched_mask | ibit);
    barrier();
    WRITE_ONCE(cdev->slot_of_hw[hw_id], in + 1);
    barrier();
    WRITE_ONCE(cpu->sched_mask, cpu->sched_mask & ~obit);

    /* The call orders the accesses to the state, as a barrier would. */
    raw = dev->ops->transfer(dev, hw_id, to->raw_event, to->flags,
                             &to->read_how, &to->read_arg);

    /*
     * The CPU's record again: one load, where keeping it costs a save.
     * Anything pending sends the fold out of line, which finds the two
     * slots' bits itself: they are not kept across the call either.
     */
    cpu = perfmon_cpu_self();

    if (unlikely(perfmon_cpu_pending(cpu))) {
        cpu = perfmon_cpu_pmc_handover_pending(cpu, from, raw);
    } else {
        perfmon_cpu_pmc_add(cpu, from, raw);
        to->prev = from->prev;
        to->wrap_seen = from->wrap_seen;
    }

    /*
     * out holds no counter now, as after a stop: its record reads its own
     * prev.  (No path found reads it before out is given a counter again,
     * which sets the method; this keeps the record's rule without that.)
     */
    perfmon_cpu_pmc_set_idle(from);
    return cpu;
}

#ifdef TALLY_HOST_TEST
void perfmon_cpu_reset(void);
#endif

#endif /* KERN_PERFMON_CPU_H */
