/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The Intel driver's probe (see pmu_intel.c for the driver): CPUID leaf
 * 0AH decoded, the counters checked through the fault-safe accessors
 * before CPUID is trusted, each CPU's counters found, the device made, and
 * each CPU's counters set up once.  Runs at boot only.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/msr.h"
#include "arch/x86/pmu.h"
#include "arch/x86/pmu_intel_i.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/string.h"

/* Intel's vendor string in CPUID leaf 0 (EBX, EDX, ECX). */
#define PMU_INTEL_VENDOR_EBX    0x756e6547  /* "Genu" */
#define PMU_INTEL_VENDOR_EDX    0x49656e69  /* "ineI" */
#define PMU_INTEL_VENDOR_ECX    0x6c65746e  /* "ntel" */

/* The patterns a counter must keep to be trusted. */
static const uint64_t pmu_intel_patterns[] = { 0x5a5a, 0xa5a5 };

/* A general-purpose counter's event select; fixed counters have none. */
static uint32_t
pmu_intel_ctl_msr(unsigned int hw_id)
{
    return pmu_intel_is_fixed(hw_id) ? 0 : MSR_IA32_PERFEVTSEL0 + hw_id;
}

/*
 * Whether this CPU's counter hw_id answers (its MSRs do not fault) and,
 * in *busyp, whether it is enabled: with nothing of ours running yet, the
 * firmware's.  fixed_ctrl: this CPU's IA32_FIXED_CTR_CTRL.  Fault-safe
 * reads only.
 */
static bool
pmu_intel_counter_answers(unsigned int hw_id, uint64_t fixed_ctrl,
                          bool *busyp)
{
    uint64_t ctl, value;

    if (msr_read_safe(pmu_intel_ctr_msr(hw_id), &value) != 0) {
        return false;
    }

    if (pmu_intel_is_fixed(hw_id)) {
        ctl = fixed_ctrl >> PMU_FIXED_CTRL_SHIFT(hw_id - PMU_INTEL_FIXED_BASE);
        *busyp = (ctl & (PMU_FIXED_CTRL_OS | PMU_FIXED_CTRL_USR)) != 0;
        return true;
    }

    if (msr_read_safe(pmu_intel_ctl_msr(hw_id), &ctl) != 0) {
        return false;
    }

    *busyp = (ctl & PMU_EVTSEL_EN) != 0;
    return true;
}

/*
 * This CPU's counters among mask: those that answer, and (in *busyp) those
 * of them the firmware has enabled.
 */
static uint64_t
pmu_intel_counters_here(uint64_t mask, uint64_t *busyp)
{
    uint64_t fixed_ctrl = 0, answer = 0;

    *busyp = 0;

    if ((mask & ~PMU_INTEL_GP_BITS) != 0
        && msr_read_safe(MSR_IA32_FIXED_CTR_CTRL, &fixed_ctrl) != 0) {
        mask &= PMU_INTEL_GP_BITS;
    }

    while (mask != 0) {
        unsigned int hw_id = (unsigned int)__builtin_ctzll(mask);
        bool busy = false;

        mask &= mask - 1;

        if (pmu_intel_counter_answers(hw_id, fixed_ctrl, &busy)) {
            answer |= 1ULL << hw_id;
            *busyp |= busy ? (1ULL << hw_id) : 0;
        }
    }

    return answer;
}

/*
 * A fixed counter must also keep its top bit: the width is the general
 * counters' when assumed.
 */
#define PMU_INTEL_NR_FIXED_PATTERNS 3

static const uint64_t *
pmu_intel_fixed_patterns(void)
{
    static uint64_t patterns[PMU_INTEL_NR_FIXED_PATTERNS];

    patterns[0] = pmu_intel_patterns[0];
    patterns[1] = pmu_intel_patterns[1];
    patterns[2] = (pmu_intel.cnt_mask >> 1) + 1;
    return patterns;
}

/* Write an MSR back with what it holds: does it take writes at all? */
static bool
pmu_intel_rewrite_safe(uint32_t msr)
{
    uint64_t value;

    return msr_read_safe(msr, &value) == 0 && msr_write_safe(msr, value) == 0;
}

