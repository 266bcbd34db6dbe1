FUZZ_TARGETS += shell
shell_SRCS := tests/fuzz/shell_fuzz.c kern/shell.c kern/cmdline.c \
	kern/error.c tests/unit/fakes/console.c
