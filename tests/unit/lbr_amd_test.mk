UNIT_TESTS += lbr_amd_test
lbr_amd_test_SRCS := tests/unit/lbr_amd_test.c arch/x86/pmu_amd.c \
	$(LBR_TEST_SRCS)
