/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel tests of the memory allocators on the real memory map: pages
 * from pmem are aligned, usable through the direct map and counted; heap
 * objects of every size class and large ones are aligned as promised, do
 * not overlap and come back; requests larger than memory, and requests
 * made while memory is exhausted, return NULL (0 for pages) cleanly and
 * leave the allocators working and their counters unchanged.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/kmem.h"
#include "kern/ktest.h"
#include "kern/param.h"
#include "kern/pmem.h"
#include "kern/string.h"

static int
mem_test_pmem_alloc_free(void)
{
    size_t nr_free = pmem_nr_free();
    uint64_t pa1 = 0, pa8 = 0;
    unsigned char *p;

    KTEST_ASSERT(nr_free > 16);
    KTEST_ASSERT(nr_free <= pmem_nr_total());
    KTEST_ASSERT_EQ(pmem_alloc(0), 0);
    KTEST_ASSERT_EQ(pmem_nr_free(), nr_free);

    pa1 = pmem_alloc(1);
    KTEST_CHECK(pa1 != 0);
    KTEST_CHECK_EQ(pa1 % PAGE_SIZE, 0);
    KTEST_CHECK(pa1 < pmem_max_addr());
    KTEST_CHECK_EQ(pmem_nr_free(), nr_free - 1);

    pa8 = pmem_alloc(8);
    KTEST_CHECK(pa8 != 0);
    KTEST_CHECK_EQ(pa8 % PAGE_SIZE, 0);
    KTEST_CHECK_EQ(pmem_nr_free(), nr_free - 9);
    KTEST_CHECK(pa8 + 8 * PAGE_SIZE <= pa1 || pa1 + PAGE_SIZE <= pa8);

    /* Usable through the direct map, the whole run. */
    p = pmem_va(pa8);
    KTEST_CHECK_EQ(pmem_pa(p), pa8);
    memset(p, 0x5a, 8 * PAGE_SIZE);
    memset(pmem_va(pa1), 0xa5, PAGE_SIZE);

    for (size_t i = 0; i < 8 * PAGE_SIZE; i += 511) {
        KTEST_CHECK_EQ(p[i], 0x5a);
    }

    pmem_free(pa8, 8);
    pa8 = 0;
    pmem_free(pa1, 1);
    pa1 = 0;
    KTEST_CHECK_EQ(pmem_nr_free(), nr_free);

out:
    if (pa8 != 0) {
        pmem_free(pa8, 8);
    }

    if (pa1 != 0) {
        pmem_free(pa1, 1);
    }

    return ktest_result();
}

KTEST_DEFINE(mem, pmem_alloc_free, mem_test_pmem_alloc_free);

static int
mem_test_pmem_too_big(void)
{
    size_t nr_free = pmem_nr_free();

    KTEST_ASSERT_EQ(pmem_alloc(pmem_nr_total() + 1), 0);
    KTEST_ASSERT_EQ(pmem_alloc(nr_free + 1), 0);
    KTEST_ASSERT_EQ(pmem_alloc(SIZE_MAX), 0);
    KTEST_ASSERT_EQ(pmem_alloc(SIZE_MAX / PAGE_SIZE + 1), 0);
    KTEST_ASSERT_EQ(pmem_nr_free(), nr_free);
    return KTEST_PASS;
}

KTEST_DEFINE(mem, pmem_too_big, mem_test_pmem_too_big);

static size_t
mem_test_class(size_t size)
{
    size_t class = KMEM_ALIGN_MIN;

    while (class < size) {
        class *= 2;
    }

    return class;
}

#define MEM_TEST_NR_SIZES   18

static const size_t mem_test_sizes[MEM_TEST_NR_SIZES] = {
    1, 8, 15, 16, 17, 31, 64, 100, 128, 255, 512, 1000, 2047, 2048,
    2049, PAGE_SIZE, PAGE_SIZE + 1, 5 * PAGE_SIZE + 3
};

/* Free the objects allocated (NULL: none, kmem_free ignores it). */
static void
mem_test_free_objs(unsigned char *objs[MEM_TEST_NR_SIZES][3])
{
    for (unsigned int i = 0; i < MEM_TEST_NR_SIZES; i++) {
        for (unsigned int j = 0; j < 3; j++) {
            kmem_free(objs[i][j], mem_test_sizes[i]);
            objs[i][j] = NULL;
        }
    }
}

