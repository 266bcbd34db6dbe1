UNIT_TESTS += perfmon_throttle_test
perfmon_throttle_test_SRCS := tests/unit/perfmon_throttle_test.c \
	tests/unit/fdev.c kern/string.c $(PERFMON_CORE_SRCS)
