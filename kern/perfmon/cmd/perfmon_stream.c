/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Streaming recordings out on COM2 in perf's pipe format (see
 * kern/perfmon/cmd/perfmon_stream.h for the layout).  Each perf record is built in the
 * stream's buffer, then written to the port whole; once the port fails,
 * nothing more is written, so what the host receives is a stream cut at
 * that point, which tools/perfdata knows how to read.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_capture.h"
#include "kern/perfmon_ring.h"
#include "kern/perfmon/cmd/perfmon_stream.h"
#include "kern/perfmon_switchrec.h"
#include "kern/printf.h"
#include "kern/string.h"
#include "kern/symtab.h"
#include "kern/version.h"

/* perf's record types (the u32 type of its header), and misc bits. */
#define PERFMON_STREAM_REC_MMAP             1
#define PERFMON_STREAM_REC_COMM             3
#define PERFMON_STREAM_REC_SAMPLE           9
#define PERFMON_STREAM_REC_LOST_SAMPLES     13
#define PERFMON_STREAM_REC_SWITCH_CPU_WIDE  15
#define PERFMON_STREAM_REC_HEADER_ATTR      64
#define PERFMON_STREAM_REC_EVENT_UPDATE     78
#define PERFMON_STREAM_REC_HEADER_FEATURE   80
#define PERFMON_STREAM_MISC_KERNEL          1

/* perf_event_attr.type, and the sample_type bits the samples carry. */
#define PERFMON_STREAM_TYPE_HARDWARE        0
#define PERFMON_STREAM_TYPE_SOFTWARE        1
#define PERFMON_STREAM_TYPE_RAW             4

#define PERFMON_STREAM_ST_IP                0x1
#define PERFMON_STREAM_ST_TID               0x2
#define PERFMON_STREAM_ST_TIME              0x4
#define PERFMON_STREAM_ST_CALLCHAIN         0x20
#define PERFMON_STREAM_ST_CPU               0x80
#define PERFMON_STREAM_ST_PERIOD            0x100
#define PERFMON_STREAM_ST_READ              0x10
#define PERFMON_STREAM_ST_BRANCH_STACK      0x800
#define PERFMON_STREAM_ST_IDENTIFIER        0x10000

/* read_format: a group's values, each with its id. */
#define PERFMON_STREAM_FORMAT_ID            0x4
#define PERFMON_STREAM_FORMAT_GROUP         0x8

/* perf_event_attr's flag word (offset 40). */
#define PERFMON_STREAM_AF_DISABLED          (1ULL << 0)
#define PERFMON_STREAM_AF_EXCLUDE_USER      (1ULL << 4)
#define PERFMON_STREAM_AF_EXCLUDE_KERNEL    (1ULL << 5)
#define PERFMON_STREAM_AF_MMAP              (1ULL << 8)
#define PERFMON_STREAM_AF_COMM              (1ULL << 9)
#define PERFMON_STREAM_AF_FREQ              (1ULL << 10)
#define PERFMON_STREAM_AF_SAMPLE_ID_ALL     (1ULL << 18)
#define PERFMON_STREAM_AF_EXCLUDE_GUEST     (1ULL << 20)
#define PERFMON_STREAM_AF_CONTEXT_SWITCH    (1ULL << 26)

/*
 * branch_sample_type bits (perf's PERF_SAMPLE_BRANCH_*), one per
 * PERFMON_BRF_* bit.
 */
static const struct {
    unsigned int filter;
    uint64_t perf;
} perfmon_stream_branch_bits[] = {
    { PERFMON_BRF_USER, 1ULL << 0 },
    { PERFMON_BRF_KERN, 1ULL << 1 },
    { PERFMON_BRF_ANY, 1ULL << 3 },
    { PERFMON_BRF_ANY_CALL, 1ULL << 4 },
    { PERFMON_BRF_ANY_RET, 1ULL << 5 },
    { PERFMON_BRF_IND_CALL, 1ULL << 6 },
    { PERFMON_BRF_COND, 1ULL << 10 },
    { PERFMON_BRF_IND_JMP, 1ULL << 12 },
    { PERFMON_BRF_CALL, 1ULL << 13 },
};

