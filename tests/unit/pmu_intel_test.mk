UNIT_TESTS += pmu_intel_test
pmu_intel_test_SRCS := tests/unit/pmu_intel_test.c arch/x86/pmu_intel.c arch/x86/pmu.c \
	arch/x86/pmu_selftest.c tests/unit/fakes/perfmon_selftest.c \
	tests/unit/msr_model.c tests/unit/msr_model_lbr.c tests/unit/pmu_test_common.c \
	tests/unit/fakes/pmu_perfmon.c tests/unit/fakes/cpu.c tests/unit/fakes/log.c \
	kern/printf.c kern/error.c
