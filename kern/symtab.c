/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Symbol lookup in the embedded table: a function's start by the function
 * map, a binary search of the entries where it does not tell and for
 * names.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/unwind.h"
#include "kern/symtab.h"

extern const char _text_start[];
extern const char _text_end[];

/* The entry of the function holding addr, or -1 outside the text. */
static int
symtab_find(uint64_t addr)
{
    unsigned int low = 0, high = symtab_nr_entries;

    if (addr < (uint64_t)_text_start || addr >= (uint64_t)_text_end
        || high == 0 || addr < symtab_entries[0].addr) {
        return -1;
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

/* Whether the function map covers the text as loaded. */
static bool
symtab_func_map_valid(void)
{
    uint64_t size = (uint64_t)(_text_end - _text_start);

    return symtab_nr_func_map
           == (size + SYMTAB_GRANULE_SIZE - 1) >> SYMTAB_GRANULE_SHIFT;
}

/* symtab_func_start() where the map does not tell. */
static uint64_t __attribute__((noinline))
symtab_func_start_slow(uint64_t addr)
{
    int i = symtab_find(addr);

    return (i < 0) ? 0 : symtab_entries[i].addr;
}

uint64_t
symtab_func_start(uint64_t addr)
{
    uint64_t offset = addr - (uint64_t)_text_start;

    /* Most granules: one function holds all of it, one read. */
    if (offset < (uint64_t)(_text_end - _text_start)
        && (offset >> SYMTAB_GRANULE_SHIFT) < symtab_nr_func_map) {
        uint32_t start = symtab_func_map[offset >> SYMTAB_GRANULE_SHIFT];

        if (start != SYMTAB_FUNC_MIXED) {
            return (uint64_t)_text_start + start;
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

_Static_assert(SYMTAB_GRANULE_SHIFT == UNWIND_MAP_SHIFT
               && SYMTAB_FUNC_MIXED == UNWIND_FUNC_MIXED,
               "the function map is the unwinder's");

void
symtab_unwind_env(struct unwind_env *env)
{
    symtab_text_bounds(&env->text_lo, &env->text_hi);
    env->func_start = symtab_func_start;
    env->func_map = symtab_func_map_valid() ? symtab_func_map : NULL;
}
