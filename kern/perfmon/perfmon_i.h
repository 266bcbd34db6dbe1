/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Private interface between the files of the perfmon core; nothing outside
 * kern/perfmon/ includes it but the host tests that look inside the core.
 *
 *   perfmon.c          events, the per-CPU and per-thread counter state,
 *                      the context-switch hook, overflow folding, sampling
 *                      on the counters
 *   perfmon_dev.c      the device table and its lookups, the hardware
 *                      status line
 *   perfmon_events.c   the table of generic events
 *   perfmon_pmc.c      the global counter table (slot allocation), the
 *                      switch hook's flag, the poll timers
 *   perfmon_sched.c    which slot holds which counter on each CPU
 *                      (multiplexing)
 *   perfmon_inherit.c  inherited events and their children
 *   perfmon_intr.c     the overflow-interrupt callback registry
 *   perfmon_branch.c   the branch-record driver and its users
 *   perfmon_sample.c   sample buffers and records
 *   perfmon_ring.c     the per-CPU record rings (its interface is
 *                      kern/perfmon_ring.h)
 *
 * kern/perfmon/README.md describes how they fit together.
 */

#ifndef KERN_PERFMON_I_H
#define KERN_PERFMON_I_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/spinlock.h"
#include "kern/syscnt.h"
#include "kern/thread.h"

struct trap_frame;

/*
 * The device table and the counter allocator (kern/perfmon/perfmon.c) share one
 * lock: taken alone, in thread context, never held across an xcall,
 * thread_call or timer call.  See the lock order in kern/perfmon/perfmon.c.
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
 * A counter slot: a logical counter, one raw event in one mode, that the
 * events asking for the same thing share, under perfmon_lock.  Everything
 * but nr_refs and users is written before the slot is used on any CPU and
 * stays fixed while nr_refs is not zero, so interrupt code reads it
 * without the lock.
 *
 * A pinned slot owns the hardware counter hw_id on every CPU (the
 * device's alloc reserved it).  The others are flexible: on each CPU
 * where they are active, the scheduler (kern/perfmon/perfmon_sched.c) gives them
 * one of the counters in counters (preferring those in prefer) when one
 * is free, and makes them take turns when there are more of them than
 * counters.  A slot of an event group (group: the group's id, 0 for none)
 * serves that group only; the active slots of one group on a CPU are
 * scheduled all together or not at all.  A group's id is its own, not its
 * leader's address: a group whose leader was detached first lives on with
 * its members, apart from any group led later by an event at that place.
 * A sampling slot (sampling set) serves events of that sampling only, all
 * thread events or all CPU events (thread_events).
 */
struct perfmon_pmc {
    unsigned int nr_refs;               /* events using the slot */
    uint64_t raw_event;
    unsigned int flags;                 /* PERFMON_EF_MODE bits */
    bool pinned;
    unsigned int hw_id;                 /* pinned slots only */
    uint64_t counters;                  /* flexible: hw ids that count it */
    uint64_t prefer;                    /*   those to use first */
    uint64_t group;
    const struct perfmon_sampling *sampling;
    bool thread_events;                 /* sampling slots: whose events */
    struct perfmon_event *users;        /* list through next_user */
};

/*
 * The hardware counters of each device reserved on every CPU: those of
 * pinned slots and those perfmon_dev_alloc() handed out.  Written under
 * perfmon_lock, read without it by the scheduler (a flexible slot placed
 * on a counter just reserved is moved off it: perfmon_cpu_evict_xcall).
 */
extern uint64_t perfmon_dev_reserved[PERFMON_MAX_DEVS];

/*
 * A counter of dev reserved for raw_event on every CPU (the device's
 * alloc, then its bit in perfmon_dev_reserved), and given back.  Under
 * perfmon_lock.  perfmon_dev_reserve_locked() returns the device's error.
 */
int perfmon_dev_reserve_locked(struct perfmon_dev *dev, uint64_t raw_event,
                               unsigned int flags, unsigned int *hw_idp);
void perfmon_dev_unreserve_locked(struct perfmon_dev *dev,
                                  unsigned int hw_id);

