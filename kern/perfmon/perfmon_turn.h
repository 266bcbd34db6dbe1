/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * A multiplexing turn's selection by share (perfmon_turn.c), private to
 * the core, for the files above it (see perfmon_i.h for the order): the
 * scheduler (perfmon_sched.c) applies it.
 *
 * perfmon_turn_share: a slot's share of its enabled time until now, in
 *   a section on cpu.
 * perfmon_turn_select: the units of device d a full placement by share
 *   would run, in the order it takes them (order, the count returned;
 *   their slots in *chosenp), from the active flexible slots there:
 *   flexible, those holding counters, and the device's waiting ones; used:
 *   the counters the others hold (pinned slots).  In a section on cpu.
 * perfmon_turn_scan_simple, perfmon_turn_scan_cpu (inline, below): the
 *   pass over the slots of a turn that needs no order
 *   (perfmon_sched_turn_simple), with slots of the loaded thread among
 *   them and without; perfmon_turn_nr_over: how many more slots than
 *   counters such a turn has.
 */

#ifndef KERN_PERFMON_TURN_H
#define KERN_PERFMON_TURN_H

#include <stdbool.h>
#include <stdint.h>

#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_cpu.h"

/*
 * The share of its enabled time a slot ran, as the two times: running
 * over enabled, compared by cross products (no division).  No enabled
 * time counts as a share of 0 (0 over 1).
 */
struct perfmon_turn_share {
    uint64_t running;
    uint64_t enabled;
};

/*
 * Slot's share until now (an active slot): the loaded thread's, for its
 * slots (loaded: td's loaded_mask, 0 without a thread), by its clock;
 * the CPU's otherwise, as clocked to now (perfmon_cpu_pmc_clock), from
 * its turn_enabled and turn_running, without clocking it: a turn takes a
 * share for every slot and moves few.  Inline for that.
 */
static inline __attribute__((always_inline)) void
perfmon_turn_share_of(const struct perfmon_cpu *cpu,
                      const struct perfmon_td *td, uint64_t loaded,
                      uint64_t sched, unsigned int slot, uint64_t now,
                      struct perfmon_turn_share *share)
{
    uint64_t enabled, running;

    if (unlikely((loaded >> slot) & 1)) {
        const struct perfmon_counts *base = &td->pmcs[slot].share_base;
        struct perfmon_counts counts;

        perfmon_cpu_td_pmc_counts(td, slot, 0, now, &counts);
        enabled = counts.enabled - base->enabled;
        running = counts.running - base->running;
    } else {
        enabled = cpu->turn_enabled[slot] + now;
        running = cpu->turn_running[slot] + (((sched >> slot) & 1) ? now : 0);
    }

    /* running <= enabled: with no enabled time, none ran either. */
    share->running = running;
    share->enabled = enabled + (enabled == 0);
}

static inline __attribute__((always_inline)) void
perfmon_turn_share(const struct perfmon_cpu *cpu, unsigned int slot,
                   uint64_t now, struct perfmon_turn_share *share)
{
    const struct perfmon_td *td = cpu->td;

    perfmon_turn_share_of(cpu, td, (td != NULL) ? td->loaded_mask : 0,
                          cpu->sched_mask, slot, now, share);
}

/* Whether share a is below share b: a.running * b.enabled < the other. */
static inline __attribute__((always_inline)) bool
perfmon_turn_share_below(const struct perfmon_turn_share *a,
                         const struct perfmon_turn_share *b)
{
    return (unsigned __int128)a->running * b->enabled
           < (unsigned __int128)b->running * a->enabled;
}

/*
 * The largest share of slot's and *max until now (ties: slot's, the
 * higher), into *max and *last.  Inline: a turn takes one for each slot.
 */
static inline __attribute__((always_inline)) void
perfmon_turn_largest_of(const struct perfmon_cpu *cpu,
                        const struct perfmon_td *td, uint64_t loaded,
                        uint64_t sched, unsigned int slot, uint64_t now,
                        struct perfmon_turn_share *max, unsigned int *last)
{
    struct perfmon_turn_share share;

    perfmon_turn_share_of(cpu, td, loaded, sched, slot, now, &share);

    if (!perfmon_turn_share_below(&share, max)) {
        *max = share;
        *last = slot;
    }
}

/*
 * How many more bits a has set than b (no popcount: the kernel runs on any
 * x86-64): the bits of a and of ~b summed, less 64.  The two are counted
 * together: pairs and nibbles each, then their nibbles added (8 at most in
 * each), so that one byte sum does, 128 at most.
 */
static inline int
perfmon_turn_nr_over(uint64_t a, uint64_t b)
{
    uint64_t x = a, y = ~b;

    x -= (x >> 1) & 0x5555555555555555ULL;
    y -= (y >> 1) & 0x5555555555555555ULL;
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    y = (y & 0x3333333333333333ULL) + ((y >> 2) & 0x3333333333333333ULL);
    x += y;
    x = (x & 0x0f0f0f0f0f0f0f0fULL) + ((x >> 4) & 0x0f0f0f0f0f0f0f0fULL);
    return (int)((x * 0x0101010101010101ULL) >> 56) - 64;
}

