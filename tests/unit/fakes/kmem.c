/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fake of the kernel heap for host tests of modules that allocate: the C
 * library's allocator, with the live objects and bytes counted so that a
 * test can check that everything allocated was freed (fake_kmem.h), and a
 * failure injected on demand.
 */

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "fakes/fake_kmem.h"
#include "kern/kmem.h"

static size_t fake_kmem_nr_live;
static size_t fake_kmem_bytes_live;
static unsigned int fake_kmem_fail_after = FAKE_KMEM_NEVER;

void
fake_kmem_reset(void)
{
    fake_kmem_nr_live = 0;
    fake_kmem_bytes_live = 0;
    fake_kmem_fail_after = FAKE_KMEM_NEVER;
}

size_t
fake_kmem_live(void)
{
    return fake_kmem_nr_live;
}

size_t
fake_kmem_live_bytes(void)
{
    return fake_kmem_bytes_live;
}

void
fake_kmem_fail_after_n(unsigned int n)
{
    fake_kmem_fail_after = n;
}

static void *
fake_kmem_get(size_t size, size_t align)
{
    void *ptr;

    if (size == 0 || fake_kmem_fail_after == 0) {
        return NULL;
    }

    if (fake_kmem_fail_after != FAKE_KMEM_NEVER) {
        fake_kmem_fail_after--;
    }

    ptr = aligned_alloc(align, (size + align - 1) / align * align);

    if (ptr != NULL) {
        fake_kmem_nr_live++;
        fake_kmem_bytes_live += size;
    }

    return ptr;
}

void *
kmem_alloc(size_t size)
{
    return fake_kmem_get(size, KMEM_ALIGN_MIN);
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

void *
kmem_alloc_aligned(size_t size, size_t align)
{
    return fake_kmem_get(size, align < KMEM_ALIGN_MIN ? KMEM_ALIGN_MIN
                                                      : align);
}

void
kmem_free(void *ptr, size_t size)
{
    if (ptr == NULL) {
        return;
    }

    fake_kmem_nr_live--;
    fake_kmem_bytes_live -= size;
    free(ptr);
}
