/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Memory bring-up and the `mem` shell command.
 */

#include <stdint.h>

#include "arch/x86/multiboot2.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/init.h"
#include "kern/kmem.h"
#include "kern/log.h"
#include "kern/mem.h"
#include "kern/param.h"
#include "kern/pmem.h"
#include "kern/shell.h"

/* Below 1 MiB: BIOS data, the EBDA, the AP trampoline page. */
#define MEM_LOW_RESERVED    0x100000UL

extern char _kernel_end[];

static int
mem_setup(void)
{
    const struct multiboot2_info *mbi = &multiboot2_info;
    int error;

    for (unsigned int i = 0; i < mbi->nr_regions; i++) {
        if (mbi->regions[i].type == MULTIBOOT2_MMAP_AVAILABLE) {
            pmem_region_add(mbi->regions[i].start, mbi->regions[i].end);
        }
    }

    pmem_reserve(0, MEM_LOW_RESERVED);
    pmem_reserve(KERNEL_PMA, (uint64_t)_kernel_end - KERNEL_VMA);
    pmem_reserve(mbi->info_pa, mbi->info_pa + mbi->info_size);
    error = pmem_setup();

    if (error) {
        log_error("mem: no usable memory in the memory map");
        return error;
    }

    log_info("mem: %zu MiB usable, %zu MiB free",
             pmem_nr_total() * PAGE_SIZE >> 20,
             pmem_nr_free() * PAGE_SIZE >> 20);

    if (pmem_ignored_bytes() != 0) {
        log_warning("mem: %zu MiB above the supported limit ignored",
                    pmem_ignored_bytes() >> 20);
    }

    return 0;
}

INIT_OP_DEFINE(mem_setup);

static int
mem_cmd(int argc, char **argv)
{
    struct kmem_stats stats;

    (void)argv;

    if (argc != 1) {
        kprintf("usage: mem\n");
        return SHELL_ERR_REPORTED;
    }

    kmem_stats_get(&stats);
    kprintf("pages:  %zu total, %zu free (%zu KiB free)\n", pmem_nr_total(),
            pmem_nr_free(), pmem_nr_free() * PAGE_SIZE / 1024);
    kprintf("heap:   %zu objects, %zu bytes in use, %zu pages held, "
            "%zu failed allocations\n", stats.nr_allocs, stats.bytes_in_use,
            stats.nr_pages, stats.nr_failures);
    return 0;
}

SHELL_COMMAND(mem, "mem", "", "show physical memory and heap usage", mem_cmd);
