FUZZ_TARGETS += perfmon_parse
perfmon_parse_SRCS := tests/fuzz/perfmon_parse_fuzz.c kern/perfmon/cmd/perfmon_parse.c kern/perfmon/cmd/perfmon_parse_branch.c \
	kern/printf.c
