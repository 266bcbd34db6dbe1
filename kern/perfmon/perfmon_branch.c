/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: the branch-record driver (see "Branch-record
 * drivers" in kern/perfmon.h).  The core counts the events whose samples
 * carry branch stacks and starts the driver for the first, stops it after
 * the last, so that the driver's interrupt callback is registered only
 * while someone wants branches; and, on a context switch, it tells the
 * driver when a thread with such events comes in.
 *
 * Starting and stopping a driver issue xcalls and unregister an interrupt
 * callback, which cannot be done under a spinlock: a transition marks the
 * state busy under perfmon_branch_lock, runs without it, and whoever comes
 * meanwhile waits for it to end.  Transitions happen when the first branch
 * event arrives and the last goes, a few times per recording.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/assert.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/printf.h"
#include "kern/spinlock.h"
#include "kern/string.h"
#include "kern/thread.h"

/*
 * The driver and its users, under perfmon_branch_lock (taken alone, thread
 * context).  drv is also read by the context-switch hook without the lock:
 * it is published before the first user can exist and unpublished only
 * with none.  busy: a start or stop runs without the lock; users and
 * filter change only at its end.
 */
static struct spinlock perfmon_branch_lock = SPINLOCK_INITIALIZER;
static const struct perfmon_branch_driver *perfmon_branch_drv;
static unsigned int perfmon_branch_users;
static unsigned int perfmon_branch_filter;
static bool perfmon_branch_busy;

/* Why there is no driver, for `perfmon info` and the refusals. */
static char perfmon_branch_absent_text[PERFMON_HW_STATUS_SIZE] = "not probed";

/* Milliseconds between two looks at a transition in progress. */
#define PERFMON_BRANCH_WAIT_MS      1

bool
perfmon_branch_filter_valid(unsigned int filter)
{
    return (filter & ~PERFMON_BRF_MASK) == 0
           && (filter & PERFMON_BRF_MODE) != 0
           && (filter & PERFMON_BRF_KINDS) != 0;
}

/*
 * Whether an event being attached counts as a user: its samples ask for
 * branch stacks, and it is no inherited event's child (which rides on its
 * root: children come and go with threads, in contexts that cannot wait
 * for a transition).
 */
static bool
perfmon_branch_wanted(const struct perfmon_event *event)
{
    const struct perfmon_sampling *sampling = event->sampling;

    return sampling != NULL && (sampling->fields & PERFMON_SF_BRANCH)
           && (event->family == NULL || perfmon_event_is_root(event));
}

/* Take the lock once no transition runs. */
static void
perfmon_branch_lock_idle(void)
{
    for (;;) {
        spinlock_lock(&perfmon_branch_lock);

        if (!perfmon_branch_busy) {
            return;
        }

        spinlock_unlock(&perfmon_branch_lock);
        thread_msleep(PERFMON_BRANCH_WAIT_MS);
    }
}

int
perfmon_branch_register(const struct perfmon_branch_driver *drv)
{
    int error = 0;

    if (drv == NULL || drv->name == NULL || drv->desc == NULL
        || drv->ops == NULL || drv->ops->check == NULL
        || drv->ops->start == NULL || drv->ops->stop == NULL
        || drv->ops->sched_in == NULL) {
        return -EINVAL;
    }

    spinlock_lock(&perfmon_branch_lock);

    if (perfmon_branch_drv != NULL) {
        error = -EEXIST;
    } else {
        __atomic_store_n(&perfmon_branch_drv, drv, __ATOMIC_RELEASE);
    }

    spinlock_unlock(&perfmon_branch_lock);
    return error;
}

int
perfmon_branch_unregister(const struct perfmon_branch_driver *drv)
{
    int error = 0;

    perfmon_branch_lock_idle();

    if (drv == NULL || drv != perfmon_branch_drv) {
        error = -EINVAL;
    } else if (perfmon_branch_users != 0) {
        error = -EBUSY;
    } else {
        __atomic_store_n(&perfmon_branch_drv, NULL, __ATOMIC_RELEASE);
    }

    spinlock_unlock(&perfmon_branch_lock);
    return error;
}

const char *
perfmon_branch_why_not(const struct perfmon_dev *dev, unsigned int filter)
{
    const struct perfmon_branch_driver *drv;
    unsigned int users, in_use;

    assert(perfmon_branch_filter_valid(filter));
    spinlock_lock(&perfmon_branch_lock);
    drv = perfmon_branch_drv;
    users = perfmon_branch_users;
    in_use = perfmon_branch_filter;
    spinlock_unlock(&perfmon_branch_lock);

    if (drv == NULL) {
        return perfmon_branch_absent_text;
    }

    if (users != 0 && in_use != filter) {
        return "branch stacks are being recorded with another filter "
               "(one filter at a time)";
    }

    /* Drivers are static objects: drv outlives an unregistration. */
    return drv->ops->check(dev, filter);
}

void
perfmon_branch_set_absent(const char *why)
{
    assert(why != NULL);
    strlcpy(perfmon_branch_absent_text, why,
            sizeof(perfmon_branch_absent_text));
}

void
perfmon_branch_get_info(struct perfmon_branch_info *info)
{
    const struct perfmon_branch_driver *drv;

    spinlock_lock(&perfmon_branch_lock);
    drv = perfmon_branch_drv;
    *info = (struct perfmon_branch_info){
        .present = drv != NULL,
        .text = (drv != NULL) ? drv->desc : perfmon_branch_absent_text,
        .depth = (drv != NULL) ? drv->depth : 0,
        .filters = (drv != NULL) ? drv->filters : 0,
        .nr_users = perfmon_branch_users,
        .filter = perfmon_branch_filter,
    };
    spinlock_unlock(&perfmon_branch_lock);
}

/* The first user: start the driver, the lock not held (busy set). */
static int
perfmon_branch_start(const struct perfmon_branch_driver *drv,
                     unsigned int filter)
{
    int error;

    perfmon_branch_busy = true;
    spinlock_unlock(&perfmon_branch_lock);
    error = drv->ops->start(filter);
    spinlock_lock(&perfmon_branch_lock);
    perfmon_branch_busy = false;

    if (error == 0) {
        perfmon_branch_filter = filter;
        __atomic_store_n(&perfmon_branch_users, 1, __ATOMIC_RELAXED);
    }

    return error;
}

int
perfmon_branch_get(struct perfmon_event *event)
{
    const struct perfmon_branch_driver *drv;
    unsigned int filter;
    int error = 0;

    perfmon_assert_thread_context();
    event->branch_user = false;

    if (!perfmon_branch_wanted(event)) {
        return 0;
    }

    filter = event->sampling->branch_filter;
    perfmon_branch_lock_idle();
    drv = perfmon_branch_drv;

    if (drv == NULL || drv->ops->check(event->dev, filter) != NULL) {
        error = -EOPNOTSUPP;
    } else if (perfmon_branch_users == 0) {
        error = perfmon_branch_start(drv, filter);
    } else if (perfmon_branch_filter != filter) {
        error = -EBUSY;
    } else {
        __atomic_store_n(&perfmon_branch_users, perfmon_branch_users + 1,
                         __ATOMIC_RELAXED);
    }

    spinlock_unlock(&perfmon_branch_lock);
    event->branch_user = (error == 0);
    return error;
}

void
perfmon_branch_put(struct perfmon_event *event)
{
    const struct perfmon_branch_driver *drv;

    perfmon_assert_thread_context();

    if (!event->branch_user) {
        return;
    }

    event->branch_user = false;
    perfmon_branch_lock_idle();
    assert(perfmon_branch_users != 0);
    __atomic_store_n(&perfmon_branch_users, perfmon_branch_users - 1,
                     __ATOMIC_RELAXED);

    if (perfmon_branch_users == 0) {
        drv = perfmon_branch_drv;
        perfmon_branch_busy = true;
        spinlock_unlock(&perfmon_branch_lock);
        drv->ops->stop();
        spinlock_lock(&perfmon_branch_lock);
        perfmon_branch_busy = false;
    }

    spinlock_unlock(&perfmon_branch_lock);
}

void
perfmon_branch_sched_in(void)
{
    const struct perfmon_branch_driver *drv;

    assert(!cpu_intr_enabled());

    /*
     * The thread's slots record branches, so some event holds the driver
     * started (a stop waits for the detach that drops the slot).
     */
    drv = __atomic_load_n(&perfmon_branch_drv, __ATOMIC_ACQUIRE);

    if (drv != NULL) {
        drv->ops->sched_in();
    }
}

#ifdef TALLY_HOST_TEST
void
perfmon_branch_reset(void)
{
    spinlock_init(&perfmon_branch_lock);
    perfmon_branch_drv = NULL;
    perfmon_branch_users = 0;
    perfmon_branch_filter = 0;
    perfmon_branch_busy = false;
    strlcpy(perfmon_branch_absent_text, "not probed",
            sizeof(perfmon_branch_absent_text));
}
#endif /* TALLY_HOST_TEST */
