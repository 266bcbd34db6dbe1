/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Per-CPU record rings for samples: see kern/perfmon_ring.h.
 *
 * Offsets (head, published, tail, limit) count bytes since the ring was
 * set up and never wrap in practice (2^64 bytes); the position in data is
 * the offset modulo size.  Producer ordering relies on the producers of a ring
 * all running on one CPU: an interrupting producer completes before the
 * interrupted one resumes, so plain compiler barriers order their steps,
 * and the compare-and-swap on head only guards against such an interrupt
 * between the read of head and its update.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/assert.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon_ring.h"
#include "kern/string.h"

/*
 * Whether a record of n bytes at offset off of the data lies in one piece
 * (into the spare past the end), or wraps (see kern/perfmon_ring.h).
 */
static bool
perfmon_ring_one_piece(const struct perfmon_ring *ring, uint64_t off,
                       uint64_t n)
{
    return off + n <= ring->size + ring->spare;
}

/*
 * Copy n bytes in at txn->pos, inside the record txn writes: from the
 * record's place on when it lies in one piece, else across the end of
 * the data if they reach it.
 */
static void
perfmon_ring_copy_in(struct perfmon_ring *ring,
                     const struct perfmon_ring_txn *txn, const void *src,
                     size_t n)
{
    uint64_t start = txn->start & ring->mask, off, first;

    if (perfmon_ring_one_piece(ring, start, txn->end - txn->start)) {
        memcpy(&ring->data[start + (txn->pos - txn->start)], src, n);
        return;
    }

    off = txn->pos & ring->mask;
    first = MIN((uint64_t)n, ring->size - off);
    memcpy(&ring->data[off], src, (size_t)first);
    memcpy(ring->data, (const char *)src + first, n - (size_t)first);
}

/*
 * Copy out n bytes from ring offset pos, the start of a record of n bytes
 * or of its header: in one piece or across the end of the data.
 */
static void
perfmon_ring_copy_out(const struct perfmon_ring *ring, uint64_t pos,
                      void *dst, size_t n)
{
    uint64_t off = pos & ring->mask;
    size_t first;

    if (perfmon_ring_one_piece(ring, off, n)) {
        memcpy(dst, &ring->data[off], n);
        return;
    }

    first = (size_t)(ring->size - off);
    memcpy(dst, &ring->data[off], first);
    memcpy((char *)dst + first, ring->data, n - first);
}

int
perfmon_ring_init_spare(struct perfmon_ring *ring, void *data, uint64_t size,
                        uint64_t spare)
{
    if (ring == NULL || data == NULL || size < PERFMON_RING_ALIGN
        || (size & (size - 1)) != 0 || (spare % PERFMON_RING_ALIGN) != 0) {
        return -EINVAL;
    }

    memset(ring, 0, sizeof(*ring));
    ring->data = data;
    ring->size = size;
    ring->mask = size - 1;
    ring->limit = size;
    ring->spare = spare;
    return 0;
}

int
perfmon_ring_init(struct perfmon_ring *ring, void *data, uint64_t size)
{
    return perfmon_ring_init_spare(ring, data, size, 0);
}

void
perfmon_ring_put(struct perfmon_ring *ring, struct perfmon_ring_txn *txn,
                 const void *src, size_t n)
{
    n = (size_t)MIN((uint64_t)n, txn->end - txn->pos);
    perfmon_ring_copy_in(ring, txn, src, n);
    txn->pos += n;
}

bool
perfmon_ring_begin(struct perfmon_ring *ring, unsigned int type,
                   uint32_t misc, size_t len, struct perfmon_ring_txn *txn)
{
    struct perfmon_rec_hdr hdr;
    uint64_t head, limit, rlen;

    rlen = P2ROUND(sizeof(hdr) + (uint64_t)len, PERFMON_RING_ALIGN);
    perfmon_ring_enter(ring);

    do {
        head = READ_ONCE(ring->head);
        limit = __atomic_load_n(&ring->limit, __ATOMIC_ACQUIRE);

        if (rlen > PERFMON_RING_MAX_REC || head + rlen > limit) {
            __atomic_fetch_add(&ring->lost, 1, __ATOMIC_RELAXED);
            perfmon_ring_leave(ring);
            return false;
        }
    } while (!__atomic_compare_exchange_n(&ring->head, &head, head + rlen,
                                          false, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));

    txn->pos = head;
    txn->end = head + rlen;
    txn->start = head;
    hdr.type = (uint16_t)type;
    hdr.size = (uint16_t)rlen;
    hdr.misc = misc;
    perfmon_ring_put(ring, txn, &hdr, sizeof(hdr));
    return true;
}

