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
