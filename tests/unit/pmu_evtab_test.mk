UNIT_TESTS += pmu_evtab_test
pmu_evtab_test_SRCS := tests/unit/pmu_evtab_test.c arch/x86/pmu_evtab.c \
	arch/x86/pmu_evtab_data.c kern/perfmon/perfmon_evtab.c kern/printf.c \
	kern/string.c
