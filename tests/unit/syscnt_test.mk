UNIT_TESTS += syscnt_test
syscnt_test_SRCS := tests/unit/syscnt_test.c kern/syscnt.c tests/unit/fakes/spinlock.c
