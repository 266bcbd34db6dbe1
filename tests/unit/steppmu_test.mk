# drivers/pmu/step.c is #included by the test (to reach its setup function,
# its state and its deadline function), and the test fakes arch/x86/step.c's
# step count, so neither is listed here.
UNIT_TESTS += steppmu_test
steppmu_test_SRCS := tests/unit/steppmu_test.c kern/cmdline.c \
	tests/unit/fakes/pmu_perfmon.c kern/perfmon/perfmon_events.c \
	kern/printf.c kern/error.c kern/string.c tests/unit/fakes/cpu.c \
	tests/unit/fakes/log.c
