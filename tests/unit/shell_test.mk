UNIT_TESTS += shell_test
shell_test_SRCS := tests/unit/shell_test.c kern/shell.c kern/cmdline.c \
	kern/error.c tests/unit/fakes/console.c tests/unit/fakes/shell_job.c \
	tests/unit/fakes/clock.c tests/unit/fakes/thread_none.c