/*
 * CPUID alone is not trusted: hypervisors and emulators may advertise
 * counters whose MSRs fault, or read 0 and drop writes.  Check that the
 * control MSRs take writes and that a counter keeps what is written to it,
 * everything through the faulting-safe accessors, on counters the firmware
 * does not use (their control registers written back as they were), so
 * that whatever the firmware counts goes on counting.
 */
static const char *
pmu_intel_check_hw(void)
{
    uint64_t busy, answer, free_gp, free_fixed;
    unsigned int gp;

    answer = pmu_intel_counters_here(pmu_intel.cand_mask, &busy);
    free_gp = pmu_intel.cand_mask & PMU_INTEL_GP_BITS & ~busy;
    free_fixed = answer & ~PMU_INTEL_GP_BITS & ~busy;

    if (free_gp == 0) {
        return "the firmware uses every general-purpose counter";
    }

    gp = (unsigned int)__builtin_ctzll(free_gp);

    if (pmu_intel.version >= 2
        && !pmu_intel_rewrite_safe(MSR_IA32_PERF_GLOBAL_CTRL)) {
        return "IA32_PERF_GLOBAL_CTRL faults";
    }

    if (msr_write_safe(pmu_intel_ctl_msr(gp), 0) != 0) {
        return "IA32_PERFEVTSELx faults";
    }

    if (!pmu_msr_holds(MSR_IA32_PMC0 + gp, pmu_intel_patterns,
                       ARRAY_SIZE(pmu_intel_patterns))) {
        return "counters do not hold values";
    }

    if (!pmu_rdpmc_reads(MSR_IA32_PMC0 + gp, gp)) {
        return "RDPMC does not read the counters";
    }

    if (pmu_intel.fw_write) {
        uint64_t top = (pmu_intel.cnt_mask >> 1) + 1;
        uint64_t back;

        /* A full-width write must reach the bits a legacy write cannot. */
        if (msr_write_safe(MSR_IA32_A_PMC0 + gp, top | 0x5a5a) != 0
            || msr_read_safe(MSR_IA32_PMC0 + gp, &back) != 0
            || back != (top | 0x5a5a)) {
            pmu_intel.fw_write = false;
        }

        msr_write_safe(MSR_IA32_PMC0 + gp, 0);
    }

    if (free_fixed != 0) {
        const char *reason = NULL;

        if (!pmu_intel_rewrite_safe(MSR_IA32_FIXED_CTR_CTRL)) {
            reason = "IA32_FIXED_CTR_CTRL faults";
        } else if (!pmu_msr_holds(pmu_intel_ctr_msr((unsigned int)
                                                    __builtin_ctzll(free_fixed)),
                                  pmu_intel_fixed_patterns(),
                                  PMU_INTEL_NR_FIXED_PATTERNS)) {
            reason = "fixed counters do not hold values";
        }

        /* Fixed counters we only assumed: do without. */
        if (reason != NULL && pmu_intel.fixed_assumed) {
            pmu_intel.cand_mask &= PMU_INTEL_GP_BITS;
        } else if (reason != NULL) {
            return reason;
        }
    }

    return NULL;
}

static bool
pmu_intel_is_intel(void)
{
    uint32_t regs[4];

    pmu_cpuid(0, 0, regs);
    return regs[1] == PMU_INTEL_VENDOR_EBX && regs[3] == PMU_INTEL_VENDOR_EDX
           && regs[2] == PMU_INTEL_VENDOR_ECX;
}

/*
 * Fixed counters from CPUID.0AH (SDM vol. 2A, CPUID leaf 0AH): version 2
 * to 4 count them in EDX[4:0]; version 5 adds the ECX bitmap, counter i
 * being supported when ECX bit i is set or i < EDX[4:0].  Only the three
 * the generic events use are kept.
 */
static uint32_t
pmu_intel_fixed_map(unsigned int version, uint32_t ecx, uint32_t edx)
{
    unsigned int nr = PMU_CPUID_0A_NR_FIXED(edx);
    uint32_t map = 0;

    if (version < 2) {
        return 0;
    }

    for (unsigned int i = 0; i < PMU_MAX_FIXED; i++) {
        if (i < nr || (version >= 5 && (ecx & (1U << i)))) {
            map |= 1U << i;
        }
    }

    return map;
}

