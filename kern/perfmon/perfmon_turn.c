/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: the selection of a multiplexing turn that
 * needs an order (groups among the slots, or counters that differ from
 * slot to slot).  A full placement takes the units of a device (a
 * group's active slots together, a slot alone otherwise) by share, the
 * smallest first, and gives each the counters it fits on; this works out
 * which units that runs, and in which order, on a copy of the counters in
 * use, for the scheduler (perfmon_sched.c) to move only what changes.
 *
 * Everything here runs on the CPU it is about, in a perfmon section.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_counters.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/perfmon/perfmon_turn.h"

/*
 * Whether unit would fit on the counters of device d not in used: the
 * test perfmon_sched_place() makes, on a copy of the counters in use,
 * which takes the counters it would give.
 */
static bool
perfmon_turn_fits(unsigned int d, uint64_t unit, uint64_t *used)
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
#define PERFMON_TURN_GROUP_KEYS    (2 * PERFMON_DEV_MAX_PMCS)

static uint64_t
perfmon_turn_units(struct perfmon_cpu *cpu, unsigned int base,
                   uint64_t slots, uint64_t now,
                   struct perfmon_turn_share *shares, uint64_t *units)
{
    uint64_t groups[PERFMON_TURN_GROUP_KEYS], reps = 0;
    uint8_t reps_of[PERFMON_TURN_GROUP_KEYS];
    uint32_t keyed = 0;

    _Static_assert(PERFMON_TURN_GROUP_KEYS <= 32, "keyed has a bit each");

    for (; slots != 0; slots &= slots - 1) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);
        uint64_t group = perfmon_pmcs[slot].group, bit = perfmon_slot_bit(slot);
        unsigned int k = (unsigned int)group % PERFMON_TURN_GROUP_KEYS, rep;

        perfmon_turn_share(cpu, slot, now, &shares[slot - base]);

        if (group == 0) {
            units[slot - base] = bit;
            reps |= bit;
            continue;
        }

        while ((keyed & (1U << k)) && groups[k] != group) {
            k = (k + 1) % PERFMON_TURN_GROUP_KEYS;
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
        if (perfmon_turn_share_below(&shares[slot - base],
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
perfmon_turn_before(const struct perfmon_turn_share *shares,
                    unsigned int base, unsigned int ra, unsigned int rb)
{
    const struct perfmon_turn_share *a = &shares[ra - base];
    const struct perfmon_turn_share *b = &shares[rb - base];

    return perfmon_turn_share_below(a, b)
           || (ra < rb && !perfmon_turn_share_below(b, a));
}

/*
 * The units of reps in the order the full placement takes them, the
 * smallest share first (ties: the lowest slot), into cdev->turn_order:
 * an insertion sort from the last turn's order (the representatives still
 * here, then the new ones), which shares change little between turns.
 */
static void
perfmon_turn_order(struct perfmon_cpu_dev *cdev, unsigned int base,
                   uint64_t reps, const struct perfmon_turn_share *shares)
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

        for (; j > 0 && perfmon_turn_before(shares, base, rep, order[j - 1]);
             j--) {
            order[j] = order[j - 1];
        }

        order[j] = rep;
    }

    cdev->nr_turn_order = n;
}

unsigned int
perfmon_turn_select(struct perfmon_cpu *cpu, unsigned int d, uint64_t now,
                    uint64_t flexible, uint64_t used, uint64_t *order,
                    uint64_t *chosenp)
{
    struct perfmon_cpu_dev *cdev = &cpu->devs[d];
    struct perfmon_turn_share shares[PERFMON_DEV_MAX_PMCS];
    uint64_t units[PERFMON_DEV_MAX_PMCS], chosen = 0;
    unsigned int base = d * PERFMON_DEV_MAX_PMCS, nr_order = 0;

    perfmon_turn_order(cdev, base,
                       perfmon_turn_units(cpu, base, flexible | cdev->waiting,
                                          now, shares, units),
                       shares);

    for (unsigned int i = 0; i < cdev->nr_turn_order; i++) {
        uint64_t unit = units[cdev->turn_order[i] - base];

        if (perfmon_turn_fits(d, unit, &used)) {
            chosen |= unit;
            order[nr_order++] = unit;
        }
    }

    *chosenp = chosen;
    return nr_order;
}
