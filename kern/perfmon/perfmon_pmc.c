/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: the global counter table.  Each event gets
 * a counter slot here when attached, shared with the events that count the
 * same raw event in the same mode; the device's alloc and free run under
 * perfmon_lock.  Also here: `perfmon info`'s view of the table, the
 * context-switch hook's flag (which refuses thread events while off), and
 * the poll timers of devices whose wraps raise no interrupt.  The per-CPU
 * state of the counters is in perfmon_cpu.c, the per-thread in perfmon_td.c.
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
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/perfmon_control.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/perfmon/perfmon_pmc.h"
#include "kern/perfmon/perfmon_sched.h"
#include "kern/spinlock.h"
#include "kern/string.h"
#include "kern/thread.h"
#include "kern/timer.h"
#include "kern/xcall.h"

/*
 * The context-switch hook's flag (perfmon.hook=off clears it at boot).
 * Written under perfmon_lock, read without it on every context switch:
 * while it is clear no thread event exists (they are refused), so a switch
 * that misses a change still sees threads without events.
 */
bool perfmon_switch_hook_on = true;

/* Attached thread events, under perfmon_lock (see perfmon_set_switch_hook). */
static unsigned int perfmon_nr_thread_events;

/* The last group id given to a leader (struct perfmon_pmc), perfmon_lock. */
static uint64_t perfmon_last_group;
static struct timer perfmon_poll_timers[PERFMON_MAX_DEVS];
static bool perfmon_poll_armed[PERFMON_MAX_DEVS];

static void
perfmon_poll_schedule(struct perfmon_dev *dev)
{
    perfmon_poll_timers[dev->index].arg = dev;
    timer_schedule(&perfmon_poll_timers[dev->index],
                   clock_get_time()
                   + clock_ticks_from_ms(dev->poll_interval_ms));
}

/*
 * Read every active counter of the device on every CPU, then come back
 * while the device has counters allocated.  Thread context (timer thread).
 */
static void
perfmon_poll_timer_fn(struct timer *timer)
{
    struct perfmon_dev *dev = timer->arg;
    uint64_t slots = perfmon_dev_slots(dev);
    unsigned int nr_cpus = cpu_count();
    bool again;

    for (unsigned int i = 0; i < nr_cpus; i++) {
        if (perfmon_cpu_active_slots(i) & slots) {
            xcall_call(perfmon_cpu_poll_xcall, dev, i);
        }
    }

    spinlock_lock(&perfmon_lock);
    again = perfmon_dev_nr_used_[dev->index] != 0;

    if (!again) {
        perfmon_poll_armed[dev->index] = false;
    }

    spinlock_unlock(&perfmon_lock);

    if (again) {
        perfmon_poll_schedule(dev);
    }
}

/* ---- global allocator (perfmon_lock) ------------------------------------ */

/*
 * Choose the device and raw event of an event.  perfmon_lock held (the
 * device's translate is serialised by it).
 */
static int
perfmon_event_resolve(const struct perfmon_event *event,
                      struct perfmon_dev **devp, uint64_t *rawp)
{
    unsigned int nr = perfmon_nr_devs_load();

    if (nr == 0) {
        return -ENODEV;
    }

    if (event->flags & PERFMON_EF_RAW) {
        *devp = (event->dev != NULL) ? event->dev : perfmon_devs[0];
        *rawp = event->id;
        return 0;
    }

    for (unsigned int i = 0; i < nr; i++) {
        struct perfmon_dev *dev = perfmon_devs[i];

        if (event->dev != NULL ? event->dev != dev : dev->named_only) {
            continue;
        }

        if (dev->ops->translate(dev, rawp, (unsigned int)event->id) == 0) {
            *devp = dev;
            return 0;
        }
    }

    return -ENOENT;
}

/*
 * Whether an event may use a slot in use: the same raw event, mode,
 * pinning and group, and, for sampling, the same sampling and the same
 * kind of events (a sampling counter's state on a CPU serves either a CPU
 * event or the thread loaded there, not both).
 */
