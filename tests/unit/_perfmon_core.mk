# Not a test: the perfmon core with the host fakes it calls, as the tests
# of the core and of what sits on it link it (perfmon_test,
# perfmon_sample_test, perfmon_cmd_test, the perfmon_opts fuzz target).
# The leading '_' sorts it before the .mk files that use it.
PERFMON_CORE_SRCS := kern/perfmon/perfmon.c kern/perfmon/perfmon_event.c \
	kern/perfmon/perfmon_cpu.c kern/perfmon/perfmon_td.c kern/perfmon/perfmon_nmi.c \
	kern/perfmon/perfmon_dev.c kern/perfmon/perfmon_events.c kern/perfmon/perfmon_intr.c \
	kern/perfmon/perfmon_branch.c \
	kern/perfmon/perfmon_pmc.c \
	kern/perfmon/perfmon_inherit.c kern/perfmon/perfmon_sched.c \
	kern/perfmon/perfmon_turn.c \
	kern/perfmon/perfmon_counters.c \
	kern/perfmon/perfmon_sample.c kern/perfmon/perfmon_ring.c kern/num.c arch/x86/unwind.c \
	kern/cmdline.c kern/printf.c \
	tests/unit/fakes/spinlock.c tests/unit/fakes/cpu.c \
	tests/unit/fakes/thread.c tests/unit/fakes/thread_none.c \
	tests/unit/fakes/xcall.c \
	tests/unit/fakes/timer.c tests/unit/fakes/clock.c \
	tests/unit/fakes/syscnt.c tests/unit/fakes/log.c tests/unit/fakes/kmem.c \
	tests/unit/fakes/symtab.c tests/unit/fakes/tsc.c
