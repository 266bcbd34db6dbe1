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
 * the order of PERFMON_SF_* (perf's order: READ after PERIOD).  The call
 * chain is walked by frame pointers over the interrupted thread's stack
 * only, so a corrupt stack ends the chain and never faults.  The overflow
 * interrupt stores it raw, each frame unchecked past the interrupted
 * function's caller (arch/x86/unwind.h), and the reader checks it as the
 * record leaves the ring (perfmon_sbuf_read()): every record read holds
 * only real callers, byte for byte what a checked walk would have
 * written.
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
#include "kern/perfmon_region.h"
#include "kern/perfmon_ring.h"
#include "kern/string.h"
#include "kern/symtab.h"
#include "kern/thread.h"

/*
 * A sample buffer: nr_cpus rings of size bytes each, by CPU.  Set up at
 * creation, then only the rings change (see kern/perfmon_ring.h).  Each
 * ring lies at the start of its own block, its data after it
 * (struct perfmon_sbuf_block): a writer finds its CPU's ring by one load.
 */
struct perfmon_sbuf {
    unsigned int nr_cpus;
    size_t size;
    struct perfmon_ring *rings[];
};

/*
 * A CPU's part of a sample buffer: its ring, then the ring's data.  The
 * ring is at the start: a ring pointer is its block's.
 */
struct perfmon_sbuf_block {
    struct perfmon_ring ring;
    uint64_t data[];
};

_Static_assert(offsetof(struct perfmon_sbuf_block, ring) == 0,
               "a ring pointer is its block's");

/*
 * The largest sample record: header, fields and id, the five words of IP
 * to PERIOD, the longest call chain and branch stack with their counts.
 * Each ring's data has as many bytes again past its end, so that a record
 * is always written in one piece (kern/perfmon_ring.h).
 */
#define PERFMON_SAMPLE_MAX_SIZE                                             \
    (sizeof(uint64_t) * (2 + 5 + 1 + PERFMON_MAX_READS + 1                 \
                         + PERFMON_MAX_CALLCHAIN + 1)                       \
     + sizeof(struct perfmon_branch) * PERFMON_MAX_BRANCHES)

static size_t
perfmon_sbuf_block_size(const struct perfmon_sbuf *sbuf)
{
    return sizeof(struct perfmon_sbuf_block) + sbuf->size
           + PERFMON_SAMPLE_MAX_SIZE;
}

/* ---- buffers -------------------------------------------------------------- */

static size_t
perfmon_sbuf_struct_size(unsigned int nr_cpus)
{
    return sizeof(struct perfmon_sbuf)
           + nr_cpus * sizeof(struct perfmon_ring *);
}

void
perfmon_sbuf_destroy(struct perfmon_sbuf *sbuf)
{
    if (sbuf == NULL) {
        return;
    }

    for (unsigned int i = 0; i < sbuf->nr_cpus; i++) {
        kmem_free(sbuf->rings[i], perfmon_sbuf_block_size(sbuf));
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
        struct perfmon_sbuf_block *block;

        block = kmem_alloc(perfmon_sbuf_block_size(sbuf));

        if (block == NULL) {
            perfmon_sbuf_destroy(sbuf);
            return -ENOMEM;
        }

        perfmon_ring_init_spare(&block->ring, block->data, size,
                                PERFMON_SAMPLE_MAX_SIZE);
        sbuf->rings[i] = &block->ring;
        sbuf->nr_cpus = i + 1;
    }

    *sbufp = sbuf;
    return 0;
}

struct perfmon_ring *
perfmon_sbuf_ring(struct perfmon_sbuf *sbuf, unsigned int cpu)
{
    return (sbuf == NULL || cpu >= sbuf->nr_cpus) ? NULL : sbuf->rings[cpu];
}

uint64_t
perfmon_sbuf_lost(const struct perfmon_sbuf *sbuf, unsigned int cpu)
{
    if (sbuf == NULL || cpu >= sbuf->nr_cpus) {
        return 0;
    }

    return perfmon_ring_lost(sbuf->rings[cpu]);
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
 * The TSC in nanoseconds: tsc_cycles_to_ns() is inline, takes no lock and
 * multiplies by factors set at calibration, a fixed number of
 * instructions.
 */
static inline __attribute__((always_inline)) uint64_t
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

    return sampling->sbuf->rings[cpu];
}

/*
 * The unwinder's view of the current thread's stack (false: it has none),
 * with the kernel's text and function map.
 */
static bool
perfmon_sample_unwind_env(struct unwind_env *env, struct unwind_stack *stack)
{
    *env = (struct unwind_env){ .stacks = stack, .nr_stacks = 1 };

    if (!thread_stack_bounds(thread_self(), &stack->lo, &stack->hi)) {
        return false;
    }

    symtab_unwind_env(env);
    return true;
}

/*
 * The call chain of the interrupted code, stored at ips raw: its ip, then
 * the frames found on the current thread's stack
 * (unwind_interrupted_raw()), at most max of them, checked when the
 * record is read (perfmon_sbuf_read()).  Returns how many.
 */
static unsigned int
perfmon_sample_callchain(const struct trap_frame *frame, uint64_t *ips,
                         unsigned int max)
{
    struct unwind_stack stack;
    struct unwind_env env;

    if (!perfmon_sample_unwind_env(&env, &stack)) {
        ips[0] = frame->rip;
        return 1;
    }

    return unwind_interrupted_raw(&env, frame->rip, frame->rsp, frame->rbp,
                                  ips, max);
}

/*
 * The raw call chain stored at ips with room for max entries filled them:
 * it fits only if its checked chain has no more (walked again aside, and
 * checked; a ring nearly full), since the read keeps only that.
 */
static bool __attribute__((noinline))
perfmon_sample_callchain_fits(const struct trap_frame *frame,
                              unsigned int max)
{
    uint64_t ips[PERFMON_MAX_CALLCHAIN];
    struct unwind_stack stack;
    struct unwind_env env;

    if (!perfmon_sample_unwind_env(&env, &stack)) {
        return max >= 1;
    }

    return unwind_interrupted(&env, frame->rip, frame->rsp, frame->rbp, ips,
                              PERFMON_MAX_CALLCHAIN) <= max;
}

/*
 * Words of a sample record up to its call chain, by its fields IP to
 * PERIOD: the header, the fields and id word, one word each.
 */
#define PERFMON_SAMPLE_NR_WORDS(f)                                          \
    (2 + ((f) & 1) + (((f) >> 1) & 1) + (((f) >> 2) & 1)                   \
     + (((f) >> 3) & 1) + (((f) >> 4) & 1))
#define PERFMON_SAMPLE_NR_WORDS4(f)                                         \
    PERFMON_SAMPLE_NR_WORDS(f), PERFMON_SAMPLE_NR_WORDS((f) + 1),           \
    PERFMON_SAMPLE_NR_WORDS((f) + 2), PERFMON_SAMPLE_NR_WORDS((f) + 3)
#define PERFMON_SAMPLE_FIXED_MASK   0x1f

static const uint8_t
perfmon_sample_nr_words[PERFMON_SAMPLE_FIXED_MASK + 1] = {
    PERFMON_SAMPLE_NR_WORDS4(0), PERFMON_SAMPLE_NR_WORDS4(4),
    PERFMON_SAMPLE_NR_WORDS4(8), PERFMON_SAMPLE_NR_WORDS4(12),
    PERFMON_SAMPLE_NR_WORDS4(16), PERFMON_SAMPLE_NR_WORDS4(20),
    PERFMON_SAMPLE_NR_WORDS4(24), PERFMON_SAMPLE_NR_WORDS4(28),
};

/*
 * The word after a sample's header: u32 its fields, then u32 the
 * sampling id, as the two lie in struct perfmon_sampling: one load.
 */
static inline __attribute__((always_inline)) uint64_t
perfmon_sample_fields_word(const struct perfmon_sampling *sampling)
{
    uint64_t word;

    _Static_assert(offsetof(struct perfmon_sampling, id)
                   == offsetof(struct perfmon_sampling, fields) + 4
                   && sizeof(sampling->fields) == 4
                   && sizeof(sampling->id) == 4,
                   "the id follows the fields, u32 each");
    __builtin_memcpy(&word,
                     (const char *)sampling
                     + offsetof(struct perfmon_sampling, fields),
                     sizeof(word));
    return word;
}

/* The TID word: u32 0, then u32 the thread id (0 for no thread). */
static inline __attribute__((always_inline)) uint64_t
perfmon_sample_tid_word(void)
{
    return (uint64_t)thread_self_id() << 32;
}

/* The fields IP to PERIOD, stored from w on; returns the next word. */
static uint64_t *
perfmon_sample_put_fixed(uint64_t *w, unsigned int fields,
                         const struct trap_frame *frame, uint64_t period)
{
    if (fields & PERFMON_SF_IP) {
        *w++ = frame->rip;
    }

    if (fields & PERFMON_SF_TID) {
        *w++ = perfmon_sample_tid_word();
    }

    if (fields & PERFMON_SF_TIME) {
        *w++ = perfmon_sample_now_ns();
    }

    if (fields & PERFMON_SF_CPU) {
        *w++ = cpu_id();                /* u32 cpu, then u32 0 */
    }

    if (fields & PERFMON_SF_PERIOD) {
        *w++ = period;
    }

    return w;
}

/* nr words from src to dst, as words (gcc would make a byte copy of it). */
static uint64_t * __keep_loops
perfmon_sample_put_words(uint64_t *dst, const uint64_t *src, size_t nr)
{
    for (size_t i = 0; i < nr; i++) {
        dst[i] = src[i];
    }

    return dst + nr;
}

/* Inside the overflow interrupt's section: its reads are the section's. */
PERFMON_REGION_DEFINE_FLAGS(sample, "sample", true);

bool
perfmon_sample_reads_valid(const struct perfmon_sampling *sampling)
{
    if (sampling->reads == NULL || sampling->nr_reads == 0
        || sampling->nr_reads > PERFMON_MAX_READS) {
        return false;
    }

    for (unsigned int i = 0; i < sampling->nr_reads; i++) {
        if (sampling->reads[i] == NULL) {
            return false;
        }
    }

    return true;
}

/* PERFMON_SF_READ: the values of the group, from w on; the next word. */
static uint64_t * __attribute__((noinline))
perfmon_sample_put_reads(uint64_t *w, const struct perfmon_sampling *sampling)
{
    *w++ = sampling->nr_reads;

    for (unsigned int i = 0; i < sampling->nr_reads; i++) {
        *w++ = perfmon_intr_read_value(sampling->reads[i]);
    }

    return w;
}

uint32_t
perfmon_sample_size(const struct perfmon_sampling *sampling)
{
    unsigned int fields = sampling->fields;
    uint32_t size;

    size = perfmon_sample_nr_words[fields & PERFMON_SAMPLE_FIXED_MASK]
           * sizeof(uint64_t);
    size += (fields & PERFMON_SF_CALLCHAIN) ? sizeof(uint64_t) : 0;
    size += (fields & PERFMON_SF_BRANCH) ? sizeof(uint64_t) : 0;

    if (fields & PERFMON_SF_READ) {
        size += (1 + sampling->nr_reads) * sizeof(uint64_t);
    }

    return size;
}

/*
 * Any layout: the record's size is learnt as it is written (a call chain,
 * a branch stack), so it is stored in place before its room is claimed
 * (perfmon_ring_open()).
 */
static bool
perfmon_sample_write_any(const struct perfmon_sampling *sampling,
                         uint32_t size, const struct trap_frame *frame,
                         uint64_t period)
{
    struct perfmon_ring *ring = perfmon_sample_ring(sampling);
    unsigned int fields = sampling->fields, nr_branches = 0, max_ips;
    const struct perfmon_branch *branches = NULL;
    struct perfmon_ring_txn txn;
    uint64_t fixed = size, room, *rec, *w;

    PERFMON_REGION_SCOPE(sample);

    if (ring == NULL) {
        return false;
    }

    if (fields & PERFMON_SF_BRANCH) {
        branches = perfmon_intr_branches(&nr_branches);
        fixed += nr_branches * sizeof(*branches);
    }

    do {
        rec = perfmon_ring_open(ring, &txn);
        room = txn.end - txn.pos;

        if (fixed > room) {
            perfmon_ring_cancel(ring);
            return false;
        }

        rec[1] = perfmon_sample_fields_word(sampling);
        w = perfmon_sample_put_fixed(&rec[2], fields, frame, period);

        if (fields & PERFMON_SF_READ) {
            w = perfmon_sample_put_reads(w, sampling);
        }

        if (fields & PERFMON_SF_CALLCHAIN) {
            max_ips = (unsigned int)MIN((room - fixed) / sizeof(uint64_t),
                                        PERFMON_MAX_CALLCHAIN);
            w[0] = (max_ips == 0) ? 0
                                  : perfmon_sample_callchain(frame, &w[1],
                                                             max_ips);

            if (w[0] == max_ips && max_ips < PERFMON_MAX_CALLCHAIN
                && (max_ips == 0
                    || !perfmon_sample_callchain_fits(frame, max_ips))) {
                perfmon_ring_cancel(ring);
                return false;
            }

            w += 1 + w[0];
        }

        if (fields & PERFMON_SF_BRANCH) {
            *w++ = nr_branches;
            w = perfmon_sample_put_words(w, (const uint64_t *)branches,
                                         nr_branches * sizeof(*branches)
                                         / sizeof(uint64_t));
        }

        rec[0] = perfmon_ring_hdr_word(PERFMON_REC_SAMPLE,
                                       (uint64_t)(w - rec) * sizeof(*w), 0);
    } while (!perfmon_ring_close(ring, &txn, (uint64_t)(w - rec) * sizeof(*w)));

    return true;
}

/*
 * The index of field among the words of a record of fields (a constant
 * when both are).
 */
#define PERFMON_SAMPLE_WORD(fields, field)                                  \
    (2 + __builtin_popcount((fields) & ((field) - 1)))

/*
 * A fixed layout's record once the first try of its claim failed (no
 * room, or a producer interrupted the claim), the ring entered: out of
 * it, then the record written by the writer of any layout, which makes
 * the same record (or counts it lost), its time still taken where it is
 * claimed.  Out of line, so that the fixed writer keeps nothing across a
 * call.
 */
static bool __attribute__((noinline))
perfmon_sample_write_again(const struct perfmon_sampling *sampling,
                           struct perfmon_ring *ring,
                           const struct trap_frame *frame, uint64_t period)
{
    perfmon_ring_leave(ring);
    return perfmon_sample_write_any(sampling, perfmon_sample_size(sampling),
                                    frame, period);
}

/*
 * A layout of the fields IP to PERIOD alone: a record of a size known at
 * build time, its room claimed first (perfmon_ring_reserve_once()), then
 * its words stored: with fields a constant, only those of the layout,
 * tested for nothing, each at its place, with no call among them (the
 * thread id and the time are inline).  The time is taken after the
 * claim, so that the records of a ring are in the order of their times
 * even when one producer interrupts another.
 */
static inline __attribute__((always_inline)) bool
perfmon_sample_write_fixed(const struct perfmon_sampling *sampling,
                           const struct trap_frame *frame, uint64_t period,
                           unsigned int fields)
{
    const uint64_t size = PERFMON_SAMPLE_NR_WORDS(fields) * sizeof(uint64_t);
    struct perfmon_sbuf *sbuf = sampling->sbuf;
    uint64_t cpu = cpu_id();            /* widened once: index and word */
    struct perfmon_ring *ring;
    uint64_t off, *w, word1;

    /* Loaded first (it never changes here): a register move fewer. */
    word1 = perfmon_sample_fields_word(sampling);

    if (unlikely(cpu >= sbuf->nr_cpus)) {
        return false;
    }

    ring = sbuf->rings[cpu];
    perfmon_ring_enter(ring);

    if (unlikely(!perfmon_ring_reserve_once(ring, size, &off))) {
        return perfmon_sample_write_again(sampling, ring, frame, period);
    }

    w = (uint64_t *)&ring->data[off];
    w[0] = perfmon_ring_hdr_word(PERFMON_REC_SAMPLE, size, 0);
    w[1] = word1;

    if (fields & PERFMON_SF_IP) {
        w[PERFMON_SAMPLE_WORD(fields, PERFMON_SF_IP)] = frame->rip;
    }

    if (fields & PERFMON_SF_TID) {
        w[PERFMON_SAMPLE_WORD(fields, PERFMON_SF_TID)]
            = perfmon_sample_tid_word();
    }

    if (fields & PERFMON_SF_CPU) {
        /* u32 cpu, then u32 0 */
        w[PERFMON_SAMPLE_WORD(fields, PERFMON_SF_CPU)] = cpu;
    }

    if (fields & PERFMON_SF_PERIOD) {
        w[PERFMON_SAMPLE_WORD(fields, PERFMON_SF_PERIOD)] = period;
    }

    /*
     * The time last, the other words stored: the conversion's registers
     * are then free, and none is saved for it.
     */
    barrier();

    if (fields & PERFMON_SF_TIME) {
        w[PERFMON_SAMPLE_WORD(fields, PERFMON_SF_TIME)]
            = perfmon_sample_now_ns();
    }

    perfmon_ring_publish(ring);
    return true;
}

/*
 * Whether the region "sample" is armed: then a fixed layout's writer is
 * measured out of line (perfmon_sample_write_measured()), so that its
 * own path makes no call and keeps nothing in callee-saved registers.
 */
static inline __attribute__((always_inline)) bool
perfmon_sample_measured(void)
{
#ifdef PERFMON_REGION_TEST
    PERFMON_REGION_TEST(&perfmon_region_sample, measured);
    return false;
measured:
    return true;
#else
    return false;                       /* host builds: no markers */
#endif
}

static bool __attribute__((noinline))
perfmon_sample_write_measured(perfmon_sample_write_fn_t write,
                              const struct perfmon_sampling *sampling,
                              uint32_t size, const struct trap_frame *frame,
                              uint64_t period)
{
    PERFMON_REGION_SCOPE(sample);

    return write(sampling, size, frame, period);
}

#define PERFMON_SAMPLE_WRITER(f)                                            \
    static inline __attribute__((always_inline)) bool                       \
    perfmon_sample_write_bare_##f(const struct perfmon_sampling *sampling,  \
                                  uint32_t size,                            \
                                  const struct trap_frame *frame,           \
                                  uint64_t period)                          \
    {                                                                       \
        (void)size;                                                         \
        return perfmon_sample_write_fixed(sampling, frame, period, f);     \
    }                                                                       \
                                                                            \
    static bool                                                             \
    perfmon_sample_write_##f(const struct perfmon_sampling *sampling,       \
                             uint32_t size, const struct trap_frame *frame, \
                             uint64_t period)                               \
    {                                                                       \
        if (unlikely(perfmon_sample_measured())) {                          \
            return perfmon_sample_write_measured(                           \
                perfmon_sample_write_bare_##f, sampling, size, frame,       \
                period);                                                    \
        }                                                                   \
                                                                            \
        return perfmon_sample_write_bare_##f(sampling, size, frame,         \
                                             period);                       \
    }
