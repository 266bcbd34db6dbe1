/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of kern/perfmon/cmd/perfmon_stream.c, recordings streamed in perf's pipe
 * format: the header perf needs (the pipe magic, the attr that names the
 * event and says which fields samples carry, the event's name, the header
 * features with the build identity, the kernel's MMAP), each record the
 * drain hands over in perf's form (a sample's pid and tid, its chain led by
 * PERF_CONTEXT_KERNEL even without -g, COMM with its sample_id trailer,
 * lost samples), the end (losses the store hid, SAMPLE_TIME), and the
 * failures: no COM2, a second stream, a port that stops taking bytes.  The
 * bytes are read back here field by field, at the offsets of perf's
 * layouts (Linux's tools/perf/Documentation/perf.data-file-format.txt,
 * include/uapi/linux/perf_event.h).
 *
 * The stream decodes samples (kern/perfmon/perfmon_sample.c) and writes none, so
 * the perfmon core is not linked: what the sample-writing half of that
 * file calls is stubbed below, and fails a test that reaches it.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <linux/perf_event.h>

#include "fakes/fake_smp.h"
#include "fakes/fake_uart.h"
#include "kern/error.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/perfmon/cmd/perfmon_capture.h"
#include "kern/perfmon_ring.h"
#include "kern/perfmon/cmd/perfmon_stream.h"
#include "kern/perfmon_switchrec.h"
#include "kern/thread.h"

void fake_symtab_set_text(const void *text, size_t size);

#define CONTEXT_KERNEL      0xffffffffffffff80ULL

/* The kernel's "text" for these tests, and its FNV-1a hash. */
static const char test_text[] = "foobar";
#define TEST_TEXT_HASH      "85944171f73967e8"

static char *test_argv[] = { "perfmon", "record", "-g", "--", "spin", "10" };

/* ---- reading the stream ------------------------------------------------- */

/* A parsed perf record: its header, and where its payload starts. */
struct rec {
    uint32_t type;
    uint16_t misc;
    uint16_t size;
    const unsigned char *p;
};

static uint64_t
u64_at(const unsigned char *p, size_t off)
{
    uint64_t v;

    memcpy(&v, p + off, sizeof(v));
    return v;
}

static uint32_t
u32_at(const unsigned char *p, size_t off)
{
    uint32_t v;

    memcpy(&v, p + off, sizeof(v));
    return v;
}

/*
 * The records COM2 received after the 16-byte pipe header, at most max,
 * each checked to be whole and a multiple of 8 bytes.
 */
static unsigned int
stream_records(struct rec *recs, unsigned int max)
{
    size_t size, pos = 16;
    const unsigned char *data = fake_uart_com2_data(&size);
    unsigned int n = 0;

    assert_true(size >= 16);
    assert_memory_equal(data, "PERFILE2\x10\0\0\0\0\0\0\0", 16);

    while (pos < size) {
        struct rec *r = &recs[n++];

        assert_true(n <= max);
        r->type = u32_at(data, pos);
        memcpy(&r->misc, data + pos + 4, 2);
        memcpy(&r->size, data + pos + 6, 2);
        r->p = data + pos + 8;
        assert_true(r->size >= 8 && r->size % 8 == 0);
        assert_true(pos + r->size <= size);
        pos += r->size;
    }

    return n;
}

/* The nth record of a type (0: the first), or fail. */
static const struct rec *
find(const struct rec *recs, unsigned int n, uint32_t type, unsigned int nth)
{
    for (unsigned int i = 0; i < n; i++) {
        if (recs[i].type == type && nth-- == 0) {
            return &recs[i];
        }
    }

    fail_msg("no record %u of type %u", nth, type);
    return NULL;
}

/* The header feature feat, or NULL. */
static const struct rec *
feature(const struct rec *recs, unsigned int n, uint64_t feat)
{
    for (unsigned int i = 0; i < n; i++) {
        if (recs[i].type == 80 && u64_at(recs[i].p, 0) == feat) {
            return &recs[i];
        }
    }

    return NULL;
}

/* A string feature's text. */
static const char *
feature_str(const struct rec *recs, unsigned int n, uint64_t feat)
{
    const struct rec *r = feature(recs, n, feat);

    assert_non_null(r);
    assert_true(u32_at(r->p, 8) % 64 == 0);
    return (const char *)r->p + 12;
}

static struct perfmon_stream_desc
desc_default(void)
{
    return (struct perfmon_stream_desc){
        .event = "cpu-clock",
        .generic = PERFMON_EV_TASK_CLOCK,
        .flags = PERFMON_EF_KERN | PERFMON_EF_USER,
        .freq = 2000,
        .fields = PERFMON_SF_IP | PERFMON_SF_TID | PERFMON_SF_TIME
                  | PERFMON_SF_CPU | PERFMON_SF_PERIOD | PERFMON_SF_CALLCHAIN,
        .argc = 6,
        .argv = test_argv,
    };
}

