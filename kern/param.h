/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Machine parameters shared by the whole kernel.
 *
 * Virtual memory layout (x86-64, 4-level paging):
 *
 *   DIRECT_MAP_BASE  0xffff800000000000  all physical memory, mapped 1:1
 *                                        (the first 4 GiB from boot on)
 *   KERNEL_VMA       0xffffffff80000000  the kernel image (-mcmodel=kernel),
 *                                        physical address KERNEL_PMA
 */

#ifndef KERN_PARAM_H
#define KERN_PARAM_H

#define PAGE_SHIFT          12
#define PAGE_SIZE           (1UL << PAGE_SHIFT)

#define KERNEL_VMA          0xffffffff80000000UL
#define KERNEL_PMA          0x200000UL
#define DIRECT_MAP_BASE     0xffff800000000000UL

/* Largest number of CPUs the kernel manages. */
#define CPU_MAX             64

#endif /* KERN_PARAM_H */
