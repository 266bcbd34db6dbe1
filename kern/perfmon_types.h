/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring: the types other modules embed.  struct thread
 * embeds a struct perfmon_td, which thread creation clears with
 * perfmon_td_init() before the thread can run; everything else about it is
 * private to kern/perfmon/perfmon_td.c.
 */

#ifndef KERN_PERFMON_TYPES_H
#define KERN_PERFMON_TYPES_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Counter slots.  Each registered device owns PERFMON_DEV_MAX_PMCS
 * consecutive slots of a system-wide table of PERFMON_MAX_PMCS logical
 * counters; a slot index names the same counter on every CPU and in every
 * thread, which is what lets a monitored thread migrate freely.  A 64-bit
 * mask covers all the slots.
 */
#define PERFMON_MAX_DEVS        4
#define PERFMON_DEV_MAX_PMCS    16
#define PERFMON_MAX_PMCS        (PERFMON_MAX_DEVS * PERFMON_DEV_MAX_PMCS)

/*
 * What a counter counted, and the time behind it, in TSC cycles: enabled
 * while some event wanted it counting, running while it held a hardware
 * counter (less than enabled when events take turns on too few counters).
 */
struct perfmon_counts {
    uint64_t value;
    uint64_t enabled;
    uint64_t running;
};

/*
 * A thread's share of one counter slot.
 *
 * nr_refs counts the thread's enabled events on the slot.  Its counts are
 * kept as offsets while they grow, so that a context switch copies no
 * snapshot:
 * - value: while the slot is loaded (its bit in td->loaded_mask: the
 *   thread runs on a CPU and the slot has a user there), the count less
 *   the CPU's 64-bit value of the slot; the count itself otherwise.
 * - enabled: while the slot is active in the thread (nr_refs > 0), the
 *   enabled time less the thread's clock (td->clock); the time otherwise.
 * - running: while its bit is in td->run_mask, the running time less the
 *   thread's clock; the time otherwise.
 * The value then grows with the CPU's, on whatever CPUs the thread runs,
 * and the times with the thread's clock, which only runs while the thread
 * does.
 *
 * share_base is the counts when the slot last became active on the
 * thread: what it got since then decides its turns when its events wait
 * for a counter.
 *
 * For a sampling slot, while it is not loaded: the events left to the
 * thread's next sample, its period and the floor throttling put under it
 * (sample_period 0: none yet, the next load starts afresh).
 */
struct perfmon_td_pmc {
    uint64_t value;
    uint64_t enabled;
    uint64_t running;
    unsigned int nr_refs;
    struct perfmon_counts share_base;
    int64_t sample_left;
    uint64_t sample_period;
    uint64_t sample_min_period;
};

struct perfmon_member;

/*
 * Per-thread perfmon state.
 *
 * Access: only with interrupts disabled, on the CPU running the thread while
 * it is current there, or with the run queue that holds the thread locked
 * (thread_call() provides both; the context switch hook runs in the first
 * case).  This exclusion is the "thread perfmon state" level of the lock
 * order in kern/perfmon/perfmon_event.c; no lock of its own is needed.
 *
 * active_mask is the one word the context switch hook looks at: zero means
 * the thread has no event and load/unload do nothing else.
 *
 * clock is the thread's clock, which its slots' times follow: the TSC
 * cycles it ran with slots loaded, less its CPU's TSC while some are (the
 * clock at now is then clock + now).  run_mask: the active slots whose
 * running time follows the clock; while the thread is loaded, exactly its
 * slots holding a counter on its CPU; otherwise all its active slots, the
 * clock standing still meanwhile (so that a switch in that finds them all
 * holding a counter changes no mask).
 *
 * members lists the inherited events that count the thread (see
 * kern/perfmon/perfmon_inherit.c): what its children inherit when it creates
 * them.  It has its own lock, perfmon_family_lock.
 */
struct perfmon_td {
    uint64_t active_mask;               /* slots with nr_refs > 0 */
    uint64_t loaded_mask;               /* slots counting on cpu now */
    uint64_t run_mask;                  /* active slots running with clock */
    uint64_t clock;
    struct perfmon_member *members;
    struct perfmon_td_pmc pmcs[PERFMON_MAX_PMCS];
};

/* Clear a thread's perfmon state (thread creation, before it runs). */
void perfmon_td_init(struct perfmon_td *td);

#endif /* KERN_PERFMON_TYPES_H */