/* Header features (their bit numbers in perf.data). */
#define PERFMON_STREAM_FEAT_HOSTNAME        3
#define PERFMON_STREAM_FEAT_OSRELEASE       4
#define PERFMON_STREAM_FEAT_VERSION         5
#define PERFMON_STREAM_FEAT_ARCH            6
#define PERFMON_STREAM_FEAT_NRCPUS          7
#define PERFMON_STREAM_FEAT_CMDLINE         11
#define PERFMON_STREAM_FEAT_BRANCH_STACK    15
#define PERFMON_STREAM_FEAT_SAMPLE_TIME     21

/* The first entry of a kernel call chain, in front of the ip. */
#define PERFMON_STREAM_CONTEXT_KERNEL       ((uint64_t)-128)

/* EVENT_UPDATE's kind for a name, and the id of the one event. */
#define PERFMON_STREAM_UPDATE_NAME          2
#define PERFMON_STREAM_EVENT_ID             1

/* perf pads the strings of its header features to this. */
#define PERFMON_STREAM_STR_ALIGN            64

/* The kernel's map: perf resolves it against the ELF's _text_start. */
#define PERFMON_STREAM_KMAP_NAME            "[kernel.kallsyms]_text_start"
#define PERFMON_STREAM_KMAP_LEN             0x7fffffffULL

#define PERFMON_STREAM_HOSTNAME             "tally"
#define PERFMON_STREAM_ARCH                 "x86_64"

#define PERFMON_STREAM_BUF_SIZE             4096

/* struct perf_event_attr as of its 128-byte size, fields used here named. */
struct perfmon_stream_attr {
    uint32_t type;
    uint32_t size;
    uint64_t config;
    uint64_t sample_period;             /* sample_freq with the FREQ flag */
    uint64_t sample_type;
    uint64_t read_format;
    uint64_t flags;
    uint32_t wakeup_events;
    uint32_t bp_type;
    uint64_t config1;
    uint64_t config2;
    uint64_t branch_sample_type;
    uint64_t later[6];                  /* fields Tally leaves at zero */
};

/* How perf names a generic event: its type and config. */
struct perfmon_stream_event {
    bool known;                         /* false: no perf counterpart */
    uint32_t type;
    uint64_t config;
};

/* Indexed by PERFMON_EV_*; perf's generic hardware and software events. */
static const struct perfmon_stream_event
perfmon_stream_events[PERFMON_NR_EVENTS] = {
    [PERFMON_EV_CYCLE] = { true, PERFMON_STREAM_TYPE_HARDWARE, 0 },
    [PERFMON_EV_INSTRUCTION] = { true, PERFMON_STREAM_TYPE_HARDWARE, 1 },
    [PERFMON_EV_CACHE_REF] = { true, PERFMON_STREAM_TYPE_HARDWARE, 2 },
    [PERFMON_EV_CACHE_MISS] = { true, PERFMON_STREAM_TYPE_HARDWARE, 3 },
    [PERFMON_EV_BRANCH] = { true, PERFMON_STREAM_TYPE_HARDWARE, 4 },
    [PERFMON_EV_BRANCH_MISS] = { true, PERFMON_STREAM_TYPE_HARDWARE, 5 },
    [PERFMON_EV_REF_CYCLE] = { true, PERFMON_STREAM_TYPE_HARDWARE, 9 },
    [PERFMON_EV_TASK_CLOCK] = { true, PERFMON_STREAM_TYPE_SOFTWARE, 1 },
    [PERFMON_EV_CONTEXT_SWITCH] = { true, PERFMON_STREAM_TYPE_SOFTWARE, 3 },
    [PERFMON_EV_MIGRATION] = { true, PERFMON_STREAM_TYPE_SOFTWARE, 4 },
};

/* What the samples of one event of a recording carry. */
struct perfmon_stream_ev {
    bool reads;                         /* PERF_SAMPLE_READ */
    unsigned int nr_reads;
    uint32_t read_events[PERFMON_MAX_READS];
};

