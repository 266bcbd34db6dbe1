UNIT_TESTS += pmu_amd_test
pmu_amd_test_SRCS := tests/unit/pmu_amd_test.c arch/x86/pmu_amd.c \
	$(PMU_MODEL_SRCS)
