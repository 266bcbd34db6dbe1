FUZZ_TARGETS += cmdline
cmdline_SRCS := tests/fuzz/cmdline_fuzz.c kern/cmdline.c
