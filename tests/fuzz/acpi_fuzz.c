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

#include <stddef.h>
#include <stdint.h>

#include "arch/x86/acpi.h"
#include "fuzz.h"

/* Bytes of an ACPI 2.0 RSDP (ACPI 6.5, 5.2.5.3): what may be read of it. */
#define ACPI_FUZZ_RSDP_SIZE 36

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int error;

    acpi_fuzz_map_set(data, size);
    error = acpi_parse((size == 0) ? NULL : data, (size < ACPI_FUZZ_RSDP_SIZE) ? size
                                              : ACPI_FUZZ_RSDP_SIZE,
                       acpi_fuzz_map);
    acpi_fuzz_check_info(error);
    return 0;
}