static struct perfmon_stream *
open_default(void)
{
    struct perfmon_stream_desc desc = desc_default();
    struct perfmon_stream *stream;

    assert_int_equal(perfmon_stream_open(&stream, &desc), 0);
    return stream;
}

/* A sample record as the overflow interrupt writes it into a ring. */
static size_t
tally_sample(uint64_t *buf, unsigned int fields, unsigned int tid,
             uint64_t time, unsigned int cpu, const uint64_t *ips,
             unsigned int nr_ips)
{
    struct perfmon_rec_hdr *hdr = (void *)buf;
    uint32_t *head = (uint32_t *)&buf[1];
    size_t n = 2;

    head[0] = fields;
    head[1] = 7;
    buf[n++] = 0xffffffff80201234ULL;                   /* ip */
    buf[n++] = (uint64_t)tid << 32;                     /* u32 0, u32 tid */
    buf[n++] = time;
    buf[n++] = cpu;                                     /* u32 cpu, u32 0 */
    buf[n++] = 1000;                                    /* period */

    if (fields & PERFMON_SF_CALLCHAIN) {
        buf[n++] = nr_ips;

        /* ips may be NULL with none (memcpy's source must not be). */
        if (nr_ips != 0) {
            memcpy(&buf[n], ips, nr_ips * sizeof(*ips));
        }

        n += nr_ips;
    }

    hdr->type = PERFMON_REC_SAMPLE;
    hdr->size = (uint16_t)(n * sizeof(*buf));
    hdr->misc = 0;
    return n * sizeof(*buf);
}

static void
stream_comm(struct perfmon_stream *stream, unsigned int tid, const char *name)
{
    uint64_t buf[1 + PERFMON_REC_NAME_SIZE / 8] = { 0 };
    struct perfmon_rec_hdr *hdr = (void *)buf;

    hdr->type = PERFMON_REC_COMM;
    hdr->size = sizeof(buf);
    hdr->misc = tid;
    strcpy((char *)&buf[1], name);
    perfmon_stream_rec(hdr, stream);
}

static void
stream_lost(struct perfmon_stream *stream, unsigned int cpu, uint64_t nr)
{
    uint64_t buf[2];
    struct perfmon_rec_hdr *hdr = (void *)buf;

    hdr->type = PERFMON_REC_LOST;
    hdr->size = sizeof(buf);
    hdr->misc = cpu;
    buf[1] = nr;
    perfmon_stream_rec(hdr, stream);
}

static int
setup(void **state)
{
    (void)state;
    fake_cpu_reset(2);
    fake_uart_reset(true);
    fake_symtab_set_text(test_text, strlen(test_text));
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    perfmon_stream_reset();     /* a failed test may leave it open */
    fake_uart_reset(false);
    return 0;
}

/* ---- the build identity ------------------------------------------------- */

static void
test_hash_is_fnv1a_64(void **state)
{
    static const char a[] = "a";

    (void)state;

    /* The published FNV-1a 64 test vectors; tools/perfdata uses them too. */
    assert_true(perfmon_stream_hash(a, a) == 0xcbf29ce484222325ULL);
    assert_true(perfmon_stream_hash(a, a + 1) == 0xaf63dc4c8601ec8cULL);
    assert_true(perfmon_stream_hash(test_text, test_text + 6)
                == 0x85944171f73967e8ULL);
}

/* ---- the header --------------------------------------------------------- */

