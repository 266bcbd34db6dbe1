UNIT_TESTS += perfmon_mux_test
perfmon_mux_test_SRCS := tests/unit/perfmon_mux_test.c tests/unit/fdev.c \
	kern/string.c $(PERFMON_CORE_SRCS)
