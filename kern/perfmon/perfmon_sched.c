/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: which slot holds which hardware counter on
 * each CPU, and multiplexing.
 *
 * A pinned slot has its counter on every CPU (reserved when the slot was
 * made).  A flexible slot gets one when it becomes active on a CPU, if one
 * of the counters that can count it is free there: then it runs as if
 * nothing else existed, and costs nothing more.  When none is free it
 * waits, and the CPU has turns to take: every perfmon.mux_ms (the clock
 * tick calls perfmon_sched_rotate), and whenever a thread with slots
 * waiting is switched in, the flexible slots holding counters give them
 * up and all are placed again, those that so far ran the smallest share
 * of their enabled time first (perfmon_sched_share: the loaded thread's
 * share for its slots, which follows it across switches and migrations,
 * the CPU's for the others).  So N slots over K counters each run about
 * K/N of the time, however often their thread moves.  Every slot's times
 * say what it got: enabled while active, running while it held a counter
 * (perfmon_cpu.c).
 *
 * A group's slots active on a CPU (a unit) are placed all together or not
 * at all, and leave together; a unit's share is its first slot's.  Each
 * member takes a free counter it can use, a preferred one first (a fixed
 * counter); a unit that does not fit is passed over for the next.
 *
 * Everything here runs on the CPU it is about, in a perfmon section
 * (perfmon_cpu_enter: interrupts disabled, the busy flag set against the
 * overflow NMI), with the section's TSC time now.  perfmon_mux_cpus is the
 * only state other CPUs read: the tick hook's one test.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/clock.h"
#include "kern/cmdline.h"
#include "kern/error.h"
#include "kern/log.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_control.h"
#include "kern/perfmon/perfmon_counters.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/perfmon/perfmon_sched.h"
#include "kern/xcall.h"

/* The longest multiplexing interval perfmon.mux_ms takes. */
#define PERFMON_MUX_MS_MAX          1000

uint64_t perfmon_mux_cpus;

#ifdef TALLY_HOST_TEST
/*
 * Every turn places everything again (perfmon_sched_replace), as turns did
 * before they moved only what changes: the host test's reference.
 */
bool perfmon_sched_full_turns;
#endif

/* Clock ticks between two rotations (perfmon.mux_ms), set at boot. */
static unsigned int perfmon_mux_ticks;

static struct perfmon_cpu_dev *
perfmon_sched_dev(struct perfmon_cpu *cpu, unsigned int slot)
{
    return &cpu->devs[slot / PERFMON_DEV_MAX_PMCS];
}

/* Whether any device of cpu has slots waiting; says so to the tick. */
static void
perfmon_sched_update_mux(struct perfmon_cpu *cpu, unsigned int cpu_index)
{
    uint64_t bit = 1ULL << cpu_index;
    bool waiting = false;

    for (unsigned int d = 0; d < PERFMON_MAX_DEVS; d++) {
        waiting |= (cpu->devs[d].waiting != 0);
    }

    if (waiting && !(READ_ONCE(perfmon_mux_cpus) & bit)) {
        __atomic_fetch_or(&perfmon_mux_cpus, bit, __ATOMIC_RELAXED);
    } else if (!waiting && (READ_ONCE(perfmon_mux_cpus) & bit)) {
        __atomic_fetch_and(&perfmon_mux_cpus, ~bit, __ATOMIC_RELAXED);
    }
}

/* The active slots of slot's group on this CPU (slot alone: no group). */
static uint64_t
perfmon_sched_unit(const struct perfmon_cpu *cpu, unsigned int slot)
{
    uint64_t group = perfmon_pmcs[slot].group, slots, unit = 0;

    if (group == 0) {
        return perfmon_slot_bit(slot);
    }

    slots = cpu->active_mask & perfmon_dev_slots(perfmon_slot_dev(slot));

    while (slots != 0) {
        unsigned int s = (unsigned int)__builtin_ctzll(slots);

        slots &= slots - 1;

        if (perfmon_pmcs[s].group == group) {
            unit |= perfmon_slot_bit(s);
        }
    }

    return unit;
}

/*
 * A free counter for a flexible slot on this CPU: one it can count on,
 * neither reserved nor used here (nor taken, the other members of a
 * unit being placed), a preferred one first.  64: none.
 */
static unsigned int
perfmon_sched_pick(const struct perfmon_cpu_dev *cdev, unsigned int dev_index,
                   unsigned int slot, uint64_t taken)
{
    const struct perfmon_pmc *pmc = &perfmon_pmcs[slot];
    uint64_t free = pmc->counters & ~READ_ONCE(perfmon_dev_reserved[dev_index])
                    & ~cdev->hw_used & ~taken;

    if (free == 0) {
        return 64;
    }

    if (free & pmc->prefer) {
        free &= pmc->prefer;
    }

    return (unsigned int)__builtin_ctzll(free);
}

/*
 * Give every slot of unit (flexible, not running here) a counter, or none
 * of them: true when the unit runs.
 */
static bool
perfmon_sched_place(struct perfmon_cpu *cpu, uint64_t unit, uint64_t now)
{
    unsigned int first = (unsigned int)__builtin_ctzll(unit);
    unsigned int d = first / PERFMON_DEV_MAX_PMCS;
    struct perfmon_cpu_dev *cdev = &cpu->devs[d];
    uint64_t masks[PERFMON_DEV_MAX_PMCS], prefer[PERFMON_DEV_MAX_PMCS];
    unsigned int hw_ids[PERFMON_DEV_MAX_PMCS];
    uint64_t slots = unit;
    unsigned int n = 0;

    /* One slot, the common case (every context switch): no bookkeeping. */
    if ((unit & (unit - 1)) == 0) {
        unsigned int hw_id = perfmon_sched_pick(cdev, d, first, 0);

        if (hw_id >= 64) {
            return false;
        }

        perfmon_cpu_pmc_start(cpu, first, hw_id, now);
        cdev->hw_used |= 1ULL << hw_id;
        cdev->waiting &= ~unit;
        return true;
    }

    /*
     * Several slots: a matching of slots to free counters, so that a
     * member that can use few counters is not crowded out by one that
     * could have used others.
     */
    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);
        const struct perfmon_pmc *pmc = &perfmon_pmcs[slot];

        slots &= slots - 1;
        masks[n] = pmc->counters & ~READ_ONCE(perfmon_dev_reserved[d])
                   & ~cdev->hw_used;
        prefer[n++] = pmc->prefer;
    }

    if (!perfmon_counters_assign(masks, prefer, n, hw_ids)) {
        return false;
    }

    n = 0;

    for (slots = unit; slots != 0; slots &= slots - 1) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        perfmon_cpu_pmc_start(cpu, slot, hw_ids[n], now);
        cdev->hw_used |= 1ULL << hw_ids[n];
        n++;
    }

    cdev->waiting &= ~unit;
    return true;
}

