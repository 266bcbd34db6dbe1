FUZZ_TARGETS += printf
printf_SRCS := tests/fuzz/printf_fuzz.c kern/printf.c
