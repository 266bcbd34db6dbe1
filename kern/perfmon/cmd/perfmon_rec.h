/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Recordings: the samples of a `perfmon record` (or `perfmon top`) run,
 * kept in kernel memory.  A recording owns a sample buffer (per-CPU rings
 * the overflow interrupts write) and a consumer thread that drains the
 * rings every few milliseconds into a store of records, adding what the
 * interrupts cannot write themselves: the name of each thread seen
 * (PERFMON_REC_COMM, when the thread is first seen in a sample) and the
 * samples each CPU lost to a full ring (PERFMON_REC_LOST).  The store
 * keeps records in the ring format (struct perfmon_rec_hdr, 8-byte
 * aligned), in the order they were drained; samples of one CPU stay in
 * time order.
 *
 * The last recording made is kept until the next one, for `perfmon
 * report` and `perfmon script` (perfmon_rec_last()).
 *
 * Contexts: thread context for everything; one user of a recording at a
 * time (the command that made it), except the drain thread it owns.
 */

#ifndef KERN_PERFMON_REC_H
#define KERN_PERFMON_REC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/perfmon.h"
#include "kern/perfmon_ring.h"

/* Records the drain thread adds (payloads below). */
#define PERFMON_REC_COMM        (PERFMON_REC_USER + 0)  /* misc: tid */
#define PERFMON_REC_LOST        (PERFMON_REC_USER + 1)  /* misc: cpu */

#define PERFMON_REC_NAME_SIZE   32      /* a COMM payload: the name */

/* Largest store a recording may grow to, and the default. */
#define PERFMON_REC_STORE_MAX       (256 * 1024 * 1024)
#define PERFMON_REC_STORE_DEFAULT   (32 * 1024 * 1024)

/* What a recording says about itself. */
struct perfmon_rec_info {
    char event[32];                     /* the event, as the user named it */
    char command[96];                   /* the command recorded */
    uint64_t nr_samples;                /* kept in the store */
    uint64_t nr_lost;                   /* lost: rings full, store full */
    uint64_t nr_throttles;
    uint64_t store_bytes;
    uint64_t start_ns;                  /* TSC time of the start, the end */
    uint64_t end_ns;
};

struct perfmon_rec;

/*
 * Create a recording with rings of ring_size bytes per CPU (see
 * perfmon_sbuf_create()) and a store of at most store_max bytes, named for
 * the event and the command.  Returns 0, -EINVAL, -ENOMEM.
 */
int perfmon_rec_create(struct perfmon_rec **recp, size_t ring_size,
                       size_t store_max, const char *event,
                       const char *command);

/* The sample buffer sampling events of the recording write into. */
struct perfmon_sbuf *perfmon_rec_sbuf(struct perfmon_rec *rec);

/*
 * Start the drain thread; stop it, after a last drain once the events are
 * detached.  perfmon_rec_start() returns 0 or thread_create()'s error.
 */
int perfmon_rec_start(struct perfmon_rec *rec);
void perfmon_rec_stop(struct perfmon_rec *rec);

/*
 * Drain now, from the caller (for `perfmon top`, which uses no drain
 * thread).
 */
void perfmon_rec_drain(struct perfmon_rec *rec);

/* Forget every stored record (a `perfmon top` interval). */
void perfmon_rec_clear(struct perfmon_rec *rec);

void perfmon_rec_get_info(const struct perfmon_rec *rec,
                          struct perfmon_rec_info *info);

/*
 * Call fn for each stored record, in order, until it returns false.
 * Records are 8-byte aligned.
 */
typedef bool (*perfmon_rec_fn_t)(const struct perfmon_rec_hdr *hdr,
                                 void *arg);

void perfmon_rec_foreach(const struct perfmon_rec *rec, perfmon_rec_fn_t fn,
                         void *arg);

/*
 * A sink sees each record as it enters the store, in the store's order
 * except that a COMM record comes before the sample that named its thread,
 * called by the recording's consumer: the drain thread while it runs, the
 * owner otherwise.  Records the store has no room for are not shown (they
 * count as lost).  Set it before perfmon_rec_start(); fn must not call
 * back into the recording.
 */
typedef void (*perfmon_rec_sink_fn_t)(const struct perfmon_rec_hdr *hdr,
                                      void *arg);

void perfmon_rec_set_sink(struct perfmon_rec *rec, perfmon_rec_sink_fn_t fn,
                          void *arg);

/*
 * The name of thread tid as recorded (a COMM record), or NULL.  Looked up
 * in a table built by the drain, so cheap.
 */
const char *perfmon_rec_comm(const struct perfmon_rec *rec, unsigned int tid);

void perfmon_rec_destroy(struct perfmon_rec *rec);

/*
 * The last recording kept for report and script: perfmon_rec_keep() makes
 * rec the last one, destroying the one before; NULL when there is none.
 */
void perfmon_rec_keep(struct perfmon_rec *rec);
const struct perfmon_rec *perfmon_rec_last(void);

#endif /* KERN_PERFMON_REC_H */