/*
 * The slots that sample (a bit per slot with sampling set), under
 * perfmon_lock; read without it by the context-switch hook, which only
 * looks at slots its threads use (their bits cannot change meanwhile).
 */
extern uint64_t perfmon_sampling_slots;

/*
 * The sampling slots whose samples carry branch stacks (PERFMON_SF_BRANCH),
 * a subset of perfmon_sampling_slots kept the same way: the switch hook
 * tells the branch-record driver when a thread using one comes in.
 */
extern uint64_t perfmon_branch_slots;

/*
 * A counter slot on one CPU.  nr_refs counts the enabled CPU events and
 * loaded threads needing the counter to run here; dev and mask (its
 * width's) are the slot's, kept here while it holds a counter for the
 * reads, which use nothing else of the slot's device.  value grows by the
 * difference between raw reads, taken modulo 2^width.  wrap_seen: a plain
 * update saw the raw value go backwards, so the overflow interrupt of that
 * wrap must not add a period again.  enabled and running grow with the TSC
 * (perfmon_cpu_pmc_clock) while the slot has users here and while it holds
 * a hardware counter here (its bit in sched_mask).
 *
 * A sampling slot also keeps, while it runs here: the period, the events
 * still to count to the next sample from armed_value (the value when the
 * counter was last armed: it overflows after min(left, what the device can
 * arm) events; while the slot waits for a counter, left alone says it:
 * perfmon_cpu_pmc_stop charged what it had counted), the value and TSC at
 * the last sample (frequency mode),
 * the floor throttling put under the period, and the period of the sample
 * due in the current interrupt.
 */
struct perfmon_cpu_pmc {
    unsigned int nr_refs;
    unsigned int hw_id;
    struct perfmon_dev *dev;
    uint64_t mask;
    uint64_t prev;
    uint64_t value;
    bool wrap_seen;
    uint64_t stamp;                     /* TSC the times are counted to */
    uint64_t enabled;                   /* TSC cycles with nr_refs > 0 */
    uint64_t running;                   /* and holding a counter */
    uint64_t share_enabled;             /* enabled and running when it */
    uint64_t share_running;             /*   last became active here */

    uint64_t period;
    int64_t left;
    uint64_t armed_value;
    uint64_t sample_value;
    uint64_t sample_tsc;
    uint64_t min_period;
    uint64_t due_period;
};

/*
 * A device's counters on one CPU, for the scheduler (kern/perfmon/perfmon_sched.c):
 * hw_used, the hardware counters started here (pinned and flexible
 * slots); waiting, the active flexible slots that have none (they take
 * turns).
 */
struct perfmon_cpu_dev {
    uint64_t hw_used;
    uint64_t waiting;
};

/*
 * Overflow interrupts nest at most this deep on one CPU: an NMI landing in
 * a soft or step PMU's deadline call, which is no NMI.
 */
#define PERFMON_INTR_MAX_DEPTH      2

/*
 * Per-CPU PMU state, changed by its own CPU only, with interrupts disabled
 * (xcalls, thread_call, the context switch hook, the overflow interrupt).
 * active_mask (slots with nr_refs > 0) is also read by the poll timer on
 * other CPUs, as a hint.  sched_mask: the active slots that hold a
 * hardware counter here, the ones folded, polled and interrupted.
 *
 * gen grows by one in every section that may change the state (see
 * perfmon_cpu_enter and the overflow interrupt).  It lets thread context
 * on the same CPU read the state without disabling interrupts: such a
 * section, when it interrupts the reader, completes before the reader
 * resumes, so an unchanged gen across the reads means nothing changed
 * under them (see perfmon_event_read_local).
 */