#define PERFMON_SAMPLE_WRITER4(a, b, c, d)                                  \
    PERFMON_SAMPLE_WRITER(a) PERFMON_SAMPLE_WRITER(b)                       \
    PERFMON_SAMPLE_WRITER(c) PERFMON_SAMPLE_WRITER(d)

PERFMON_SAMPLE_WRITER4(0, 1, 2, 3)
PERFMON_SAMPLE_WRITER4(4, 5, 6, 7)
PERFMON_SAMPLE_WRITER4(8, 9, 10, 11)
PERFMON_SAMPLE_WRITER4(12, 13, 14, 15)
PERFMON_SAMPLE_WRITER4(16, 17, 18, 19)
PERFMON_SAMPLE_WRITER4(20, 21, 22, 23)
PERFMON_SAMPLE_WRITER4(24, 25, 26, 27)
PERFMON_SAMPLE_WRITER4(28, 29, 30, 31)

_Static_assert(PERFMON_SAMPLE_FIXED_MASK
               == (PERFMON_SF_IP | PERFMON_SF_TID | PERFMON_SF_TIME
                   | PERFMON_SF_CPU | PERFMON_SF_PERIOD)
               && PERFMON_SAMPLE_LAYOUT_ANY == PERFMON_SAMPLE_FIXED_MASK + 1,
               "a fixed layout is a set of the fields IP to PERIOD");

