/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core.
 *
 * PMU drivers register devices (struct perfmon_dev, kern/perfmon_dev.h):
 * an operation table, a counter width and a number of counters.  Users
 * count events with struct perfmon_event, attached either to a thread
 * (counting only while that thread runs, on any CPU) or to a CPU
 * (counting everything that runs there).  The core shares one counter
 * between events that ask for the same raw event, extends the device's
 * narrow counters to 64 bits, catches every wrap through the device's
 * overflow interrupt or, when it has none, a poll timer, and lets other
 * drivers hook the overflow interrupt through a callback registry.
 *
 * Contexts: unless stated otherwise, functions are called from thread
 * context with interrupts enabled (asserted), and may issue xcalls.  An
 * event is owned by its user: calls on one event must not run concurrently
 * (different events, even on the same thread or counter, may be used from
 * any number of threads at once).
 */

#ifndef KERN_PERFMON_H
#define KERN_PERFMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/init.h"
#include "kern/macros.h"
#include "kern/perfmon_dev.h"
#include "kern/perfmon_types.h"

struct perfmon_selftest;                /* kern/perfmon_selftest.h */
struct thread;
struct trap_frame;

/*
 * Generic events.  A device translates those it can count into its raw
 * event codes; the software events are counted by the software PMU, the
 * others by hardware PMUs.  Names, aliases and descriptions are in one
 * table (perfmon_event_desc()).
 */
#define PERFMON_EV_CYCLE            0
#define PERFMON_EV_REF_CYCLE        1
#define PERFMON_EV_INSTRUCTION      2
#define PERFMON_EV_CACHE_REF        3
#define PERFMON_EV_CACHE_MISS       4
#define PERFMON_EV_BRANCH           5
#define PERFMON_EV_BRANCH_MISS      6
#define PERFMON_EV_TASK_CLOCK       7
#define PERFMON_EV_CONTEXT_SWITCH   8
#define PERFMON_EV_MIGRATION        9
#define PERFMON_EV_INTERRUPT        10
#define PERFMON_EV_XCALL            11
#define PERFMON_EV_NMI              12
#define PERFMON_EV_TEST             13
#define PERFMON_EV_XCALL_SENT       14
#define PERFMON_NR_EVENTS           15

/*
 * Event flags: at least one of KERN and USER.
 *
 * DISABLED: attach the event without counting; perfmon_event_enable()
 * (or perfmon_events_enable(), for several at once) starts it.
 * INHERIT (thread events): the threads the thread creates from then on,
 * and theirs, are counted too, each on its own counter state; the event's
 * count and times include theirs, also after they exit.
 * PINNED: the event must always count, or fail to attach: it gets a
 * hardware counter of its own on every CPU (perf's pinned events, the :D
 * modifier).  Without it an event is flexible: when a CPU has more events
 * than counters, they take turns (multiplexing), and each event's running
 * time says how long it really counted (perfmon_event_read_times()).
 */
#define PERFMON_EF_KERN     0x1     /* count in kernel mode */
#define PERFMON_EF_USER     0x2     /* count in user mode */
#define PERFMON_EF_RAW      0x4     /* id is a raw event code of the device */
#define PERFMON_EF_DISABLED 0x8     /* attach without counting */
#define PERFMON_EF_INHERIT  0x10    /* count the thread's children */
#define PERFMON_EF_PINNED   0x20    /* a counter of its own, or fail */
#define PERFMON_EF_MODE     (PERFMON_EF_KERN | PERFMON_EF_USER)
#define PERFMON_EF_MASK     (PERFMON_EF_MODE | PERFMON_EF_RAW \
                             | PERFMON_EF_DISABLED | PERFMON_EF_INHERIT \
                             | PERFMON_EF_PINNED)

/*
 * A generic event as users name it: its canonical name, up to
 * PERFMON_EVENT_MAX_ALIASES other names (NULL-terminated when fewer), a
 * one-line description, and the modes it tells apart (PERFMON_EF_MODE
 * bits): both for hardware events; KERN for the software events counting
 * kernel work, which a :u event never sees (Tally has no user mode, so it
 * counts 0, as perf's does for kernel work); none for the clocks, which
 * count time in whatever mode.
 */
#define PERFMON_EVENT_MAX_ALIASES   2

struct perfmon_event_desc {
    const char *name;
    const char *aliases[PERFMON_EVENT_MAX_ALIASES];
    const char *desc;
    unsigned int modes;
};

/* The description of generic event id, or NULL for an unknown id. */
const struct perfmon_event_desc *perfmon_event_desc(unsigned int id);