static int
mem_test_kmem_sizes(void)
{
    const size_t *sizes = mem_test_sizes;
    unsigned char *objs[MEM_TEST_NR_SIZES][3] = { { NULL } };
    struct kmem_stats before, during, after;

    kmem_stats_get(&before);

    for (unsigned int i = 0; i < MEM_TEST_NR_SIZES; i++) {
        size_t size = sizes[i];
        uintptr_t align = size <= KMEM_SMALL_MAX ? mem_test_class(size)
                                                 : PAGE_SIZE;

        for (unsigned int j = 0; j < 3; j++) {
            objs[i][j] = kmem_alloc(size);
            KTEST_CHECK(objs[i][j] != NULL);
            KTEST_CHECK_EQ((uintptr_t)objs[i][j] % align, 0);
            memset(objs[i][j], (int)(i * 3 + j + 1), size);
        }
    }

    kmem_stats_get(&during);
    KTEST_CHECK_EQ(during.nr_allocs, before.nr_allocs
                                     + 3 * MEM_TEST_NR_SIZES);

    /* Nothing overwrote anything: every object kept its own pattern. */
    for (unsigned int i = 0; i < MEM_TEST_NR_SIZES; i++) {
        for (unsigned int j = 0; j < 3; j++) {
            for (size_t k = 0; k < sizes[i]; k++) {
                if (objs[i][j][k] != (unsigned char)(i * 3 + j + 1)) {
                    ktest_diag("object %zu bytes #%u corrupt at %zu",
                               sizes[i], j, k);
                    ktest_fail();
                    goto out;
                }
            }
        }
    }

    mem_test_free_objs(objs);
    kmem_stats_get(&after);
    KTEST_CHECK_EQ(after.nr_allocs, before.nr_allocs);
    KTEST_CHECK_EQ(after.bytes_in_use, before.bytes_in_use);

out:
    mem_test_free_objs(objs);
    return ktest_result();
}

KTEST_DEFINE(mem, kmem_sizes_alignment, mem_test_kmem_sizes);

static int
mem_test_kmem_aligned_zalloc(void)
{
    struct kmem_stats before, after;
    unsigned char *p = NULL;
    size_t size = 0;

    kmem_stats_get(&before);

    for (size_t align = 1; align <= PAGE_SIZE; align *= 2) {
        static const size_t sizes[] = { 1, 24, 300, 3000, 3 * PAGE_SIZE };

        for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            size = sizes[i];
            p = kmem_alloc_aligned(size, align);
            KTEST_CHECK(p != NULL);
            KTEST_CHECK_EQ((uintptr_t)p % align, 0);
            KTEST_CHECK_EQ((uintptr_t)p % KMEM_ALIGN_MIN, 0);
            memset(p, 0xee, size);
            kmem_free(p, size);
            p = NULL;
        }
    }

    /* Refused: not a power of two, larger than a page, empty. */
    KTEST_CHECK(kmem_alloc_aligned(64, 3) == NULL);
    KTEST_CHECK(kmem_alloc_aligned(64, 48) == NULL);
    KTEST_CHECK(kmem_alloc_aligned(64, 2 * PAGE_SIZE) == NULL);
    KTEST_CHECK(kmem_alloc_aligned(0, 64) == NULL);
    KTEST_CHECK(kmem_alloc(0) == NULL);
    KTEST_CHECK(kmem_zalloc(0) == NULL);

    /* zalloc zeroes, even a slot just dirtied and freed. */
    size = 200;
    p = kmem_alloc(size);
    KTEST_CHECK(p != NULL);
    memset(p, 0xff, size);
    kmem_free(p, size);
    p = kmem_zalloc(size);
    KTEST_CHECK(p != NULL);

    for (size_t i = 0; i < size; i++) {
        KTEST_CHECK_EQ(p[i], 0);
    }

    kmem_free(p, size);
    p = NULL;
    kmem_free(NULL, 123);           /* a no-op */

    kmem_stats_get(&after);
    KTEST_CHECK_EQ(after.nr_allocs, before.nr_allocs);
    KTEST_CHECK_EQ(after.bytes_in_use, before.bytes_in_use);

