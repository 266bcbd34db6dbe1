/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The multiboot2 boot information (GNU Multiboot2 specification, 3.6).
 *
 * multiboot2_parse() walks the tags once at boot and records what the
 * kernel uses: the command line, the memory map and the ACPI RSDP.  Tags it
 * does not know (modules, framebuffer, EFI...) are skipped.  A malformed
 * structure (a tag running past the end, a size below the minimum) stops the
 * walk with what was parsed so far.
 */

#ifndef ARCH_X86_MULTIBOOT2_H
#define ARCH_X86_MULTIBOOT2_H

#include <stddef.h>
#include <stdint.h>

#define MULTIBOOT2_BOOT_MAGIC       0x36d76289

#define MULTIBOOT2_TAG_END          0
#define MULTIBOOT2_TAG_CMDLINE      1
#define MULTIBOOT2_TAG_MODULE       3
#define MULTIBOOT2_TAG_MEMINFO      4
#define MULTIBOOT2_TAG_MMAP         6
#define MULTIBOOT2_TAG_FRAMEBUFFER  8
#define MULTIBOOT2_TAG_ACPI_OLD     14
#define MULTIBOOT2_TAG_ACPI_NEW     15

#define MULTIBOOT2_MMAP_AVAILABLE   1

#define MULTIBOOT2_MAX_REGIONS      64

struct multiboot2_region {
    uint64_t start;
    uint64_t end;
    uint32_t type;
};

struct multiboot2_info {
    uint64_t info_pa;           /* the structure itself, to reserve it */
    size_t info_size;
    const char *cmdline;        /* "" when absent */
    struct multiboot2_region regions[MULTIBOOT2_MAX_REGIONS];
    unsigned int nr_regions;
    const void *rsdp;           /* copy of the RSDP from the tag, or NULL */
    size_t rsdp_size;
    unsigned int nr_unknown_tags;
};

extern struct multiboot2_info multiboot2_info;

/*
 * Parse the information at info (virtual address of the structure whose
 * physical address is info_pa).  Returns 0 or -EINVAL when the structure is
 * unusable.
 */
int multiboot2_parse(const void *info, uint64_t info_pa);

#endif /* ARCH_X86_MULTIBOOT2_H */