/*
 * Look an event name up.  With dev NULL: the generic names only.  With a
 * device: its own named raw events first (*flagsp = PERFMON_EF_RAW,
 * *idp = raw code), then the generic events it can count (*flagsp = 0,
 * *idp = generic id).  Returns 0, -EINVAL for a NULL argument, -ENOENT
 * when the name is unknown or the device cannot count it.
 */
int perfmon_lookup_event(struct perfmon_dev *dev, const char *name,
                         uint64_t *idp, unsigned int *flagsp);

/*
 * Whether n events, event i able to count on the counters (hw ids) in
 * masks[i], can all hold a counter at once, each its own: whether a group
 * of them can ever count together.  Pure; any context but NMI.
 */
bool perfmon_counters_fit(const uint64_t *masks, unsigned int n);

/*
 * The counters of dev able to count raw_event in the mode flags, through
 * its counters operation (serialised like the other global operations):
 * 0 and the mask of hw ids in *countersp, -EINVAL for a bad argument,
 * unregistered device or a raw code with bits it does not define,
 * -ENOENT when it cannot count raw_event.  Thread context.
 */
int perfmon_dev_counters(struct perfmon_dev *dev, uint64_t raw_event,
                         unsigned int flags, uint64_t *countersp);

/*
 * Counters in use, for `perfmon info`: fn is called once per allocated
 * counter, with the allocator lock held (fn must not sleep or call into
 * perfmon).  users[] describes up to PERFMON_PMC_INFO_MAX_USERS of its
 * events; thread names stay valid during the call.
 */
#define PERFMON_PMC_INFO_MAX_USERS  8

struct perfmon_pmc_user {
    const struct thread *thread;        /* NULL for a CPU event */
    unsigned int cpu;                   /* for a CPU event */
    bool inherited;                     /* a child of an inherited event */
};

struct perfmon_pmc_info {
    struct perfmon_dev *dev;
    unsigned int index;                 /* counter slot in the device */
    bool pinned;                        /* a counter of its own: */
    unsigned int hw_id;                 /*   that counter */
    bool grouped;                       /* an event group's */
    uint64_t raw_event;
    unsigned int flags;                 /* PERFMON_EF_MODE bits */
    unsigned int nr_users;              /* events sharing the counter */
    unsigned int nr_inherited;          /*   of them inherited children */
    struct perfmon_pmc_user users[PERFMON_PMC_INFO_MAX_USERS];
    bool sampling;                      /* a sampling counter: */
    uint64_t period;                    /*   its period, or first period */
    unsigned int freq;                  /*   its frequency, 0: fixed */
    size_t buffer_size;                 /*   its buffer, bytes per CPU */
};

typedef void (*perfmon_pmc_fn_t)(const struct perfmon_pmc_info *info,
                                 void *arg);

void perfmon_pmc_foreach(perfmon_pmc_fn_t fn, void *arg);

/*
 * Sampling.
 *
 * An event in sampling mode writes a sample every period events: its
 * counter is armed (struct perfmon_dev_ops.write) to overflow after the
 * events left to the next sample, and the overflow interrupt writes the
 * sample into the buffer of the CPU it ran on, then arms the counter again.
 * The event's count stays exact, as in counting mode.  With freq, the core
 * adjusts the period after each sample so that a steady workload gives
 * freq samples per second per CPU.  When sampling interrupts take more than
 * perfmon.max_sample_share percent of a CPU's time (boot option, default
 * 25), the core doubles the period of the events that sampled there and
 * records that it did (PERFMON_REC_THROTTLE).
 *
 * Sampling needs a device with an overflow interrupt and a write
 * operation; events that sample never share a counter with counting
 * events, and only with sampling events of the same struct
 * perfmon_sampling that never count on one CPU at once (the CPU events of
 * one recording, one per CPU, or the thread events of one recording).  A
 * thread event's progress towards its next sample (and its period, in
 * frequency mode) follows the thread across switches and migrations.
 *
 * Overflows that land while the CPU is inside perfmon's own short
 * sections (a context switch, an attach) are counted and re-armed but not
 * sampled: syscnt perfmon_nr_unsampled/N counts them.
 */

/* Fields of a sample, in their order in a record (perf's order). */
#define PERFMON_SF_IP           0x01    /* u64 interrupted instruction */
#define PERFMON_SF_TID          0x02    /* u32 0, u32 thread id */
#define PERFMON_SF_TIME         0x04    /* u64 ns since boot (TSC) */
#define PERFMON_SF_CPU          0x08    /* u32 cpu, u32 0 */
#define PERFMON_SF_PERIOD       0x10    /* u64 events this sample stands for */
#define PERFMON_SF_CALLCHAIN    0x20    /* u64 nr, u64 ips[nr]: ip, callers */
#define PERFMON_SF_BRANCH       0x40    /* u64 nr, struct perfmon_branch[nr] */
#define PERFMON_SF_READ         0x80    /* u64 nr, u64 values[nr] */
#define PERFMON_SF_MASK         0xff

