/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of kern/perfmon/perfmon_ring.c, the per-CPU sample rings: records come out
 * whole and in order across the end of the data, a full ring drops and
 * counts records and never overwrites one, a producer interrupted by
 * another (an NMI in the middle of a record) publishes nothing until the
 * outer one is done (also when it lands after the outer one published),
 * and a consumer on another CPU interleaved with the producer's steps
 * never sees a torn record.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kern/error.h"
#include "kern/macros.h"

/*
 * The ring is #included (its header too, whose inline producer code the
 * hook must reach), each of its stores of the nesting count going
 * through store_hook first: an interrupting producer may land there, in
 * the one window no call of the ring's reaches (after the outermost
 * producer published, before it marks itself done).
 */
static void store_hook(const void *p, uint64_t value);

/*
 * And each compare-and-swap of head through cas_hook first: a producer
 * interrupting perfmon_ring_reserve() between its read of head and its
 * claim lands there.  (The builtin named inside its own macro is not
 * expanded again.)
 */
static void cas_hook(void);

#define __atomic_compare_exchange_n(...)                                   \
    (cas_hook(), __atomic_compare_exchange_n(__VA_ARGS__))

#undef WRITE_ONCE
#define WRITE_ONCE(x, v)                                                   \
    do {                                                                   \
        store_hook(&(x), (uint64_t)(v));                                   \
        *(volatile __typeof__(x) *)&(x) = (v);                             \
    } while (0)

#include "kern/perfmon/perfmon_ring.c"

#define TYPE_TEST   42

static uint64_t ring_data[64];          /* 512 bytes */
static struct perfmon_ring ring;
static unsigned char out[1024];

static void
ring_setup(void)
{
    memset(ring_data, 0xee, sizeof(ring_data));
    assert_int_equal(perfmon_ring_init(&ring, ring_data, sizeof(ring_data)),
                     0);
}

/* A record of payload n bytes, every byte seq + its index. */
static bool
produce(unsigned int seq, size_t n)
{
    struct perfmon_ring_txn txn;

    if (!perfmon_ring_begin(&ring, TYPE_TEST, seq, n, &txn)) {
        return false;
    }

    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)(seq + i);

        perfmon_ring_put(&ring, &txn, &b, 1);
    }

    perfmon_ring_commit(&ring, &txn);
    return true;
}

/* The next record must be seq with n payload bytes, intact. */
static void
consume(unsigned int seq, size_t n)
{
    const struct perfmon_rec_hdr *hdr = (const void *)out;
    size_t size = perfmon_ring_pop(&ring, out, sizeof(out));

    assert_int_equal(size, (sizeof(*hdr) + n + 7) & ~(size_t)7);
    assert_int_equal(hdr->type, TYPE_TEST);
    assert_int_equal(hdr->size, size);
    assert_int_equal(hdr->misc, seq);

    for (size_t i = 0; i < n; i++) {
        assert_int_equal(out[sizeof(*hdr) + i], (unsigned char)(seq + i));
    }

    /* Padding is zeroed, not stale data. */
    for (size_t i = sizeof(*hdr) + n; i < size; i++) {
        assert_int_equal(out[i], 0);
    }
}

static void
test_init(void **state)
{
    (void)state;
    assert_int_equal(perfmon_ring_init(NULL, ring_data, 512), -EINVAL);
    assert_int_equal(perfmon_ring_init(&ring, NULL, 512), -EINVAL);
    assert_int_equal(perfmon_ring_init(&ring, ring_data, 500), -EINVAL);
    assert_int_equal(perfmon_ring_init(&ring, ring_data, 4), -EINVAL);
    ring_setup();
    assert_int_equal(perfmon_ring_pop(&ring, out, sizeof(out)), 0);
    assert_true(perfmon_ring_used(&ring) == 0);
}

