UNIT_TESTS += perfmon_switchrec_test
perfmon_switchrec_test_SRCS := tests/unit/perfmon_switchrec_test.c tests/unit/fdev.c \
	kern/perfmon/perfmon_switchrec.c kern/perfmon/perfmon_switchrec_decode.c \
	kern/swevent.c kern/string.c $(PERFMON_CORE_SRCS)