/*
 * PERFMON_SF_READ comes after PERIOD, in perf's place for PERF_SAMPLE_READ:
 * the values of sampling->reads (the leader of a group and its members,
 * perf's leader sampling), each its counter slot's value on the sample's
 * CPU.  That value only grows (it may hold what the slot counted for users
 * before), so the difference between two samples of one CPU is what the
 * event counted between them.
 */
#define PERFMON_MAX_READS       8

/* Most call-chain entries (the interrupted ip included). */
#define PERFMON_MAX_CALLCHAIN   128

/* Most branch-stack entries a sample carries. */
#define PERFMON_MAX_BRANCHES    32

/* Highest sampling frequency, in samples per second per CPU. */
#define PERFMON_MAX_FREQ        100000

/* Highest period: periods are kept below 2^62 so that sums cannot wrap. */
#define PERFMON_MAX_PERIOD      (1ULL << 62)

/*
 * A branch record: from, to, and flags laid out as the third word of
 * perf's struct perf_branch_entry, so that records go out to perf.data as
 * they are: MISPRED or PREDICTED when the hardware tells (neither when it
 * does not), the core cycles since the previous recorded branch in bits
 * 19:4 (0: unknown), and the kind of branch in bits 23:20 (PERFMON_BRT_*,
 * perf's PERF_BR_* numbers; 0: unknown).
 */
#define PERFMON_BR_MISPRED      0x1
#define PERFMON_BR_PREDICTED    0x2
#define PERFMON_BR_CYCLES_SHIFT 4
#define PERFMON_BR_CYCLES_MAX   0xffffULL
#define PERFMON_BR_TYPE_SHIFT   20
#define PERFMON_BR_TYPE_MASK    (0xfULL << PERFMON_BR_TYPE_SHIFT)

#define PERFMON_BRT_UNKNOWN     0
#define PERFMON_BRT_COND        1       /* conditional jump */
#define PERFMON_BRT_UNCOND      2       /* direct jump */
#define PERFMON_BRT_IND         3       /* indirect jump */
#define PERFMON_BRT_CALL        4       /* direct call */
#define PERFMON_BRT_IND_CALL    5       /* indirect call */
#define PERFMON_BRT_RET         6       /* return */

struct perfmon_branch {
    uint64_t from;
    uint64_t to;
    uint64_t flags;
};

/*
 * Which branches a branch stack records, perf's --branch-filter names: at
 * least one mode (where the branch was taken) and one kind.  ANY is every
 * kind; ANY_CALL the calls, direct and indirect, and far branches (system
 * calls, interrupts); ANY_RET the returns and far returns.
 */
#define PERFMON_BRF_USER        0x001   /* u */
#define PERFMON_BRF_KERN        0x002   /* k */
#define PERFMON_BRF_ANY         0x004   /* any */
#define PERFMON_BRF_ANY_CALL    0x008   /* any_call */
#define PERFMON_BRF_ANY_RET     0x010   /* any_ret */
#define PERFMON_BRF_IND_CALL    0x020   /* ind_call */
#define PERFMON_BRF_CALL        0x040   /* call */
#define PERFMON_BRF_COND        0x080   /* cond */
#define PERFMON_BRF_IND_JMP     0x100   /* ind_jmp */
#define PERFMON_BRF_MODE        (PERFMON_BRF_USER | PERFMON_BRF_KERN)
#define PERFMON_BRF_KINDS       0x1fc
#define PERFMON_BRF_MASK        (PERFMON_BRF_MODE | PERFMON_BRF_KINDS)

/*
 * Record types in sample buffers (struct perfmon_rec_hdr of
 * kern/perfmon_ring.h).  The core writes SAMPLE (misc: 0; payload: u32
 * fields, u32 the sampling id, then the fields), THROTTLE (misc: the
 * sampling id; payload: u64 time in ns, u64 the new period), SWITCH
 * (kern/perfmon_switchrec.h) and COMM (misc: a thread's id; payload: its
 * name, PERFMON_REC_NAME_SIZE bytes padded with NULs), for a thread that
 * an inherited sampling event counts from its creation: its samples may
 * be read after it is gone, and its name with it.  The other types are
 * free for consumers that store records in the same format.
 */
