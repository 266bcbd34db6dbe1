/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the kernel heap (kern/kmem.c) on top of the fake page
 * allocator (tests/unit/fakes/pmem.c): size classes and alignment, zeroing
 * and poisoning, large objects, exhaustion, misuse detection, and a random
 * alloc/free stress that checks no object overwrites another.  Every test
 * must give back all it took: the teardown checks the heap is empty.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/param.h"

/* Controls of tests/unit/fakes/pmem.c. */
void fake_pmem_set_limit(size_t npages);
size_t fake_pmem_nr_allocated(void);
void fake_pmem_reset(void);

static size_t failures_at_start;

static struct kmem_stats
stats(void)
{
    struct kmem_stats s;

    kmem_stats_get(&s);
    return s;
}

static void
assert_heap_empty(void)
{
    struct kmem_stats s = stats();

    assert_int_equal(s.nr_allocs, 0);
    assert_int_equal(s.bytes_in_use, 0);
    assert_int_equal(s.nr_pages, 0);
    assert_int_equal(fake_pmem_nr_allocated(), 0);
}

/* Each test starts afresh, so that a failed one cannot fail the next ones. */
static int
setup(void **state)
{
    (void)state;
    fake_pmem_reset();
    kmem_reset();
    assert_heap_empty();
    failures_at_start = stats().nr_failures;
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    assert_heap_empty();
    return 0;
}

/* The size class a request maps to. */
static size_t
class_of(size_t size)
{
    size_t c = 16;

    while (c < size) {
        c <<= 1;
    }

    return c;
}

static void
test_every_class(void **state)
{
    static const size_t sizes[] = {
        1, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129,
        255, 256, 257, 511, 512, 513, 1000, 1023, 1024, 1025, 2047, 2048,
    };
    struct kmem_stats s;
    unsigned char *p;
    size_t i;

    (void)state;

    for (i = 0; i < ARRAY_SIZE(sizes); i++) {
        p = kmem_alloc(sizes[i]);
        assert_non_null(p);
        assert_true(P2ALIGNED((uintptr_t)p, class_of(sizes[i])));
        /* Small objects never start a page: the slab header is there. */
        assert_false(P2ALIGNED((uintptr_t)p, PAGE_SIZE));
        memset(p, 0xa5, sizes[i]);

        s = stats();
        assert_int_equal(s.nr_allocs, 1);
        assert_int_equal(s.bytes_in_use, sizes[i]);
        assert_int_equal(s.nr_pages, 1);

        kmem_free(p, sizes[i]);
        /* The empty slab went back to pmem. */
        assert_heap_empty();
    }
}

static void
test_many_objects_share_slabs(void **state)
{
    enum { N = 600 };
    static unsigned char *objs[N];
    size_t sizes[] = { 16, 48, 200, 1024, 2048 };
    struct kmem_stats s;
    size_t i, j, k, size;

    (void)state;

    for (k = 0; k < ARRAY_SIZE(sizes); k++) {
        size = sizes[k];

        for (i = 0; i < N; i++) {
            objs[i] = kmem_alloc(size);
            assert_non_null(objs[i]);
            memset(objs[i], (int)i, size);
        }

        s = stats();
        assert_int_equal(s.nr_allocs, N);
        assert_int_equal(s.bytes_in_use, N * size);
        /* Small objects are packed: at most one object per page is lost. */
        assert_true(s.nr_pages * (PAGE_SIZE / class_of(size) - 1) >= N);
        assert_true(s.nr_pages <= N);
        assert_int_equal(fake_pmem_nr_allocated(), s.nr_pages);

        for (i = 0; i < N; i++) {
            for (j = 0; j < size; j++) {
                assert_int_equal(objs[i][j], (unsigned char)i);
            }
        }

        /* Free in an order that empties slabs in the middle of lists. */
        for (i = 0; i < N; i += 2) {
            kmem_free(objs[i], size);
        }

        for (i = 1; i < N; i += 2) {
            kmem_free(objs[i], size);
        }

        assert_heap_empty();
    }
}

