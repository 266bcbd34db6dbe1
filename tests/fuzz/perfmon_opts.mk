# kern/perfmon_cmd.c with what it calls: the perfmon core (no device is
# registered), the shell and the host fakes, as its unit test links it.
FUZZ_TARGETS += perfmon_opts
perfmon_opts_SRCS := tests/fuzz/perfmon_opts_fuzz.c kern/perfmon_cmd.c \
	kern/perfmon_parse.c kern/shell.c kern/error.c \
	tests/unit/fakes/console.c tests/unit/fakes/perfmon_cmd_deps.c \
	tests/unit/fakes/thread_none.c kern/perfmon.c \
	kern/perfmon_dev.c kern/perfmon_intr.c kern/perfmon_pmc.c \
	kern/perfmon_sample.c kern/perfmon_ring.c kern/num.c arch/x86/unwind.c \
	kern/cmdline.c kern/printf.c \
	tests/unit/fakes/spinlock.c tests/unit/fakes/cpu.c \
	tests/unit/fakes/thread.c tests/unit/fakes/xcall.c \
	tests/unit/fakes/timer.c tests/unit/fakes/clock.c \
	tests/unit/fakes/syscnt.c tests/unit/fakes/log.c tests/unit/fakes/kmem.c \
	tests/unit/fakes/symtab.c
