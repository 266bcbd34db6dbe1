UNIT_TESTS += perfmon_cmd_test
perfmon_cmd_test_SRCS := tests/unit/perfmon_cmd_test.c kern/perfmon/cmd/perfmon_cmd.c kern/perfmon/cmd/perfmon_resolve.c kern/perfmon/cmd/perfmon_list.c kern/perfmon/cmd/perfmon_info.c \
	kern/perfmon/cmd/perfmon_json.c \
	kern/perfmon/perfmon_evtab.c kern/perfmon/cmd/perfmon_metric.c \
	kern/perfmon/cmd/perfmon_parse.c kern/perfmon/cmd/perfmon_parse_branch.c kern/shell.c kern/error.c \
	tests/unit/fakes/console.c tests/unit/fakes/perfmon_cmd_deps.c \
	tests/unit/fakes/shell_job.c \
	tests/unit/fakes/thread_none.c tests/unit/fdev.c kern/string.c \
	$(PERFMON_CORE_SRCS)
