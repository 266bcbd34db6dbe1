UNIT_TESTS += pmu_msr_count_test
pmu_msr_count_test_SRCS := tests/unit/pmu_msr_count_test.c \
	arch/x86/pmu.c $(PMU_INTEL_SRCS) arch/x86/pmu_amd.c \
	arch/x86/pmu_evtab.c arch/x86/pmu_evtab_data.c \
	kern/perfmon/perfmon_evtab.c \
	tests/unit/msr_model.c tests/unit/msr_model_lbr.c \
	tests/unit/msr_model_merge.c tests/unit/pmu_core_boot.c kern/error.c \
	kern/string.c $(PERFMON_CORE_SRCS)
