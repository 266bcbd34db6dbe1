/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The contract between the perfmon core and PMU drivers: a device
 * (struct perfmon_dev), its operations, its registration and what the
 * core offers a driver about its devices.  Users of events include
 * kern/perfmon.h, which includes this file.
 */

#ifndef KERN_PERFMON_DEV_H
#define KERN_PERFMON_DEV_H

#include <stdbool.h>
#include <stdint.h>

struct perfmon_dev;
struct perfmon_selftest;                /* kern/perfmon_selftest.h */

/*
 * How the core may read a started counter on its CPU without calling read
 * (the read_method operation).
 */
#define PERFMON_READ_OP     0   /* call ops->read */
#define PERFMON_READ_RDPMC  1   /* rdpmc with ECX = arg (fixed counters: bit 30 set) */
#define PERFMON_READ_MEM    2   /* a volatile uint64_t at address arg */

/*
 * A PERFMON_READ_MEM counter is that word: the core also loads it (arms a
 * sampling counter) by a store there, as write would, without the call.
 */

/*
 * Device operations.  Each takes the device it was registered with, so
 * that one driver can serve several devices and find its state from it.
 *
 * Global operations (translate, counters, alloc, free) are serialised by
 * the core: it calls them with its allocator lock held and preemption
 * disabled, so they must not sleep.  Processor-local operations (start, stop, read) act on
 * the calling CPU's hardware, with interrupts and preemption disabled;
 * read is also called from NMI context, and from thread context with only
 * preemption disabled (the core's local reads, which may be interrupted by
 * a section that starts or stops counters: they then retry).  hw ids are
 * the device's own counter numbers, below 64.
 *
 * translate: store the raw code of generic event event_id in *raw_eventp;
 *   -ENOENT when the device cannot count it.
 * counters: the hardware counters able to count raw_event with the mode
 *   flags (PERFMON_EF_MODE bits), as a mask of hw ids in *counters, and in
 *   *prefer those of them to use first (0: no preference; a fixed counter
 *   that counts the event exactly, say); -EINVAL for a raw code with bits
 *   the device does not define, -ENOENT when it cannot count raw_event.
 *   The core gives flexible events these counters CPU by CPU.
 * alloc: reserve, on every CPU, a hardware counter able to count raw_event
 *   with the mode flags, store its hw id in *hw_idp; -EAGAIN when every
 *   suitable counter is reserved, -ENOENT when the device cannot count
 *   raw_event, -EINVAL as for counters.  For pinned events (the core never
 *   gives a reserved counter to a flexible one).
 * alloc_counters (optional; global): the mask of every hw id the counter
 *   alloc gave as hw_id takes until freed (a pair's two; without it, hw_id).
 * free: release a counter reserved by alloc, and all it took.
 * start: program and enable the counter on this CPU, from 0.  An overflow
 *   of the counter's previous run that the device has not reported yet (a
 *   status bit left set, its interrupt still on the way or lost) is
 *   dropped: from start on, handle_overflow_intr reports the counter only
 *   for overflows of the new run.  The core cannot tell whose run an
 *   overflow was, and would add a whole period to the new one.  So the
 *   core takes the counter's raw value after start as 0 (or, for a
 *   sampling counter, the value its write arms) without reading it.
 * stop: disable the counter on this CPU.
 * read: the counter's raw value on this CPU (the core keeps the low width
 *   bits).
 * read_method (optional; processor-local, after start): how the core may
 *   read the started counter hw_id on this CPU without calling read, one
 *   of the PERFMON_READ_* methods, its argument in *argp.  The method
 *   holds until the counter is stopped or transferred.  Without the op,
 *   or for PERFMON_READ_OP, the core calls read.
 * transfer (optional; processor-local): reprogram the started counter
 *   hw_id for raw_event in the mode flags in place, from one slot's event
 *   to another's, leaving its count where it is: the counter keeps
 *   counting.  It returns the raw value at the hand-over, read just
 *   before the new event takes effect: the core folds the count up to it
 *   as the old slot's and the rest as the new one's, so that no event of
 *   the old kind is counted for the new (a clock's cycles passed on as
 *   another event's counts).  One read and one write of the event select
 *   where the device can.  Unlike
 *   start, it keeps an overflow status the counter holds: it belongs to
 *   the count that goes on, and the core folds it for the new slot.
 *   *read_howp and *argp hold the counter's read method (read_method's,
 *   or PERFMON_READ_OP without the op): the device changes them when the
 *   new event is read otherwise, and leaves them alone when it is read as
 *   the old was (an RDPMC index stays with its counter), so that the core
 *   asks nothing again.
 * write (optional: devices without it cannot sample): load a running
 *   counter on this CPU with value, within the device's width, so that it
 *   overflows after 2^width - value events (stored in place instead for a
 *   counter read in memory, PERFMON_READ_MEM).  Called by the core to arm a
 *   sampling counter after start and to re-arm it from the overflow
 *   interrupt; a device that freezes its counters for the interrupt (see
 *   overflow_intr_end) loses no event between the core's read and write.
 * handle_overflow_intr (devices with overflow_intr only; NMI context, this
 *   CPU): find which of the device's counters overflowed, acknowledge them
 *   and return their mask (bit N for hw id N), or 0 when the interrupt is
 *   not the device's.  The device may freeze its counters (and whatever
 *   else the interrupt's handlers read, such as branch records) until
 *   overflow_intr_end.
 * overflow_intr_end (optional; NMI context, this CPU): the core has handled
 *   an interrupt the device claimed (folded and re-armed the counters, run
 *   the callbacks): resume what handle_overflow_intr froze and let the
 *   next interrupt come.
 * why_not (optional; thread context): a one-line reason why the device
 *   cannot count raw_event now (alloc would say -ENOENT although the event
 *   is the device's, because of how it was configured), or NULL.
 * hold (optional; global): a new slot counts raw_event (after counters or
 *   alloc said yes): reserve what it needs besides a counter, such as an
 *   extra MSR holding a value the event asks for, shared by every slot
 *   that asks the same; -EAGAIN when other slots hold it with another
 *   value, -ENOENT when the device cannot provide it.
 * release (optional; global, with hold): a slot that hold succeeded for
 *   is gone, its counters stopped on every CPU.
 * selftest (optional; thread context, interrupts enabled, the caller
 *   pinned to one CPU): the device's own checks for `perfmon selftest`,
 *   those the core's API cannot express (each counter in turn, how the
 *   counters take writes, global enables, the interrupt path), each
 *   reported through kern/perfmon_selftest.h.  It takes the counters it
 *   drives with perfmon_dev_alloc() and leaves everything as it found it.
 */
