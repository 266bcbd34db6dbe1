/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Private interface of the perfmon core's lowest layer, which every file
 * of the core may use; nothing outside kern/perfmon/ includes it but the
 * host tests that look inside the core.  The files, from the bottom up:
 * each uses only the files listed before it (tests/tools/test_layers.py
 * checks the order, on every call and include).
 *
 *   perfmon_events.c   the table of generic events
 *   perfmon_counters.c a counter for each of several slots (the matching;
 *                      perfmon_counters.h)
 *   perfmon_evtab.c    the CPU models' event tables
 *   perfmon_selftest.c the drivers' self-test contract
 *   perfmon_dev.c      the device table, the fixed part of its counter
 *                      slots, the counters reserved on every CPU
 *   perfmon_cpu.c      the per-CPU counter record: sections, folding,
 *                      starting and stopping counters, arming sampling
 *                      counters (perfmon_cpu.h)
 *   perfmon_intr.c     the overflow-interrupt callback registry
 *   perfmon_branch.c   the branch-record driver and its users
 *   perfmon_ring.c     the per-CPU record rings (kern/perfmon_ring.h)
 *   perfmon_sample.c   sample buffers and records
 *   perfmon_nmi.c      the overflow interrupt: fold, samples, throttling
 *                      (perfmon_nmi.h)
 *   perfmon_turn.c     a multiplexing turn's selection by share, when it
 *                      needs an order (perfmon_turn.h)
 *   perfmon_sched.c    a slot's users on each CPU, which slot holds which
 *                      counter there, multiplexing (perfmon_sched.h)
 *   perfmon_pmc.c      the counter allocator, the switch hook's flag,
 *                      the poll timers (perfmon_pmc.h)
 *   perfmon_td.c       per-thread counts and the context switch
 *                      (perfmon_td.h)
 *   perfmon_event.c    events: attach, enable, read (perfmon_event.h)
 *   perfmon_switchrec.c, perfmon_switchrec_decode.c
 *                      switch records (kern/perfmon_switchrec.h)
 *   perfmon_inherit.c  inherited events and their children
 *                      (perfmon_inherit.h)
 *   perfmon.c          the entry points over events and their families,
 *                      setup
 *   perfmon_region.c   code regions, counted by CPU events: the markers
 *                      (kern/perfmon_region.h, perfmon_region.h)
 *   perfmon_region_arm.c
 *                      arming code regions, their copies
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
 * The device table and the counter allocator (perfmon_pmc.c) share one
 * lock: taken alone, in thread context, never held across an xcall,
 * thread_call or timer call.  See the lock order in perfmon_event.c.
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
    uint64_t taken;                     /*   every hw id its alloc took */
    uint64_t counters;                  /* flexible: hw ids that count it */
    uint64_t prefer;                    /*   those to use first */
    uint64_t group;
    const struct perfmon_sampling *sampling;
    uint32_t sample_size;               /* perfmon_sample_size(sampling) */
    bool thread_events;                 /* sampling slots: whose events */
    uint8_t sample_layout;              /* perfmon_sample_layout(sampling) */
    struct perfmon_event *users;        /* list through next_user */
};

/*
 * The hardware counters of each device reserved on every CPU: those of
 * pinned slots and those perfmon_dev_alloc() handed out, with all each
 * took besides (its alloc_counters operation).  Written under
 * perfmon_lock, read without it by the scheduler (a flexible slot placed
 * on a counter just reserved is moved off it: perfmon_cpu_evict_xcall).
 */
extern uint64_t perfmon_dev_reserved[PERFMON_MAX_DEVS];

/*
 * A counter of dev reserved for raw_event on every CPU (the device's
 * alloc, then the bits of every counter it takes, *takenp, in
 * perfmon_dev_reserved), and given back, all of them.  Under
 * perfmon_lock.  perfmon_dev_reserve_locked() returns the device's error.
 */