void
perfmon_ring_commit(struct perfmon_ring *ring, struct perfmon_ring_txn *txn)
{
    static const char zeros[PERFMON_RING_ALIGN];

    while (txn->pos < txn->end) {
        perfmon_ring_put(ring, txn, zeros, sizeof(zeros));
    }

    barrier();
    perfmon_ring_leave(ring);
}

/*
 * perfmon_ring_reserve() once its first try failed, already entered: the
 * room checked again and the claim tried until it holds, or the record
 * counted as lost.
 */
bool
perfmon_ring_reserve_slow(struct perfmon_ring *ring, uint64_t size,
                          uint64_t *offp)
{
    uint64_t head = READ_ONCE(ring->head), limit;

    do {
        limit = __atomic_load_n(&ring->limit, __ATOMIC_ACQUIRE);

        if (head + size > limit) {
            perfmon_ring_cancel(ring);
            return false;
        }
    } while (!__atomic_compare_exchange_n(&ring->head, &head, head + size,
                                          false, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));

    *offp = head & ring->mask;
    return true;
}

/*
 * The end of perfmon_ring_leave() when a producer came in after the
 * outermost one read head: it saw the outermost at work and left the
 * publishing to it.  Outermost again (no producer is inside now: each
 * puts the count back before it returns), until head holds still.
 */
void
perfmon_ring_leave_again(struct perfmon_ring *ring)
{
    uint64_t head;

    do {
        WRITE_ONCE(ring->nest, 1);
        barrier();
        head = READ_ONCE(ring->head);
        __atomic_store_n(&ring->published, head, __ATOMIC_RELEASE);
        WRITE_ONCE(ring->nest, 0);
        barrier();
    } while (READ_ONCE(ring->head) != head);
}

void
perfmon_ring_cancel(struct perfmon_ring *ring)
{
    __atomic_fetch_add(&ring->lost, 1, __ATOMIC_RELAXED);
    perfmon_ring_leave(ring);
}

/*
 * The consumer is done with the oldest size bytes: tail moves, and the
 * producers' limit after it, with release ordering (the bytes were read
 * before the room is handed back).
 */
static void
perfmon_ring_consume(struct perfmon_ring *ring, uint64_t size)
{
    uint64_t tail = ring->tail + size;

    __atomic_store_n(&ring->tail, tail, __ATOMIC_RELEASE);
    __atomic_store_n(&ring->limit, tail + ring->size, __ATOMIC_RELEASE);
}

/* The oldest complete record's size (its header read), or 0: none. */
static size_t
perfmon_ring_peek(const struct perfmon_ring *ring)
{
    uint64_t published = __atomic_load_n(&ring->published, __ATOMIC_ACQUIRE);
    struct perfmon_rec_hdr hdr;

    if (published == ring->tail) {
        return 0;
    }

    perfmon_ring_copy_out(ring, ring->tail, &hdr, sizeof(hdr));
    return hdr.size;
}

size_t
perfmon_ring_pop(struct perfmon_ring *ring, void *dst, size_t cap)
{
    size_t size = perfmon_ring_peek(ring);

    if (size == 0 || size > cap) {
        return size;
    }

    perfmon_ring_copy_out(ring, ring->tail, dst, size);
    perfmon_ring_consume(ring, size);
    return size;
}

size_t
perfmon_ring_drop(struct perfmon_ring *ring)
{
    size_t size = perfmon_ring_peek(ring);

    perfmon_ring_consume(ring, size);
    return size;
}

const void *
perfmon_ring_front(const struct perfmon_ring *ring, size_t *sizep)
{
    uint64_t off = ring->tail & ring->mask;

    *sizep = perfmon_ring_peek(ring);

    if (*sizep == 0 || !perfmon_ring_one_piece(ring, off, *sizep)) {
        return NULL;
    }

    return &ring->data[off];
}

uint64_t
perfmon_ring_lost(const struct perfmon_ring *ring)
{
    return __atomic_load_n(&ring->lost, __ATOMIC_RELAXED);
}

uint64_t
perfmon_ring_used(const struct perfmon_ring *ring)
{
    return __atomic_load_n(&ring->published, __ATOMIC_ACQUIRE)
           - __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);
}
