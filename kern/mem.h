/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Memory bring-up: feeds the firmware memory map to the page allocator,
 * reserving what is in use (low memory, the kernel image, the boot
 * information), and provides the `mem` shell command.
 */

#ifndef KERN_MEM_H
#define KERN_MEM_H

#include "kern/init.h"

/* Init operation: the page allocator and the heap are usable after it. */
INIT_OP_DECLARE(mem_setup);

#endif /* KERN_MEM_H */
