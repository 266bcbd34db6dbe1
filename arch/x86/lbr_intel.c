/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Intel legacy LBR back end (SDM vol. 3B, "Last Branch, Interrupt, and
 * Exception Recording", the processor-family sections): a ring of FROM/TO
 * MSR pairs (and LBR_INFO MSRs with formats 5 and 7) whose most recent
 * entry MSR_LASTBRANCH_TOS names, filtered by MSR_LBR_SELECT, enabled by
 * IA32_DEBUGCTL.LBR.
 *
 * Where the records are and how deep the ring is depend on the CPU model;
 * the table below covers the models whose LBR_SELECT and freeze work as
 * documented: Nehalem to Comet Lake, Ice Lake, Tiger Lake and Rocket Lake
 * cores, and Silvermont to Tremont atoms.  Others are refused by name:
 * Core 2 and Bonnell (no LBR_SELECT; Bonnell's freeze is unreliable),
 * Knights Landing/Mill (a format that misreports its flags), and anything
 * newer, which has Architectural LBR (lbr_arch.c).  How a record decodes
 * (sign extension, where the mispredict bit is, cycle counts) depends on
 * the format in IA32_PERF_CAPABILITIES[5:0], not on the model.
 *
 * Freezing: with FREEZE_LBRS_ON_PMI set the PMU's interrupt stops the
 * recording; from architectural perfmon version 4 on by setting the LBR
 * frozen bit of IA32_PERF_GLOBAL_STATUS, which the handler clears once
 * done, before that by clearing DEBUGCTL.LBR, which the handler sets
 * again (as KVM also does for its guests).
 *
 * Over 300 lines for one ring: the model table, the formats and the
 * freeze rules are read together.
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
 * The classes of models with the same records (SDM vol. 3B, table "LBR
 * Stack Size and TOS Pointer Range" and the model-specific MSR tables):
 * how many entries, where FROM and TO start, and whether LBR_SELECT can
 * single out calls and returns (Nehalem, Westmere and Silvermont record
 * calls only with jumps unsuppressed too, so a call filter records jumps:
 * refused there rather than mislabelled).
 */
struct lbr_intel_class {
    const char *name;
    unsigned int depth;
    uint32_t from;
    uint32_t to;
    bool select_erratum;
};

#define LBR_INTEL_NHM   0
#define LBR_INTEL_SNB   1
#define LBR_INTEL_HSW   2
#define LBR_INTEL_SKL   3
#define LBR_INTEL_SLM   4
#define LBR_INTEL_GLM   5

static const struct lbr_intel_class lbr_intel_classes[] = {
    [LBR_INTEL_NHM] = { "Nehalem/Westmere", 16, MSR_LBR_NHM_FROM,
                        MSR_LBR_NHM_TO, true },
    [LBR_INTEL_SNB] = { "Sandy Bridge/Ivy Bridge", 16, MSR_LBR_NHM_FROM,
                        MSR_LBR_NHM_TO, false },
    [LBR_INTEL_HSW] = { "Haswell/Broadwell", 16, MSR_LBR_NHM_FROM,
                        MSR_LBR_NHM_TO, false },
    [LBR_INTEL_SKL] = { "Skylake to Rocket Lake", 32, MSR_LBR_NHM_FROM,
                        MSR_LBR_NHM_TO, false },
    [LBR_INTEL_SLM] = { "Silvermont/Airmont", 8, MSR_LBR_CORE_FROM,
                        MSR_LBR_CORE_TO, true },
    [LBR_INTEL_GLM] = { "Goldmont to Tremont", 32, MSR_LBR_NHM_FROM,
                        MSR_LBR_NHM_TO, false },
};

/* Family 6 models and their class. */
static const struct {
    uint8_t model;
    uint8_t class;
} lbr_intel_models[] = {
    { 0x1a, LBR_INTEL_NHM }, { 0x1e, LBR_INTEL_NHM },
    { 0x1f, LBR_INTEL_NHM }, { 0x2e, LBR_INTEL_NHM },
    { 0x25, LBR_INTEL_NHM }, { 0x2c, LBR_INTEL_NHM },
    { 0x2f, LBR_INTEL_NHM },
    { 0x2a, LBR_INTEL_SNB }, { 0x2d, LBR_INTEL_SNB },
    { 0x3a, LBR_INTEL_SNB }, { 0x3e, LBR_INTEL_SNB },
    { 0x3c, LBR_INTEL_HSW }, { 0x3f, LBR_INTEL_HSW },
    { 0x45, LBR_INTEL_HSW }, { 0x46, LBR_INTEL_HSW },
    { 0x3d, LBR_INTEL_HSW }, { 0x47, LBR_INTEL_HSW },
    { 0x4f, LBR_INTEL_HSW }, { 0x56, LBR_INTEL_HSW },
    { 0x4e, LBR_INTEL_SKL }, { 0x5e, LBR_INTEL_SKL },
    { 0x55, LBR_INTEL_SKL }, { 0x8e, LBR_INTEL_SKL },
    { 0x9e, LBR_INTEL_SKL }, { 0xa5, LBR_INTEL_SKL },
    { 0xa6, LBR_INTEL_SKL }, { 0x7d, LBR_INTEL_SKL },
    { 0x7e, LBR_INTEL_SKL }, { 0x6a, LBR_INTEL_SKL },
    { 0x6c, LBR_INTEL_SKL }, { 0x8c, LBR_INTEL_SKL },
    { 0x8d, LBR_INTEL_SKL }, { 0xa7, LBR_INTEL_SKL },
    { 0x37, LBR_INTEL_SLM }, { 0x4a, LBR_INTEL_SLM },
    { 0x4d, LBR_INTEL_SLM }, { 0x5a, LBR_INTEL_SLM },
    { 0x5d, LBR_INTEL_SLM }, { 0x4c, LBR_INTEL_SLM },
    { 0x5c, LBR_INTEL_GLM }, { 0x5f, LBR_INTEL_GLM },
    { 0x7a, LBR_INTEL_GLM }, { 0x86, LBR_INTEL_GLM },
    { 0x96, LBR_INTEL_GLM }, { 0x9c, LBR_INTEL_GLM },
};

/* The filter kinds LBR_SELECT can tell apart despite the erratum. */
#define LBR_INTEL_ERRATUM_KINDS (PERFMON_BRF_ANY | PERFMON_BRF_COND       \
                                 | PERFMON_BRF_IND_JMP)

/*
 * The probed records, written by probe (boot, thread context) and
 * constant afterwards.  info: the first LBR_INFO MSR, 0 when the format
 * has none; status_freeze: the interrupt freezes through the global
 * status (version 4 on) rather than by clearing DEBUGCTL.LBR.
 */
static struct {
    const struct lbr_intel_class *class;
    unsigned int format;
    uint32_t info;
    bool status_freeze;
    char what[96];
    char reason[144];
} lbr_intel;

/* ---- the records -------------------------------------------------------- */

/* Empty every entry (reset leaves FROM 0: the walk stops there). */
static void
lbr_intel_clear(void)
{
    for (unsigned int i = 0; i < lbr_intel.class->depth; i++) {
        pmu_msr_write(lbr_intel.class->from + i, 0);
        pmu_msr_write(lbr_intel.class->to + i, 0);

        if (lbr_intel.info != 0) {
            pmu_msr_write(lbr_intel.info + i, 0);
        }
    }

    pmu_msr_write(MSR_LBR_TOS, 0);
}

/* A freeze left from an interrupt nobody captured: clear it. */
static void
lbr_intel_unfreeze_stale(void)
{
    if (lbr_intel.status_freeze) {
        lbr_unfreeze_stale(MSR_IA32_PERF_GLOBAL_STATUS,
                           MSR_IA32_PERF_GLOBAL_OVF_CTRL);
    }
}

/* DEBUGCTL without our bits: recording stopped. */
static uint64_t
lbr_intel_stop_recording(void)
{
    uint64_t debugctl = pmu_msr_read(MSR_IA32_DEBUGCTL)
                        & ~(LBR_DEBUGCTL_LBR | LBR_DEBUGCTL_FREEZE_LBRS);

    pmu_msr_write(MSR_IA32_DEBUGCTL, debugctl);
    return debugctl;
}

static void
lbr_intel_cpu_start(unsigned int filter)
{
    uint64_t debugctl = lbr_intel_stop_recording();

    pmu_msr_write(MSR_LBR_SELECT, lbr_select(filter));
    lbr_intel_clear();
    lbr_intel_unfreeze_stale();
    pmu_msr_write(MSR_IA32_DEBUGCTL, debugctl | LBR_DEBUGCTL_LBR
                                     | LBR_DEBUGCTL_FREEZE_LBRS);
}

static void
lbr_intel_cpu_stop(void)
{
    lbr_intel_stop_recording();
    lbr_intel_unfreeze_stale();
    lbr_intel_clear();
    pmu_msr_write(MSR_LBR_SELECT, 0);
}

static void
lbr_intel_cpu_reset(void)
{
    uint64_t debugctl = pmu_msr_read(MSR_IA32_DEBUGCTL);

    pmu_msr_write(MSR_IA32_DEBUGCTL, debugctl & ~LBR_DEBUGCTL_LBR);
    lbr_intel_clear();
    pmu_msr_write(MSR_IA32_DEBUGCTL, debugctl | LBR_DEBUGCTL_LBR);
}

/*
 * One record as the format lays it out (SDM vol. 3B, 17.4.8.1): flags
 * taken out of FROM (and TO) before the address is sign-extended from the
 * highest bit left, or read from LBR_INFO.
 */
static struct perfmon_branch
lbr_intel_decode(uint64_t from, uint64_t to, uint64_t info)
{
    bool mispred = (from & LBR_FROM_MISPRED) != 0;
    uint64_t cycles = 0;
    bool known = true;

    switch (lbr_intel.format) {
    case LBR_FMT_EIP_FLAGS:
        from = lbr_sext(from, 62);
        break;
    case LBR_FMT_EIP_FLAGS2:
        from = lbr_sext(from, 60);      /* bits 62:61 are TSX flags */
        break;
    case LBR_FMT_INFO:
    case LBR_FMT_INFO2:
        mispred = (info & LBR_INFO_MISPRED) != 0;
        cycles = info & LBR_INFO_CYCLES;
        break;
    case LBR_FMT_TIME:
        from = lbr_sext(from, 62);
        cycles = to >> 48;
        to = lbr_sext(to, 47);
        break;
    default:
        known = false;                  /* LIP, EIP: addresses only */
        break;
    }

    return (struct perfmon_branch){
        .from = from,
        .to = to,
        .flags = lbr_flags(known, mispred, cycles, PERFMON_BRT_UNKNOWN),
    };
}

/* The ring from TOS back, newest first, up to the first empty entry. */
static unsigned int
lbr_intel_read(struct perfmon_branch *entries)
{
    unsigned int depth = lbr_intel.class->depth, nr = 0;
    unsigned int tos = (unsigned int)pmu_msr_read(MSR_LBR_TOS);

    for (unsigned int i = 0; i < depth; i++) {
        unsigned int idx = (tos - i) & (depth - 1);
        uint64_t from, to, info = 0;

        from = pmu_msr_read(lbr_intel.class->from + idx);

        if (from == 0) {
            break;
        }

        to = pmu_msr_read(lbr_intel.class->to + idx);

        if (lbr_intel.info != 0) {
            info = pmu_msr_read(lbr_intel.info + idx);
        }

        entries[nr++] = lbr_intel_decode(from, to, info);
    }

    return nr;
}

/*
 * Freeze, read, unfreeze, in that order: an interrupt the PMU raised has
 * frozen the records already; any other (not the PMU's doing, say a
 * second one merged) must stop them first, or each read would see more
 * branches, the handler's own.
 */
static unsigned int
lbr_intel_capture(struct perfmon_branch *entries)
{
    uint64_t debugctl = 0;
    bool frozen, status_frozen = false;
    unsigned int nr;

    if (lbr_intel.status_freeze) {
        status_frozen = (pmu_msr_read(MSR_IA32_PERF_GLOBAL_STATUS)
                         & LBR_STATUS_FROZEN) != 0;
        frozen = status_frozen;
    } else {
        debugctl = pmu_msr_read(MSR_IA32_DEBUGCTL);
        frozen = !(debugctl & LBR_DEBUGCTL_LBR);
    }

    if (!frozen) {
        if (lbr_intel.status_freeze) {
            debugctl = pmu_msr_read(MSR_IA32_DEBUGCTL);
        }

        pmu_msr_write(MSR_IA32_DEBUGCTL, debugctl & ~LBR_DEBUGCTL_LBR);
    }

    nr = lbr_intel_read(entries);

    if (status_frozen) {
        pmu_msr_write(MSR_IA32_PERF_GLOBAL_OVF_CTRL, LBR_STATUS_FROZEN);
    } else {
        pmu_msr_write(MSR_IA32_DEBUGCTL, debugctl | LBR_DEBUGCTL_LBR);
    }

    return nr;
}

static const char *
lbr_intel_check_filter(unsigned int filter)
{
    if (lbr_intel.class->select_erratum
        && (filter & PERFMON_BRF_KINDS & ~LBR_INTEL_ERRATUM_KINDS)) {
        return "this CPU's LBR_SELECT cannot record calls or returns "
               "without other jumps (Nehalem and Silvermont errata): use "
               "any, cond or ind_jmp";
    }

    return NULL;
}

/* ---- probe -------------------------------------------------------------- */

/* This CPU's records answer and hold values (fault-safe accessors only). */
static const char *
lbr_intel_cpu_check(void)
{
    uint64_t value;

    for (unsigned int i = 0; i < lbr_intel.class->depth; i++) {
        if (msr_read_safe(lbr_intel.class->from + i, &value) != 0
            || msr_read_safe(lbr_intel.class->to + i, &value) != 0
            || (lbr_intel.info != 0
                && msr_read_safe(lbr_intel.info + i, &value) != 0)) {
            return "the LBR MSRs fault";
        }
    }

    if (msr_read_safe(MSR_LBR_TOS, &value) != 0) {
        return "MSR_LASTBRANCH_TOS faults";
    }

    if (!lbr_select_holds(MSR_LBR_SELECT)) {
        return "MSR_LBR_SELECT does not hold values";
    }

    return lbr_debugctl_holds(LBR_DEBUGCTL_LBR | LBR_DEBUGCTL_FREEZE_LBRS);
}

static const struct lbr_intel_class *
lbr_intel_class_of(unsigned int model)
{
    for (size_t i = 0; i < ARRAY_SIZE(lbr_intel_models); i++) {
        if (lbr_intel_models[i].model == model) {
            return &lbr_intel_classes[lbr_intel_models[i].class];
        }
    }

    return NULL;
}

static int
lbr_intel_decline(struct lbr_caps *caps, const char *reason)
{
    caps->reason = reason;
    return -ENODEV;
}

/*
 * CPUID and IA32_PERF_CAPABILITIES: which records, in which format.  Under
 * a hypervisor (CPUID.1:ECX[31]) the reason says what it hides and what
 * exposes it: KVM passes the legacy LBR only with the host's format set
 * in the guest's IA32_PERF_CAPABILITIES (QEMU's lbr-fmt, with the vPMU
 * on), and no Architectural LBR at all (Linux arch/x86/kvm/vmx/).
 */
static const char *
lbr_intel_identify(unsigned int family, unsigned int model, uint32_t ecx1)
{
    bool guest = (ecx1 & PMU_CPUID_1_ECX_HYPERVISOR) != 0;
    unsigned int version;
    uint64_t cap;

    lbr_intel.class = (family == 6) ? lbr_intel_class_of(model) : NULL;

    if (lbr_intel.class == NULL && guest) {
        /* Arch LBR's CPUs are not in the table: its bit is what is off. */
        ksnprintf(lbr_intel.reason, sizeof(lbr_intel.reason), "Intel family "
                  "%#x model %#x is not in the LBR table and CPUID.7:EDX[19] "
                  "(Arch LBR) is clear: the hypervisor hides it (KVM has no "
                  "Arch LBR)", family, model);
        return lbr_intel.reason;
    }

    if (lbr_intel.class == NULL) {
        ksnprintf(lbr_intel.reason, sizeof(lbr_intel.reason), "Intel family "
                  "%#x model %#x is not in the LBR table", family, model);
        return lbr_intel.reason;
    }

    if (!(ecx1 & PMU_CPUID_1_ECX_PDCM)
        || msr_read_safe(MSR_IA32_PERF_CAPABILITIES, &cap) != 0) {
        return guest ? "no IA32_PERF_CAPABILITIES (CPUID.1:ECX.PDCM clear): "
                       "the hypervisor shows no vPMU (under KVM, QEMU -cpu "
                       "host,pmu=on)"
                     : "no IA32_PERF_CAPABILITIES (CPUID.1:ECX.PDCM), no LBR "
                       "format";
    }

    lbr_intel.format = LBR_CAP_FORMAT(cap);

    if (lbr_intel.format == LBR_FMT_32 && guest) {
        return "LBR format 0 (IA32_PERF_CAPABILITIES[5:0]): the hypervisor "
               "passes none (under KVM, QEMU -cpu host,pmu=on,lbr-fmt=<the "
               "host's>)";
    }

    if (lbr_intel.format == LBR_FMT_32 || lbr_intel.format > LBR_FMT_INFO2) {
        ksnprintf(lbr_intel.reason, sizeof(lbr_intel.reason), "LBR format %u "
                  "(IA32_PERF_CAPABILITIES[5:0]) is not supported",
                  lbr_intel.format);
        return lbr_intel.reason;
    }

    version = lbr_pmu_version();

    if (version < 2) {
        return "the LBR freeze needs architectural perfmon version 2";
    }

    lbr_intel.status_freeze = version >= 4;
    lbr_intel.info = (lbr_intel.format == LBR_FMT_INFO
                      || lbr_intel.format == LBR_FMT_INFO2)
                     ? MSR_LBR_INFO_0 : 0;
    return NULL;
}

static int
lbr_intel_probe(struct lbr_caps *caps)
{
    uint32_t leaf1[4];
    const char *reason;
    unsigned int family, model;

    lbr_intel.class = NULL;
    *caps = (struct lbr_caps){ .name = "intel", .what = "Intel LBR" };
    pmu_cpuid(1, 0, leaf1);
    family = pmu_cpuid_family(leaf1[0]);
    model = pmu_cpuid_model(leaf1[0]);
    reason = lbr_intel_identify(family, model, leaf1[2]);

    if (reason == NULL) {
        reason = lbr_intel_cpu_check();
    }

    if (reason != NULL) {
        return lbr_intel_decline(caps, reason);
    }

    ksnprintf(lbr_intel.what, sizeof(lbr_intel.what), "Intel LBR, %s (model "
              "%#x), format %u", lbr_intel.class->name, model,
              lbr_intel.format);
    caps->what = lbr_intel.what;
    caps->depth = lbr_intel.class->depth;
    caps->kinds = lbr_intel.class->select_erratum ? LBR_INTEL_ERRATUM_KINDS
                                                  : PERFMON_BRF_KINDS;
    caps->modes = true;
    return 0;
}

const struct lbr_backend lbr_intel_backend = {
    .probe = lbr_intel_probe,
    .cpu_check = lbr_intel_cpu_check,
    .check_filter = lbr_intel_check_filter,
    .cpu_start = lbr_intel_cpu_start,
    .cpu_stop = lbr_intel_cpu_stop,
    .cpu_reset = lbr_intel_cpu_reset,
    .capture = lbr_intel_capture,
};