static void
test_zalloc_zeroes(void **state)
{
    unsigned char *keep, *p;
    size_t sizes[] = { 24, 512, 2048, 3 * PAGE_SIZE + 5 };
    size_t i, j;

    (void)state;

    for (i = 0; i < ARRAY_SIZE(sizes); i++) {
        /* Keep the slab alive so the dirty slot is reused. */
        keep = kmem_alloc(sizes[i]);
        p = kmem_alloc(sizes[i]);
        memset(p, 0xee, sizes[i]);
        kmem_free(p, sizes[i]);

        p = kmem_zalloc(sizes[i]);
        assert_non_null(p);

        for (j = 0; j < sizes[i]; j++) {
            assert_int_equal(p[j], 0);
        }

        kmem_free(p, sizes[i]);
        kmem_free(keep, sizes[i]);
    }

    assert_null(kmem_zalloc(0));
}

static void
test_free_poisons(void **state)
{
    unsigned char *keep, *p;
    size_t i;

    (void)state;
    keep = kmem_alloc(64);
    p = kmem_alloc(64);
    memset(p, 0, 64);
    kmem_free(p, 64);

    /* The slab is still held (keep is live), so this read is safe. */
    for (i = 0; i < 64; i++) {
        assert_int_equal(p[i], KMEM_POISON);
    }

    kmem_free(keep, 64);
}

static void
test_size_zero_and_null(void **state)
{
    (void)state;
    assert_null(kmem_alloc(0));
    assert_null(kmem_alloc_aligned(0, 64));
    kmem_free(NULL, 0);
    kmem_free(NULL, 100);
    kmem_free(NULL, 100000);
    /* Not a shortage of memory. */
    assert_int_equal(stats().nr_failures, failures_at_start);
}

static void
test_large(void **state)
{
    unsigned char *a, *b, *c;
    struct kmem_stats s;

    (void)state;
    a = kmem_alloc(KMEM_SMALL_MAX + 1);
    b = kmem_alloc(PAGE_SIZE);
    c = kmem_alloc(5 * PAGE_SIZE + 1);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_true(P2ALIGNED((uintptr_t)a, PAGE_SIZE));
    assert_true(P2ALIGNED((uintptr_t)b, PAGE_SIZE));
    assert_true(P2ALIGNED((uintptr_t)c, PAGE_SIZE));

    memset(a, 1, KMEM_SMALL_MAX + 1);
    memset(b, 2, PAGE_SIZE);
    memset(c, 3, 5 * PAGE_SIZE + 1);

    s = stats();
    assert_int_equal(s.nr_allocs, 3);
    assert_int_equal(s.bytes_in_use,
                     KMEM_SMALL_MAX + 1 + PAGE_SIZE + 5 * PAGE_SIZE + 1);
    assert_int_equal(s.nr_pages, 1 + 1 + 6);
    assert_int_equal(fake_pmem_nr_allocated(), 8);

    assert_int_equal(a[KMEM_SMALL_MAX], 1);
    assert_int_equal(b[0], 2);
    assert_int_equal(c[5 * PAGE_SIZE], 3);

    kmem_free(b, PAGE_SIZE);
    kmem_free(a, KMEM_SMALL_MAX + 1);
    kmem_free(c, 5 * PAGE_SIZE + 1);
}

static void
test_huge_requests_fail(void **state)
{
    (void)state;
    assert_null(kmem_alloc(SIZE_MAX));
    assert_null(kmem_alloc(SIZE_MAX - PAGE_SIZE));
    assert_null(kmem_alloc((size_t)1 << 40));
    assert_null(kmem_zalloc(SIZE_MAX / 2));
    assert_int_equal(stats().nr_failures, failures_at_start + 4);
}

static void
test_aligned(void **state)
{
    static const size_t sizes[] = { 1, 16, 100, 700, 2048, 3000, 9000 };
    size_t i, align;
    unsigned char *p;

    (void)state;

    for (i = 0; i < ARRAY_SIZE(sizes); i++) {
        for (align = 1; align <= PAGE_SIZE; align <<= 1) {
            p = kmem_alloc_aligned(sizes[i], align);
            assert_non_null(p);
            assert_true(P2ALIGNED((uintptr_t)p, MAX(align, KMEM_ALIGN_MIN)));
            memset(p, 0x5a, sizes[i]);
            assert_int_equal(stats().bytes_in_use, sizes[i]);
            kmem_free(p, sizes[i]);
            assert_heap_empty();
        }
    }

    assert_null(kmem_alloc_aligned(64, 0));
    assert_null(kmem_alloc_aligned(64, 3));
    assert_null(kmem_alloc_aligned(64, 48));
    assert_null(kmem_alloc_aligned(64, 2 * PAGE_SIZE));
    assert_null(kmem_alloc_aligned(64, (size_t)1 << 63));
}