struct perfmon_dev_ops {
    int (*translate)(struct perfmon_dev *dev, uint64_t *raw_eventp,
                     unsigned int event_id);
    int (*counters)(struct perfmon_dev *dev, uint64_t raw_event,
                    unsigned int flags, uint64_t *countersp,
                    uint64_t *preferp);
    int (*alloc)(struct perfmon_dev *dev, unsigned int *hw_idp,
                 uint64_t raw_event, unsigned int flags);
    uint64_t (*alloc_counters)(struct perfmon_dev *dev, unsigned int hw_id);
    void (*free)(struct perfmon_dev *dev, unsigned int hw_id);
    void (*start)(struct perfmon_dev *dev, unsigned int hw_id,
                  uint64_t raw_event, unsigned int flags);
    void (*stop)(struct perfmon_dev *dev, unsigned int hw_id);
    uint64_t (*read)(struct perfmon_dev *dev, unsigned int hw_id);
    unsigned int (*read_method)(struct perfmon_dev *dev, unsigned int hw_id,
                                uintptr_t *argp);
    uint64_t (*transfer)(struct perfmon_dev *dev, unsigned int hw_id,
                         uint64_t raw_event, unsigned int flags,
                         unsigned int *read_howp, uintptr_t *argp);
    void (*write)(struct perfmon_dev *dev, unsigned int hw_id,
                  uint64_t value);
    uint64_t (*handle_overflow_intr)(struct perfmon_dev *dev);
    void (*overflow_intr_end)(struct perfmon_dev *dev);
    const char *(*why_not)(struct perfmon_dev *dev, uint64_t raw_event);
    int (*hold)(struct perfmon_dev *dev, uint64_t raw_event);
    void (*release)(struct perfmon_dev *dev, uint64_t raw_event);
    void (*selftest)(struct perfmon_dev *dev, struct perfmon_selftest *st);
};

/* A named raw event a device offers (for perfmon_lookup_event()). */
struct perfmon_dev_event {
    const char *name;
    uint64_t raw_event;
};

/*
 * A PMU device.  The driver fills the public fields and calls
 * perfmon_register(); the structure must then live forever and the driver
 * must not change it.
 *
 * overflow_intr: the device raises an interrupt when a counter wraps and
 * calls perfmon_overflow_intr() from it (an NMI: trap_nmi_register() of
 * perfmon_overflow_nmi with the device, which the chain calls directly);
 * its handle_overflow_intr operation is then mandatory.  Without it the
 * core polls the counters.
 *
 * max_period: the most events the write operation can arm a counter for
 * (some counters take only 32 bits sign-extended); 0 stands for
 * 2^width - 1.  A longer sampling period is armed in several steps.
 *
 * min_arm: the fewest events the write operation arms a counter for, and
 * so the shortest sampling period; 0 stands for PERFMON_DEV_MIN_ARM.  A
 * device that counts events one at a time in software says 1: a thread
 * that meets one event a run (its context switch) must reach a sample
 * left one event away, which a counter armed for 2 never sees in one run.
 *
 * poll_ms: 0 lets the core choose: no polling when the device has an
 * overflow interrupt, otherwise an interval derived from the width and the
 * CPU frequency (see perfmon_dev_info.poll_ms).  Nonzero: poll at that
 * interval, also when there is an interrupt (for counters that never raise
 * one).
 *
 * named_only: the device counts only the events that name it
 * (perfmon_event_set_dev(), `DEV/EVENT/` in perf's syntax); it is never
 * the default device of a generic event (a device whose counting costs
 * far more than the event's usual device, like the `step` device).
 */
