UNIT_TESTS += msr_model_test
msr_model_test_SRCS := tests/unit/msr_model_test.c $(PMU_INTEL_SRCS) \
	$(PMU_MODEL_SRCS)
