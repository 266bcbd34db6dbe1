UNIT_TESTS += pmu_transfer_test
pmu_transfer_test_SRCS := tests/unit/pmu_transfer_test.c $(PMU_INTEL_SRCS) \
	arch/x86/pmu_amd.c $(PMU_MODEL_SRCS)