/*
 * The fewest events a counter is armed for by default: some x86 CPUs
 * misbehave with a counter one event from its overflow, so Linux arms them
 * for at least 2 (x86_perf_event_set_period in arch/x86/events/core.c).
 * A period below is taken as this, not refused: `-c 1` works as under
 * perf, and every sample says the events it stands for.
 */
#define PERFMON_DEV_MIN_ARM     2

struct perfmon_dev {
    const char *name;                   /* unique, e.g. "intel", "soft" */
    const struct perfmon_dev_ops *ops;
    unsigned int width;                 /* counter bits, 1..64 */
    unsigned int nr_pmcs;               /* counters, 1..PERFMON_DEV_MAX_PMCS */
    bool overflow_intr;
    uint64_t max_period;                /* see below */
    unsigned int min_arm;
    unsigned int poll_ms;
    bool named_only;
    const struct perfmon_dev_event *events;   /* may be NULL */
    unsigned int nr_events;

    /* Private to the core, set at registration. */
    unsigned int index;                 /* in the device table */
    unsigned int poll_interval_ms;      /* effective, 0 when not polled */
    bool intr_end;                      /* ops->overflow_intr_end is set */
    uint64_t arm_max;                   /* max_period, or 2^width - 1 */
    unsigned int arm_min;               /* min_arm, 0 resolved */
};

/*
 * Register a device.  Returns 0, -EINVAL for a NULL device, name or
 * operation table, a missing mandatory operation, a width outside 1..64
 * or a counter count outside 1..PERFMON_DEV_MAX_PMCS, -EEXIST when it or a
 * device of the same name is already registered, -ENOSPC when
 * PERFMON_MAX_DEVS are.  Thread context, after perfmon_setup.
 */
int perfmon_register(struct perfmon_dev *dev);

/* Devices in registration order: index 0..perfmon_nr_devs() - 1. */
unsigned int perfmon_nr_devs(void);
struct perfmon_dev *perfmon_dev_get(unsigned int index);   /* NULL past end */
struct perfmon_dev *perfmon_dev_find(const char *name);    /* NULL if none */

/* What `perfmon info` shows about a device.  Any context but NMI. */
struct perfmon_dev_info {
    const char *name;
    unsigned int width;
    unsigned int nr_pmcs;
    unsigned int nr_pmcs_used;          /* allocated counters now */
    bool overflow_intr;                 /* has an overflow interrupt */
    unsigned int poll_ms;               /* poll interval, 0 when not polled */
};

int perfmon_dev_get_info(const struct perfmon_dev *dev,
                         struct perfmon_dev_info *info);

/*
 * The raw code of generic event event_id on dev, through the device's
 * translate operation (serialized like the other global operations).
 * Returns 0, -EINVAL for a bad argument or unregistered device, -ENOENT
 * when the device cannot count the event.  Thread context.
 */
int perfmon_dev_translate(struct perfmon_dev *dev, unsigned int event_id,
                          uint64_t *raw_eventp);

/*
 * Why dev cannot count raw_event in its present configuration (a boot
 * option, say), in one line, or NULL when nothing stands in the way.
 */
const char *perfmon_dev_why_not(struct perfmon_dev *dev, uint64_t raw_event);

/*
 * Reserve a counter of dev able to count raw_event in the mode flags, as
 * the core reserves one for its events (through the device's alloc,
 * serialised with them), for code that then drives the device's
 * processor-local operations itself: a device's self-test.  The counter
 * is no event's, and no event gets it, until perfmon_dev_free().  Returns
 * 0 with its hw id in *hw_idp, -EINVAL for a bad argument or unregistered
 * device, or alloc's -EINVAL, -ENOENT, -EAGAIN.  Thread context.
 */
int perfmon_dev_alloc(struct perfmon_dev *dev, uint64_t raw_event,
                      unsigned int flags, unsigned int *hw_idp);
void perfmon_dev_free(struct perfmon_dev *dev, unsigned int hw_id);

/*
 * The hardware PMU in one line, as `perfmon info` prints it after
 * "hardware PMU: ": set once at boot by the platform code that probes the
 * hardware (present: a hardware device was registered; otherwise the line
 * says why there is none).  Before that, "not probed".  The text is
 * copied, truncated to PERFMON_HW_STATUS_SIZE - 1 characters.
 */
#define PERFMON_HW_STATUS_SIZE      160

void perfmon_set_hw_status(bool present, const char *text);
const char *perfmon_hw_status(bool *presentp);

#endif /* KERN_PERFMON_DEV_H */
