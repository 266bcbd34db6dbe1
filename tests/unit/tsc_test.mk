UNIT_TESTS += tsc_test
tsc_test_SRCS := tests/unit/tsc_test.c arch/x86/tsc.c
