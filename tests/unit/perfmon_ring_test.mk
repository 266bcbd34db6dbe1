UNIT_TESTS += perfmon_ring_test
# The ring is #included by the test (see there), not linked.
perfmon_ring_test_SRCS := tests/unit/perfmon_ring_test.c kern/string.c