/*
 * Take their counters from the slots of unit that run here; folded: their
 * counts were just taken at now (a slot's last user leaving).
 */
static void
perfmon_sched_remove(struct perfmon_cpu *cpu, uint64_t unit, uint64_t now,
                     bool folded)
{
    unit &= cpu->sched_mask;

    while (unit != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(unit);

        unit &= unit - 1;
        perfmon_sched_dev(cpu, slot)->hw_used
            &= ~(1ULL << cpu->pmcs[slot].hw_id);
        perfmon_cpu_pmc_stop(cpu, slot, now, folded);
    }
}

/*
 * The share of its enabled time a slot ran, as the two times: running
 * over enabled, compared by cross products (no division).  No enabled
 * time counts as a share of 0 (0 over 1).
 */
struct perfmon_sched_share {
    uint64_t running;
    uint64_t enabled;
};

/*
 * Slot's share until now: the loaded thread's, for its slots; the CPU's
 * otherwise.  Inline: a turn takes one for every slot.
 */
static inline __attribute__((always_inline)) void
perfmon_sched_share(struct perfmon_cpu *cpu, unsigned int slot, uint64_t now,
                    struct perfmon_sched_share *share)
{
    const struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    const struct perfmon_td *td = cpu->td;
    uint64_t enabled, running;

    perfmon_cpu_pmc_clock(cpu, slot, now);
    enabled = pmc->enabled - pmc->share_enabled;
    running = pmc->running - pmc->share_running;

