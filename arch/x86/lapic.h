/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The local APIC (Intel SDM vol. 3A, chapter 11), in x2APIC mode (MSRs)
 * when the CPU has it, else xAPIC mode (MMIO).
 *
 * Each CPU's local APIC provides the periodic clock interrupt (its timer,
 * calibrated against the TSC), IPIs, and the performance-counter LVT entry
 * through which counter overflows arrive as NMIs.
 */

#ifndef ARCH_X86_LAPIC_H
#define ARCH_X86_LAPIC_H

#include <stdbool.h>
#include <stdint.h>

#include "kern/init.h"

/* Register offsets (xAPIC MMIO; the x2APIC MSR is 0x800 + offset / 16). */
#define LAPIC_REG_ID            0x020
#define LAPIC_REG_VERSION       0x030
#define LAPIC_REG_TPR           0x080
#define LAPIC_REG_EOI           0x0b0
#define LAPIC_REG_SVR           0x0f0
#define LAPIC_REG_ESR           0x280
#define LAPIC_REG_ICR_LOW       0x300
#define LAPIC_REG_ICR_HIGH      0x310
#define LAPIC_REG_LVT_TIMER     0x320
#define LAPIC_REG_LVT_PMC       0x340
#define LAPIC_REG_LVT_LINT0     0x350
#define LAPIC_REG_LVT_LINT1     0x360
#define LAPIC_REG_LVT_ERROR     0x370
#define LAPIC_REG_TIMER_INIT    0x380
#define LAPIC_REG_TIMER_CUR     0x390
#define LAPIC_REG_TIMER_DIV     0x3e0

#define LAPIC_SVR_ENABLE        0x100
#define LAPIC_LVT_MASKED        0x10000
#define LAPIC_LVT_TIMER_PERIODIC 0x20000
#define LAPIC_DELIVERY_FIXED    0x000
#define LAPIC_DELIVERY_NMI      0x400
#define LAPIC_DELIVERY_INIT     0x500
#define LAPIC_DELIVERY_STARTUP  0x600
#define LAPIC_ICR_PENDING       0x1000
#define LAPIC_ICR_ASSERT        0x4000
#define LAPIC_ICR_LEVEL         0x8000
#define LAPIC_TIMER_DIV_16      0x3

#define LAPIC_APIC_BASE_X2APIC  (1UL << 10)
#define LAPIC_APIC_BASE_ENABLE  (1UL << 11)

/* Set up the calling CPU's local APIC (the boot CPU in lapic_setup). */
void lapic_setup_cpu(void);

uint32_t lapic_id(void);
bool lapic_x2apic_mode(void);

void lapic_eoi(void);

/* IPIs by APIC id.  Any context but NMI for the fixed vector. */
void lapic_ipi_send(uint32_t apic_id, unsigned int vector);
void lapic_ipi_nmi(uint32_t apic_id);
void lapic_send_self_nmi(void);
void lapic_ipi_init(uint32_t apic_id);
void lapic_ipi_startup(uint32_t apic_id, unsigned int page);

/*
 * Program the performance-counter LVT entry for NMI delivery (unmasked).
 * The CPU masks it when it delivers a PMI: lapic_pmc_unmask() re-arms it.
 */
void lapic_pmc_setup(void);
void lapic_pmc_unmask(void);

/* Timer ticks per second counted at boot (for the `cpus` command). */
uint64_t lapic_timer_freq(void);

/*
 * The timer's count for one clock tick (at its divider), and one-shot
 * mode: lapic_timer_oneshot() makes the calling CPU's timer interrupt once
 * after count (at least 1) of those, replacing what was programmed, the
 * periodic tick included.  Interrupts disabled.
 */
uint32_t lapic_timer_tick_count(void);
void lapic_timer_oneshot(uint32_t count);

INIT_OP_DECLARE(lapic_setup);

#endif /* ARCH_X86_LAPIC_H */
