UNIT_TESTS += num_test
num_test_SRCS := tests/unit/num_test.c kern/num.c kern/printf.c
