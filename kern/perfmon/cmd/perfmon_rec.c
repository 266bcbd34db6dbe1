/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Recordings: a sample buffer, the thread that drains it, and the store
 * the records go to.  See kern/perfmon/cmd/perfmon_rec.h.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_rec.h"
#include "kern/perfmon_ring.h"
#include "kern/string.h"
#include "kern/thread.h"

/* Store chunks, larger than any record. */
#define PERFMON_REC_CHUNK_SIZE  (128 * 1024)

/* How often the drain thread empties the rings. */
#define PERFMON_REC_DRAIN_MS    10

/* Threads whose names a recording keeps. */
#define PERFMON_REC_MAX_COMMS   256

struct perfmon_rec_chunk {
    struct perfmon_rec_chunk *next;
    size_t used;                        /* bytes of data */
    uint64_t data[(PERFMON_REC_CHUNK_SIZE - 16) / sizeof(uint64_t)];
};

struct perfmon_rec_comm {
    unsigned int tid;
    char name[PERFMON_REC_NAME_SIZE];
};

/*
 * A recording.  The store (chunks, counts, comms, lost_seen) is written by
 * its one consumer at a time: the drain thread while it runs, the owner
 * otherwise; stop is the owner's word to the drain thread.
 */
struct perfmon_rec {
    struct perfmon_sbuf *sbuf;
    struct perfmon_rec_chunk *head;
    struct perfmon_rec_chunk *tail;
    size_t store_max;
    struct perfmon_rec_info info;
    uint64_t *lost_seen;                /* per CPU: ring losses recorded */
    unsigned int nr_cpus;
    struct perfmon_rec_comm comms[PERFMON_REC_MAX_COMMS];
    unsigned int nr_comms;
    struct thread *drainer;
    bool stop;                          /* atomic */
    perfmon_rec_sink_fn_t sink;         /* may be NULL */
    void *sink_arg;
};

static struct perfmon_rec *perfmon_rec_kept;

static uint64_t
perfmon_rec_now_ns(void)
{
    return tsc_cycles_to_ns(cpu_rdtsc());
}

/* ---- the store -------------------------------------------------------------- */

/* Free bytes at the tail of the store. */
static size_t
perfmon_rec_room(const struct perfmon_rec *rec)
{
    return (rec->tail == NULL) ? 0 : sizeof(rec->tail->data) - rec->tail->used;
}

static void *
perfmon_rec_tail(struct perfmon_rec *rec)
{
    return (char *)rec->tail->data + rec->tail->used;
}

/* A new chunk at the tail; false when the store may not grow. */
static bool
perfmon_rec_grow(struct perfmon_rec *rec)
{
    struct perfmon_rec_chunk *chunk;

    if (rec->info.store_bytes + sizeof(*chunk) > rec->store_max) {
        return false;
    }

    chunk = kmem_alloc(sizeof(*chunk));

    if (chunk == NULL) {
        return false;
    }

    chunk->next = NULL;
    chunk->used = 0;

    if (rec->tail != NULL) {
        rec->tail->next = chunk;
    } else {
        rec->head = chunk;
    }

    rec->tail = chunk;
    rec->info.store_bytes += sizeof(*chunk);
    return true;
}

/* Room for size more bytes at the tail, or NULL when the store is full. */
static void *
perfmon_rec_reserve(struct perfmon_rec *rec, size_t size)
{
    if (perfmon_rec_room(rec) < size && !perfmon_rec_grow(rec)) {
        return NULL;
    }

    return perfmon_rec_tail(rec);
}

static void
perfmon_rec_commit(struct perfmon_rec *rec, size_t size)
{
    rec->tail->used += size;
}

static void
perfmon_rec_show(const struct perfmon_rec *rec,
                 const struct perfmon_rec_hdr *hdr)
{
    if (rec->sink != NULL) {
        rec->sink(hdr, rec->sink_arg);
    }
}

