/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * What the acpi and multiboot2 fuzz targets share: the firmware memory
 * they map (the input: physical address N at offset N, nothing past its
 * end, as the kernel's map refuses what the boot page tables do not map)
 * and the check of the ACPI description after acpi_parse(): the
 * single-CPU default after a failure; array counts within bounds and
 * distinct CPU APIC ids after a success.
 */

#include <stddef.h>
#include <stdint.h>

#include "arch/x86/acpi.h"
#include "fuzz.h"
#include "kern/error.h"

static const uint8_t *acpi_fuzz_mem;
static size_t acpi_fuzz_size;

void
acpi_fuzz_map_set(const void *mem, size_t size)
{
    acpi_fuzz_mem = mem;
    acpi_fuzz_size = size;
}

const void *
acpi_fuzz_map(uint64_t pa, size_t size)
{
    if (pa >= acpi_fuzz_size || size > acpi_fuzz_size - pa) {
        return NULL;
    }

    return acpi_fuzz_mem + pa;
}

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