static bool
perfmon_pmc_matches(const struct perfmon_pmc *pmc,
                    const struct perfmon_event *event, uint64_t raw,
                    unsigned int mode, uint64_t group)
{
    return pmc->raw_event == raw && pmc->flags == mode
           && pmc->pinned == !!(event->flags & PERFMON_EF_PINNED)
           && pmc->group == group
           && pmc->sampling == event->sampling
           && (pmc->sampling == NULL
               || pmc->thread_events == (event->thread != NULL));
}

/*
 * Whether an event on a slot's users list is an inherited event's child
 * (kern/perfmon/perfmon_inherit.c).  Its family pointer, and the family
 * it points to, change only under perfmon_lock while it is on the list:
 * a reader without the lock could follow a freed family.
 */
static bool
perfmon_event_is_child(const struct perfmon_event *event)
{
    assert(spinlock_held(&perfmon_lock));
    return event->family != NULL && !perfmon_event_is_root(event);
}

/*
 * The group id of an event being attached, perfmon_lock held: 0 for
 * none, a new one for a leader, else its leader's (attached: see
 * perfmon_pmc_check_group), a child's its root's.
 */
static uint64_t
perfmon_pmc_group_of(const struct perfmon_event *event)
{
    if (event->group == NULL) {
        return 0;
    }

    if (perfmon_event_is_child(event)) {
        return perfmon_pmcs[event->family->root->slot].group;
    }

    if (event->group == event) {
        return ++perfmon_last_group;
    }

    return perfmon_pmcs[event->group->slot].group;
}

/*
 * The events of group attached on dev (inherited children aside), found
 * on the users lists of its slots.  perfmon_lock held.
 */
static unsigned int
perfmon_pmc_group_size(const struct perfmon_dev *dev, uint64_t group)
{
    unsigned int base = dev->index * PERFMON_DEV_MAX_PMCS, n = 0;

    for (unsigned int i = base; i < base + PERFMON_DEV_MAX_PMCS; i++) {
        if (perfmon_pmcs[i].nr_refs == 0 || perfmon_pmcs[i].group != group) {
            continue;
        }

        for (const struct perfmon_event *e = perfmon_pmcs[i].users; e != NULL;
             e = e->next_user) {
            n += !perfmon_event_is_child(e);
        }
    }

    return n;
}

/*
 * Whether a flexible member counting raw in mode fits beside the group's
 * slots on dev: each its own counter, under the counters each may use
 * (a matching, as the scheduler places them).  A member that shares a
 * slot of the group needs no counter more.
 */
static bool
perfmon_pmc_group_fits(struct perfmon_dev *dev,
                       const struct perfmon_event *event, uint64_t raw,
                       unsigned int mode)
{
    uint64_t group = perfmon_pmcs[event->group->slot].group;
    unsigned int base = dev->index * PERFMON_DEV_MAX_PMCS, n = 0;
    uint64_t masks[PERFMON_DEV_MAX_PMCS + 1], prefer;

    for (unsigned int i = base; i < base + PERFMON_DEV_MAX_PMCS; i++) {
        const struct perfmon_pmc *pmc = &perfmon_pmcs[i];

        if (pmc->nr_refs == 0 || pmc->group != group) {
            continue;
        }

        if (perfmon_pmc_matches(pmc, event, raw, mode, group)) {
            return true;
        }

        masks[n++] = pmc->pinned ? 1ULL << pmc->hw_id : pmc->counters;
    }

    if (dev->ops->counters(dev, raw, mode, &masks[n], &prefer) != 0) {
        return true;        /* the slot's setup says why */
    }

    return perfmon_counters_fit(masks, n + 1);
}

/*
 * A group member joining its leader's group on dev: where the leader is,
 * pinned as it is, within the device's counters and the counters each
 * member may use.  A child of an inherited member joins its family's
 * slots, not the count.
 */
static int
perfmon_pmc_check_group(const struct perfmon_event *event,
                        struct perfmon_dev *dev, uint64_t raw)
{
    const struct perfmon_event *leader = event->group;

    if (leader == NULL || leader == event || perfmon_event_is_child(event)) {
        return 0;
    }

