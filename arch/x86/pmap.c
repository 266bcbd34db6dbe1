/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Kernel page tables: extension of the direct map beyond the first 4 GiB
 * with 2 MiB pages (Intel SDM vol. 3A, 4.5, 4-level paging).
 */

#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/pmap.h"
#include "kern/error.h"
#include "kern/init.h"
#include "kern/log.h"
#include "kern/mem.h"
#include "kern/param.h"
#include "kern/pmem.h"
#include "kern/string.h"

#define PMAP_PTE_P          0x001UL
#define PMAP_PTE_W          0x002UL
#define PMAP_PTE_PS         0x080UL
#define PMAP_PTE_ADDR_MASK  0x000ffffffffff000UL
#define PMAP_L2_SIZE        (1UL << 21)
#define PMAP_L3_SIZE        (1UL << 30)

extern uint64_t boot_pml4[512];

uint64_t
pmap_kernel_cr3(void)
{
    return (uint64_t)boot_pml4;     /* .boot is linked at its physical address */
}

static uint64_t *
pmap_table(uint64_t entry)
{
    return pmem_va(entry & PMAP_PTE_ADDR_MASK);
}

/* Return the table an entry points to, allocating it when absent. */
static uint64_t *
pmap_walk_alloc(uint64_t *entry)
{
    uint64_t pa;

    if ((*entry & PMAP_PTE_P) == 0) {
        pa = pmem_alloc(1);

        if (pa == 0) {
            return NULL;
        }

        memset(pmem_va(pa), 0, PAGE_SIZE);
        *entry = pa | PMAP_PTE_P | PMAP_PTE_W;
    }

    return pmap_table(*entry);
}

static int
pmap_map_direct_2m(uint64_t pa)
{
    uint64_t va = DIRECT_MAP_BASE + pa;
    uint64_t *pml4 = pmem_va(pmap_kernel_cr3());
    uint64_t *pdpt, *pd;

    pdpt = pmap_walk_alloc(&pml4[(va >> 39) & 511]);

    if (pdpt == NULL) {
        return -ENOMEM;
    }

    pd = pmap_walk_alloc(&pdpt[(va >> 30) & 511]);

    if (pd == NULL) {
        return -ENOMEM;
    }

    pd[(va >> 21) & 511] = pa | PMAP_PTE_P | PMAP_PTE_W | PMAP_PTE_PS;
    return 0;
}

static int
pmap_setup(void)
{
    uint64_t end = pmem_max_addr();
    int error;

    for (uint64_t pa = PMAP_BOOT_MAPPED; pa < end; pa += PMAP_L2_SIZE) {
        error = pmap_map_direct_2m(pa);

        if (error) {
            log_error("pmap: cannot map RAM above %lu MiB: %s", pa >> 20,
                      error_str(error));
            return error;
        }
    }

    if (end > PMAP_BOOT_MAPPED) {
        log_info("pmap: direct map extended to %lu MiB", end >> 20);
    }

    return 0;
}

INIT_OP_DEFINE(pmap_setup, INIT_OP_DEP(mem_setup, true));

void
pmap_drop_identity(void)
{
    uint64_t *pml4 = pmem_va(pmap_kernel_cr3());

    pml4[0] = 0;
    cpu_set_cr3(cpu_get_cr3());
}
