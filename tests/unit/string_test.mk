UNIT_TESTS += string_test
string_test_SRCS := tests/unit/string_test.c kern/string.c
# Without this gcc expands calls with constant arguments inline and the
# functions under test would never run.
$(UBUILD)/obj/tests/unit/string_test.o: UCFLAGS += -fno-builtin
