/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * A ring of variable-size records with producers on one CPU and one
 * consumer anywhere: the per-CPU sample buffers of the perfmon core.
 *
 * Producers run on the ring's CPU, in any context: thread, interrupt or
 * NMI, and a producer may be interrupted by another (an NMI landing in the
 * middle of a record written from thread context).  They take no lock.  A
 * producer reserves room by moving `head` with a compare-and-swap (a local
 * atomic: only that CPU writes it), writes its record, and commits; the
 * outermost producer publishes everything reserved so far, so a record
 * interrupted half-written is never published before it is complete, and
 * a record reserved later by an interrupting producer waits for it.
 *
 * The consumer reads complete records from `tail` to `published` and then
 * moves `tail`, with release ordering, which hands the room back.  It may
 * run on any CPU, concurrently with the producers, but there is only one
 * consumer per ring at a time (the caller's lock or thread).
 *
 * When a record does not fit, it is dropped and counted (`lost`): a full
 * ring never overwrites or tears a record.  Records are whole multiples of
 * PERFMON_RING_ALIGN bytes, start with struct perfmon_rec_hdr and may wrap
 * around the end of the data.
 */

#ifndef KERN_PERFMON_RING_H
#define KERN_PERFMON_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PERFMON_RING_ALIGN      8
#define PERFMON_RING_MAX_REC    65528   /* size is 16 bits, aligned */

/* The header of every record. */
struct perfmon_rec_hdr {
    uint16_t type;                      /* PERFMON_REC_* (perfmon.h) */
    uint16_t size;                      /* bytes, header included */
    uint32_t misc;                      /* the type's */
};

/*
 * A ring.  data and size are set once; size is a power of two.  head and
 * nest are the producer CPU's; published is written by producers (release)
 * and read by the consumer (acquire); tail is written by the consumer
 * (release) and read by producers (acquire); lost is atomic.
 */
struct perfmon_ring {
    char *data;
    uint64_t size;
    uint64_t head;                      /* bytes reserved, ever */
    uint64_t published;                 /* bytes complete, ever */
    uint64_t tail;                      /* bytes consumed, ever */
    unsigned int nest;                  /* producers in progress */
    uint64_t lost;                      /* records dropped: no room */
};

/* A record being written: where the next bytes go, and its end. */
struct perfmon_ring_txn {
    uint64_t pos;
    uint64_t end;
};

/*
 * Set a ring up over data[0..size).  Returns 0, or -EINVAL when size is
 * not a power of two of at least PERFMON_RING_ALIGN bytes.
 */
int perfmon_ring_init(struct perfmon_ring *ring, void *data, uint64_t size);

/*
 * Start a record of type and misc with len bytes after its header (the
 * whole rounded up to PERFMON_RING_ALIGN), writing the header.  Producer
 * CPU, any context.  Returns true and fills *txn, or returns false,
 * counting the record as lost, when it does not fit now (or ever: above
 * PERFMON_RING_MAX_REC).  Every successful begin must be followed by
 * perfmon_ring_commit() in the same context.
 */
bool perfmon_ring_begin(struct perfmon_ring *ring, unsigned int type,
                        uint32_t misc, size_t len,
                        struct perfmon_ring_txn *txn);

/* Write n more bytes of the record (never past what was reserved). */
void perfmon_ring_put(struct perfmon_ring *ring, struct perfmon_ring_txn *txn,
                      const void *src, size_t n);

/* Finish the record; padding up to the reserved length is zeroed. */
void perfmon_ring_commit(struct perfmon_ring *ring,
                         struct perfmon_ring_txn *txn);

/*
 * Consumer: copy the oldest complete record into dst and consume it.
 * Returns its size, 0 when there is none, or, leaving it in the ring, its
 * size when that is more than cap (dst may be NULL with a cap of 0, to
 * ask for the size).  perfmon_ring_drop(): consume it without a copy,
 * returning its size, or 0 when there is none.
 */
size_t perfmon_ring_pop(struct perfmon_ring *ring, void *dst, size_t cap);
size_t perfmon_ring_drop(struct perfmon_ring *ring);

/* Records dropped so far (any context). */
uint64_t perfmon_ring_lost(const struct perfmon_ring *ring);

/* Bytes published and not consumed yet (any context, a snapshot). */
uint64_t perfmon_ring_used(const struct perfmon_ring *ring);

#endif /* KERN_PERFMON_RING_H */
