UNIT_TESTS += perfmon_selftest_test
perfmon_selftest_test_SRCS := tests/unit/perfmon_selftest_test.c \
	kern/perfmon/perfmon_selftest.c kern/printf.c tests/unit/fakes/cpu.c
