/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Model-specific registers: every MSR number the kernel uses is named here
 * (Intel SDM volume 4, AMD APM volume 2 appendix A), with the accessors.
 *
 * msr_read()/msr_write() fault (#GP) on an MSR the CPU lacks, which is a
 * kernel bug.  msr_read_safe()/msr_write_safe() return -EIO instead: they are
 * for probing hardware whose presence CPUID may misreport (the PMU drivers).
 *
 * msr_rdpmc() reads a performance counter with RDPMC, by its counter index
 * rather than its MSR (Intel SDM vol. 2B, RDPMC; AMD APM vol. 3, RDPMC):
 * cheaper than RDMSR on hardware, and legal at CPL 0 whatever CR4.PCE
 * says.  It faults (#GP) on an index the CPU lacks; msr_rdpmc_safe()
 * returns -EIO instead, also where the instruction itself is missing
 * (#UD: QEMU's TCG), for the PMU drivers' probe.
 */

#ifndef ARCH_X86_MSR_H
#define ARCH_X86_MSR_H

#include <stdint.h>

#define MSR_APIC_BASE               0x0000001b
#define MSR_TSC_DEADLINE            0x000006e0
#define MSR_X2APIC_BASE             0x00000800
#define MSR_EFER                    0xc0000080
#define MSR_FS_BASE                 0xc0000100
#define MSR_GS_BASE                 0xc0000101
#define MSR_KERNEL_GS_BASE          0xc0000102

/* Intel architectural performance monitoring (SDM vol. 3B, ch. 20). */
#define MSR_IA32_PMC0               0x000000c1
#define MSR_IA32_PERFEVTSEL0        0x00000186
#define MSR_IA32_PERF_CAPABILITIES  0x00000345
#define MSR_IA32_FIXED_CTR0         0x00000309
#define MSR_IA32_FIXED_CTR_CTRL     0x0000038d
#define MSR_IA32_PERF_GLOBAL_STATUS 0x0000038e
#define MSR_IA32_PERF_GLOBAL_CTRL   0x0000038f
#define MSR_IA32_PERF_GLOBAL_OVF_CTRL 0x00000390
#define MSR_IA32_A_PMC0             0x000004c1

/*
 * RDPMC's counter index (ECX): general-purpose counter i is i; with bit
 * 30 set, fixed counter i (SDM vol. 2B, RDPMC, "Valid Counter Index").
 * AMD numbers its core counters 0-5 (APM vol. 3, RDPMC).
 */
#define MSR_RDPMC_FIXED             (1U << 30)

/*
 * Branch records: Intel's legacy LBR stack (SDM vol. 3B, "Last Branch,
 * Interrupt, and Exception Recording"; the FROM/TO/INFO bases and depth
 * depend on the CPU model, arch/x86/lbr_intel.c), Intel Architectural LBR
 * (SDM vol. 3B, "Architectural Last Branch Records") and AMD's LbrExtV2
 * (APM vol. 2, "Last Branch Stack"), which shares its MSR range with
 * Zen 3's branch sampling.
 */
#define MSR_IA32_DEBUGCTL           0x000001d9
#define MSR_LBR_SELECT              0x000001c8
#define MSR_LBR_TOS                 0x000001c9
#define MSR_LBR_CORE_FROM           0x00000040
#define MSR_LBR_CORE_TO             0x00000060
#define MSR_LBR_NHM_FROM            0x00000680
#define MSR_LBR_NHM_TO              0x000006c0
#define MSR_LBR_INFO_0              0x00000dc0
#define MSR_ARCH_LBR_CTL            0x000014ce
#define MSR_ARCH_LBR_DEPTH          0x000014cf
#define MSR_ARCH_LBR_INFO_0         0x00001200
#define MSR_ARCH_LBR_FROM_0         0x00001500
#define MSR_ARCH_LBR_TO_0           0x00001600
#define MSR_AMD_LBR_SELECT          0xc000010e
#define MSR_AMD_DBG_EXTN_CFG        0xc000010f
#define MSR_AMD_LBR_FROM_0          0xc0010300  /* TO_i: FROM_i + 1 */

/* AMD performance counters (APM vol. 2, section 13.2). */
#define MSR_AMD_K7_PERFEVTSEL0      0xc0010000
#define MSR_AMD_K7_PERFCTR0         0xc0010004
#define MSR_AMD_F15H_PERF_CTL0      0xc0010200
#define MSR_AMD_F15H_PERF_CTR0      0xc0010201
#define MSR_AMD_PERF_CNTR_GLOBAL_STATUS     0xc0000300
#define MSR_AMD_PERF_CNTR_GLOBAL_CTL        0xc0000301
#define MSR_AMD_PERF_CNTR_GLOBAL_STATUS_CLR 0xc0000302
#define MSR_AMD_PERF_CNTR_GLOBAL_STATUS_SET 0xc0000303

#ifndef TALLY_HOST_TEST

static inline uint64_t
msr_read(uint32_t msr)
{
    uint32_t low, high;

    __asm__ __volatile__("rdmsr" : "=a"(low), "=d"(high) : "c"(msr));
    return ((uint64_t)high << 32) | low;
}

static inline void
msr_write(uint32_t msr, uint64_t value)
{
    __asm__ __volatile__("wrmsr"
                         : : "c"(msr), "a"((uint32_t)value),
                             "d"((uint32_t)(value >> 32))
                         : "memory");
}

static inline uint64_t
msr_rdpmc(uint32_t index)
{
    uint32_t low, high;

    __asm__ __volatile__("rdpmc" : "=a"(low), "=d"(high) : "c"(index));
    return ((uint64_t)high << 32) | low;
}

#else /* TALLY_HOST_TEST */

uint64_t msr_rdpmc(uint32_t index);

#endif /* TALLY_HOST_TEST */

/*
 * Read or write an MSR, returning 0, or -EIO when the access raised #GP
 * (the #GP handler resumes at a fixup, see trap.c).
 */
int msr_read_safe(uint32_t msr, uint64_t *valuep);
int msr_write_safe(uint32_t msr, uint64_t value);

/* RDPMC of counter index, 0, or -EIO when it raised #GP or #UD. */
int msr_rdpmc_safe(uint32_t index, uint64_t *valuep);

#endif /* ARCH_X86_MSR_H */
