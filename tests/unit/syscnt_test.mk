UNIT_TESTS += syscnt_test
syscnt_test_SRCS := tests/unit/syscnt_test.c kern/syscnt.c kern/printf.c \
	kern/string.c tests/unit/fakes/spinlock.c
