/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: events, attached to a thread or a CPU,
 * enabled and disabled, read.  The counter state under them is in the
 * files below (see perfmon_i.h for the order): the per-CPU record in
 * perfmon_cpu.c, the per-thread counts in perfmon_td.c, the slots and
 * their allocator in perfmon_dev.c and perfmon_pmc.c.
 *
 * Three levels of counter state:
 *
 *   - global (struct perfmon_pmc, perfmon_i.h): one per counter slot,
 *     allocated to a raw event and reference counted by the events using
 *     it;
 *   - per CPU (struct perfmon_cpu_pmc): how many users need the counter
 *     running on this CPU, the last raw value read and a 64-bit value that
 *     only grows while the counter runs there;
 *   - per thread (struct perfmon_td_pmc, in kern/perfmon_types.h): the
 *     thread's accumulated count, less the per-CPU value while loaded.
 *
 * An event remembers the thread or CPU value when it was attached; its
 * count is the difference.  So several events can share one counter, on
 * CPUs and threads at once.
 *
 * Lock order, outermost first:
 *
 *   event                  owned by its caller: no lock (see perfmon.h)
 *     thread perfmon state thread_call(): interrupts disabled on the CPU
 *                          running the thread, or its run queue locked
 *       run queue lock     kern/thread.c (the context switch hook)
 *         per-CPU PMU      interrupts disabled on that CPU; against the
 *                          NMI on the same CPU, the busy flag
 *
 *   perfmon_lock           device table and counter allocator: taken alone,
 *                          in thread context, never held across an xcall,
 *                          thread_call or timer call (perfmon_i.h)
 *   perfmon_intr_lock      callback registry writers: taken alone, and
 *                          never by the interrupt path (perfmon_intr.c)
 *
 * Nothing reached from an overflow interrupt (NMI) takes a lock; the
 * per-CPU PMU's busy flag keeps it off a section (perfmon_cpu.c).
 *
 * Reads of a counter running on the caller's CPU (a CPU event of that CPU,
 * the calling thread's own event) take none of this: with preemption
 * disabled they compute the count from the per-CPU state and a raw read,
 * writing nothing, and retry when the state's generation changed under
 * them (struct perfmon_cpu, perfmon_event.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon/perfmon_event.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/perfmon/perfmon_pmc.h"
#include "kern/perfmon/perfmon_sched.h"
#include "kern/perfmon/perfmon_td.h"
#include "kern/string.h"
#include "kern/thread.h"
#include "kern/xcall.h"

/*
 * Arguments of the thread_call() and xcall functions: the events to act
 * on (those of the array attached to the thread or CPU the call runs for),
 * whether to enable or disable them, or, to read one, where its counts go.
 */
struct perfmon_call {
    struct perfmon_event *const *events;
    unsigned int nr;
    struct thread *thread;              /* the target, NULL: this CPU */
    bool enable;
    struct perfmon_counts counts;
};

/*
 * Whether event is one of a call's to act on where the call runs.  The
 * CPUs of one call run at once: an event of another CPU is told apart by
 * fields that stay fixed meanwhile, before its enabled flag is looked at.
 */
static bool
perfmon_call_targets(const struct perfmon_call *call,
                     const struct perfmon_event *event)
{
    return (event->thread == call->thread)
           && (call->thread != NULL || event->cpu == cpu_id())
           && (event->enabled != call->enable);
}

/* thread_call() functions. */

static void
perfmon_td_enable_fn(struct thread *thread, bool running, void *arg)
{
    struct perfmon_call *call = arg;
    struct perfmon_td *td = thread_get_perfmon_td(thread);
    struct perfmon_cpu *cpu = running ? perfmon_cpu_enter() : NULL;
    uint64_t now = (cpu != NULL) ? cpu->now : 0;

    for (unsigned int i = 0; i < call->nr; i++) {
        struct perfmon_event *event = call->events[i];

        if (!perfmon_call_targets(call, event)) {
            continue;
        }

        if (call->enable) {
            perfmon_td_event_enable(td, cpu, event, now);
        } else {
            perfmon_td_event_disable(td, cpu, event, now);
        }

        event->enabled = call->enable;
    }

    if (cpu != NULL) {
        perfmon_cpu_leave(cpu);
    }
}

static void
perfmon_td_read_fn(struct thread *thread, bool running, void *arg)
{
    struct perfmon_call *call = arg;
    struct perfmon_td *td = thread_get_perfmon_td(thread);
    struct perfmon_cpu *cpu = running ? perfmon_cpu_enter() : NULL;

    perfmon_td_pmc_read(td, cpu, call->events[0]->slot,
                        (cpu != NULL) ? cpu->now : 0, &call->counts);

    if (cpu != NULL) {
        perfmon_cpu_leave(cpu);
    }
}

/* xcall functions for CPU events, on the events' CPU. */

static void
perfmon_cpu_enable_xcall(void *arg)
{
    struct perfmon_call *call = arg;
    struct perfmon_cpu *cpu = perfmon_cpu_enter();
    uint64_t now = cpu->now;

    for (unsigned int i = 0; i < call->nr; i++) {
        struct perfmon_event *event = call->events[i];
        struct perfmon_counts counts;

        if (!perfmon_call_targets(call, event)) {
            continue;
        }

        if (call->enable) {
            perfmon_sched_ref_counts(cpu, event->slot, NULL, now,
                                       &event->start);
        } else {
            perfmon_cpu_pmc_counts(cpu, event->slot, now, &counts);
            perfmon_counts_add_delta(&event->total, &counts, &event->start);
            perfmon_sched_unref(cpu, event->slot, now);
        }

        event->enabled = call->enable;
    }

    perfmon_cpu_leave(cpu);
}

static void
perfmon_cpu_read_xcall(void *arg)
{
    struct perfmon_call *call = arg;
    struct perfmon_cpu *cpu = perfmon_cpu_enter();

    perfmon_cpu_pmc_counts(cpu, call->events[0]->slot, cpu->now,
                           &call->counts);
    perfmon_cpu_leave(cpu);
}

int
perfmon_event_init(struct perfmon_event *event, uint64_t id,
                   unsigned int flags)
{
    if (event == NULL || (flags & ~PERFMON_EF_MASK) != 0
        || (flags & PERFMON_EF_MODE) == 0) {
        return -EINVAL;
    }

    if (!(flags & PERFMON_EF_RAW) && id >= PERFMON_NR_EVENTS) {
        return -EINVAL;
    }

    memset(event, 0, sizeof(*event));
    event->id = id;
    event->flags = flags;
    event->state = PERFMON_EVENT_IDLE;
    return 0;
}

int
perfmon_event_set_dev(struct perfmon_event *event, struct perfmon_dev *dev)
{
    if (event == NULL || event->state != PERFMON_EVENT_IDLE) {
        return -EINVAL;
    }

    if (dev != NULL && !perfmon_dev_is_registered(dev)) {
        return -ENODEV;
    }

    event->dev = dev;
    return 0;
}

int
perfmon_event_set_sampling(struct perfmon_event *event,
                           const struct perfmon_sampling *sampling)
{
    if (event == NULL || event->state != PERFMON_EVENT_IDLE) {
        return -EINVAL;
    }

    if (sampling != NULL
        && ((sampling->period == 0 && sampling->freq == 0)
            || sampling->period > PERFMON_MAX_PERIOD
            || sampling->freq > PERFMON_MAX_FREQ
            || (sampling->fields & ~PERFMON_SF_MASK) != 0
            || sampling->sbuf == NULL
            || ((sampling->fields & PERFMON_SF_BRANCH)
                && !perfmon_branch_filter_valid(sampling->branch_filter))
            || ((sampling->fields & PERFMON_SF_READ)
                && !perfmon_sample_reads_valid(sampling)))) {
        return -EINVAL;
    }

    event->sampling = sampling;
    return 0;
}

int
perfmon_event_set_group(struct perfmon_event *event,
                        struct perfmon_event *leader)
{
    if (event == NULL || event->state != PERFMON_EVENT_IDLE) {
        return -EINVAL;
    }

    if (leader != NULL && leader != event && leader->group != leader) {
        return -EINVAL;
    }

    event->group = leader;
    return 0;
}

bool
perfmon_event_attached(const struct perfmon_event *event)
{
    return event != NULL && perfmon_event_state_attached(event);
}

bool
perfmon_event_enabled(const struct perfmon_event *event)
{
    return perfmon_event_attached(event) && event->enabled;
}

/*
 * Enable or disable the events of an array: one call on each thread or
 * CPU they are attached to, which acts on all the events of that target;
 * the CPUs' calls run at once (perfmon_cpu_enable_xcall only touches the
 * events of its own CPU), so that CPU events share one span.
 */
int
perfmon_events_set_enabled(struct perfmon_event *const *events,
                           unsigned int nr, bool enable)
{
    struct perfmon_call call = {
        .events = events,
        .nr = nr,
        .enable = enable,
    };
    uint64_t cpus = 0;
    int error;

    perfmon_assert_thread_context();

    if (events == NULL) {
        return -EINVAL;
    }

    for (unsigned int i = 0; i < nr; i++) {
        if (!perfmon_event_attached(events[i])) {
            return -EINVAL;
        }
    }

    /* Threads one at a time; a thread seen earlier was served then. */
    for (unsigned int i = 0; i < nr; i++) {
        const struct perfmon_event *event = events[i];
        bool done = false;

        if (event->thread == NULL) {
            cpus |= 1ULL << event->cpu;
            continue;
        }

        for (unsigned int j = 0; j < i && !done; j++) {
            done = events[j]->thread == event->thread;
        }

        if (!done) {
            call.thread = event->thread;
            thread_call(event->thread, perfmon_td_enable_fn, &call);
        }
    }

    /* The CPUs all at once, each acting on its own events. */
    if (cpus != 0) {
        call.thread = NULL;
        error = xcall_call_many(perfmon_cpu_enable_xcall, &call, cpus);
        assert(error == 0);             /* CPUs never go offline */
    }

    return 0;
}

/*
 * Count an event that asks for branch stacks as a user of the branch-record
 * driver, once it has its slot (and so its device); on failure the slot
 * goes back.
 */
static int
perfmon_event_get_branches(struct perfmon_event *event)
{
    int error = perfmon_branch_get(event);

    if (error) {
        perfmon_event_put_pmc(event);
    }

    return error;
}

/*
 * The common end of the two attaches, once the event has its counter
 * slot (and its family, for an inherited one): start it unless attached
 * disabled.
 */
void
perfmon_event_attach_end(struct perfmon_event *event)
{
    if (!(event->flags & PERFMON_EF_DISABLED)) {
        perfmon_events_set_enabled(&event, 1, true);
    }
}

int
perfmon_event_attach_thread(struct perfmon_event *event,
                            struct thread *thread)
{
    struct perfmon_dev *dev;
    int error;

    perfmon_assert_thread_context();

    if (event == NULL || thread == NULL
        || event->state != PERFMON_EVENT_IDLE) {
        return -EINVAL;
    }

    /* The device the counter slot resolves to is kept only on success. */
    dev = event->dev;

    /* Referenced while on the counter's user list (perfmon_pmc_foreach). */
    thread_ref(thread);
    event->thread = thread;
    event->td = thread_get_perfmon_td(thread);
    event->cpu = 0;
    error = perfmon_event_get_pmc(event);

    if (error == 0) {
        error = perfmon_event_get_branches(event);
    }

    if (error) {
        event->dev = dev;
        event->thread = NULL;
        thread_unref(thread);
        return error;
    }

    event->tpmc = &event->td->pmcs[event->slot];
    event->state = PERFMON_EVENT_THREAD;
    event->enabled = false;
    event->start = (struct perfmon_counts){ 0 };
    return 0;
}

int
perfmon_event_attach_cpu(struct perfmon_event *event, unsigned int cpu)
{
    struct perfmon_dev *dev;
    int error;

    perfmon_assert_thread_context();

    if (event == NULL || event->state != PERFMON_EVENT_IDLE
        || cpu >= cpu_count() || (event->flags & PERFMON_EF_INHERIT)) {
        return -EINVAL;
    }

    dev = event->dev;

    event->thread = NULL;
    event->cpu = cpu;
    error = perfmon_event_get_pmc(event);

    if (error == 0) {
        error = perfmon_event_get_branches(event);

        if (error) {
            event->dev = dev;
        }
    }

    if (error) {
        return error;
    }

    event->state = PERFMON_EVENT_CPU;
    event->enabled = false;
    event->start = (struct perfmon_counts){ 0 };
    perfmon_event_attach_end(event);
    return 0;
}

void
perfmon_event_release(struct perfmon_event *event)
{
    perfmon_assert_thread_context();
    assert(perfmon_event_attached(event));

    if (event->enabled) {
        perfmon_events_set_enabled(&event, 1, false);
    }

    event->state = PERFMON_EVENT_IDLE;
    perfmon_event_put_pmc(event);
    perfmon_branch_put(event);

    if (event->thread != NULL) {
        thread_unref(event->thread);
        event->thread = NULL;
    }
}

/* The general read: on the thread's or the event's CPU, folding. */
void __attribute__((noinline))
perfmon_event_read_sync(struct perfmon_event *event,
                        struct perfmon_counts *counts)
{
    struct perfmon_call call = { .events = &event, .nr = 1 };
    int error;

    if (event->state == PERFMON_EVENT_THREAD) {
        thread_call(event->thread, perfmon_td_read_fn, &call);
    } else {
        error = xcall_call(perfmon_cpu_read_xcall, &call, event->cpu);
        assert(error == 0);
    }

    perfmon_counts_add_delta(counts, &call.counts, &event->start);
}

void
perfmon_event_read_counts(struct perfmon_event *event, bool times,
                          struct perfmon_counts *counts)
{
    perfmon_event_read_counts_inline(event, times, counts);
}

/*
 * The in-place read for any context, NMI included: interrupts off so that
 * no section starts under it but an NMI's, which completes first.  A
 * section of this CPU that the caller interrupted (busy) may be half
 * done: refused, unless the caller runs inside that section itself.  A
 * counter due for a fold is folded here, in a section of its own, as the
 * general read's xcall would on this CPU (not inside a section).
 */
/* The fold of perfmon_event_read_here(), out of its way. */
static void __attribute__((noinline))
perfmon_event_fold_here(struct perfmon_event *event,
                        struct perfmon_counts *counts)
{
    struct perfmon_call call = { .events = &event, .nr = 1 };

    perfmon_cpu_read_xcall(&call);
    *counts = call.counts;
}

bool
perfmon_event_read_here(struct perfmon_event *event, bool in_section,
                        uint64_t *valuep)
{
    struct perfmon_counts now;
    bool busy, local = false;
    unsigned long flags;

    if (event->state != PERFMON_EVENT_CPU || !READ_ONCE(event->enabled)) {
        return false;
    }

    flags = cpu_intr_save();
    busy = READ_ONCE(perfmon_cpu_get(cpu_id())->busy);

    if (in_section || !busy) {
        local = perfmon_event_read_local(event, false, &now);
    }

    if (unlikely(!local) && !busy && event->cpu == cpu_id()) {
        perfmon_event_fold_here(event, &now);
        local = true;
    }

    cpu_intr_restore(flags);

    if (local) {
        *valuep = event->total.value + now.value - event->start.value;
    }

    return local;
}
