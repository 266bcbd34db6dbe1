UNIT_TESTS += perfmon_metric_test
perfmon_metric_test_SRCS := tests/unit/perfmon_metric_test.c \
	kern/perfmon/cmd/perfmon_metric.c kern/printf.c
