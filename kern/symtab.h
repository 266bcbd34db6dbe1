/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The kernel's own symbol table, generated at build time (tools/gensyms)
 * and embedded in the image, for symbolized backtraces.
 */

#ifndef KERN_SYMTAB_H
#define KERN_SYMTAB_H

#include <stdint.h>

struct symtab_entry {
    uint64_t addr;
    unsigned int name_offset;   /* into symtab_names */
};

/* Sorted by address, terminated by a zero entry. */
extern const struct symtab_entry symtab_entries[];
extern const unsigned int symtab_nr_entries;
extern const char symtab_names[];

/*
 * The function map, so that finding a function's start is one read in
 * most cases: for each granule of SYMTAB_GRANULE_SIZE bytes of the text
 * from its start (the last one may be partial), the offset from
 * _text_start of the start of the function holding all of the granule's
 * bytes in the text, or SYMTAB_FUNC_MIXED where another function starts
 * inside it (after its first byte) or none holds its first byte (then the
 * entries are searched).  Functions start 16-byte aligned mostly, so that
 * is rare; nothing relies on it.  symtab_nr_func_map is 0 in the first
 * link's empty table.
 */
#define SYMTAB_GRANULE_SHIFT    4
#define SYMTAB_GRANULE_SIZE     (1 << SYMTAB_GRANULE_SHIFT)
#define SYMTAB_FUNC_MIXED       UINT32_MAX

extern const uint32_t symtab_func_map[];
extern const unsigned int symtab_nr_func_map;

/*
 * Find the function containing addr.  Returns its name and stores the
 * offset of addr in it, or returns NULL when addr is outside the kernel's
 * text.
 */
const char *symtab_lookup(uint64_t addr, uint64_t *offsetp);

/*
 * The start of the function containing addr, or 0 when addr is outside
 * the kernel's text.  Any context, NMI included: it takes no lock.
 */
uint64_t symtab_func_start(uint64_t addr);

/*
 * The kernel's text as loaded: [*startp, *endp), the linker's .text
 * section (its first byte is the symbol _text_start).
 */
void symtab_text_bounds(uint64_t *startp, uint64_t *endp);

struct unwind_env;

/*
 * Give env the kernel's text and how to name its functions, for a
 * call-chain walk (arch/x86/unwind.h): text_lo, text_hi, func_start and
 * func_map (NULL when the table has no map of this text).  Any context.
 */
void symtab_unwind_env(struct unwind_env *env);

#endif /* KERN_SYMTAB_H */
