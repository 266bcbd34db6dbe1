/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * ACPI tables (ACPI specification 6.5, chapter 5): the RSDP, the RSDT or
 * XSDT, the MADT (processors, I/O APICs, interrupt source overrides) and the
 * FADT (power off).
 *
 * acpi_setup() never fails the boot: missing or corrupt tables (bad
 * checksum, truncated entries) are reported in the log, and the machine is
 * then described as a single CPU with default legacy routing.
 */

#ifndef ARCH_X86_ACPI_H
#define ARCH_X86_ACPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/init.h"
#include "kern/param.h"

#define ACPI_MAX_IOAPICS    8
#define ACPI_NR_ISA_IRQS    16

struct acpi_ioapic {
    uint32_t id;
    uint64_t address;
    uint32_t gsi_base;
};

/* Routing of a legacy ISA IRQ (default: GSI = IRQ, edge, active high). */
struct acpi_isa_irq {
    uint32_t gsi;
    bool level;
    bool active_low;
};

struct acpi_info {
    bool valid;                         /* a usable MADT was found */
    uint64_t lapic_address;
    uint32_t cpu_apic_ids[CPU_MAX];     /* enabled CPUs, in MADT order */
    unsigned int nr_cpus;
    unsigned int nr_cpus_ignored;       /* beyond CPU_MAX */
    struct acpi_ioapic ioapics[ACPI_MAX_IOAPICS];
    unsigned int nr_ioapics;
    struct acpi_isa_irq isa_irqs[ACPI_NR_ISA_IRQS];
    uint16_t pm1a_cnt_port;             /* 0 when unknown */
    uint16_t slp_typ_s5;
};

extern struct acpi_info acpi_info;

/*
 * Map size bytes of firmware memory at physical address pa for reading;
 * NULL when that range is not memory the caller can read.  Tables are
 * found through addresses and lengths the firmware wrote, which may lie.
 */
typedef const void *(*acpi_map_fn_t)(uint64_t pa, size_t size);

/*
 * Parse the tables from a memory image, for host tests and for
 * acpi_setup(): rsdp points at the RSDP, of which rsdp_size bytes are
 * readable (20 for ACPI 1.0, 36 from 2.0 on); map reaches the tables.
 * Returns 0 or a negative error (the description is then left at the
 * single-CPU default).
 */
int acpi_parse(const void *rsdp, size_t rsdp_size, acpi_map_fn_t map);

/* Enter the S5 (soft off) state.  Returns only if that failed. */
void acpi_poweroff(void);

INIT_OP_DECLARE(acpi_setup);

#endif /* ARCH_X86_ACPI_H */