#define PERFMON_REC_SAMPLE      1
#define PERFMON_REC_THROTTLE    2
#define PERFMON_REC_SWITCH      3
#define PERFMON_REC_COMM        4
#define PERFMON_REC_USER        16

#define PERFMON_REC_NAME_SIZE   32

/* A set of per-CPU sample rings (kern/perfmon/perfmon_sample.c). */
struct perfmon_sbuf;

/*
 * Create a buffer of size bytes per CPU online, a power of two from
 * PERFMON_SBUF_MIN to PERFMON_SBUF_MAX.  Returns 0, -EINVAL for a bad size,
 * -ENOMEM.  perfmon_sbuf_destroy() frees it: no event may use it then.
 * Thread context.
 */
#define PERFMON_SBUF_MIN        4096
#define PERFMON_SBUF_MAX        (16 * 1024 * 1024)

int perfmon_sbuf_create(struct perfmon_sbuf **sbufp, size_t size);
void perfmon_sbuf_destroy(struct perfmon_sbuf *sbuf);

/*
 * The consumer's side, thread context, any CPU, one consumer per buffer:
 * copy the oldest record of cpu's ring into dst (at most cap bytes) and
 * consume it.  Returns its size, 0 when there is none, or its size,
 * leaving it, when that is more than cap (dst may be NULL with a cap of
 * 0).  It is the one way out of the rings, and it finishes each sample's
 * call chain: the overflow NMI stores the frames raw, doing only what
 * memory safety needs, and the proof that each is a real caller, which
 * depends only on the addresses stored and the kernel's text, is made
 * here, once, out of the NMI (arch/x86/unwind.h).  The chain is cut at
 * the first frame that is none, what follows it moved down, and the size
 * given is the record's as read: exactly the bytes a checked walk would
 * have stored.  The raw record holds the ring's room until it is read.
 * perfmon_sbuf_drop(): consume it without a copy (its size as read, or 0:
 * none).
 * perfmon_sbuf_lost(): records dropped so far on cpu because its ring was
 * full.
 */
size_t perfmon_sbuf_read(struct perfmon_sbuf *sbuf, unsigned int cpu,
                         void *dst, size_t cap);
size_t perfmon_sbuf_drop(struct perfmon_sbuf *sbuf, unsigned int cpu);
uint64_t perfmon_sbuf_lost(const struct perfmon_sbuf *sbuf, unsigned int cpu);
unsigned int perfmon_sbuf_nr_cpus(const struct perfmon_sbuf *sbuf);
size_t perfmon_sbuf_size(const struct perfmon_sbuf *sbuf);   /* per CPU */

/* A sample, decoded from a PERFMON_REC_SAMPLE record. */
struct perfmon_sample {
    unsigned int fields;
    uint32_t id;
    uint64_t ip;
    unsigned int tid;
    uint64_t time_ns;
    unsigned int cpu;
    uint64_t period;
    unsigned int nr_ips;
    const uint64_t *ips;                /* into the record */
    unsigned int nr_branches;
    const struct perfmon_branch *branches;      /* into the record */
    unsigned int nr_reads;
    const uint64_t *reads;              /* into the record */
};

/*
 * Decode the sample record rec of size bytes.  Returns 0, or -EINVAL when
 * it is not a well-formed sample record (any input: records may come from
 * a damaged store).
 */
int perfmon_sample_decode(const void *rec, size_t size,
                          struct perfmon_sample *sample);

/*
 * How an event samples: set by its user, read by the core, which keeps a
 * pointer to it: it must stay valid and unchanged while an event that uses
 * it is attached.
 */
struct perfmon_sampling {
    uint64_t period;                    /* events per sample; with freq,
                                           the first period (0: a guess) */
    unsigned int freq;                  /* samples/s per CPU, 0: fixed */
    unsigned int fields;                /* PERFMON_SF_* */
    uint32_t id;                        /* copied into the samples */
    struct perfmon_sbuf *sbuf;          /* where they go */
    unsigned int branch_filter;         /* PERFMON_BRF_*, for
                                           PERFMON_SF_BRANCH */
    struct perfmon_event *const *reads; /* PERFMON_SF_READ: 1 to */
    unsigned int nr_reads;              /*   PERFMON_MAX_READS events of
                                           the group, attached with it */
};

struct perfmon_family;

/*
 * An event.  The caller owns the storage; all fields are private to the
 * core.  start and total are in TSC cycles for the times (see struct
 * perfmon_counts).
 */