static void
test_header_names_the_event(void **state)
{
    struct perfmon_stream *stream = open_default();
    struct rec recs[32];
    unsigned int n = stream_records(recs, 32);
    const struct rec *r;

    (void)state;

    /* HEADER_ATTR first: the attr and one id. */
    r = &recs[0];
    assert_int_equal(r->type, 64);
    assert_int_equal(r->size, 8 + 128 + 8);
    assert_int_equal(u32_at(r->p, 0), 1);               /* software */
    assert_int_equal(u32_at(r->p, 4), 128);
    assert_true(u64_at(r->p, 8) == 1);                  /* task-clock */
    assert_true(u64_at(r->p, 16) == 2000);              /* sample_freq */
    assert_true(u64_at(r->p, 24) == 0x1a7);             /* +CALLCHAIN */
    assert_true(u64_at(r->p, 40) == 0x140701);          /* +freq */
    assert_true(u64_at(r->p, 72) == 0);                 /* no branches */
    assert_true(u64_at(r->p, 128) == 1);

    /* Then the name, as the user gave it, for id 1. */
    r = &recs[1];
    assert_int_equal(r->type, 78);
    assert_true(u64_at(r->p, 0) == 2);
    assert_true(u64_at(r->p, 8) == 1);
    assert_string_equal((const char *)r->p + 16, "cpu-clock");

    assert_string_equal(feature_str(recs, n, 3), "tally");
    assert_string_equal(feature_str(recs, n, 4), "tally 0.1");
    assert_string_equal(feature_str(recs, n, 5),
                        "tally 0.1 (build " TEST_TEXT_HASH ")");
    assert_string_equal(feature_str(recs, n, 6), "x86_64");
    r = feature(recs, n, 7);
    assert_non_null(r);
    assert_int_equal(u32_at(r->p, 8), 2);
    assert_int_equal(u32_at(r->p, 12), 2);
    assert_null(feature(recs, n, 15));                  /* no branches */
    assert_null(feature(recs, n, 21));                  /* not ended */

    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });
}

static void
test_header_carries_the_command_line(void **state)
{
    struct perfmon_stream *stream = open_default();
    struct rec recs[32];
    unsigned int n = stream_records(recs, 32);
    const struct rec *r = feature(recs, n, 11);
    size_t pos = 12;

    (void)state;
    assert_non_null(r);
    assert_int_equal(u32_at(r->p, 8), 6);

    for (unsigned int i = 0; i < 6; i++) {
        assert_string_equal((const char *)r->p + pos + 4, test_argv[i]);
        pos += 4 + u32_at(r->p, pos);
    }

    assert_true(pos <= r->size - 8u);
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });
}

/* Arguments beyond the buffer are left out; the rest still goes. */
static void
test_header_cmdline_too_long_is_cut(void **state)
{
    static char long_arg[300];
    char *argv[40];
    struct perfmon_stream_desc desc = desc_default();
    struct perfmon_stream *stream;
    struct rec recs[32];
    unsigned int n;

    (void)state;
    memset(long_arg, 'x', sizeof(long_arg) - 1);

    for (unsigned int i = 0; i < 40; i++) {
        argv[i] = long_arg;
    }

    desc.argc = 40;
    desc.argv = argv;
    assert_int_equal(perfmon_stream_open(&stream, &desc), 0);
    n = stream_records(recs, 32);
    assert_non_null(feature(recs, n, 11));
    assert_true(u32_at(feature(recs, n, 11)->p, 8) < 40);
    assert_non_null(find(recs, n, 1, 0));               /* the MMAP after */
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });
}

static void
test_header_maps_the_kernel(void **state)
{
    struct perfmon_stream *stream = open_default();
    struct rec recs[32];
    unsigned int n = stream_records(recs, 32);
    const struct rec *r = find(recs, n, 1, 0);
    size_t name_len = sizeof("[kernel.kallsyms]_text_start");

    (void)state;
    assert_int_equal(r->misc, 1);                       /* kernel */
    assert_int_equal(u32_at(r->p, 0), UINT32_MAX);
    assert_int_equal(u32_at(r->p, 4), 0);
    assert_true(u64_at(r->p, 8) == 0xffffffff80000000ULL);
    assert_true(u64_at(r->p, 16) == 0x7fffffffULL);
    assert_true(u64_at(r->p, 24) == (uintptr_t)test_text);
    assert_string_equal((const char *)r->p + 32,
                        "[kernel.kallsyms]_text_start");

    /* The name padded to 8, then the 24-byte sample_id trailer. */
    assert_int_equal(r->size, 8 + 32 + ((name_len + 7) & ~7u) + 24);
    assert_int_equal(r, &recs[n - 1]);
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });
}

/* Events perf has no name for go as raw ones; the name still says. */
static void
test_header_event_types(void **state)
{
    struct perfmon_stream_desc desc = desc_default();
    struct perfmon_stream *stream;
    struct rec recs[32];

    (void)state;
    desc.generic = PERFMON_EV_CYCLE;
    desc.flags = PERFMON_EF_KERN;
    desc.freq = 0;
    desc.period = 12345;
    assert_int_equal(perfmon_stream_open(&stream, &desc), 0);
    stream_records(recs, 32);
    assert_int_equal(u32_at(recs[0].p, 0), 0);          /* hardware */
    assert_true(u64_at(recs[0].p, 8) == 0);             /* cycles */
    assert_true(u64_at(recs[0].p, 16) == 12345);        /* sample_period */
    assert_true(u64_at(recs[0].p, 40) == 0x140311);     /* exclude_user */
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });

    fake_uart_reset(true);
    desc.generic = PERFMON_EV_XCALL;
    assert_int_equal(perfmon_stream_open(&stream, &desc), 0);
    stream_records(recs, 32);
    assert_int_equal(u32_at(recs[0].p, 0), 4);          /* raw */
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });

    fake_uart_reset(true);
    desc.generic = -1;
    desc.raw_code = 0x1c2;
    assert_int_equal(perfmon_stream_open(&stream, &desc), 0);
    stream_records(recs, 32);
    assert_int_equal(u32_at(recs[0].p, 0), 4);
    assert_true(u64_at(recs[0].p, 8) == 0x1c2);
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });
}