/* The writer of each layout: the fixed ones by their fields, then any. */
const perfmon_sample_write_fn_t
perfmon_sample_writers[PERFMON_SAMPLE_LAYOUT_ANY + 1] = {
#define W4(a, b, c, d)                                                      \
    perfmon_sample_write_##a, perfmon_sample_write_##b,                     \
    perfmon_sample_write_##c, perfmon_sample_write_##d
    W4(0, 1, 2, 3), W4(4, 5, 6, 7), W4(8, 9, 10, 11), W4(12, 13, 14, 15),
    W4(16, 17, 18, 19), W4(20, 21, 22, 23), W4(24, 25, 26, 27),
    W4(28, 29, 30, 31),
#undef W4
    [PERFMON_SAMPLE_LAYOUT_ANY] = perfmon_sample_write_any,
};

unsigned int
perfmon_sample_layout(const struct perfmon_sampling *sampling)
{
    unsigned int fields = sampling->fields;

    return ((fields & ~PERFMON_SAMPLE_FIXED_MASK) != 0)
           ? PERFMON_SAMPLE_LAYOUT_ANY : fields;
}

bool
perfmon_sample_write(const struct perfmon_sampling *sampling, uint32_t size,
                     const struct trap_frame *frame, uint64_t period)
{
    assert(!cpu_intr_enabled());
    return perfmon_sample_writers[perfmon_sample_layout(sampling)](
        sampling, size, frame, period);
}

