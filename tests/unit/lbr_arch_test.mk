UNIT_TESTS += lbr_arch_test
lbr_arch_test_SRCS := tests/unit/lbr_arch_test.c arch/x86/pmu_intel.c \
	$(LBR_TEST_SRCS)