/* Append a record the drain makes itself; false when the store is full. */
static bool
perfmon_rec_append(struct perfmon_rec *rec, unsigned int type, uint32_t misc,
                   const void *payload, size_t len)
{
    size_t size = P2ROUND(sizeof(struct perfmon_rec_hdr) + len,
                          PERFMON_RING_ALIGN);
    struct perfmon_rec_hdr *hdr = perfmon_rec_reserve(rec, size);

    if (hdr == NULL) {
        return false;
    }

    memset(hdr, 0, size);
    hdr->type = (uint16_t)type;
    hdr->size = (uint16_t)size;
    hdr->misc = misc;
    memcpy(hdr + 1, payload, len);
    perfmon_rec_commit(rec, size);
    perfmon_rec_show(rec, hdr);
    return true;
}

/* ---- draining ------------------------------------------------------------------ */

const char *
perfmon_rec_comm(const struct perfmon_rec *rec, unsigned int tid)
{
    for (unsigned int i = 0; i < rec->nr_comms; i++) {
        if (rec->comms[i].tid == tid) {
            return rec->comms[i].name;
        }
    }

    return NULL;
}

/* A thread seen for the first time: keep its name, and say it. */
static void
perfmon_rec_see_thread(struct perfmon_rec *rec, unsigned int tid)
{
    struct perfmon_rec_comm *comm;

    if (perfmon_rec_comm(rec, tid) != NULL
        || rec->nr_comms == PERFMON_REC_MAX_COMMS) {
        return;
    }

    comm = &rec->comms[rec->nr_comms];
    comm->tid = tid;

    /* Gone already: perf's way of naming a thread without a name. */
    if (thread_name_of(tid, comm->name, sizeof(comm->name)) != 0) {
        comm->name[0] = '\0';
    }

    if (perfmon_rec_append(rec, PERFMON_REC_COMM, tid, comm->name,
                           sizeof(comm->name))) {
        rec->nr_comms++;
    }
}

/* What a record just drained says to the store's bookkeeping. */
static void
perfmon_rec_account(struct perfmon_rec *rec, const struct perfmon_rec_hdr *hdr)
{
    struct perfmon_sample sample;

    if (hdr->type == PERFMON_REC_THROTTLE) {
        rec->info.nr_throttles++;
    } else if (hdr->type == PERFMON_REC_SAMPLE) {
        rec->info.nr_samples++;

        if (perfmon_sample_decode(hdr, hdr->size, &sample) == 0
            && (sample.fields & PERFMON_SF_TID)) {
            perfmon_rec_see_thread(rec, sample.tid);
        }
    }
}

static void
perfmon_rec_drain_cpu(struct perfmon_rec *rec, unsigned int cpu)
{
    uint64_t lost;

    for (;;) {
        size_t room = perfmon_rec_room(rec), size;
        void *dst = (room != 0) ? perfmon_rec_tail(rec) : NULL;

        size = perfmon_sbuf_read(rec->sbuf, cpu, dst, room);

        if (size == 0) {
            break;
        }

        if (size <= room) {
            perfmon_rec_commit(rec, size);
            perfmon_rec_account(rec, dst);
            perfmon_rec_show(rec, dst);
        } else if (!perfmon_rec_grow(rec)) {
            /* The store is full: what the ring holds is lost. */
            perfmon_sbuf_drop(rec->sbuf, cpu);
            rec->info.nr_lost++;
        }
    }

    lost = perfmon_sbuf_lost(rec->sbuf, cpu);

    if (lost != rec->lost_seen[cpu]) {
        uint64_t delta = lost - rec->lost_seen[cpu];

        rec->lost_seen[cpu] = lost;
        rec->info.nr_lost += delta;
        perfmon_rec_append(rec, PERFMON_REC_LOST, cpu, &delta, sizeof(delta));
    }
}

void
perfmon_rec_drain(struct perfmon_rec *rec)
{
    for (unsigned int cpu = 0; cpu < rec->nr_cpus; cpu++) {
        perfmon_rec_drain_cpu(rec, cpu);
    }
}

static void
perfmon_rec_drain_main(void *arg)
{
    struct perfmon_rec *rec = arg;

    while (!__atomic_load_n(&rec->stop, __ATOMIC_ACQUIRE)) {
        perfmon_rec_drain(rec);
        thread_msleep(PERFMON_REC_DRAIN_MS);
    }

    perfmon_rec_drain(rec);
}

/* ---- recordings --------------------------------------------------------------- */