/*
 * The stream.  There is one COM2, so one stream: busy says it is open
 * (atomic).  The rest belongs to whoever writes the recording at the time
 * (its consumer: the drain thread, or the command that records).
 */
struct perfmon_stream {
    bool branches;                      /* samples carry a branch stack */
    bool ids;                           /* PERF_SAMPLE_IDENTIFIER: ids per
                                           event and CPU */
    unsigned int nr_cpus;
    unsigned int nr_events;
    struct perfmon_stream_ev events[PERFMON_STREAM_MAX_EVENTS];
    struct perfmon_reads reads; /* the groups' values */
    int error;                          /* the port failed: write no more */
    uint64_t nr_lost;                   /* lost samples said so far */
    uint64_t nr_samples;
    uint64_t first_ns;                  /* sample times seen */
    uint64_t last_ns;
    size_t len;                         /* bytes of the record being built */
    union {
        uint64_t align;
        unsigned char buf[PERFMON_STREAM_BUF_SIZE];
    };
};

/* The largest sample fits the buffer. */
_Static_assert(8 + 7 * 8 + (1 + 2 * PERFMON_MAX_READS) * 8
               + (2 + PERFMON_MAX_CALLCHAIN) * 8
               + 8 + PERFMON_MAX_BRANCHES * sizeof(struct perfmon_branch)
               <= PERFMON_STREAM_BUF_SIZE, "stream buffer too small");
_Static_assert(sizeof(struct perfmon_stream_attr) == 128, "perf attr size");
_Static_assert(sizeof(struct perfmon_branch) == 3 * sizeof(uint64_t),
               "a branch entry is perf's: from, to, flags");

static struct perfmon_stream perfmon_stream;
static bool perfmon_stream_busy;

uint64_t
perfmon_stream_hash(const void *start, const void *end)
{
    uint64_t hash = 0xcbf29ce484222325ULL;

    for (const unsigned char *p = start; p < (const unsigned char *)end;
         p++) {
        hash = (hash ^ *p) * 0x100000001b3ULL;
    }

    return hash;
}

/* The hash of the kernel's text, computed once: the text never changes. */
static uint64_t
perfmon_stream_build_id(void)
{
    static uint64_t build_id;
    uint64_t start, end;

    if (build_id == 0) {
        symtab_text_bounds(&start, &end);
        build_id = perfmon_stream_hash((const void *)(uintptr_t)start,
                                       (const void *)(uintptr_t)end);
    }

    return build_id;
}

/* ---- writing records ---------------------------------------------------- */

static void
perfmon_stream_send(struct perfmon_stream *s, const void *data, size_t size)
{
    if (s->error == 0) {
        s->error = console_aux_write(data, size);
    }
}

static void
perfmon_stream_put(struct perfmon_stream *s, const void *data, size_t size)
{
    assert(s->len + size <= sizeof(s->buf));
    memcpy(&s->buf[s->len], data, size);
    s->len += size;
}

static void
perfmon_stream_put_u64(struct perfmon_stream *s, uint64_t v)
{
    perfmon_stream_put(s, &v, sizeof(v));
}

static void
perfmon_stream_put_u32s(struct perfmon_stream *s, uint32_t a, uint32_t b)
{
    uint32_t v[2] = { a, b };

    perfmon_stream_put(s, v, sizeof(v));
}

static void
perfmon_stream_put_zeros(struct perfmon_stream *s, size_t size)
{
    assert(s->len + size <= sizeof(s->buf));
    memset(&s->buf[s->len], 0, size);
    s->len += size;
}

/* str and its NUL, then zeros up to a multiple of align bytes. */
static void
perfmon_stream_put_padded(struct perfmon_stream *s, const char *str,
                          size_t align)
{
    size_t len = strlen(str) + 1;

    perfmon_stream_put(s, str, len);
    perfmon_stream_put_zeros(s, (align - len % align) % align);
}

/* A header feature's string: u32 its padded length, then the bytes. */
static size_t
perfmon_stream_str_size(const char *str)
{
    size_t len = strlen(str) + 1;

    return sizeof(uint32_t) + P2ROUND(len, PERFMON_STREAM_STR_ALIGN);
}