void
perfmon_sample_throttled(const struct perfmon_sampling *sampling,
                         uint64_t period)
{
    struct perfmon_ring *ring = perfmon_sample_ring(sampling);
    const uint64_t size = 3 * sizeof(uint64_t);
    struct perfmon_ring_txn txn;
    uint64_t *rec;

    if (ring == NULL) {
        return;
    }

    /* The payload: u64 the time in ns, u64 the new period. */
    do {
        rec = perfmon_ring_open(ring, &txn);

        if (txn.end - txn.pos < size) {
            perfmon_ring_cancel(ring);
            return;
        }

        rec[0] = perfmon_ring_hdr_word(PERFMON_REC_THROTTLE, size,
                                       sampling->id);
        rec[1] = perfmon_sample_now_ns();
        rec[2] = period;
    } while (!perfmon_ring_close(ring, &txn, size));
}

/* ---- reading samples ------------------------------------------------------- */

/*
 * What the read keeps of a sample record's raw call chain: the chain's
 * count is word chain of the record, nr of its nr_raw entries are real
 * callers, and the record, raw_size bytes in the ring, is size bytes
 * read.
 */
struct perfmon_sample_cut {
    size_t chain;
    unsigned int nr_raw;
    unsigned int nr;
    size_t raw_size;
    size_t size;
};

