/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * A register-level model of the x86 performance-monitoring hardware, for
 * the host tests of the PMU drivers: CPUID, the MSR space of one CPU
 * (Intel architectural perfmon versions 1 to 5, AMD legacy, core extension
 * and PerfMonV2), the local APIC performance-counter LVT, and the machines
 * that only pretend to have a PMU (KVM without a vPMU, QEMU TCG, counters
 * that do not hold values, MSRs that fault).
 *
 * It provides the drivers' hardware seam (pmu_msr_read/pmu_msr_write,
 * msr_read_safe/msr_write_safe, pmu_cpuid, lapic_pmc_setup/unmask).  An
 * access to an MSR the modelled CPU lacks raises the modelled #GP: the safe
 * accessors return -EIO, the plain ones record an "unexpected #GP" that a
 * test asserts never happens.  Tests inject events (cycles, instructions,
 * ... in kernel or user mode); the model counts them in every enabled
 * counter whose selector matches, wraps at the modelled width and raises a
 * PMI (a pending NMI) when the counter's interrupt bit is set.
 */

#ifndef TESTS_UNIT_MSR_MODEL_H
#define TESTS_UNIT_MSR_MODEL_H

#include <stdbool.h>
#include <stdint.h>

/* What the machine really does with its PMU. */
#define MSR_MODEL_REAL          0   /* a working PMU as CPUID describes */
#define MSR_MODEL_KVM_NO_PMU    1   /* CPUID.0AH zero; P6/K7 MSRs read 0, the
                                       rest #GP */
#define MSR_MODEL_TCG           2   /* CPUID.0AH zero; every MSR reads 0 and
                                       drops writes */
#define MSR_MODEL_BROKEN        3   /* CPUID as REAL; counters read 0 and
                                       drop writes */
#define MSR_MODEL_FAULTING      4   /* CPUID as REAL; every PMU MSR #GP */

struct msr_model_config {
    unsigned int vendor;        /* CPU_VENDOR_INTEL or CPU_VENDOR_AMD */
    unsigned int family;
    unsigned int model;
    unsigned int kind;          /* MSR_MODEL_* */
    bool apic;                  /* CPUID.1:EDX.APIC */

    /* Intel (CPUID leaf 0AH). */
    unsigned int version;
    unsigned int nr_gp;
    unsigned int gp_width;
    unsigned int nr_fixed;      /* EDX[4:0] */
    unsigned int fixed_width;
    uint32_t fixed_bitmap;      /* ECX, version 5 */
    unsigned int ebx_len;
    uint32_t ebx_unavail;
    bool pdcm;
    bool fw_write;

    /* AMD. */
    bool core_ext;              /* CPUID 8000_0001h:ECX[23] */
    bool perfmon_v2;            /* CPUID 8000_0022h:EAX[0] */
    unsigned int v2_nr;         /* CPUID 8000_0022h:EBX[3:0] */
};

/* Events a test injects. */
#define MSR_MODEL_EV_CYCLES         0
#define MSR_MODEL_EV_REF_CYCLES     1
#define MSR_MODEL_EV_INSTRUCTIONS   2
#define MSR_MODEL_EV_LLC_REF        3
#define MSR_MODEL_EV_LLC_MISS       4
#define MSR_MODEL_EV_BRANCH         5
#define MSR_MODEL_EV_BRANCH_MISS    6
#define MSR_MODEL_NR_EVENTS         7

/* Typical machines. */
struct msr_model_config msr_model_intel(unsigned int version);
struct msr_model_config msr_model_amd(unsigned int family, bool core_ext,
                                      bool perfmon_v2);

/* Reset the machine to config: every register zero, LVT masked. */
void msr_model_init(const struct msr_model_config *config);

/*
 * Count count occurrences of event in user or kernel mode.  count must be
 * below 2^width of the counters (one wrap at most per call).
 */
void msr_model_inject(unsigned int event, uint64_t count, bool user);

/* Take one pending NMI: true when there was one. */
bool msr_model_take_nmi(void);
unsigned int msr_model_nmis_pending(void);

/*
 * PMIs that found the LVT masked with no NMI pending, and were lost; PMIs
 * merged into an NMI already pending.
 */
unsigned int msr_model_pmis_lost(void);
unsigned int msr_model_pmis_merged(void);

bool msr_model_lvt_masked(void);
unsigned int msr_model_nr_unmasks(void);

/* #GP raised by the safe accessors, and by the plain ones (a driver bug). */
unsigned int msr_model_nr_gp_safe(void);
unsigned int msr_model_nr_gp_unsafe(void);

/* MSR writes of any kind so far. */
unsigned int msr_model_nr_writes(void);

/*
 * Look at a register without side effects: false when the modelled CPU
 * has no such MSR.
 */
bool msr_model_peek(uint32_t msr, uint64_t *valuep);

/* Set overflow-status bits directly (stale or foreign bits). */
void msr_model_set_status(uint64_t bits);

#endif /* TESTS_UNIT_MSR_MODEL_H */