/* The counters this CPU's CPUID leaf 0AH offers, as hw ids. */
static uint64_t
pmu_intel_cpuid_counters(const uint32_t leafa[4])
{
    unsigned int version = PMU_CPUID_0A_VERSION(leafa[0]);
    unsigned int nr_gp = MIN(PMU_CPUID_0A_NR_GP(leafa[0]), PMU_MAX_GP);

    return ((nr_gp == 0) ? 0 : (1ULL << nr_gp) - 1)
           | ((uint64_t)pmu_intel_fixed_map(version, leafa[2], leafa[3])
              << PMU_INTEL_FIXED_BASE);
}

static void
pmu_intel_reset_state(void)
{
    pmu_intel = (struct pmu_intel){ 0 };
    memset(pmu_intel_fixed_ctrl, 0, sizeof(pmu_intel_fixed_ctrl));
    pmu_intel_extra_reset();
    pmu_probe_reset();
}

static int
pmu_intel_decline(struct pmu_caps *caps, const char *reason)
{
    caps->present = false;
    caps->reason = reason;
    pmu_intel_reset_state();
    return -ENODEV;
}

static int
pmu_intel_probe(struct pmu_caps *caps, bool use_nmi)
{
    uint32_t leaf0[4], leaf1[4], leafa[4];
    unsigned int ebx_len;
    const char *reason;

    assert(caps != NULL);
    pmu_intel_reset_state();
    *caps = (struct pmu_caps){ .driver = "intel", .vendor = CPU_VENDOR_INTEL };

    if (!pmu_intel_is_intel()) {
        return pmu_intel_decline(caps, "not an Intel CPU");
    }

    pmu_cpuid(0, 0, leaf0);
    pmu_cpuid(1, 0, leaf1);
    caps->family = pmu_cpuid_family(leaf1[0]);
    caps->model = pmu_cpuid_model(leaf1[0]);

    if (!(leaf1[3] & PMU_CPUID_1_EDX_MSR)) {
        return pmu_intel_decline(caps, "no MSRs");
    }

    if (leaf0[0] < 0xa) {
        return pmu_intel_decline(caps, "no CPUID leaf 0AH");
    }

    pmu_cpuid(0xa, 0, leafa);
    pmu_intel.version = PMU_CPUID_0A_VERSION(leafa[0]);
    pmu_intel.nr_gp = PMU_CPUID_0A_NR_GP(leafa[0]);
    pmu_intel.gp_width = PMU_CPUID_0A_GP_WIDTH(leafa[0]);
    caps->version = pmu_intel.version;

    if (pmu_intel.version == 0 || pmu_intel.nr_gp == 0) {
        return pmu_intel_decline(caps, "CPUID leaf 0AH reports no counters");
    }

    if (pmu_intel.gp_width < 16 || pmu_intel.gp_width > 64) {
        return pmu_intel_decline(caps, "CPUID leaf 0AH reports a bad width");
    }

    /* EBX bit i set, or i past the vector length: event i unavailable. */
    ebx_len = MIN(PMU_CPUID_0A_EBX_LEN(leafa[0]), PMU_INTEL_NR_ARCH_EVENTS);
    pmu_intel.avail = ~leafa[1] & ((1U << ebx_len) - 1);

    pmu_intel.fixed_map = pmu_intel_fixed_map(pmu_intel.version, leafa[2],
                                              leafa[3]);
    pmu_intel.fixed_width = PMU_CPUID_0A_FIXED_WIDTH(leafa[3]);

    /*
     * Early version 2 parts report no fixed counters though they have the
     * three (Linux's intel_pmu_init assumes them for versions 2 to 4 "when
     * not running in a hypervisor"; a hypervisor's CPUID is its truth, and
     * version 5's bitmap is exact): assume them at the
     * general counters' width on bare metal, and keep them only where
     * they answer and hold values (check_hw, cpu_probe).
     */
    pmu_intel.fixed_assumed = pmu_intel.version >= 2 && pmu_intel.version <= 4
                              && PMU_CPUID_0A_NR_FIXED(leafa[3]) == 0
                              && !(leaf1[2] & PMU_CPUID_1_ECX_HYPERVISOR);

    if (pmu_intel.fixed_assumed) {
        pmu_intel.fixed_map = (1U << PMU_MAX_FIXED) - 1;
        pmu_intel.fixed_width = pmu_intel.gp_width;
    }

    /*
     * The core sees one width per device: fixed counters of another width
     * would wrap without the interrupt the core expects, so do without.
     */
    if (pmu_intel.fixed_width != pmu_intel.gp_width) {
        pmu_intel.fixed_map = 0;
    }

    pmu_intel.nr_fixed = pmu_popcount(pmu_intel.fixed_map);
    pmu_intel.nr_gp = MIN(pmu_intel.nr_gp, PMU_MAX_GP - pmu_intel.nr_fixed);
    pmu_intel.cnt_mask = (pmu_intel.gp_width >= 64)
                         ? UINT64_MAX : (1ULL << pmu_intel.gp_width) - 1;
    pmu_intel.cand_mask = ((1ULL << pmu_intel.nr_gp) - 1)
                          | ((uint64_t)pmu_intel.fixed_map
                             << PMU_INTEL_FIXED_BASE);

    /* IA32_PERF_CAPABILITIES exists when CPUID.1:ECX.PDCM is set. */
    if (leaf1[2] & PMU_CPUID_1_ECX_PDCM) {
        uint64_t cap;

        if (msr_read_safe(MSR_IA32_PERF_CAPABILITIES, &cap) == 0) {
            pmu_intel.fw_write = (cap & PMU_PERF_CAP_FW_WRITE) != 0;
        }
    }

    reason = pmu_intel_check_hw();

    if (reason != NULL) {
        return pmu_intel_decline(caps, reason);
    }

    pmu_intel.nmi = use_nmi && (leaf1[3] & PMU_CPUID_1_EDX_APIC);
    return 0;
}

