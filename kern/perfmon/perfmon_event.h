/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Events (perfmon_event.c), private to the core, for the layers above it
 * (inheritance and the public entry points of perfmon.c; see perfmon_i.h
 * for the order).  Thread context, on behalf of the event's owner.
 *
 * perfmon_event_attach_thread: attach event to thread, disabled, its
 *   counter slot taken; 0 or the errors of perfmon_event_attach().
 * perfmon_event_attach_end: the end of an attach: enable the event
 *   unless attached disabled.
 * perfmon_event_release: the reverse of the attach: disable the event if
 *   enabled, give its slot back.
 * perfmon_events_set_enabled: enable or disable the events of an array
 *   (not their families'); 0 or -EINVAL.
 * perfmon_event_read_counts: an event's own counts (its children's
 *   aside), up to date; the times only right with times.
 * perfmon_event_read_sync: the general read, on the thread's or the
 *   event's CPU, folding; counts += the event's since its start.
 * perfmon_event_read_counts_inline: perfmon_event_read_counts(), inline,
 *   for perfmon_event_read(), the read that runs most.
 */

#ifndef KERN_PERFMON_EVENT_H
#define KERN_PERFMON_EVENT_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/thread.h"

int perfmon_event_attach_thread(struct perfmon_event *event,
                                struct thread *thread);
void perfmon_event_attach_end(struct perfmon_event *event);
void perfmon_event_release(struct perfmon_event *event);
int perfmon_events_set_enabled(struct perfmon_event *const *events,
                               unsigned int nr, bool enable);
void perfmon_event_read_counts(struct perfmon_event *event, bool times,
                               struct perfmon_counts *counts);
void perfmon_event_read_sync(struct perfmon_event *event,
                             struct perfmon_counts *counts);

/*
 * The 64-bit value slot would have on this CPU if it were folded now,
 * computed without changing anything; correct while the counter has not
 * advanced a full period since its last fold.  Returns false once it is
 * more than 1/16 of a period (PERFMON_PEEK_SHIFT) past that fold: the
 * caller then folds instead.  A peek leaves prev where it was, so two
 * peeks in a row are only known to be in order when they are less than
 * 15/16 of a period apart (the folding read allowed a full period); the
 * poll interval and the overflow interrupt fold far more often than that.
 * prev and value are loaded after the device's read, so that fewer values
 * live across its call: a fold in between changes the generation, and
 * the caller reads again.
 */
static inline __attribute__((always_inline)) bool
perfmon_cpu_pmc_peek(const struct perfmon_cpu_pmc *pmc, uint64_t *valuep)
{
    uint64_t raw = perfmon_cpu_pmc_raw(pmc), delta;

    barrier();
    delta = (raw - pmc->prev) & pmc->mask;

    if (delta > (pmc->mask >> PERFMON_PEEK_SHIFT)) {
        return false;
    }

    *valuep = pmc->value + delta;
    return true;
}

/*
 * The current counts of slot on this CPU, as perfmon_cpu_pmc_counts()
 * would fold them at now (the times only with times), computed without
 * changing anything.  False when the counter needs a fold.
 */
static inline __attribute__((always_inline)) bool
perfmon_cpu_pmc_peek_counts(const struct perfmon_cpu *cpu, unsigned int slot,
                            bool times, struct perfmon_counts *counts)
{
    const struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    bool sched = READ_ONCE(cpu->sched_mask) & perfmon_slot_bit(slot);
    uint64_t dt;

    if (!sched) {
        counts->value = pmc->value;
    } else if (!perfmon_cpu_pmc_peek(pmc, &counts->value)) {
        return false;
    }

    if (times) {
        dt = cpu_rdtsc() - pmc->stamp;
        counts->enabled = pmc->enabled + dt;
        counts->running = pmc->running + (sched ? dt : 0);
    }

    return true;
}

/*
 * The current counts behind an enabled event whose counter runs on this
 * CPU: a CPU event of this CPU, or an event of the calling thread; the
 * times only with times.  Preemption disabled, interrupts enabled:
 * nothing is written, and the reads are retried when an interrupt or NMI
 * section changed the per-CPU state meanwhile (cpu->gen).  Returns false
 * when the event is a CPU event of another CPU, or its counter needs a
 * fold; the caller then takes the general path.  Inline, with nothing of
 * the general path around it: it is the read that runs most.
 */
static inline __attribute__((always_inline)) bool
perfmon_event_read_local(const struct perfmon_event *event, bool times,
                         struct perfmon_counts *counts)
{
    unsigned int cpu_index = cpu_id(), slot = event->slot;
    const struct perfmon_cpu *cpu = perfmon_cpu_get(cpu_index);
    const struct perfmon_td *td = NULL;
    unsigned long gen;

    if (event->state == PERFMON_EVENT_THREAD) {
        td = thread_get_perfmon_td(event->thread);

        /* Thread events need the switch hook, which loads them. */
        assert(td->loaded_mask & perfmon_slot_bit(slot));
    } else if (event->cpu != cpu_index) {
        return false;
    }