/* Many records of odd sizes go round the 512-byte ring several times. */
static void
test_wrap_around(void **state)
{
    (void)state;
    ring_setup();

    for (unsigned int seq = 0; seq < 400; seq++) {
        size_t n = 1 + (seq * 37) % 90;

        assert_true(produce(seq, n));

        /* Keep up to two records in the ring between pops. */
        if (seq % 3 == 2) {
            consume(seq - 2, 1 + ((seq - 2) * 37) % 90);
            consume(seq - 1, 1 + ((seq - 1) * 37) % 90);
            consume(seq, n);
        }
    }

    consume(399, 1 + (399 * 37) % 90);
    assert_int_equal(perfmon_ring_pop(&ring, out, sizeof(out)), 0);
    assert_true(perfmon_ring_lost(&ring) == 0);
}

/* Full: the records that do not fit are dropped and counted, whole. */
static void
test_full_drops_and_counts(void **state)
{
    unsigned int kept = 0;

    (void)state;
    ring_setup();

    /* 64-byte records (8 header + 56): 8 fit in 512 bytes. */
    for (unsigned int seq = 0; seq < 20; seq++) {
        kept += produce(seq, 56);
    }

    assert_int_equal(kept, 8);
    assert_true(perfmon_ring_lost(&ring) == 12);
    assert_true(perfmon_ring_used(&ring) == 512);

    /* The first eight are intact: nothing was overwritten. */
    consume(0, 56);

    /* Room for exactly one more. */
    assert_true(produce(100, 56));
    assert_false(produce(101, 1));
    assert_true(perfmon_ring_lost(&ring) == 13);

    for (unsigned int seq = 1; seq < 8; seq++) {
        consume(seq, 56);
    }

    consume(100, 56);

    /* Too big ever, or than the ring: refused and counted. */
    assert_false(produce(7, 600));
    assert_false(produce(7, PERFMON_RING_MAX_REC));
    assert_true(perfmon_ring_lost(&ring) == 15);
}

/*
 * An NMI lands in the middle of a record: it writes a whole record of its
 * own, which waits until the interrupted one is complete, and both come
 * out in the order they were reserved.
 */
static void
test_nested_producer(void **state)
{
    struct perfmon_ring_txn outer;
    unsigned char b;

    (void)state;
    ring_setup();
    assert_true(produce(1, 10));

    assert_true(perfmon_ring_begin(&ring, TYPE_TEST, 2, 20, &outer));

    for (size_t i = 0; i < 5; i++) {
        b = (unsigned char)(2 + i);
        perfmon_ring_put(&ring, &outer, &b, 1);
    }

    /* The interrupting producer: nested, it publishes nothing. */
    assert_true(produce(3, 30));
    consume(1, 10);
    assert_int_equal(perfmon_ring_pop(&ring, out, sizeof(out)), 0);

    /* A producer nested two deep, failing for lack of room. */
    assert_false(produce(4, 480));
    assert_int_equal(perfmon_ring_pop(&ring, out, sizeof(out)), 0);

    for (size_t i = 5; i < 20; i++) {
        b = (unsigned char)(2 + i);
        perfmon_ring_put(&ring, &outer, &b, 1);
    }

    perfmon_ring_commit(&ring, &outer);
    consume(2, 20);
    consume(3, 30);
    assert_int_equal(perfmon_ring_pop(&ring, out, sizeof(out)), 0);
    assert_true(perfmon_ring_lost(&ring) == 1);
}

/*
 * The outermost producer read head, published, and was interrupted before
 * it marked itself done: the interrupting record is published anyway,
 * by whichever of the two finishes last.
 */
static void
test_publish_race(void **state)
{
    (void)state;
    ring_setup();

    /*
     * Simulate the window: the outer producer is inside its final steps
     * (nest still 1) when a record is reserved and committed.
     */
    ring.nest = 1;
    assert_true(produce(9, 16));
    assert_int_equal(perfmon_ring_pop(&ring, out, sizeof(out)), 0);
    ring.nest = 0;
    assert_true(produce(10, 8));
    consume(9, 16);
    consume(10, 8);
}

/* The record store_hook produces (seq, size), once; 0: none. */
static unsigned int hook_seq;
static size_t hook_size;

