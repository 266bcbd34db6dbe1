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
 * moves `tail`, and `limit` after it with release ordering, which hands
 * the room back.  It may run on any CPU, concurrently with the producers,
 * but there is only one consumer per ring at a time (the caller's lock or
 * thread).
 *
 * When a record does not fit, it is dropped and counted (`lost`): a full
 * ring never overwrites or tears a record.  Records are whole multiples of
 * PERFMON_RING_ALIGN bytes and start with struct perfmon_rec_hdr.  A
 * record that runs past the end of the data lies in one piece, into the
 * `spare` bytes after it, when it fits there, and wraps around to the
 * start of the data otherwise (so always in a ring without spare): the
 * producers and the consumer tell the two apart by that rule alone.  The
 * bytes at the start of the data that a record in one piece passes over
 * hold nothing; the next record begins after them.  (Its spare bytes are
 * not written again before it is consumed: a record that reaches them
 * again lies a whole ring later.)
 *
 * Three ways to write a record.  perfmon_ring_begin(), _put() and
 * _commit() copy bytes in.  The other two let the producer store words
 * straight into the ring, in one piece: their records are never longer
 * than the spare.
 * perfmon_ring_reserve() and _publish() are for a record whose size is
 * known before it is written: the room is claimed first, then filled.
 * perfmon_ring_open() and _close() are for one that learns its size while
 * it is written (a call chain): the producer writes at the head before it
 * claims the room; if an interrupting producer took the head meanwhile,
 * its record overwrote the words, and the close fails: open again and
 * write again.
 */

#ifndef KERN_PERFMON_RING_H
#define KERN_PERFMON_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/assert.h"
#include "kern/macros.h"

#define PERFMON_RING_ALIGN      8
#define PERFMON_RING_MAX_REC    65528   /* size is 16 bits, aligned */

/* The header of every record. */
struct perfmon_rec_hdr {
    uint16_t type;                      /* PERFMON_REC_* (perfmon.h) */
    uint16_t size;                      /* bytes, header included */
    uint32_t misc;                      /* the type's */
};

/*
 * A ring.  data, size, mask and spare are set once; size is a power of
 * two, and data holds size + spare bytes.  head and
 * nest are the producer CPU's; published is written by producers (release)
 * and read by the consumer (acquire); tail and limit are written by the
 * consumer (release), and limit, tail + size, the offset producers may
 * reserve up to, is read by producers (acquire); lost is atomic.
 */
struct perfmon_ring {
    char *data;
    uint64_t size;
    uint64_t mask;                      /* size - 1: a byte count's
                                           offset in data, masked */
    uint64_t spare;                     /* bytes past size, for open() */
    uint64_t head;                      /* bytes reserved, ever */
    uint64_t published;                 /* bytes complete, ever */
    uint64_t tail;                      /* bytes consumed, ever */
    uint64_t limit;                     /* tail + size */
    unsigned int nest;                  /* producers in progress */
    uint64_t lost;                      /* records dropped: no room */
};

/*
 * A record being written: where the next bytes go, and its end; for one
 * being copied in (perfmon_ring_begin()), where it starts.
 */
struct perfmon_ring_txn {
    uint64_t pos;
    uint64_t end;
    uint64_t start;
};

/*
 * Set a ring up over data[0..size), with spare bytes more after them for
 * records written in place (perfmon_ring_init(): none).  Returns 0, or
 * -EINVAL when size is not a power of two of at least PERFMON_RING_ALIGN
 * bytes or spare is not a multiple of PERFMON_RING_ALIGN.
 */
int perfmon_ring_init(struct perfmon_ring *ring, void *data, uint64_t size);
int perfmon_ring_init_spare(struct perfmon_ring *ring, void *data,
                            uint64_t size, uint64_t spare);

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
 * The first word of a record's header, as stored (little-endian).
 */
static inline uint64_t
perfmon_ring_hdr_word(unsigned int type, uint64_t size, uint32_t misc)
{
    return (uint64_t)(uint16_t)type | (size << 16) | ((uint64_t)misc << 32);
}

/*
 * A producer comes in: one more in progress, before it reads head.  A
 * plain increment: a producer that interrupts this one puts the count back
 * before it returns, so the add needs no atomicity, and it is one
 * instruction.
 */
static inline void
perfmon_ring_enter(struct perfmon_ring *ring)
{
    ring->nest++;
    barrier();
}

/*
 * Start a record in place: returns where it goes (8-byte aligned), and
 * sets txn->end - txn->pos to the room there: the bytes free, contiguous,
 * at most PERFMON_RING_MAX_REC (a ring without spare may give less than
 * the free room near its end).  Producer CPU, any context.  The producer
 * stores the record there, header included, then calls
 * perfmon_ring_close() with its size (a multiple of PERFMON_RING_ALIGN,
 * at most the room), or perfmon_ring_cancel() when it does not fit.
 */
static inline void *
perfmon_ring_open(struct perfmon_ring *ring, struct perfmon_ring_txn *txn)
{
    uint64_t head, limit, off, room;

    perfmon_ring_enter(ring);
    head = READ_ONCE(ring->head);
    limit = __atomic_load_n(&ring->limit, __ATOMIC_ACQUIRE);
    off = head & ring->mask;
    room = MIN(limit - head, ring->size + ring->spare - off);
    txn->pos = head;
    txn->end = head + MIN(room, PERFMON_RING_MAX_REC);
    return &ring->data[off];
}

/* perfmon_ring_leave()'s rare second round, out of line. */
void perfmon_ring_leave_again(struct perfmon_ring *ring);

