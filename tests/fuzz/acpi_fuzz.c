/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fuzz target: the ACPI table parser (arch/x86/acpi.c) on firmware
 * memory whose addresses, lengths and checksums may lie.  The input is
 * the memory: the RSDP at offset 0, and physical address N at offset N,
 * nothing mapped past the end (the map returns NULL there, as the
 * kernel's does past what the boot page tables map).  The seeds are
 * QEMU's own tables (tests/fuzz/acpi_seeds.py).
 *
 * Checked, besides every read staying inside the input (AddressSanitizer):
 * the description is the single-CPU default after a failure, and within
 * its array bounds with distinct CPU APIC ids after a success.
 */

#include <stdint.h>
#include <string.h>

#include "arch/x86/acpi.h"
#include "fuzz.h"

static const uint8_t *acpi_fuzz_mem;
static size_t acpi_fuzz_size;

static const void *
acpi_fuzz_map(uint64_t pa, size_t size)
{
    if (pa >= acpi_fuzz_size || size > acpi_fuzz_size - pa) {
        return NULL;
    }

    return acpi_fuzz_mem + pa;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int error;

    acpi_fuzz_mem = data;
    acpi_fuzz_size = size;
    error = acpi_parse((size == 0) ? NULL : data, (size < 36) ? size : 36,
                       acpi_fuzz_map);
    acpi_fuzz_check_info(error);
    return 0;
}
