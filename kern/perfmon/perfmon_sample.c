/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: sample buffers and the sample records the
 * overflow interrupt writes into them (see "Sampling" in kern/perfmon.h).
 *
 * A sample buffer is one ring per CPU (kern/perfmon_ring.h): the overflow
 * interrupt of a CPU writes only into that CPU's ring, without a lock, and
 * a consumer thread drains the rings.  A sample record holds, after its
 * header, u32 fields and u32 the sampling id, then the fields asked for, in
 * the order of PERFMON_SF_* (perf's order).  The call chain is walked by
 * frame pointers over the interrupted thread's stack only, so a corrupt
 * stack ends the chain and never faults.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/trap.h"
#include "arch/x86/tsc.h"
#include "arch/x86/unwind.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/perfmon_ring.h"
#include "kern/string.h"
#include "kern/symtab.h"
#include "kern/thread.h"

/*
 * A sample buffer: nr_cpus rings of size bytes each.  Set up at creation,
 * then only the rings change (see kern/perfmon_ring.h).
 */
struct perfmon_sbuf {
    unsigned int nr_cpus;
    size_t size;
    struct perfmon_ring rings[];
};

/* The payload of a PERFMON_REC_THROTTLE record. */
struct perfmon_throttle_rec {
    uint64_t time_ns;
    uint64_t period;
};

/* ---- buffers -------------------------------------------------------------- */

static size_t
perfmon_sbuf_struct_size(unsigned int nr_cpus)
{
    return sizeof(struct perfmon_sbuf)
           + nr_cpus * sizeof(struct perfmon_ring);
}

void
perfmon_sbuf_destroy(struct perfmon_sbuf *sbuf)
{
    if (sbuf == NULL) {
        return;
    }

    for (unsigned int i = 0; i < sbuf->nr_cpus; i++) {
        kmem_free(sbuf->rings[i].data, sbuf->size);
    }

    kmem_free(sbuf, perfmon_sbuf_struct_size(sbuf->nr_cpus));
}

int
perfmon_sbuf_create(struct perfmon_sbuf **sbufp, size_t size)
{
    unsigned int nr_cpus = cpu_count();
    struct perfmon_sbuf *sbuf;

    if (sbufp == NULL || size < PERFMON_SBUF_MIN || size > PERFMON_SBUF_MAX
        || (size & (size - 1)) != 0) {
        return -EINVAL;
    }

    sbuf = kmem_zalloc(perfmon_sbuf_struct_size(nr_cpus));

    if (sbuf == NULL) {
        return -ENOMEM;
    }

    sbuf->size = size;

    for (unsigned int i = 0; i < nr_cpus; i++) {
        void *data = kmem_alloc(size);

        if (data == NULL) {
            perfmon_sbuf_destroy(sbuf);
            return -ENOMEM;
        }

        perfmon_ring_init(&sbuf->rings[i], data, size);
        sbuf->nr_cpus = i + 1;
    }

    *sbufp = sbuf;
    return 0;
}

size_t
perfmon_sbuf_read(struct perfmon_sbuf *sbuf, unsigned int cpu, void *dst,
                  size_t cap)
{
    if (sbuf == NULL || cpu >= sbuf->nr_cpus) {
        return 0;
    }

    return perfmon_ring_pop(&sbuf->rings[cpu], dst, cap);
}

size_t
perfmon_sbuf_drop(struct perfmon_sbuf *sbuf, unsigned int cpu)
{
    if (sbuf == NULL || cpu >= sbuf->nr_cpus) {
        return 0;
    }

    return perfmon_ring_drop(&sbuf->rings[cpu]);
}

uint64_t
perfmon_sbuf_lost(const struct perfmon_sbuf *sbuf, unsigned int cpu)
{
    if (sbuf == NULL || cpu >= sbuf->nr_cpus) {
        return 0;
    }

    return perfmon_ring_lost(&sbuf->rings[cpu]);
}

unsigned int
perfmon_sbuf_nr_cpus(const struct perfmon_sbuf *sbuf)
{
    return (sbuf == NULL) ? 0 : sbuf->nr_cpus;
}

size_t
perfmon_sbuf_size(const struct perfmon_sbuf *sbuf)
{
    return (sbuf == NULL) ? 0 : sbuf->size;
}

/* ---- writing samples (NMI context) ---------------------------------------- */

/*
 * The TSC in nanoseconds: tsc_cycles_to_ns() takes no lock and divides in
 * hardware, a fixed number of instructions in the overflow interrupt.
 */
static uint64_t
perfmon_sample_now_ns(void)
{
    return tsc_cycles_to_ns(cpu_rdtsc());
}

static struct perfmon_ring *
perfmon_sample_ring(const struct perfmon_sampling *sampling)
{
    unsigned int cpu = cpu_id();

    if (cpu >= sampling->sbuf->nr_cpus) {
        return NULL;
    }

    return &sampling->sbuf->rings[cpu];
}

/*
 * The call chain of the interrupted code: its ip, then the callers found
 * on the current thread's stack (arch/x86/unwind.h).
 */
static unsigned int
perfmon_sample_callchain(const struct trap_frame *frame, uint64_t *ips)
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
    return unwind_interrupted(&env, frame->rip, frame->rsp, frame->rbp, ips,
                              PERFMON_MAX_CALLCHAIN);
}