static void
perfmon_stream_put_str(struct perfmon_stream *s, const char *str)
{
    uint32_t len = (uint32_t)(perfmon_stream_str_size(str) - sizeof(len));

    perfmon_stream_put(s, &len, sizeof(len));
    perfmon_stream_put_padded(s, str, PERFMON_STREAM_STR_ALIGN);
}

/*
 * The sample_id trailer of records other than samples; with ids, the
 * identifier 0 ends it (perf takes it for the first event).
 */
static void
perfmon_stream_put_id(struct perfmon_stream *s, uint32_t pid, uint32_t tid,
                      uint64_t time_ns, uint32_t cpu)
{
    perfmon_stream_put_u32s(s, pid, tid);
    perfmon_stream_put_u64(s, time_ns);
    perfmon_stream_put_u32s(s, cpu, 0);

    if (s->ids) {
        perfmon_stream_put_u64(s, 0);
    }
}

/* perf's id of event's samples on cpu. */
static uint64_t
perfmon_stream_id(const struct perfmon_stream *s, uint32_t event,
                  uint32_t cpu)
{
    return s->ids ? 1 + (uint64_t)event * s->nr_cpus + cpu
                  : PERFMON_STREAM_EVENT_ID;
}

/* Start a record: its header is filled in by perfmon_stream_end(). */
static void
perfmon_stream_begin(struct perfmon_stream *s, uint32_t type, uint16_t misc)
{
    s->len = 0;
    perfmon_stream_put_u32s(s, type, misc);
}

static void
perfmon_stream_end(struct perfmon_stream *s)
{
    uint16_t size;

    perfmon_stream_put_zeros(s, P2ROUND(s->len, 8) - s->len);
    size = (uint16_t)s->len;
    memcpy(&s->buf[6], &size, sizeof(size));
    perfmon_stream_send(s, s->buf, s->len);
}

/* ---- the recording's header --------------------------------------------- */

/* perf's branch_sample_type of a branch filter. */
static uint64_t
perfmon_stream_branch_type(unsigned int filter)
{
    uint64_t type = 0;

    for (size_t i = 0; i < ARRAY_SIZE(perfmon_stream_branch_bits); i++) {
        if (filter & perfmon_stream_branch_bits[i].filter) {
            type |= perfmon_stream_branch_bits[i].perf;
        }
    }

    return type;
}

/*
 * A group read by its leader's samples, as perf writes it: read_format
 * GROUP | ID on the leader and each member (which samples as the leader).
 */
static void
perfmon_stream_attr_reads(const struct perfmon_stream *s,
                          struct perfmon_stream_attr *attr,
                          unsigned int event)
{
    for (unsigned int l = 0; l < s->nr_events; l++) {
        for (unsigned int i = 0; i < s->events[l].nr_reads; i++) {
            if (s->events[l].read_events[i] == event) {
                attr->sample_type |= PERFMON_STREAM_ST_READ;
                attr->read_format = PERFMON_STREAM_FORMAT_GROUP
                                    | PERFMON_STREAM_FORMAT_ID;
            }
        }
    }
}

