UNIT_TESTS += lbr_arch_test
lbr_arch_test_SRCS := tests/unit/lbr_arch_test.c $(PMU_INTEL_SRCS) \
	$(LBR_TEST_SRCS)
