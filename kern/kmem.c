/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Kernel heap: one-page slabs for power-of-two size classes, whole pages
 * from pmem for larger requests.  A slab starts with its header, which takes
 * the first slot(s) of the class, so that the slab of any small object is
 * found by aligning the pointer down to a page and no object needs a header
 * of its own.  Small objects are therefore never page-aligned, which tells
 * them apart from large ones when they are freed.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/assert.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/perfmon_region.h"
#include "kern/param.h"
#include "kern/pmem.h"
#include "kern/spinlock.h"
#include "kern/string.h"

#define KMEM_CLASS_MIN_SHIFT    4
#define KMEM_NR_CLASSES         8       /* 16, 32, ..., 2048 */
#define KMEM_SLOTS_MAX          (PAGE_SIZE >> KMEM_CLASS_MIN_SHIFT)
#define KMEM_WORD_BITS          64
#define KMEM_SLAB_MAGIC         0x6b6d736cU

/* Largest request that can be rounded up to whole pages without overflow. */
#define KMEM_SIZE_MAX           (SIZE_MAX - PAGE_SIZE + 1)

/*
 * Slab header, at the start of its page.  A slab is on the partial list of
 * its class while it has at least one free slot.  Slots covered by the
 * header, and bits beyond the last slot, are permanently marked used.
 *
 * An object allocated with an alignment larger than its size lives in a
 * bigger class than its size maps to; its bit in oversized lets kmem_free()
 * accept the size the caller asked for.  Only classes of 32 bytes and more
 * can hold such objects, hence half as many bits.
 */
struct kmem_slab {
    struct kmem_slab *next;
    struct kmem_slab *prev;
    uint32_t magic;
    uint16_t class_index;
    uint16_t nr_used;               /* live objects */
    uint64_t used[KMEM_SLOTS_MAX / KMEM_WORD_BITS];
    uint64_t oversized[KMEM_SLOTS_MAX / 2 / KMEM_WORD_BITS];
};

/* Everything below is protected by kmem_lock, taken with interrupts off. */
static struct spinlock kmem_lock = SPINLOCK_INITIALIZER;

/* Per class, the slabs with free slots (doubly linked, NULL-terminated). */
static struct kmem_slab *kmem_partial[KMEM_NR_CLASSES];

static struct kmem_stats kmem_stats;

static size_t
kmem_class_size(unsigned int class_index)
{
    return (size_t)1 << (class_index + KMEM_CLASS_MIN_SHIFT);
}

/* Class of a request of 1 to KMEM_SMALL_MAX bytes. */
static unsigned int
kmem_class_index(size_t size)
{
    if (size <= ((size_t)1 << KMEM_CLASS_MIN_SHIFT)) {
        return 0;
    }

    /* Bits needed for size - 1 is the log2 of size rounded up. */
    return (sizeof(unsigned long) * 8 - __builtin_clzl(size - 1))
           - KMEM_CLASS_MIN_SHIFT;
}

static unsigned int
kmem_header_slots(unsigned int class_index)
{
    return DIV_CEIL(sizeof(struct kmem_slab), kmem_class_size(class_index));
}

static unsigned int
kmem_nr_slots(unsigned int class_index)
{
    return PAGE_SIZE / kmem_class_size(class_index);
}

static unsigned int
kmem_capacity(unsigned int class_index)
{
    return kmem_nr_slots(class_index) - kmem_header_slots(class_index);
}

static bool
kmem_bit_test(const uint64_t *bits, unsigned int i)
{
    return (bits[i / KMEM_WORD_BITS] >> (i % KMEM_WORD_BITS)) & 1;
}

static void
kmem_bit_assign(uint64_t *bits, unsigned int i, bool value)
{
    uint64_t mask = 1ULL << (i % KMEM_WORD_BITS);

    if (value) {
        bits[i / KMEM_WORD_BITS] |= mask;
    } else {
        bits[i / KMEM_WORD_BITS] &= ~mask;
    }
}

static void
kmem_partial_push(struct kmem_slab *slab)
{
    struct kmem_slab **headp = &kmem_partial[slab->class_index];

    slab->prev = NULL;
    slab->next = *headp;

    if (*headp != NULL) {
        (*headp)->prev = slab;
    }

    *headp = slab;
}

static void
kmem_partial_remove(struct kmem_slab *slab)
{
    if (slab->prev != NULL) {
        slab->prev->next = slab->next;
    } else {
        kmem_partial[slab->class_index] = slab->next;
    }

    if (slab->next != NULL) {
        slab->next->prev = slab->prev;
    }

    slab->next = NULL;
    slab->prev = NULL;
}

