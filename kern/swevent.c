/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Software events: the active-counter counts behind swevent_add()'s fast
 * path, and the dispatch of its slow path to the software PMU.
 */

#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/swevent.h"

unsigned int swevent_nr_active[SWEVENT_NR];

static swevent_handler_t swevent_handler;

void
swevent_count(unsigned int id, uint64_t n)
{
    swevent_handler_t handler;
    unsigned long flags;

    assert(id > SWEVENT_CLOCK && id < SWEVENT_NR);
    handler = __atomic_load_n(&swevent_handler, __ATOMIC_ACQUIRE);

    if (handler == NULL) {
        return;
    }

    /* From here on the thread cannot leave the CPU it counts on. */
    flags = cpu_intr_save();
    handler(id, n);
    cpu_intr_restore(flags);
}

void
swevent_set_handler(swevent_handler_t handler)
{
    __atomic_store_n(&swevent_handler, handler, __ATOMIC_RELEASE);
}
