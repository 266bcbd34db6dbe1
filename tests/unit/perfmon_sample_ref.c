/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The sample writer as it was before records were stored in place, kept
 * as the reference the host tests compare kern/perfmon/perfmon_sample.c
 * with (perfmon_sample_test.c): it builds each record field by field with
 * byte copies into a plain ring (perfmon_ring_init(), no spare), wrapping
 * at the end of the data, and drops what does not fit whole.  The fields,
 * their order and the ring's accounting are the ones perf's reader and
 * `perfmon record` were written against.  Its call chains are the
 * reference unwinder's (unwind_ref.c), walked and checked at once in the
 * interrupt, as they were before the check moved to the reader.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arch/x86/cpu.h"
#include "arch/x86/trap.h"
#include "arch/x86/tsc.h"
#include "arch/x86/unwind.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/perfmon_ring.h"
#include "kern/symtab.h"
#include "kern/thread.h"
#include "perfmon_sample_ref.h"
#include "unwind_ref.h"

struct ref_txn {
    uint64_t pos;
    uint64_t end;
};

static void
ref_copy_in(struct perfmon_ring *ring, uint64_t pos, const void *src,
            size_t n)
{
    uint64_t off = pos & (ring->size - 1);
    size_t first = (size_t)MIN((uint64_t)n, ring->size - off);

    memcpy(&ring->data[off], src, first);
    memcpy(ring->data, (const char *)src + first, n - first);
}

static void
ref_put(struct perfmon_ring *ring, struct ref_txn *txn, const void *src,
        size_t n)
{
    n = (size_t)MIN((uint64_t)n, txn->end - txn->pos);
    ref_copy_in(ring, txn->pos, src, n);
    txn->pos += n;
}

/* One producer, nothing nested: head and published move together. */
static bool
ref_begin(struct perfmon_ring *ring, unsigned int type, uint32_t misc,
          size_t len, struct ref_txn *txn)
{
    struct perfmon_rec_hdr hdr;
    uint64_t rlen = P2ROUND(sizeof(hdr) + (uint64_t)len, PERFMON_RING_ALIGN);

    if (rlen > PERFMON_RING_MAX_REC
        || ring->head + rlen - ring->tail > ring->size) {
        ring->lost++;
        return false;
    }

    txn->pos = ring->head;
    txn->end = ring->head + rlen;
    ring->head += rlen;
    hdr.type = (uint16_t)type;
    hdr.size = (uint16_t)rlen;
    hdr.misc = misc;
    ref_put(ring, txn, &hdr, sizeof(hdr));
    return true;
}

static void
ref_commit(struct perfmon_ring *ring, struct ref_txn *txn)
{
    static const char zeros[PERFMON_RING_ALIGN];

    while (txn->pos < txn->end) {
        ref_put(ring, txn, zeros, sizeof(zeros));
    }

    ring->published = ring->head;
}

static unsigned int
ref_callchain(const struct trap_frame *frame, uint64_t *ips)
{
    struct unwind_stack stack;
    struct unwind_env env = {
        .stacks = &stack,
        .nr_stacks = 1,
        .func_start = symtab_func_start,
    };

    if (!thread_stack_bounds(thread_self(), &stack.lo, &stack.hi)) {
        ips[0] = frame->rip;
        return 1;
    }

    symtab_text_bounds(&env.text_lo, &env.text_hi);
    return ref_unwind_interrupted(&env, frame->rip, frame->rsp, frame->rbp,
                                  ips, PERFMON_MAX_CALLCHAIN);
}

static void
ref_put_u64(struct perfmon_ring *ring, struct ref_txn *txn, uint64_t v)
{
    ref_put(ring, txn, &v, sizeof(v));
}

static void
ref_put_u32s(struct perfmon_ring *ring, struct ref_txn *txn, uint32_t a,
             uint32_t b)
{
    uint32_t v[2] = { a, b };

    ref_put(ring, txn, v, sizeof(v));
}

bool
ref_sample_write(struct perfmon_ring *ring,
                 const struct perfmon_sampling *sampling,
                 const struct trap_frame *frame, uint64_t period)
{
    unsigned int fields = sampling->fields, nr_ips = 0, nr_branches = 0;
    const struct perfmon_branch *branches = NULL;
    uint64_t ips[PERFMON_MAX_CALLCHAIN];
    struct ref_txn txn;
    size_t len = 2 * sizeof(uint32_t);

    for (unsigned int f = PERFMON_SF_IP; f <= PERFMON_SF_PERIOD; f <<= 1) {
        len += (fields & f) ? sizeof(uint64_t) : 0;
    }

    if (fields & PERFMON_SF_CALLCHAIN) {
        nr_ips = ref_callchain(frame, ips);
        len += sizeof(uint64_t) * (1 + nr_ips);
    }

    if (fields & PERFMON_SF_BRANCH) {
        branches = perfmon_intr_branches(&nr_branches);
        len += sizeof(uint64_t) + nr_branches * sizeof(*branches);
    }

    if (!ref_begin(ring, PERFMON_REC_SAMPLE, 0, len, &txn)) {
        return false;
    }

    ref_put_u32s(ring, &txn, fields, sampling->id);

    if (fields & PERFMON_SF_IP) {
        ref_put_u64(ring, &txn, frame->rip);
    }

    if (fields & PERFMON_SF_TID) {
        struct thread *thread = thread_self();

        ref_put_u32s(ring, &txn, 0, (thread != NULL) ? thread_id(thread) : 0);
    }

    if (fields & PERFMON_SF_TIME) {
        ref_put_u64(ring, &txn, tsc_cycles_to_ns(cpu_rdtsc()));
    }

    if (fields & PERFMON_SF_CPU) {
        ref_put_u32s(ring, &txn, cpu_id(), 0);
    }

    if (fields & PERFMON_SF_PERIOD) {
        ref_put_u64(ring, &txn, period);
    }

    if (fields & PERFMON_SF_CALLCHAIN) {
        ref_put_u64(ring, &txn, nr_ips);
        ref_put(ring, &txn, ips, nr_ips * sizeof(ips[0]));
    }

    if (fields & PERFMON_SF_BRANCH) {
        ref_put_u64(ring, &txn, nr_branches);
        ref_put(ring, &txn, branches, nr_branches * sizeof(*branches));
    }

    ref_commit(ring, &txn);
    return true;
}

void
ref_sample_throttled(struct perfmon_ring *ring,
                     const struct perfmon_sampling *sampling, uint64_t period)
{
    uint64_t rec[2] = { tsc_cycles_to_ns(cpu_rdtsc()), period };
    struct ref_txn txn;

    if (ref_begin(ring, PERFMON_REC_THROTTLE, sampling->id, sizeof(rec),
                  &txn)) {
        ref_put(ring, &txn, rec, sizeof(rec));
        ref_commit(ring, &txn);
    }
}
