/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: the per-thread counts (struct perfmon_td,
 * kern/perfmon_types.h) and the context-switch hook.  While a thread's
 * slot is loaded on a CPU, its count is the CPU's value of the slot plus
 * an offset set at load; its times follow the thread's clock, which runs
 * from the switch in to the switch out.  A switch between two threads
 * counting the same events thus reads each counter once and writes two
 * offsets, and copies no snapshot.  Thread context changes a thread's
 * state through thread_call() (interrupts disabled on the CPU running it,
 * or its run queue locked); the switch hook runs with the run queue
 * locked.  Everything touching a CPU's record runs in a section on it
 * (perfmon_cpu.c).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/perfmon/perfmon_sched.h"
#include "kern/perfmon/perfmon_td.h"
#include "kern/string.h"
#include "kern/thread.h"

void
perfmon_td_init(struct perfmon_td *td)
{
    memset(td, 0, sizeof(*td));
}

/*
 * A thread no longer loaded (its clock standing still): all its active
 * slots run with the clock from now on, as perfmon_types.h says, their
 * times unchanged.  (A slot that waited for a counter stops again when
 * loaded where it waits.)
 */
static void
perfmon_td_run_all(struct perfmon_td *td, uint64_t now)
{
    uint64_t slots = td->active_mask & ~td->run_mask;

    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        slots &= slots - 1;
        perfmon_cpu_td_set_running(td, slot, now, true);
    }
}

/*
 * Load slot of a thread running on this CPU (entered, its clock running):
 * one more user of it here, the thread's count going on from the CPU's
 * value.  The CPU knows the thread whose slots are loaded (cpu->td, for
 * the scheduler): set with its first slot, cleared with its last.
 */
static void
perfmon_td_pmc_load(struct perfmon_td *td, struct perfmon_cpu *cpu,
                    unsigned int slot, uint64_t now)
{
    uint64_t bit = perfmon_slot_bit(slot);

    assert(cpu->td == NULL || cpu->td == td);
    cpu->td = td;
    td->loaded_mask |= bit;
    td->pmcs[slot].value -= perfmon_sched_ref_value(cpu, slot,
                                                    &td->pmcs[slot], now);
    perfmon_cpu_td_set_running(td, slot, now, (cpu->sched_mask & bit) != 0);
}

/*
 * Drop slot of a thread running on this CPU (entered, the slot's value
 * folded at now): its count goes back to what it is, and its last user
 * here may give the counter back.  The last slot stops the thread's
 * clock.
 */
static void
perfmon_td_pmc_drop(struct perfmon_td *td, struct perfmon_cpu *cpu,
                    unsigned int slot, uint64_t now)
{
    td->pmcs[slot].value += cpu->pmcs[slot].value;
    perfmon_sched_unref(cpu, slot, now);
    td->loaded_mask &= ~perfmon_slot_bit(slot);

    if (td->loaded_mask == 0) {
        td->clock += now;
        cpu->td = NULL;
    }
}

/*
 * The second half of a general switch: next (with slots active, those
 * kept or passed loaded) has the others loaded and its clock started,
 * its slots' running times follow the clock as they run here, and when
 * some wait for a counter, they all take turns by share now, not only at
 * the next rotation.  (Only then: slots waiting for another thread's sake
 * wait for the tick.)
 */
static void
perfmon_td_switch_in(struct perfmon_td *next, struct perfmon_cpu *cpu,
                     uint64_t now)
{
    uint64_t slots = next->active_mask & ~next->loaded_mask;

    next->clock -= now;
    cpu->td = next;

    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        slots &= slots - 1;
        perfmon_td_pmc_load(next, cpu, slot, now);
    }

    slots = (next->run_mask ^ cpu->sched_mask) & next->active_mask;

    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        slots &= slots - 1;
        perfmon_cpu_td_set_running(next, slot, now,
                                   (cpu->sched_mask & perfmon_slot_bit(slot))
                                   != 0);
    }

    if (next->active_mask & ~cpu->sched_mask) {
        perfmon_sched_rotate(cpu, now);
    }

    /* What the branch records hold until now is another thread's. */
    if (next->active_mask & READ_ONCE(perfmon_branch_slots)) {
        perfmon_branch_sched_in();
    }
}

