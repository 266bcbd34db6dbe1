/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The Intel driver's own state, shared by its two halves: the operations
 * (pmu_intel.c, the paths that run while counters count) and the probe
 * (pmu_intel_probe.c: CPUID, the checks of the hardware, per-CPU setup).
 * Nothing else includes this header.
 */

#ifndef ARCH_X86_PMU_INTEL_I_H
#define ARCH_X86_PMU_INTEL_I_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/msr.h"
#include "arch/x86/pmu.h"
#include "kern/perfmon.h"

/*
 * The probed PMU, written at boot by probe and commit (thread context,
 * before registration; cpu_probe only reads it) and constant afterwards,
 * except alloc_mask (the core's allocator lock).  Between probe and commit
 * nr_gp and fixed_map describe the boot CPU's candidates (cand_mask);
 * after commit, the counters in use (exist_mask), which may have holes
 * where the firmware keeps a counter.
 */
struct pmu_intel {
    unsigned int version;
    unsigned int nr_gp;
    unsigned int gp_width;
    unsigned int nr_fixed;
    unsigned int fixed_width;
    uint32_t fixed_map;         /* fixed counters, bit i = counter i */
    uint32_t avail;             /* available architectural events */
    uint64_t cnt_mask;          /* physical counter bits */
    uint64_t val_mask;          /* counter bits the core sees */
    uint64_t cand_mask;         /* hw ids the boot CPU offers */
    uint64_t exist_mask;        /* hw ids (= status bits) of our counters */
    bool fw_write;
    bool fixed_assumed;         /* fixed counters CPUID did not report */
    bool nmi;
    bool topbit;                /* version 1 overflow detection */
    uint64_t alloc_mask;
};

/* General-purpose counters are hw ids 0..31 (status bits below 32). */
#define PMU_INTEL_GP_BITS       ((1ULL << PMU_INTEL_FIXED_BASE) - 1)

/* No architectural event, no fixed counter. */
#define PMU_INTEL_NONE          (-1)

extern struct pmu_intel pmu_intel;

/*
 * Each CPU's IA32_FIXED_CTR_CTRL as the driver last wrote it: the driver
 * is the only writer (the firmware's fields were read once, at cpu_init),
 * so a fixed counter starts and stops with one write and no read.
 * Written by its CPU with interrupts disabled, through
 * pmu_intel_fixed_ctrl_set().
 */
extern uint64_t pmu_intel_fixed_ctrl[CPU_MAX];

extern struct perfmon_dev pmu_intel_dev;
extern const struct perfmon_dev_ops pmu_intel_ops;

static inline bool
pmu_intel_is_fixed(unsigned int hw_id)
{
    return hw_id >= PMU_INTEL_FIXED_BASE;
}

/* A counter's count MSR: IA32_FIXED_CTRi, or IA32_PMCi's legacy alias. */
static inline uint32_t
pmu_intel_ctr_msr(unsigned int hw_id)
{
    if (pmu_intel_is_fixed(hw_id)) {
        return MSR_IA32_FIXED_CTR0 + (hw_id - PMU_INTEL_FIXED_BASE);
    }

    return MSR_IA32_PMC0 + hw_id;
}

/* Whether fixed counter index (or PMU_INTEL_NONE) is in use. */
static inline bool
pmu_intel_has_fixed(int index)
{
    return index != PMU_INTEL_NONE
           && (pmu_intel.fixed_map & (1U << index)) != 0;
}

/* Write this CPU's IA32_FIXED_CTR_CTRL, and remember it. */
void pmu_intel_fixed_ctrl_set(uint64_t ctrl);

/* Forget every extra MSR held (a new probe). */
void pmu_intel_extra_reset(void);

#endif /* ARCH_X86_PMU_INTEL_I_H */
