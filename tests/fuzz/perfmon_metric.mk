FUZZ_TARGETS += perfmon_metric
perfmon_metric_SRCS := tests/fuzz/perfmon_metric_fuzz.c \
	kern/perfmon/cmd/perfmon_metric.c kern/printf.c
