/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of kern/symtab.c on a table made by hand as tools/gensyms makes
 * them: every address of the text finds the function holding it (the
 * last of two names at one address), through the granule index where
 * there is one and by the binary search past it, and nothing is found
 * outside the text or before its first function.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kern/symtab.h"

#define TEXT_SIZE   1024

/* The text: a block the linker's two marks enclose. */
__asm__(".data\n"
        ".globl _text_start\n"
        ".globl _text_end\n"
        ".p2align 6\n"
        "_text_start:\n"
        ".zero 1024\n"
        "_text_end:\n"
        ".previous\n");

extern const char _text_start[];
extern const char _text_end[];

#define AT(off)     ((uint64_t)(uintptr_t)&_text_start[off])

static const unsigned int offsets[] = { 8, 8, 40, 100, 101, 300, 700 };

const struct symtab_entry symtab_entries[] = {
    { AT(8), 0 }, { AT(8), 2 }, { AT(40), 4 }, { AT(100), 6 },
    { AT(101), 8 }, { AT(300), 10 }, { AT(700), 12 }, { 0, 0 },
};
const unsigned int symtab_nr_entries = 7;
const char symtab_names[] = "a\0b\0c\0d\0e\0f\0g";

/*
 * Granules of 16 bytes: the last entry at or before each start (7, the
 * zero entry: none), 0x8000 where another starts inside, for 48 of the
 * 64 (the rest: the binary search).
 */
const unsigned short symtab_granules[] = {
    0x8007, 0x1, 0x8001, 0x2, 0x2, 0x2, 0x8002, 0x4, 0x4, 0x4, 0x4, 0x4,
    0x4, 0x4, 0x4, 0x4, 0x4, 0x4, 0x8004, 0x5, 0x5, 0x5, 0x5, 0x5,
    0x5, 0x5, 0x5, 0x5, 0x5, 0x5, 0x5, 0x5, 0x5, 0x5, 0x5, 0x5,
    0x5, 0x5, 0x5, 0x5, 0x5, 0x5, 0x5, 0x8005, 0x6, 0x6, 0x6, 0x6,
};
const unsigned int symtab_nr_granules = 48;

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

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_address),
        cmocka_unit_test(test_outside),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