/*
 * A context switch from prev to next on this CPU, in the section
 * perfmon_td_switch_slow() or perfmon_td_switch_change() entered, which
 * this one leaves: the general case, out of line.  prev's clock stops at
 * once and cpu->td is cleared meanwhile: the counters moved in this section
 * move at now, when prev's times stand and next's start.  A slot both
 * threads count keeps running and is read once: its CPU reference passes
 * from prev to next.  A counting slot of prev alone on its counter may pass
 * the counter on to one of next's (perfmon_sched_transfer): one read, one
 * write.  Sampling slots are always unloaded and loaded: each thread has
 * its own progress to its next sample.
 */
static void __attribute__((noinline))
perfmon_td_switch_all(struct perfmon_td *prev, struct perfmon_td *next,
                      struct perfmon_cpu *cpu)
{
    uint64_t now = cpu->now, slots = prev->loaded_mask, kept, in;

    /* What a switch here loads and unloads may disallow a pass known. */
    perfmon_cpu_word_add(&cpu->gen, 1);
    kept = slots & next->active_mask & ~READ_ONCE(perfmon_sampling_slots);

    if (slots != 0) {
        prev->clock += now;
        prev->loaded_mask = 0;
        perfmon_td_run_all(prev, now);
    }

    cpu->td = NULL;
    next->loaded_mask = kept;

    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);
        uint64_t value;

        slots &= slots - 1;

        if (kept & perfmon_slot_bit(slot)) {
            value = perfmon_cpu_pmc_value(cpu, slot);
            prev->pmcs[slot].value += value;
            next->pmcs[slot].value -= value;
            continue;
        }

        /* A counter passed on is folded by the hand-over, not before. */
        in = next->active_mask & ~next->loaded_mask;
        in = (in != 0) ? perfmon_sched_transfer(cpu, slot, in, now)
                       : PERFMON_MAX_PMCS;

        if (in < PERFMON_MAX_PMCS) {
            prev->pmcs[slot].value += cpu->pmcs[slot].value;
            next->loaded_mask |= perfmon_slot_bit(in);
            next->pmcs[in].value -= cpu->pmcs[in].value;
            continue;
        }

        prev->pmcs[slot].value += perfmon_cpu_pmc_value(cpu, slot);

        if (perfmon_pmcs[slot].sampling != NULL) {
            perfmon_cpu_pmc_sample_save(cpu, slot, &prev->pmcs[slot]);
        }

        perfmon_sched_unref(cpu, slot, now);
    }

    if (next->active_mask != 0) {
        perfmon_td_switch_in(next, cpu, now);
    }

    perfmon_cpu_leave(cpu);
}

/* A thread's value of the slot whose record on a CPU has td_offset. */
static inline __attribute__((always_inline)) uint64_t *
perfmon_td_value_at(struct perfmon_td *td, unsigned long td_offset)
{
    return (uint64_t *)((char *)td + td_offset);
}

/*
 * A pass of a counter in place at a context switch, from slot out (its
 * counter hw_id) to slot in, as perfmon_cpu's pass_memo keeps it.
 */
static inline __attribute__((always_inline)) uint64_t
perfmon_td_pass_key(uint64_t out, uint64_t in, unsigned int hw_id)
{
    return out | (in << 8) | ((uint64_t)hw_id << 16);
}

/* Whether cpu found the pass of key allowed at gen (its generation now). */
static inline __attribute__((always_inline)) bool
perfmon_td_pass_known(const struct perfmon_cpu *cpu, uint64_t key,
                      unsigned long gen)
{
    return (cpu->pass_memo[0] == key && cpu->pass_memo_gen[0] == gen)
           || (cpu->pass_memo[1] == key && cpu->pass_memo_gen[1] == gen);
}