struct perfmon_event {
    uint64_t id;                        /* generic id or raw code */
    unsigned int flags;
    unsigned int state;
    bool enabled;                       /* attached and counting */
    struct perfmon_dev *dev;            /* chosen device, or NULL */
    unsigned int slot;                  /* global counter slot */
    unsigned long record_offset;        /*   its record in a CPU's state */
    struct thread *thread;              /* attached thread, holds a ref */
    struct perfmon_td *td;              /*   its perfmon state */
    struct perfmon_td_pmc *tpmc;        /*   its slot's there */
    unsigned int cpu;                   /* attached CPU */
    struct perfmon_counts start;        /* the thread's or CPU's, when
                                           enabled */
    struct perfmon_counts total;        /* of the enabled spans ended */
    const struct perfmon_sampling *sampling;    /* NULL: counting */
    struct perfmon_event *next_user;    /* on the counter's user list */
    struct perfmon_family *family;      /* inherited events, their
                                           children's too */
    struct perfmon_event *group;        /* its group's leader, or NULL */
    bool branch_user;                   /* counted by the branch driver */
};

/*
 * Initialise an event for generic event id, or raw code id of its device
 * with PERFMON_EF_RAW.  Returns 0, or -EINVAL for a NULL event, unknown flag
 * bits, no mode bit, or an unknown generic id.  The count starts at 0.
 */
int perfmon_event_init(struct perfmon_event *event, uint64_t id,
                       unsigned int flags);

/*
 * Choose the device that counts the event (NULL: the default).  By default
 * a generic event goes to the first registered device that can count it,
 * named_only devices left out, and a raw event to the first registered
 * device.  Returns 0, -EINVAL for a NULL or attached event, -ENODEV when
 * dev is not registered.
 */
int perfmon_event_set_dev(struct perfmon_event *event,
                          struct perfmon_dev *dev);

/*
 * Put an event that is not attached in sampling mode (sampling not NULL)
 * or back in counting mode (NULL).  Returns 0, or -EINVAL for a NULL or
 * attached event, a period of 0 without freq, a period above
 * PERFMON_MAX_PERIOD, a freq above PERFMON_MAX_FREQ, unknown fields or no
 * buffer, or with PERFMON_SF_BRANCH a branch filter with unknown bits, no
 * mode or no kind.  Attaching it later fails with -EOPNOTSUPP when its
 * device has no overflow interrupt or cannot arm counters, or with
 * PERFMON_SF_BRANCH when no branch-record driver can give its samples
 * branch stacks (perfmon_branch_why_not() says why), and with -EBUSY when
 * other events record branch stacks with another filter.  A period below
 * the device's shortest (struct perfmon_dev's min_arm: 2 for the x86
 * PMUs, as on Linux, 1 for the soft PMU) samples at that one, and its
 * samples say so.
 */
int perfmon_event_set_sampling(struct perfmon_event *event,
                               const struct perfmon_sampling *sampling);

/*
 * Put an event that is not attached in leader's group (leader itself for
 * the leader; NULL: no group).  The events of a group count together or
 * not at all: whenever one of them holds a counter, all do, so their
 * running times are equal and their ratios meaningful.  The leader is
 * attached first, the others to the same thread or CPU, on the same
 * device, pinned or not as the leader is; attach them disabled and enable
 * them together (perfmon_events_enable()) for equal times from the start.
 * Returns 0, or -EINVAL for a NULL or attached event or a leader that
 * leads no group of its own.
 */
int perfmon_event_set_group(struct perfmon_event *event,
                            struct perfmon_event *leader);

/*
 * Attach an initialised or detached event to a thread, which may be the
 * caller, running elsewhere, sleeping, or already exited; the event holds a
 * reference on the thread until detached.  Counting starts now, unless the
 * event was initialised with PERFMON_EF_DISABLED.  Returns 0, or:
 *   -EINVAL  NULL argument, or the event is attached or not initialised
 *   -ENODEV  no device registered
 *   -ENOENT  no device can count the event
 *   -EINVAL  also for a raw code with bits the device does not define
 *   -EAGAIN  a pinned event finds every suitable counter reserved, or the
 *            device has PERFMON_DEV_MAX_PMCS different events already
 *   -EBUSY   the context-switch hook is off (perfmon.hook=off)
 *   -EOPNOTSUPP  a sampling event on a device that cannot sample
 *   -ENOMEM  no memory for an inherited event's state
 *   -EINVAL  a group member whose leader is not attached, or attached
 *            elsewhere, or on another device, or pinned and it not
 *   -ENOSPC  a group member that would make the group larger than the
 *            device's counters
 * and leaves everything unchanged on error.
 */
int perfmon_event_attach(struct perfmon_event *event, struct thread *thread);

/*
 * Attach an event to a CPU: it counts everything that runs there.  Errors
 * as perfmon_event_attach(), plus -EINVAL for a CPU that is not online or
 * an event with PERFMON_EF_INHERIT.
 */
