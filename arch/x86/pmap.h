/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Kernel page tables.
 *
 * The boot page tables (boot.asm) map the kernel image and the first 4 GiB
 * of physical memory in the direct map.  pmap_setup() extends the direct map
 * over all RAM the page allocator manages.  All CPUs share these tables.
 */

#ifndef ARCH_X86_PMAP_H
#define ARCH_X86_PMAP_H

#include <stdint.h>

/* The physical memory the boot page tables map: [0, 4 GiB). */
#define PMAP_BOOT_MAPPED    (4UL << 30)

/* Physical address of the kernel's top-level page table (for CR3). */
uint64_t pmap_kernel_cr3(void);

/* Remove the identity map of low memory (after the last AP has started). */
void pmap_drop_identity(void);

#endif /* ARCH_X86_PMAP_H */
