/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Captures: a sample buffer, the thread that drains it, and the store
 * the records go to.  See kern/perfmon/cmd/perfmon_capture.h.
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
#include "kern/perfmon/cmd/perfmon_capture.h"
#include "kern/perfmon_ring.h"
#include "kern/perfmon_switchrec.h"
#include "kern/string.h"
#include "kern/thread.h"

/* Store chunks, larger than any record. */
#define PERFMON_CAPTURE_CHUNK_SIZE  (128 * 1024)

/* How often the drain thread empties the rings. */
#define PERFMON_CAPTURE_DRAIN_MS    10

/* Threads whose names a capture keeps. */
#define PERFMON_CAPTURE_MAX_COMMS   256

struct perfmon_capture_chunk {
    struct perfmon_capture_chunk *next;
    size_t used;                        /* bytes of data */
    uint64_t data[(PERFMON_CAPTURE_CHUNK_SIZE - 16) / sizeof(uint64_t)];
};

struct perfmon_capture_comm {
    unsigned int tid;
    char name[PERFMON_REC_NAME_SIZE];
};

/*
 * A capture.  The store (chunks, counts, comms, lost_seen) is written by
 * its one consumer at a time: the drain thread while it runs, the owner
 * otherwise; stop is the owner's word to the drain thread.
 */
struct perfmon_capture {
    struct perfmon_sbuf *sbuf;
    struct perfmon_capture_chunk *head;
    struct perfmon_capture_chunk *tail;
    size_t store_max;
    struct perfmon_capture_info info;
    uint64_t *lost_seen;                /* per CPU: ring losses recorded */
    unsigned int nr_cpus;
    struct perfmon_capture_comm comms[PERFMON_CAPTURE_MAX_COMMS];
    unsigned int nr_comms;
    struct thread *drainer;
    struct perfmon_capture_event events[PERFMON_CAPTURE_MAX_EVENTS];
    unsigned int nr_events;             /* set before the start */
    bool stop;                          /* atomic */
    perfmon_capture_sink_fn_t sink;         /* may be NULL */
    void *sink_arg;
};

static struct perfmon_capture *perfmon_capture_kept;

static uint64_t
perfmon_capture_now_ns(void)
{
    return tsc_cycles_to_ns(cpu_rdtsc());
}

/* ---- the store -------------------------------------------------------------- */

/* Free bytes at the tail of the store. */
static size_t
perfmon_capture_room(const struct perfmon_capture *cap)
{
    return (cap->tail == NULL) ? 0 : sizeof(cap->tail->data) - cap->tail->used;
}

static void *
perfmon_capture_tail(struct perfmon_capture *cap)
{
    return (char *)cap->tail->data + cap->tail->used;
}

/* A new chunk at the tail; false when the store may not grow. */
static bool
perfmon_capture_grow(struct perfmon_capture *cap)
{
    struct perfmon_capture_chunk *chunk;

    if (cap->info.store_bytes + sizeof(*chunk) > cap->store_max) {
        return false;
    }

    chunk = kmem_alloc(sizeof(*chunk));

    if (chunk == NULL) {
        return false;
    }

    chunk->next = NULL;
    chunk->used = 0;

    if (cap->tail != NULL) {
        cap->tail->next = chunk;
    } else {
        cap->head = chunk;
    }

    cap->tail = chunk;
    cap->info.store_bytes += sizeof(*chunk);
    return true;
}

/* Room for size more bytes at the tail, or NULL when the store is full. */
static void *
perfmon_capture_reserve(struct perfmon_capture *cap, size_t size)
{
    if (perfmon_capture_room(cap) < size && !perfmon_capture_grow(cap)) {
        return NULL;
    }

    return perfmon_capture_tail(cap);
}

static void
perfmon_capture_commit(struct perfmon_capture *cap, size_t size)
{
    cap->tail->used += size;
}

static void
perfmon_capture_show(const struct perfmon_capture *cap,
                 const struct perfmon_rec_hdr *hdr)
{
    if (cap->sink != NULL) {
        cap->sink(hdr, cap->sink_arg);
    }
}