    if (!perfmon_event_state_attached(leader) || leader->dev != dev
        || leader->thread != event->thread
        || (event->thread == NULL && leader->cpu != event->cpu)
        || ((leader->flags ^ event->flags) & PERFMON_EF_PINNED)) {
        return -EINVAL;
    }

    if (perfmon_pmc_group_size(dev, perfmon_pmcs[leader->slot].group) + 1
        > dev->nr_pmcs) {
        return -ENOSPC;
    }

    return ((event->flags & PERFMON_EF_PINNED)
            || perfmon_pmc_group_fits(dev, event, raw,
                                      event->flags & PERFMON_EF_MODE))
           ? 0 : -ENOSPC;
}

/*
 * Set up a new slot for raw on dev: a pinned one reserves its counter on
 * every CPU (the device's alloc), a flexible one asks which counters can
 * count it.  -EAGAIN (counters taken) and -EINVAL (a raw code with bits
 * the device does not define) mean something to the user; anything else
 * is "this device cannot count that".
 */
static int
perfmon_pmc_setup_slot(struct perfmon_pmc *pmc, struct perfmon_dev *dev,
                       uint64_t raw, unsigned int mode, bool pinned)
{
    int error;

    if (pinned) {
        error = perfmon_dev_reserve_locked(dev, raw, mode, &pmc->hw_id,
                                           &pmc->taken);
    } else {
        error = dev->ops->counters(dev, raw, mode, &pmc->counters,
                                   &pmc->prefer);

        if (error == 0 && pmc->counters == 0) {
            error = -ENOENT;
        }
    }

    if (error == 0 && dev->ops->hold != NULL) {
        error = dev->ops->hold(dev, raw);

        if (error && pinned) {
            perfmon_dev_unreserve_locked(dev, pmc->hw_id);
        }
    }

    if (error) {
        return (error == -EAGAIN || error == -EINVAL) ? error : -ENOENT;
    }

    pmc->pinned = pinned;
    return 0;
}

/*
 * Find or allocate the counter slot of an event and add the event to its
 * users.  Sets *armp when the poll timer of the device must be started.
 */
static int
perfmon_pmc_get(struct perfmon_event *event, bool *armp)
{
    unsigned int mode = event->flags & PERFMON_EF_MODE;
    unsigned int base, free_slot = PERFMON_MAX_PMCS;
    struct perfmon_dev *dev;
    struct perfmon_pmc *pmc;
    uint64_t raw, group;
    int error;

    error = perfmon_event_resolve(event, &dev, &raw);

    if (error) {
        return error;
    }

    if (event->sampling != NULL
        && (!dev->overflow_intr || dev->ops->write == NULL)) {
        return -EOPNOTSUPP;
    }

    error = perfmon_pmc_check_group(event, dev, raw);

    if (error) {
        return error;
    }

    base = dev->index * PERFMON_DEV_MAX_PMCS;
    group = perfmon_pmc_group_of(event);

    for (unsigned int i = base; i < base + PERFMON_DEV_MAX_PMCS; i++) {
        pmc = &perfmon_pmcs[i];

        if (pmc->nr_refs == 0) {
            free_slot = MIN(free_slot, i);
        } else if (perfmon_pmc_matches(pmc, event, raw, mode, group)) {
            goto found;
        }
    }

    if (free_slot == PERFMON_MAX_PMCS) {
        return -EAGAIN;
    }

    pmc = &perfmon_pmcs[free_slot];
    error = perfmon_pmc_setup_slot(pmc, dev, raw, mode,
                                   event->flags & PERFMON_EF_PINNED);

    if (error) {
        return error;
    }

    pmc->raw_event = raw;
    pmc->flags = mode;
    pmc->group = group;
    pmc->sampling = event->sampling;
    pmc->sample_size = (pmc->sampling != NULL)
                       ? perfmon_sample_size(pmc->sampling) : 0;
    pmc->sample_layout = (pmc->sampling != NULL)
                         ? perfmon_sample_layout(pmc->sampling) : 0;
    pmc->thread_events = event->thread != NULL;
    pmc->users = NULL;
    perfmon_cpu_slot_setup(free_slot, dev);
    perfmon_dev_nr_used_[dev->index]++;

    if (pmc->sampling != NULL) {
        WRITE_ONCE(perfmon_sampling_slots,
                   perfmon_sampling_slots | perfmon_slot_bit(free_slot));
    }

    if (pmc->sampling != NULL
        && (pmc->sampling->fields & PERFMON_SF_BRANCH)) {
        WRITE_ONCE(perfmon_branch_slots,
                   perfmon_branch_slots | perfmon_slot_bit(free_slot));
    }

    if (!pmc->pinned && pmc->group == 0 && pmc->sampling == NULL
        && dev->ops->transfer != NULL) {
        WRITE_ONCE(perfmon_pass_slots,
                   perfmon_pass_slots | perfmon_slot_bit(free_slot));
    }

    if (dev->poll_interval_ms != 0 && !perfmon_poll_armed[dev->index]) {
        perfmon_poll_armed[dev->index] = true;
        *armp = true;
    }

found:
    pmc->nr_refs++;
    event->next_user = pmc->users;
    pmc->users = event;
    event->dev = dev;
    event->slot = (unsigned int)(pmc - perfmon_pmcs);
    event->record_offset = offsetof(struct perfmon_cpu, pmcs)
                           + event->slot * sizeof(struct perfmon_cpu_pmc);
    return 0;
}