/* ---- records ------------------------------------------------------------ */

static void
test_sample_in_perf_form(void **state)
{
    static const uint64_t ips[3] = { 0xffffffff80201234ULL,
                                     0xffffffff80205555ULL,
                                     0xffffffff80206666ULL };
    struct perfmon_stream *stream = open_default();
    uint64_t buf[32];
    struct rec recs[32];
    const struct rec *r;
    unsigned int n;

    (void)state;
    tally_sample(buf, desc_default().fields, 42, 5000000000ULL, 1, ips, 3);
    perfmon_stream_rec((const void *)buf, stream);
    n = stream_records(recs, 32);
    r = find(recs, n, 9, 0);
    assert_int_equal(r->misc, 1);                       /* kernel */
    assert_int_equal(r->size, 8 + 5 * 8 + 8 + 4 * 8);
    assert_true(u64_at(r->p, 0) == ips[0]);
    assert_int_equal(u32_at(r->p, 8), 42);              /* pid = tid */
    assert_int_equal(u32_at(r->p, 12), 42);
    assert_true(u64_at(r->p, 16) == 5000000000ULL);
    assert_int_equal(u32_at(r->p, 24), 1);
    assert_true(u64_at(r->p, 32) == 1000);
    assert_true(u64_at(r->p, 40) == 4);
    assert_true(u64_at(r->p, 48) == CONTEXT_KERNEL);
    assert_memory_equal(r->p + 56, ips, sizeof(ips));
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });
}

/* Without -g the chain is the ip alone: stack collapsers need one. */
static void
test_sample_without_chain_gets_one(void **state)
{
    struct perfmon_stream_desc desc = desc_default();
    struct perfmon_stream *stream;
    uint64_t buf[32];
    struct rec recs[32];
    const struct rec *r;

    (void)state;
    desc.fields &= ~PERFMON_SF_CALLCHAIN;
    assert_int_equal(perfmon_stream_open(&stream, &desc), 0);
    tally_sample(buf, desc.fields, 3, 1, 0, NULL, 0);
    perfmon_stream_rec((const void *)buf, stream);
    r = find(recs, stream_records(recs, 32), 9, 0);
    assert_true(u64_at(recs[0].p, 24) == 0x1a7);
    assert_true(u64_at(r->p, 40) == 2);
    assert_true(u64_at(r->p, 48) == CONTEXT_KERNEL);
    assert_true(u64_at(r->p, 56) == 0xffffffff80201234ULL);
    assert_int_equal(r->size, 8 + 8 * 8);
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });
}

static void
test_branch_stack(void **state)
{
    struct perfmon_stream_desc desc = desc_default();
    struct perfmon_stream *stream;
    uint64_t buf[32];
    size_t size;
    struct rec recs[32];
    const struct rec *r;
    unsigned int n;
    struct perfmon_branch br = { 0xffffffff80201000ULL,
                                 0xffffffff80202000ULL, PERFMON_BR_MISPRED };

    (void)state;
    desc.fields |= PERFMON_SF_BRANCH;
    desc.branch_filter = PERFMON_BRF_ANY | PERFMON_BRF_KERN;
    assert_int_equal(perfmon_stream_open(&stream, &desc), 0);
    size = tally_sample(buf, desc.fields & ~PERFMON_SF_BRANCH, 3, 1, 0,
                        NULL, 0);

    /* Append a one-entry branch stack to the Tally sample. */
    ((uint32_t *)&buf[1])[0] |= PERFMON_SF_BRANCH;
    buf[size / 8] = 1;
    memcpy(&buf[size / 8 + 1], &br, sizeof(br));
    ((struct perfmon_rec_hdr *)buf)->size = (uint16_t)(size + 8 + sizeof(br));
    perfmon_stream_rec((const void *)buf, stream);

    n = stream_records(recs, 32);
    assert_true(u64_at(recs[0].p, 24) == 0x9a7);
    assert_true(u64_at(recs[0].p, 72) == 0xa);
    assert_non_null(feature(recs, n, 15));
    r = find(recs, n, 9, 0);
    assert_true(u64_at(r->p, 64) == 1);
    assert_memory_equal(r->p + 72, &br, sizeof(br));
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });
}