/*
 * Whether the counter of slot out may pass in place to slot in (of the pass
 * key), out counting alone on it and next's slot taking it as placing would
 * (the parts of perfmon_sched_transfer: perfmon_sched.h).  A pass allowed
 * is kept in the CPU's pass_memo with gen, the generation now, unless it
 * went by what other counters are free (a preferred counter none is:
 * another given back would change the answer, and nothing moves gen
 * then).  While gen stays, it holds: the CPU's state changed only by passes
 * and by switches that keep every slot (no section began: gen; no switch
 * loaded or unloaded a slot otherwise: perfmon_td_switch_all moves gen; no
 * slot was allocated: perfmon_cpu_slot_gen), and a pass keeps what allowed
 * this one: out runs alone on hw_id with no slot of its device waiting, and
 * in is not active here (the loaded thread's slots and CPU events' are the
 * active ones, and prev loads only out); counters reserved since move slots
 * off them in sections of their own (perfmon_sched_evict_all) or come with
 * a pinned slot's allocation.
 */
static inline __attribute__((always_inline)) bool
perfmon_td_pass_check(struct perfmon_cpu *cpu, unsigned int out,
                      unsigned int in, uint64_t key, unsigned long gen)
{
    const struct perfmon_cpu_pmc *from = &cpu->pmcs[out];
    const struct perfmon_pmc *gpmc = &perfmon_pmcs[in];
    unsigned int d = out / PERFMON_DEV_MAX_PMCS;
    struct perfmon_cpu_dev *cdev = &cpu->devs[d];
    uint64_t pass = READ_ONCE(perfmon_pass_slots);

    if (!(perfmon_slot_bit(in) & pass & ~cpu->active_mask)
        || (out ^ in) >= PERFMON_DEV_MAX_PMCS
        || !perfmon_sched_may_pass(cpu, cdev, from, perfmon_slot_bit(out),
                                   pass)
        || !perfmon_sched_may_take(cpu, d, gpmc, from->hw_id)) {
        return false;
    }

    if (likely(gpmc->prefer == 0) || ((gpmc->prefer >> from->hw_id) & 1)) {
        cpu->pass_memo[1] = cpu->pass_memo[0];
        cpu->pass_memo_gen[1] = cpu->pass_memo_gen[0];
        cpu->pass_memo[0] = key;
        cpu->pass_memo_gen[0] = gen;
    }

    return true;
}

/*
 * The pass itself, from prev's slot out (its record from, its bit kept)
 * to next's slot in (its bit ibit), in the section entered at cpu->now.
 * Inline, expanded twice: on the path of a pass known, nothing is called
 * before the device's transfer, so that prev and next need no register
 * saved.
 */
static inline __attribute__((always_inline)) void
perfmon_td_pass(struct perfmon_td *prev, struct perfmon_td *next,
                struct perfmon_cpu *cpu, struct perfmon_cpu_pmc *from,
                uint64_t out, uint64_t kept, uint64_t in, uint64_t ibit)
{
    struct perfmon_cpu_dev *cdev = &cpu->devs[out / PERFMON_DEV_MAX_PMCS];
    struct perfmon_cpu_pmc *to = perfmon_cpu_pmc_of(cpu, in);
    uint64_t now = cpu->now, *count, *offset;

    /* All but out's count, which the hand-over folds, moves first. */
    count = perfmon_td_value_at(prev, from->td_offset);
    offset = perfmon_td_value_at(next, to->td_offset);
    prev->clock += now;
    prev->loaded_mask = 0;
    *offset -= to->value;
    next->clock -= now;
    next->loaded_mask = ibit;
    cpu->td = next;
    cpu = perfmon_sched_pass(cpu, cdev, from, kept, to, (unsigned int)in,
                             ibit, now);
    *count += from->value;
    perfmon_cpu_leave(cpu);
}

/*
 * A pass not known (perfmon_td_switch_change): checked, then taken (and
 * kept in the memo), or the general switch.  Out of line.
 */
static void __attribute__((noinline))
perfmon_td_switch_check(struct perfmon_td *prev, struct perfmon_td *next,
                        struct perfmon_cpu *cpu, uint64_t out, uint64_t in,
                        uint64_t key, unsigned long gen)
{
    if (!perfmon_td_pass_check(cpu, (unsigned int)out, (unsigned int)in,
                               key, gen)) {
        perfmon_td_switch_all(prev, next, cpu);
        return;
    }

    perfmon_td_pass(prev, next, cpu, perfmon_cpu_pmc_of(cpu, out), out,
                    prev->loaded_mask, in, next->active_mask);
}

