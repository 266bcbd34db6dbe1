/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * ACPI tables (ACPI specification 6.5, chapter 5).
 */

#ifndef ARCH_X86_ACPI_H
#define ARCH_X86_ACPI_H

/* Enter the S5 (soft off) state.  Returns only if that failed. */
void acpi_poweroff(void);

#endif /* ARCH_X86_ACPI_H */
