/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: giving each of several slots a counter
 * it can count on, each its own (a bipartite matching, by augmenting
 * paths).  Pure functions over masks, at the bottom of the core: the
 * allocator asks whether a group fits, the scheduler places units, the
 * command asks before it starts.
 */

#include <stdbool.h>
#include <stdint.h>

#include "kern/assert.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_counters.h"

/*
 * Try to give slot a counter among masks[slot] not visited in this
 * search, preferred ones first, moving the slots that own them to
 * others (an augmenting path); owner[c] is 1 + the slot holding counter
 * c, 0 for none.  Depth at most the number of slots.
 */
static bool
perfmon_counters_augment(const uint64_t *masks, const uint64_t *prefer,
                      unsigned int slot, uint8_t *owner, uint64_t *visited)
{
    uint64_t tries[2] = { masks[slot] & prefer[slot],
                          masks[slot] & ~prefer[slot] };

    for (unsigned int k = 0; k < 2; k++) {
        for (uint64_t c = tries[k] & ~*visited; c != 0;
             c &= c - 1, c &= ~*visited) {
            unsigned int hw_id = (unsigned int)__builtin_ctzll(c);

            *visited |= 1ULL << hw_id;

            if (owner[hw_id] == 0
                || perfmon_counters_augment(masks, prefer, owner[hw_id] - 1U,
                                         owner, visited)) {
                owner[hw_id] = (uint8_t)(slot + 1);
                return true;
            }
        }
    }

    return false;
}

bool
perfmon_counters_assign(const uint64_t *masks, const uint64_t *prefer,
                        unsigned int n, unsigned int *hw_ids)
{
    uint8_t owner[64] = { 0 };

    assert(n <= 64);

    for (unsigned int slot = 0; slot < n; slot++) {
        uint64_t visited = 0;

        if (!perfmon_counters_augment(masks, prefer, slot, owner, &visited)) {
            return false;
        }
    }

    for (unsigned int hw_id = 0; hw_id < 64 && hw_ids != NULL; hw_id++) {
        if (owner[hw_id] != 0) {
            hw_ids[owner[hw_id] - 1] = hw_id;
        }
    }

    return true;
}

bool
perfmon_counters_fit(const uint64_t *masks, unsigned int n)
{
    uint64_t none[64] = { 0 };

    return n <= 64 && perfmon_counters_assign(masks, none, n, NULL);
}
