/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * I/O APIC driver: every redirection entry masked at boot, then the few
 * routes the kernel asks for.
 */

#include <stdint.h>

#include "arch/x86/acpi.h"
#include "arch/x86/ioapic.h"
#include "kern/error.h"
#include "kern/init.h"
#include "kern/log.h"
#include "kern/pmem.h"
#include "kern/spinlock.h"

#define IOAPIC_WINDOW_OFFSET    0x10

static struct spinlock ioapic_lock = SPINLOCK_INITIALIZER;

static uint32_t
ioapic_read(const struct acpi_ioapic *ioapic, unsigned int reg)
{
    volatile uint32_t *base = pmem_va(ioapic->address);

    base[0] = reg;
    return base[IOAPIC_WINDOW_OFFSET / 4];
}

static void
ioapic_write(const struct acpi_ioapic *ioapic, unsigned int reg,
             uint32_t value)
{
    volatile uint32_t *base = pmem_va(ioapic->address);

    base[0] = reg;
    base[IOAPIC_WINDOW_OFFSET / 4] = value;
}

static unsigned int
ioapic_nr_entries(const struct acpi_ioapic *ioapic)
{
    return ((ioapic_read(ioapic, IOAPIC_REG_VERSION) >> 16) & 0xff) + 1;
}

static const struct acpi_ioapic *
ioapic_lookup(uint32_t gsi, unsigned int *pinp)
{
    for (unsigned int i = 0; i < acpi_info.nr_ioapics; i++) {
        const struct acpi_ioapic *ioapic = &acpi_info.ioapics[i];

        if (gsi >= ioapic->gsi_base
            && gsi < ioapic->gsi_base + ioapic_nr_entries(ioapic)) {
            *pinp = gsi - ioapic->gsi_base;
            return ioapic;
        }
    }

    return NULL;
}

int
ioapic_route_isa(unsigned int irq, unsigned int vector, uint32_t apic_id)
{
    const struct acpi_isa_irq *isa = &acpi_info.isa_irqs[irq];
    const struct acpi_ioapic *ioapic;
    unsigned long flags;
    unsigned int pin;
    uint32_t low;

    ioapic = ioapic_lookup(isa->gsi, &pin);

    if (ioapic == NULL) {
        return -ENODEV;
    }

    low = vector | (isa->level ? IOAPIC_RTE_LEVEL : 0)
          | (isa->active_low ? IOAPIC_RTE_ACTIVE_LOW : 0);
    spinlock_lock_intr_save(&ioapic_lock, &flags);
    ioapic_write(ioapic, IOAPIC_REG_REDTBL + 2 * pin + 1, apic_id << 24);
    ioapic_write(ioapic, IOAPIC_REG_REDTBL + 2 * pin, low);
    spinlock_unlock_intr_restore(&ioapic_lock, flags);
    return 0;
}

static int
ioapic_setup(void)
{
    for (unsigned int i = 0; i < acpi_info.nr_ioapics; i++) {
        const struct acpi_ioapic *ioapic = &acpi_info.ioapics[i];
        unsigned int n = ioapic_nr_entries(ioapic);

        for (unsigned int pin = 0; pin < n; pin++) {
            ioapic_write(ioapic, IOAPIC_REG_REDTBL + 2 * pin,
                         IOAPIC_RTE_MASKED);
        }

        log_info("ioapic: id %u at 0x%lx, GSIs %u-%u", ioapic->id,
                 ioapic->address, ioapic->gsi_base, ioapic->gsi_base + n - 1);
    }

    return 0;
}

INIT_OP_DEFINE(ioapic_setup, INIT_OP_DEP(acpi_setup, true));