/* Each filter bit becomes perf's PERF_SAMPLE_BRANCH_* bit. */
static void
test_branch_filter_type(void **state)
{
    static const struct {
        unsigned int filter;
        uint64_t type;
    } cases[] = {
        { PERFMON_BRF_ANY | PERFMON_BRF_USER | PERFMON_BRF_KERN, 0xb },
        { PERFMON_BRF_COND | PERFMON_BRF_CALL | PERFMON_BRF_KERN, 0x2402 },
        { PERFMON_BRF_ANY_CALL | PERFMON_BRF_ANY_RET | PERFMON_BRF_IND_CALL
          | PERFMON_BRF_IND_JMP | PERFMON_BRF_USER, 0x1071 },
    };
    struct rec recs[32];

    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct perfmon_stream_desc desc = desc_default();
        struct perfmon_stream *stream;

        desc.fields |= PERFMON_SF_BRANCH;
        desc.branch_filter = cases[i].filter;
        assert_int_equal(perfmon_stream_open(&stream, &desc), 0);
        stream_records(recs, 32);
        assert_true(u64_at(recs[0].p, 72) == cases[i].type);
        perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });
        fake_uart_reset(true);
    }
}

static void
test_comm_with_trailer(void **state)
{
    struct perfmon_stream *stream = open_default();
    struct rec recs[32];
    const struct rec *r;
    unsigned int n;

    (void)state;
    stream_comm(stream, 9, "spin");
    stream_comm(stream, 10, "");                        /* gone: left out */
    n = stream_records(recs, 32);
    r = find(recs, n, 3, 0);
    assert_int_equal(u32_at(r->p, 0), 9);
    assert_int_equal(u32_at(r->p, 4), 9);
    assert_string_equal((const char *)r->p + 8, "spin");
    assert_int_equal(r->size, 8 + 8 + 8 + 24);
    assert_int_equal(u32_at(r->p, 16), 9);              /* trailer */
    assert_int_equal(u32_at(r->p, 20), 9);
    assert_true(u64_at(r->p, 24) == 0);                 /* before samples */
    assert_int_equal(r, &recs[n - 1]);
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });
}

/* ---- several events ----------------------------------------------------- */

/*
 * Three events: cpu-clock leads {cpu-clock,cs}:S (its samples read both),
 * interrupts samples on its own.  On 2 CPUs, event E on CPU C is id
 * 1 + E * 2 + C.
 */
static const uint32_t test_reads[2] = { 0, 1 };

static struct perfmon_stream *
open_three(void)
{
    static struct perfmon_stream_desc descs[3];
    struct perfmon_stream *stream;

    descs[0] = desc_default();
    descs[0].fields |= PERFMON_SF_READ;
    descs[0].next = &descs[1];
    descs[0].nr_reads = 2;
    descs[0].reads = test_reads;
    descs[1] = desc_default();
    descs[1].event = "cs";
    descs[1].generic = PERFMON_EV_CONTEXT_SWITCH;
    descs[1].next = &descs[2];
    descs[2] = desc_default();
    descs[2].event = "interrupts/period=3/";
    descs[2].generic = -1;
    descs[2].raw_code = 4;
    descs[2].freq = 0;
    descs[2].period = 3;
    assert_int_equal(perfmon_stream_open(&stream, &descs[0]), 0);
    return stream;
}

/* An attr per event with an id per CPU, each named by its first id. */
static void
test_several_events_attrs_and_ids(void **state)
{
    static const uint64_t want_type[3] = { 0x101b7, 0x101b7, 0x101a7 };
    static const uint64_t want_format[3] = { 0xc, 0xc, 0 };
    static const char *const want_name[3] = { "cpu-clock", "cs",
                                              "interrupts/period=3/" };
    struct perfmon_stream *stream = open_three();
    struct rec recs[40];
    unsigned int n = stream_records(recs, 40);

    (void)state;

    for (unsigned int e = 0; e < 3; e++) {
        const struct rec *attr = &recs[2 * e], *name = &recs[2 * e + 1];

        assert_int_equal(attr->type, 64);
        assert_int_equal(attr->size, 8 + 128 + 2 * 8);
        assert_true(u64_at(attr->p, 24) == want_type[e]);
        assert_true(u64_at(attr->p, 32) == want_format[e]);
        assert_true(u64_at(attr->p, 128) == 1 + e * 2);
        assert_true(u64_at(attr->p, 136) == 2 + e * 2);
        assert_int_equal(name->type, 78);
        assert_true(u64_at(name->p, 8) == 1 + e * 2);
        assert_string_equal((const char *)name->p + 16, want_name[e]);
    }

    assert_true(u64_at(recs[4].p, 16) == 3);            /* its period */

    /* Records other than samples end with the identifier 0. */
    stream_comm(stream, 9, "spin");
    n = stream_records(recs, 40);
    assert_int_equal(find(recs, n, 3, 0)->size, 8 + 8 + 8 + 24 + 8);
    assert_true(u64_at(find(recs, n, 3, 0)->p, 40) == 0);
    assert_int_equal(find(recs, n, 1, 0)->size, 8 + 8 + 24 + 32 + 24 + 8);
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });
}