static void
perfmon_pmc_put(struct perfmon_event *event)
{
    struct perfmon_pmc *pmc = &perfmon_pmcs[event->slot];
    struct perfmon_event **prevp = &pmc->users;
    struct perfmon_dev *dev = event->dev;

    while (*prevp != event) {
        assert(*prevp != NULL);
        prevp = &(*prevp)->next_user;
    }

    *prevp = event->next_user;
    event->next_user = NULL;
    assert(pmc->nr_refs != 0);

    if (--pmc->nr_refs == 0) {
        if (pmc->pinned) {
            perfmon_dev_unreserve_locked(dev, pmc->hw_id);
        }

        if (dev->ops->release != NULL) {
            dev->ops->release(dev, pmc->raw_event);
        }

        perfmon_dev_nr_used_[dev->index]--;
        WRITE_ONCE(perfmon_sampling_slots,
                   perfmon_sampling_slots & ~perfmon_slot_bit(event->slot));
        WRITE_ONCE(perfmon_branch_slots,
                   perfmon_branch_slots & ~perfmon_slot_bit(event->slot));
        WRITE_ONCE(perfmon_pass_slots,
                   perfmon_pass_slots & ~perfmon_slot_bit(event->slot));
        pmc->sampling = NULL;
        pmc->group = 0;
    }
}

int
perfmon_event_get_pmc(struct perfmon_event *event)
{
    bool arm = false;
    int error;

    spinlock_lock(&perfmon_lock);

    /*
     * Thread events need the context-switch hook: refuse them while it is
     * off, and count them so that it cannot be switched off under them.
     */
    if (event->thread != NULL && !perfmon_switch_hook_on) {
        error = -EBUSY;
    } else {
        error = perfmon_pmc_get(event, &arm);
    }

    if (!error && event->thread != NULL) {
        perfmon_nr_thread_events++;
    }

    spinlock_unlock(&perfmon_lock);

    if (error) {
        return error;
    }

    if (arm) {
        perfmon_poll_schedule(event->dev);
    }

    return 0;
}

void
perfmon_event_put_pmc(struct perfmon_event *event)
{
    spinlock_lock(&perfmon_lock);
    perfmon_pmc_put(event);

    if (event->thread != NULL) {
        assert(perfmon_nr_thread_events != 0);
        perfmon_nr_thread_events--;
    }

    spinlock_unlock(&perfmon_lock);
}

/*
 * A counter reserved on every CPU for a driver's own use (kern/perfmon.h):
 * flexible events move off it, wherever they run.
 */
int
perfmon_dev_alloc(struct perfmon_dev *dev, uint64_t raw_event,
                  unsigned int flags, unsigned int *hw_idp)
{
    uint64_t taken;
    int error;

    if (dev == NULL || hw_idp == NULL || !perfmon_dev_is_registered(dev)) {
        return -EINVAL;
    }

    spinlock_lock(&perfmon_lock);
    error = perfmon_dev_reserve_locked(dev, raw_event, flags, hw_idp, &taken);
    spinlock_unlock(&perfmon_lock);

    if (error == 0) {
        perfmon_sched_evict_all(dev);
    }

    return error;
}