    if (td != NULL && (td->loaded_mask & perfmon_slot_bit(slot))) {
        const struct perfmon_counts *base = &td->pmcs[slot].share_base;
        struct perfmon_counts counts;

        perfmon_cpu_td_pmc_counts(td, slot, 0, now, &counts);
        enabled = counts.enabled - base->enabled;
        running = counts.running - base->running;
    }

    share->running = (enabled == 0) ? 0 : running;
    share->enabled = (enabled == 0) ? 1 : enabled;
}

/* Whether share a is below share b: a.running * b.enabled < the other. */
static inline bool
perfmon_sched_share_below(const struct perfmon_sched_share *a,
                          const struct perfmon_sched_share *b)
{
    return (unsigned __int128)a->running * b->enabled
           < (unsigned __int128)b->running * a->enabled;
}

/*
 * Place the waiting units of device d that fit, those that ran the
 * smallest share of their time first (ties: the lowest slot); those that
 * do not fit keep waiting.
 */
static void
perfmon_sched_fill(struct perfmon_cpu *cpu, unsigned int d, uint64_t now)
{
    struct perfmon_cpu_dev *cdev = &cpu->devs[d];
    struct perfmon_sched_share shares[PERFMON_DEV_MAX_PMCS];
    unsigned int base = d * PERFMON_DEV_MAX_PMCS;
    uint64_t left = cdev->waiting;

    /* Each share once: placing a unit changes no other's. */
    for (uint64_t slots = left; slots != 0; slots &= slots - 1) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        perfmon_sched_share(cpu, slot, now, &shares[slot - base]);
    }

    while (left != 0) {
        unsigned int best = (unsigned int)__builtin_ctzll(left);
        uint64_t unit;

        for (uint64_t slots = left & (left - 1); slots != 0;
             slots &= slots - 1) {
            unsigned int slot = (unsigned int)__builtin_ctzll(slots);

            if (perfmon_sched_share_below(&shares[slot - base],
                                          &shares[best - base])) {
                best = slot;
            }
        }

        unit = perfmon_sched_unit(cpu, best);
        left &= ~unit;
        perfmon_sched_place(cpu, unit, now);
    }
}

/*
 * Everything on device d takes turns again, all at once: the flexible
 * slots holding counters give them up, then all are placed by share.
 */
static void
perfmon_sched_replace(struct perfmon_cpu *cpu, unsigned int d, uint64_t now,
                      uint64_t flexible)
{
    struct perfmon_cpu_dev *cdev = &cpu->devs[d];

    perfmon_sched_remove(cpu, flexible, now, false);
    cdev->waiting |= flexible;
    perfmon_sched_fill(cpu, d, now);
}

/*
 * Whether unit would fit on the counters of device d not in used: the
 * test perfmon_sched_place() makes, on a copy of the counters in use,
 * which takes the counters it would give.
 */
static bool
perfmon_sched_fits(unsigned int d, uint64_t unit, uint64_t *used)
{
    uint64_t masks[PERFMON_DEV_MAX_PMCS], prefer[PERFMON_DEV_MAX_PMCS];
    unsigned int hw_ids[PERFMON_DEV_MAX_PMCS], n = 0;
    uint64_t reserved = READ_ONCE(perfmon_dev_reserved[d]);

    for (uint64_t slots = unit; slots != 0; slots &= slots - 1) {
        const struct perfmon_pmc *pmc =
            &perfmon_pmcs[__builtin_ctzll(slots)];
        uint64_t free = pmc->counters & ~reserved & ~*used;

        /* One slot: the counter perfmon_sched_pick() would give. */
        if ((unit & (unit - 1)) == 0) {
            if (free == 0) {
                return false;
            }

            free = (free & pmc->prefer) ? (free & pmc->prefer) : free;
            *used |= free & -free;
            return true;
        }

        masks[n] = free;
        prefer[n++] = pmc->prefer;
    }

    if (!perfmon_counters_assign(masks, prefer, n, hw_ids)) {
        return false;
    }

    for (unsigned int i = 0; i < n; i++) {
        *used |= 1ULL << hw_ids[i];
    }

    return true;
}

