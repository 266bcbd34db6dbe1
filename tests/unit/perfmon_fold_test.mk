UNIT_TESTS += perfmon_fold_test
perfmon_fold_test_SRCS := tests/unit/perfmon_fold_test.c tests/unit/fdev.c \
	kern/string.c $(PERFMON_CORE_SRCS)
