UNIT_TESTS += perfmon_test
perfmon_test_SRCS := tests/unit/perfmon_test.c tests/unit/fdev.c \
	kern/string.c $(PERFMON_CORE_SRCS)
