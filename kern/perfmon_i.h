/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Private interface between the files of the perfmon core; nothing outside
 * kern/perfmon*.c includes it.
 *
 *   perfmon_dev.c    the device table and its lookups, the generic event
 *                    table, the hardware status line
 *   perfmon_pmc.c    the global counter table (slot allocation), the
 *                    switch hook's flag, the poll timers
 *   perfmon.c        events, the per-CPU and per-thread counter state,
 *                    overflow folding
 *   perfmon_intr.c   the overflow-interrupt callback registry
 *   perfmon_inherit.c  inherited events and their children
 */

#ifndef KERN_PERFMON_I_H
#define KERN_PERFMON_I_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/perfmon.h"
#include "kern/spinlock.h"
#include "kern/thread.h"

struct trap_frame;

/*
 * The device table and the counter allocator (kern/perfmon.c) share one
 * lock: taken alone, in thread context, never held across an xcall,
 * thread_call or timer call.  See the lock order in kern/perfmon.c.
 */
extern struct spinlock perfmon_lock;

/*
 * Registered devices.  Written under perfmon_lock; perfmon_devs[i] is set
 * before the count is published past i (release), so a reader that loads
 * the count with acquire ordering may use the entries below it without the
 * lock (devices never go away).
 */
extern struct perfmon_dev *perfmon_devs[PERFMON_MAX_DEVS];
extern unsigned int perfmon_nr_devs_published;

/* Set by perfmon_setup; devices register only after it. */
extern bool perfmon_ready;

static inline unsigned int
perfmon_nr_devs_load(void)
{
    return __atomic_load_n(&perfmon_nr_devs_published, __ATOMIC_ACQUIRE);
}

/*
 * A counter slot, under perfmon_lock.  raw_event, flags, hw_id and
 * sampling are written before the slot is used on any CPU and stay fixed
 * while nr_refs is not zero, so interrupt code reads them without the
 * lock.  A sampling slot (sampling set) serves events of that sampling
 * only, all thread events or all CPU events (thread_events).
 */
struct perfmon_pmc {
    unsigned int nr_refs;               /* events using the slot */
    unsigned int hw_id;
    uint64_t raw_event;
    unsigned int flags;                 /* PERFMON_EF_MODE bits */
    const struct perfmon_sampling *sampling;
    bool thread_events;                 /* sampling slots: whose events */
    struct perfmon_event *users;        /* list through next_user */
};

/*
 * The slots that sample (a bit per slot with sampling set), under
 * perfmon_lock; read without it by the context-switch hook, which only
 * looks at slots its threads use (their bits cannot change meanwhile).
 */
extern uint64_t perfmon_sampling_slots;

/* The global counter table (kern/perfmon_pmc.c), slot by slot. */
extern struct perfmon_pmc perfmon_pmcs[PERFMON_MAX_PMCS];

/* Slots of one device: a device owns PERFMON_DEV_MAX_PMCS consecutive ones. */
#define PERFMON_DEV_SLOT_MASK       ((1ULL << PERFMON_DEV_MAX_PMCS) - 1)

static inline uint64_t
perfmon_width_mask(unsigned int width)
{
    return (width >= 64) ? UINT64_MAX : (1ULL << width) - 1;
}

static inline uint64_t
perfmon_slot_bit(unsigned int slot)
{
    return 1ULL << slot;
}

static inline uint64_t
perfmon_dev_slots(const struct perfmon_dev *dev)
{
    return PERFMON_DEV_SLOT_MASK << (dev->index * PERFMON_DEV_MAX_PMCS);
}

static inline struct perfmon_dev *
perfmon_slot_dev(unsigned int slot)
{
    return perfmon_devs[slot / PERFMON_DEV_MAX_PMCS];
}

/* Whether dev is registered (any context). */
bool perfmon_dev_is_registered(const struct perfmon_dev *dev);

/*
 * kern/perfmon_pmc.c.
 *
 * perfmon_poll_dev_add: prepare polling of a device being registered
 *   (perfmon_lock held): its effective poll interval and timer.
 * perfmon_dev_nr_used: counters allocated on dev now (a snapshot).
 * perfmon_event_get_pmc: find or allocate the counter slot of an event
 *   being attached (event->thread or event->cpu set) and add the event to
 *   its users; 0 or the errors of perfmon_event_attach().  Thread context.
 * perfmon_event_put_pmc: the reverse, at detach.
 * perfmon_pmc_setup: the part of perfmon_setup for this file.
 */