int perfmon_event_attach_cpu(struct perfmon_event *event, unsigned int cpu);

/*
 * Stop counting and release the counter (and the thread reference, and an
 * inherited event's children).  The event keeps its final count and may
 * be attached again, counting on from there (enabled or not as its flags
 * say).  Returns 0, or -EINVAL for a NULL event or one not attached.
 */
int perfmon_event_detach(struct perfmon_event *event);

/*
 * Start and stop counting an attached event, which keeps its counter
 * meanwhile.  Enabling an enabled event, or disabling a disabled one, does
 * nothing.  Returns 0, or -EINVAL for a NULL event or one not attached.
 *
 * perfmon_events_enable() and perfmon_events_disable() do it for nr events
 * at once, as one step on each thread or CPU they are attached to (in the
 * order of the array): the events of one thread, or of one CPU, start or
 * stop between the same two instructions of that thread or CPU, so they
 * cover the same span.  They check every event first and change nothing
 * when one is NULL or not attached (-EINVAL).
 */
int perfmon_event_enable(struct perfmon_event *event);
int perfmon_event_disable(struct perfmon_event *event);
int perfmon_events_enable(struct perfmon_event *const *events,
                          unsigned int nr);
int perfmon_events_disable(struct perfmon_event *const *events,
                           unsigned int nr);

/*
 * The event's 64-bit count, up to date: a CPU event syncs on its CPU, a
 * thread event on the CPU the thread runs on.  The caller's own CPU and
 * thread are read in place, without an xcall or disabling interrupts; a
 * thread not running is read from its saved state.  A disabled event
 * returns what it counted while enabled.  An inherited event adds its
 * children's counts, read the same way.  0 for a NULL event.
 */
uint64_t perfmon_event_read(struct perfmon_event *event);

/*
 * The count, as perfmon_event_read(), and the time in nanoseconds the
 * event was enabled (for a thread event: enabled while its thread ran) and
 * running (on a counter); either pointer may be NULL.  perf's
 * time_enabled and time_running: count * enabled / running estimates what
 * an event that could not always count would have counted.
 */
uint64_t perfmon_event_read_times(struct perfmon_event *event,
                                  uint64_t *enabled_nsp,
                                  uint64_t *running_nsp);

/*
 * The count of an enabled CPU event of the calling CPU, read in place in
 * any context (preemption or interrupts disabled, interrupt and NMI
 * handlers: code regions, kern/perfmon_region.h), into *valuep; a
 * counter due for a fold is folded on the spot.  False, nothing read, for
 * another CPU's or a thread event, a disabled one, or a caller that
 * interrupted a perfmon section of its CPU (an NMI), unless in_section
 * says that the caller runs inside the overflow interrupt's own section,
 * after its fold (no fold is possible there).  Takes no lock.
 */
bool perfmon_event_read_here(struct perfmon_event *event, bool in_section,
                             uint64_t *valuep);

bool perfmon_event_attached(const struct perfmon_event *event);
bool perfmon_event_enabled(const struct perfmon_event *event);

/*
 * Hooks of kern/thread.c for inherited events.  perfmon_thread_fork():
 * thread creation, in the creating thread, before child can run: child
 * gets the inherited events counting the caller.  Returns 0 or -ENOMEM
 * (thread creation then fails).  perfmon_thread_exit(): the calling thread
 * exits; the counts of the inherited events on it are kept by their
 * parent events and its counter state is released.  Thread context.
 */
int perfmon_thread_fork(struct thread *child);
void perfmon_thread_exit(void);

/*
 * The context-switch hook.  It is on unless the boot option perfmon.hook=off
 * takes perfmon out of the switch path (kern/perfmon_control.h switches it
 * at run time).  While it is off, attaching an event to a thread fails with
 * -EBUSY.  Its flag is read on every context switch (perfmon_td_switch).
 */
extern bool perfmon_switch_hook_on;

/*
 * Context switch hook (kern/thread.c): unload the counters of prev and load
 * those of next, on this CPU, in one section.  Counters both threads use
 * keep running (no stop and start, one read).  Interrupts and preemption
 * disabled, the run queue lock held.  Two threads without events cost the
 * flag test and one test of their masks.  perfmon_td_switch_slow: next
 * uses exactly the slots prev has loaded (the counters may all keep
 * running); perfmon_td_switch_change: it does not (one may pass its
 * counter on in place, or they stop and start).
 */
void perfmon_td_switch_slow(struct perfmon_td *prev, struct perfmon_td *next);
void perfmon_td_switch_change(struct perfmon_td *prev,
                              struct perfmon_td *next);

