/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fake of the kernel's embedded symbol table for host tests: no symbol at
 * all, unless a test gives one function (fake_symtab_set()), and no text
 * unless a test points it at a buffer (fake_symtab_set_text()).
 */

#include <stddef.h>
#include <stdint.h>

#include "kern/symtab.h"

static const char *fake_symtab_name;
static uint64_t fake_symtab_start;
static uint64_t fake_symtab_end;
static uint64_t fake_symtab_text_start;
static uint64_t fake_symtab_text_end;

void fake_symtab_set(const char *name, uint64_t start, uint64_t end);
void fake_symtab_set_text(const void *text, size_t size);

void
fake_symtab_set(const char *name, uint64_t start, uint64_t end)
{
    fake_symtab_name = name;
    fake_symtab_start = start;
    fake_symtab_end = end;
}

const char *
symtab_lookup(uint64_t addr, uint64_t *offsetp)
{
    if (fake_symtab_name == NULL || addr < fake_symtab_start
        || addr >= fake_symtab_end) {
        return NULL;
    }

    *offsetp = addr - fake_symtab_start;
    return fake_symtab_name;
}

uint64_t
symtab_func_start(uint64_t addr)
{
    uint64_t offset;

    return (symtab_lookup(addr, &offset) == NULL) ? 0 : addr - offset;
}

void
fake_symtab_set_text(const void *text, size_t size)
{
    fake_symtab_text_start = (uintptr_t)text;
    fake_symtab_text_end = (uintptr_t)text + size;
}

void
symtab_text_bounds(uint64_t *startp, uint64_t *endp)
{
    *startp = fake_symtab_text_start;
    *endp = fake_symtab_text_end;
}