/*
 * A leader's sample reading its group, byte for byte as perf 6.1 parses
 * it: the identifier first, PERF_SAMPLE_READ (nr, then value and id of
 * each event, counted from the event's base on that CPU) between PERIOD
 * and CALLCHAIN; another event's sample with
 * its own id; a sample whose reads are not its event's is left out.
 */
static void
test_several_events_samples(void **state)
{
    static const uint64_t ip = 0xffffffff80201234ULL;
    struct perfmon_stream *stream = open_three();
    uint64_t buf[32], want[15];
    struct perfmon_rec_hdr *hdr = (void *)buf;
    struct rec recs[40];
    const struct rec *r;
    unsigned int n;
    size_t size;

    (void)state;
    size = tally_sample(buf, desc_default().fields | PERFMON_SF_READ, 42,
                        5000, 1, &ip, 1);
    assert_int_equal(size, 9 * 8);

    /* Tally's READ field after PERIOD: nr, then the values. */
    memmove(&buf[10], &buf[7], 2 * 8);
    buf[7] = 2;
    buf[8] = 123456;
    buf[9] = 77;
    hdr->size = 12 * 8;
    ((uint32_t *)&buf[1])[1] = 0;                       /* event 0 */
    perfmon_stream_rec(hdr, stream);

    want[0] = 9 | (1ULL << 32) | ((uint64_t)sizeof(want) << 48);
    want[1] = 1 + 0 * 2 + 1;                            /* identifier */
    want[2] = ip;
    want[3] = 42 | (42ULL << 32);
    want[4] = 5000;
    want[5] = 1;
    want[6] = 1000;
    want[7] = 2;                                        /* the group */
    want[8] = 1000;                     /* from the base: the period */
    want[9] = 1 + 0 * 2 + 1;
    want[10] = 0;                       /* a member's: nothing yet */
    want[11] = 1 + 1 * 2 + 1;
    want[12] = 2;                                       /* the chain */
    want[13] = CONTEXT_KERNEL;
    want[14] = ip;
    n = stream_records(recs, 40);
    r = find(recs, n, 9, 0);
    assert_int_equal(r->size, sizeof(want));
    assert_memory_equal(r->p - 8, want, sizeof(want));

    /* The next, on the same CPU: values from the same base. */
    buf[8] = 123456 + 2500;
    buf[9] = 77 + 6;
    perfmon_stream_rec(hdr, stream);
    n = stream_records(recs, 40);
    r = find(recs, n, 9, 1);
    assert_true(u64_at(r->p, 56) == 3500);
    assert_true(u64_at(r->p, 72) == 6);

    /* Event 2 on CPU 0: its own id, no reads. */
    tally_sample(buf, desc_default().fields, 42, 6000, 0, &ip, 1);
    ((uint32_t *)&buf[1])[1] = 2;
    perfmon_stream_rec(hdr, stream);

    /* Reads that are not event 0's, and an event past the last. */
    tally_sample(buf, desc_default().fields, 42, 7000, 0, &ip, 1);
    ((uint32_t *)&buf[1])[1] = 0;
    perfmon_stream_rec(hdr, stream);
    ((uint32_t *)&buf[1])[1] = 3;
    perfmon_stream_rec(hdr, stream);
    n = stream_records(recs, 40);
    r = find(recs, n, 9, 2);
    assert_true(u64_at(r->p, 0) == 1 + 2 * 2 + 0);
    assert_int_equal(r->size, 8 + 8 + 5 * 8 + 3 * 8);
    assert_int_equal(r, &recs[n - 1]);
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });
}

/* Reads of an event the recording does not have: nothing is opened. */
static void
test_several_events_bad_reads(void **state)
{
    static const uint32_t bad[1] = { 1 };
    struct perfmon_stream_desc desc = desc_default();
    struct perfmon_stream *stream;

    (void)state;
    desc.nr_reads = 1;
    desc.reads = bad;
    assert_int_equal(perfmon_stream_open(&stream, &desc), -EINVAL);
    desc.nr_reads = PERFMON_MAX_READS + 1;
    assert_int_equal(perfmon_stream_open(&stream, &desc), -EINVAL);
    assert_int_equal(perfmon_stream_open(&stream, &(struct perfmon_stream_desc){
        .event = "x", .generic = -1, .period = 1, .argc = 0, .argv = NULL,
    }), 0);
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });
}

