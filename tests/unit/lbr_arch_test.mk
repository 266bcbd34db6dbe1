UNIT_TESTS += lbr_arch_test
lbr_arch_test_SRCS := tests/unit/lbr_arch_test.c arch/x86/lbr.c \
	arch/x86/lbr_intel.c arch/x86/lbr_arch.c arch/x86/lbr_amd.c \
	arch/x86/pmu_intel.c arch/x86/pmu.c arch/x86/pmu_selftest.c \
	tests/unit/fakes/perfmon_selftest.c tests/unit/msr_model.c \
	tests/unit/msr_model_lbr.c tests/unit/pmu_test_common.c \
	tests/unit/lbr_test_common.c tests/unit/fakes/pmu_perfmon.c \
	tests/unit/fakes/cpu.c tests/unit/fakes/log.c kern/printf.c kern/error.c