static inline void
perfmon_td_switch(struct perfmon_td *prev, struct perfmon_td *next)
{
    if (!__atomic_load_n(&perfmon_switch_hook_on, __ATOMIC_RELAXED)) {
        return;
    }

    if (unlikely((prev->loaded_mask | next->active_mask) != 0)) {
        /*
         * The masks loaded again, not kept from the test: keeping them
         * would cost the switch without events a register move.
         */
        barrier();

        if (prev->loaded_mask == next->active_mask) {
            perfmon_td_switch_slow(prev, next);
        } else {
            perfmon_td_switch_change(prev, next);
        }
    }
}

/*
 * Clock tick hook (kern/clock.c), on every CPU, interrupts disabled: makes
 * the flexible events of a CPU with more of them than counters take turns,
 * every perfmon.mux_ms milliseconds (boot option, default
 * PERFMON_MUX_MS_DEFAULT).  A CPU with nothing to rotate pays one test.
 */
#define PERFMON_MUX_MS_DEFAULT      4

void perfmon_tick_slow(void);

extern uint64_t perfmon_mux_cpus;       /* atomic: CPUs with turns to take */

static inline void
perfmon_tick(unsigned int cpu)
{
    if (unlikely(__atomic_load_n(&perfmon_mux_cpus, __ATOMIC_RELAXED)
                 & (1ULL << cpu))) {
        perfmon_tick_slow();
    }
}

/*
 * Overflow interrupt of a device, on the calling CPU, from the driver's
 * NMI handler (or another interrupt handler with interrupts disabled):
 * ask the device which counters overflowed, run the registered callbacks,
 * then fold the counters into the 64-bit values and write the samples
 * due.  Takes no lock.  Returns true when the interrupt was the device's.
 * perfmon_overflow_nmi() is the same, with the device as a handler's
 * argument of the NMI chain (trap_nmi_register(perfmon_overflow_nmi,
 * dev)): the chain calls it with no wrapper.
 */
bool perfmon_overflow_nmi(void *dev, struct trap_frame *frame);

static inline bool
perfmon_overflow_intr(struct perfmon_dev *dev, struct trap_frame *frame)
{
    return perfmon_overflow_nmi(dev, frame);
}

/*
 * Overflow-interrupt callbacks, for drivers that must act on the PMC
 * interrupt without owning it (branch-record capture).  On each overflow
 * interrupt, after the device has reported which counters overflowed and
 * before the core does anything else with them, fn runs in NMI context on the interrupted CPU with the device, the CPU, the
 * device's overflow mask (bit N for hw id N) and the interrupted frame.  It
 * must take no lock.
 *
 * perfmon_intr_register() returns a handle (>= 0), or -EINVAL for a NULL
 * fn, -ENOSPC when PERFMON_MAX_INTR_CALLBACKS are registered.
 * perfmon_intr_unregister() returns 0 once no CPU is running or can still
 * start fn for that registration: its state may then be freed.  -EINVAL
 * for a handle that is not registered.  Thread context with interrupts
 * enabled; it never blocks an NMI.
 */
#define PERFMON_MAX_INTR_CALLBACKS  8

typedef void (*perfmon_intr_fn_t)(struct perfmon_dev *dev, unsigned int cpu,
                                  uint64_t ovf_mask, struct trap_frame *frame,
                                  void *arg);

int perfmon_intr_register(perfmon_intr_fn_t fn, void *arg);
int perfmon_intr_unregister(int handle);

/*
 * For a callback: the branch stack of this interrupt, newest first (at
 * most PERFMON_MAX_BRANCHES entries are kept), copied into the samples the
 * interrupt writes for events that asked for PERFMON_SF_BRANCH.  NMI
 * context, the interrupted CPU, from a callback only.
 */
void perfmon_intr_set_branches(const struct perfmon_branch *entries,
                               unsigned int nr);

