UNIT_TESTS += perfmon_test
perfmon_test_SRCS := tests/unit/perfmon_test.c kern/perfmon.c \
	tests/unit/fakes/spinlock.c tests/unit/fakes/cpu.c \
	tests/unit/fakes/thread.c tests/unit/fakes/xcall.c \
	tests/unit/fakes/timer.c tests/unit/fakes/clock.c \
	tests/unit/fakes/syscnt.c
