UNIT_TESTS += lbr_intel_test
lbr_intel_test_SRCS := tests/unit/lbr_intel_test.c arch/x86/pmu_intel.c \
	$(LBR_TEST_SRCS)