/*
 * A switch from prev to next where next does not use exactly the slots
 * prev has loaded, in one section.  From prev with one slot out loaded to
 * next with one other active, when out counts alone on its counter and
 * next's slot may take it over (perfmon_td_pass_check, or known from an
 * earlier switch), the counter passes in place: one read (out's fold, at
 * the hand-over) and one write, and the offsets and clocks move as for a
 * kept counter; neither thread's mask of running slots changes (next's
 * slot, not loaded, ran with its clock, and holds a counter now:
 * perfmon_types.h).  Anything else is perfmon_td_switch_all's.
 */
void
perfmon_td_switch_change(struct perfmon_td *prev, struct perfmon_td *next)
{
    struct perfmon_cpu *cpu = perfmon_cpu_self();
    uint64_t kept = prev->loaded_mask, in = next->active_mask, key;
    struct perfmon_cpu_pmc *from;
    uint64_t out, slot;
    unsigned long gen;

    /* Stored, not kept: loaded again where needed, a register less. */
    cpu->now = perfmon_cpu_enter_switch(cpu);

    /* One slot each way. */
    if (!cpu_ctz64_test(kept, &out) || !cpu_ctz64_test(in, &slot)
        || ((kept & (kept - 1)) | (in & (in - 1))) != 0) {
        perfmon_td_switch_all(prev, next, cpu);
        return;
    }

    from = perfmon_cpu_pmc_of(cpu, out);
    key = perfmon_td_pass_key(out, slot, from->hw_id);
    gen = cpu->gen + READ_ONCE(perfmon_cpu_slot_gen);

    if (unlikely(!perfmon_td_pass_known(cpu, key, gen))) {
        perfmon_td_switch_check(prev, next, cpu, out, slot, key, gen);
        return;
    }

    perfmon_td_pass(prev, next, cpu, from, out, kept, slot, in);
}

/*
 * The end of a switch's fast path (perfmon_td_switch_slow) when it could
 * not fold a slot itself (slow: the first such and the slots after it,
 * which it leaves to this: a device's read op, or a wrap seen), or an
 * overflow interrupt left something pending: those slots are folded
 * here, and the kept slots the interrupt marked after their fold are
 * folded again with the overflow, what that adds counted for prev, as a
 * fold after the interrupt would have.  Then it leaves the section.  Out
 * of line: rare.
 */
static void __attribute__((noinline))
perfmon_td_switch_finish(struct perfmon_td *prev, struct perfmon_td *next,
                         struct perfmon_cpu *cpu, uint64_t slow)
{
    uint64_t slots;

    for (slots = slow; slots != 0; slots &= slots - 1) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);
        uint64_t value;

        perfmon_cpu_pmc_update(cpu, slot, false);
        value = cpu->pmcs[slot].value;
        prev->pmcs[slot].value += value;
        next->pmcs[slot].value -= value;
    }

    slots = READ_ONCE(cpu->pending) & next->loaded_mask & ~slow;

    for (; slots != 0; slots &= slots - 1) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);
        uint64_t before = cpu->pmcs[slot].value, delta;

        perfmon_cpu_pmc_update(cpu, slot, false);
        delta = cpu->pmcs[slot].value - before;
        prev->pmcs[slot].value += delta;
        next->pmcs[slot].value -= delta;
    }

    perfmon_cpu_leave(cpu);
}

/*
 * A context switch from prev to next on this CPU, in one section, next
 * using exactly the slots prev has loaded (some).  When they all run here
 * (none sampling, none waiting for a counter, none recording branches:
 * those sample), every counter keeps running: its CPU reference passes
 * from prev to next, it is read once, and the two offsets change; the
 * clocks stop and start.  Nothing is called on that path but what it
 * leaves for perfmon_td_switch_finish, and nothing after a call, so that
 * the compiler keeps it all in registers it need not save; anything else
 * is perfmon_td_switch_all's.
 */
