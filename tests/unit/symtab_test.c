/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of kern/symtab.c on a table made by hand as tools/gensyms makes
 * them (tests/tools/test_gensyms.py checks that it does): every address
 * of the text finds the function holding it (the last of two names at one
 * address), its start through the function map where it names one, by
 * the search where a function starts inside the granule, before the
 * first function and in the last, partial granule; nothing is found
 * outside the text.  The call-chain walk gets the text and the map.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "arch/x86/unwind.h"
#include "kern/symtab.h"

#define TEXT_SIZE   1000         /* the last granule: 8 bytes */

/* The text: a block the linker's two marks enclose. */
__asm__(".data\n"
        ".globl _text_start\n"
        ".globl _text_end\n"
        ".p2align 6\n"
        "_text_start:\n"
        ".zero 1000\n"
        "_text_end:\n"
        ".previous\n");

extern const char _text_start[];
extern const char _text_end[];

#define AT(off)     ((uint64_t)(uintptr_t)&_text_start[off])

static const unsigned int offsets[] = { 8, 8, 40, 100, 101, 300, 700, 996 };

const struct symtab_entry symtab_entries[] = {
    { AT(8), 0 }, { AT(8), 2 }, { AT(40), 4 }, { AT(100), 6 },
    { AT(101), 8 }, { AT(300), 10 }, { AT(700), 12 }, { AT(996), 14 },
    { 0, 0 },
};
const unsigned int symtab_nr_entries = 8;
const char symtab_names[] = "a\0b\0c\0d\0e\0f\0g\0h";

#define MIXED       SYMTAB_FUNC_MIXED

/*
 * Granules of 16 bytes, 63 of them: the function of each, MIXED where
 * one starts inside (the last: h at 996) or none holds the first byte.
 */
const uint32_t symtab_func_map[] = {
    MIXED, 8, MIXED, 40, 40, 40, MIXED, 101,
    101, 101, 101, 101, 101, 101, 101, 101,
    101, 101, MIXED, 300, 300, 300, 300, 300,
    300, 300, 300, 300, 300, 300, 300, 300,
    300, 300, 300, 300, 300, 300, 300, 300,
    300, 300, 300, MIXED, 700, 700, 700, 700,
    700, 700, 700, 700, 700, 700, 700, 700,
    700, 700, 700, 700, 700, 700, MIXED, 0,
};
const unsigned int symtab_nr_func_map = 63;

static void
test_every_address(void **state)
{
    (void)state;

    for (unsigned int off = 0; off < TEXT_SIZE; off++) {
        unsigned int want = 0;
        uint64_t offset = 0;
        const char *name = symtab_lookup(AT(off), &offset);

        if (off < offsets[0]) {
            assert_null(name);
            assert_true(symtab_func_start(AT(off)) == 0);
            continue;
        }

        for (unsigned int i = 0; i < symtab_nr_entries; i++) {
            if (offsets[i] <= off) {
                want = i;
            }
        }

        assert_non_null(name);
        assert_string_equal(name, &symtab_names[symtab_entries[want]
                                                    .name_offset]);
        assert_true(offset == off - offsets[want]);
        assert_true(symtab_func_start(AT(off)) == AT(offsets[want]));
    }
}

static void
test_outside(void **state)
{
    uint64_t offset, lo, hi;

    (void)state;
    assert_null(symtab_lookup(AT(0) - 1, &offset));
    assert_null(symtab_lookup(AT(TEXT_SIZE), &offset));
    assert_null(symtab_lookup(0, &offset));
    assert_true(symtab_func_start(AT(TEXT_SIZE)) == 0);
    symtab_text_bounds(&lo, &hi);
    assert_true(lo == AT(0) && hi == AT(TEXT_SIZE));
}

/* The walk's view: the text, the start of its functions, the map. */
static void
test_unwind_env(void **state)
{
    struct unwind_env env = { 0 };

    (void)state;
    symtab_unwind_env(&env);
    assert_true(env.text_lo == AT(0) && env.text_hi == AT(TEXT_SIZE));
    assert_true(env.func_start == symtab_func_start);
    assert_ptr_equal(env.func_map, symtab_func_map);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_address),
        cmocka_unit_test(test_outside),
        cmocka_unit_test(test_unwind_env),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