struct perfmon_cpu {
    bool busy;
    unsigned long gen;
    uint64_t pending;                   /* slots, set by the NMI while busy */
    uint64_t active_mask;
    uint64_t sched_mask;
    uint64_t now;                       /* TSC at the section's start */
    struct perfmon_td *td;              /* the thread loaded here, or NULL */
    unsigned int intr_depth;            /* overflow interrupts running */
    bool in_intr;                       /* the interrupt's own fold runs */
    uint64_t due;                       /* slots with a sample due in it */
    uint64_t window_start;              /* TSC, throttling window */
    uint64_t window_cycles;             /* spent sampling in the window */
    struct syscnt nr_overflows;
    struct syscnt nr_intrs;
    struct syscnt nr_polls;
    struct syscnt nr_unsampled;
    struct syscnt nr_throttles;
    struct syscnt nr_rotations;
    unsigned int mux_ticks;             /* clock ticks since a rotation */
    struct perfmon_cpu_dev devs[PERFMON_MAX_DEVS];
    struct perfmon_cpu_pmc pmcs[PERFMON_MAX_PMCS];
} __aligned(CACHE_LINE_SIZE);

extern struct perfmon_cpu perfmon_cpus[CPU_MAX];

static inline struct perfmon_cpu *
perfmon_cpu_get(unsigned int cpu)
{
    assert(cpu < CPU_MAX);
    return &perfmon_cpus[cpu];
}

/* The global counter table (kern/perfmon/perfmon_pmc.c), slot by slot. */
extern struct perfmon_pmc perfmon_pmcs[PERFMON_MAX_PMCS];

/* Slots of one device: a device owns PERFMON_DEV_MAX_PMCS consecutive ones. */
#define PERFMON_DEV_SLOT_MASK       ((1ULL << PERFMON_DEV_MAX_PMCS) - 1)

/* a += b, count and times. */
static inline void
perfmon_counts_add(struct perfmon_counts *a, const struct perfmon_counts *b)
{
    a->value += b->value;
    a->enabled += b->enabled;
    a->running += b->running;
}

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

/* The generic id named name or one of its aliases, or -1 (perfmon_events.c). */
int perfmon_event_find(const char *name);

/* Whether dev is registered (any context). */
bool perfmon_dev_is_registered(const struct perfmon_dev *dev);

/*
 * kern/perfmon/perfmon_pmc.c.
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
 * kern/perfmon/perfmon.c, for the poll timer: the slots active on cpu (a hint,
 * any context), and the xcall function that folds dev's counters on the
 * calling CPU.
 */
uint64_t perfmon_cpu_active_slots(unsigned int cpu);
void perfmon_cpu_poll_xcall(void *dev);

/*
 * kern/perfmon/perfmon_intr.c, for the overflow interrupt on cpu (the
 * calling CPU, its intr_depth counting it; NMI context, no lock).
 * perfmon_intr_run_callbacks: run the registered callbacks for dev's
 * interrupt, after clearing the branch stack they may set, one of its own
 * per nesting level.  perfmon_intr_branches: the current level's stack
 * (its entries and their number), for the samples of the interrupt.
 */
void perfmon_intr_run_callbacks(struct perfmon_dev *dev, unsigned int cpu,
                                uint64_t ovf_mask, struct trap_frame *frame);
const struct perfmon_branch *perfmon_intr_branches(unsigned int *nrp);

/*
 * kern/perfmon/perfmon_branch.c.
 *
 * perfmon_branch_filter_valid: filter is complete (a mode and a kind, no
 *   unknown bit).
 * perfmon_branch_get: an event is being attached (its device chosen): if
 *   its samples ask for branch stacks, count it as a user of the driver,
 *   starting the driver for the first; 0, -EOPNOTSUPP (no driver, or the
 *   driver cannot serve it), -EBUSY (another filter in use), or the
 *   driver's start error.  Thread context.
 * perfmon_branch_put: the reverse, at detach (after the slot is released).
 * perfmon_branch_sched_in: the switch hook loaded a thread using a slot of
 *   perfmon_branch_slots here (interrupts disabled, in the section).
 */
bool perfmon_branch_filter_valid(unsigned int filter);
int perfmon_branch_get(struct perfmon_event *event);
void perfmon_branch_put(struct perfmon_event *event);
void perfmon_branch_sched_in(void);

