/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Physical page allocator: a bitmap with one bit per page below
 * PMEM_MAX_ADDR.  Before pmem_setup() a set bit means "usable RAM"; setup
 * removes the reservations and inverts the bitmap, after which a set bit
 * means "not available" (allocated, reserved, or not RAM at all) and a clear
 * bit a free page.  Reservations made before setup are kept as a short list
 * of ranges rather than applied at once, since the firmware regions they
 * fall in may only be declared after them.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/assert.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/pmem.h"
#include "kern/spinlock.h"
#include "kern/string.h"

#define PMEM_MAX_PAGES      (PMEM_MAX_ADDR >> PAGE_SHIFT)
#define PMEM_WORD_BITS      64
#define PMEM_NOT_FOUND      ((size_t)-1)

/* Ignored RAM ranges remembered to count overlapping ones only once. */
#define PMEM_IGNORED_MAX    16

/* A half-open range [start, end), of pages or of bytes depending on use. */
struct pmem_range {
    uint64_t start;
    uint64_t end;
};

/*
 * Everything below is protected by pmem_lock, taken with interrupts
 * disabled.
 */
static struct spinlock pmem_lock = SPINLOCK_INITIALIZER;

static uint64_t pmem_bitmap[PMEM_MAX_PAGES / PMEM_WORD_BITS];

/* Set by a successful pmem_setup(); the bitmap meaning flips then. */
static bool pmem_ready;

/* Pages covered by the bitmap: the end of the highest usable page. */
static size_t pmem_span;

static size_t pmem_free_pages;
static size_t pmem_total_pages;

/* Where the next search starts (next-fit). */
static size_t pmem_hint;

/* Page ranges reserved before setup, disjoint; one spare slot for page 0. */
static struct pmem_range pmem_reserves[PMEM_RESERVE_MAX + 1];
static unsigned int pmem_nr_reserves;

/* Byte ranges of RAM above the limit, disjoint; overflow counted raw. */
static struct pmem_range pmem_ignored[PMEM_IGNORED_MAX];
static unsigned int pmem_nr_ignored;
static uint64_t pmem_ignored_overflow;

static unsigned int
pmem_popcount(uint64_t x)
{
    /* Open-coded: __builtin_popcountll may become a libgcc call. */
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
    return (x * 0x0101010101010101ULL) >> 56;
}

/* Mask of the bits [first % 64, first % 64 + count) within one word. */
static uint64_t
pmem_word_mask(size_t first, size_t count)
{
    size_t bit = first % PMEM_WORD_BITS;

    if (count == PMEM_WORD_BITS) {
        return ~0ULL;
    }

    return ((1ULL << count) - 1) << bit;
}

static void
pmem_bitmap_fill(size_t first, size_t end, bool set)
{
    while (first < end) {
        size_t count = MIN(PMEM_WORD_BITS - first % PMEM_WORD_BITS,
                           end - first);
        uint64_t mask = pmem_word_mask(first, count);

        if (set) {
            pmem_bitmap[first / PMEM_WORD_BITS] |= mask;
        } else {
            pmem_bitmap[first / PMEM_WORD_BITS] &= ~mask;
        }

        first += count;
    }
}

static size_t
pmem_bitmap_count(size_t first, size_t end)
{
    size_t total = 0;

    while (first < end) {
        size_t count = MIN(PMEM_WORD_BITS - first % PMEM_WORD_BITS,
                           end - first);
        uint64_t mask = pmem_word_mask(first, count);

        total += pmem_popcount(pmem_bitmap[first / PMEM_WORD_BITS] & mask);
        first += count;
    }

    return total;
}

/* First index in [first, end) whose bit equals set, or end. */
static size_t
pmem_bitmap_find(size_t first, size_t end, bool set)
{
    while (first < end) {
        uint64_t word = pmem_bitmap[first / PMEM_WORD_BITS];

        if (!set) {
            word = ~word;
        }

        word &= ~0ULL << (first % PMEM_WORD_BITS);

        if (word != 0) {
            size_t found = P2ALIGN(first, PMEM_WORD_BITS)
                           + __builtin_ctzll(word);
            return MIN(found, end);
        }

        first = P2ALIGN(first, PMEM_WORD_BITS) + PMEM_WORD_BITS;
    }

    return end;
}

/* First run of npages clear bits starting in [first, end). */
static size_t
pmem_run_find(size_t first, size_t end, size_t npages)
{
    for (;;) {
        size_t start, stop;

        start = pmem_bitmap_find(first, end, false);

        if ((start >= end) || (npages > end - start)) {
            return PMEM_NOT_FOUND;
        }

        stop = pmem_bitmap_find(start, start + npages, true);

        if (stop == start + npages) {
            return start;
        }

        first = stop;
    }
}