void perfmon_poll_dev_add(struct perfmon_dev *dev);
unsigned int perfmon_dev_nr_used(const struct perfmon_dev *dev);
int perfmon_event_get_pmc(struct perfmon_event *event);
void perfmon_event_put_pmc(struct perfmon_event *event);
void perfmon_pmc_setup(void);

/*
 * kern/perfmon.c, for the poll timer: the slots active on cpu (a hint,
 * any context), and the xcall function that folds dev's counters on the
 * calling CPU.
 */
uint64_t perfmon_cpu_active_slots(unsigned int cpu);
void perfmon_cpu_poll_xcall(void *dev);

/*
 * kern/perfmon_intr.c: run the registered callbacks for an overflow
 * interrupt of dev on cpu (NMI context, no lock), after clearing the
 * branch stack the callbacks may set; perfmon_intr_branches() returns it
 * (its entries and their number), for the samples of the interrupt.
 */
void perfmon_intr_run_callbacks(struct perfmon_dev *dev, unsigned int cpu,
                                uint64_t ovf_mask, struct trap_frame *frame);
const struct perfmon_branch *perfmon_intr_branches(unsigned int *nrp);

/*
 * kern/perfmon_sample.c.
 *
 * perfmon_sample_write: write a sample of sampling on the calling CPU, in
 *   the overflow interrupt (NMI context): the interrupted frame, the period
 *   the sample stands for.  Returns false when the ring was full (the
 *   sample is counted as lost there).
 * perfmon_sample_throttled: record that sampling's period went up to
 *   period on the calling CPU (NMI context).
 * perfmon_sample_setup: the part of perfmon_setup for that file.
 */
bool perfmon_sample_write(const struct perfmon_sampling *sampling,
                          const struct trap_frame *frame, uint64_t period);
void perfmon_sample_throttled(const struct perfmon_sampling *sampling,
                              uint64_t period);

/*
 * kern/perfmon.c, for the other files: the checks of thread context, and
 * an event's own counts (its children's aside), the times only right with
 * times.
 */
static inline __attribute__((always_inline)) void
perfmon_assert_thread_context(void)
{
    assert(cpu_intr_enabled());
    assert(thread_preempt_enabled());
}

void perfmon_event_read_counts(struct perfmon_event *event, bool times,
                               struct perfmon_counts *counts);

/*
 * kern/perfmon_inherit.c: the family of an inherited event, the root (see
 * there for the protocol).  Under perfmon_family_lock (private to that
 * file), but for root, fixed while the family lives.
 *
 * A member says that an inherited event counts a thread: it is on the
 * thread's list (td->members), the root's member on the root's thread, a
 * child's on the child's thread.
 */
struct perfmon_member {
    struct perfmon_family *family;
    struct perfmon_member *next;
};

struct perfmon_child;

struct perfmon_family {
    struct perfmon_event *root;
    struct perfmon_member root_member;
    struct perfmon_child *children;     /* live ones */
    struct perfmon_counts gone;         /* counted by children released */
    unsigned int nr_busy;               /* creations and exits in flight */
    bool enabled;                       /* children created now are */
    bool dying;                         /* the root is being detached */
};

static inline bool
perfmon_event_is_root(const struct perfmon_event *event)
{
    return event->family != NULL && event->family->root == event;
}

/*
 * perfmon_family_create: give an attached thread event its family (the
 *   event's family set), before it is first enabled; 0 or -ENOMEM.
 * perfmon_family_destroy: release every child, add what they counted to
 *   the root's total, free the family (root->family NULL).
 * perfmon_family_set_enabled: the root was enabled or disabled: so are
 *   the children, now and those created from now on.
 * perfmon_family_add_counts: add the children's counts to counts.
 * Thread context, on behalf of the root's owner.
 */
int perfmon_family_create(struct perfmon_event *root);
void perfmon_family_destroy(struct perfmon_event *root);
void perfmon_family_set_enabled(struct perfmon_family *family, bool enabled);
void perfmon_family_add_counts(struct perfmon_family *family, bool times,
                               struct perfmon_counts *counts);

#ifdef TALLY_HOST_TEST
/* Forget the state of one file (perfmon_reset() calls them all). */
void perfmon_dev_reset(void);
void perfmon_intr_reset(void);
void perfmon_pmc_reset(void);
#endif

#endif /* KERN_PERFMON_I_H */
