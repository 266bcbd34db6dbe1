FUZZ_TARGETS += acpi
acpi_SRCS := tests/fuzz/acpi_fuzz.c tests/fuzz/acpi_fuzz_check.c \
	arch/x86/acpi.c
