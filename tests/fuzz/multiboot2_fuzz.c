/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fuzz target: the multiboot2 information parser (arch/x86/multiboot2.c),
 * then the ACPI parser on the RSDP its ACPI tag holds, as acpi_setup()
 * does at boot.  The input is the information structure, possibly
 * followed by firmware tables (physical address N at offset N).  The
 * structure's total size is the one thing the kernel must trust (the
 * bootloader gave it that much memory): a total claiming more than the
 * input is cut to the input's size; every tag size may lie.
 *
 * Checked, besides every read staying inside the input: the regions are
 * non-empty and within bounds, the command line and the RSDP lie inside
 * the structure, the command line ends inside it.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86/acpi.h"
#include "arch/x86/multiboot2.h"
#include "fuzz.h"
#include "kern/error.h"

static void
mb2_fuzz_check(const uint8_t *info, size_t total)
{
    const struct multiboot2_info *mi = &multiboot2_info;
    const char *end = (const char *)info + total;

    fuzz_check(mi->nr_regions <= MULTIBOOT2_MAX_REGIONS);

    for (unsigned int i = 0; i < mi->nr_regions; i++) {
        fuzz_check(mi->regions[i].start < mi->regions[i].end);
    }

    if (mi->cmdline[0] != '\0') {
        fuzz_check(mi->cmdline > (const char *)info && mi->cmdline < end);
        fuzz_check(memchr(mi->cmdline, '\0', end - mi->cmdline) != NULL);
    }

    if (mi->rsdp != NULL) {
        fuzz_check((const char *)mi->rsdp > (const char *)info);
        fuzz_check(mi->rsdp_size <= (size_t)(end - (const char *)mi->rsdp));
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint32_t total;
    uint8_t *info;
    int error;

    /* The kernel gets at least the 8-byte header; 8-aligned, as GRUB's. */
    if (size < 8) {
        return 0;
    }

    info = aligned_alloc(8, (size + 7) & ~(size_t)7);
    fuzz_check(info != NULL);
    memcpy(info, data, size);
    memcpy(&total, info, sizeof(total));

    if (total > size) {
        total = (uint32_t)size;
        memcpy(info, &total, sizeof(total));
    }

    memset(&multiboot2_info, 0, sizeof(multiboot2_info));
    multiboot2_info.cmdline = "";
    error = multiboot2_parse(info, 0x100000);
    fuzz_check(error == 0 || error == -EINVAL);
    mb2_fuzz_check(info, total);

    if (error == 0 && multiboot2_info.rsdp != NULL) {
        acpi_fuzz_map_set(info, size);
        error = acpi_parse(multiboot2_info.rsdp, multiboot2_info.rsdp_size,
                           acpi_fuzz_map);
        acpi_fuzz_check_info(error);
    }

    free(info);
    return 0;
}
