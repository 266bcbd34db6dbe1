UNIT_TESTS += perfmon_region_test
perfmon_region_test_SRCS := tests/unit/perfmon_region_test.c tests/unit/fdev.c \
	kern/string.c kern/perfmon/perfmon_region.c \
	kern/perfmon/perfmon_region_arm.c $(PERFMON_CORE_SRCS)
