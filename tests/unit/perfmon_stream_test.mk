UNIT_TESTS += perfmon_stream_test
perfmon_stream_test_SRCS := tests/unit/perfmon_stream_test.c \
	kern/perfmon/cmd/perfmon_stream.c kern/perfmon/cmd/perfmon_reads.c \
	kern/perfmon/perfmon_sample.c kern/perfmon/perfmon_ring.c \
	kern/perfmon/perfmon_switchrec_decode.c \
	arch/x86/unwind.c kern/num.c kern/printf.c kern/string.c \
	tests/unit/fakes/uart.c tests/unit/fakes/symtab.c \
	tests/unit/fakes/sample_none.c \
	tests/unit/fakes/cpu.c tests/unit/fakes/kmem.c tests/unit/fakes/tsc.c
