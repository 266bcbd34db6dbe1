UNIT_TESTS += cmdline_test
cmdline_test_SRCS := tests/unit/cmdline_test.c kern/cmdline.c