/* Append a record the drain makes itself; false when the store is full. */
static bool
perfmon_capture_append(struct perfmon_capture *cap, unsigned int type, uint32_t misc,
                   const void *payload, size_t len)
{
    size_t size = P2ROUND(sizeof(struct perfmon_rec_hdr) + len,
                          PERFMON_RING_ALIGN);
    struct perfmon_rec_hdr *hdr = perfmon_capture_reserve(cap, size);

    if (hdr == NULL) {
        return false;
    }

    memset(hdr, 0, size);
    hdr->type = (uint16_t)type;
    hdr->size = (uint16_t)size;
    hdr->misc = misc;
    memcpy(hdr + 1, payload, len);
    perfmon_capture_commit(cap, size);
    perfmon_capture_show(cap, hdr);
    return true;
}

/* ---- draining ------------------------------------------------------------------ */

const char *
perfmon_capture_comm(const struct perfmon_capture *cap, unsigned int tid)
{
    for (unsigned int i = 0; i < cap->nr_comms; i++) {
        if (cap->comms[i].tid == tid) {
            return cap->comms[i].name;
        }
    }

    return NULL;
}

/* A thread seen for the first time: keep its name, and say it. */
static void
perfmon_capture_see_thread(struct perfmon_capture *cap, unsigned int tid)
{
    struct perfmon_capture_comm *comm;

    if (perfmon_capture_comm(cap, tid) != NULL
        || cap->nr_comms == PERFMON_CAPTURE_MAX_COMMS) {
        return;
    }

    comm = &cap->comms[cap->nr_comms];
    comm->tid = tid;

    /* Gone already: perf's way of naming a thread without a name. */
    if (thread_name_of(tid, comm->name, sizeof(comm->name)) != 0) {
        comm->name[0] = '\0';
    }

    if (perfmon_capture_append(cap, PERFMON_REC_COMM, tid, comm->name,
                           sizeof(comm->name))) {
        cap->nr_comms++;
    }
}

void
perfmon_capture_name_thread(struct perfmon_capture *cap, unsigned int tid)
{
    assert(cap->drainer == NULL);
    perfmon_capture_see_thread(cap, tid);
}

/*
 * A name the core wrote as the thread was created: the record is in the
 * store already.  It names a thread first seen gone too (no name then).
 */
static void
perfmon_capture_take_name(struct perfmon_capture *cap,
                          const struct perfmon_rec_hdr *hdr)
{
    struct perfmon_capture_comm *comm = NULL;

    if (hdr->size < sizeof(*hdr) + PERFMON_REC_NAME_SIZE) {
        return;
    }

    for (unsigned int i = 0; i < cap->nr_comms; i++) {
        if (cap->comms[i].tid == hdr->misc) {
            comm = &cap->comms[i];
            break;
        }
    }

    if (comm == NULL) {
        if (cap->nr_comms == PERFMON_CAPTURE_MAX_COMMS) {
            return;
        }

        comm = &cap->comms[cap->nr_comms++];
        comm->tid = hdr->misc;
    } else if (comm->name[0] != '\0') {
        return;
    }

    memcpy(comm->name, hdr + 1, sizeof(comm->name));
    comm->name[sizeof(comm->name) - 1] = '\0';
}

/* Both threads of a switch record are named, as perf shows them. */
static void
perfmon_switch_see_threads(struct perfmon_capture *cap,
                           const struct perfmon_rec_hdr *hdr)
{
    struct perfmon_switch sw;

    if (perfmon_switch_decode(hdr, &sw) == 0) {
        perfmon_capture_see_thread(cap, sw.tid);
        perfmon_capture_see_thread(cap, sw.other);
    }
}

/* What a record just drained says to the store's bookkeeping. */
static void
perfmon_capture_account(struct perfmon_capture *cap, const struct perfmon_rec_hdr *hdr)
{
    struct perfmon_sample sample;

    if (hdr->type == PERFMON_REC_THROTTLE) {
        cap->info.nr_throttles++;
    } else if (hdr->type == PERFMON_REC_SWITCH) {
        cap->info.nr_switches++;
        perfmon_switch_see_threads(cap, hdr);
    } else if (hdr->type == PERFMON_REC_COMM) {
        perfmon_capture_take_name(cap, hdr);
    } else if (hdr->type == PERFMON_REC_SAMPLE) {
        cap->info.nr_samples++;

        if (perfmon_sample_decode(hdr, hdr->size, &sample) == 0
            && (sample.fields & PERFMON_SF_TID)) {
            perfmon_capture_see_thread(cap, sample.tid);
        }
    }
}