/*
 * The units of a turn on device d, each computed once: for each unit
 * among slots (the active flexible slots: a group's active members are
 * all among them, flexible as its leader), the slot of it with the
 * smallest share (ties: the lowest), its representative, gets the unit
 * in units[] and its bit in the mask returned.  The unit's share is its
 * representative's, which shares[] holds.  The groups met are found by a
 * table keyed by the id's low bits (ids are handed out in sequence), so
 * one pass over the slots does.
 */
#define PERFMON_SCHED_GROUP_KEYS    (2 * PERFMON_DEV_MAX_PMCS)

static uint64_t
perfmon_sched_units(struct perfmon_cpu *cpu, unsigned int base,
                    uint64_t slots, uint64_t now,
                    struct perfmon_sched_share *shares, uint64_t *units)
{
    uint64_t groups[PERFMON_SCHED_GROUP_KEYS], reps = 0;
    uint8_t reps_of[PERFMON_SCHED_GROUP_KEYS];
    uint32_t keyed = 0;

    _Static_assert(PERFMON_SCHED_GROUP_KEYS <= 32, "keyed has a bit each");

    for (; slots != 0; slots &= slots - 1) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);
        uint64_t group = perfmon_pmcs[slot].group, bit = perfmon_slot_bit(slot);
        unsigned int k = (unsigned int)group % PERFMON_SCHED_GROUP_KEYS, rep;

        perfmon_sched_share(cpu, slot, now, &shares[slot - base]);

        if (group == 0) {
            units[slot - base] = bit;
            reps |= bit;
            continue;
        }

        while ((keyed & (1U << k)) && groups[k] != group) {
            k = (k + 1) % PERFMON_SCHED_GROUP_KEYS;
        }

        /* The first member met: a unit of its own so far. */
        if (!(keyed & (1U << k))) {
            keyed |= 1U << k;
            groups[k] = group;
            reps_of[k] = (uint8_t)slot;
            units[slot - base] = bit;
            reps |= bit;
            continue;
        }

        rep = reps_of[k];
        units[rep - base] |= bit;

        /* Slots come in order: a later one represents only if below. */
        if (perfmon_sched_share_below(&shares[slot - base],
                                      &shares[rep - base])) {
            units[slot - base] = units[rep - base];
            reps ^= perfmon_slot_bit(rep) | bit;
            reps_of[k] = (uint8_t)slot;
        }
    }

    return reps;
}

/* Whether a unit of share a, representative slot ra, goes before b's. */
static inline bool
perfmon_sched_before(const struct perfmon_sched_share *shares,
                     unsigned int base, unsigned int ra, unsigned int rb)
{
    const struct perfmon_sched_share *a = &shares[ra - base];
    const struct perfmon_sched_share *b = &shares[rb - base];

    return perfmon_sched_share_below(a, b)
           || (ra < rb && !perfmon_sched_share_below(b, a));
}

/*
 * The units of reps in the order the full placement takes them, the
 * smallest share first (ties: the lowest slot), into cdev->turn_order:
 * an insertion sort from the last turn's order (the representatives still
 * here, then the new ones), which shares change little between turns.
 */
static void
perfmon_sched_order(struct perfmon_cpu_dev *cdev, unsigned int base,
                    uint64_t reps, const struct perfmon_sched_share *shares)
{
    uint8_t *order = cdev->turn_order;
    uint64_t rest = reps;
    unsigned int n = 0;

    for (unsigned int i = 0; i < cdev->nr_turn_order; i++) {
        uint64_t bit = perfmon_slot_bit(order[i]);

        if (rest & bit) {
            rest &= ~bit;
            order[n++] = order[i];
        }
    }

    for (; rest != 0; rest &= rest - 1) {
        order[n++] = (uint8_t)__builtin_ctzll(rest);
    }

    for (unsigned int i = 1; i < n; i++) {
        uint8_t rep = order[i];
        unsigned int j = i;

        for (; j > 0 && perfmon_sched_before(shares, base, rep, order[j - 1]);
             j--) {
            order[j] = order[j - 1];
        }

        order[j] = rep;
    }

    cdev->nr_turn_order = n;
}

/*
 * A turn on device d.  First the units a full placement by share would
 * run (perfmon_sched_replace: the flexible units running here and those
 * waiting, the smallest share first, each where it fits), computed on a
 * copy of the counters in use; then only what changes moves: the units
 * leaving stop, those arriving start on the counters freed, those
 * staying keep theirs, counting on.  Should an arrival not fit where the
 * stayers left room (counters cut up among groups), the turn places
 * everything again.
 */
