/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Intel Architectural LBR back end (SDM vol. 3B, "Architectural Last
 * Branch Records"; CPUID.(EAX=07H,ECX=0):EDX[19], leaf 1CH): arrays of
 * IA32_LBR_x_FROM_IP, _TO_IP and _INFO without a TOS, entry 0 the newest,
 * the depth chosen by writing IA32_LBR_DEPTH (which empties every entry),
 * the filter and the enable in IA32_LBR_CTL.  LBR_INFO holds the
 * mispredict bit, the cycle count and the branch type, each present when
 * leaf 1CH:ECX says so.  The records freeze on the PMU's interrupt through
 * IA32_PERF_GLOBAL_STATUS (these CPUs have perfmon version 4 and later),
 * with IA32_DEBUGCTL.FREEZE_LBRS_ON_PMI set.
 *
 * The depth is the deepest one leaf 1CH offers up to what a sample
 * carries (LBR_MAX_DEPTH).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/lbr.h"
#include "arch/x86/msr.h"
#include "arch/x86/pmu.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/printf.h"

/*
 * The probed records, written by probe (boot, thread context) and, ctl,
 * by each CPU's start, all the same value for one filter (interrupts on
 * other CPUs that read it meanwhile see that value or the one it had);
 * read-only otherwise.  ebx and ecx: leaf 1CH's capability registers.
 */
static struct {
    unsigned int depth;
    uint32_t ebx;
    uint32_t ecx;
    uint64_t ctl;                       /* IA32_LBR_CTL while recording */
    char what[96];
    char reason[96];
} lbr_arch;

/* IA32_LBR_CTL kinds for each filter kind (enable sense). */
static const struct {
    unsigned int kind;
    uint64_t bits;
} lbr_arch_kinds[] = {
    { PERFMON_BRF_ANY, LBR_CTL_KINDS },
    { PERFMON_BRF_ANY_CALL, LBR_CTL_NEAR_REL_CALL | LBR_CTL_NEAR_IND_CALL
                            | LBR_CTL_OTHER_BRANCH },
    { PERFMON_BRF_ANY_RET, LBR_CTL_NEAR_RET | LBR_CTL_OTHER_BRANCH },
    { PERFMON_BRF_IND_CALL, LBR_CTL_NEAR_IND_CALL },
    { PERFMON_BRF_CALL, LBR_CTL_NEAR_REL_CALL },
    { PERFMON_BRF_COND, LBR_CTL_JCC },
    { PERFMON_BRF_IND_JMP, LBR_CTL_NEAR_IND_JMP },
};

/* perf's branch type of each IA32_LBR_x_INFO.BR_TYPE (8 and up: other). */
static const unsigned int lbr_arch_types[] = {
    [LBR_BR_TYPE_JCC] = PERFMON_BRT_COND,
    [LBR_BR_TYPE_NEAR_IND_JMP] = PERFMON_BRT_IND,
    [LBR_BR_TYPE_NEAR_REL_JMP] = PERFMON_BRT_UNCOND,
    [LBR_BR_TYPE_NEAR_IND_CALL] = PERFMON_BRT_IND_CALL,
    [LBR_BR_TYPE_NEAR_REL_CALL] = PERFMON_BRT_CALL,
    [LBR_BR_TYPE_NEAR_RET] = PERFMON_BRT_RET,
};

/*
 * What IA32_LBR_CTL records for filter: the privilege levels only where
 * CPL filtering exists, the kinds only where branch filtering does (their
 * bits are reserved otherwise, and everything is recorded).
 */
static uint64_t
lbr_arch_ctl(unsigned int filter)
{
    uint64_t ctl = LBR_CTL_LBREN;

    if (lbr_arch.ebx & LBR_CPUID_1C_EBX_CPL) {
        ctl |= (filter & PERFMON_BRF_KERN) ? LBR_CTL_OS : 0;
        ctl |= (filter & PERFMON_BRF_USER) ? LBR_CTL_USR : 0;
    }

    if (lbr_arch.ebx & LBR_CPUID_1C_EBX_FILTER) {
        for (size_t i = 0; i < ARRAY_SIZE(lbr_arch_kinds); i++) {
            if (filter & lbr_arch_kinds[i].kind) {
                ctl |= lbr_arch_kinds[i].bits;
            }
        }
    }

    return ctl;
}

static const char *
lbr_arch_check_filter(unsigned int filter)
{
    if (!(lbr_arch.ebx & LBR_CPUID_1C_EBX_FILTER)
        && (filter & PERFMON_BRF_KINDS) != PERFMON_BRF_ANY) {
        return "this CPU's Architectural LBR cannot filter by branch kind "
               "(CPUID leaf 1CH:EBX[1] clear): use any";
    }

    if (!(lbr_arch.ebx & LBR_CPUID_1C_EBX_CPL)
        && (filter & PERFMON_BRF_MODE) != PERFMON_BRF_MODE) {
        return "this CPU's Architectural LBR cannot filter by privilege "
               "level (CPUID leaf 1CH:EBX[0] clear): use both u and k";
    }

    return NULL;
}

/* ---- the records -------------------------------------------------------- */

/* Writing the depth empties every entry; LBR_CTL clear stops recording. */
static void
lbr_arch_clear(void)
{
    pmu_msr_write(MSR_ARCH_LBR_CTL, 0);
    pmu_msr_write(MSR_ARCH_LBR_DEPTH, lbr_arch.depth);
}

/* The freeze-on-PMI bit, and a freeze nobody captured cleared. */
static void
lbr_arch_set_freeze(bool on)
{
    lbr_set_freeze(on);
    lbr_unfreeze_stale(MSR_IA32_PERF_GLOBAL_STATUS,
                       MSR_IA32_PERF_GLOBAL_OVF_CTRL);
}

static void
lbr_arch_cpu_start(unsigned int filter)
{
    lbr_arch.ctl = lbr_arch_ctl(filter);
    lbr_arch_clear();
    lbr_arch_set_freeze(true);
    pmu_msr_write(MSR_ARCH_LBR_CTL, lbr_arch.ctl);
}

static void
lbr_arch_cpu_stop(void)
{
    lbr_arch_clear();
    lbr_arch_set_freeze(false);
}

static void
lbr_arch_cpu_reset(void)
{
    lbr_arch_clear();
    pmu_msr_write(MSR_ARCH_LBR_CTL, lbr_arch.ctl);
}

static struct perfmon_branch
lbr_arch_decode(uint64_t from, uint64_t to, uint64_t info)
{
    unsigned int br_type = LBR_INFO_BR_TYPE(info), type = PERFMON_BRT_UNKNOWN;
    uint64_t cycles = 0;

    if ((lbr_arch.ecx & LBR_CPUID_1C_ECX_TIMED)
        && (info & LBR_INFO_CYC_VALID)) {
        cycles = info & LBR_INFO_CYCLES;
    }

    if ((lbr_arch.ecx & LBR_CPUID_1C_ECX_TYPE)
        && br_type < ARRAY_SIZE(lbr_arch_types)) {
        type = lbr_arch_types[br_type];
    }

    return (struct perfmon_branch){
        .from = from,
        .to = to,
        .flags = lbr_flags(lbr_arch.ecx & LBR_CPUID_1C_ECX_MISPRED,
                           info & LBR_INFO_MISPRED, cycles, type),
    };
}

/* Entry 0 on, newest first, up to the first empty one. */
static unsigned int
lbr_arch_read(struct perfmon_branch *entries)
{
    unsigned int nr = 0;

    for (unsigned int i = 0; i < lbr_arch.depth; i++) {
        uint64_t from = pmu_msr_read(MSR_ARCH_LBR_FROM_0 + i);
        uint64_t to, info;

        if (from == 0) {
            break;
        }

        to = pmu_msr_read(MSR_ARCH_LBR_TO_0 + i);
        info = pmu_msr_read(MSR_ARCH_LBR_INFO_0 + i);
        entries[nr++] = lbr_arch_decode(from, to, info);
    }

    return nr;
}

/* Freeze (if the interrupt did not), read, unfreeze. */
static unsigned int
lbr_arch_capture(struct perfmon_branch *entries)
{
    bool frozen = (pmu_msr_read(MSR_IA32_PERF_GLOBAL_STATUS)
                   & LBR_STATUS_FROZEN) != 0;
    unsigned int nr;

    if (!frozen) {
        pmu_msr_write(MSR_ARCH_LBR_CTL, 0);
    }

    nr = lbr_arch_read(entries);

    if (frozen) {
        pmu_msr_write(MSR_IA32_PERF_GLOBAL_OVF_CTRL, LBR_STATUS_FROZEN);
    } else {
        pmu_msr_write(MSR_ARCH_LBR_CTL, lbr_arch.ctl);
    }

    return nr;
}

/* ---- probe -------------------------------------------------------------- */

/*
 * This CPU's records answer: the depth is taken and kept (QEMU's TCG
 * would read 0), every entry reads, DEBUGCTL keeps the freeze bit.
 */
static const char *
lbr_arch_cpu_check(void)
{
    uint64_t value;

    if (msr_read_safe(MSR_ARCH_LBR_CTL, &value) != 0
        || msr_write_safe(MSR_ARCH_LBR_CTL, 0) != 0) {
        return "IA32_LBR_CTL faults";
    }

    if (msr_write_safe(MSR_ARCH_LBR_DEPTH, lbr_arch.depth) != 0
        || msr_read_safe(MSR_ARCH_LBR_DEPTH, &value) != 0
        || value != lbr_arch.depth) {
        return "IA32_LBR_DEPTH does not hold the depth CPUID offers";
    }

    for (unsigned int i = 0; i < lbr_arch.depth; i++) {
        if (msr_read_safe(MSR_ARCH_LBR_FROM_0 + i, &value) != 0
            || msr_read_safe(MSR_ARCH_LBR_TO_0 + i, &value) != 0
            || msr_read_safe(MSR_ARCH_LBR_INFO_0 + i, &value) != 0) {
            return "the Architectural LBR MSRs fault";
        }
    }

    return lbr_debugctl_holds(LBR_DEBUGCTL_FREEZE_LBRS);
}

/* The deepest depth of leaf 1CH's bitmap (bit n: 8(n + 1)) we can read. */
static unsigned int
lbr_arch_depth(uint32_t eax)
{
    unsigned int depth = 0;

    for (unsigned int n = 0; n < 8; n++) {
        if ((LBR_CPUID_1C_DEPTHS(eax) & (1U << n))
            && 8 * (n + 1) <= LBR_MAX_DEPTH) {
            depth = 8 * (n + 1);
        }
    }

    return depth;
}

static const char *
lbr_arch_identify(void)
{
    uint32_t regs[4];

    pmu_cpuid(0, 0, regs);

    if (regs[0] < 0x1c) {
        return "CPUID leaf 1CH (Architectural LBR) absent";
    }

    pmu_cpuid(7, 0, regs);

    if (!(regs[3] & LBR_CPUID_7_EDX_ARCH_LBR)) {
        return "no Architectural LBR (CPUID.7:EDX[19])";
    }

    pmu_cpuid(0x1c, 0, regs);
    lbr_arch.depth = lbr_arch_depth(regs[0]);
    lbr_arch.ebx = regs[1];
    lbr_arch.ecx = regs[2];

    if (lbr_arch.depth == 0) {
        ksnprintf(lbr_arch.reason, sizeof(lbr_arch.reason), "CPUID leaf 1CH "
                  "offers no depth up to %u (depths %#x)", LBR_MAX_DEPTH,
                  LBR_CPUID_1C_DEPTHS(regs[0]));
        return lbr_arch.reason;
    }

    if (lbr_pmu_version() < 4) {
        return "Architectural LBR without perfmon version 4's freeze";
    }

    return NULL;
}

static int
lbr_arch_probe(struct lbr_caps *caps)
{
    const char *reason;

    lbr_arch.depth = 0;
    *caps = (struct lbr_caps){ .name = "arch",
                               .what = "Intel Architectural LBR" };
    reason = lbr_arch_identify();

    if (reason == NULL) {
        reason = lbr_arch_cpu_check();
    }

    if (reason != NULL) {
        caps->reason = reason;
        return -ENODEV;
    }

    ksnprintf(lbr_arch.what, sizeof(lbr_arch.what), "Intel Architectural "
              "LBR%s%s%s", (lbr_arch.ecx & LBR_CPUID_1C_ECX_MISPRED)
                           ? ", mispredicts" : "",
              (lbr_arch.ecx & LBR_CPUID_1C_ECX_TIMED) ? ", cycles" : "",
              (lbr_arch.ecx & LBR_CPUID_1C_ECX_TYPE) ? ", branch types" : "");
    caps->what = lbr_arch.what;
    caps->depth = lbr_arch.depth;
    caps->kinds = (lbr_arch.ebx & LBR_CPUID_1C_EBX_FILTER) ? PERFMON_BRF_KINDS
                                                           : PERFMON_BRF_ANY;
    caps->modes = (lbr_arch.ebx & LBR_CPUID_1C_EBX_CPL) != 0;
    return 0;
}

const struct lbr_backend lbr_arch_backend = {
    .probe = lbr_arch_probe,
    .cpu_check = lbr_arch_cpu_check,
    .check_filter = lbr_arch_check_filter,
    .cpu_start = lbr_arch_cpu_start,
    .cpu_stop = lbr_arch_cpu_stop,
    .cpu_reset = lbr_arch_cpu_reset,
    .capture = lbr_arch_capture,
};