/*
 * This CPU's own leaf 0AH (a hybrid part's cores differ) must describe the
 * same architecture; then its counters among the boot CPU's candidates
 * are those it reports and whose MSRs answer.
 */
static uint64_t
pmu_intel_cpu_probe(uint64_t *busyp)
{
    uint32_t leafa[4];
    uint64_t mine;

    *busyp = 0;
    pmu_cpuid(0xa, 0, leafa);

    if (PMU_CPUID_0A_VERSION(leafa[0]) != pmu_intel.version
        || PMU_CPUID_0A_GP_WIDTH(leafa[0]) != pmu_intel.gp_width) {
        return 0;
    }

    mine = pmu_intel_cpuid_counters(leafa);

    if (pmu_intel.fixed_assumed) {
        mine |= pmu_intel.cand_mask & ~PMU_INTEL_GP_BITS;
    }

    mine &= pmu_intel.cand_mask;
    mine = pmu_intel_counters_here(mine, busyp);
    return mine & ~*busyp;
}

static int
pmu_intel_commit(struct pmu_caps *caps, uint64_t usable)
{
    unsigned int top;

    usable &= pmu_intel.cand_mask;

    if ((usable & PMU_INTEL_GP_BITS) == 0) {
        return pmu_intel_decline(caps, "no general-purpose counter common "
                                 "to every CPU");
    }

    pmu_intel.exist_mask = usable;
    pmu_intel.fixed_map = (uint32_t)(usable >> PMU_INTEL_FIXED_BASE);
    pmu_intel.nr_fixed = pmu_popcount(pmu_intel.fixed_map);
    pmu_intel.nr_gp = pmu_popcount(usable & PMU_INTEL_GP_BITS);

    /*
     * Version 1 has no overflow status: keep the counter's top bits armed
     * (see the top of the file).  A legacy write loads 32 bits
     * sign-extended, which arms every bit from 31 up.
     */
    pmu_intel.topbit = pmu_intel.nmi && pmu_intel.version == 1;

    if (pmu_intel.topbit) {
        top = pmu_intel.gp_width - 1;

        if (!pmu_intel.fw_write) {
            top = MIN(top, 31U);
        }

        pmu_intel.val_mask = (1ULL << top) - 1;
    } else {
        pmu_intel.val_mask = pmu_intel.cnt_mask;
    }

    pmu_intel_dev = (struct perfmon_dev){
        .name = "intel",
        .ops = &pmu_intel_ops,
        .overflow_intr = pmu_intel.nmi,

        /* A legacy write loads 32 bits, sign-extended from bit 31. */
        .max_period = pmu_intel.fw_write ? 0 : (1ULL << 31) - 1,
        .width = pmu_popcount(pmu_intel.val_mask),
        .nr_pmcs = pmu_intel.nr_gp + pmu_intel.nr_fixed,
    };

    caps->present = true;
    caps->reason = NULL;
    caps->nr_gp = pmu_intel.nr_gp;
    caps->gp_width = pmu_intel.gp_width;
    caps->nr_fixed = pmu_intel.nr_fixed;
    caps->fixed_width = pmu_intel.nr_fixed ? pmu_intel.fixed_width : 0;
    caps->width = pmu_intel_dev.width;
    caps->global_ctrl = pmu_intel.version >= 2;
    caps->full_width_write = pmu_intel.fw_write;
    caps->overflow_nmi = pmu_intel.nmi;
    caps->arch_events = pmu_intel.avail;
    return 0;
}

