UNIT_TESTS += perfmon_enable_test
perfmon_enable_test_SRCS := tests/unit/perfmon_enable_test.c tests/unit/fdev.c \
	kern/string.c $(PERFMON_CORE_SRCS)
