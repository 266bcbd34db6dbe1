/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Local APIC driver.
 */

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/acpi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/io.h"
#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "arch/x86/trap.h"
#include "arch/x86/tsc.h"
#include "kern/clock.h"
#include "kern/init.h"
#include "kern/log.h"
#include "kern/pmem.h"
#include "kern/printf.h"
#include "kern/syscnt.h"

/* The legacy 8259 PICs, remapped out of the exception range and masked. */
#define LAPIC_PIC1_CMD          0x20
#define LAPIC_PIC1_DATA         0x21
#define LAPIC_PIC2_CMD          0xa0
#define LAPIC_PIC2_DATA         0xa1

#define LAPIC_CALIB_MS          10

/* IPIs sent per CPU (fixed and NMI), registered as each CPU starts. */
static struct syscnt lapic_sc_ipis[CPU_MAX];

static bool lapic_x2apic;
static volatile uint32_t *lapic_mmio;
static uint32_t lapic_timer_count;      /* initial count for one clock tick */

static uint32_t
lapic_read(unsigned int reg)
{
    if (lapic_x2apic) {
        return msr_read(MSR_X2APIC_BASE + (reg >> 4));
    }

    return lapic_mmio[reg / 4];
}

static void
lapic_write(unsigned int reg, uint32_t value)
{
    if (lapic_x2apic) {
        msr_write(MSR_X2APIC_BASE + (reg >> 4), value);
    } else {
        lapic_mmio[reg / 4] = value;
    }
}

bool
lapic_x2apic_mode(void)
{
    return lapic_x2apic;
}

uint32_t
lapic_id(void)
{
    uint32_t id = lapic_read(LAPIC_REG_ID);

    return lapic_x2apic ? id : id >> 24;
}

void
lapic_eoi(void)
{
    lapic_write(LAPIC_REG_EOI, 0);
}

static void
lapic_icr_write(uint32_t apic_id, uint32_t low)
{
    unsigned long flags = cpu_intr_save();

    syscnt_inc(&lapic_sc_ipis[cpu_id()]);

    if (lapic_x2apic) {
        /*
         * A WRMSR to an x2APIC register is not ordered after earlier
         * stores (SDM 11.12.3): without the fences, the IPI could reach
         * its target before the data it announces (an xcall's mailbox).
         */
        __asm__ __volatile__("mfence; lfence" : : : "memory");

        /* One 64-bit write, no delivery status to poll (SDM 11.12.9). */
        msr_write(MSR_X2APIC_BASE + (LAPIC_REG_ICR_LOW >> 4),
                  ((uint64_t)apic_id << 32) | low);
    } else {
        while (lapic_read(LAPIC_REG_ICR_LOW) & LAPIC_ICR_PENDING) {
            cpu_pause();
        }

        lapic_write(LAPIC_REG_ICR_HIGH, apic_id << 24);
        lapic_write(LAPIC_REG_ICR_LOW, low);
    }

    cpu_intr_restore(flags);
}

void
lapic_ipi_send(uint32_t apic_id, unsigned int vector)
{
    lapic_icr_write(apic_id, LAPIC_DELIVERY_FIXED | vector | LAPIC_ICR_ASSERT);
}

void
lapic_ipi_nmi(uint32_t apic_id)
{
    lapic_icr_write(apic_id, LAPIC_DELIVERY_NMI | LAPIC_ICR_ASSERT);
}

void
lapic_send_self_nmi(void)
{
    /* The self shorthand is for fixed interrupts only: name ourselves. */
    lapic_ipi_nmi(lapic_id());
}

void
lapic_ipi_init(uint32_t apic_id)
{
    lapic_icr_write(apic_id, LAPIC_DELIVERY_INIT | LAPIC_ICR_ASSERT
                             | LAPIC_ICR_LEVEL);
}

void
lapic_ipi_startup(uint32_t apic_id, unsigned int page)
{
    lapic_icr_write(apic_id, LAPIC_DELIVERY_STARTUP | LAPIC_ICR_ASSERT | page);
}

void
lapic_pmc_setup(void)
{
    lapic_write(LAPIC_REG_LVT_PMC, LAPIC_DELIVERY_NMI);
}

void
lapic_pmc_unmask(void)
{
    lapic_write(LAPIC_REG_LVT_PMC, LAPIC_DELIVERY_NMI);
}

uint64_t
lapic_timer_freq(void)
{
    return (uint64_t)lapic_timer_count * CLOCK_HZ * 16;
}

uint32_t
lapic_timer_tick_count(void)
{
    return lapic_timer_count;
}

void
lapic_timer_oneshot(uint32_t count)
{
    lapic_write(LAPIC_REG_LVT_TIMER, TRAP_VEC_TIMER);
    lapic_write(LAPIC_REG_TIMER_INIT, (count == 0) ? 1 : count);
}

