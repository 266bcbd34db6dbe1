UNIT_TESTS += perfmon_offcpu_test
perfmon_offcpu_test_SRCS := tests/unit/perfmon_offcpu_test.c \
	kern/perfmon/cmd/perfmon_offcpu.c kern/perfmon/cmd/perfmon_capture.c \
	kern/perfmon/cmd/perfmon_reads.c \
	kern/perfmon/perfmon_switchrec_decode.c kern/perfmon/perfmon_sample.c \
	kern/perfmon/perfmon_ring.c arch/x86/unwind.c kern/num.c kern/printf.c \
	kern/string.c tests/unit/fakes/console.c tests/unit/fakes/symtab.c \
	tests/unit/fakes/sample_none.c \
	tests/unit/fakes/cpu.c tests/unit/fakes/kmem.c tests/unit/fakes/tsc.c \
	tests/unit/fakes/thread_none.c
