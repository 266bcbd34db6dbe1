UNIT_TESTS += perfmon_stat_metric_test
perfmon_stat_metric_test_SRCS := tests/unit/perfmon_stat_metric_test.c \
	kern/perfmon/cmd/perfmon_stat_metric.c kern/perfmon/cmd/perfmon_stat_print.c \
	kern/perfmon/cmd/perfmon_metric.c \
	kern/perfmon/cmd/perfmon_json.c tests/unit/fakes/shell_job.c \
	kern/perfmon/cmd/perfmon_cmd.c kern/perfmon/cmd/perfmon_resolve.c kern/perfmon/cmd/perfmon_list.c kern/perfmon/cmd/perfmon_info.c \
	kern/perfmon/perfmon_evtab.c arch/x86/pmu_evtab.c arch/x86/pmu_evtab_data.c \
	kern/perfmon/cmd/perfmon_parse.c kern/perfmon/cmd/perfmon_parse_branch.c kern/shell.c kern/error.c \
	tests/unit/fakes/console.c tests/unit/fakes/perfmon_cmd_deps.c \
	tests/unit/fakes/thread_none.c tests/unit/fdev.c kern/string.c \
	$(PERFMON_CORE_SRCS)