static void
perfmon_capture_drain_cpu(struct perfmon_capture *cap, unsigned int cpu)
{
    uint64_t lost;

    for (;;) {
        size_t room = perfmon_capture_room(cap), size;
        void *dst = (room != 0) ? perfmon_capture_tail(cap) : NULL;

        size = perfmon_sbuf_read(cap->sbuf, cpu, dst, room);

        if (size == 0) {
            break;
        }

        if (size <= room) {
            perfmon_capture_commit(cap, size);
            perfmon_capture_account(cap, dst);
            perfmon_capture_show(cap, dst);
        } else if (!perfmon_capture_grow(cap)) {
            /* The store is full: what the ring holds is lost. */
            perfmon_sbuf_drop(cap->sbuf, cpu);
            cap->info.nr_lost++;
        }
    }

    lost = perfmon_sbuf_lost(cap->sbuf, cpu);

    if (lost != cap->lost_seen[cpu]) {
        uint64_t delta = lost - cap->lost_seen[cpu];

        cap->lost_seen[cpu] = lost;
        cap->info.nr_lost += delta;
        perfmon_capture_append(cap, PERFMON_REC_LOST, cpu, &delta, sizeof(delta));
    }
}

void
perfmon_capture_drain(struct perfmon_capture *cap)
{
    for (unsigned int cpu = 0; cpu < cap->nr_cpus; cpu++) {
        perfmon_capture_drain_cpu(cap, cpu);
    }
}

static void
perfmon_capture_drain_main(void *arg)
{
    struct perfmon_capture *cap = arg;

    while (!__atomic_load_n(&cap->stop, __ATOMIC_ACQUIRE)) {
        perfmon_capture_drain(cap);
        thread_msleep(PERFMON_CAPTURE_DRAIN_MS);
    }

    perfmon_capture_drain(cap);
}

/* ---- captures ----------------------------------------------------------------- */

int
perfmon_capture_create(struct perfmon_capture **recp, size_t ring_size,
                   size_t store_max, const char *event, const char *command)
{
    struct perfmon_capture *cap;
    int error;

    if (recp == NULL || store_max < PERFMON_CAPTURE_CHUNK_SIZE
        || store_max > PERFMON_CAPTURE_STORE_MAX) {
        return -EINVAL;
    }

    cap = kmem_zalloc(sizeof(*cap));

    if (cap == NULL) {
        return -ENOMEM;
    }

    error = perfmon_sbuf_create(&cap->sbuf, ring_size);

    if (error) {
        kmem_free(cap, sizeof(*cap));
        return error;
    }

    cap->nr_cpus = perfmon_sbuf_nr_cpus(cap->sbuf);
    cap->lost_seen = kmem_zalloc(cap->nr_cpus * sizeof(*cap->lost_seen));

    if (cap->lost_seen == NULL) {
        perfmon_sbuf_destroy(cap->sbuf);
        kmem_free(cap, sizeof(*cap));
        return -ENOMEM;
    }

    cap->store_max = store_max;
    strlcpy(cap->info.event, event, sizeof(cap->info.event));
    strlcpy(cap->events[0].name, event, sizeof(cap->events[0].name));
    strlcpy(cap->info.command, command, sizeof(cap->info.command));
    cap->info.start_ns = perfmon_capture_now_ns();
    *recp = cap;
    return 0;
}

void
perfmon_capture_set_sink(struct perfmon_capture *cap, perfmon_capture_sink_fn_t fn,
                     void *arg)
{
    assert(cap->drainer == NULL);
    cap->sink = fn;
    cap->sink_arg = arg;
}

struct perfmon_sbuf *
perfmon_capture_sbuf(struct perfmon_capture *cap)
{
    return cap->sbuf;
}

int
perfmon_capture_start(struct perfmon_capture *cap)
{
    cap->info.start_ns = perfmon_capture_now_ns();
    __atomic_store_n(&cap->stop, false, __ATOMIC_RELAXED);
    return thread_create(&cap->drainer, "perfmon-drain",
                         perfmon_capture_drain_main, cap, THREAD_CPUMASK_ALL);
}

void
perfmon_capture_stop(struct perfmon_capture *cap)
{
    if (cap->drainer != NULL) {
        __atomic_store_n(&cap->stop, true, __ATOMIC_RELEASE);
        thread_join(cap->drainer);
        cap->drainer = NULL;
    }

    perfmon_capture_drain(cap);
    cap->info.end_ns = perfmon_capture_now_ns();
}

