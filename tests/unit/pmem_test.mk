UNIT_TESTS += pmem_test
pmem_test_SRCS := tests/unit/pmem_test.c kern/pmem.c tests/unit/fakes/spinlock.c
