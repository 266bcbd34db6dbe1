/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The events of a `perfmon record` run (kern/perfmon/cmd/perfmon_record.c):
 * perf's -e list of several events, each sampling at its own period or
 * frequency (`EVENT/period=N/`, `EVENT/freq=HZ/`, else -c or -F), and
 * groups, one of which may be read by its leader's samples (`{A,B}:S`,
 * perf's leader sampling: the members count, the leader samples, and
 * each sample carries the group's counts, PERFMON_SF_READ).
 *
 * Each event is attached once per slot (the command's thread, each CPU of
 * -a or -C, each thread of -t); the id its samples carry is its place in
 * the list, which is also its id in the capture (perfmon_capture_add_event)
 * and in the stream.  A group's members follow their leader in the list,
 * as the parser gives them, so the leader is attached first.
 *
 * Contexts: thread context, the command that records.
 */

#ifndef KERN_PERFMON_RECORD_EVENTS_H
#define KERN_PERFMON_RECORD_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_capture.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_parse.h"
#include "kern/perfmon/cmd/perfmon_resolve.h"
#include "kern/perfmon/cmd/perfmon_stream.h"

/* Most events one recording samples. */
#define PERFMON_RECORD_MAX_EVENTS       PERFMON_CAPTURE_MAX_EVENTS

/*
 * One event of a recording, in every slot.  A member of a group read by
 * its leader's samples counts and does not sample; such a leader has one
 * sampling per slot, each reading the events of its slot's group.  The
 * arrays are on the heap between perfmon_record_events_alloc() and _free().
 */
struct perfmon_record_ev {
    char name[PERFMON_PARSE_NAME_SIZE]; /* as typed */
    struct perfmon_resolved event;
    struct perfmon_dev *dev;            /* the device counting it */
    uint64_t period;                    /* its own, or -c */
    uint64_t freq;                      /*   or -F */
    int group;                          /* its leader, -1: none */
    bool leader_sample;                 /* in a group written {...}:S */
    struct perfmon_sampling sampling;   /* its slots', but a :S leader's */
    struct perfmon_sampling *slot_sampling;     /* :S leader: per slot */
    struct perfmon_event *(*slot_reads)[PERFMON_MAX_READS];
    struct perfmon_event *events;       /* one per slot */
};

/* The events of a recording; set holds those attached, in order. */
struct perfmon_record_events {
    struct perfmon_record_ev evs[PERFMON_RECORD_MAX_EVENTS];
    unsigned int nr_evs;
    unsigned int nr_slots;
    struct perfmon_event **set;
    unsigned int nr_set;
};

/*
 * Parse and resolve an -e list into e (replacing what it held).  Returns
 * 0, or SHELL_ERR_REPORTED after one line saying what is wrong.
 */
int perfmon_record_events_parse(struct perfmon_record_events *e,
                                const char *list);

/*
 * Give the events without a period or frequency of their own -c's period
 * or -F's frequency, then check what the samples can read.  Returns 0, or
 * SHELL_ERR_REPORTED after one line.
 */
int perfmon_record_events_finish(struct perfmon_record_events *e,
                                 uint64_t period, uint64_t freq);

/*
 * Room for nr_slots slots.  Returns 0, or SHELL_ERR_REPORTED (out of
 * memory, said), leaving nothing allocated.  perfmon_record_events_free()
 * frees it all (no event may be attached then).
 */
int perfmon_record_events_alloc(struct perfmon_record_events *e,
                                unsigned int nr_slots);
void perfmon_record_events_free(struct perfmon_record_events *e);

/*
 * How each event samples (fields, into cap's buffer) and, in cap, what its
 * id stands for.  Before the first attach.
 */
void perfmon_record_events_set_samplings(struct perfmon_record_events *e,
                                         struct perfmon_capture *cap,
                                         unsigned int fields,
                                         unsigned int branch_filter);

/*
 * Attach every event in slot, disabled, with flags (PERFMON_EF_INHERIT or
 * 0), to CPU cpu when thread is NULL, else to thread.  Returns 0, or the
 * core's error with *failedp the event that failed; the events of the
 * slot attached before it stay attached (perfmon_record_events_detach()).
 */
int perfmon_record_events_attach(struct perfmon_record_events *e,
                                 unsigned int slot, unsigned int flags,
                                 unsigned int cpu, struct thread *thread,
                                 const struct perfmon_record_ev **failedp);

/* Detach every event attached, the last attached first. */
void perfmon_record_events_detach(struct perfmon_record_events *e);

/*
 * The stream's description of each event (descs[0..nr_evs), chained),
 * for a recording of the command argc, argv; cap as set up above.
 */
void perfmon_record_events_describe(const struct perfmon_record_events *e,
                                    const struct perfmon_capture *cap,
                                    int argc, char **argv,
                                    struct perfmon_stream_desc *descs);

#endif /* KERN_PERFMON_RECORD_EVENTS_H */