void
perfmon_capture_clear(struct perfmon_capture *cap)
{
    while (cap->head != NULL) {
        struct perfmon_capture_chunk *next = cap->head->next;

        kmem_free(cap->head, sizeof(*cap->head));
        cap->head = next;
    }

    cap->tail = NULL;
    cap->info.store_bytes = 0;
    cap->info.nr_samples = 0;
    cap->info.nr_lost = 0;
    cap->info.nr_throttles = 0;
    cap->info.nr_switches = 0;
    cap->nr_comms = 0;
}

int
perfmon_capture_add_event(struct perfmon_capture *cap,
                          const struct perfmon_capture_event *event)
{
    assert(cap->drainer == NULL);

    if (cap->nr_events == PERFMON_CAPTURE_MAX_EVENTS) {
        return -ENOSPC;
    }

    if (event->nr_reads > PERFMON_MAX_READS) {
        return -EINVAL;
    }

    for (unsigned int i = 0; i < event->nr_reads; i++) {
        if (event->reads[i] >= PERFMON_CAPTURE_MAX_EVENTS) {
            return -EINVAL;
        }
    }

    cap->events[cap->nr_events++] = *event;
    return 0;
}

unsigned int
perfmon_capture_nr_events(const struct perfmon_capture *cap)
{
    return MAX(cap->nr_events, 1);
}

const struct perfmon_capture_event *
perfmon_capture_event(const struct perfmon_capture *cap, uint32_t id)
{
    return (id < perfmon_capture_nr_events(cap)) ? &cap->events[id] : NULL;
}

bool
perfmon_capture_read_delta(const struct perfmon_capture *cap,
                           const struct perfmon_sample *sample,
                           struct perfmon_reads *reads,
                           unsigned int i, uint32_t *eventp,
                           uint64_t *deltap)
{
    const struct perfmon_capture_event *ev;
    uint64_t value;

    ev = perfmon_capture_event(cap, sample->id);

    if (ev == NULL || ev->nr_reads != sample->nr_reads
        || i >= sample->nr_reads || sample->cpu >= CPU_MAX) {
        return false;
    }

    *eventp = ev->reads[i];
    value = perfmon_reads_value(reads, sample, i, *eventp);
    *deltap = value - reads->last[*eventp][sample->cpu];
    reads->last[*eventp][sample->cpu] = value;
    return *deltap != 0;
}

void
perfmon_capture_get_info(const struct perfmon_capture *cap,
                     struct perfmon_capture_info *info)
{
    *info = cap->info;
}

void
perfmon_capture_foreach(const struct perfmon_capture *cap, perfmon_capture_fn_t fn,
                    void *arg)
{
    for (const struct perfmon_capture_chunk *c = cap->head; c != NULL;
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

const struct perfmon_rec_hdr *
perfmon_capture_next(const struct perfmon_capture *cap,
                     struct perfmon_capture_pos *pos)
{
    const struct perfmon_capture_chunk *c = pos->chunk;
    const struct perfmon_rec_hdr *hdr;

    if (!pos->started) {
        pos->started = true;
        c = cap->head;
        pos->off = 0;
    }

    while (c != NULL && pos->off >= c->used) {
        c = c->next;
        pos->off = 0;
    }

    pos->chunk = c;

    if (c == NULL) {
        return NULL;
    }

    hdr = (const void *)((const char *)c->data + pos->off);
    assert(hdr->size >= sizeof(*hdr));
    pos->off += hdr->size;
    return hdr;
}

void
perfmon_capture_destroy(struct perfmon_capture *cap)
{
    if (cap == NULL) {
        return;
    }

    assert(cap->drainer == NULL);
    perfmon_capture_clear(cap);
    perfmon_sbuf_destroy(cap->sbuf);
    kmem_free(cap->lost_seen, cap->nr_cpus * sizeof(*cap->lost_seen));
    kmem_free(cap, sizeof(*cap));
}

void
perfmon_capture_keep(struct perfmon_capture *cap)
{
    struct perfmon_capture *old = perfmon_capture_kept;

    perfmon_capture_kept = cap;
    perfmon_capture_destroy(old);
}

const struct perfmon_capture *
perfmon_capture_last(void)
{
    return perfmon_capture_kept;
}