void
perfmon_dev_free(struct perfmon_dev *dev, unsigned int hw_id)
{
    assert(dev != NULL && perfmon_dev_is_registered(dev));
    spinlock_lock(&perfmon_lock);
    perfmon_dev_unreserve_locked(dev, hw_id);
    spinlock_unlock(&perfmon_lock);
}

int
perfmon_set_switch_hook(bool enabled)
{
    int error = 0;

    spinlock_lock(&perfmon_lock);

    if (!enabled && perfmon_nr_thread_events != 0) {
        error = -EBUSY;
    } else {
        __atomic_store_n(&perfmon_switch_hook_on, enabled, __ATOMIC_RELAXED);
    }

    spinlock_unlock(&perfmon_lock);
    return error;
}

void
perfmon_pmc_foreach(perfmon_pmc_fn_t fn, void *arg)
{
    struct perfmon_pmc_info info;

    if (fn == NULL) {
        return;
    }

    spinlock_lock(&perfmon_lock);

    for (unsigned int slot = 0; slot < PERFMON_MAX_PMCS; slot++) {
        const struct perfmon_pmc *pmc = &perfmon_pmcs[slot];
        unsigned int n = 0;

        if (pmc->nr_refs == 0) {
            continue;
        }

        info.dev = perfmon_slot_dev(slot);
        info.index = slot % PERFMON_DEV_MAX_PMCS;
        info.pinned = pmc->pinned;
        info.hw_id = pmc->pinned ? pmc->hw_id : 0;
        info.grouped = pmc->group != 0;
        info.raw_event = pmc->raw_event;
        info.flags = pmc->flags;
        info.nr_users = pmc->nr_refs;
        info.sampling = pmc->sampling != NULL;
        info.period = info.sampling ? pmc->sampling->period : 0;
        info.freq = info.sampling ? pmc->sampling->freq : 0;
        info.buffer_size = info.sampling
                           ? perfmon_sbuf_size(pmc->sampling->sbuf) : 0;

        info.nr_inherited = 0;

        for (const struct perfmon_event *e = pmc->users; e != NULL;
             e = e->next_user) {
            bool child = perfmon_event_is_child(e);

            info.nr_inherited += child;

            if (n < PERFMON_PMC_INFO_MAX_USERS) {
                info.users[n].thread = e->thread;
                info.users[n].cpu = e->cpu;
                info.users[n].inherited = child;
                n++;
            }
        }

        for (; n < PERFMON_PMC_INFO_MAX_USERS; n++) {
            info.users[n].thread = NULL;
            info.users[n].cpu = 0;
            info.users[n].inherited = false;
        }

        fn(&info, arg);
    }

    spinlock_unlock(&perfmon_lock);
}

static void
perfmon_setup_hook(void)
{
    const char *hook = cmdline_get("perfmon.hook");

    if (hook != NULL && strcmp(hook, "off") == 0) {
        perfmon_switch_hook_on = false;
        log_info("perfmon: context-switch hook disabled (perfmon.hook=off)");
    }
}

void
perfmon_pmc_setup(void)
{
    for (unsigned int i = 0; i < PERFMON_MAX_DEVS; i++) {
        timer_init(&perfmon_poll_timers[i], perfmon_poll_timer_fn, 0);
    }

    perfmon_setup_hook();
}

bool
perfmon_switch_hook_enabled(void)
{
    return __atomic_load_n(&perfmon_switch_hook_on, __ATOMIC_RELAXED);
}

#ifdef TALLY_HOST_TEST
void
perfmon_pmc_reset(void)
{
    memset(perfmon_poll_timers, 0, sizeof(perfmon_poll_timers));
    memset(perfmon_poll_armed, 0, sizeof(perfmon_poll_armed));
    perfmon_nr_thread_events = 0;
    perfmon_last_group = 0;
    perfmon_switch_hook_on = true;
}
#endif /* TALLY_HOST_TEST */
