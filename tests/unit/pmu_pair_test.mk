UNIT_TESTS += pmu_pair_test
pmu_pair_test_SRCS := tests/unit/pmu_pair_test.c arch/x86/pmu_amd.c \
	$(PMU_MODEL_SRCS)
