UNIT_TESTS += pmu_intel_test
pmu_intel_test_SRCS := tests/unit/pmu_intel_test.c arch/x86/pmu_intel.c \
	$(PMU_MODEL_SRCS)
