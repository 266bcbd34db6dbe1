# drivers/pmu/soft.c is #included by the test (to reach its setup function
# and reset its state), so it is not listed here.
UNIT_TESTS += softpmu_test
softpmu_test_SRCS := tests/unit/softpmu_test.c kern/swevent.c kern/cmdline.c \
	tests/unit/fakes/pmu_perfmon.c kern/perfmon/perfmon_events.c tests/unit/fakes/nmi.c \
	kern/printf.c kern/error.c tests/unit/fakes/cpu.c tests/unit/fakes/syscnt.c \
	tests/unit/fakes/log.c
