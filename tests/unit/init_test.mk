UNIT_TESTS += init_test
init_test_SRCS := tests/unit/init_test.c kern/init.c