static void
perfmon_stream_attr_init(struct perfmon_stream_attr *attr,
                         const struct perfmon_stream_desc *desc)
{
    memset(attr, 0, sizeof(*attr));
    attr->size = sizeof(*attr);

    if (desc->generic >= 0 && desc->generic < PERFMON_NR_EVENTS
        && perfmon_stream_events[desc->generic].known) {
        attr->type = perfmon_stream_events[desc->generic].type;
        attr->config = perfmon_stream_events[desc->generic].config;
    } else {
        /* No perf counterpart: the name (EVENT_UPDATE) says what it is. */
        attr->type = PERFMON_STREAM_TYPE_RAW;
        attr->config = (desc->generic >= 0) ? (uint64_t)desc->generic
                                            : desc->raw_code;
    }

    attr->sample_period = (desc->freq != 0) ? desc->freq : desc->period;
    attr->sample_type = PERFMON_STREAM_ST_IP | PERFMON_STREAM_ST_TID
                        | PERFMON_STREAM_ST_TIME | PERFMON_STREAM_ST_CPU
                        | PERFMON_STREAM_ST_PERIOD
                        | PERFMON_STREAM_ST_CALLCHAIN;
    attr->flags = PERFMON_STREAM_AF_DISABLED | PERFMON_STREAM_AF_MMAP
                  | PERFMON_STREAM_AF_COMM | PERFMON_STREAM_AF_SAMPLE_ID_ALL
                  | PERFMON_STREAM_AF_EXCLUDE_GUEST
                  | ((desc->freq != 0) ? PERFMON_STREAM_AF_FREQ : 0)
                  | ((desc->flags & PERFMON_EF_USER)
                     ? 0 : PERFMON_STREAM_AF_EXCLUDE_USER)
                  | ((desc->flags & PERFMON_EF_KERN)
                     ? 0 : PERFMON_STREAM_AF_EXCLUDE_KERNEL)
                  | (desc->switch_events ? PERFMON_STREAM_AF_CONTEXT_SWITCH
                                         : 0);

    if (desc->fields & PERFMON_SF_BRANCH) {
        attr->sample_type |= PERFMON_STREAM_ST_BRANCH_STACK;
        attr->branch_sample_type = perfmon_stream_branch_type(
                                       desc->branch_filter);
    }
}

/* Event's attribute with its ids, and its name. */
static void
perfmon_stream_write_event(struct perfmon_stream *s,
                           const struct perfmon_stream_desc *desc,
                           unsigned int event)
{
    struct perfmon_stream_attr attr;

    perfmon_stream_attr_init(&attr, desc);

    if (s->ids) {
        attr.sample_type |= PERFMON_STREAM_ST_IDENTIFIER;
        perfmon_stream_attr_reads(s, &attr, event);
    }

    perfmon_stream_begin(s, PERFMON_STREAM_REC_HEADER_ATTR, 0);
    perfmon_stream_put(s, &attr, sizeof(attr));

    for (unsigned int cpu = 0; cpu < (s->ids ? s->nr_cpus : 1); cpu++) {
        perfmon_stream_put_u64(s, perfmon_stream_id(s, event, cpu));
    }

    perfmon_stream_end(s);

    perfmon_stream_begin(s, PERFMON_STREAM_REC_EVENT_UPDATE, 0);
    perfmon_stream_put_u64(s, PERFMON_STREAM_UPDATE_NAME);
    perfmon_stream_put_u64(s, perfmon_stream_id(s, event, 0));
    perfmon_stream_put_padded(s, desc->event, 8);
    perfmon_stream_end(s);
}

/*
 * What the stream keeps of the events: how many, which read their group.
 * Returns 0, or -EINVAL for too many events or reads of no event.
 */
static int
perfmon_stream_set_events(struct perfmon_stream *s,
                          const struct perfmon_stream_desc *desc)
{
    unsigned int nr = 0;

    for (const struct perfmon_stream_desc *d = desc; d != NULL; d = d->next) {
        nr++;
    }

    if (nr > PERFMON_STREAM_MAX_EVENTS) {
        return -EINVAL;
    }

    s->nr_events = 0;

    for (const struct perfmon_stream_desc *d = desc; d != NULL; d = d->next) {
        struct perfmon_stream_ev *ev = &s->events[s->nr_events++];

        if (d->nr_reads > PERFMON_MAX_READS) {
            return -EINVAL;
        }

        ev->reads = (d->nr_reads != 0);
        ev->nr_reads = d->nr_reads;

        for (unsigned int i = 0; i < d->nr_reads; i++) {
            if (d->reads[i] >= nr) {
                return -EINVAL;
            }

            ev->read_events[i] = d->reads[i];
        }

        s->ids |= (nr > 1) || ev->reads;
    }

    return 0;
}

static void
perfmon_stream_feature_str(struct perfmon_stream *s, unsigned int feat,
                           const char *str)
{
    perfmon_stream_begin(s, PERFMON_STREAM_REC_HEADER_FEATURE, 0);
    perfmon_stream_put_u64(s, feat);
    perfmon_stream_put_str(s, str);
    perfmon_stream_end(s);
}

