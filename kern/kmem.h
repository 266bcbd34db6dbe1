/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Kernel heap.  Requests up to KMEM_SMALL_MAX bytes come from one-page slabs
 * of power-of-two size classes (16 to 2048 bytes), where each object is
 * naturally aligned to its class size; larger requests take whole pages from
 * the physical page allocator.  Objects carry no header: the caller passes
 * the size it asked for back to kmem_free(), and misuse (wrong size, double
 * free, pointer that is not an object) fails an assertion.  A slab whose
 * objects are all free goes back to the page allocator at once.  Freed small
 * objects are filled with KMEM_POISON to make use-after-free visible.
 *
 * Every function takes the heap lock with interrupts disabled, so they may
 * be called from thread or interrupt context (never from NMI context).
 * Allocation never sleeps.
 */

#ifndef KERN_KMEM_H
#define KERN_KMEM_H

#include <stddef.h>

/* Largest request served from a slab; larger ones take whole pages. */
#define KMEM_SMALL_MAX      2048

/* Smallest alignment of every object. */
#define KMEM_ALIGN_MIN      16

/* Byte written over freed small objects. */
#define KMEM_POISON         0x6b

/*
 * Allocate size bytes, aligned to at least KMEM_ALIGN_MIN (a small object to
 * its class size, a large one to a page).  Returns NULL when size is 0 or
 * memory is exhausted (counted in nr_failures); the contents are undefined.
 */
void *kmem_alloc(size_t size);

/* kmem_alloc(), then the size bytes are zeroed. */
void *kmem_zalloc(size_t size);

/*
 * Allocate size bytes aligned to align, which must be a power of two no
 * larger than PAGE_SIZE: otherwise, or when size is 0, returns NULL.  Free
 * the result with kmem_free(ptr, size) like any other object.
 */
void *kmem_alloc_aligned(size_t size, size_t align);

/*
 * Free an object.  size must be the size passed when it was allocated.
 * NULL is a no-op.  A pointer that is not a live object of that size (wrong
 * size, double free, pointer inside an object) fails an assertion and
 * changes nothing.  For a large object, detection is that of pmem_free(): a
 * size covering pages not allocated is caught, a too small one is not.
 */
void kmem_free(void *ptr, size_t size);

/* Snapshot of the heap counters. */
struct kmem_stats {
    size_t nr_allocs;       /* live objects */
    size_t bytes_in_use;    /* sum of the sizes requested for them */
    size_t nr_pages;        /* pages held from pmem, slabs and large objects */
    size_t nr_failures;     /* allocations refused for lack of memory */
};

void kmem_stats_get(struct kmem_stats *stats);

#ifdef TALLY_HOST_TEST
/*
 * Forget every slab and counter, without giving pages back (host tests only,
 * together with a reset of the fake page allocator).
 */
void kmem_reset(void);
#endif

#endif /* KERN_KMEM_H */
