/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Symbol lookup in the embedded table: a binary search over addresses.
 */

#include <stddef.h>

#include "kern/symtab.h"

extern const char _text_start[];
extern const char _text_end[];

const char *
symtab_lookup(uint64_t addr, uint64_t *offsetp)
{
    unsigned int low = 0, high = symtab_nr_entries;

    if (addr < (uint64_t)_text_start || addr >= (uint64_t)_text_end
        || high == 0 || addr < symtab_entries[0].addr) {
        return NULL;
    }

    /* Last entry whose address is <= addr. */
    while (high - low > 1) {
        unsigned int mid = low + (high - low) / 2;

        if (symtab_entries[mid].addr <= addr) {
            low = mid;
        } else {
            high = mid;
        }
    }

    *offsetp = addr - symtab_entries[low].addr;
    return &symtab_names[symtab_entries[low].name_offset];
}

uint64_t
symtab_func_start(uint64_t addr)
{
    uint64_t offset;

    return (symtab_lookup(addr, &offset) == NULL) ? 0 : addr - offset;
}

void
symtab_text_bounds(uint64_t *startp, uint64_t *endp)
{
    *startp = (uint64_t)_text_start;
    *endp = (uint64_t)_text_end;
}