/*
 * kern/perfmon/perfmon_sample.c.
 *
 * perfmon_sample_write: write a sample of sampling on the calling CPU, in
 *   the overflow interrupt (NMI context): the interrupted frame, the period
 *   the sample stands for.  Returns false when the ring was full (the
 *   sample is counted as lost there).
 * perfmon_sample_throttled: record that sampling's period went up to
 *   period on the calling CPU (NMI context).
 * perfmon_sample_reads_valid: whether sampling's reads are usable for
 *   PERFMON_SF_READ (1 to PERFMON_MAX_READS events, none NULL).
 * perfmon_sample_setup: the part of perfmon_setup for that file.
 */
bool perfmon_sample_write(const struct perfmon_sampling *sampling,
                          const struct trap_frame *frame, uint64_t period);
void perfmon_sample_throttled(const struct perfmon_sampling *sampling,
                              uint64_t period);
bool perfmon_sample_reads_valid(const struct perfmon_sampling *sampling);

/*
 * kern/perfmon/perfmon.c: the value PERFMON_SF_READ carries for event, an
 * event of the sampling group interrupting here (NMI context, inside the
 * overflow interrupt's section).
 */
uint64_t perfmon_intr_read_value(const struct perfmon_event *event);

/*
 * kern/perfmon/perfmon.c, for the other files: the checks of thread context, and
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
 * kern/perfmon/perfmon_inherit.c: the family of an inherited event, the root (see
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

/*
 * kern/perfmon/perfmon.c, for the scheduler.  perfmon_cpu_enter/leave: a section
 * on the local CPU's state (interrupts disabled; cpu->now set).
 * perfmon_cpu_pmc_start: give slot the hardware counter hw_id here and
 * start it; perfmon_cpu_pmc_stop: fold (unless folded: the counts were
 * just taken at now), stop and take it back.
 * perfmon_cpu_pmc_share: the share of its enabled time slot ran until
 * now, in 2^-20ths (the loaded thread's, for its slots; the CPU's
 * otherwise).
 */
struct perfmon_cpu *perfmon_cpu_enter(void);
void perfmon_cpu_leave(struct perfmon_cpu *cpu);
void perfmon_cpu_pmc_start(struct perfmon_cpu *cpu, unsigned int slot,
                           unsigned int hw_id, uint64_t now);
void perfmon_cpu_pmc_stop(struct perfmon_cpu *cpu, unsigned int slot,
                          uint64_t now, bool folded);
uint64_t perfmon_cpu_pmc_share(struct perfmon_cpu *cpu, unsigned int slot,
                               uint64_t now);

/*
 * kern/perfmon/perfmon_sched.c (see there), in a section on cpu.
 * perfmon_sched_in: slot just became active here (in active_mask).
 * perfmon_sched_out: slot just stopped being active here.
 * perfmon_sched_rotate: one turn of the slots waiting for a counter
 *   (every device's).  Also after a thread with slots waiting was loaded.
 * perfmon_sched_evict_all: thread context, after a counter of dev was
 *   reserved: every CPU moves its flexible slots off it.
 * perfmon_sched_setup: the part of perfmon_setup for that file.
 * perfmon_counters_assign: a counter for each of n slots, slot i taking
 *   one of masks[i] (those of prefer[i] first), each its own, into
 *   hw_ids[] (may be NULL); false when there is no such assignment.
 *   Pure; any context (NMI included: no lock, no allocation).
 */
bool perfmon_counters_assign(const uint64_t *masks, const uint64_t *prefer,
                             unsigned int n, unsigned int *hw_ids);
void perfmon_sched_in(struct perfmon_cpu *cpu, unsigned int slot,
                      uint64_t now);
void perfmon_sched_out(struct perfmon_cpu *cpu, unsigned int slot,
                       uint64_t now);
void perfmon_sched_rotate(struct perfmon_cpu *cpu, uint64_t now);
void perfmon_sched_evict_all(struct perfmon_dev *dev);
void perfmon_sched_setup(void);

#ifdef TALLY_HOST_TEST
/* Forget the state of one file (perfmon_reset() calls them all). */
void perfmon_dev_reset(void);
void perfmon_intr_reset(void);
void perfmon_pmc_reset(void);
void perfmon_sched_reset(void);
void perfmon_branch_reset(void);
#endif

#endif /* KERN_PERFMON_I_H */
