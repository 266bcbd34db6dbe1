/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * ACPI table parsing.
 */

#include "arch/x86/acpi.h"
#include "arch/x86/io.h"

/* QEMU's PIIX4 and ICH9 power management: PM1a control at 0x604, S5 = 0. */
#define ACPI_QEMU_PM1A_CNT      0x604
#define ACPI_PM1_SLP_EN         (1U << 13)

void
acpi_poweroff(void)
{
    io_write16(ACPI_QEMU_PM1A_CNT, ACPI_PM1_SLP_EN);
}
