UNIT_TESTS += acpi_test
acpi_test_SRCS := tests/unit/acpi_test.c arch/x86/acpi.c
