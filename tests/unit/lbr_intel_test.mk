UNIT_TESTS += lbr_intel_test
lbr_intel_test_SRCS := tests/unit/lbr_intel_test.c $(PMU_INTEL_SRCS) \
	$(LBR_TEST_SRCS)
