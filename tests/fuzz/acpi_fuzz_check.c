/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The check of the ACPI description after acpi_parse(), shared by the
 * acpi and multiboot2 fuzz targets: the single-CPU default after a
 * failure; array counts within bounds and distinct CPU APIC ids after a
 * success.
 */

#include "arch/x86/acpi.h"
#include "fuzz.h"
#include "kern/error.h"

void
acpi_fuzz_check_info(int error)
{
    const struct acpi_info *info = &acpi_info;

    fuzz_check(info->nr_ioapics <= ACPI_MAX_IOAPICS);
    fuzz_check(info->nr_cpus <= CPU_MAX);

    if (error) {
        fuzz_check(error == -EINVAL || error == -ENOENT);
        fuzz_check(!info->valid && info->nr_cpus == 0);
        fuzz_check(info->nr_ioapics == 0);
        fuzz_check(info->lapic_address == 0xfee00000);
        return;
    }

    fuzz_check(info->valid && info->nr_cpus >= 1);

    for (unsigned int i = 0; i < info->nr_cpus; i++) {
        for (unsigned int j = 0; j < i; j++) {
            fuzz_check(info->cpu_apic_ids[i] != info->cpu_apic_ids[j]);
        }
    }
}