/*
 * Our counters stopped and cleared, their stale overflow bits
 * acknowledged, and from version 2 on their global enables set: counting
 * is then controlled by each counter's own enable bits.  The firmware's
 * counters, fields and enables stay as they are.
 */
static void
pmu_intel_cpu_init(void)
{
    uint64_t gp = pmu_intel.exist_mask & PMU_INTEL_GP_BITS;

    while (gp != 0) {
        unsigned int i = (unsigned int)__builtin_ctzll(gp);

        gp &= gp - 1;
        pmu_msr_write(MSR_IA32_PERFEVTSEL0 + i, 0);
        pmu_msr_write(MSR_IA32_PMC0 + i, 0);
    }

    if (pmu_intel.fixed_map != 0) {
        uint64_t ctrl = pmu_msr_read(MSR_IA32_FIXED_CTR_CTRL);

        for (unsigned int i = 0; i < PMU_MAX_FIXED; i++) {
            if (pmu_intel_has_fixed(i)) {
                ctrl &= ~PMU_FIXED_CTRL_FIELD(i);
            }
        }

        pmu_intel_fixed_ctrl_set(ctrl);

        for (unsigned int i = 0; i < PMU_MAX_FIXED; i++) {
            if (pmu_intel_has_fixed(i)) {
                pmu_msr_write(MSR_IA32_FIXED_CTR0 + i, 0);
            }
        }
    }

    if (pmu_intel.version >= 2) {
        uint64_t stale = pmu_msr_read(MSR_IA32_PERF_GLOBAL_STATUS)
                         & pmu_intel.exist_mask;

        if (stale != 0) {
            pmu_msr_write(MSR_IA32_PERF_GLOBAL_OVF_CTRL, stale);
        }

        pmu_global_ctrl_set(&pmu_intel_driver,
                            pmu_msr_read(MSR_IA32_PERF_GLOBAL_CTRL)
                            | pmu_intel.exist_mask);
    }
}

const struct pmu_driver pmu_intel_driver = {
    .name = "intel",
    .probe = pmu_intel_probe,
    .cpu_probe = pmu_intel_cpu_probe,
    .commit = pmu_intel_commit,
    .cpu_init = pmu_intel_cpu_init,
    .ctl_msr = pmu_intel_ctl_msr,
    .ctr_msr = pmu_intel_ctr_msr,
    .global_ctrl_msr = MSR_IA32_PERF_GLOBAL_CTRL,
    .global_status_msr = MSR_IA32_PERF_GLOBAL_STATUS,
    .global_ack_msr = MSR_IA32_PERF_GLOBAL_OVF_CTRL,
    .dev = &pmu_intel_dev,
};
