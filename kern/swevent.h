/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Software events: counts of kernel activity (context switches, migrations,
 * interrupts, xcalls served and sent, NMIs, and a test event) that the software PMU
 * (drivers/pmu/soft.c) turns into perfmon counters.  SWEVENT_TEST is
 * reported by nothing but tests and benchmarks, which add to it at will.
 *
 * Kernel code reports an event with swevent_add(id, n), from any context,
 * NMI handlers included.  While no counter counts id anywhere, that costs
 * one load of a shared, read-mostly word and a predicted branch.
 * Otherwise the handler the software PMU installed runs with interrupts
 * disabled on the calling CPU and adds n to the counters of id running
 * there.
 *
 * Why a system-wide check rather than a per-CPU one: reading "the flag of
 * my CPU" takes two steps (cpu_id(), then the flag), and a thread moved to
 * another CPU between them would read the old CPU's flag and could miss a
 * count of its own event.  A count of active counters per id has no such
 * window: a thread's counter is started on its CPU before it runs there.
 */

#ifndef KERN_SWEVENT_H
#define KERN_SWEVENT_H

#include <stdbool.h>
#include <stdint.h>

#include "kern/assert.h"
#include "kern/macros.h"

/*
 * The software events.  These numbers are also the software PMU's raw
 * event codes (`perfmon list` shows them as rN, users may type them), so
 * they never change.  0 is no event.  SWEVENT_CLOCK, TSC cycles, is never
 * reported through swevent_add(): the software PMU reads the TSC itself.
 */
#define SWEVENT_CLOCK           1
#define SWEVENT_CONTEXT_SWITCH  2
#define SWEVENT_MIGRATION       3
#define SWEVENT_INTERRUPT       4
#define SWEVENT_XCALL           5
#define SWEVENT_NMI             6
#define SWEVENT_TEST            7
#define SWEVENT_XCALL_SENT      8
#define SWEVENT_NR              9

/*
 * Counters of each id running now, on all CPUs (atomic).  The context
 * switch's entry also counts the switch recordings
 * (kern/perfmon_switchrec.h): both watch the switch, one test serves them.
 */
extern unsigned int swevent_nr_active[SWEVENT_NR];

/* Slow path of swevent_add(): an id is counted somewhere. */
void swevent_count(unsigned int id, uint64_t n);

/* Whether anything counts id now: swevent_add()'s one test. */
static inline bool
swevent_watched(unsigned int id)
{
    return __atomic_load_n(&swevent_nr_active[id], __ATOMIC_RELAXED) != 0;
}

static inline void
swevent_add(unsigned int id, uint64_t n)
{
    if (likely(!swevent_watched(id))) {
        return;
    }

    swevent_count(id, n);
}

/*
 * The software PMU's side.  The handler runs with interrupts disabled on
 * the CPU where the events happened (maybe in NMI context).  A counter of
 * id running on a CPU must be announced with swevent_activate(id) before it
 * starts counting, and withdrawn with swevent_deactivate(id) after it
 * stops.  Any context but NMI for these two; the handler is set once, at
 * boot.
 */
typedef void (*swevent_handler_t)(unsigned int id, uint64_t n);

void swevent_set_handler(swevent_handler_t handler);

/*
 * Inline: the context switch's transfer of a software counter from one
 * event to another withdraws one and announces the other (swevent_move),
 * and a call each would cost it more than the atomic adds.
 */
static inline void
swevent_activate(unsigned int id)
{
    assert(id > SWEVENT_CLOCK && id < SWEVENT_NR);
    __atomic_fetch_add(&swevent_nr_active[id], 1, __ATOMIC_SEQ_CST);
}

static inline void
swevent_deactivate(unsigned int id)
{
    unsigned int prev;

    assert(id > SWEVENT_CLOCK && id < SWEVENT_NR);
    prev = __atomic_fetch_sub(&swevent_nr_active[id], 1, __ATOMIC_SEQ_CST);
    assert(prev != 0);
    (void)prev;
}

/*
 * A counter changes events: from withdrawn, to announced, either 0 for
 * none.  Both are ids the counter was set up with, checked then (from
 * was announced, to's counter is not counting yet): none is checked
 * again on this path, the switch's transfer.  64-bit: they index an
 * array with no extension first.
 */
static inline void
swevent_move(uint64_t from, uint64_t to)
{
    if (likely(from != 0)) {
        __atomic_fetch_sub(&swevent_nr_active[from], 1, __ATOMIC_SEQ_CST);
    }

    if (likely(to != 0)) {
        __atomic_fetch_add(&swevent_nr_active[to], 1, __ATOMIC_SEQ_CST);
    }
}

#endif /* KERN_SWEVENT_H */