static void
perfmon_sample_put_u64(struct perfmon_ring *ring, struct perfmon_ring_txn *txn,
                       uint64_t v)
{
    perfmon_ring_put(ring, txn, &v, sizeof(v));
}

static void
perfmon_sample_put_u32s(struct perfmon_ring *ring,
                        struct perfmon_ring_txn *txn, uint32_t a, uint32_t b)
{
    uint32_t v[2] = { a, b };

    perfmon_ring_put(ring, txn, v, sizeof(v));
}

bool
perfmon_sample_write(const struct perfmon_sampling *sampling,
                     const struct trap_frame *frame, uint64_t period)
{
    struct perfmon_ring *ring = perfmon_sample_ring(sampling);
    unsigned int fields = sampling->fields, nr_ips = 0, nr_branches = 0;
    const struct perfmon_branch *branches = NULL;
    uint64_t ips[PERFMON_MAX_CALLCHAIN];
    struct perfmon_ring_txn txn;
    size_t len = 2 * sizeof(uint32_t);

    assert(!cpu_intr_enabled());

    if (ring == NULL) {
        return false;
    }

    /* IP, TID, TIME, CPU and PERIOD take 8 bytes each. */
    for (unsigned int f = PERFMON_SF_IP; f <= PERFMON_SF_PERIOD; f <<= 1) {
        len += (fields & f) ? sizeof(uint64_t) : 0;
    }

    if (fields & PERFMON_SF_CALLCHAIN) {
        nr_ips = perfmon_sample_callchain(frame, ips);
        len += sizeof(uint64_t) * (1 + nr_ips);
    }

    if (fields & PERFMON_SF_BRANCH) {
        branches = perfmon_intr_branches(&nr_branches);
        len += sizeof(uint64_t) + nr_branches * sizeof(*branches);
    }

    if (!perfmon_ring_begin(ring, PERFMON_REC_SAMPLE, 0, len, &txn)) {
        return false;
    }

    perfmon_sample_put_u32s(ring, &txn, fields, sampling->id);

    if (fields & PERFMON_SF_IP) {
        perfmon_sample_put_u64(ring, &txn, frame->rip);
    }

    if (fields & PERFMON_SF_TID) {
        struct thread *thread = thread_self();

        perfmon_sample_put_u32s(ring, &txn, 0,
                                (thread != NULL) ? thread_id(thread) : 0);
    }

    if (fields & PERFMON_SF_TIME) {
        perfmon_sample_put_u64(ring, &txn, perfmon_sample_now_ns());
    }

    if (fields & PERFMON_SF_CPU) {
        perfmon_sample_put_u32s(ring, &txn, cpu_id(), 0);
    }

    if (fields & PERFMON_SF_PERIOD) {
        perfmon_sample_put_u64(ring, &txn, period);
    }

    if (fields & PERFMON_SF_CALLCHAIN) {
        perfmon_sample_put_u64(ring, &txn, nr_ips);
        perfmon_ring_put(ring, &txn, ips, nr_ips * sizeof(ips[0]));
    }

    if (fields & PERFMON_SF_BRANCH) {
        perfmon_sample_put_u64(ring, &txn, nr_branches);
        perfmon_ring_put(ring, &txn, branches,
                         nr_branches * sizeof(*branches));
    }

    perfmon_ring_commit(ring, &txn);
    return true;
}

