UNIT_TESTS += perfmon_branch_test
perfmon_branch_test_SRCS := tests/unit/perfmon_branch_test.c tests/unit/fdev.c \
	kern/string.c $(PERFMON_CORE_SRCS)
