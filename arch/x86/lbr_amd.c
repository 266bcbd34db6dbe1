/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * AMD LbrExtV2 back end (Zen 4 on; APM vol. 2, "Last Branch Stack"; CPUID
 * Fn8000_0022): a stack of FROM/TO MSR pairs, entry 0 the newest, each TO
 * saying whether its entry holds a retired branch, filtered by LBR_SELECT
 * (the bits of Intel's, suppress sense) and enabled by DBG_EXTN_CFG's
 * LBRV2EN.  It requires PerfMonV2: the overflow interrupt then freezes the
 * stack, where CPUID offers LbrAndPmcFreeze and DEBUGCTL's freeze bit is
 * set, by setting the LBR frozen bit of PerfCntrGlobalStatus, which the
 * handler clears through PerfCntrGlobalStatusClr once it has read it.
 * Without that freeze the handler stops the stack itself, and the newest
 * entries are the branches taken on the way into the interrupt.
 *
 * Addresses are sign-extended from the CPU's virtual-address width
 * (CPUID Fn8000_0008:EAX[15:8]).
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

/* Virtual-address width when CPUID Fn8000_0008 is absent. */
#define LBR_AMD_DEFAULT_VIRT_BITS   48

/*
 * The probed stack, written by probe (boot, thread context) and constant
 * afterwards.  depth: the entries read (the stack's, at most
 * LBR_MAX_DEPTH: entry 0 being the newest, the deepest are left out).
 */
static struct {
    unsigned int depth;
    bool freeze;                        /* LbrAndPmcFreeze */
    unsigned int virt_bits;
    char what[96];
} lbr_amd;

static uint32_t
lbr_amd_from(unsigned int i)
{
    return MSR_AMD_LBR_FROM_0 + 2 * i;
}

static uint32_t
lbr_amd_to(unsigned int i)
{
    return MSR_AMD_LBR_FROM_0 + 2 * i + 1;
}

/* ---- the stack ---------------------------------------------------------- */

static void
lbr_amd_clear(void)
{
    for (unsigned int i = 0; i < lbr_amd.depth; i++) {
        pmu_msr_write(lbr_amd_from(i), 0);
        pmu_msr_write(lbr_amd_to(i), 0);
    }
}

/* DBG_EXTN_CFG with LBRV2EN clear, written: the stack stands still. */
static uint64_t
lbr_amd_stop_recording(void)
{
    uint64_t cfg = pmu_msr_read(MSR_AMD_DBG_EXTN_CFG)
                   & ~LBR_AMD_DBG_EXTN_LBRV2EN;

    pmu_msr_write(MSR_AMD_DBG_EXTN_CFG, cfg);
    return cfg;
}

/* The freeze bit of DEBUGCTL, and a freeze nobody captured, cleared. */
static void
lbr_amd_set_freeze(bool on)
{
    if (!lbr_amd.freeze) {
        return;
    }

    lbr_set_freeze(on);
    lbr_unfreeze_stale(MSR_AMD_PERF_CNTR_GLOBAL_STATUS,
                       MSR_AMD_PERF_CNTR_GLOBAL_STATUS_CLR);
}

static void
lbr_amd_cpu_start(unsigned int filter)
{
    uint64_t cfg = lbr_amd_stop_recording();

    pmu_msr_write(MSR_AMD_LBR_SELECT, lbr_select(filter));
    lbr_amd_clear();
    lbr_amd_set_freeze(true);
    pmu_msr_write(MSR_AMD_DBG_EXTN_CFG, cfg | LBR_AMD_DBG_EXTN_LBRV2EN);
}

static void
lbr_amd_cpu_stop(void)
{
    lbr_amd_stop_recording();
    lbr_amd_set_freeze(false);
    lbr_amd_clear();
    pmu_msr_write(MSR_AMD_LBR_SELECT, 0);
}

static void
lbr_amd_cpu_reset(void)
{
    uint64_t cfg = lbr_amd_stop_recording();

    lbr_amd_clear();
    pmu_msr_write(MSR_AMD_DBG_EXTN_CFG, cfg | LBR_AMD_DBG_EXTN_LBRV2EN);
}

/*
 * Entry 0 on: the retired branches (TO valid), newest first; an entry
 * without one (empty, or a wrong-path branch) is passed over.
 */
static unsigned int
lbr_amd_read(struct perfmon_branch *entries)
{
    unsigned int top = lbr_amd.virt_bits - 1, nr = 0;

    for (unsigned int i = 0; i < lbr_amd.depth; i++) {
        uint64_t to = pmu_msr_read(lbr_amd_to(i)), from;

        if (!(to & LBR_AMD_TO_VALID)) {
            continue;
        }

        from = pmu_msr_read(lbr_amd_from(i));
        entries[nr++] = (struct perfmon_branch){
            .from = lbr_sext(from, top),
            .to = lbr_sext(to, top),
            .flags = lbr_flags(true, from & LBR_FROM_MISPRED, 0,
                               PERFMON_BRT_UNKNOWN),
        };
    }

    return nr;
}

/* Freeze (if the interrupt did not), read, unfreeze. */
static unsigned int
lbr_amd_capture(struct perfmon_branch *entries)
{
    uint64_t cfg = 0;
    bool frozen = false;
    unsigned int nr;

    if (lbr_amd.freeze) {
        frozen = (pmu_msr_read(MSR_AMD_PERF_CNTR_GLOBAL_STATUS)
                  & LBR_STATUS_FROZEN) != 0;
    }

    if (!frozen) {
        cfg = lbr_amd_stop_recording();
    }

    nr = lbr_amd_read(entries);

    if (frozen) {
        pmu_msr_write(MSR_AMD_PERF_CNTR_GLOBAL_STATUS_CLR, LBR_STATUS_FROZEN);
    } else {
        pmu_msr_write(MSR_AMD_DBG_EXTN_CFG, cfg | LBR_AMD_DBG_EXTN_LBRV2EN);
    }

    return nr;
}

/* Every kind and both privilege levels: nothing to refuse. */
static const char *
lbr_amd_check_filter(unsigned int filter)
{
    (void)filter;
    return NULL;
}

/* ---- probe -------------------------------------------------------------- */

/* This CPU's stack answers and holds values (fault-safe accessors only). */
static const char *
lbr_amd_cpu_check(void)
{
    uint64_t value;

    for (unsigned int i = 0; i < lbr_amd.depth; i++) {
        if (msr_read_safe(lbr_amd_from(i), &value) != 0
            || msr_read_safe(lbr_amd_to(i), &value) != 0) {
            return "the LBR stack MSRs fault";
        }
    }

    if (msr_read_safe(MSR_AMD_DBG_EXTN_CFG, &value) != 0
        || msr_write_safe(MSR_AMD_DBG_EXTN_CFG,
                          value & ~LBR_AMD_DBG_EXTN_LBRV2EN) != 0) {
        return "DBG_EXTN_CFG faults";
    }

    if (!lbr_select_holds(MSR_AMD_LBR_SELECT)) {
        return "LBR_SELECT does not hold values";
    }

    return lbr_amd.freeze ? lbr_debugctl_holds(LBR_DEBUGCTL_FREEZE_LBRS)
                          : NULL;
}

/*
 * CPUID: whether there is an LbrExtV2 stack, how deep.  KVM passes none
 * to its guests (Linux arch/x86/kvm/cpuid.c gives Fn8000_0022 PerfMonV2
 * and the counter count alone), and no QEMU option changes that: under a
 * hypervisor (CPUID.1:ECX[31]) the reason says so.
 */
static const char *
lbr_amd_identify(void)
{
    uint32_t regs[4];
    bool guest;

    pmu_cpuid(1, 0, regs);
    guest = (regs[2] & PMU_CPUID_1_ECX_HYPERVISOR) != 0;
    pmu_cpuid(0x80000000, 0, regs);

    if (regs[0] < 0x80000022) {
        return guest ? "CPUID Fn8000_0022 absent (no PerfMonV2, no "
                       "LbrExtV2): the hypervisor hides them (KVM passes no "
                       "LbrExtV2)"
                     : "CPUID Fn8000_0022 absent (no PerfMonV2, no LbrExtV2)";
    }

    /* Fn8000_0008 is there: the maximum leaf is past 8000_0022. */
    lbr_amd.virt_bits = LBR_AMD_DEFAULT_VIRT_BITS;
    pmu_cpuid(0x80000008, 0, regs);

    if (((regs[0] >> 8) & 0xff) >= 32) {
        lbr_amd.virt_bits = MIN((regs[0] >> 8) & 0xff, 64U);
    }

    pmu_cpuid(0x80000022, 0, regs);

    if (!(regs[0] & LBR_CPUID_X22_EAX_LBR_V2)) {
        return guest ? "no LbrExtV2 (CPUID Fn8000_0022:EAX[1] clear): the "
                       "hypervisor hides it (KVM passes no LbrExtV2)"
                     : "no LbrExtV2 (CPUID Fn8000_0022:EAX[1])";
    }

    if (!(regs[0] & PMU_CPUID_X22_EAX_PERFMON_V2)) {
        return "LbrExtV2 without PerfMonV2 (CPUID Fn8000_0022:EAX[0])";
    }

    lbr_amd.freeze = (regs[0] & LBR_CPUID_X22_EAX_FREEZE) != 0;
    lbr_amd.depth = MIN(LBR_CPUID_X22_EBX_DEPTH(regs[1]),
                        (unsigned int)LBR_MAX_DEPTH);

    if (lbr_amd.depth == 0) {
        return "LbrExtV2 reports an empty stack (CPUID Fn8000_0022:EBX)";
    }

    return NULL;
}

static int
lbr_amd_probe(struct lbr_caps *caps)
{
    const char *reason;

    lbr_amd.depth = 0;
    *caps = (struct lbr_caps){ .name = "amd", .what = "AMD LbrExtV2" };
    reason = lbr_amd_identify();

    if (reason == NULL) {
        reason = lbr_amd_cpu_check();
    }

    if (reason != NULL) {
        caps->reason = reason;
        return -ENODEV;
    }

    ksnprintf(lbr_amd.what, sizeof(lbr_amd.what), "AMD LbrExtV2, %s",
              lbr_amd.freeze ? "frozen on the PMI"
                             : "no freeze (the newest entries are the "
                               "interrupt's own)");
    caps->what = lbr_amd.what;
    caps->depth = lbr_amd.depth;
    caps->kinds = PERFMON_BRF_KINDS;
    caps->modes = true;
    return 0;
}

const struct lbr_backend lbr_amd_backend = {
    .probe = lbr_amd_probe,
    .cpu_check = lbr_amd_cpu_check,
    .check_filter = lbr_amd_check_filter,
    .cpu_start = lbr_amd_cpu_start,
    .cpu_stop = lbr_amd_cpu_stop,
    .cpu_reset = lbr_amd_cpu_reset,
    .capture = lbr_amd_capture,
};