/* CMDLINE: u32 nr, then nr strings; arguments that do not fit are left. */
static void
perfmon_stream_feature_cmdline(struct perfmon_stream *s, int argc,
                               char *const *argv)
{
    size_t room = sizeof(s->buf) - 2 * sizeof(uint64_t) - sizeof(uint32_t);
    uint32_t nr = 0;

    for (int i = 0; i < argc && perfmon_stream_str_size(argv[i]) <= room;
         i++) {
        room -= perfmon_stream_str_size(argv[i]);
        nr++;
    }

    perfmon_stream_begin(s, PERFMON_STREAM_REC_HEADER_FEATURE, 0);
    perfmon_stream_put_u64(s, PERFMON_STREAM_FEAT_CMDLINE);
    perfmon_stream_put(s, &nr, sizeof(nr));

    for (uint32_t i = 0; i < nr; i++) {
        perfmon_stream_put_str(s, argv[i]);
    }

    perfmon_stream_end(s);
}

static void
perfmon_stream_write_features(struct perfmon_stream *s,
                              const struct perfmon_stream_desc *desc)
{
    char version[64];
    uint32_t nr_cpus = cpu_count();

    ksnprintf(version, sizeof(version), "tally %s (build %016llx)",
              TALLY_VERSION, (unsigned long long)perfmon_stream_build_id());
    perfmon_stream_feature_str(s, PERFMON_STREAM_FEAT_HOSTNAME,
                               PERFMON_STREAM_HOSTNAME);
    perfmon_stream_feature_str(s, PERFMON_STREAM_FEAT_OSRELEASE,
                               "tally " TALLY_VERSION);
    perfmon_stream_feature_str(s, PERFMON_STREAM_FEAT_VERSION, version);
    perfmon_stream_feature_str(s, PERFMON_STREAM_FEAT_ARCH,
                               PERFMON_STREAM_ARCH);

    /* u32 available, u32 online (checked: perf prints them in that order). */
    perfmon_stream_begin(s, PERFMON_STREAM_REC_HEADER_FEATURE, 0);
    perfmon_stream_put_u64(s, PERFMON_STREAM_FEAT_NRCPUS);
    perfmon_stream_put_u32s(s, nr_cpus, nr_cpus);
    perfmon_stream_end(s);

    perfmon_stream_feature_cmdline(s, desc->argc, desc->argv);

    if (s->branches) {
        perfmon_stream_begin(s, PERFMON_STREAM_REC_HEADER_FEATURE, 0);
        perfmon_stream_put_u64(s, PERFMON_STREAM_FEAT_BRANCH_STACK);
        perfmon_stream_end(s);
    }
}

static void
perfmon_stream_write_kmap(struct perfmon_stream *s)
{
    uint64_t start, end;

    symtab_text_bounds(&start, &end);
    perfmon_stream_begin(s, PERFMON_STREAM_REC_MMAP,
                         PERFMON_STREAM_MISC_KERNEL);
    perfmon_stream_put_u32s(s, UINT32_MAX, 0);
    perfmon_stream_put_u64(s, KERNEL_VMA);
    perfmon_stream_put_u64(s, PERFMON_STREAM_KMAP_LEN);
    perfmon_stream_put_u64(s, start);
    perfmon_stream_put_padded(s, PERFMON_STREAM_KMAP_NAME, 8);
    perfmon_stream_put_id(s, UINT32_MAX, 0, 0, 0);
    perfmon_stream_end(s);
}