static void
test_aligned_free_checks(void **state)
{
    unsigned char *p, *q;

    (void)state;
    /* 100 bytes from the 512-byte class. */
    p = kmem_alloc_aligned(100, 512);
    q = kmem_alloc(512);
    /* A size of a bigger class than the object's is wrong. */
    expect_assert_failure(kmem_free(p, 600));
    /* A plain object freed with a size of a smaller class is wrong. */
    expect_assert_failure(kmem_free(q, 100));
    assert_int_equal(stats().nr_allocs, 2);
    kmem_free(p, 100);
    kmem_free(q, 512);
}

static void
test_exhaustion(void **state)
{
    enum { MAX_OBJS = 1000 };
    static unsigned char *objs[MAX_OBJS];
    struct kmem_stats s;
    size_t n, i, j;
    unsigned char *p;

    (void)state;
    fake_pmem_set_limit(4);

    for (n = 0; n < MAX_OBJS; n++) {
        objs[n] = kmem_alloc(256);

        if (objs[n] == NULL) {
            break;
        }

        memset(objs[n], (int)n, 256);
    }

    assert_true(n > 4 && n < MAX_OBJS);
    s = stats();
    assert_int_equal(s.nr_failures, failures_at_start + 1);
    assert_int_equal(s.nr_pages, 4);
    assert_int_equal(s.nr_allocs, n);
    assert_int_equal(s.bytes_in_use, n * 256);

    /* Other classes and large requests fail too, and are counted. */
    assert_null(kmem_alloc(16));
    assert_null(kmem_alloc(3 * PAGE_SIZE));
    assert_null(kmem_alloc_aligned(16, PAGE_SIZE));
    assert_int_equal(stats().nr_failures, failures_at_start + 4);

    /* Freeing one object makes room in its class only. */
    kmem_free(objs[0], 256);
    objs[0] = kmem_alloc(256);
    assert_non_null(objs[0]);
    memset(objs[0], 0, 256);
    assert_null(kmem_alloc(256));

    for (i = 1; i < n; i++) {
        for (j = 0; j < 256; j++) {
            assert_int_equal(objs[i][j], (unsigned char)i);
        }
    }

    for (i = 0; i < n; i++) {
        kmem_free(objs[i], 256);
    }

    assert_heap_empty();

    /* Memory again: everything works. */
    fake_pmem_set_limit(100);
    p = kmem_alloc(256);
    assert_non_null(p);
    kmem_free(p, 256);
    p = kmem_alloc(10 * PAGE_SIZE);
    assert_non_null(p);
    kmem_free(p, 10 * PAGE_SIZE);
}

static void
test_misuse(void **state)
{
    unsigned char *a, *b, *big;
    struct kmem_stats before;

    (void)state;
    a = kmem_alloc(64);
    b = kmem_alloc(64);
    big = kmem_zalloc(3 * PAGE_SIZE);
    before = stats();

    /* Wrong sizes. */
    expect_assert_failure(kmem_free(a, 32));
    expect_assert_failure(kmem_free(a, 128));
    expect_assert_failure(kmem_free(a, 0));
    expect_assert_failure(kmem_free(a, 3 * PAGE_SIZE));
    expect_assert_failure(kmem_free(big, 4 * PAGE_SIZE));
    /* Not the start of an object. */
    expect_assert_failure(kmem_free(a + 16, 64));
    expect_assert_failure(kmem_free(a + 1, 64));
    expect_assert_failure(kmem_free(big + 64, 64));
    expect_assert_failure(kmem_free(big + PAGE_SIZE + 64, 64));
    /* Inside the slab header. */
    expect_assert_failure(kmem_free((unsigned char *)P2ALIGN((uintptr_t)a,
                                                             PAGE_SIZE) + 16,
                                    16));

    assert_int_equal(stats().nr_allocs, before.nr_allocs);
    assert_int_equal(stats().bytes_in_use, before.bytes_in_use);
    assert_int_equal(stats().nr_pages, before.nr_pages);

    /* Double frees. */
    kmem_free(a, 64);
    expect_assert_failure(kmem_free(a, 64));
    kmem_free(big, 3 * PAGE_SIZE);
    expect_assert_failure(kmem_free(big, 3 * PAGE_SIZE));
    assert_int_equal(stats().nr_allocs, 1);
    assert_int_equal(stats().bytes_in_use, 64);

    /* The lock was released after each failure. */
    kmem_free(b, 64);
    /* The slab is gone: its former objects are no objects at all. */
    expect_assert_failure(kmem_free(b, 64));
}

