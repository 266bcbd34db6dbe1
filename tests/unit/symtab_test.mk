UNIT_TESTS += symtab_test
symtab_test_SRCS := tests/unit/symtab_test.c kern/symtab.c
