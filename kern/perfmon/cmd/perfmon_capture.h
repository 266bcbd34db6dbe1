/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Captures: the samples of a `perfmon record` (or `perfmon top`) run,
 * kept in kernel memory.  A record is one entry of the ring format
 * (struct perfmon_rec_hdr, 8-byte aligned); a capture is what one run
 * keeps of them.  A capture owns a sample buffer (per-CPU rings the
 * overflow interrupts write) and a consumer thread that drains the rings
 * every few milliseconds into its store of records, adding what the
 * interrupts cannot write themselves: the name of each thread seen
 * (PERFMON_REC_COMM, when the thread is first seen in a sample, unless the
 * core named it in a ring as it was created, or the command as it started
 * it) and the samples each CPU lost to a full ring (PERFMON_REC_LOST).  The store
 * keeps records in the order they were drained; samples of one CPU stay
 * in time order.
 *
 * The last capture made is kept until the next one, for `perfmon
 * report` and `perfmon script` (perfmon_capture_last()).
 *
 * Contexts: thread context for everything; one user of a capture at a
 * time (the command that made it), except the drain thread it owns.
 */

#ifndef KERN_PERFMON_CAPTURE_H
#define KERN_PERFMON_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/perfmon_ring.h"
#include "kern/perfmon/cmd/perfmon_reads.h"

/*
 * The record the drain thread adds besides the core's PERFMON_REC_COMM
 * (kern/perfmon.h), which it also writes: misc: the CPU; payload: u64
 * the samples lost.
 */
#define PERFMON_REC_LOST        (PERFMON_REC_USER + 0)

/* Largest store a capture may grow to, and the default. */
#define PERFMON_CAPTURE_STORE_MAX       (256 * 1024 * 1024)
#define PERFMON_CAPTURE_STORE_DEFAULT   (32 * 1024 * 1024)

/* What a capture says about itself. */
struct perfmon_capture_info {
    char event[32];                     /* the event, as the user named it */
    char command[96];                   /* the command recorded */
    uint64_t nr_samples;                /* kept in the store */
    uint64_t nr_lost;                   /* lost: rings full, store full */
    uint64_t nr_throttles;
    uint64_t nr_switches;               /* switch records kept */
    uint64_t store_bytes;
    uint64_t start_ns;                  /* TSC time of the start, the end */
    uint64_t end_ns;
};

/*
 * The events of a capture, by the id their samples carry (struct
 * perfmon_sampling's id): its name, and for a leader whose samples read its
 * group (PERFMON_SF_READ) the ids of the events read, in the samples'
 * order (the leader first).
 */
#define PERFMON_CAPTURE_MAX_EVENTS      PERFMON_READS_MAX_EVENTS

struct perfmon_capture_event {
    char name[32];
    unsigned int nr_reads;
    uint32_t reads[PERFMON_MAX_READS];
};

struct perfmon_capture;

/*
 * Create a capture with rings of ring_size bytes per CPU (see
 * perfmon_sbuf_create()) and a store of at most store_max bytes, named for
 * the event and the command.  Returns 0, -EINVAL, -ENOMEM.
 */
int perfmon_capture_create(struct perfmon_capture **recp, size_t ring_size,
                       size_t store_max, const char *event,
                       const char *command);

/* The sample buffer sampling events of the capture write into. */
struct perfmon_sbuf *perfmon_capture_sbuf(struct perfmon_capture *cap);

/*
 * Start the drain thread; stop it, after a last drain once the events are
 * detached.  perfmon_capture_start() returns 0 or thread_create()'s error.
 */
int perfmon_capture_start(struct perfmon_capture *cap);
void perfmon_capture_stop(struct perfmon_capture *cap);

/*
 * Record the name of thread tid now, before the drain thread starts: for
 * the thread a command runs, which may be gone by the first drain.
 */
void perfmon_capture_name_thread(struct perfmon_capture *cap,
                                 unsigned int tid);

/*
 * Drain now, from the caller (for `perfmon top`, which uses no drain
 * thread).
 */
void perfmon_capture_drain(struct perfmon_capture *cap);

/* Forget every stored record (a `perfmon top` interval). */
void perfmon_capture_clear(struct perfmon_capture *cap);

void perfmon_capture_get_info(const struct perfmon_capture *cap,
                          struct perfmon_capture_info *info);

/*
 * Say what the samples of id (the next one: ids count from 0 in the order
 * of the calls) stand for, before the capture starts.  Returns 0, or
 * -ENOSPC past PERFMON_CAPTURE_MAX_EVENTS.  A capture without any calls has
 * one event, id 0, named as at its creation.  -EINVAL: more reads than
 * PERFMON_MAX_READS, or one past PERFMON_CAPTURE_MAX_EVENTS.
 */
int perfmon_capture_add_event(struct perfmon_capture *cap,
                              const struct perfmon_capture_event *event);

/* How many events, and the one of id (NULL when there is no such id). */
unsigned int perfmon_capture_nr_events(const struct perfmon_capture *cap);
const struct perfmon_capture_event *
perfmon_capture_event(const struct perfmon_capture *cap, uint32_t id);

/*
 * Read i of a sample that reads its leader's group: in *eventp the event
 * read, in *deltap what it counted since the previous sample of its CPU,
 * as perf takes the values the stream gives it.  Returns false when it
 * counted nothing (perf shows no such sample) or the sample's reads are
 * not those of its event.
 */
bool perfmon_capture_read_delta(const struct perfmon_capture *cap,
                                const struct perfmon_sample *sample,
                                struct perfmon_reads *reads,
                                unsigned int i, uint32_t *eventp,
                                uint64_t *deltap);

/*
 * Call fn for each stored record, in order, until it returns false.
 * Records are 8-byte aligned.
 */
typedef bool (*perfmon_capture_fn_t)(const struct perfmon_rec_hdr *hdr,
                                 void *arg);

void perfmon_capture_foreach(const struct perfmon_capture *cap, perfmon_capture_fn_t fn,
                         void *arg);

/*
 * A walk of its own over the store, in order: perfmon_capture_next()
 * returns the record at pos and moves pos past it, NULL at the end.  pos
 * starts zeroed; the store must not change during the walk.
 */
struct perfmon_capture_pos {
    const void *chunk;
    size_t off;
    bool started;
};

const struct perfmon_rec_hdr *
perfmon_capture_next(const struct perfmon_capture *cap,
                     struct perfmon_capture_pos *pos);

/*
 * A sink sees each record as it enters the store, in the store's order
 * except that a COMM record comes before the sample that named its thread,
 * called by the capture's consumer: the drain thread while it runs, the
 * owner otherwise.  Records the store has no room for are not shown (they
 * count as lost).  Set it before perfmon_capture_start(); fn must not call
 * back into the capture.
 */
typedef void (*perfmon_capture_sink_fn_t)(const struct perfmon_rec_hdr *hdr,
                                      void *arg);

void perfmon_capture_set_sink(struct perfmon_capture *cap, perfmon_capture_sink_fn_t fn,
                          void *arg);

/*
 * The name of thread tid as recorded (a COMM record), or NULL.  Looked up
 * in a table built by the drain, so cheap.
 */
const char *perfmon_capture_comm(const struct perfmon_capture *cap, unsigned int tid);

void perfmon_capture_destroy(struct perfmon_capture *cap);

/*
 * The last capture kept for report and script: perfmon_capture_keep() makes
 * cap the last one, destroying the one before; NULL when there is none.
 */
void perfmon_capture_keep(struct perfmon_capture *cap);
const struct perfmon_capture *perfmon_capture_last(void);

#endif /* KERN_PERFMON_CAPTURE_H */
