UNIT_TESTS += perfmon_rdpmc_test
perfmon_rdpmc_test_SRCS := tests/unit/perfmon_test.c tests/unit/fdev.c \
	tests/unit/fdev_rdpmc.c kern/string.c $(PERFMON_CORE_SRCS)