void
perfmon_sample_throttled(const struct perfmon_sampling *sampling,
                         uint64_t period)
{
    struct perfmon_ring *ring = perfmon_sample_ring(sampling);
    struct perfmon_throttle_rec rec = {
        .time_ns = perfmon_sample_now_ns(),
        .period = period,
    };
    struct perfmon_ring_txn txn;

    if (ring != NULL && perfmon_ring_begin(ring, PERFMON_REC_THROTTLE,
                                           sampling->id, sizeof(rec), &txn)) {
        perfmon_ring_put(ring, &txn, &rec, sizeof(rec));
        perfmon_ring_commit(ring, &txn);
    }
}

/* ---- reading samples ------------------------------------------------------- */

/* A cursor over a record's payload; every take checks the bounds. */
struct perfmon_sample_cursor {
    const char *pos;
    const char *end;
};

static bool
perfmon_sample_take(struct perfmon_sample_cursor *c, void *dst, size_t n)
{
    if ((size_t)(c->end - c->pos) < n) {
        return false;
    }

    memcpy(dst, c->pos, n);
    c->pos += n;
    return true;
}

/* A u64 count then that many entries of size bytes, left in place. */
static bool
perfmon_sample_take_array(struct perfmon_sample_cursor *c, size_t size,
                          uint64_t max, unsigned int *nrp, const void **arrayp)
{
    uint64_t nr;

    if (!perfmon_sample_take(c, &nr, sizeof(nr)) || nr > max
        || (size_t)(c->end - c->pos) < nr * size) {
        return false;
    }

    *nrp = (unsigned int)nr;
    *arrayp = c->pos;
    c->pos += nr * size;
    return true;
}

int
perfmon_sample_decode(const void *rec, size_t size,
                      struct perfmon_sample *sample)
{
    const struct perfmon_rec_hdr *hdr = rec;
    struct perfmon_sample_cursor c;
    uint32_t head[2], pair[2];
    const void *array;

    if (rec == NULL || sample == NULL || size < sizeof(*hdr)
        || hdr->type != PERFMON_REC_SAMPLE || hdr->size != size) {
        return -EINVAL;
    }

    memset(sample, 0, sizeof(*sample));
    c.pos = (const char *)rec + sizeof(*hdr);
    c.end = (const char *)rec + size;

    if (!perfmon_sample_take(&c, head, sizeof(head))
        || (head[0] & ~PERFMON_SF_MASK) != 0) {
        return -EINVAL;
    }

    sample->fields = head[0];
    sample->id = head[1];

    if (((sample->fields & PERFMON_SF_IP)
         && !perfmon_sample_take(&c, &sample->ip, sizeof(sample->ip)))
        || ((sample->fields & PERFMON_SF_TID)
            && !perfmon_sample_take(&c, pair, sizeof(pair)))) {
        return -EINVAL;
    }

    sample->tid = (sample->fields & PERFMON_SF_TID) ? pair[1] : 0;

    if (((sample->fields & PERFMON_SF_TIME)
         && !perfmon_sample_take(&c, &sample->time_ns,
                                 sizeof(sample->time_ns)))
        || ((sample->fields & PERFMON_SF_CPU)
            && !perfmon_sample_take(&c, pair, sizeof(pair)))) {
        return -EINVAL;
    }

    sample->cpu = (sample->fields & PERFMON_SF_CPU) ? pair[0] : 0;

    if ((sample->fields & PERFMON_SF_PERIOD)
        && !perfmon_sample_take(&c, &sample->period, sizeof(sample->period))) {
        return -EINVAL;
    }

    if (sample->fields & PERFMON_SF_CALLCHAIN) {
        if (!perfmon_sample_take_array(&c, sizeof(uint64_t),
                                       PERFMON_MAX_CALLCHAIN, &sample->nr_ips,
                                       &array)) {
            return -EINVAL;
        }

        sample->ips = array;
    }

    if (sample->fields & PERFMON_SF_BRANCH) {
        if (!perfmon_sample_take_array(&c, sizeof(struct perfmon_branch),
                                       PERFMON_MAX_BRANCHES,
                                       &sample->nr_branches, &array)) {
            return -EINVAL;
        }

        sample->branches = array;
    }

    /* What is left can only be the ring's padding. */
    return (c.end - c.pos < PERFMON_RING_ALIGN) ? 0 : -EINVAL;
}
