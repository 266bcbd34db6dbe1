UNIT_TESTS += perfmon_sample_test
perfmon_sample_test_SRCS := tests/unit/perfmon_sample_test.c tests/unit/fdev.c \
	tests/unit/perfmon_sample_ref.c tests/unit/unwind_ref.c \
	kern/string.c $(PERFMON_CORE_SRCS)
