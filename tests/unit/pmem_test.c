/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the physical page allocator (kern/pmem.c): region and
 * reservation handling, counts, contiguity, exhaustion, misuse detection and
 * the 16 GiB limit, against a reference model for the random test.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kern/error.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/pmem.h"

#define MiB     (1UL << 20)
#define GiB     (1UL << 30)

static int
reset(void **state)
{
    (void)state;
    pmem_reset();
    return 0;
}

/* Allocate single pages until failure; return how many, record them. */
static size_t
alloc_all(uint64_t *pages, size_t max)
{
    size_t n = 0;
    uint64_t pa;

    while ((pa = pmem_alloc(1)) != 0) {
        assert_true(n < max);
        pages[n++] = pa;
    }

    return n;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

static void
test_regions_holes_unaligned(void **state)
{
    uint64_t pages[512];
    size_t i, n;

    (void)state;
    /* Shrinks to pages 2..8 (0x2000..0x9000). */
    pmem_region_add(0x1001, 0x9fff);
    pmem_region_add(MiB, 2 * MiB);
    /* Empty once shrunk: less than a page, or reversed. */
    pmem_region_add(0x300001, 0x300fff);
    pmem_region_add(0x500000, 0x400000);
    assert_int_equal(pmem_setup(), 0);

    assert_int_equal(pmem_nr_total(), 7 + 256);
    assert_int_equal(pmem_nr_free(), 7 + 256);
    assert_int_equal(pmem_max_addr(), 2 * MiB);
    assert_int_equal(pmem_ignored_bytes(), 0);

    n = alloc_all(pages, ARRAY_SIZE(pages));
    assert_int_equal(n, 7 + 256);
    assert_int_equal(pmem_nr_free(), 0);
    qsort(pages, n, sizeof(pages[0]), cmp_u64);

    for (i = 0; i < 7; i++) {
        assert_int_equal(pages[i], 0x2000 + i * PAGE_SIZE);
    }

    for (i = 7; i < n; i++) {
        assert_int_equal(pages[i], MiB + (i - 7) * PAGE_SIZE);
    }

    for (i = 0; i < n; i++) {
        pmem_free(pages[i], 1);
    }

    assert_int_equal(pmem_nr_free(), 7 + 256);
}

static void
test_overlapping_regions(void **state)
{
    (void)state;
    pmem_region_add(MiB, MiB + 16 * PAGE_SIZE);
    pmem_region_add(MiB, MiB + 16 * PAGE_SIZE);
    pmem_region_add(MiB + 8 * PAGE_SIZE, MiB + 24 * PAGE_SIZE);
    assert_int_equal(pmem_setup(), 0);
    assert_int_equal(pmem_nr_total(), 24);
    assert_int_equal(pmem_alloc(24), MiB);
    assert_int_equal(pmem_alloc(1), 0);
}

static void
test_page0_never_returned(void **state)
{
    uint64_t pa;
    int i;

    (void)state;
    pmem_region_add(0, 4 * PAGE_SIZE);
    assert_int_equal(pmem_setup(), 0);
    assert_int_equal(pmem_nr_total(), 3);

    for (i = 0; i < 3; i++) {
        pa = pmem_alloc(1);
        assert_true(pa >= PAGE_SIZE);
        assert_true(pa < 4 * PAGE_SIZE);
    }

    assert_int_equal(pmem_alloc(1), 0);
    assert_int_equal(pmem_nr_free(), 0);
}

static void
test_reserve(void **state)
{
    uint64_t pages[256];
    size_t i, n;

    (void)state;
    /* A reservation may come before the region it falls in. */
    pmem_reserve(MiB + 0x50000, MiB + 0x50001);
    pmem_region_add(MiB, 2 * MiB);
    /* Overlaps the region start: pages 0x100..0x102 are in the region. */
    pmem_reserve(0xff000, 0x102800);
    /* Outside any region, and above the limit. */
    pmem_reserve(3 * MiB, 4 * MiB);
    pmem_reserve(17 * GiB, 18 * GiB);
    /* Empty. */
    pmem_reserve(MiB + 0x80000, MiB + 0x80000);
    assert_int_equal(pmem_setup(), 0);
    assert_int_equal(pmem_nr_total(), 256 - 1 - 3);

    n = alloc_all(pages, ARRAY_SIZE(pages));
    assert_int_equal(n, 252);

    for (i = 0; i < n; i++) {
        assert_true(pages[i] >= MiB + 3 * PAGE_SIZE);
        assert_true(pages[i] < 2 * MiB);
        assert_int_not_equal(pages[i], MiB + 0x50000);
    }
}

static void
test_reserve_after_setup(void **state)
{
    uint64_t pa;

    (void)state;
    pmem_region_add(MiB, MiB + 8 * PAGE_SIZE);
    assert_int_equal(pmem_setup(), 0);

    pmem_reserve(MiB + 6 * PAGE_SIZE, MiB + 8 * PAGE_SIZE);
    assert_int_equal(pmem_nr_total(), 6);
    assert_int_equal(pmem_nr_free(), 6);

    /* Above the highest page: nothing to take. */
    pmem_reserve(4 * MiB, 5 * MiB);
    assert_int_equal(pmem_nr_total(), 6);

    pa = pmem_alloc(1);
    assert_int_equal(pa, MiB);
    /* An allocated page, or an already reserved one, cannot be reserved. */
    expect_assert_failure(pmem_reserve(pa, pa + PAGE_SIZE));
    expect_assert_failure(pmem_reserve(MiB + 5 * PAGE_SIZE,
                                       MiB + 7 * PAGE_SIZE));
    assert_int_equal(pmem_nr_total(), 6);
    assert_int_equal(pmem_nr_free(), 5);

    /* The failed reservations took nothing: every other page is there. */
    assert_int_equal(pmem_alloc(5), MiB + PAGE_SIZE);
    assert_int_equal(pmem_alloc(1), 0);
}

static void
test_too_many_reservations(void **state)
{
    int i;

    (void)state;

    /* Overlapping ones merge and do not use up slots. */
    for (i = 0; i < 100; i++) {
        pmem_reserve(MiB, MiB + (i + 1) * PAGE_SIZE);
    }

    for (i = 1; i < PMEM_RESERVE_MAX; i++) {
        pmem_reserve(MiB + i * 2 * MiB, MiB + i * 2 * MiB + PAGE_SIZE);
    }

    expect_assert_failure(pmem_reserve(GiB, GiB + PAGE_SIZE));

    pmem_region_add(MiB, 4 * MiB);
    assert_int_equal(pmem_setup(), 0);
    /* 100 pages at 1 MiB and one at 3 MiB. */
    assert_int_equal(pmem_nr_total(), 768 - 100 - 1);
}

static void
test_setup_errors(void **state)
{
    (void)state;
    assert_int_equal(pmem_setup(), -ENOMEM);
    assert_int_equal(pmem_alloc(1), 0);

    /* Only page 0: still nothing to hand out. */
    pmem_region_add(0, PAGE_SIZE);
    assert_int_equal(pmem_setup(), -ENOMEM);

    /* Everything reserved. */
    pmem_region_add(MiB, 2 * MiB);
    pmem_reserve(MiB, 2 * MiB);
    assert_int_equal(pmem_setup(), -ENOMEM);

    /* The failures changed nothing: more RAM makes it work. */
    pmem_region_add(2 * MiB, 2 * MiB + 2 * PAGE_SIZE);
    assert_int_equal(pmem_setup(), 0);
    assert_int_equal(pmem_nr_total(), 2);
    assert_int_equal(pmem_max_addr(), 2 * MiB + 2 * PAGE_SIZE);

    assert_int_equal(pmem_setup(), -EBUSY);
    assert_int_equal(pmem_nr_total(), 2);

    expect_assert_failure(pmem_region_add(8 * MiB, 9 * MiB));
    assert_int_equal(pmem_nr_total(), 2);
    assert_int_equal(pmem_max_addr(), 2 * MiB + 2 * PAGE_SIZE);
}

static void
test_alloc_bad_sizes(void **state)
{
    (void)state;
    /* Before setup. */
    assert_int_equal(pmem_alloc(1), 0);
    pmem_region_add(MiB, 2 * MiB);
    assert_int_equal(pmem_setup(), 0);

    assert_int_equal(pmem_alloc(0), 0);
    assert_int_equal(pmem_alloc(257), 0);
    assert_int_equal(pmem_alloc((size_t)-1), 0);
    assert_int_equal(pmem_nr_free(), 256);
    assert_int_equal(pmem_alloc(256), MiB);
    assert_int_equal(pmem_nr_free(), 0);
    pmem_free(MiB, 0);
    assert_int_equal(pmem_nr_free(), 0);
    pmem_free(MiB, 256);
    assert_int_equal(pmem_nr_free(), 256);
}

static void
test_exhaustion_and_recovery(void **state)
{
    uint64_t pages[64];
    uint64_t pa;
    size_t n;

    (void)state;
    pmem_region_add(MiB, MiB + 64 * PAGE_SIZE);
    assert_int_equal(pmem_setup(), 0);

    n = alloc_all(pages, ARRAY_SIZE(pages));
    assert_int_equal(n, 64);
    assert_int_equal(pmem_alloc(1), 0);
    assert_int_equal(pmem_alloc(2), 0);
    assert_int_equal(pmem_nr_free(), 0);

    /* Freed pages behind the hint are found again. */
    pmem_free(pages[10], 1);
    assert_int_equal(pmem_alloc(1), pages[10]);
    assert_int_equal(pmem_alloc(1), 0);

    pmem_free(pages[3], 1);
    pmem_free(pages[4], 1);
    pmem_free(pages[5], 1);
    pa = pmem_alloc(3);
    assert_int_equal(pa, MiB + 3 * PAGE_SIZE);
    assert_int_equal(pmem_nr_free(), 0);
}

static void
test_no_run_across_hole(void **state)
{
    uint64_t a, b;

    (void)state;
    /* Two runs of 4 pages with a one-page hole between them. */
    pmem_region_add(MiB, MiB + 4 * PAGE_SIZE);
    pmem_region_add(MiB + 5 * PAGE_SIZE, MiB + 9 * PAGE_SIZE);
    assert_int_equal(pmem_setup(), 0);
    assert_int_equal(pmem_nr_free(), 8);

    assert_int_equal(pmem_alloc(8), 0);
    assert_int_equal(pmem_alloc(5), 0);
    a = pmem_alloc(4);
    b = pmem_alloc(4);
    assert_int_not_equal(a, 0);
    assert_int_not_equal(b, 0);
    assert_true(((a == MiB) && (b == MiB + 5 * PAGE_SIZE))
                || ((b == MiB) && (a == MiB + 5 * PAGE_SIZE)));
    assert_int_equal(pmem_alloc(1), 0);

    /* A run split by an allocated page is not a run either. */
    pmem_free(a, 4);
    assert_int_equal(pmem_alloc(1), a == MiB ? MiB : MiB + 5 * PAGE_SIZE);
    assert_int_equal(pmem_alloc(4), 0);
    assert_int_not_equal(pmem_alloc(3), 0);
}

static void
test_free_misuse(void **state)
{
    uint64_t pa, other;

    (void)state;
    pmem_region_add(MiB, MiB + 16 * PAGE_SIZE);
    /* Reserved page at the end. */
    pmem_reserve(MiB + 15 * PAGE_SIZE, MiB + 16 * PAGE_SIZE);
    assert_int_equal(pmem_setup(), 0);

    /* Nothing allocated yet. */
    expect_assert_failure(pmem_free(MiB, 1));

    pa = pmem_alloc(2);
    other = pmem_alloc(1);
    assert_int_equal(pmem_nr_free(), 12);

    expect_assert_failure(pmem_free(pa + 1, 1));
    expect_assert_failure(pmem_free(pa + PAGE_SIZE / 2, 1));
    expect_assert_failure(pmem_free(0, 1));
    expect_assert_failure(pmem_free(pmem_max_addr(), 1));
    expect_assert_failure(pmem_free(64 * GiB, 1));
    expect_assert_failure(pmem_free(pa, (size_t)-1));
    /* Runs past the allocated pages into free ones. */
    expect_assert_failure(pmem_free(other, 2));
    assert_int_equal(pmem_nr_free(), 12);

    pmem_free(pa, 2);
    assert_int_equal(pmem_nr_free(), 14);
    expect_assert_failure(pmem_free(pa, 2));
    expect_assert_failure(pmem_free(pa + PAGE_SIZE, 1));
    assert_int_equal(pmem_nr_free(), 14);

    /* The lock was released after each failure. */
    pmem_free(other, 1);
    assert_int_equal(pmem_nr_free(), 15);
    assert_int_equal(pmem_alloc(15), MiB);
}

static void
test_above_limit_ignored(void **state)
{
    uint64_t pa;

    (void)state;
    pmem_region_add(15 * GiB, 17 * GiB);
    assert_int_equal(pmem_ignored_bytes(), GiB);
    /* Overlap with the part already ignored: counted once. */
    pmem_region_add(16 * GiB + 512 * MiB, 17 * GiB);
    pmem_region_add(16 * GiB, 16 * GiB + MiB);
    assert_int_equal(pmem_ignored_bytes(), GiB);
    pmem_region_add(20 * GiB, 21 * GiB);
    assert_int_equal(pmem_ignored_bytes(), 2 * GiB);
    /* Near the top of the address space: nothing wraps. */
    pmem_region_add(UINT64_MAX - PAGE_SIZE + 2, UINT64_MAX);
    pmem_region_add(UINT64_MAX - 2 * PAGE_SIZE, UINT64_MAX);
    assert_int_equal(pmem_ignored_bytes(), 2 * GiB + PAGE_SIZE);

    assert_int_equal(pmem_setup(), 0);
    assert_int_equal(pmem_max_addr(), PMEM_MAX_ADDR);
    assert_int_equal(pmem_nr_total(), GiB / PAGE_SIZE);

    pa = pmem_alloc(GiB / PAGE_SIZE);
    assert_int_equal(pa, 15 * GiB);
    assert_int_equal(pmem_alloc(1), 0);
    pmem_free(pa, GiB / PAGE_SIZE);

    pa = pmem_alloc(1);
    assert_true(pa >= 15 * GiB);
    assert_true(pa < 16 * GiB);
}

static void
test_full_range(void **state)
{
    uint64_t pa, prev = 0;
    int i;

    (void)state;
    pmem_region_add(0, 64 * GiB);
    assert_int_equal(pmem_setup(), 0);
    assert_int_equal(pmem_ignored_bytes(), 48 * GiB);
    assert_int_equal(pmem_nr_total(), PMEM_MAX_ADDR / PAGE_SIZE - 1);

    /* Successive single pages follow the rotating hint. */
    for (i = 0; i < 1000; i++) {
        pa = pmem_alloc(1);
        assert_true(pa > prev);
        prev = pa;
    }

    pa = pmem_alloc(1UL << 20);
    assert_int_not_equal(pa, 0);
    assert_true(pa + (1UL << 32) <= PMEM_MAX_ADDR);
    assert_int_equal(pmem_nr_free(),
                     PMEM_MAX_ADDR / PAGE_SIZE - 1 - 1000 - (1UL << 20));
    pmem_free(pa, 1UL << 20);
}

static void
test_direct_map(void **state)
{
    int x;

    (void)state;
    assert_ptr_equal(pmem_va(0x1000), (void *)(DIRECT_MAP_BASE + 0x1000));
    assert_int_equal(pmem_pa(pmem_va(0x12345000)), 0x12345000);
    assert_int_equal(pmem_pa(pmem_va(PMEM_MAX_ADDR - 1)), PMEM_MAX_ADDR - 1);
    expect_assert_failure(pmem_pa(&x));
    expect_assert_failure(pmem_pa((void *)KERNEL_VMA));
}

/*
 * Random multi-page allocations and frees checked against a model of page
 * ownership: runs are contiguous, inside the regions, never overlap, and the
 * counts agree.
 */
#define RND_BASE    MiB
#define RND_PAGES   300
#define RND_HOLE    150     /* a one-page hole in the middle */
#define RND_SLOTS   64

static void
test_random_model(void **state)
{
    struct {
        uint64_t pa;
        size_t n;
    } slots[RND_SLOTS];
    int owner[RND_PAGES];
    size_t expect_free, j;
    unsigned int seed = 12345;
    int i, k;

    (void)state;
    pmem_region_add(RND_BASE, RND_BASE + RND_HOLE * PAGE_SIZE);
    pmem_region_add(RND_BASE + (RND_HOLE + 1) * PAGE_SIZE,
                    RND_BASE + RND_PAGES * PAGE_SIZE);
    assert_int_equal(pmem_setup(), 0);
    expect_free = RND_PAGES - 1;
    memset(slots, 0, sizeof(slots));

    for (j = 0; j < RND_PAGES; j++) {
        owner[j] = -1;
    }

    for (i = 0; i < 20000; i++) {
        seed = seed * 1103515245 + 12345;
        k = (seed >> 8) % RND_SLOTS;

        if (slots[k].pa == 0) {
            size_t n = 1 + (seed >> 20) % 12;
            uint64_t pa = pmem_alloc(n);

            if (pa == 0) {
                continue;
            }

            assert_true(P2ALIGNED(pa, PAGE_SIZE));
            assert_true(pa >= RND_BASE);
            assert_true(pa + n * PAGE_SIZE
                        <= RND_BASE + RND_PAGES * PAGE_SIZE);

            for (j = 0; j < n; j++) {
                size_t page = (pa - RND_BASE) / PAGE_SIZE + j;

                assert_int_not_equal(page, RND_HOLE);
                assert_int_equal(owner[page], -1);
                owner[page] = k;
            }

            slots[k].pa = pa;
            slots[k].n = n;
            expect_free -= n;
        } else {
            for (j = 0; j < slots[k].n; j++) {
                owner[(slots[k].pa - RND_BASE) / PAGE_SIZE + j] = -1;
            }

            pmem_free(slots[k].pa, slots[k].n);
            expect_free += slots[k].n;
            slots[k].pa = 0;
        }

        assert_int_equal(pmem_nr_free(), expect_free);
    }

    for (k = 0; k < RND_SLOTS; k++) {
        if (slots[k].pa != 0) {
            pmem_free(slots[k].pa, slots[k].n);
        }
    }

    assert_int_equal(pmem_nr_free(), RND_PAGES - 1);
    assert_int_equal(pmem_alloc(RND_HOLE), RND_BASE);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_regions_holes_unaligned, reset),
        cmocka_unit_test_setup(test_overlapping_regions, reset),
        cmocka_unit_test_setup(test_page0_never_returned, reset),
        cmocka_unit_test_setup(test_reserve, reset),
        cmocka_unit_test_setup(test_reserve_after_setup, reset),
        cmocka_unit_test_setup(test_too_many_reservations, reset),
        cmocka_unit_test_setup(test_setup_errors, reset),
        cmocka_unit_test_setup(test_alloc_bad_sizes, reset),
        cmocka_unit_test_setup(test_exhaustion_and_recovery, reset),
        cmocka_unit_test_setup(test_no_run_across_hole, reset),
        cmocka_unit_test_setup(test_free_misuse, reset),
        cmocka_unit_test_setup(test_above_limit_ignored, reset),
        cmocka_unit_test_setup(test_full_range, reset),
        cmocka_unit_test_setup(test_direct_map, reset),
        cmocka_unit_test_setup(test_random_model, reset),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