static void
perfmon_sched_rebalance(struct perfmon_cpu *cpu, unsigned int d,
                        uint64_t now)
{
    struct perfmon_cpu_dev *cdev = &cpu->devs[d];
    uint64_t dev_slots = PERFMON_DEV_SLOT_MASK << (d * PERFMON_DEV_MAX_PMCS);
    uint64_t running = cpu->sched_mask & dev_slots, flexible = 0;
    struct perfmon_sched_share shares[PERFMON_DEV_MAX_PMCS];
    uint64_t units[PERFMON_DEV_MAX_PMCS], order[PERFMON_DEV_MAX_PMCS];
    uint64_t chosen = 0, used, arriving;
    unsigned int base = d * PERFMON_DEV_MAX_PMCS, nr_order = 0;

    used = cdev->hw_used;

    for (; running != 0; running &= running - 1) {
        unsigned int slot = (unsigned int)__builtin_ctzll(running);

        if (!perfmon_pmcs[slot].pinned) {
            flexible |= perfmon_slot_bit(slot);
            used &= ~(1ULL << cpu->pmcs[slot].hw_id);
        }
    }

#ifdef TALLY_HOST_TEST
    if (perfmon_sched_full_turns) {
        perfmon_sched_replace(cpu, d, now, flexible);
        return;
    }
#endif

    perfmon_sched_order(cdev, base,
                        perfmon_sched_units(cpu, base,
                                            flexible | cdev->waiting, now,
                                            shares, units),
                        shares);

    /* The selection, in the order the full placement takes the units. */
    for (unsigned int i = 0; i < cdev->nr_turn_order; i++) {
        uint64_t unit = units[cdev->turn_order[i] - base];

        if (perfmon_sched_fits(d, unit, &used)) {
            chosen |= unit;
            order[nr_order++] = unit;
        }
    }

    /* Those leaving give their counters up; those arriving take them. */
    perfmon_sched_remove(cpu, flexible & ~chosen, now, false);
    cdev->waiting |= flexible & ~chosen;
    arriving = chosen & ~flexible;

    for (unsigned int i = 0; i < nr_order && arriving != 0; i++) {
        if (!(order[i] & arriving)) {
            continue;
        }

        arriving &= ~order[i];

        if (!perfmon_sched_place(cpu, order[i], now)) {
            perfmon_sched_replace(cpu, d, now, cpu->sched_mask & chosen);
            return;
        }
    }
}

/*
 * A pinned slot became active: it takes its own counter, and every other
 * its alloc took (a pair's odd one), from the flexible slots holding them,
 * if any (placed there before the pinned event reserved them; flexible
 * slots never pick a reserved counter after).  Those units take free
 * counters if there are any, or wait for their turn.  Out of line: pinned
 * events are rare, and inlined this would cost every flexible slot's
 * switch-in registers to save.
 */
static void __attribute__((noinline))
perfmon_sched_in_pinned(struct perfmon_cpu *cpu, unsigned int slot,
                        uint64_t now)
{
    struct perfmon_cpu_dev *cdev = perfmon_sched_dev(cpu, slot);
    unsigned int hw_id = perfmon_pmcs[slot].hw_id;
    uint64_t taken = perfmon_pmcs[slot].taken;
    uint64_t users;

    if (cdev->hw_used & taken) {
        users = cpu->sched_mask & perfmon_dev_slots(perfmon_slot_dev(slot));

        while (users != 0) {
            unsigned int s = (unsigned int)__builtin_ctzll(users);

            users &= users - 1;

            if (taken & (1ULL << cpu->pmcs[s].hw_id)) {
                uint64_t unit = perfmon_sched_unit(cpu, s);

                assert(!perfmon_pmcs[s].pinned);
                perfmon_sched_remove(cpu, unit, now, false);
                cdev->waiting |= unit;
                users &= ~unit;
            }
        }
    }

    assert(!(cdev->hw_used & taken));
    perfmon_cpu_pmc_start(cpu, slot, hw_id, now);
    cdev->hw_used |= 1ULL << hw_id;

    /* The unit moved off may run on another counter at once. */
    if (cdev->waiting != 0) {
        perfmon_sched_fill(cpu, slot / PERFMON_DEV_MAX_PMCS, now);
    }
}

