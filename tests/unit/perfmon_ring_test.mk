UNIT_TESTS += perfmon_ring_test
perfmon_ring_test_SRCS := tests/unit/perfmon_ring_test.c kern/perfmon/perfmon_ring.c \
	kern/string.c