/*
 * The cut of the record at rec, of size bytes, in place in a ring: false
 * when it is no sample with a call chain, or none laid out as the writer
 * lays them out, which is read as it is.  Thread context: the check reads
 * the text and the function map (unwind_interrupted_check()).
 */
static bool
perfmon_sample_cut_find(const uint64_t *rec, size_t size,
                        struct perfmon_sample_cut *cut)
{
    const struct perfmon_rec_hdr *hdr = (const void *)rec;
    size_t nr_words = size / sizeof(uint64_t), w;
    struct unwind_env env = { .nr_stacks = 0 };
    unsigned int fields;

    if (nr_words < 2 || hdr->type != PERFMON_REC_SAMPLE) {
        return false;
    }

    fields = (uint32_t)rec[1];

    if (!(fields & PERFMON_SF_CALLCHAIN)) {
        return false;
    }

    w = perfmon_sample_nr_words[fields & PERFMON_SAMPLE_FIXED_MASK];

    if (fields & PERFMON_SF_READ) {
        if (w >= nr_words || rec[w] > PERFMON_MAX_READS) {
            return false;
        }

        w += 1 + rec[w];
    }

    if (w >= nr_words || rec[w] > PERFMON_MAX_CALLCHAIN
        || rec[w] > nr_words - w - 1) {
        return false;
    }

