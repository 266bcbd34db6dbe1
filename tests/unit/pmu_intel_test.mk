UNIT_TESTS += pmu_intel_test
pmu_intel_test_SRCS := tests/unit/pmu_intel_test.c $(PMU_INTEL_SRCS) \
	$(PMU_MODEL_SRCS)