/*
 * Lost samples as perf's LOST_SAMPLES; at the end, the losses the drain
 * never saw (the store was full), then SAMPLE_TIME with the first and last
 * sample times, whatever order the CPUs' samples came in.
 */
static void
test_lost_and_end(void **state)
{
    struct perfmon_stream *stream = open_default();
    struct perfmon_capture_info info = { .nr_samples = 2, .nr_lost = 10 };
    uint64_t buf[32];
    struct rec recs[32];
    const struct rec *r;
    unsigned int n;

    (void)state;
    tally_sample(buf, desc_default().fields, 1, 3000, 1, NULL, 0);
    perfmon_stream_rec((const void *)buf, stream);
    tally_sample(buf, desc_default().fields, 1, 2000, 0, NULL, 0);
    perfmon_stream_rec((const void *)buf, stream);
    stream_lost(stream, 1, 4);
    assert_int_equal(perfmon_stream_close(stream, &info), 0);

    n = stream_records(recs, 32);
    r = find(recs, n, 13, 0);
    assert_true(u64_at(r->p, 0) == 4);
    assert_int_equal(u32_at(r->p, 24), 1);              /* its CPU */
    r = find(recs, n, 13, 1);
    assert_true(u64_at(r->p, 0) == 6);
    r = &recs[n - 1];
    assert_int_equal(r->type, 80);
    assert_true(u64_at(r->p, 0) == 21);
    assert_true(u64_at(r->p, 8) == 2000);
    assert_true(u64_at(r->p, 16) == 3000);
}

/*
 * PERF_RECORD_SWITCH_CPU_WIDE as include/uapi/linux/perf_event.h lays it
 * out, with the sample_id of an attr whose sample_type has TID, TIME and
 * CPU (the stream's).
 */
struct perf_switch_cpu_wide {
    struct perf_event_header header;
    uint32_t next_prev_pid;
    uint32_t next_prev_tid;
    struct {
        uint32_t pid, tid;
        uint64_t time;
        uint32_t cpu, res;
    } sample_id;
};

/* The word of perf_event_attr's flag bits (after read_format). */
static uint64_t
perf_flag_word(const struct perf_event_attr *attr)
{
    uint64_t word;

    memcpy(&word, (const char *)attr + offsetof(struct perf_event_attr,
                                                read_format) + 8,
           sizeof(word));
    return word;
}

/*
 * With switch events the attr sets perf's context_switch bit, and a
 * switch record becomes perf's PERF_RECORD_SWITCH_CPU_WIDE byte for byte
 * (checked against the host's linux/perf_event.h): misc SWITCH_OUT and
 * SWITCH_OUT_PREEMPT as given, the thread switched to, the sample_id of
 * the thread it is about; the chain stays behind, and a damaged record is
 * left out.
 */
static void
test_switch_cpu_wide(void **state)
{
    struct perfmon_stream_desc desc = desc_default();
    uint64_t buf[8] = { 0 };
    struct perfmon_switch_rec *rec = (void *)buf;
    struct perf_event_attr cs = { .context_switch = 1 };
    struct perf_switch_cpu_wide want = {
        .header = { .type = PERF_RECORD_SWITCH_CPU_WIDE,
                    .misc = PERF_RECORD_MISC_SWITCH_OUT
                            | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT,
                    .size = sizeof(want) },
        .next_prev_pid = 10, .next_prev_tid = 10,
        .sample_id = { .pid = 9, .tid = 9, .time = 5000, .cpu = 1 },
    };
    struct perfmon_stream *stream;
    struct rec recs[32];
    const struct rec *r;
    unsigned int n;

    (void)state;
    desc.switch_events = true;
    assert_int_equal(perfmon_stream_open(&stream, &desc), 0);
    rec->hdr.type = PERFMON_REC_SWITCH;
    rec->hdr.size = sizeof(*rec) + 2 * sizeof(uint64_t);
    rec->hdr.misc = PERFMON_SWITCH_OUT | PERFMON_SWITCH_PREEMPT;
    rec->tid = 9;
    rec->other = 10;
    rec->time_ns = 5000;
    rec->cpu = 1;
    rec->nr_ips = 2;
    rec->ips[0] = 0xffffffff80201000ULL;
    rec->ips[1] = 0xffffffff80202000ULL;
    perfmon_stream_rec(&rec->hdr, stream);
    rec->hdr.size -= 8;                                 /* torn */
    perfmon_stream_rec(&rec->hdr, stream);
    n = stream_records(recs, 32);
    r = find(recs, n, 64, 0);
    assert_true((u64_at(r->p, 40) & perf_flag_word(&cs))
                == perf_flag_word(&cs));
    r = find(recs, n, PERF_RECORD_SWITCH_CPU_WIDE, 0);
    assert_int_equal(r->size, sizeof(want));
    assert_memory_equal(r->p - 8, &want, sizeof(want));
    assert_int_equal(r, &recs[n - 1]);
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });

    /* Without them, the attr says none. */
    fake_uart_reset(true);
    stream = open_default();
    n = stream_records(recs, 32);
    r = find(recs, n, 64, 0);
    assert_false(u64_at(r->p, 40) & perf_flag_word(&cs));
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });
}