    symtab_unwind_env(&env);
    cut->chain = w;
    cut->nr_raw = (unsigned int)rec[w];
    cut->nr = unwind_interrupted_check(&env, &rec[w + 1], cut->nr_raw);
    cut->raw_size = size;
    cut->size = size - (cut->nr_raw - cut->nr) * sizeof(uint64_t);
    return true;
}

/*
 * The record at rec, as cut describes it, read into dst: its chain cut and
 * made of call addresses (unwind_interrupted_ip()), what follows it moved
 * down, its size in its header.  dst need not be aligned: each word is
 * stored by a fixed-size copy, which gcc makes one move.
 */
static void
perfmon_sample_cut_copy(void *dst, const uint64_t *rec,
                        const struct perfmon_sample_cut *cut)
{
    size_t head = (cut->chain + 1) * sizeof(uint64_t);
    size_t rest = head + cut->nr_raw * sizeof(uint64_t);
    const uint64_t *ips = &rec[cut->chain + 1];
    char *d = dst;
    struct perfmon_rec_hdr hdr;
    uint64_t word;

    __builtin_memcpy(&hdr, rec, sizeof(hdr));
    hdr.size = (uint16_t)cut->size;
    __builtin_memcpy(d, &hdr, sizeof(hdr));
    memcpy(d + sizeof(hdr), (const char *)rec + sizeof(hdr),
           head - sizeof(hdr) - sizeof(word));
    word = cut->nr;
    __builtin_memcpy(d + head - sizeof(word), &word, sizeof(word));
    d += head;

    for (unsigned int k = 0; k < cut->nr; k++) {
        word = unwind_interrupted_ip(ips, k);
        __builtin_memcpy(d, &word, sizeof(word));
        d += sizeof(word);
    }

    memcpy(d, (const char *)rec + rest, cut->raw_size - rest);
}

