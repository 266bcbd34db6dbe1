# kern/perfmon/cmd/perfmon_cmd.c with what it calls, as its unit test links it, but
# for kern/string.c (see tests/fuzz/fuzz_support.c) and the fake devices.
FUZZ_TARGETS += perfmon_opts
perfmon_opts_SRCS := tests/fuzz/perfmon_opts_fuzz.c kern/perfmon/cmd/perfmon_cmd.c kern/perfmon/cmd/perfmon_resolve.c kern/perfmon/cmd/perfmon_list.c kern/perfmon/cmd/perfmon_info.c \
	kern/perfmon/cmd/perfmon_json.c \
	kern/perfmon/perfmon_evtab.c kern/perfmon/cmd/perfmon_metric.c \
	kern/perfmon/cmd/perfmon_parse.c kern/perfmon/cmd/perfmon_parse_branch.c kern/shell.c kern/error.c \
	tests/unit/fakes/console.c tests/unit/fakes/perfmon_cmd_deps.c \
	tests/unit/fakes/shell_job.c \
	tests/unit/fakes/thread_none.c $(PERFMON_CORE_SRCS)
