# kern/timer.c is #included by the test (to reach its static thread and
# setup functions), so it is not listed here.
UNIT_TESTS += timer_test
timer_test_SRCS := tests/unit/timer_test.c tests/unit/fakes/timer_deps.c tests/unit/fakes/spinlock.c \
	kern/printf.c