/* Turn a fresh page into an empty slab; no lock needed, nobody sees it. */
static void
kmem_slab_init(struct kmem_slab *slab, unsigned int class_index)
{
    unsigned int i, first, end;

    first = kmem_header_slots(class_index);
    end = kmem_nr_slots(class_index);

    memset(slab, 0, sizeof(*slab));
    memset(slab->used, 0xff, sizeof(slab->used));

    for (i = first; i < end; i++) {
        kmem_bit_assign(slab->used, i, false);
    }

    slab->magic = KMEM_SLAB_MAGIC;
    slab->class_index = class_index;
    memset((char *)slab + first * kmem_class_size(class_index), KMEM_POISON,
           PAGE_SIZE - first * kmem_class_size(class_index));
}

static unsigned int
kmem_slab_slot_take(struct kmem_slab *slab)
{
    unsigned int i;

    for (i = 0; i < ARRAY_SIZE(slab->used); i++) {
        if (slab->used[i] != ~0ULL) {
            unsigned int slot = i * KMEM_WORD_BITS
                                + __builtin_ctzll(~slab->used[i]);

            kmem_bit_assign(slab->used, slot, true);
            slab->nr_used++;
            return slot;
        }
    }

    /* A slab on the partial list has a free slot. */
    assert(false);
    return 0;
}

static void
kmem_count_failure(void)
{
    unsigned long flags;

    spinlock_lock_intr_save(&kmem_lock, &flags);
    kmem_stats.nr_failures++;
    spinlock_unlock_intr_restore(&kmem_lock, flags);
}

static void *
kmem_small_alloc(size_t size, unsigned int class_index)
{
    struct kmem_slab *slab;
    unsigned long flags;
    unsigned int slot;
    bool oversized;
    uint64_t pa;

    spinlock_lock_intr_save(&kmem_lock, &flags);

    if (kmem_partial[class_index] == NULL) {
        /* Take the page without holding the heap lock. */
        spinlock_unlock_intr_restore(&kmem_lock, flags);
        pa = pmem_alloc(1);

        if (pa == 0) {
            kmem_count_failure();
            return NULL;
        }

        slab = pmem_va(pa);
        kmem_slab_init(slab, class_index);

        spinlock_lock_intr_save(&kmem_lock, &flags);
        kmem_partial_push(slab);
        kmem_stats.nr_pages++;
    }

    /* Not necessarily the new slab: another CPU may have freed an object. */
    slab = kmem_partial[class_index];
    slot = kmem_slab_slot_take(slab);
    oversized = (kmem_class_index(size) != class_index);

    if (class_index != 0) {
        kmem_bit_assign(slab->oversized, slot, oversized);
    }

    if (slab->nr_used == kmem_capacity(class_index)) {
        kmem_partial_remove(slab);
    }

    kmem_stats.nr_allocs++;
    kmem_stats.bytes_in_use += size;
    spinlock_unlock_intr_restore(&kmem_lock, flags);

    return (char *)slab + slot * kmem_class_size(class_index);
}

static void *
kmem_large_alloc(size_t size)
{
    unsigned long flags;
    uint64_t pa;
    size_t npages;

    if (size > KMEM_SIZE_MAX) {
        kmem_count_failure();
        return NULL;
    }

    npages = DIV_CEIL(size, PAGE_SIZE);
    pa = pmem_alloc(npages);

    if (pa == 0) {
        kmem_count_failure();
        return NULL;
    }

    spinlock_lock_intr_save(&kmem_lock, &flags);
    kmem_stats.nr_allocs++;
    kmem_stats.bytes_in_use += size;
    kmem_stats.nr_pages += npages;
    spinlock_unlock_intr_restore(&kmem_lock, flags);

    return pmem_va(pa);
}

void *
kmem_alloc(size_t size)
{
    return kmem_alloc_aligned(size, KMEM_ALIGN_MIN);
}

void *
kmem_zalloc(size_t size)
{
    void *ptr = kmem_alloc(size);

    if (ptr != NULL) {
        memset(ptr, 0, size);
    }

    return ptr;
}

PERFMON_REGION_DEFINE(kmem_alloc, "kmem_alloc");
PERFMON_REGION_DEFINE(kmem_free, "kmem_free");

void *
kmem_alloc_aligned(size_t size, size_t align)
{
    PERFMON_REGION_SCOPE(kmem_alloc);
    size_t rounded;

    if ((size == 0) || (align == 0) || !P2ALIGNED(align, align)
        || (align > PAGE_SIZE)) {
        return NULL;
    }

    /* Objects are aligned to their class size. */
    rounded = MAX(size, align);

    if (rounded > KMEM_SMALL_MAX) {
        return kmem_large_alloc(size);
    }

    return kmem_small_alloc(size, kmem_class_index(rounded));
}