static void
store_hook(const void *p, uint64_t value)
{
    if (hook_seq != 0 && p == &ring.nest && value == 0) {
        unsigned int seq = hook_seq;

        hook_seq = 0;
        assert_true(produce(seq, hook_size));
    }
}

/*
 * A record reserved by a producer interrupting the outermost one after
 * its publish and before its exit is published once both are done.
 */
static void
test_reserved_after_publish(void **state)
{
    (void)state;
    ring_setup();
    hook_seq = 11;
    hook_size = 24;
    assert_true(produce(10, 8));
    assert_int_equal(hook_seq, 0);
    consume(10, 8);
    consume(11, 24);
    assert_int_equal(perfmon_ring_pop(&ring, out, sizeof(out)), 0);
}

/* The consumer, on another CPU, pops between every step of a producer. */
static void
test_consumer_interleaved(void **state)
{
    struct perfmon_ring_txn txn;

    (void)state;
    ring_setup();

    for (unsigned int seq = 0; seq < 200; seq++) {
        size_t n = 1 + seq % 50;

        assert_true(perfmon_ring_begin(&ring, TYPE_TEST, seq, n, &txn));
        assert_int_equal(perfmon_ring_pop(&ring, out, sizeof(out)), 0);

        for (size_t i = 0; i < n; i++) {
            unsigned char b = (unsigned char)(seq + i);

            perfmon_ring_put(&ring, &txn, &b, 1);
            assert_int_equal(perfmon_ring_pop(&ring, out, sizeof(out)), 0);
        }

        perfmon_ring_commit(&ring, &txn);
        consume(seq, n);
    }
}

/* A buffer too small leaves the record where it is. */
static void
test_pop_small_buffer(void **state)
{
    (void)state;
    ring_setup();
    assert_true(produce(5, 100));
    assert_int_equal(perfmon_ring_pop(&ring, out, 16), 112);
    consume(5, 100);
}

/* A buffer of exactly the record's size takes it. */
static void
test_pop_exact_buffer(void **state)
{
    (void)state;
    ring_setup();
    assert_true(produce(5, 100));
    assert_true(produce(6, 8));
    assert_int_equal(perfmon_ring_pop(&ring, out, 112), 112);
    consume(6, 8);
}

/* Dropped: the next record comes next; the size alone can be asked. */
static void
test_drop(void **state)
{
    (void)state;
    ring_setup();
    assert_int_equal(perfmon_ring_drop(&ring), 0);
    assert_true(produce(1, 100));
    assert_true(produce(2, 10));
    assert_int_equal(perfmon_ring_pop(&ring, NULL, 0), 112);
    assert_int_equal(perfmon_ring_drop(&ring), 112);
    consume(2, 10);
    assert_int_equal(perfmon_ring_drop(&ring), 0);
    assert_int_equal(perfmon_ring_used(&ring), 0);
}

/* ---- records written in place ---------------------------------------------- */

/* 512 bytes and 128 spare, with a guard word after them. */
static uint64_t place_data[64 + 16 + 1];

static void
place_setup(void)
{
    memset(place_data, 0xee, sizeof(place_data));
    assert_int_equal(perfmon_ring_init_spare(&ring, place_data, 512, 128),
                     0);
}

/*
 * A record of payload n bytes (n a multiple of 8) written in place, every
 * byte seq + its index as produce() writes them; false when it did not
 * fit.  nested, when not NULL, runs after the words are stored and before
 * the close, as an interrupting producer would, once.
 */
static bool
produce_in_place(unsigned int seq, size_t n, void (*nested)(void))
{
    struct perfmon_ring_txn txn;
    unsigned char *rec;
    uint64_t size = 8 + n;

    do {
        rec = perfmon_ring_open(&ring, &txn);

        if (txn.end - txn.pos < size) {
            perfmon_ring_cancel(&ring);
            return false;
        }

        *(uint64_t *)rec = perfmon_ring_hdr_word(TYPE_TEST, size, seq);

        for (size_t i = 0; i < n; i++) {
            rec[8 + i] = (unsigned char)(seq + i);
        }

        if (nested != NULL) {
            nested();
            nested = NULL;
        }
    } while (!perfmon_ring_close(&ring, &txn, size));

    return true;
}