/*
 * Branch-record drivers: hardware that keeps the last branches taken (x86
 * LBR), captured on the overflow interrupt by a callback of the registry
 * above (perfmon_intr_set_branches()).  One driver at a time.  The core
 * starts it when the first event asking for PERFMON_SF_BRANCH attaches and
 * stops it when the last one detaches (inherited children ride on their
 * root's), so that it costs nothing while nobody asks; all the events
 * recording branches at one time share one filter.
 *
 * check (thread context): NULL when samples of events of dev can carry
 *   branch stacks recorded with filter (a complete PERFMON_BRF_* filter),
 *   or one line saying why not ("this CPU's LBR cannot record calls
 *   alone", "the LBR freezes on the hardware PMU's interrupt: use a
 *   hardware event").
 * start (thread context, interrupts enabled): record with filter on every
 *   CPU and capture on the overflow interrupt; 0, or an error (nothing
 *   started).
 * stop (thread context, interrupts enabled): stop recording on every CPU;
 *   once it returns no interrupt captures any more.
 * sched_in (context switch: interrupts disabled, the run queue locked,
 *   inside the core's section on this CPU): a thread whose events record
 *   branches is switched in here: forget the branches recorded so far,
 *   another thread's, so that its samples hold its own branches only.
 *
 * name: "lbr"; desc: what it is, for `perfmon info` ("intel legacy LBR,
 * Skylake-class, format 5"); depth: the most branches a stack holds;
 * filters: the PERFMON_BRF_* it can tell apart (ANY always; the mode bits
 * when it can record one mode without the other).
 */
struct perfmon_branch_ops {
    const char *(*check)(const struct perfmon_dev *dev, unsigned int filter);
    int (*start)(unsigned int filter);
    void (*stop)(void);
    void (*sched_in)(void);
};

struct perfmon_branch_driver {
    const char *name;
    const char *desc;
    unsigned int depth;
    unsigned int filters;
    const struct perfmon_branch_ops *ops;
};

/*
 * Register the branch-record driver; unregister it (a test's fake one).
 * perfmon_branch_register() returns 0, -EINVAL for a driver without name,
 * desc or operation, -EEXIST while one is registered.
 * perfmon_branch_unregister() returns 0, -EINVAL for a driver that is not
 * the registered one, -EBUSY while events record branches.  Thread
 * context.
 */
int perfmon_branch_register(const struct perfmon_branch_driver *drv);
int perfmon_branch_unregister(const struct perfmon_branch_driver *drv);

/*
 * Why samples of events of dev (NULL: the device the core would choose
 * for them does not matter yet) cannot carry branch stacks recorded with
 * filter now, in one line, or NULL when they can: no driver (the reason
 * set below), the driver's check, another filter in use.  Thread context.
 */
const char *perfmon_branch_why_not(const struct perfmon_dev *dev,
                                   unsigned int filter);

/*
 * Why there is no branch-record driver, set once at boot by the platform
 * code that probed for one (copied, truncated to PERFMON_HW_STATUS_SIZE - 1
 * characters); "not probed" before that.
 */
void perfmon_branch_set_absent(const char *why);

/*
 * What `perfmon info` shows: the driver (text: its desc, depth, filters),
 * or why there is none (text), and the events recording branches now with
 * the filter they share.  Thread context.
 */
struct perfmon_branch_info {
    bool present;
    const char *text;
    unsigned int depth;
    unsigned int filters;
    unsigned int nr_users;
    unsigned int filter;                /* when nr_users != 0 */
};

void perfmon_branch_get_info(struct perfmon_branch_info *info);

/*
 * Polling a counter whose wraps raise no interrupt, for the core and for
 * drivers that poll their own.  perfmon_wrap_ms(): the milliseconds a
 * counter width bits wide takes to wrap when it counts rate events per
 * cycle of a CPU at freq Hz (UINT64_MAX: never); freq 0 (the TSC not yet
 * calibrated) stands for PERFMON_FREQ_DEFAULT, faster than any x86 part.
 * perfmon_poll_ms(): the poll interval for such a wrap time, a
 * PERFMON_POLL_MARGIN-th of it, kept within min_ms..PERFMON_POLL_MAX_MS.
 * Pure; any context.
 */
#define PERFMON_FREQ_DEFAULT    5000000000ULL
#define PERFMON_POLL_MARGIN     4
#define PERFMON_POLL_MAX_MS     10000

static inline uint64_t
perfmon_wrap_ms(unsigned int width, unsigned int rate, uint64_t freq)
{
    if (width >= 64) {
        return UINT64_MAX;
    }

    if (freq == 0) {
        freq = PERFMON_FREQ_DEFAULT;
    }

    return (1ULL << width) / (MAX(freq / 1000, 1) * rate);
}

static inline unsigned int
perfmon_poll_ms(uint64_t wrap_ms, unsigned int min_ms)
{
    return (unsigned int)MIN(MAX(wrap_ms / PERFMON_POLL_MARGIN, min_ms),
                             PERFMON_POLL_MAX_MS);
}

INIT_OP_DECLARE(perfmon_setup);

#ifdef TALLY_HOST_TEST
/*
 * Forget every device, counter, callback and count, then set the module up
 * again as perfmon_setup does at boot (host tests only).
 */
void perfmon_reset(void);
#endif

#endif /* KERN_PERFMON_H */
