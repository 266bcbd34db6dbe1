/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Multiboot2 boot information parsing.
 */

#include <stddef.h>
#include <stdint.h>

#include "arch/x86/multiboot2.h"
#include "kern/error.h"
#include "kern/macros.h"

struct multiboot2_tag {
    uint32_t type;
    uint32_t size;
};

struct multiboot2_mmap_entry {
    uint64_t base;
    uint64_t length;
    uint32_t type;
    uint32_t reserved;
};

struct multiboot2_info multiboot2_info = { .cmdline = "" };

static void
multiboot2_parse_cmdline(const struct multiboot2_tag *tag)
{
    const char *s = (const char *)(tag + 1);
    size_t max = tag->size - sizeof(*tag);

    /* Only accept a string that is terminated inside its tag. */
    for (size_t i = 0; i < max; i++) {
        if (s[i] == '\0') {
            multiboot2_info.cmdline = s;
            return;
        }
    }
}

static void
multiboot2_parse_mmap(const struct multiboot2_tag *tag)
{
    const uint32_t *hdr = (const uint32_t *)(tag + 1);
    uint32_t entry_size = hdr[0];
    const char *p = (const char *)(hdr + 2);
    const char *end = (const char *)tag + tag->size;

    /*
     * The specification guarantees a multiple of 8 (3.6.8), which keeps
     * every entry aligned for its 64-bit fields: refuse anything else.
     */
    if (entry_size < sizeof(struct multiboot2_mmap_entry)
        || entry_size % 8 != 0) {
        return;
    }

    for (; p + entry_size <= end; p += entry_size) {
        const struct multiboot2_mmap_entry *e = (const void *)p;
        struct multiboot2_region *r;

        if (multiboot2_info.nr_regions == MULTIBOOT2_MAX_REGIONS
            || e->length == 0 || e->base + e->length < e->base) {
            continue;
        }

        r = &multiboot2_info.regions[multiboot2_info.nr_regions++];
        r->start = e->base;
        r->end = e->base + e->length;
        r->type = e->type;
    }
}

static void
multiboot2_parse_tag(const struct multiboot2_tag *tag)
{
    switch (tag->type) {
    case MULTIBOOT2_TAG_CMDLINE:
        multiboot2_parse_cmdline(tag);
        break;
    case MULTIBOOT2_TAG_MMAP:
        if (tag->size >= sizeof(*tag) + 8) {
            multiboot2_parse_mmap(tag);
        }
        break;
    case MULTIBOOT2_TAG_ACPI_OLD:
    case MULTIBOOT2_TAG_ACPI_NEW:
        /* Prefer the ACPI 2.0+ RSDP when both are given. */
        if (multiboot2_info.rsdp == NULL
            || tag->type == MULTIBOOT2_TAG_ACPI_NEW) {
            multiboot2_info.rsdp = tag + 1;
            multiboot2_info.rsdp_size = tag->size - sizeof(*tag);
        }
        break;
    case MULTIBOOT2_TAG_MEMINFO:
    case MULTIBOOT2_TAG_MODULE:
    case MULTIBOOT2_TAG_FRAMEBUFFER:
        break;
    default:
        multiboot2_info.nr_unknown_tags++;
        break;
    }
}

int
multiboot2_parse(const void *info, uint64_t info_pa)
{
    const uint32_t *hdr = info;
    uint32_t total = hdr[0];
    const char *p = (const char *)info + 8;
    const char *end = (const char *)info + total;

    if (total < 16 || total > (1U << 24)) {
        return -EINVAL;
    }

    multiboot2_info.info_pa = info_pa;
    multiboot2_info.info_size = total;

    while (p + sizeof(struct multiboot2_tag) <= end) {
        const struct multiboot2_tag *tag = (const void *)p;

        if (tag->type == MULTIBOOT2_TAG_END) {
            break;
        }

        if (tag->size < sizeof(*tag) || p + tag->size > end) {
            return -EINVAL;
        }

        multiboot2_parse_tag(tag);
        p += P2ROUND(tag->size, 8);
    }

    return 0;
}
