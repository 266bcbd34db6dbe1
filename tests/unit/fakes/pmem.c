/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fake of kern/pmem.c for host tests of its users: pages come from a
 * page-aligned host arena, physical addresses are arena offsets plus one
 * page (so that 0 still means failure), and the number of pages that may be
 * allocated at once can be limited to simulate exhaustion.  Frees are
 * checked as strictly as the real allocator does (alignment, range, double
 * free), with the same assertions.
 *
 * Test control, declared by the tests that use it:
 *   void fake_pmem_set_limit(size_t npages);   at most npages allocated
 *   size_t fake_pmem_nr_allocated(void);
 *   void fake_pmem_reset(void);                everything free, no limit
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "kern/assert.h"
#include "kern/param.h"
#include "kern/pmem.h"

#define FAKE_PMEM_PAGES     4096    /* 16 MiB arena */

static char *fake_pmem_arena;
static bool fake_pmem_allocated[FAKE_PMEM_PAGES];
static size_t fake_pmem_nr_used;
static size_t fake_pmem_limit = FAKE_PMEM_PAGES;   /* pages */

void fake_pmem_set_limit(size_t npages);
size_t fake_pmem_nr_allocated(void);
void fake_pmem_reset(void);

static void
fake_pmem_init(void)
{
    if (fake_pmem_arena == NULL) {
        fake_pmem_arena = aligned_alloc(PAGE_SIZE,
                                        FAKE_PMEM_PAGES * PAGE_SIZE);
        assert(fake_pmem_arena != NULL);
    }
}

void
fake_pmem_set_limit(size_t npages)
{
    fake_pmem_limit = npages;
}

size_t
fake_pmem_nr_allocated(void)
{
    return fake_pmem_nr_used;
}

void
fake_pmem_reset(void)
{
    size_t i;

    for (i = 0; i < FAKE_PMEM_PAGES; i++) {
        fake_pmem_allocated[i] = false;
    }

    fake_pmem_nr_used = 0;
    fake_pmem_limit = FAKE_PMEM_PAGES;
}

uint64_t
pmem_alloc(size_t npages)
{
    size_t i, j;

    fake_pmem_init();

    if ((npages == 0) || (fake_pmem_nr_used >= fake_pmem_limit)
        || (npages > fake_pmem_limit - fake_pmem_nr_used)) {
        return 0;
    }

    for (i = 0; i + npages <= FAKE_PMEM_PAGES; i++) {
        for (j = 0; j < npages; j++) {
            if (fake_pmem_allocated[i + j]) {
                break;
            }
        }

        if (j == npages) {
            for (j = 0; j < npages; j++) {
                fake_pmem_allocated[i + j] = true;
            }

            fake_pmem_nr_used += npages;
            return (uint64_t)(i + 1) * PAGE_SIZE;
        }

        i += j;
    }

    return 0;
}

void
pmem_free(uint64_t pa, size_t npages)
{
    size_t first, i;
    bool allocated_run;

    if (npages == 0) {
        return;
    }

    first = pa / PAGE_SIZE;
    allocated_run = (pa % PAGE_SIZE == 0) && (first >= 1)
                    && (first - 1 < FAKE_PMEM_PAGES)
                    && (npages <= FAKE_PMEM_PAGES - (first - 1));

    for (i = 0; allocated_run && (i < npages); i++) {
        allocated_run = fake_pmem_allocated[first - 1 + i];
    }

    assert(allocated_run);

    if (!allocated_run) {
        return;
    }

    for (i = 0; i < npages; i++) {
        fake_pmem_allocated[first - 1 + i] = false;
    }

    fake_pmem_nr_used -= npages;
}

void *
pmem_va(uint64_t pa)
{
    fake_pmem_init();
    assert((pa >= PAGE_SIZE) && (pa <= (FAKE_PMEM_PAGES + 1) * PAGE_SIZE));
    return fake_pmem_arena + (pa - PAGE_SIZE);
}

uint64_t
pmem_pa(const void *va)
{
    const char *p = va;

    assert((p >= fake_pmem_arena)
           && (p < fake_pmem_arena + FAKE_PMEM_PAGES * PAGE_SIZE));
    return (uint64_t)(p - fake_pmem_arena) + PAGE_SIZE;
}

size_t
pmem_nr_free(void)
{
    return FAKE_PMEM_PAGES - fake_pmem_nr_used;
}

size_t
pmem_nr_total(void)
{
    return FAKE_PMEM_PAGES;
}