/*
 * A record reserved after the publish of the outermost producer as above,
 * that one writing in place (perfmon_ring_close()).
 */
static void
test_in_place_reserved_after_publish(void **state)
{
    (void)state;
    ring_setup();
    hook_seq = 11;
    hook_size = 24;
    assert_true(produce_in_place(10, 8, NULL));
    assert_int_equal(hook_seq, 0);
    consume(10, 8);
    consume(11, 24);
    assert_int_equal(perfmon_ring_pop(&ring, out, sizeof(out)), 0);
}

static void
test_in_place_init(void **state)
{
    (void)state;
    assert_int_equal(perfmon_ring_init_spare(&ring, place_data, 512, 12),
                     -EINVAL);
    assert_int_equal(perfmon_ring_init_spare(&ring, place_data, 500, 128),
                     -EINVAL);
    place_setup();
    assert_true(ring.spare == 128);
}

/* A record of payload n written by one of the ways in place (seq as above). */
typedef bool (*produce_fn_t)(unsigned int seq, size_t n);

static bool
produce_in_place_alone(unsigned int seq, size_t n)
{
    return produce_in_place(seq, n, NULL);
}

/*
 * Records written in place by produce_fn go round the ring, cut by its
 * end at every 8-byte point, and come out as records copied in do
 * (produce()): those past the end lie in one piece, in the spare.  The
 * spare's end is never passed.
 */
static void
check_across_end(produce_fn_t produce_fn)
{
    bool cut[16] = { false };
    uint32_t lcg = 7;
    size_t n = 0, prev_n;

    place_setup();

    for (unsigned int seq = 0; seq < 1000; seq++) {
        uint64_t off = ring.head % 512;

        prev_n = n;
        lcg = lcg * 1103515245 + 12345;
        n = 8 * (1 + (lcg >> 24) % 15);
        assert_true(produce_fn(seq, n));

        if (off + 8 + n > 512) {
            cut[(512 - off) / 8] = true;
        }

        /* Two records in the ring at times, one at others. */
        if (seq % 2 == 1) {
            consume(seq - 1, prev_n);
            consume(seq, n);
        }
    }

    for (unsigned int w = 1; w < 16; w++) {
        assert_true(cut[w]);
    }

    assert_true(place_data[64 + 16] == 0xeeeeeeeeeeeeeeeeULL);
    assert_true(perfmon_ring_lost(&ring) == 0);
}

static void
test_in_place_across_end(void **state)
{
    (void)state;
    check_across_end(produce_in_place_alone);
}

/*
 * Full: a record produce_fn writes in place is refused and counted, as a
 * copied one is dropped; nothing is overwritten.
 */
static void
check_full(produce_fn_t produce_fn)
{
    place_setup();

    for (unsigned int seq = 0; seq < 8; seq++) {
        assert_true(produce_fn(seq, 56));
    }

    assert_false(produce_fn(8, 8));
    assert_true(perfmon_ring_lost(&ring) == 1);
    assert_int_equal(ring.nest, 0);
    consume(0, 56);
    assert_true(produce_fn(9, 56));
    assert_false(produce_fn(10, 0));
    assert_true(perfmon_ring_lost(&ring) == 2);

    for (unsigned int seq = 1; seq < 8; seq++) {
        consume(seq, 56);
    }

    consume(9, 56);
}

static void
test_in_place_full(void **state)
{
    (void)state;
    check_full(produce_in_place_alone);
}

static void
nested_copy(void)
{
    assert_true(produce(50, 20));
}

static void
nested_in_place(void)
{
    assert_true(produce_in_place(60, 24, nested_copy));
}

/*
 * An interrupting producer takes the place the outer one was writing:
 * the outer close fails and it writes again after the interrupting
 * record, which stays unpublished until the outer one is done.
 */