/* Throttle records and damaged samples do not reach perf. */
static void
test_other_records_left_out(void **state)
{
    struct perfmon_stream *stream = open_default();
    uint64_t buf[32];
    size_t before, after;

    (void)state;
    fake_uart_com2_data(&before);
    buf[0] = 0;
    ((struct perfmon_rec_hdr *)buf)->type = PERFMON_REC_THROTTLE;
    ((struct perfmon_rec_hdr *)buf)->size = 24;
    perfmon_stream_rec((const void *)buf, stream);
    tally_sample(buf, desc_default().fields, 1, 1, 0, NULL, 0);
    ((struct perfmon_rec_hdr *)buf)->size -= 8;          /* torn */
    perfmon_stream_rec((const void *)buf, stream);
    fake_uart_com2_data(&after);
    assert_int_equal(before, after);
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });
}

/* ---- failures ----------------------------------------------------------- */

static void
test_no_com2(void **state)
{
    struct perfmon_stream_desc desc = desc_default();
    struct perfmon_stream *stream;
    size_t size;

    (void)state;
    fake_uart_reset(false);
    assert_int_equal(perfmon_stream_open(&stream, &desc), -ENODEV);
    fake_uart_com2_data(&size);
    assert_int_equal(size, 0);

    /* Nothing was left open. */
    fake_uart_reset(true);
    assert_int_equal(perfmon_stream_open(&stream, &desc), 0);
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });
}

static void
test_one_stream_at_a_time(void **state)
{
    struct perfmon_stream_desc desc = desc_default();
    struct perfmon_stream *stream = open_default(), *other;

    (void)state;
    assert_int_equal(perfmon_stream_open(&other, &desc), -EBUSY);
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });
    assert_int_equal(perfmon_stream_open(&other, &desc), 0);
    perfmon_stream_close(other, &(struct perfmon_capture_info){ 0 });
}

static void
test_port_dead_at_open(void **state)
{
    struct perfmon_stream_desc desc = desc_default();
    struct perfmon_stream *stream;

    (void)state;
    fake_uart_fail_after(20);
    assert_int_equal(perfmon_stream_open(&stream, &desc), -EIO);
    fake_uart_reset(true);
    assert_int_equal(perfmon_stream_open(&stream, &desc), 0);
    perfmon_stream_close(stream, &(struct perfmon_capture_info){ 0 });
}

/* A port that stops mid-way: nothing more is sent, close says so. */
static void
test_port_dies_mid_stream(void **state)
{
    struct perfmon_stream *stream = open_default();
    uint64_t buf[32];
    size_t at_fail, size;

    (void)state;
    fake_uart_com2_data(&at_fail);
    fake_uart_fail_after(30);
    tally_sample(buf, desc_default().fields, 1, 1, 0, NULL, 0);
    perfmon_stream_rec((const void *)buf, stream);
    fake_uart_fail_after(1000);
    perfmon_stream_rec((const void *)buf, stream);
    assert_int_equal(perfmon_stream_close(stream,
                                          &(struct perfmon_capture_info){ 0 }),
                     -EIO);
    fake_uart_com2_data(&size);
    assert_int_equal(size, at_fail + 30);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_several_events_attrs_and_ids,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_several_events_samples, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_several_events_bad_reads, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_hash_is_fnv1a_64, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_header_names_the_event, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_header_carries_the_command_line,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_header_cmdline_too_long_is_cut,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_header_maps_the_kernel, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_header_event_types, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sample_in_perf_form, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_sample_without_chain_gets_one,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_branch_stack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_branch_filter_type, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_switch_cpu_wide, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_comm_with_trailer, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_lost_and_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_records_left_out, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_no_com2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_stream_at_a_time, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_port_dead_at_open, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_port_dies_mid_stream, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