int perfmon_dev_reserve_locked(struct perfmon_dev *dev, uint64_t raw_event,
                               unsigned int flags, unsigned int *hw_idp,
                               uint64_t *takenp);
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
 * The slots a context switch may pass a counter between in place
 * (perfmon_sched_transfer): flexible, alone (no group), counting, on a
 * device with a transfer operation; their fixed fields say so once, when
 * the slot is set up (perfmon_pmc.c's allocator), and the switch tests
 * one mask.
 * Kept as perfmon_sampling_slots is.
 */
extern uint64_t perfmon_pass_slots;

/* The global counter table, slot by slot (perfmon_pmc.c allocates them). */
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

/*
 * Counters allocated on each device now (perfmon_pmc.c's allocator counts
 * them), under perfmon_lock; read without it as a snapshot.
 */
extern unsigned int perfmon_dev_nr_used_[PERFMON_MAX_DEVS];

/* Event states (event->state); anything else is an event never initialised. */
#define PERFMON_EVENT_IDLE          0x5e1d      /* initialised or detached */
#define PERFMON_EVENT_THREAD        0x5e1e
#define PERFMON_EVENT_CPU           0x5e1f

static inline bool
perfmon_event_state_attached(const struct perfmon_event *event)
{
    return event->state == PERFMON_EVENT_THREAD
           || event->state == PERFMON_EVENT_CPU;
}

/* a += b - c, field by field. */
static inline void
perfmon_counts_add_delta(struct perfmon_counts *a,
                         const struct perfmon_counts *b,
                         const struct perfmon_counts *c)
{
    a->value += b->value - c->value;
    a->enabled += b->enabled - c->enabled;
    a->running += b->running - c->running;
}

/*
 * One more on a per-CPU statistic, from its own CPU: one add instruction,
 * which no interrupt or NMI on this CPU can split, so no lock prefix.
 */
static inline void
perfmon_syscnt_inc_local(struct syscnt *syscnt)
{
#ifdef TALLY_HOST_TEST
    syscnt_inc(syscnt);
#else
    __asm__ __volatile__("addq $1, %0" : "+m"(syscnt->value));
#endif
}

/* The checks of thread context, for the entry points of every file. */
static inline __attribute__((always_inline)) void
perfmon_assert_thread_context(void)
{
    assert(cpu_intr_enabled());
    assert(thread_preempt_enabled());
}

/* The generic id named name or one of its aliases, or -1 (perfmon_events.c). */
int perfmon_event_find(const char *name);

/* Whether dev is registered (any context). */
bool perfmon_dev_is_registered(const struct perfmon_dev *dev);

/*
 * kern/perfmon/perfmon_intr.c, for the overflow interrupt on cpu (the
 * calling CPU, its intr_depth counting it; NMI context, no lock).
 * perfmon_intr_has_callbacks (inline, below): whether any is registered,
 * the only test an interrupt without callbacks makes.  Then
 * perfmon_intr_run_callbacks: run them for dev's interrupt; they may set
 * a branch stack, one of its own per nesting level, which
 * perfmon_intr_end_callbacks empties at the interrupt's end.
 * perfmon_intr_branches: the current level's stack (its entries and their
 * number), for the samples of the interrupt.
 */
void perfmon_intr_run_callbacks(struct perfmon_dev *dev, unsigned int cpu,
                                uint64_t ovf_mask, struct trap_frame *frame);
void perfmon_intr_end_callbacks(unsigned int cpu);
const struct perfmon_branch *perfmon_intr_branches(unsigned int *nrp);

/* The registry's entries in use (perfmon_intr.c). */
extern unsigned int perfmon_intr_nr_used;

static inline bool
perfmon_intr_has_callbacks(void)
{
    return __atomic_load_n(&perfmon_intr_nr_used, __ATOMIC_ACQUIRE) != 0;
}

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
 * perfmon_sample_size: the bytes of a record of sampling that do not change
 *   from one sample to the next (all but the call chain's and the branch
 *   stack's entries), computed once per slot (struct perfmon_pmc).
 * perfmon_sample_write: write a sample of sampling on the calling CPU, in
 *   the overflow interrupt (NMI context): its perfmon_sample_size(), the
 *   interrupted frame, the period the sample stands for.  Returns false
 *   when the ring was full (the sample is counted as lost there).
 * perfmon_sample_layout: the layout of sampling's records, worked out
 *   once per slot (struct perfmon_pmc), which names its writer in
 *   perfmon_sample_writers[]: one per set of the fields IP to PERIOD,
 *   storing those alone, tested for nothing, and one for the layouts with
 *   reads, a call chain or a branch stack (PERFMON_SAMPLE_LAYOUT_ANY).
 *   The writers take perfmon_sample_write()'s arguments; it calls them.
 * perfmon_sample_throttled: record that sampling's period went up to
 *   period on the calling CPU (NMI context).
 * perfmon_sample_reads_valid: whether sampling's reads are usable for
 *   PERFMON_SF_READ (1 to PERFMON_MAX_READS events, none NULL).
 * perfmon_sample_setup: the part of perfmon_setup for that file.
 * perfmon_sbuf_ring: the ring of cpu in sbuf, or NULL (no such CPU), for
 *   the other producers of records (kern/perfmon/perfmon_switchrec.c).
 */
struct perfmon_ring *perfmon_sbuf_ring(struct perfmon_sbuf *sbuf,
                                       unsigned int cpu);
uint32_t perfmon_sample_size(const struct perfmon_sampling *sampling);
#define PERFMON_SAMPLE_LAYOUT_ANY   32
typedef bool (*perfmon_sample_write_fn_t)(
    const struct perfmon_sampling *sampling, uint32_t size,
    const struct trap_frame *frame, uint64_t period);
extern const perfmon_sample_write_fn_t
    perfmon_sample_writers[PERFMON_SAMPLE_LAYOUT_ANY + 1];
unsigned int perfmon_sample_layout(const struct perfmon_sampling *sampling);
bool perfmon_sample_write(const struct perfmon_sampling *sampling,
                          uint32_t size, const struct trap_frame *frame,
                          uint64_t period);
void perfmon_sample_throttled(const struct perfmon_sampling *sampling,
                              uint64_t period);
bool perfmon_sample_reads_valid(const struct perfmon_sampling *sampling);

/*
 * kern/perfmon/perfmon_cpu.c: the value PERFMON_SF_READ carries for
 * event, an event of the sampling group interrupting here (NMI context,
 * inside the overflow interrupt's section).
 */
uint64_t perfmon_intr_read_value(const struct perfmon_event *event);

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

#ifdef TALLY_HOST_TEST
/* Forget the state of one file (perfmon_reset() calls them all). */
void perfmon_dev_reset(void);
void perfmon_intr_reset(void);
void perfmon_branch_reset(void);
#endif

#endif /* KERN_PERFMON_I_H */