/*
 * Add [start, end) to a set of disjoint ranges, merging it with those it
 * overlaps or touches.  Returns false, with the set unchanged, when it needs
 * a new slot and all max are taken.
 */
static bool
pmem_range_insert(struct pmem_range *ranges, unsigned int *nrp,
                  unsigned int max, uint64_t start, uint64_t end)
{
    unsigned int i, nr;

    nr = *nrp;

    for (i = 0; i < nr; i++) {
        if ((ranges[i].start <= end) && (start <= ranges[i].end)) {
            break;
        }
    }

    if ((i == nr) && (nr == max)) {
        return false;
    }

    i = 0;

    while (i < nr) {
        if ((ranges[i].start <= end) && (start <= ranges[i].end)) {
            start = MIN(start, ranges[i].start);
            end = MAX(end, ranges[i].end);
            nr--;
            ranges[i] = ranges[nr];
        } else {
            i++;
        }
    }

    ranges[nr].start = start;
    ranges[nr].end = end;
    *nrp = nr + 1;
    return true;
}

static void
pmem_ignore(uint64_t start, uint64_t end)
{
    if (!pmem_range_insert(pmem_ignored, &pmem_nr_ignored, PMEM_IGNORED_MAX,
                           start, end)) {
        /* Only the report suffers: overlaps may then be counted twice. */
        pmem_ignored_overflow += end - start;
    }
}

void
pmem_region_add(uint64_t start, uint64_t end)
{
    unsigned long flags;

    spinlock_lock_intr_save(&pmem_lock, &flags);

    if (pmem_ready) {
        spinlock_unlock_intr_restore(&pmem_lock, flags);
        assert(!pmem_ready);
        return;
    }

    if (start > UINT64_MAX - (PAGE_SIZE - 1)) {
        goto out;
    }

    start = P2ROUND(start, PAGE_SIZE);
    end = P2ALIGN(end, PAGE_SIZE);

    if (start >= end) {
        goto out;
    }

    if (end > PMEM_MAX_ADDR) {
        pmem_ignore(MAX(start, PMEM_MAX_ADDR), end);
        end = PMEM_MAX_ADDR;
    }

    if (start < end) {
        pmem_bitmap_fill(start >> PAGE_SHIFT, end >> PAGE_SHIFT, true);
        pmem_span = MAX(pmem_span, (size_t)(end >> PAGE_SHIFT));
    }

out:
    spinlock_unlock_intr_restore(&pmem_lock, flags);
}

void
pmem_reserve(uint64_t start, uint64_t end)
{
    unsigned long flags;
    size_t first, last;
    bool slot_found, range_free;

    if ((start >= end) || (start >= PMEM_MAX_ADDR)) {
        return;
    }

    end = MIN(end, PMEM_MAX_ADDR);
    first = start >> PAGE_SHIFT;
    last = DIV_CEIL(end, PAGE_SIZE);

    spinlock_lock_intr_save(&pmem_lock, &flags);

    if (!pmem_ready) {
        slot_found = pmem_range_insert(pmem_reserves, &pmem_nr_reserves,
                                       PMEM_RESERVE_MAX, first, last);
        spinlock_unlock_intr_restore(&pmem_lock, flags);
        assert(slot_found);
        return;
    }

    last = MIN(last, pmem_span);

    if (first >= last) {
        spinlock_unlock_intr_restore(&pmem_lock, flags);
        return;
    }

    range_free = (pmem_bitmap_find(first, last, true) == last);

    if (range_free) {
        pmem_bitmap_fill(first, last, true);
        pmem_free_pages -= last - first;
        pmem_total_pages -= last - first;
    }

    spinlock_unlock_intr_restore(&pmem_lock, flags);
    assert(range_free);
}

int
pmem_setup(void)
{
    unsigned long flags;
    size_t usable, first, last, i;
    bool page0_reserved;

    spinlock_lock_intr_save(&pmem_lock, &flags);

    if (pmem_ready) {
        spinlock_unlock_intr_restore(&pmem_lock, flags);
        return -EBUSY;
    }

    /* The spare slot guarantees room; reserving page 0 twice is harmless. */
    page0_reserved = pmem_range_insert(pmem_reserves, &pmem_nr_reserves,
                                       ARRAY_SIZE(pmem_reserves), 0, 1);
    assert(page0_reserved);

    /* Count before changing anything, so that failure changes nothing. */
    usable = pmem_bitmap_count(0, pmem_span);

    for (i = 0; i < pmem_nr_reserves; i++) {
        first = MIN(pmem_reserves[i].start, pmem_span);
        last = MIN(pmem_reserves[i].end, pmem_span);
        usable -= pmem_bitmap_count(first, last);
    }

    if (usable == 0) {
        spinlock_unlock_intr_restore(&pmem_lock, flags);
        return -ENOMEM;
    }

    for (i = 0; i < pmem_nr_reserves; i++) {
        first = MIN(pmem_reserves[i].start, pmem_span);
        last = MIN(pmem_reserves[i].end, pmem_span);
        pmem_bitmap_fill(first, last, false);
    }

    for (i = 0; i < DIV_CEIL(pmem_span, PMEM_WORD_BITS); i++) {
        pmem_bitmap[i] = ~pmem_bitmap[i];
    }

    pmem_free_pages = usable;
    pmem_total_pages = usable;
    pmem_hint = 0;
    pmem_ready = true;

    spinlock_unlock_intr_restore(&pmem_lock, flags);
    return 0;
}

