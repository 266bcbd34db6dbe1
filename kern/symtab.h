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
 * An index into the entries, so that finding a function's start is one
 * read in most cases: for the text's granules of SYMTAB_GRANULE_SIZE
 * bytes from its start, the last entry at or before the granule's first
 * byte (none: the zero entry that ends them), with SYMTAB_GRANULE_INSIDE
 * set when
 * another entry starts inside the granule (then the entries are scanned).
 * Functions start 16-byte aligned, so that is rare.  symtab_nr_granules
 * may be 0 (the first link's empty table: the entries are searched).
 */
#define SYMTAB_GRANULE_SHIFT    4
#define SYMTAB_GRANULE_SIZE     (1 << SYMTAB_GRANULE_SHIFT)
#define SYMTAB_GRANULE_INSIDE   0x8000

extern const unsigned short symtab_granules[];
extern const unsigned int symtab_nr_granules;

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

#endif /* KERN_SYMTAB_H */