void
perfmon_td_switch_slow(struct perfmon_td *prev, struct perfmon_td *next)
{
    struct perfmon_cpu *cpu = perfmon_cpu_self();
    uint64_t now = perfmon_cpu_enter_switch(cpu);
    uint64_t kept = prev->loaded_mask, slots = kept, slot;

    assert(kept == next->active_mask);

    if (unlikely(kept & (READ_ONCE(perfmon_sampling_slots)
                         | ~cpu->sched_mask))) {
        cpu->now = now;         /* read there, not on the path below */
        perfmon_td_switch_all(prev, next, cpu);
        return;
    }

    prev->clock += now;
    prev->loaded_mask = 0;
    next->clock -= now;
    next->loaded_mask = kept;
    cpu->td = next;

    slot = cpu_ctz64(slots);

    do {
        struct perfmon_cpu_pmc *pmc = perfmon_cpu_pmc_of(cpu, slot);
        unsigned long offset;
        uint64_t raw, delta, value;

        if (unlikely(!perfmon_cpu_pmc_raw_direct(pmc, &raw))
            || unlikely((raw &= pmc->mask) < pmc->prev)) {
            perfmon_td_switch_finish(prev, next, cpu, slots);
            return;
        }

        offset = pmc->td_offset;
        delta = raw - pmc->prev;
        pmc->prev = raw;
        value = pmc->value + delta;
        pmc->value = value;
        *perfmon_td_value_at(prev, offset) += value;
        *perfmon_td_value_at(next, offset) -= value;
    } while (cpu_ctz64_next(&slots, &slot));

    if (unlikely(perfmon_cpu_pending(cpu))) {
        perfmon_td_switch_finish(prev, next, cpu, 0);
        return;
    }

    perfmon_cpu_leave(cpu);
}

/*
 * The thread's counts on slot, up to date.  When running, the caller runs
 * on the thread's CPU with the PMU entered (cpu not NULL), and then every
 * active slot of the thread is loaded here.
 */
void
perfmon_td_pmc_read(struct perfmon_td *td, struct perfmon_cpu *cpu,
                    unsigned int slot, uint64_t now,
                    struct perfmon_counts *counts)
{
    uint64_t value = 0;

    if (cpu != NULL) {
        assert(td->loaded_mask == td->active_mask);
        assert(cpu->td == td);
        value = perfmon_cpu_pmc_value(cpu, slot);
    } else {
        assert(td->loaded_mask == 0);
    }

    perfmon_cpu_td_pmc_counts(td, slot, value, now, counts);
}

/*
 * Start counting an event of the thread: one more user of its slot,
 * loaded at once when the thread runs here.  Its enabled time follows the
 * thread's clock from now on.
 */
void
perfmon_td_event_enable(struct perfmon_td *td, struct perfmon_cpu *cpu,
                        struct perfmon_event *event, uint64_t now)
{
    unsigned int slot = event->slot;
    struct perfmon_td_pmc *tpmc = &td->pmcs[slot];

    if (tpmc->nr_refs++ == 0) {
        /* As a slot not loaded: running with the clock. */
        tpmc->enabled -= perfmon_cpu_td_clock(td, now);
        td->active_mask |= perfmon_slot_bit(slot);
        perfmon_cpu_td_set_running(td, slot, now, true);
        perfmon_cpu_td_pmc_counts(td, slot, 0, now, &tpmc->share_base);

        if (cpu != NULL) {
            /* A thread without events was not loaded at its switch in. */
            if (td->loaded_mask == 0) {
                td->clock -= now;
            }

            perfmon_td_pmc_load(td, cpu, slot, now);
        }
    }

    perfmon_td_pmc_read(td, cpu, slot, now, &event->start);
}

void
perfmon_td_event_disable(struct perfmon_td *td, struct perfmon_cpu *cpu,
                         struct perfmon_event *event, uint64_t now)
{
    unsigned int slot = event->slot;
    struct perfmon_td_pmc *tpmc = &td->pmcs[slot];
    struct perfmon_counts counts;

    perfmon_td_pmc_read(td, cpu, slot, now, &counts);
    perfmon_counts_add_delta(&event->total, &counts, &event->start);
    assert(tpmc->nr_refs != 0);

    /* Dropped without the sampling save: the period goes below. */
    if (--tpmc->nr_refs == 0) {
        perfmon_cpu_td_set_running(td, slot, now, false);
        tpmc->enabled += perfmon_cpu_td_clock(td, now);
        td->active_mask &= ~perfmon_slot_bit(slot);

        if (cpu != NULL) {
            perfmon_td_pmc_drop(td, cpu, slot, now);
        }

        tpmc->sample_period = 0;
    }
}
