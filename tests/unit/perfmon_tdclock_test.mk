UNIT_TESTS += perfmon_tdclock_test
perfmon_tdclock_test_SRCS := tests/unit/perfmon_tdclock_test.c tests/unit/fdev.c \
	kern/string.c $(PERFMON_CORE_SRCS)