static void
test_in_place_interrupted(void **state)
{
    (void)state;
    place_setup();
    assert_true(produce_in_place(1, 16, NULL));
    consume(1, 16);

    /* Two deep: the in-place one interrupted by a copied one. */
    assert_true(produce_in_place(2, 40, nested_in_place));
    consume(50, 20);
    consume(60, 24);
    consume(2, 40);
    assert_int_equal(perfmon_ring_pop(&ring, out, sizeof(out)), 0);

    /* Near the end: the outer record moves over it, still whole. */
    while (ring.head % 512 < 460) {
        assert_true(produce(7, 8));
        consume(7, 8);
    }

    assert_true(produce_in_place(3, 64, nested_copy));
    consume(50, 20);
    consume(3, 64);
    assert_true(perfmon_ring_lost(&ring) == 0);
}

/* ---- records reserved, then stored ---------------------------------------- */

/* The record cas_hook produces in place (seq, payload size), once; 0: none. */
static unsigned int cas_seq;
static size_t cas_size;

static bool produce_reserved(unsigned int seq, size_t n);

static void
cas_hook(void)
{
    if (cas_seq != 0) {
        unsigned int seq = cas_seq;

        cas_seq = 0;
        assert_true(produce_reserved(seq, cas_size));
    }
}

/*
 * A record of payload n bytes (n a multiple of 8) reserved and stored in
 * place, every byte seq + its index as produce() writes them; false when
 * it did not fit.
 */
static bool
produce_reserved(unsigned int seq, size_t n)
{
    uint64_t size = 8 + n, off;
    unsigned char *rec;

    if (!perfmon_ring_reserve(&ring, size, &off)) {
        return false;
    }

    rec = (unsigned char *)&ring.data[off];
    *(uint64_t *)rec = perfmon_ring_hdr_word(TYPE_TEST, size, seq);

    for (size_t i = 0; i < n; i++) {
        rec[8 + i] = (unsigned char)(seq + i);
    }

    perfmon_ring_publish(&ring);
    return true;
}

static void
test_reserved_across_end(void **state)
{
    (void)state;
    check_across_end(produce_reserved);
}

/*
 * Records copied in and written in place by turns, in a ring with spare,
 * cut by its end at every 8-byte point: the copied ones in one piece into
 * the spare when they fit there, wrapped to the start when they are
 * longer (past 128 bytes), as the consumer reads them; all come out
 * intact, in order, and the spare's end is never passed.
 */
/*
 * The oldest record in place: none in an empty ring; where it lies when
 * in one piece, in the spare too, with the bytes a pop copies; NULL with
 * its size when it wraps (longer than the spare); unchanged by the
 * records written after it, until a drop consumes it.
 */
static void
test_front(void **state)
{
    unsigned char copy[256];
    const unsigned char *rec;
    size_t size;
    uint32_t lcg = 5;
    bool seen[2] = { false, false };

    (void)state;
    place_setup();
    assert_null(perfmon_ring_front(&ring, &size));
    assert_int_equal(size, 0);

    for (unsigned int seq = 0; seq < 1000; seq++) {
        uint64_t off = ring.tail % 512;
        size_t len = 1 + ((lcg = lcg * 1103515245 + 12345) >> 20) % 240;

        assert_true(produce(seq, len));
        rec = perfmon_ring_front(&ring, &size);
        assert_int_equal(size, (8 + len + 7) & ~(size_t)7);

        if (off + size > 512 + 128) {
            assert_null(rec);
            seen[0] = true;
        } else {
            assert_true(rec == (const unsigned char *)place_data + off);
            memcpy(copy, rec, size);
            seen[1] |= (off + size > 512);
        }

        assert_true(produce(seq + 1, 8));

        if (rec != NULL) {
            assert_int_equal(perfmon_ring_pop(&ring, out, sizeof(out)), size);
            assert_memory_equal(out, copy, size);
        } else {
            assert_int_equal(perfmon_ring_drop(&ring), size);
        }

        assert_int_equal(perfmon_ring_drop(&ring), 16);
    }

    assert_true(seen[0] && seen[1]);
    assert_null(perfmon_ring_front(&ring, &size));
    assert_int_equal(size, 0);
}