/*
 * Whether ptr is a live object of slab that was allocated with the given
 * size.  The header is trusted only once its magic and class are sane.
 */
static bool
kmem_slab_owns(const struct kmem_slab *slab, const void *ptr, size_t size)
{
    unsigned int class_index, wanted, slot;
    size_t offset;

    if ((slab->magic != KMEM_SLAB_MAGIC)
        || (slab->class_index >= KMEM_NR_CLASSES)) {
        return false;
    }

    class_index = slab->class_index;
    wanted = kmem_class_index(size);
    offset = (const char *)ptr - (const char *)slab;

    if (!P2ALIGNED(offset, kmem_class_size(class_index))) {
        return false;
    }

    slot = offset / kmem_class_size(class_index);

    if ((slot < kmem_header_slots(class_index))
        || !kmem_bit_test(slab->used, slot)) {
        return false;
    }

    if (class_index == 0) {
        return wanted == 0;
    }

    if (kmem_bit_test(slab->oversized, slot)) {
        return wanted < class_index;
    }

    return wanted == class_index;
}

static void
kmem_small_free(void *ptr, size_t size)
{
    struct kmem_slab *slab;
    unsigned int class_index, slot;
    unsigned long flags;
    bool live_object;

    slab = (struct kmem_slab *)P2ALIGN((uintptr_t)ptr, PAGE_SIZE);

    spinlock_lock_intr_save(&kmem_lock, &flags);
    live_object = kmem_slab_owns(slab, ptr, size);

    if (!live_object) {
        spinlock_unlock_intr_restore(&kmem_lock, flags);
        assert(live_object);
        return;
    }

    class_index = slab->class_index;
    slot = ((char *)ptr - (char *)slab) / kmem_class_size(class_index);
    kmem_bit_assign(slab->used, slot, false);
    memset(ptr, KMEM_POISON, kmem_class_size(class_index));
    kmem_stats.nr_allocs--;
    kmem_stats.bytes_in_use -= size;

    if (slab->nr_used == kmem_capacity(class_index)) {
        kmem_partial_push(slab);
    }

    slab->nr_used--;

    if (slab->nr_used != 0) {
        spinlock_unlock_intr_restore(&kmem_lock, flags);
        return;
    }

    kmem_partial_remove(slab);
    slab->magic = 0;
    kmem_stats.nr_pages--;
    spinlock_unlock_intr_restore(&kmem_lock, flags);

    pmem_free(pmem_pa(slab), 1);
}

static void
kmem_large_free(void *ptr, size_t size)
{
    unsigned long flags;
    size_t npages;

    /* Checked before pmem_free(), so a failure leaves counters unchanged. */
    assert(P2ALIGNED((uintptr_t)ptr, PAGE_SIZE) && (size <= KMEM_SIZE_MAX));

    if (!P2ALIGNED((uintptr_t)ptr, PAGE_SIZE) || (size > KMEM_SIZE_MAX)) {
        return;
    }

    npages = DIV_CEIL(size, PAGE_SIZE);
    pmem_free(pmem_pa(ptr), npages);

    spinlock_lock_intr_save(&kmem_lock, &flags);
    kmem_stats.nr_allocs--;
    kmem_stats.bytes_in_use -= size;
    kmem_stats.nr_pages -= npages;
    spinlock_unlock_intr_restore(&kmem_lock, flags);
}

void
kmem_free(void *ptr, size_t size)
{
    PERFMON_REGION_SCOPE(kmem_free);

    if (ptr == NULL) {
        return;
    }

    /* kmem_alloc(0) never returns an object. */
    assert(size != 0);

    if (size == 0) {
        return;
    }

    /* Small objects are never page-aligned; page allocations always are. */
    if ((size > KMEM_SMALL_MAX) || P2ALIGNED((uintptr_t)ptr, PAGE_SIZE)) {
        kmem_large_free(ptr, size);
    } else {
        kmem_small_free(ptr, size);
    }
}

void
kmem_stats_get(struct kmem_stats *stats)
{
    unsigned long flags;

    spinlock_lock_intr_save(&kmem_lock, &flags);
    *stats = kmem_stats;
    spinlock_unlock_intr_restore(&kmem_lock, flags);
}

#ifdef TALLY_HOST_TEST
void
kmem_reset(void)
{
    unsigned int i;

    spinlock_init(&kmem_lock);

    for (i = 0; i < KMEM_NR_CLASSES; i++) {
        kmem_partial[i] = NULL;
    }

    memset(&kmem_stats, 0, sizeof(kmem_stats));
}
#endif /* TALLY_HOST_TEST */
