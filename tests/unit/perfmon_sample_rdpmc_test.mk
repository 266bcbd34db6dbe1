UNIT_TESTS += perfmon_sample_rdpmc_test
# Every test of perfmon_sample_test.c with the counters read by RDPMC: the
# overflow interrupt's inline fold of a sampling slot (fdev_rdpmc.c).
perfmon_sample_rdpmc_test_SRCS := tests/unit/perfmon_sample_test.c \
	tests/unit/fdev.c tests/unit/fdev_rdpmc.c tests/unit/perfmon_sample_ref.c \
	tests/unit/unwind_ref.c \
	kern/string.c $(PERFMON_CORE_SRCS)
