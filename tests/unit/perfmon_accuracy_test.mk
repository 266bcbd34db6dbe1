UNIT_TESTS += perfmon_accuracy_test
perfmon_accuracy_test_SRCS := tests/unit/perfmon_accuracy_test.c \
	kern/perfmon/cmd/perfmon_accuracy_calc.c kern/num.c kern/printf.c
