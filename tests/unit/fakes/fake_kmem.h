/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * What the heap fake (fakes/kmem.c) lets a test see and do: the objects
 * and bytes still allocated, and a failure of the n+1-th allocation from
 * now (FAKE_KMEM_NEVER: no failure).
 */

#ifndef TESTS_UNIT_FAKES_FAKE_KMEM_H
#define TESTS_UNIT_FAKES_FAKE_KMEM_H

#include <stddef.h>

#define FAKE_KMEM_NEVER     (~0U)

void fake_kmem_reset(void);
size_t fake_kmem_live(void);
size_t fake_kmem_live_bytes(void);
void fake_kmem_fail_after_n(unsigned int n);

#endif /* TESTS_UNIT_FAKES_FAKE_KMEM_H */
