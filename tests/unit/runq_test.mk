UNIT_TESTS += runq_test
runq_test_SRCS := tests/unit/runq_test.c kern/runq.c
