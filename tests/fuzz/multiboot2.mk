FUZZ_TARGETS += multiboot2
multiboot2_SRCS := tests/fuzz/multiboot2_fuzz.c arch/x86/multiboot2.c \
	arch/x86/acpi.c tests/fuzz/acpi_fuzz_check.c
