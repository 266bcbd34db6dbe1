UNIT_TESTS += pmu_pair_core_test
pmu_pair_core_test_SRCS := tests/unit/pmu_pair_core_test.c \
	arch/x86/pmu.c arch/x86/pmu_amd.c \
	arch/x86/pmu_evtab.c arch/x86/pmu_evtab_data.c \
	kern/perfmon/perfmon_evtab.c \
	tests/unit/msr_model.c tests/unit/msr_model_lbr.c \
	tests/unit/msr_model_merge.c tests/unit/pmu_core_boot.c kern/error.c \
	kern/string.c $(PERFMON_CORE_SRCS)
