UNIT_TESTS += kmem_test
kmem_test_SRCS := tests/unit/kmem_test.c kern/kmem.c tests/unit/fakes/pmem.c tests/unit/fakes/spinlock.c