static void
perfmon_sched_in(struct perfmon_cpu *cpu, unsigned int slot, uint64_t now)
{
    struct perfmon_cpu_dev *cdev = perfmon_sched_dev(cpu, slot);
    uint64_t unit, bit = perfmon_slot_bit(slot);
    bool waited = (cdev->waiting != 0);

    assert(cpu->active_mask & bit);
    assert(!(cpu->sched_mask & bit));

    if (perfmon_pmcs[slot].pinned) {
        perfmon_sched_in_pinned(cpu, slot, now);
    } else if (perfmon_pmcs[slot].group == 0) {
        /* Alone: a free counter, or it waits. */
        if (!perfmon_sched_place(cpu, bit, now)) {
            cdev->waiting |= bit;
        }
    } else {
        /* Its group runs: it joins, or the group waits with it. */
        unit = perfmon_sched_unit(cpu, slot);

        if (unit & cpu->sched_mask) {
            if (!perfmon_sched_place(cpu, bit, now)) {
                perfmon_sched_remove(cpu, unit, now, false);
                cdev->waiting |= unit;
            }
        } else if (!(unit & cdev->waiting & ~bit)) {
            if (!perfmon_sched_place(cpu, bit, now)) {
                cdev->waiting |= bit;
            }
        } else {
            cdev->waiting |= bit;
        }
    }

    /* The tick's bit only changes when waiting starts or ends. */
    if (waited != (cdev->waiting != 0)) {
        perfmon_sched_update_mux(cpu, cpu_id());
    }
}

static void
perfmon_sched_out(struct perfmon_cpu *cpu, unsigned int slot, uint64_t now)
{
    struct perfmon_cpu_dev *cdev = perfmon_sched_dev(cpu, slot);
    uint64_t bit = perfmon_slot_bit(slot);
    bool waited = (cdev->waiting != 0);

    assert(!(cpu->active_mask & bit));
    cdev->waiting &= ~bit;

    /* Its last user took its counts at now: no fold again. */
    if (cpu->sched_mask & bit) {
        perfmon_sched_remove(cpu, bit, now, true);
    }

    /* A counter came free: those waiting may have it. */
    if (cdev->waiting != 0) {
        perfmon_sched_fill(cpu, slot / PERFMON_DEV_MAX_PMCS, now);
    }

    if (waited != (cdev->waiting != 0)) {
        perfmon_sched_update_mux(cpu, cpu_id());
    }
}

void
perfmon_sched_rotate(struct perfmon_cpu *cpu, uint64_t now)
{
    for (unsigned int d = 0; d < PERFMON_MAX_DEVS; d++) {
        if (cpu->devs[d].waiting != 0) {
            perfmon_sched_rebalance(cpu, d, now);
            syscnt_inc(&cpu->nr_rotations);
        }
    }

    cpu->mux_ticks = 0;
    perfmon_sched_update_mux(cpu, cpu_id());
}

void
perfmon_tick_slow(void)
{
    struct perfmon_cpu *cpu = perfmon_cpu_get(cpu_id());

    assert(!cpu_intr_enabled());

    if (++cpu->mux_ticks < perfmon_mux_ticks) {
        return;
    }

    cpu = perfmon_cpu_enter();
    perfmon_sched_rotate(cpu, cpu->now);
    perfmon_cpu_leave(cpu);
}

void
perfmon_rotate_local(void)
{
    unsigned long flags = cpu_intr_save();
    struct perfmon_cpu *cpu = perfmon_cpu_enter();

    perfmon_sched_rotate(cpu, cpu->now);
    perfmon_cpu_leave(cpu);
    cpu_intr_restore(flags);
}

