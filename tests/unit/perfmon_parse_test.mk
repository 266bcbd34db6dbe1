UNIT_TESTS += perfmon_parse_test
perfmon_parse_test_SRCS := tests/unit/perfmon_parse_test.c kern/perfmon/cmd/perfmon_parse.c kern/perfmon/cmd/perfmon_parse_branch.c \
	kern/printf.c