int
perfmon_stream_open(struct perfmon_stream **streamp,
                    const struct perfmon_stream_desc *desc)
{
    static const char pipe_header[16] = "PERFILE2\x10";
    struct perfmon_stream *s = &perfmon_stream;
    const struct perfmon_stream_desc *first = desc;

    if (__atomic_exchange_n(&perfmon_stream_busy, true, __ATOMIC_ACQUIRE)) {
        return -EBUSY;
    }

    if (!console_aux_setup()) {
        __atomic_store_n(&perfmon_stream_busy, false, __ATOMIC_RELEASE);
        return -ENODEV;
    }

    memset(s, 0, sizeof(*s));
    s->branches = (desc->fields & PERFMON_SF_BRANCH) != 0;
    s->nr_cpus = cpu_count();

    if (perfmon_stream_set_events(s, desc) != 0) {
        __atomic_store_n(&perfmon_stream_busy, false, __ATOMIC_RELEASE);
        return -EINVAL;
    }

    perfmon_stream_send(s, pipe_header, sizeof(pipe_header));

    for (unsigned int i = 0; i < s->nr_events; i++, desc = desc->next) {
        perfmon_stream_write_event(s, desc, i);
    }

    perfmon_stream_write_features(s, first);
    perfmon_stream_write_kmap(s);

    if (s->error) {
        __atomic_store_n(&perfmon_stream_busy, false, __ATOMIC_RELEASE);
        return s->error;
    }

    *streamp = s;
    return 0;
}

/* ---- the records of a recording ----------------------------------------- */

/* PERF_SAMPLE_READ of a group: nr, then each value with its id. */
static void
perfmon_stream_put_reads(struct perfmon_stream *s,
                         const struct perfmon_sample *sample)
{
    const struct perfmon_stream_ev *ev = &s->events[sample->id];

    perfmon_stream_put_u64(s, sample->nr_reads);

    for (unsigned int i = 0; i < sample->nr_reads; i++) {
        perfmon_stream_put_u64(s, perfmon_reads_value(
                                      &s->reads, sample, i,
                                      ev->read_events[i]));
        perfmon_stream_put_u64(s, perfmon_stream_id(s, ev->read_events[i],
                                                    sample->cpu));
    }
}

static void
perfmon_stream_sample(struct perfmon_stream *s,
                      const struct perfmon_rec_hdr *hdr)
{
    struct perfmon_sample sample;

    /* A damaged record is left out (perfmon report skips it too). */
    if (perfmon_sample_decode(hdr, hdr->size, &sample) != 0) {
        return;
    }

    if (s->ids && (sample.id >= s->nr_events || sample.cpu >= s->nr_cpus
                   || (sample.nr_reads
                       != s->events[sample.id].nr_reads))) {
        return;
    }

    perfmon_stream_begin(s, PERFMON_STREAM_REC_SAMPLE,
                         PERFMON_STREAM_MISC_KERNEL);

    if (s->ids) {
        perfmon_stream_put_u64(s, perfmon_stream_id(s, sample.id,
                                                    sample.cpu));
    }

    perfmon_stream_put_u64(s, sample.ip);
    perfmon_stream_put_u32s(s, sample.tid, sample.tid);
    perfmon_stream_put_u64(s, sample.time_ns);
    perfmon_stream_put_u32s(s, sample.cpu, 0);
    perfmon_stream_put_u64(s, sample.period);

    if (s->ids && s->events[sample.id].reads) {
        perfmon_stream_put_reads(s, &sample);
    }

    /* Always a chain: stack collapsers drop samples without one. */
    if (sample.nr_ips != 0) {
        perfmon_stream_put_u64(s, 1 + sample.nr_ips);
        perfmon_stream_put_u64(s, PERFMON_STREAM_CONTEXT_KERNEL);
        perfmon_stream_put(s, sample.ips, sample.nr_ips * sizeof(uint64_t));
    } else {
        perfmon_stream_put_u64(s, 2);
        perfmon_stream_put_u64(s, PERFMON_STREAM_CONTEXT_KERNEL);
        perfmon_stream_put_u64(s, sample.ip);
    }

    if (s->branches) {
        perfmon_stream_put_u64(s, sample.nr_branches);
        perfmon_stream_put(s, sample.branches,
                           sample.nr_branches * sizeof(*sample.branches));
    }

    perfmon_stream_end(s);

    if (s->nr_samples == 0 || sample.time_ns < s->first_ns) {
        s->first_ns = sample.time_ns;
    }

    s->last_ns = MAX(s->last_ns, sample.time_ns);
    s->nr_samples++;
}

