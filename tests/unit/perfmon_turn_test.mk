UNIT_TESTS += perfmon_turn_test
perfmon_turn_test_SRCS := tests/unit/perfmon_turn_test.c tests/unit/fdev.c \
	kern/string.c $(PERFMON_CORE_SRCS)