unsigned int
perfmon_rotate_local_moved(void)
{
    unsigned long flags = cpu_intr_save();
    struct perfmon_cpu *cpu = perfmon_cpu_enter();
    unsigned int hw_ids[PERFMON_MAX_PMCS], moved;
    uint64_t before = cpu->sched_mask, changed, kept;

    for (unsigned int i = 0; i < PERFMON_MAX_PMCS; i++) {
        hw_ids[i] = cpu->pmcs[i].hw_id;
    }

    perfmon_sched_rotate(cpu, cpu->now);
    changed = before ^ cpu->sched_mask;
    kept = before & cpu->sched_mask;
    moved = 0;

    /* No popcount: the kernel is built for any x86-64, without libgcc. */
    for (; changed != 0; changed &= changed - 1) {
        moved++;
    }

    while (kept != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(kept);

        kept &= kept - 1;
        moved += cpu->pmcs[slot].hw_id != hw_ids[slot];
    }

    perfmon_cpu_leave(cpu);
    cpu_intr_restore(flags);
    return moved;
}

/* ---- users of a slot ------------------------------------------------------- */

/* Slot's first user here: it becomes active, its share counted from now. */
static void
perfmon_sched_activate(struct perfmon_cpu *cpu, unsigned int slot,
                       const struct perfmon_td_pmc *saved, uint64_t now)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];

    assert(perfmon_pmcs[slot].nr_refs != 0);
    perfmon_cpu_pmc_clock(cpu, slot, now);
    pmc->nr_refs = 1;
    pmc->share_enabled = pmc->enabled;
    pmc->share_running = pmc->running;

    if (perfmon_pmcs[slot].sampling != NULL) {
        perfmon_cpu_pmc_sample_init(cpu, slot, saved);
    }

    WRITE_ONCE(cpu->active_mask, cpu->active_mask | perfmon_slot_bit(slot));
}

/*
 * One more user of slot on this CPU; saved: the thread's sampling
 * progress, when a thread loads a sampling slot.  The first makes it
 * active here, and the scheduler gives it a counter if it can.  Returns
 * the slot's value here, folded: as it is after an activation.
 */
uint64_t
perfmon_sched_ref_value(struct perfmon_cpu *cpu, unsigned int slot,
                        const struct perfmon_td_pmc *saved, uint64_t now)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];

    if (pmc->nr_refs != 0) {
        pmc->nr_refs++;
        return perfmon_cpu_pmc_value(cpu, slot);
    }

    perfmon_sched_activate(cpu, slot, saved, now);
    perfmon_sched_in(cpu, slot, now);
    return pmc->value;
}

/* The same, for a CPU event: the slot's counts here at now. */
void
perfmon_sched_ref_counts(struct perfmon_cpu *cpu, unsigned int slot,
                         const struct perfmon_td_pmc *saved, uint64_t now,
                         struct perfmon_counts *counts)
{
    const struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];

    counts->value = perfmon_sched_ref_value(cpu, slot, saved, now);
    perfmon_cpu_pmc_clock(cpu, slot, now);
    counts->enabled = pmc->enabled;
    counts->running = pmc->running;
}

/*
 * Drop a user of slot on this CPU; the caller folded its value at now.
 * The last one stops its times and gives its counter back, to a slot
 * waiting for one.
 */
void
perfmon_sched_unref(struct perfmon_cpu *cpu, unsigned int slot,
                    uint64_t now)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    uint64_t bit = perfmon_slot_bit(slot);

    assert(pmc->nr_refs != 0);

    if (pmc->nr_refs == 1) {
        perfmon_cpu_pmc_clock(cpu, slot, now);
    }

    if (--pmc->nr_refs == 0) {
        WRITE_ONCE(cpu->active_mask, cpu->active_mask & ~bit);
        perfmon_sched_out(cpu, slot, now);
    }
}

/*
 * Whether slot, counting alone, may take over counter hw_id of its device
 * here as placing it would: hw_id counts it, is not reserved, and no
 * preferred counter is free besides.
 */
static bool
perfmon_sched_may_take(const struct perfmon_cpu_dev *cdev, unsigned int d,
                       unsigned int slot, unsigned int hw_id)
{
    const struct perfmon_pmc *gpmc = &perfmon_pmcs[slot];
    uint64_t hw = 1ULL << hw_id, reserved = READ_ONCE(perfmon_dev_reserved[d]);

    return !gpmc->pinned && gpmc->group == 0 && gpmc->sampling == NULL
           && (gpmc->counters & ~reserved & hw)
           && (!(gpmc->prefer & ~reserved & ~cdev->hw_used)
               || (gpmc->prefer & hw));
}

