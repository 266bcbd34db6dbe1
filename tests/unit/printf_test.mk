UNIT_TESTS += printf_test
printf_test_SRCS := tests/unit/printf_test.c kern/printf.c