int
perfmon_rec_create(struct perfmon_rec **recp, size_t ring_size,
                   size_t store_max, const char *event, const char *command)
{
    struct perfmon_rec *rec;
    int error;

    if (recp == NULL || store_max < PERFMON_REC_CHUNK_SIZE
        || store_max > PERFMON_REC_STORE_MAX) {
        return -EINVAL;
    }

    rec = kmem_zalloc(sizeof(*rec));

    if (rec == NULL) {
        return -ENOMEM;
    }

    error = perfmon_sbuf_create(&rec->sbuf, ring_size);

    if (error) {
        kmem_free(rec, sizeof(*rec));
        return error;
    }

    rec->nr_cpus = perfmon_sbuf_nr_cpus(rec->sbuf);
    rec->lost_seen = kmem_zalloc(rec->nr_cpus * sizeof(*rec->lost_seen));

    if (rec->lost_seen == NULL) {
        perfmon_sbuf_destroy(rec->sbuf);
        kmem_free(rec, sizeof(*rec));
        return -ENOMEM;
    }

    rec->store_max = store_max;
    strlcpy(rec->info.event, event, sizeof(rec->info.event));
    strlcpy(rec->info.command, command, sizeof(rec->info.command));
    rec->info.start_ns = perfmon_rec_now_ns();
    *recp = rec;
    return 0;
}

void
perfmon_rec_set_sink(struct perfmon_rec *rec, perfmon_rec_sink_fn_t fn,
                     void *arg)
{
    assert(rec->drainer == NULL);
    rec->sink = fn;
    rec->sink_arg = arg;
}

struct perfmon_sbuf *
perfmon_rec_sbuf(struct perfmon_rec *rec)
{
    return rec->sbuf;
}

int
perfmon_rec_start(struct perfmon_rec *rec)
{
    rec->info.start_ns = perfmon_rec_now_ns();
    __atomic_store_n(&rec->stop, false, __ATOMIC_RELAXED);
    return thread_create(&rec->drainer, "perfmon-drain",
                         perfmon_rec_drain_main, rec, THREAD_CPUMASK_ALL);
}

void
perfmon_rec_stop(struct perfmon_rec *rec)
{
    if (rec->drainer != NULL) {
        __atomic_store_n(&rec->stop, true, __ATOMIC_RELEASE);
        thread_join(rec->drainer);
        rec->drainer = NULL;
    }

    perfmon_rec_drain(rec);
    rec->info.end_ns = perfmon_rec_now_ns();
}

void
perfmon_rec_clear(struct perfmon_rec *rec)
{
    while (rec->head != NULL) {
        struct perfmon_rec_chunk *next = rec->head->next;

        kmem_free(rec->head, sizeof(*rec->head));
        rec->head = next;
    }

    rec->tail = NULL;
    rec->info.store_bytes = 0;
    rec->info.nr_samples = 0;
    rec->info.nr_lost = 0;
    rec->info.nr_throttles = 0;
    rec->nr_comms = 0;
}

void
perfmon_rec_get_info(const struct perfmon_rec *rec,
                     struct perfmon_rec_info *info)
{
    *info = rec->info;
}

void
perfmon_rec_foreach(const struct perfmon_rec *rec, perfmon_rec_fn_t fn,
                    void *arg)
{
    for (const struct perfmon_rec_chunk *c = rec->head; c != NULL;
         c = c->next) {
        for (size_t off = 0; off < c->used;) {
            const struct perfmon_rec_hdr *hdr = (const void *)((const char *)
                                                               c->data + off);

            assert(hdr->size >= sizeof(*hdr));

            if (!fn(hdr, arg)) {
                return;
            }

            off += hdr->size;
        }
    }
}

void
perfmon_rec_destroy(struct perfmon_rec *rec)
{
    if (rec == NULL) {
        return;
    }

    assert(rec->drainer == NULL);
    perfmon_rec_clear(rec);
    perfmon_sbuf_destroy(rec->sbuf);
    kmem_free(rec->lost_seen, rec->nr_cpus * sizeof(*rec->lost_seen));
    kmem_free(rec, sizeof(*rec));
}

void
perfmon_rec_keep(struct perfmon_rec *rec)
{
    struct perfmon_rec *old = perfmon_rec_kept;

    perfmon_rec_kept = rec;
    perfmon_rec_destroy(old);
}

const struct perfmon_rec *
perfmon_rec_last(void)
{
    return perfmon_rec_kept;
}