uint64_t
pmem_alloc(size_t npages)
{
    unsigned long flags;
    size_t first;

    if (npages == 0) {
        return 0;
    }

    spinlock_lock_intr_save(&pmem_lock, &flags);

    if (npages > pmem_free_pages) {
        spinlock_unlock_intr_restore(&pmem_lock, flags);
        return 0;
    }

    first = pmem_run_find(pmem_hint, pmem_span, npages);

    if (first == PMEM_NOT_FOUND) {
        /* Wrap around; the run may end past the hint. */
        first = pmem_run_find(0, MIN(pmem_span, pmem_hint + npages - 1),
                              npages);
    }

    if (first == PMEM_NOT_FOUND) {
        spinlock_unlock_intr_restore(&pmem_lock, flags);
        return 0;
    }

    pmem_bitmap_fill(first, first + npages, true);
    pmem_free_pages -= npages;
    pmem_hint = first + npages;

    if (pmem_hint >= pmem_span) {
        pmem_hint = 0;
    }

    spinlock_unlock_intr_restore(&pmem_lock, flags);
    return (uint64_t)first << PAGE_SHIFT;
}

void
pmem_free(uint64_t pa, size_t npages)
{
    unsigned long flags;
    size_t first;
    bool allocated_run;

    if (npages == 0) {
        return;
    }

    first = pa >> PAGE_SHIFT;

    spinlock_lock_intr_save(&pmem_lock, &flags);

    /* Page 0 is reserved: it cannot come from pmem_alloc(). */
    allocated_run = pmem_ready && P2ALIGNED(pa, PAGE_SIZE) && (first != 0)
         && (first < pmem_span) && (npages <= pmem_span - first)
         && (pmem_bitmap_find(first, first + npages, false)
             == first + npages);

    if (allocated_run) {
        pmem_bitmap_fill(first, first + npages, false);
        pmem_free_pages += npages;
    }

    spinlock_unlock_intr_restore(&pmem_lock, flags);
    assert(allocated_run);
}

/* A count of pages that pmem_lock protects, read under the lock. */
static size_t
pmem_read_locked(const size_t *count)
{
    unsigned long flags;
    size_t value;

    spinlock_lock_intr_save(&pmem_lock, &flags);
    value = *count;
    spinlock_unlock_intr_restore(&pmem_lock, flags);
    return value;
}

size_t
pmem_nr_free(void)
{
    return pmem_read_locked(&pmem_free_pages);
}

size_t
pmem_nr_total(void)
{
    return pmem_read_locked(&pmem_total_pages);
}

uint64_t
pmem_max_addr(void)
{
    return (uint64_t)pmem_read_locked(&pmem_span) << PAGE_SHIFT;
}

size_t
pmem_ignored_bytes(void)
{
    unsigned long flags;
    uint64_t bytes;
    unsigned int i;

    spinlock_lock_intr_save(&pmem_lock, &flags);
    bytes = pmem_ignored_overflow;

    for (i = 0; i < pmem_nr_ignored; i++) {
        bytes += pmem_ignored[i].end - pmem_ignored[i].start;
    }

    spinlock_unlock_intr_restore(&pmem_lock, flags);
    return bytes;
}

void *
pmem_va(uint64_t pa)
{
    return (void *)(uintptr_t)(pa + DIRECT_MAP_BASE);
}

uint64_t
pmem_pa(const void *va)
{
    uintptr_t addr = (uintptr_t)va;

    /* The kernel image lies above the direct map, not inside it. */
    assert((addr >= DIRECT_MAP_BASE) && (addr < KERNEL_VMA));
    return addr - DIRECT_MAP_BASE;
}

#ifdef TALLY_HOST_TEST
void
pmem_reset(void)
{
    spinlock_init(&pmem_lock);
    memset(pmem_bitmap, 0, sizeof(pmem_bitmap));
    pmem_ready = false;
    pmem_span = 0;
    pmem_free_pages = 0;
    pmem_total_pages = 0;
    pmem_hint = 0;
    pmem_nr_reserves = 0;
    pmem_nr_ignored = 0;
    pmem_ignored_overflow = 0;
}
#endif /* TALLY_HOST_TEST */
