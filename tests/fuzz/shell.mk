FUZZ_TARGETS += shell
shell_SRCS := tests/fuzz/shell_fuzz.c kern/shell.c kern/cmdline.c \
	kern/error.c tests/unit/fakes/console.c tests/unit/fakes/shell_job.c \
	tests/unit/fakes/clock.c tests/unit/fakes/thread_none.c