out:
    kmem_free(p, size);
    return ktest_result();
}

KTEST_DEFINE(mem, kmem_aligned_zalloc, mem_test_kmem_aligned_zalloc);

/* More than the machine has: NULL, counted, nothing taken. */
static int
mem_test_kmem_too_big(void)
{
    struct kmem_stats before, after;
    size_t nr_free = pmem_nr_free();
    size_t sizes[] = { (pmem_nr_total() + 1) * PAGE_SIZE, SIZE_MAX,
                       SIZE_MAX - PAGE_SIZE + 2, SIZE_MAX / 2 + 1 };

    kmem_stats_get(&before);

    for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        KTEST_ASSERT(kmem_alloc(sizes[i]) == NULL);
        KTEST_ASSERT(kmem_zalloc(sizes[i]) == NULL);
        KTEST_ASSERT(kmem_alloc_aligned(sizes[i], 64) == NULL);
    }

    kmem_stats_get(&after);
    KTEST_ASSERT_EQ(after.nr_allocs, before.nr_allocs);
    KTEST_ASSERT_EQ(after.nr_pages, before.nr_pages);
    KTEST_ASSERT(after.nr_failures >= before.nr_failures + 4);
    KTEST_ASSERT_EQ(pmem_nr_free(), nr_free);
    return KTEST_PASS;
}

KTEST_DEFINE(mem, kmem_too_big, mem_test_kmem_too_big);

/*
 * Exhaust the page allocator (in 1 MiB runs, then single pages), check
 * that the heap then refuses large objects cleanly, and give it all back.
 * The list of runs is kept in the pages themselves.
 */
#define MEM_TEST_RUN_PAGES  256

/* Give back the runs of the list at *headp. */
static void
mem_test_free_runs(uint64_t *headp)
{
    while (*headp != 0) {
        uint64_t *link = pmem_va(*headp);
        uint64_t next = link[0];

        pmem_free(*headp, link[1]);
        *headp = next;
    }
}

static int
mem_test_exhaustion(void)
{
    size_t nr_free = pmem_nr_free(), taken = 0;
    struct kmem_stats before, after;
    uint64_t head = 0, pa;
    size_t npages = MEM_TEST_RUN_PAGES;
    bool heap_refused;
    void *big = NULL;

    kmem_stats_get(&before);

    /* Each run starts with (next run, its length). */
    while (npages > 0) {
        pa = pmem_alloc(npages);

        if (pa == 0) {
            npages /= 2;
            continue;
        }

        uint64_t *link = pmem_va(pa);
        link[0] = head;
        link[1] = npages;
        head = pa;
        taken += npages;
    }

    /* Empty now: no page of any size, and a large object cannot be made. */
    KTEST_CHECK_EQ(pmem_nr_free(), 0);
    KTEST_CHECK_EQ(pmem_alloc(1), 0);
    big = kmem_alloc(3 * PAGE_SIZE);
    heap_refused = big == NULL;
    mem_test_free_runs(&head);
    kmem_free(big, 3 * PAGE_SIZE);
    big = NULL;

    kmem_stats_get(&after);
    KTEST_CHECK(heap_refused);
    KTEST_CHECK_EQ(taken, nr_free);
    KTEST_CHECK_EQ(pmem_nr_free(), nr_free);
    KTEST_CHECK_EQ(after.nr_allocs, before.nr_allocs);
    KTEST_CHECK_EQ(after.nr_failures, before.nr_failures + 1);

    /* Working again. */
    big = kmem_alloc(3 * PAGE_SIZE);
    KTEST_CHECK(big != NULL);
    kmem_free(big, 3 * PAGE_SIZE);
    big = NULL;

out:
    /* The next test needs memory: every page goes back. */
    mem_test_free_runs(&head);
    kmem_free(big, 3 * PAGE_SIZE);
    return ktest_result();
}

KTEST_DEFINE(mem, exhaustion_clean, mem_test_exhaustion);
