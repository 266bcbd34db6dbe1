UNIT_TESTS += workload_test
workload_test_SRCS := tests/unit/workload_test.c kern/workload.c kern/shell.c \
	kern/cmdline.c kern/error.c kern/num.c kern/printf.c \
	tests/unit/fakes/console.c tests/unit/fakes/thread_none.c \
	tests/unit/fakes/cpu.c tests/unit/fakes/kmem.c tests/unit/fakes/tsc.c \
	tests/unit/fakes/clock.c tests/unit/fakes/shell_job.c