static void
lapic_enable_mode(void)
{
    uint64_t base = msr_read(MSR_APIC_BASE) | LAPIC_APIC_BASE_ENABLE;

    if (lapic_x2apic) {
        base |= LAPIC_APIC_BASE_X2APIC;
    }

    msr_write(MSR_APIC_BASE, base);
}

/* Count the timer's ticks (divided by 16) during LAPIC_CALIB_MS of TSC time. */
static void
lapic_timer_calibrate(void)
{
    uint32_t elapsed;

    lapic_write(LAPIC_REG_TIMER_DIV, LAPIC_TIMER_DIV_16);
    lapic_write(LAPIC_REG_LVT_TIMER, LAPIC_LVT_MASKED);
    lapic_write(LAPIC_REG_TIMER_INIT, UINT32_MAX);
    tsc_delay_us(LAPIC_CALIB_MS * 1000);
    elapsed = UINT32_MAX - lapic_read(LAPIC_REG_TIMER_CUR);
    lapic_write(LAPIC_REG_TIMER_INIT, 0);
    lapic_timer_count = elapsed / LAPIC_CALIB_MS * 1000 / CLOCK_HZ;

    if (lapic_timer_count == 0) {
        lapic_timer_count = 1;
    }
}

void
lapic_setup_cpu(void)
{
    syscnt_register_cpu(&lapic_sc_ipis[cpu_id()], "ipi_sent", cpu_id());
    lapic_enable_mode();
    lapic_write(LAPIC_REG_TPR, 0);
    lapic_write(LAPIC_REG_SVR, LAPIC_SVR_ENABLE | TRAP_VEC_SPURIOUS);
    lapic_write(LAPIC_REG_LVT_LINT0, LAPIC_LVT_MASKED);
    lapic_write(LAPIC_REG_LVT_LINT1, LAPIC_LVT_MASKED);
    lapic_write(LAPIC_REG_LVT_ERROR, TRAP_VEC_LAPIC_ERR);
    lapic_write(LAPIC_REG_ESR, 0);
    lapic_write(LAPIC_REG_LVT_PMC, LAPIC_LVT_MASKED | LAPIC_DELIVERY_NMI);

    /* The periodic clock tick. */
    lapic_write(LAPIC_REG_TIMER_DIV, LAPIC_TIMER_DIV_16);
    lapic_write(LAPIC_REG_LVT_TIMER, LAPIC_LVT_TIMER_PERIODIC | TRAP_VEC_TIMER);
    lapic_write(LAPIC_REG_TIMER_INIT, lapic_timer_count);
    lapic_eoi();
}

static void
lapic_pic_disable(void)
{
    /* ICW1..ICW4: remap to 0x20/0x28 so stray IRQs are not exceptions. */
    io_write8(LAPIC_PIC1_CMD, 0x11);
    io_write8(LAPIC_PIC2_CMD, 0x11);
    io_write8(LAPIC_PIC1_DATA, TRAP_VEC_PIC_BASE);
    io_write8(LAPIC_PIC2_DATA, TRAP_VEC_PIC_BASE + 8);
    io_write8(LAPIC_PIC1_DATA, 4);
    io_write8(LAPIC_PIC2_DATA, 2);
    io_write8(LAPIC_PIC1_DATA, 1);
    io_write8(LAPIC_PIC2_DATA, 1);
    io_write8(LAPIC_PIC1_DATA, 0xff);
    io_write8(LAPIC_PIC2_DATA, 0xff);
}

static void
lapic_intr_spurious(struct trap_frame *frame)
{
    (void)frame;        /* no EOI for a spurious interrupt (SDM 11.9) */
}

static void
lapic_intr_error(struct trap_frame *frame)
{
    uint32_t esr;

    (void)frame;
    lapic_write(LAPIC_REG_ESR, 0);
    esr = lapic_read(LAPIC_REG_ESR);
    lapic_eoi();
    log_warning("lapic: error interrupt, ESR 0x%x", esr);
}

static int
lapic_setup(void)
{
    if ((cpu_info.feat1_edx & CPU_FEAT1_EDX_APIC) == 0) {
        log_error("lapic: this CPU has no local APIC");
        return -1;
    }

    lapic_x2apic = (cpu_info.feat1_ecx & CPU_FEAT1_ECX_X2APIC) != 0;
    lapic_mmio = pmem_va(acpi_info.lapic_address);
    lapic_pic_disable();
    lapic_enable_mode();
    trap_register(TRAP_VEC_SPURIOUS, lapic_intr_spurious);
    trap_register(TRAP_VEC_LAPIC_ERR, lapic_intr_error);
    lapic_timer_calibrate();
    cpu_table[0].apic_id = lapic_id();
    log_info("lapic: %s mode, id %u, timer clock %lu kHz", 
             lapic_x2apic ? "x2APIC" : "xAPIC", lapic_id(),
             lapic_timer_freq() / 1000);
    return 0;
}

INIT_OP_DEFINE(lapic_setup, INIT_OP_DEP(acpi_setup, true));
