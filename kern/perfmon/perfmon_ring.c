/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Per-CPU record rings for samples: see kern/perfmon_ring.h.
 *
 * Offsets (head, published, tail) count bytes since the ring was set up
 * and never wrap in practice (2^64 bytes); the position in data is the
 * offset modulo size.  Producer ordering relies on the producers of a ring
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

/* Copy n bytes at ring offset pos, across the end of data if needed. */
static void
perfmon_ring_copy_in(struct perfmon_ring *ring, uint64_t pos,
                     const void *src, size_t n)
{
    uint64_t off = pos & (ring->size - 1);
    size_t first = (size_t)MIN((uint64_t)n, ring->size - off);

    memcpy(&ring->data[off], src, first);
    memcpy(ring->data, (const char *)src + first, n - first);
}

static void
perfmon_ring_copy_out(const struct perfmon_ring *ring, uint64_t pos,
                      void *dst, size_t n)
{
    uint64_t off = pos & (ring->size - 1);
    size_t first = (size_t)MIN((uint64_t)n, ring->size - off);

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
    perfmon_ring_copy_in(ring, txn->pos, src, n);
    txn->pos += n;
}

bool
perfmon_ring_begin(struct perfmon_ring *ring, unsigned int type,
                   uint32_t misc, size_t len, struct perfmon_ring_txn *txn)
{
    struct perfmon_rec_hdr hdr;
    uint64_t head, tail, rlen;

    rlen = P2ROUND(sizeof(hdr) + (uint64_t)len, PERFMON_RING_ALIGN);
    WRITE_ONCE(ring->nest, ring->nest + 1);
    barrier();

    do {
        head = READ_ONCE(ring->head);
        tail = __atomic_load_n(&ring->tail, __ATOMIC_ACQUIRE);

        if (rlen > PERFMON_RING_MAX_REC || head + rlen - tail > ring->size) {
            __atomic_fetch_add(&ring->lost, 1, __ATOMIC_RELAXED);
            perfmon_ring_leave(ring);
            return false;
        }
    } while (!__atomic_compare_exchange_n(&ring->head, &head, head + rlen,
                                          false, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));

    txn->pos = head;
    txn->end = head + rlen;
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
 * The words of a record that ran past the end of the data, moved to its
 * start: word stores, not a byte copy.
 */
void __keep_loops
perfmon_ring_unspare(struct perfmon_ring *ring, uint64_t n)
{
    const uint64_t *src = (const uint64_t *)&ring->data[ring->size];
    uint64_t *dst = (uint64_t *)ring->data;

    for (uint64_t i = 0; i < n / sizeof(uint64_t); i++) {
        dst[i] = src[i];
    }
}

void
perfmon_ring_cancel(struct perfmon_ring *ring)
{
    __atomic_fetch_add(&ring->lost, 1, __ATOMIC_RELAXED);
    perfmon_ring_leave(ring);
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
    __atomic_store_n(&ring->tail, ring->tail + size, __ATOMIC_RELEASE);
    return size;
}

size_t
perfmon_ring_drop(struct perfmon_ring *ring)
{
    size_t size = perfmon_ring_peek(ring);

    __atomic_store_n(&ring->tail, ring->tail + size, __ATOMIC_RELEASE);
    return size;
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