/*
 * The oldest record of cpu's ring in sbuf, in place: its ring in *ringp,
 * NULL with a size of 0 in *sizep when there is none.  Its size as read
 * in *sizep, and true, when it is a sample whose chain the read cuts
 * (*cut); false otherwise (*sizep its size in the ring; the record NULL
 * when it wraps, which no sample does: the spare holds the longest).
 * A record none saw is left alone: none published meanwhile is read
 * unchecked.
 */
static bool
perfmon_sbuf_front(struct perfmon_sbuf *sbuf, unsigned int cpu,
                   struct perfmon_ring **ringp, const uint64_t **recp,
                   size_t *sizep, struct perfmon_sample_cut *cut)
{
    *ringp = NULL;
    *recp = NULL;
    *sizep = 0;

    if (sbuf == NULL || cpu >= sbuf->nr_cpus) {
        return false;
    }

    *ringp = sbuf->rings[cpu];
    *recp = perfmon_ring_front(*ringp, sizep);

    if (*recp == NULL || !perfmon_sample_cut_find(*recp, *sizep, cut)) {
        return false;
    }

    *sizep = cut->size;
    return true;
}

size_t
perfmon_sbuf_read(struct perfmon_sbuf *sbuf, unsigned int cpu, void *dst,
                  size_t cap)
{
    struct perfmon_sample_cut cut;
    struct perfmon_ring *ring;
    const uint64_t *rec;
    size_t size;

    if (!perfmon_sbuf_front(sbuf, cpu, &ring, &rec, &size, &cut)) {
        return (size == 0) ? 0 : perfmon_ring_pop(ring, dst, cap);
    }

    if (size > cap) {
        return size;
    }

    perfmon_sample_cut_copy(dst, rec, &cut);
    perfmon_ring_drop(ring);
    return size;
}

size_t
perfmon_sbuf_drop(struct perfmon_sbuf *sbuf, unsigned int cpu)
{
    struct perfmon_sample_cut cut;
    struct perfmon_ring *ring;
    const uint64_t *rec;
    size_t size;

    perfmon_sbuf_front(sbuf, cpu, &ring, &rec, &size, &cut);

    if (size != 0) {
        perfmon_ring_drop(ring);
    }

    return size;
}

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

    if (sample->fields & PERFMON_SF_READ) {
        if (!perfmon_sample_take_array(&c, sizeof(uint64_t),
                                       PERFMON_MAX_READS, &sample->nr_reads,
                                       &array)) {
            return -EINVAL;
        }

        sample->reads = array;
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
