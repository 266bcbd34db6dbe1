/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fake of the kernel's embedded symbol table for host tests: no symbol at
 * all, unless a test gives one function (fake_symtab_set()) or a few
 * (fake_symtab_add()), and no text unless a test points it at a buffer
 * (fake_symtab_set_text()).
 */

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/unwind.h"
#include "kern/symtab.h"

#define FAKE_SYMTAB_MAX     8

static struct {
    const char *name;
    uint64_t start;
    uint64_t end;
} fake_symtab_syms[FAKE_SYMTAB_MAX];
static unsigned int fake_symtab_nr;
static uint64_t fake_symtab_text_start;
static uint64_t fake_symtab_text_end;

void fake_symtab_set(const char *name, uint64_t start, uint64_t end);
void fake_symtab_add(const char *name, uint64_t start, uint64_t end);
void fake_symtab_set_text(const void *text, size_t size);

/* One function only (NULL: none). */
void
fake_symtab_set(const char *name, uint64_t start, uint64_t end)
{
    fake_symtab_nr = 0;

    if (name != NULL) {
        fake_symtab_add(name, start, end);
    }
}

/* One more function, [start, end). */
void
fake_symtab_add(const char *name, uint64_t start, uint64_t end)
{
    assert(fake_symtab_nr < FAKE_SYMTAB_MAX);
    fake_symtab_syms[fake_symtab_nr].name = name;
    fake_symtab_syms[fake_symtab_nr].start = start;
    fake_symtab_syms[fake_symtab_nr].end = end;
    fake_symtab_nr++;
}

const char *
symtab_lookup(uint64_t addr, uint64_t *offsetp)
{
    for (unsigned int i = 0; i < fake_symtab_nr; i++) {
        if (addr >= fake_symtab_syms[i].start
            && addr < fake_symtab_syms[i].end) {
            *offsetp = addr - fake_symtab_syms[i].start;
            return fake_symtab_syms[i].name;
        }
    }

    return NULL;
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

/* The fake's text and functions, without a function map. */
void
symtab_unwind_env(struct unwind_env *env)
{
    symtab_text_bounds(&env->text_lo, &env->text_hi);
    env->func_start = symtab_func_start;
    env->func_map = NULL;
}