static void
test_mixed_across_end(void **state)
{
    bool cut[2][32] = { { false } };
    uint32_t lcg = 11;
    size_t n[2] = { 0, 0 };

    (void)state;
    place_setup();

    for (unsigned int seq = 0; seq < 2000; seq++) {
        uint64_t off = ring.head % 512;
        size_t len;

        lcg = lcg * 1103515245 + 12345;

        if (seq % 2 == 0) {
            len = 1 + (lcg >> 20) % 240;        /* up to 248 bytes */
            assert_true(produce(seq, len));
        } else {
            len = 8 * (1 + (lcg >> 24) % 15);
            assert_true(produce_in_place(seq, len, NULL));
        }

        if (off + 8 + len > 512 && (512 - off) / 8 < 32) {
            cut[8 + len > 128][(512 - off) / 8] = true;
        }

        n[seq % 2] = len;

        if (seq % 2 == 1) {
            consume(seq - 1, n[0]);
            consume(seq, n[1]);
        }
    }

    for (unsigned int w = 1; w < 16; w++) {
        assert_true(cut[0][w] && cut[1][w]);
    }

    assert_true(place_data[64 + 16] == 0xeeeeeeeeeeeeeeeeULL);
    assert_true(perfmon_ring_lost(&ring) == 0);
}

static void
test_reserved_full(void **state)
{
    (void)state;
    check_full(produce_reserved);
}

/*
 * A producer interrupting the reservation between its read of head and
 * its claim: the claim fails and is made again after the interrupting
 * record, which is published with it, first; one interrupting it after
 * the claim (in the nesting count's store of its publish) comes after
 * it.  Also near the end of the data, where the outer record is cut.
 */
static void
test_reserved_interrupted(void **state)
{
    (void)state;
    place_setup();
    cas_seq = 21;
    cas_size = 32;
    assert_true(produce_reserved(20, 16));
    assert_int_equal(cas_seq, 0);
    consume(21, 32);
    consume(20, 16);
    assert_int_equal(perfmon_ring_pop(&ring, out, sizeof(out)), 0);

    hook_seq = 23;
    hook_size = 8;
    assert_true(produce_reserved(22, 24));
    assert_int_equal(hook_seq, 0);
    consume(22, 24);
    consume(23, 8);

    while (ring.head % 512 < 440) {
        assert_true(produce_reserved(7, 8));
        consume(7, 8);
    }

    cas_seq = 25;
    cas_size = 16;
    assert_true(produce_reserved(24, 64));
    consume(25, 16);
    consume(24, 64);

    /* Room for the interrupting record only: the outer one is lost. */
    while (512 - (ring.head - ring.tail) > 40) {
        assert_true(produce_reserved(7, 8));
    }

    cas_seq = 27;
    cas_size = 16;
    assert_false(produce_reserved(26, 16));
    assert_true(perfmon_ring_lost(&ring) == 1);

    while (perfmon_ring_used(&ring) > 24) {
        consume(7, 8);
    }

    consume(27, 16);
    assert_int_equal(perfmon_ring_pop(&ring, out, sizeof(out)), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_wrap_around),
        cmocka_unit_test(test_full_drops_and_counts),
        cmocka_unit_test(test_nested_producer),
        cmocka_unit_test(test_publish_race),
        cmocka_unit_test(test_reserved_after_publish),
        cmocka_unit_test(test_in_place_reserved_after_publish),
        cmocka_unit_test(test_consumer_interleaved),
        cmocka_unit_test(test_pop_small_buffer),
        cmocka_unit_test(test_pop_exact_buffer),
        cmocka_unit_test(test_drop),
        cmocka_unit_test(test_front),
        cmocka_unit_test(test_in_place_init),
        cmocka_unit_test(test_in_place_across_end),
        cmocka_unit_test(test_in_place_full),
        cmocka_unit_test(test_in_place_interrupted),
        cmocka_unit_test(test_reserved_across_end),
        cmocka_unit_test(test_mixed_across_end),
        cmocka_unit_test(test_reserved_full),
        cmocka_unit_test(test_reserved_interrupted),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