/*
 * Slot out's last user here leaves (its value folded at now) while one of
 * the slots of candidates (active nowhere here) gets its first: when out
 * counts alone on a flexible counter of a device that can transfer, and
 * no slot of the device waits for a counter (it would have it first),
 * the first candidate that may take the counter gets it in place, with
 * nothing stopped or started.  Returns that slot, or PERFMON_MAX_PMCS
 * when the caller must unref out and ref the candidates itself.
 */
unsigned int
perfmon_sched_transfer(struct perfmon_cpu *cpu, unsigned int out,
                       uint64_t candidates, uint64_t now)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[out];
    unsigned int d = out / PERFMON_DEV_MAX_PMCS;
    struct perfmon_cpu_dev *cdev = &cpu->devs[d];

    candidates &= ~cpu->active_mask;

    if (pmc->nr_refs != 1 || !(cpu->sched_mask & perfmon_slot_bit(out))
        || cdev->waiting != 0 || pmc->dev->ops->transfer == NULL
        || !perfmon_sched_may_take(cdev, d, out, pmc->hw_id)) {
        return PERFMON_MAX_PMCS;
    }

    candidates &= perfmon_dev_slots(pmc->dev);

    while (candidates != 0) {
        unsigned int in = (unsigned int)__builtin_ctzll(candidates);

        candidates &= candidates - 1;

        if (perfmon_sched_may_take(cdev, d, in, pmc->hw_id)) {
            perfmon_cpu_pmc_clock(cpu, out, now);
            pmc->nr_refs = 0;
            WRITE_ONCE(cpu->active_mask,
                       cpu->active_mask & ~perfmon_slot_bit(out));
            perfmon_sched_activate(cpu, in, NULL, now);
            perfmon_cpu_pmc_transfer(cpu, out, in);
            return in;
        }
    }

    return PERFMON_MAX_PMCS;
}

/* ---- reserving a counter ---------------------------------------------------- */

/* Move the flexible slots of dev off the counters reserved since placed. */
static void
perfmon_sched_evict_xcall(void *arg)
{
    const struct perfmon_dev *dev = arg;
    struct perfmon_cpu *cpu = perfmon_cpu_enter();
    struct perfmon_cpu_dev *cdev = &cpu->devs[dev->index];
    uint64_t reserved = READ_ONCE(perfmon_dev_reserved[dev->index]);
    uint64_t slots = cpu->sched_mask & perfmon_dev_slots(dev);

    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        slots &= slots - 1;

        if (!perfmon_pmcs[slot].pinned
            && (reserved & (1ULL << cpu->pmcs[slot].hw_id))) {
            uint64_t unit = perfmon_sched_unit(cpu, slot);

            perfmon_sched_remove(cpu, unit, cpu->now, false);
            cdev->waiting |= unit;
            slots &= ~unit;
        }
    }

    if (cdev->waiting != 0) {
        perfmon_sched_fill(cpu, dev->index, cpu->now);
    }

    perfmon_sched_update_mux(cpu, cpu_id());
    perfmon_cpu_leave(cpu);
}

void
perfmon_sched_evict_all(struct perfmon_dev *dev)
{
    unsigned int nr = cpu_count();
    uint64_t all = (nr >= 64) ? UINT64_MAX : (1ULL << nr) - 1;
    int error;

    perfmon_assert_thread_context();
    error = xcall_call_many(perfmon_sched_evict_xcall, dev, all);
    assert(error == 0);
}

/* ---- setup -------------------------------------------------------------------- */

void
perfmon_sched_setup(void)
{
    uint64_t ms;
    int error = cmdline_get_u64("perfmon.mux_ms", &ms);

    if (error != 0 || ms < 1 || ms > PERFMON_MUX_MS_MAX) {
        if (error != -ENOENT) {
            log_warning("perfmon: perfmon.mux_ms must be 1..%u, using %u",
                        PERFMON_MUX_MS_MAX, PERFMON_MUX_MS_DEFAULT);
        }

        ms = PERFMON_MUX_MS_DEFAULT;
    }

    perfmon_mux_ticks = MAX((unsigned int)clock_ticks_from_ms(ms), 1U);
}

#ifdef TALLY_HOST_TEST
void
perfmon_sched_reset(void)
{
    perfmon_mux_cpus = 0;
    perfmon_sched_full_turns = false;
}
#endif
