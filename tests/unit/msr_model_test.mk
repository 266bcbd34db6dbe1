UNIT_TESTS += msr_model_test
msr_model_test_SRCS := tests/unit/msr_model_test.c arch/x86/pmu_intel.c \
	$(PMU_MODEL_SRCS)
