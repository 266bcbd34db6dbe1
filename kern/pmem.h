/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Physical page allocator.  One bit per page of physical memory below
 * PMEM_MAX_ADDR says whether the page may be handed out; RAM above that limit
 * is ignored (and accounted, so that boot code can tell the user).  Runs of
 * pages are physically contiguous and found first-fit from a rotating hint,
 * which makes single-page allocation O(1) amortized.  Physical address 0 is
 * never handed out, so 0 means failure.
 *
 * Boot sequence: pmem_region_add() for every usable range of the firmware
 * memory map, pmem_reserve() for what is already in use (kernel image, boot
 * information, low memory), then pmem_setup().  Every function takes the
 * allocator lock with interrupts disabled, so they may be called from thread
 * or interrupt context (never from NMI context).
 */

#ifndef KERN_PMEM_H
#define KERN_PMEM_H

#include <stddef.h>
#include <stdint.h>

#include "kern/param.h"

/* Physical memory at or above this address is ignored (16 GiB). */
#define PMEM_MAX_ADDR       (1UL << 34)

/* Reservations recorded before pmem_setup(); more is a boot-code bug. */
#define PMEM_RESERVE_MAX    32

/*
 * Declare [start, end) as usable RAM.  Bounds that are not page-aligned are
 * shrunk to whole pages; empty ranges are ignored; ranges may overlap or
 * repeat.  The part at or above PMEM_MAX_ADDR is ignored and counted in
 * pmem_ignored_bytes().  Only before pmem_setup() (asserted).
 */
void pmem_region_add(uint64_t start, uint64_t end);

/*
 * Never hand out [start, end), rounded outward to whole pages.  Before
 * pmem_setup() the range may lie anywhere (inside, across or outside the
 * usable regions; at most PMEM_RESERVE_MAX calls, asserted).  After it, the
 * part of the range below pmem_max_addr() must be free memory (asserted): the
 * pages are taken out of the allocator for good.
 */
void pmem_reserve(uint64_t start, uint64_t end);

/*
 * Make the allocator usable: every page of the declared regions that is not
 * reserved becomes free.  Page 0 is always reserved.  Returns 0, -ENOMEM when
 * no usable page is left (the allocator then hands out nothing), or -EBUSY
 * when called a second time (nothing changes).
 */
int pmem_setup(void);

/*
 * Allocate npages physically contiguous pages.  Returns the physical address
 * of the first one (page-aligned), or 0 when npages is 0, before
 * pmem_setup(), or when no free run of that length exists.  The contents of
 * the pages are undefined.
 */
uint64_t pmem_alloc(size_t npages);

/*
 * Free npages pages starting at pa, all of which must have been returned by
 * pmem_alloc() and not freed since.  A misaligned or out-of-range pa, or a
 * page that is free (double free), fails an assertion and leaves the
 * allocator unchanged.  The bitmap does not tell reserved pages and holes
 * from allocated ones, so freeing one of those is not caught.  npages == 0
 * is a no-op.
 */
void pmem_free(uint64_t pa, size_t npages);

/* Pages currently free. */
size_t pmem_nr_free(void);

/* Pages managed: usable, not reserved, free or allocated. */
size_t pmem_nr_total(void);

/*
 * End of the highest usable page below PMEM_MAX_ADDR (reserved or not): the
 * extent the direct map must cover.  0 before any region is declared.
 */
uint64_t pmem_max_addr(void);

/* Bytes of usable RAM at or above PMEM_MAX_ADDR, ignored by the allocator. */
size_t pmem_ignored_bytes(void);

/* Direct map translation: va = pa + DIRECT_MAP_BASE. */
void *pmem_va(uint64_t pa);

/* Inverse of pmem_va(); va must lie in the direct map (asserted). */
uint64_t pmem_pa(const void *va);

#ifdef TALLY_HOST_TEST
/* Forget every region, reservation and allocation (host tests only). */
void pmem_reset(void);
#endif

#endif /* KERN_PMEM_H */
