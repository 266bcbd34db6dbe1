/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: the entry points of kern/perfmon.h that
 * act on an event and on its family of inherited children together
 * (attach, detach, enable, disable, read), and the core's setup.  The
 * events themselves are in perfmon_event.c, their families in
 * perfmon_inherit.c; see perfmon_i.h for how the files stack.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/error.h"
#include "kern/init.h"
#include "kern/macros.h"
#include "kern/num.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon/perfmon_event.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/perfmon/perfmon_inherit.h"
#include "kern/perfmon/perfmon_nmi.h"
#include "kern/perfmon/perfmon_pmc.h"
#include "kern/perfmon/perfmon_sched.h"
#include "kern/syscnt.h"
#include "kern/thread.h"
#include "kern/timer.h"
#include "kern/xcall.h"

/* Enable or disable events, and the children of the inherited ones. */
static int
perfmon_events_set_all(struct perfmon_event *const *events, unsigned int nr,
                       bool enable)
{
    int error = perfmon_events_set_enabled(events, nr, enable);

    if (error) {
        return error;
    }

    for (unsigned int i = 0; i < nr; i++) {
        if (perfmon_event_is_root(events[i])) {
            perfmon_family_set_enabled(events[i]->family, enable);
        }
    }

    return 0;
}

int
perfmon_events_enable(struct perfmon_event *const *events, unsigned int nr)
{
    return perfmon_events_set_all(events, nr, true);
}

int
perfmon_events_disable(struct perfmon_event *const *events, unsigned int nr)
{
    return perfmon_events_set_all(events, nr, false);
}

int
perfmon_event_enable(struct perfmon_event *event)
{
    return perfmon_events_set_all(&event, 1, true);
}

int
perfmon_event_disable(struct perfmon_event *event)
{
    return perfmon_events_set_all(&event, 1, false);
}

/*
 * An inherited event has its family before it is first enabled, and its
 * enabling (unless attached disabled) sets the family's.
 */
int
perfmon_event_attach(struct perfmon_event *event, struct thread *thread)
{
    struct perfmon_dev *dev = (event != NULL) ? event->dev : NULL;
    int error = perfmon_event_attach_thread(event, thread);

    if (error) {
        return error;
    }

    if (event->flags & PERFMON_EF_INHERIT) {
        error = perfmon_family_create(event);

        if (error) {
            perfmon_event_release(event);
            event->dev = dev;
            return error;
        }
    }

    if (!(event->flags & PERFMON_EF_DISABLED)) {
        perfmon_event_enable(event);
    }

    return 0;
}

/* The children go first: their counts end up in the event's total. */
int
perfmon_event_detach(struct perfmon_event *event)
{
    perfmon_assert_thread_context();

    if (!perfmon_event_attached(event)) {
        return -EINVAL;
    }

    if (perfmon_event_is_root(event)) {
        perfmon_family_destroy(event);
    }

    perfmon_event_release(event);
    return 0;
}

/*
 * Every read but the fast one: folding, remote, disabled, inherited.
 * resched: the fast read left preemption disabled for a reschedule due.
 */
static uint64_t __attribute__((noinline))
perfmon_event_read_slow(struct perfmon_event *event, bool resched)
{
    struct perfmon_counts counts;

    if (resched) {
        thread_preempt_enable();
    }

    if (event == NULL) {
        return 0;
    }

    perfmon_event_read_counts_inline(event, false, &counts);

    if (unlikely(event->family != NULL) && perfmon_event_is_root(event)) {
        perfmon_family_add_counts(event->family, false, &counts);
    }

    return counts.value;
}

uint64_t
perfmon_event_read(struct perfmon_event *event)
{
    bool resched = false;
    uint64_t value;

    if (likely(event != NULL) && likely(event->enabled)
        && likely(event->family == NULL)
        && perfmon_event_read_fast(event, &value, &resched)) {
        return value;
    }

    return perfmon_event_read_slow(event, resched);
}

uint64_t
perfmon_event_read_times(struct perfmon_event *event, uint64_t *enabled_nsp,
                         uint64_t *running_nsp)
{
    struct perfmon_counts counts = { 0 };

    if (event != NULL) {
        perfmon_event_read_counts(event, true, &counts);

        if (perfmon_event_is_root(event)) {
            perfmon_family_add_counts(event->family, true, &counts);
        }
    }

    if (enabled_nsp != NULL) {
        *enabled_nsp = num_muldiv(counts.enabled, 1000000000, cpu_tsc_freq());
    }

    if (running_nsp != NULL) {
        *running_nsp = num_muldiv(counts.running, 1000000000, cpu_tsc_freq());
    }

    return counts.value;
}

/* ---- setup -------------------------------------------------------------- */

static int
perfmon_setup(void)
{
    unsigned int nr_cpus = cpu_count();

    for (unsigned int i = 0; i < nr_cpus; i++) {
        struct perfmon_cpu *cpu = perfmon_cpu_get(i);

        perfmon_cpu_init(i);
        syscnt_register_cpu(&cpu->nr_overflows, "perfmon_nr_overflows", i);
        syscnt_register_cpu(&cpu->nr_intrs, "perfmon_nr_intrs", i);
        syscnt_register_cpu(&cpu->nr_polls, "perfmon_nr_polls", i);
        syscnt_register_cpu(&cpu->nr_unsampled, "perfmon_nr_unsampled", i);
        syscnt_register_cpu(&cpu->nr_throttles, "perfmon_nr_throttles", i);
        syscnt_register_cpu(&cpu->nr_rotations, "perfmon_nr_rotations", i);
    }

    perfmon_nmi_setup();

    perfmon_pmc_setup();
    perfmon_sched_setup();
    perfmon_ready = true;
    return 0;
}

INIT_OP_DEFINE(perfmon_setup, INIT_OP_DEP(xcall_setup, true),
               INIT_OP_DEP(timer_setup, true),
               INIT_OP_DEP(thread_setup, true));

#ifdef TALLY_HOST_TEST
void
perfmon_reset(void)
{
    perfmon_dev_reset();
    perfmon_intr_reset();
    perfmon_pmc_reset();
    perfmon_sched_reset();
    perfmon_branch_reset();
    perfmon_cpu_reset();
    perfmon_nmi_reset();
    perfmon_setup();
}
#endif /* TALLY_HOST_TEST */