static void
perfmon_stream_comm(struct perfmon_stream *s,
                    const struct perfmon_rec_hdr *hdr)
{
    char name[PERFMON_REC_NAME_SIZE];
    uint32_t tid = hdr->misc;

    if (hdr->size < sizeof(*hdr) + sizeof(name)) {
        return;
    }

    memcpy(name, hdr + 1, sizeof(name));
    name[sizeof(name) - 1] = '\0';

    /* A thread gone before it was named: perf shows it as ":tid". */
    if (name[0] == '\0') {
        return;
    }

    perfmon_stream_begin(s, PERFMON_STREAM_REC_COMM, 0);
    perfmon_stream_put_u32s(s, tid, tid);
    perfmon_stream_put_padded(s, name, 8);

    /* Time 0: the name holds from before the thread's first sample. */
    perfmon_stream_put_id(s, tid, tid, 0, 0);
    perfmon_stream_end(s);
}

static void
perfmon_stream_lost(struct perfmon_stream *s, uint64_t nr, uint32_t cpu)
{
    perfmon_stream_begin(s, PERFMON_STREAM_REC_LOST_SAMPLES, 0);
    perfmon_stream_put_u64(s, nr);
    perfmon_stream_put_id(s, 0, 0, s->last_ns, cpu);
    perfmon_stream_end(s);
    s->nr_lost += nr;
}

/*
 * A switch record as perf's CPU-wide one: u32 next_prev_pid, u32
 * next_prev_tid (the thread switched to, or from), the sample_id trailer
 * of the thread it is about; perf's misc bits are ours.  The chain of a
 * switch out has no place in it: perfmon report --sort offcpu reads it.
 */
static void
perfmon_stream_switch(struct perfmon_stream *s,
                      const struct perfmon_rec_hdr *hdr)
{
    struct perfmon_switch sw;

    if (perfmon_switch_decode(hdr, &sw) != 0) {
        return;
    }

    perfmon_stream_begin(s, PERFMON_STREAM_REC_SWITCH_CPU_WIDE,
                         (uint16_t)hdr->misc);
    perfmon_stream_put_u32s(s, sw.other, sw.other);
    perfmon_stream_put_id(s, sw.tid, sw.tid, sw.time_ns, sw.cpu);
    perfmon_stream_end(s);
}

void
perfmon_stream_rec(const struct perfmon_rec_hdr *hdr, void *arg)
{
    struct perfmon_stream *s = arg;
    uint64_t nr;

    switch (hdr->type) {
    case PERFMON_REC_SAMPLE:
        perfmon_stream_sample(s, hdr);
        break;
    case PERFMON_REC_COMM:
        perfmon_stream_comm(s, hdr);
        break;
    case PERFMON_REC_SWITCH:
        perfmon_stream_switch(s, hdr);
        break;
    case PERFMON_REC_LOST:
        if (hdr->size >= sizeof(*hdr) + sizeof(nr)) {
            memcpy(&nr, hdr + 1, sizeof(nr));
            perfmon_stream_lost(s, nr, hdr->misc);
        }

        break;
    default:
        /* Throttling has no perf record: the recording's summary says it. */
        break;
    }
}

int
perfmon_stream_close(struct perfmon_stream *s,
                     const struct perfmon_capture_info *info)
{
    int error;

    /* Samples the store had no room for never reached the sink. */
    if (info->nr_lost > s->nr_lost) {
        perfmon_stream_lost(s, info->nr_lost - s->nr_lost, 0);
    }

    perfmon_stream_begin(s, PERFMON_STREAM_REC_HEADER_FEATURE, 0);
    perfmon_stream_put_u64(s, PERFMON_STREAM_FEAT_SAMPLE_TIME);
    perfmon_stream_put_u64(s, s->first_ns);
    perfmon_stream_put_u64(s, s->last_ns);
    perfmon_stream_end(s);

    error = s->error;
    __atomic_store_n(&perfmon_stream_busy, false, __ATOMIC_RELEASE);
    return error;
}

#ifdef TALLY_HOST_TEST
void
perfmon_stream_reset(void)
{
    __atomic_store_n(&perfmon_stream_busy, false, __ATOMIC_RELEASE);
}
#endif