/*
 * The end of a producer's work, reservation failed or record committed:
 * the outermost producer publishes everything reserved, including what
 * producers that interrupted it reserved and completed meanwhile.
 */
static inline void
perfmon_ring_leave(struct perfmon_ring *ring)
{
    uint64_t head;

    /*
     * head and nest are this CPU's alone: plain accesses between compiler
     * barriers see what an interrupting producer left, and each test is
     * one compare with memory.
     */
    barrier();

    /* Inner: the count put back, as perfmon_ring_enter() took it. */
    if (unlikely(ring->nest > 1)) {
        barrier();                      /* the count read again, rarely */
        ring->nest--;
        return;
    }

    head = ring->head;
    __atomic_store_n(&ring->published, head, __ATOMIC_RELEASE);
    WRITE_ONCE(ring->nest, 0);
    barrier();

    /* A producer came in after the read, saw us, and left it to us. */
    if (unlikely(ring->head != head)) {
        perfmon_ring_leave_again(ring);
    }
}

/* Give the record up: it did not fit, and is counted as lost. */
void perfmon_ring_cancel(struct perfmon_ring *ring);

/*
 * The first try of perfmon_ring_reserve(), for a producer that entered
 * (perfmon_ring_enter()): claims the room and sets *offp, or returns
 * false, claiming and counting nothing, still entered, when the ring has
 * not the room or a producer interrupted the claim.  Then the producer
 * goes on with perfmon_ring_reserve_slow() (which may be out of line with
 * all its work: no loop, no call here).
 */
static inline bool
perfmon_ring_reserve_once(struct perfmon_ring *ring, uint64_t size,
                          uint64_t *offp)
{
    uint64_t head = READ_ONCE(ring->head);
    uint64_t limit = __atomic_load_n(&ring->limit, __ATOMIC_ACQUIRE);

    if (head + size > limit
        || !__atomic_compare_exchange_n(&ring->head, &head, head + size,
                                        false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
        return false;
    }

    *offp = head & ring->mask;
    return true;
}

/*
 * perfmon_ring_reserve() after a failed perfmon_ring_reserve_once(),
 * still entered: tries until the claim holds, or, when the ring has not
 * the room, counts the record as lost, leaves, and returns false.
 */
bool perfmon_ring_reserve_slow(struct perfmon_ring *ring, uint64_t size,
                               uint64_t *offp);

/*
 * Claim size bytes (a multiple of PERFMON_RING_ALIGN, at most the ring's
 * spare) for a record stored in place, at data + *offp: 8-byte aligned,
 * contiguous.  Returns false, counting the record as lost, when the ring
 * has not the room.  Producer CPU, any context.  On success the producer
 * stores the whole record there, header included, then calls
 * perfmon_ring_publish() in the same context.  The claim is a
 * compare-and-swap only against a producer interrupting this one between
 * the read of head and its update: perfmon_ring_reserve_slow() tries
 * again after it (its record then lies before this one).
 */
static inline bool
perfmon_ring_reserve(struct perfmon_ring *ring, uint64_t size,
                     uint64_t *offp)
{
    perfmon_ring_enter(ring);

    if (unlikely(!perfmon_ring_reserve_once(ring, size, offp))) {
        return perfmon_ring_reserve_slow(ring, size, offp);
    }

    return true;
}

/*
 * Publish the record perfmon_ring_reserve() placed, now stored (with the
 * records of producers it interrupted, when it is the outermost).
 */
static inline void
perfmon_ring_publish(struct perfmon_ring *ring)
{
    barrier();
    perfmon_ring_leave(ring);
}

/*
 * Claim the first size bytes written since perfmon_ring_open() and
 * publish them (with the records of producers it interrupted, when it is
 * the outermost).  Returns false, claiming nothing, when a producer that
 * interrupted this one took the place first: then open again and write
 * again.
 */
static inline bool
perfmon_ring_close(struct perfmon_ring *ring, struct perfmon_ring_txn *txn,
                   uint64_t size)
{
    uint64_t head = txn->pos;

    assert(size <= txn->end - txn->pos && (size % PERFMON_RING_ALIGN) == 0);

    if (!__atomic_compare_exchange_n(&ring->head, &head, head + size, false,
                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        perfmon_ring_leave(ring);
        return false;
    }

    barrier();
    perfmon_ring_leave(ring);
    return true;
}

/*
 * Consumer: copy the oldest complete record into dst and consume it.
 * Returns its size, 0 when there is none, or, leaving it in the ring, its
 * size when that is more than cap (dst may be NULL with a cap of 0, to
 * ask for the size).  perfmon_ring_drop(): consume it without a copy,
 * returning its size, or 0 when there is none.
 */
size_t perfmon_ring_pop(struct perfmon_ring *ring, void *dst, size_t cap);
size_t perfmon_ring_drop(struct perfmon_ring *ring);

/*
 * Consumer: the oldest complete record where it lies, its size in
 * *sizep, for a consumer that reads it in place before it consumes it
 * (perfmon_ring_drop()): NULL with *sizep 0 when there is none, NULL
 * with its size when it wraps around the end of the data (one no longer
 * than the spare never does).  It stays unchanged until consumed.
 */
const void *perfmon_ring_front(const struct perfmon_ring *ring,
                               size_t *sizep);

/* Records dropped so far (any context). */
uint64_t perfmon_ring_lost(const struct perfmon_ring *ring);

/* Bytes published and not consumed yet (any context, a snapshot). */
uint64_t perfmon_ring_used(const struct perfmon_ring *ring);

#endif /* KERN_PERFMON_RING_H */
