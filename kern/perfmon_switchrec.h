/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Switch records: a record in a sample buffer at every context switch of
 * the threads or CPUs a recording watches, as Linux perf's
 * PERF_RECORD_SWITCH_CPU_WIDE (perf_event_attr.context_switch, see
 * include/uapi/linux/perf_event.h).  A switch writes two records on its
 * CPU: one for the thread leaving (OUT, naming the thread coming in, with
 * the call chain of the leaving thread at the switch) and one for the
 * thread coming in (IN, naming the one that left).
 *
 * An unwatched switch pays nothing for this: a watch announces itself
 * with swevent_activate(SWEVENT_CONTEXT_SWITCH), so the one test the
 * context switch already makes for the context-switch software event
 * (kern/swevent.h) covers both, and only then does kern/thread.c call
 * perfmon_switchrec_write().
 */

#ifndef KERN_PERFMON_SWITCHREC_H
#define KERN_PERFMON_SWITCHREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/perfmon.h"
#include "kern/perfmon_ring.h"

struct thread;

/*
 * The record (type PERFMON_REC_SWITCH of kern/perfmon.h), 8-byte words.
 * misc holds perf's header bits: PERFMON_SWITCH_OUT for the thread
 * leaving, with PERFMON_SWITCH_PREEMPT when it left still runnable
 * (preempted or yielding, not sleeping or exiting).  tid is the thread
 * the record is about (perf's sample_id pid/tid), other the thread
 * switched to (OUT) or from (IN); time in ns since boot, as samples.  An
 * OUT record ends with the leaving thread's callers, newest first (each
 * return address minus one), at most PERFMON_SWITCH_MAX_IPS.
 */
#define PERFMON_SWITCH_OUT          0x2000      /* perf's MISC_SWITCH_OUT */
#define PERFMON_SWITCH_PREEMPT      0x4000      /*   _SWITCH_OUT_PREEMPT */
#define PERFMON_SWITCH_MAX_IPS      16

struct perfmon_switch_rec {
    struct perfmon_rec_hdr hdr;
    uint32_t tid;
    uint32_t other;
    uint64_t time_ns;
    uint32_t cpu;
    uint32_t nr_ips;
    uint64_t ips[];
};

/* A switch record, checked and decoded (ips point into the record). */
struct perfmon_switch {
    bool out;
    bool preempt;
    unsigned int tid;
    unsigned int other;
    uint64_t time_ns;
    unsigned int cpu;
    unsigned int nr_ips;
    const uint64_t *ips;
};

/*
 * Decode the record hdr (hdr->size bytes, any input).  Returns 0, or
 * -EINVAL when it is not a well-formed switch record
 * (kern/perfmon/perfmon_switchrec_decode.c).
 */
int perfmon_switch_decode(const struct perfmon_rec_hdr *hdr,
                          struct perfmon_switch *sw);

/*
 * A watch: a recording's request for switch records, written into the
 * ring of the switching CPU in sbuf.  The caller owns the storage; the
 * fields are private.  cpus: the CPUs watched (every switch there), or 0:
 * slots, the counter slots of the recording's thread events (a switch of
 * a thread with one of them enabled).
 */
struct perfmon_switchrec {
    struct perfmon_sbuf *sbuf;
    uint64_t cpus;
    uint64_t slots;
    bool started;
};

/* Watches at once, system-wide. */
#define PERFMON_SWITCHREC_MAX       4

/*
 * Start watching the switches of the events of a recording, nr events
 * attached and sampling into sbuf, where the records go too (all CPU
 * events or all thread events; inherited children share their root's
 * slot).  Returns 0, -EINVAL (no event, mixed or unattached ones, one
 * sampling elsewhere), -EBUSY (PERFMON_SWITCHREC_MAX watches already).
 * Stop it before the events are detached: the stop waits until no CPU
 * writes for it any more.  Thread context.
 */
int perfmon_switchrec_start(struct perfmon_switchrec *sr,
                            struct perfmon_sbuf *sbuf,
                            struct perfmon_event *const *events,
                            unsigned int nr);
void perfmon_switchrec_stop(struct perfmon_switchrec *sr);

/*
 * The switch from prev to next on this CPU (kern/thread.c's hook, before
 * the counters change hands: interrupts and preemption disabled, the run
 * queue locked, prev still the current thread): write the records the
 * watches ask for.  preempted: prev stays runnable.
 */
void perfmon_switchrec_write(struct thread *prev, struct thread *next,
                             bool preempted);

#ifdef TALLY_HOST_TEST
void perfmon_switchrec_reset(void);
#endif

#endif /* KERN_PERFMON_SWITCHREC_H */