/* No share is below it: where a search for the largest starts. */
#define PERFMON_TURN_SHARE_NONE    { .running = 0, .enabled = 1 }

/*
 * The pass of perfmon_sched_turn_simple() over slots, the active slots
 * of its device: false when one is flexible and counts on other counters
 * than counters.  Takes the pinned ones out of *flexible and their
 * counters out of *fit; the largest share of the flexible ones into *max
 * and *last.  For slots of the loaded thread among them (loaded) or one
 * with no enabled time (perfmon_turn_scan_cpu does without either).  A
 * slot's turn_counters (0 for a pinned one) is tested once: a record is
 * read only for one that differs.
 */
static inline __attribute__((always_inline)) bool
perfmon_turn_scan_simple(const struct perfmon_cpu *cpu,
                         const struct perfmon_td *td, uint64_t loaded,
                         uint64_t slots, uint64_t now, uint64_t counters,
                         uint64_t *flexible, uint64_t *fit,
                         struct perfmon_turn_share *max, unsigned int *last)
{
    uint64_t sched = cpu->sched_mask;

    for (; slots != 0; slots &= slots - 1) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        if (unlikely(cpu->turn_counters[slot] != counters)) {
            if (!perfmon_pmcs[slot].pinned) {
                return false;
            }

            *flexible &= ~perfmon_slot_bit(slot);
            *fit &= ~(1ULL << cpu->pmcs[slot].hw_id);
            continue;
        }

        perfmon_turn_largest_of(cpu, td, loaded, sched, slot, now, max,
                                last);
    }

    return true;
}

/*
 * For perfmon_turn_scan_cpu: one pass over slots, active slots of a
 * device none of which is the loaded thread's, that run (running times
 * advance by run, now) or wait (run 0): the largest share of those on
 * counters, and *max's (its slot last), into *max, its slot returned
 * (ties: the highest slot); the others into *odd.  Only the CPU's turn
 * arrays are read.  Inline: out of line, its values spill.
 */
static inline __attribute__((always_inline)) uint64_t
perfmon_turn_pass(const struct perfmon_cpu *cpu, uint64_t slots,
                  uint64_t now, uint64_t run, uint64_t counters,
                  uint64_t *odd, struct perfmon_turn_share *max,
                  uint64_t last)
{
    uint64_t running = max->running, enabled = max->enabled;

    for (; slots != 0; slots &= slots - 1) {
        uint64_t slot = cpu_ctz64(slots);
        struct perfmon_turn_share share, m;

        if (unlikely(cpu->turn_counters[slot] != counters)) {
            *odd |= 1ULL << slot;
            continue;
        }

        /* Above 0: it counts from before now (see turn_zero_at). */
        share.enabled = cpu->turn_enabled[slot] + now;
        share.running = cpu->turn_running[slot] + run;
        m.running = running;
        m.enabled = enabled;

        if (!perfmon_turn_share_below(&share, &m)) {
            running = share.running;
            enabled = share.enabled;
            last = slot;
        }
    }

    max->running = running;
    max->enabled = enabled;
    return last;
}

/*
 * perfmon_turn_scan_simple() for slots none of which is the loaded
 * thread's, at a now after cpu->turn_zero_at, with the same results: the
 * slots holding a counter and the others in two passes
 * (perfmon_turn_pass), so that a share needs no test of sched_mask, then
 * the larger of their largest (ties: the higher slot) and the slots not
 * on counters.
 */
static inline __attribute__((always_inline)) bool
perfmon_turn_scan_cpu(const struct perfmon_cpu *cpu, uint64_t slots,
                      uint64_t now, uint64_t counters, uint64_t *flexible,
                      uint64_t *fit, struct perfmon_turn_share *max,
                      unsigned int *last)
{
    struct perfmon_turn_share wait = PERFMON_TURN_SHARE_NONE;
    uint64_t sched = cpu->sched_mask, odd = 0, lrun = *last, lwait = 0;

    lrun = perfmon_turn_pass(cpu, slots & sched, now, now, counters, &odd,
                             max, lrun);
    lwait = perfmon_turn_pass(cpu, slots & ~sched, now, 0, counters, &odd,
                              &wait, lwait);

    for (; unlikely(odd != 0); odd &= odd - 1) {
        unsigned int slot = (unsigned int)__builtin_ctzll(odd);

        if (!perfmon_pmcs[slot].pinned) {
            return false;
        }

        *flexible &= ~perfmon_slot_bit(slot);
        *fit &= ~(1ULL << cpu->pmcs[slot].hw_id);
    }

    if (perfmon_turn_share_below(max, &wait)
        || (!perfmon_turn_share_below(&wait, max) && lwait > lrun)) {
        *max = wait;
        lrun = lwait;
    }

    *last = (unsigned int)lrun;
    return true;
}

unsigned int perfmon_turn_select(struct perfmon_cpu *cpu, unsigned int d,
                                 uint64_t now, uint64_t flexible,
                                 uint64_t used, uint64_t *order,
                                 uint64_t *chosenp);

#endif /* KERN_PERFMON_TURN_H */
