/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Symbol lookup in the embedded table: the entry the granule index gives,
 * scanned forward where another starts inside the granule; a binary
 * search where there is no index.
 */

#include <stddef.h>

#include "kern/symtab.h"

extern const char _text_start[];
extern const char _text_end[];

/* The entry of the function holding addr, or -1 outside the text. */
static inline __attribute__((always_inline)) int
symtab_find(uint64_t addr)
{
    uint64_t granule = (addr - (uint64_t)_text_start) >> SYMTAB_GRANULE_SHIFT;
    unsigned int low = 0, high = symtab_nr_entries;

    if (addr < (uint64_t)_text_start || addr >= (uint64_t)_text_end
        || high == 0 || addr < symtab_entries[0].addr) {
        return -1;
    }

    /* Last entry whose address is <= addr. */
    if (granule < symtab_nr_granules) {
        unsigned int g = symtab_granules[granule] & ~SYMTAB_GRANULE_INSIDE;

        low = (g >= high) ? 0 : g;

        while (low + 1 < high && symtab_entries[low + 1].addr <= addr) {
            low++;
        }

        return (int)low;
    }

    while (high - low > 1) {
        unsigned int mid = low + (high - low) / 2;

        if (symtab_entries[mid].addr <= addr) {
            low = mid;
        } else {
            high = mid;
        }
    }

    return (int)low;
}

const char *
symtab_lookup(uint64_t addr, uint64_t *offsetp)
{
    int i = symtab_find(addr);

    if (i < 0) {
        return NULL;
    }

    *offsetp = addr - symtab_entries[i].addr;
    return &symtab_names[symtab_entries[i].name_offset];
}

/* symtab_func_start() where the granule does not tell. */
static uint64_t __attribute__((noinline))
symtab_func_start_slow(uint64_t addr)
{
    int i = symtab_find(addr);

    return (i < 0) ? 0 : symtab_entries[i].addr;
}

uint64_t
symtab_func_start(uint64_t addr)
{
    uint64_t granule = (addr - (uint64_t)_text_start) >> SYMTAB_GRANULE_SHIFT;

    /*
     * Most granules: no function starts inside, one read (of the zero
     * entry where no function starts before).
     */
    if (granule < symtab_nr_granules) {
        unsigned int g = symtab_granules[granule];

        if ((g & SYMTAB_GRANULE_INSIDE) == 0) {
            return symtab_entries[g].addr;
        }
    }

    return symtab_func_start_slow(addr);
}

void
symtab_text_bounds(uint64_t *startp, uint64_t *endp)
{
    *startp = (uint64_t)_text_start;
    *endp = (uint64_t)_text_end;
}