/*
 * Random allocations and frees of random sizes (small and large, some
 * aligned), each object filled with its own pattern and checked when freed:
 * no allocation may overlap a live one.
 */
#define STRESS_SLOTS    256
#define STRESS_ROUNDS   40000

static unsigned char
stress_byte(size_t slot, uint32_t gen, size_t i)
{
    return (unsigned char)(slot * 7 + gen * 13 + i);
}

static void
test_stress(void **state)
{
    static struct {
        unsigned char *p;
        size_t size;
        uint32_t gen;
    } slots[STRESS_SLOTS];
    uint32_t seed = 0xdecafbad;
    struct kmem_stats s;
    size_t i, k, j, live = 0, bytes = 0;

    (void)state;
    memset(slots, 0, sizeof(slots));
    /* Tight enough that allocations fail now and then. */
    fake_pmem_set_limit(100);

    for (i = 0; i < STRESS_ROUNDS; i++) {
        seed = seed * 1664525 + 1013904223;
        k = (seed >> 8) % STRESS_SLOTS;

        if (slots[k].p == NULL) {
            size_t size, align = 0;

            seed = seed * 1664525 + 1013904223;

            switch (seed >> 29) {
            case 0:
                size = 1 + (seed >> 8) % (4 * PAGE_SIZE);
                break;
            case 1:
                size = 1 + (seed >> 8) % 256;
                align = (size_t)1 << ((seed >> 4) % 13);
                break;
            default:
                size = 1 + (seed >> 8) % KMEM_SMALL_MAX;
                break;
            }

            slots[k].p = align ? kmem_alloc_aligned(size, align)
                               : kmem_alloc(size);

            if (slots[k].p == NULL) {
                continue;
            }

            assert_true(P2ALIGNED((uintptr_t)slots[k].p,
                                  MAX(align, KMEM_ALIGN_MIN)));
            slots[k].size = size;
            slots[k].gen = (uint32_t)i;

            for (j = 0; j < size; j++) {
                slots[k].p[j] = stress_byte(k, slots[k].gen, j);
            }

            live++;
            bytes += size;
        } else {
            for (j = 0; j < slots[k].size; j++) {
                assert_int_equal(slots[k].p[j],
                                 stress_byte(k, slots[k].gen, j));
            }

            kmem_free(slots[k].p, slots[k].size);
            slots[k].p = NULL;
            live--;
            bytes -= slots[k].size;
        }

        s = stats();
        assert_int_equal(s.nr_allocs, live);
        assert_int_equal(s.bytes_in_use, bytes);
        assert_int_equal(s.nr_pages, fake_pmem_nr_allocated());
    }

    for (k = 0; k < STRESS_SLOTS; k++) {
        if (slots[k].p != NULL) {
            for (j = 0; j < slots[k].size; j++) {
                assert_int_equal(slots[k].p[j],
                                 stress_byte(k, slots[k].gen, j));
            }

            kmem_free(slots[k].p, slots[k].size);
        }
    }

    /* The failures happened, and corrupted nothing. */
    assert_true(stats().nr_failures > failures_at_start);
}

/* Every test starts from an empty heap and must leave it empty. */
#define T(fn)   cmocka_unit_test_setup_teardown(fn, setup, teardown)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_every_class),
        T(test_many_objects_share_slabs),
        T(test_zalloc_zeroes),
        T(test_free_poisons),
        T(test_size_zero_and_null),
        T(test_large),
        T(test_huge_requests_fail),
        T(test_aligned),
        T(test_aligned_free_checks),
        T(test_exhaustion),
        T(test_misuse),
        T(test_stress),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
