UNIT_TESTS += shell_test
shell_test_SRCS := tests/unit/shell_test.c kern/shell.c kern/cmdline.c \
	kern/error.c tests/unit/fakes/console.c
