/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The I/O APIC (Intel 82093AA data sheet): routes legacy device interrupts
 * to the local APICs.  Only the serial port's IRQ is routed, to the boot
 * CPU.
 */

#ifndef ARCH_X86_IOAPIC_H
#define ARCH_X86_IOAPIC_H

#include <stdint.h>

#include "kern/init.h"

#define IOAPIC_REG_ID           0x00
#define IOAPIC_REG_VERSION      0x01
#define IOAPIC_REG_REDTBL       0x10

#define IOAPIC_RTE_MASKED       (1U << 16)
#define IOAPIC_RTE_LEVEL        (1U << 15)
#define IOAPIC_RTE_ACTIVE_LOW   (1U << 13)

/*
 * Route ISA IRQ irq (with the MADT's overrides) to vector on the CPU whose
 * APIC id is apic_id.  Returns 0, or -ENODEV without an I/O APIC serving it.
 */
int ioapic_route_isa(unsigned int irq, unsigned int vector, uint32_t apic_id);

INIT_OP_DECLARE(ioapic_setup);

#endif /* ARCH_X86_IOAPIC_H */
