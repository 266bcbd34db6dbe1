/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: the per-thread counts (struct perfmon_td,
 * kern/perfmon_types.h) and the context-switch hook.  A thread's count on
 * a slot is what it accumulated (total) plus, while it is loaded on a
 * CPU, the growth of the CPU's value since the snapshot taken at load
 * (snap).  Thread context changes a thread's state through thread_call()
 * (interrupts disabled on the CPU running it, or its run queue locked);
 * the switch hook runs with the run queue locked.  Everything touching a
 * CPU's record runs in a section on it (perfmon_cpu.c).
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
 * Load slot of a thread running on this CPU (entered).  The CPU knows
 * the thread whose slots are loaded (cpu->td, for the scheduler): set
 * with its first slot, cleared with its last.
 */
static void
perfmon_td_pmc_load(struct perfmon_td *td, struct perfmon_cpu *cpu,
                    unsigned int slot, uint64_t now)
{
    assert(cpu->td == NULL || cpu->td == td);
    cpu->td = td;
    td->loaded_mask |= perfmon_slot_bit(slot);
    perfmon_sched_ref_counts(cpu, slot, &td->pmcs[slot], now,
                               &td->pmcs[slot].snap);
}

/*
 * Fold what a loaded slot counted since the last fold into the thread;
 * counts: the CPU's counts of the slot at now.
 */
static void
perfmon_td_pmc_sync(struct perfmon_td *td, struct perfmon_cpu *cpu,
                    unsigned int slot, uint64_t now,
                    struct perfmon_counts *counts)
{
    struct perfmon_td_pmc *tpmc = &td->pmcs[slot];

    perfmon_cpu_pmc_counts(cpu, slot, now, counts);
    perfmon_counts_add_delta(&tpmc->total, counts, &tpmc->snap);
    tpmc->snap = *counts;
}

/*
 * Drop slot of a thread running on this CPU (entered, synced).  Always
 * inline: each caller keeps it in its own body, so that the context
 * switch's stays one piece.
 */
static inline __attribute__((always_inline)) void
perfmon_td_pmc_drop(struct perfmon_td *td, struct perfmon_cpu *cpu,
                    unsigned int slot)
{
    perfmon_sched_unref(cpu, slot, cpu->now);
    td->loaded_mask &= ~perfmon_slot_bit(slot);

    if (td->loaded_mask == 0) {
        cpu->td = NULL;
    }
}

/*
 * Unload slot of a thread running on this CPU (entered, synced): a
 * sampling counter's progress goes with the thread.
 */
static void
perfmon_td_pmc_unload(struct perfmon_td *td, struct perfmon_cpu *cpu,
                      unsigned int slot)
{
    if (perfmon_pmcs[slot].sampling != NULL) {
        perfmon_cpu_pmc_sample_save(cpu, slot, &td->pmcs[slot]);
    }

    perfmon_td_pmc_drop(td, cpu, slot);
}

/*
 * At a switch to next, prev's slot (synced) may pass its counter on in
 * place to one of next's slots not loaded yet (perfmon_sched_transfer):
 * then that one is loaded, its counts starting from the slot's own at
 * now, read by nobody.  Out of line: the switch that keeps its counters
 * pays nothing for it.
 */
static bool __attribute__((noinline))
perfmon_td_pmc_pass(struct perfmon_td *next, struct perfmon_cpu *cpu,
                    unsigned int slot, uint64_t now)
{
    uint64_t incoming = next->active_mask & ~next->loaded_mask;
    const struct perfmon_cpu_pmc *pmc;
    unsigned int in;

    if (incoming == 0) {
        return false;
    }

    in = perfmon_sched_transfer(cpu, slot, incoming, now);

    if (in >= PERFMON_MAX_PMCS) {
        return false;
    }

    pmc = &cpu->pmcs[in];
    next->loaded_mask |= perfmon_slot_bit(in);
    next->pmcs[in].snap = (struct perfmon_counts){
        .value = pmc->value, .enabled = pmc->enabled, .running = pmc->running,
    };
    return true;
}

/*
 * A context switch from prev to next on this CPU, in one section.  A slot
 * both threads count keeps running: its CPU reference passes from prev to
 * next, so the counter is read once and neither stopped nor restarted.
 * Sampling slots are the exception: each thread has its own progress to
 * the next sample, so they are unloaded and loaded.  A counting slot of
 * prev alone on its counter may pass the counter on to one of next's,
 * reprogrammed in place (perfmon_td_pmc_pass): one write, no read.
 */
void
perfmon_td_switch_slow(struct perfmon_td *prev, struct perfmon_td *next)
{
    struct perfmon_counts counts;
    struct perfmon_cpu *cpu;
    uint64_t kept, slots, now;

    assert(!thread_preempt_enabled());
    assert(next->loaded_mask == 0);
    cpu = perfmon_cpu_enter();
    assert(prev->loaded_mask == 0 || prev->cpu == cpu_id());
    now = cpu->now;
    kept = prev->loaded_mask & next->active_mask
           & ~READ_ONCE(perfmon_sampling_slots);
    slots = prev->loaded_mask;
    next->loaded_mask = kept;

    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        slots &= slots - 1;
        perfmon_td_pmc_sync(prev, cpu, slot, now, &counts);

        if (kept & perfmon_slot_bit(slot)) {
            next->pmcs[slot].snap = counts;
        } else if (!perfmon_td_pmc_pass(next, cpu, slot, now)) {
            perfmon_td_pmc_unload(prev, cpu, slot);
        }
    }

    prev->loaded_mask = 0;
    cpu->td = (next->loaded_mask != 0) ? next : NULL;
    next->cpu = cpu_id();
    slots = next->active_mask & ~next->loaded_mask;

    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        slots &= slots - 1;
        perfmon_td_pmc_load(next, cpu, slot, now);
    }

    /*
     * Its slots took free counters in slot order: when some wait, they
     * all take turns by share now, not only at the next rotation.  (Only
     * then: slots waiting for another thread's sake wait for the tick.)
     */
    if (next->active_mask & ~cpu->sched_mask) {
        perfmon_sched_rotate(cpu, now);
    }

    /* What the branch records hold until now is another thread's. */
    if (next->active_mask & READ_ONCE(perfmon_branch_slots)) {
        perfmon_branch_sched_in();
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
    struct perfmon_counts cpu_counts;

    if (cpu != NULL) {
        assert(td->loaded_mask == td->active_mask);
        assert(td->cpu == cpu_id());
        perfmon_td_pmc_sync(td, cpu, slot, now, &cpu_counts);
    } else {
        assert(td->loaded_mask == 0);
    }

    *counts = td->pmcs[slot].total;
}

/*
 * Start counting an event of the thread: one more user of its slot,
 * loaded at once when the thread runs here.
 */
void
perfmon_td_event_enable(struct perfmon_td *td, struct perfmon_cpu *cpu,
                        struct perfmon_event *event, uint64_t now)
{
    unsigned int slot = event->slot;
    struct perfmon_td_pmc *tpmc = &td->pmcs[slot];

    if (tpmc->nr_refs++ == 0) {
        td->active_mask |= perfmon_slot_bit(slot);
        tpmc->share_base = tpmc->total;

        if (cpu != NULL) {
            /* A thread without events was not loaded at its switch in. */
            if (td->loaded_mask == 0) {
                td->cpu = cpu_id();
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
        if (cpu != NULL) {
            perfmon_td_pmc_drop(td, cpu, slot);
        }

        td->active_mask &= ~perfmon_slot_bit(slot);
        tpmc->sample_period = 0;
    }
}