    do {
        gen = READ_ONCE(cpu->gen);
        barrier();

        if (!perfmon_cpu_pmc_peek_counts(cpu, slot, times, counts)) {
            return false;
        }

        /*
         * The times only when asked for: they were not read otherwise.  A
         * thread's follow its clock.
         */
        if (td != NULL) {
            perfmon_cpu_td_pmc_counts(td, slot, counts->value,
                                      times ? cpu_rdtsc() : 0, counts);
        }

        barrier();
    } while (READ_ONCE(cpu->gen) != gen);

    return true;
}

/* perfmon_event_read_counts(), inline (see the top). */
static inline __attribute__((always_inline)) void
perfmon_event_read_counts_inline(struct perfmon_event *event, bool times,
                                 struct perfmon_counts *counts)
{
    struct perfmon_counts now = { 0 };  /* gcc 12 loses track of times */

    *counts = event->total;

    if (!perfmon_event_enabled(event)) {
        return;
    }

    perfmon_assert_thread_context();

    /* The calling thread, or the CPU it runs on: no cross-CPU call. */
    if (event->state == PERFMON_EVENT_CPU || event->thread == thread_self()) {
        bool local;

        thread_preempt_disable();
        local = perfmon_event_read_local(event, times, &now);
        thread_preempt_enable();

        if (local) {
            counts->value += now.value - event->start.value;

            if (times) {
                counts->enabled += now.enabled - event->start.enabled;
                counts->running += now.running - event->start.running;
            }

            return;
        }
    }

    perfmon_event_read_sync(event, counts);
}

/*
 * The value of the slot's record on this CPU now (record_offset: the
 * event's, where it lies in cpu), and for a thread's event
 * (tpmc not NULL) the thread's count there, in *valuep; read again while a
 * section changed cpu meanwhile.  False when the counter needs the op or
 * a fold.  A record not counting here reads its own prev
 * (perfmon_cpu_pmc_set_idle), so its difference is 0 with no test of
 * sched_mask: one cache line read, nothing called.  The empty asm
 * statements keep the record's address and the sum in registers, computed
 * before and in the loop: otherwise the compiler recomputes the address in
 * the loop and keeps the terms of the sum apart, in registers it must
 * save.
 */
static inline __attribute__((always_inline)) bool
perfmon_cpu_pmc_read_fast(const struct perfmon_cpu *cpu,
                          unsigned long record_offset,
                          const struct perfmon_td_pmc *tpmc, uint64_t *valuep)
{
    const struct perfmon_cpu_pmc *pmc;
    uint64_t value, raw, delta;
    unsigned long gen;

    pmc = (const void *)((const char *)cpu + record_offset);
    __asm__("" : "+r"(pmc));

    do {
        gen = READ_ONCE(cpu->gen);
        barrier();

        /* The op is the slow read's: no call here. */
        if (!perfmon_cpu_pmc_raw_direct(pmc, &raw)) {
            return false;
        }

        barrier();
        delta = (raw - pmc->prev) & pmc->mask;

        if (unlikely(delta > pmc->peek_max)) {
            return false;
        }

        value = pmc->value + delta;

        if (tpmc != NULL) {
            value += tpmc->value;
        }

        __asm__("" : "+r"(value));
        barrier();
    } while (unlikely(READ_ONCE(cpu->gen) != gen));

    *valuep = value;
    return true;
}

/*
 * The count of an enabled event with no family whose counter runs on
 * this CPU (a CPU event of this CPU, an event of the calling thread), as
 * perfmon_event_read() returns it, in *valuep; false when the event is not
 * local or its counter needs the op or a fold (the caller takes the slow
 * read).  Thread context: its checks are the slow read's.  Nothing is
 * called and nothing written but the preemption count, so the compiler
 * saves no register for it: the read that runs most.  When a reschedule
 * is due at its end, it leaves preemption disabled and sets *resched_dep:
 * the caller enables it.
 */
static inline __attribute__((always_inline)) bool
perfmon_event_read_fast(const struct perfmon_event *event, uint64_t *valuep,
                        bool *resched_dep)
{
    unsigned long offset = event->record_offset;
    const struct perfmon_cpu *cpu;
    uint64_t value;

    thread_preempt_disable();
    cpu = perfmon_cpu_self();

    if (event->state == PERFMON_EVENT_CPU) {
        if (event->cpu != cpu_id()
            || !perfmon_cpu_pmc_read_fast(cpu, offset, NULL, &value)) {
            goto slow;
        }
    } else {
        const struct perfmon_td_pmc *tpmc = event->tpmc;

        /* Set with the slot at attach: the loop need not test it. */
        if (tpmc == NULL) {
            __builtin_unreachable();
        }

        if (event->thread != thread_self()
            || !perfmon_cpu_pmc_read_fast(cpu, offset, tpmc, &value)) {
            goto slow;
        }
    }

    /* A reschedule due: the slow read's preemption enable does it. */
    if (unlikely(!thread_preempt_enable_unless_resched())) {
        *resched_dep = true;
        return false;
    }

    *valuep = event->total.value + (value - event->start.value);
    return true;

slow:
    if (unlikely(!thread_preempt_enable_unless_resched())) {
        *resched_dep = true;
    }

    return false;
}

#endif /* KERN_PERFMON_EVENT_H */
