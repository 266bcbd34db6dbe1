UNIT_TESTS += unwind_test
unwind_test_SRCS := tests/unit/unwind_test.c arch/x86/unwind.c \
	tests/unit/unwind_ref.c
