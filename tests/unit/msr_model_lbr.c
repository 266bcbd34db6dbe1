/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The branch records of the register-level model (msr_model.h): Intel's
 * legacy LBR stack in each of its formats, Intel Architectural LBR and
 * AMD's LbrExtV2, behind the same MSR seam as the PMU part
 * (msr_model.c), which hands them their MSRs, its PMIs and its drift.
 *
 * Written from the Intel SDM (vol. 3B, "Last Branch, Interrupt, and
 * Exception Recording" and "Architectural Last Branch Records"; vol. 2A,
 * CPUID leaves 07H and 1CH) and the AMD APM (vol. 2, "Last Branch Stack";
 * CPUID Fn8000_0022), and Linux's arch/x86/events/intel/lbr.c and
 * arch/x86/events/amd/lbr.c for how they behave.  No kinder than
 * hardware:
 *
 * - the records run until frozen: between two of the driver's MSR
 *   accesses the model records the driver's own branches (the drift), so
 *   that a driver reading running records sees them move under it;
 * - a counter overflow that requests a PMI freezes them, as the freeze
 *   bit says: from perfmon version 4 (and on Arch LBR and AMD) by setting
 *   the frozen bit of the global status, which only its write-1-to-clear
 *   register clears; before that by clearing DEBUGCTL.LBR;
 * - reserved bits fault: LBR_SELECT above bit 8, IA32_LBR_CTL bits the
 *   CPU's leaf 1CH does not offer, depths it does not offer, DEBUGCTL's
 *   freeze bit where there is no freeze, an entry past the depth, a FROM
 *   or TO that is not in the format's canonical form (format 4's FROM
 *   with its TSX bits left 0 by the hardware cannot be written back);
 * - machines that advertise records they do not keep (every MSR faults,
 *   or reads 0 and drops writes, or a hypervisor's DEBUGCTL drops LBR).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lbr.h"
#include "arch/x86/msr.h"
#include "arch/x86/pmu.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "msr_model.h"
#include "msr_model_i.h"

/* Where an MSR lands in the records. */
#define LREG_NONE       0
#define LREG_DEBUGCTL   1
#define LREG_SELECT     2   /* Intel MSR_LBR_SELECT, AMD LBR_SELECT */
#define LREG_TOS        3
#define LREG_FROM       4
#define LREG_TO         5
#define LREG_INFO       6
#define LREG_CTL        7   /* IA32_LBR_CTL */
#define LREG_DEPTH      8   /* IA32_LBR_DEPTH */
#define LREG_CFG        9   /* AMD DBG_EXTN_CFG */

/* Distinct drift branches before their addresses repeat. */
#define MODEL_DRIFT_SPAN    4096

static unsigned int model_branch_drift = MSR_MODEL_DEFAULT_BRANCH_DRIFT;

/* ---- configurations ----------------------------------------------------- */

struct msr_model_config
msr_model_intel_lbr(unsigned int model, unsigned int version,
                    unsigned int format)
{
    struct msr_model_config c = msr_model_intel(version);
    bool info = format == LBR_FMT_INFO || format == LBR_FMT_INFO2;

    c.model = model;
    c.pdcm = true;
    c.lbr = MSR_MODEL_LBR_LEGACY;
    c.lbr_format = format;

    /* SDM vol. 3B, table "LBR Stack Size and TOS Pointer Range". */
    switch (model) {
    case 0x1a:          /* Nehalem */
    case 0x3c:          /* Haswell */
        c.lbr_depth = 16;
        c.lbr_from = MSR_LBR_NHM_FROM;
        c.lbr_to = MSR_LBR_NHM_TO;
        break;
    case 0x55:          /* Skylake-SP */
        c.lbr_depth = 32;
        c.lbr_from = MSR_LBR_NHM_FROM;
        c.lbr_to = MSR_LBR_NHM_TO;
        c.lbr_info = info ? MSR_LBR_INFO_0 : 0;
        break;
    case 0x37:          /* Silvermont */
        c.lbr_depth = 8;
        c.lbr_from = MSR_LBR_CORE_FROM;
        c.lbr_to = MSR_LBR_CORE_TO;
        break;
    default:
        assert(false);
        break;
    }

    return c;
}

struct msr_model_config
msr_model_arch_lbr(uint32_t depths, uint32_t ebx, uint32_t ecx)
{
    struct msr_model_config c = msr_model_intel(5);

    c.model = 0x8f;     /* Sapphire Rapids */
    c.lbr = MSR_MODEL_LBR_ARCH;
    c.lbr_format = 0x3f;
    c.arch_lbr_depths = depths;
    c.arch_lbr_ebx = ebx;
    c.arch_lbr_ecx = ecx;
    return c;
}

struct msr_model_config
msr_model_amd_lbr(unsigned int depth, bool freeze)
{
    struct msr_model_config c = msr_model_amd(0x19, true, true);

    c.model = 0x61;     /* Zen 4 */
    c.lbr = MSR_MODEL_LBR_AMD;
    c.lbr_depth = depth;
    c.amd_lbr_freeze = freeze;
    return c;
}

/* ---- what the configuration has ----------------------------------------- */

static bool
model_lbr_intel(const struct msr_model_config *c)
{
    return c->vendor == CPU_VENDOR_INTEL;
}

/*
 * A hypervisor that passes no records: DEBUGCTL drops LBR, and its freeze
 * bit faults.  KVM without a vPMU is one (Linux arch/x86/kvm/vmx/vmx.c,
 * vmx_get_supported_debugctl: LBR only with the guest's LBR enabled, which
 * needs the vPMU).
 */
static bool
model_lbr_hidden(const struct msr_model_config *c)
{
    return c->lbr_kind == MSR_MODEL_LBRK_NO_DEBUGCTL
           || c->kind == MSR_MODEL_KVM_NO_PMU;
}

/* The freeze bit of DEBUGCTL exists (Intel: with any LBR). */
static bool
model_lbr_can_freeze(const struct msr_model_config *c)
{
    if (model_lbr_hidden(c)) {
        return false;
    }

    switch (c->lbr) {
    case MSR_MODEL_LBR_LEGACY:
    case MSR_MODEL_LBR_ARCH:
        return true;
    case MSR_MODEL_LBR_AMD:
        return c->amd_lbr_freeze;
    default:
        return false;
    }
}

uint64_t
model_lbr_status_bits(const struct msr_model_config *c)
{
    bool status_freeze = (c->lbr == MSR_MODEL_LBR_LEGACY && c->version >= 4)
                         || c->lbr == MSR_MODEL_LBR_ARCH
                         || (c->lbr == MSR_MODEL_LBR_AMD && c->amd_lbr_freeze);

    return (status_freeze && c->kind == MSR_MODEL_REAL) ? LBR_STATUS_FROZEN
                                                         : 0;
}

/* Arch LBR: whether leaf 1CH offers depth. */
static bool
model_lbr_arch_depth_ok(const struct msr_model_config *c, uint64_t depth)
{
    return depth != 0 && depth % 8 == 0 && depth <= MODEL_LBR_MAX
           && (c->arch_lbr_depths & (1U << (depth / 8 - 1)));
}

static unsigned int
model_lbr_arch_max_depth(const struct msr_model_config *c)
{
    unsigned int max = 0;

    for (unsigned int n = 0; n < 8; n++) {
        if (c->arch_lbr_depths & (1U << n)) {
            max = 8 * (n + 1);
        }
    }

    return max;
}

/* The entries: the configured depth, or Arch LBR's IA32_LBR_DEPTH. */
static unsigned int
model_lbr_depth(const struct model_cpu *mc)
{
    return (mc->cfg.lbr == MSR_MODEL_LBR_ARCH) ? mc->lbr.depth
                                                : mc->cfg.lbr_depth;
}

void
model_lbr_init(void)
{
    model_branch_drift = MSR_MODEL_DEFAULT_BRANCH_DRIFT;
}

void
model_lbr_reset(struct model_cpu *mc)
{
    memset(&mc->lbr, 0, sizeof(mc->lbr));

    /* IA32_LBR_DEPTH comes out of reset at the deepest (SDM vol. 3B). */
    if (mc->cfg.lbr == MSR_MODEL_LBR_ARCH) {
        mc->lbr.depth = model_lbr_arch_max_depth(&mc->cfg);
    }
}

void
msr_model_set_branch_drift(unsigned int count)
{
    model_branch_drift = count;
}

uint64_t
model_lbr_perf_cap(const struct msr_model_config *c)
{
    return (c->lbr == MSR_MODEL_LBR_LEGACY || c->lbr == MSR_MODEL_LBR_ARCH)
           ? c->lbr_format : 0;
}

void
model_lbr_cpuid(const struct msr_model_config *c, uint32_t leaf,
                uint32_t regs[4])
{
    bool arch = c->lbr == MSR_MODEL_LBR_ARCH && c->kind == MSR_MODEL_REAL;

    switch (leaf) {
    case 0:
        if (arch && regs[0] < 0x1c) {
            regs[0] = 0x1c;
        }
        break;
    case 7:
        regs[3] |= arch ? LBR_CPUID_7_EDX_ARCH_LBR : 0;
        break;
    case 0x1c:
        if (arch) {
            regs[0] = c->arch_lbr_depths;
            regs[1] = c->arch_lbr_ebx;
            regs[2] = c->arch_lbr_ecx;
        }
        break;
    case 0x80000008:
        regs[0] = 48 << 8 | 48;         /* virtual, physical address bits */
        break;
    case 0x80000022:
        if (c->lbr == MSR_MODEL_LBR_AMD && c->perfmon_v2) {
            regs[0] |= LBR_CPUID_X22_EAX_LBR_V2
                       | (c->amd_lbr_freeze ? LBR_CPUID_X22_EAX_FREEZE : 0);
            regs[1] |= (c->lbr_depth & 0x3f) << 4;
        }
        break;
    default:
        break;
    }
}

/* ---- decoding ----------------------------------------------------------- */

/* Where an array of record registers (FROM, TO, INFO) starts, and which. */
struct model_lbr_array {
    uint32_t base;
    unsigned int reg;
};

/*
 * The array of n registers each that msr is in, *indexp its index there;
 * an array at 0 is one the records do not have.
 */
static unsigned int
model_lbr_decode_array(const struct model_lbr_array *arrays,
                       size_t nr_arrays, unsigned int n, uint32_t msr,
                       unsigned int *indexp)
{
    for (size_t i = 0; i < nr_arrays; i++) {
        if (arrays[i].base != 0 && msr >= arrays[i].base
            && msr < arrays[i].base + n) {
            *indexp = msr - arrays[i].base;
            return arrays[i].reg;
        }
    }

    return LREG_NONE;
}

static unsigned int
model_lbr_decode_legacy(const struct msr_model_config *c, uint32_t msr,
                        unsigned int *indexp)
{
    const struct model_lbr_array arrays[] = {
        { c->lbr_from, LREG_FROM },
        { c->lbr_to, LREG_TO },
        { c->lbr_info, LREG_INFO },
    };

    if (msr == MSR_LBR_SELECT) {
        return LREG_SELECT;
    } else if (msr == MSR_LBR_TOS) {
        return LREG_TOS;
    }

    return model_lbr_decode_array(arrays, sizeof(arrays) / sizeof(arrays[0]),
                                  c->lbr_depth, msr, indexp);
}

static unsigned int
model_lbr_decode_arch(uint32_t msr, unsigned int *indexp)
{
    static const struct model_lbr_array arrays[] = {
        { MSR_ARCH_LBR_FROM_0, LREG_FROM },
        { MSR_ARCH_LBR_TO_0, LREG_TO },
        { MSR_ARCH_LBR_INFO_0, LREG_INFO },
    };

    if (msr == MSR_ARCH_LBR_CTL) {
        return LREG_CTL;
    } else if (msr == MSR_ARCH_LBR_DEPTH) {
        return LREG_DEPTH;
    }

    return model_lbr_decode_array(arrays, sizeof(arrays) / sizeof(arrays[0]),
                                  MODEL_LBR_MAX, msr, indexp);
}

static unsigned int
model_lbr_decode_amd(const struct msr_model_config *c, uint32_t msr,
                     unsigned int *indexp)
{
    if (msr == MSR_AMD_LBR_SELECT) {
        return LREG_SELECT;
    } else if (msr == MSR_AMD_DBG_EXTN_CFG) {
        return LREG_CFG;
    } else if (msr >= MSR_AMD_LBR_FROM_0
               && msr < MSR_AMD_LBR_FROM_0 + 2 * c->lbr_depth) {
        *indexp = (msr - MSR_AMD_LBR_FROM_0) / 2;
        return ((msr - MSR_AMD_LBR_FROM_0) & 1) ? LREG_TO : LREG_FROM;
    }

    return LREG_NONE;
}

static unsigned int
model_lbr_decode(const struct msr_model_config *c, uint32_t msr,
                 unsigned int *indexp)
{
    *indexp = 0;

    /* DEBUGCTL is architectural on both vendors, records or not. */
    if (msr == MSR_IA32_DEBUGCTL) {
        return LREG_DEBUGCTL;
    }

    switch (c->lbr) {
    case MSR_MODEL_LBR_LEGACY:
        return model_lbr_decode_legacy(c, msr, indexp);
    case MSR_MODEL_LBR_ARCH:
        return model_lbr_decode_arch(msr, indexp);
    case MSR_MODEL_LBR_AMD:
        return model_lbr_decode_amd(c, msr, indexp);
    default:
        return LREG_NONE;
    }
}

/* ---- recording ---------------------------------------------------------- */

/* The records run: enabled, and not frozen. */
static bool
model_lbr_running(const struct model_cpu *mc)
{
    const struct model_lbr *l = &mc->lbr;
    bool enabled;

    if (mc->cfg.kind != MSR_MODEL_REAL
        || mc->cfg.lbr_kind == MSR_MODEL_LBRK_DEAD) {
        return false;
    }

    switch (mc->cfg.lbr) {
    case MSR_MODEL_LBR_LEGACY:
        enabled = (l->debugctl & LBR_DEBUGCTL_LBR) != 0;
        break;
    case MSR_MODEL_LBR_ARCH:
        enabled = (l->ctl & LBR_CTL_LBREN) != 0;
        break;
    case MSR_MODEL_LBR_AMD:
        enabled = (l->cfg & LBR_AMD_DBG_EXTN_LBRV2EN) != 0;
        break;
    default:
        enabled = false;
        break;
    }

    return enabled && !(mc->global_status & LBR_STATUS_FROZEN);
}

/* LBR_SELECT's suppress bit of each branch kind. */
static const uint64_t model_lbr_sel_bits[] = {
    [MSR_MODEL_BR_COND] = LBR_SEL_JCC,
    [MSR_MODEL_BR_REL_JMP] = LBR_SEL_NEAR_REL_JMP,
    [MSR_MODEL_BR_IND_JMP] = LBR_SEL_NEAR_IND_JMP,
    [MSR_MODEL_BR_REL_CALL] = LBR_SEL_NEAR_REL_CALL,
    [MSR_MODEL_BR_IND_CALL] = LBR_SEL_NEAR_IND_CALL,
    [MSR_MODEL_BR_RET] = LBR_SEL_NEAR_RET,
    [MSR_MODEL_BR_FAR] = LBR_SEL_FAR,
};

/* IA32_LBR_CTL's enable bit of each kind, and LBR_INFO's branch type. */
static const struct {
    uint64_t ctl;
    unsigned int type;
} model_lbr_arch_kinds[] = {
    [MSR_MODEL_BR_COND] = { LBR_CTL_JCC, LBR_BR_TYPE_JCC },
    [MSR_MODEL_BR_REL_JMP] = { LBR_CTL_NEAR_REL_JMP,
                               LBR_BR_TYPE_NEAR_REL_JMP },
    [MSR_MODEL_BR_IND_JMP] = { LBR_CTL_NEAR_IND_JMP,
                               LBR_BR_TYPE_NEAR_IND_JMP },
    [MSR_MODEL_BR_REL_CALL] = { LBR_CTL_NEAR_REL_CALL,
                                LBR_BR_TYPE_NEAR_REL_CALL },
    [MSR_MODEL_BR_IND_CALL] = { LBR_CTL_NEAR_IND_CALL,
                                LBR_BR_TYPE_NEAR_IND_CALL },
    [MSR_MODEL_BR_RET] = { LBR_CTL_NEAR_RET, LBR_BR_TYPE_NEAR_RET },
    [MSR_MODEL_BR_FAR] = { LBR_CTL_OTHER_BRANCH, 8 },
};

/* Whether the programmed filter lets br through. */
static bool
model_lbr_passes(const struct model_cpu *mc, const struct msr_model_branch *br)
{
    const struct msr_model_config *c = &mc->cfg;
    uint64_t ctl = mc->lbr.ctl;

    if (c->lbr != MSR_MODEL_LBR_ARCH) {
        uint64_t suppress = mc->lbr.select;

        return !(suppress & model_lbr_sel_bits[br->kind])
               && !(suppress & (br->user ? LBR_SEL_CPL_NEQ_0
                                         : LBR_SEL_CPL_EQ_0));
    }

    /* Arch LBR: a filter leaf 1CH does not offer records everything. */
    if ((c->arch_lbr_ebx & LBR_CPUID_1C_EBX_CPL)
        && !(ctl & (br->user ? LBR_CTL_USR : LBR_CTL_OS))) {
        return false;
    }

    return !(c->arch_lbr_ebx & LBR_CPUID_1C_EBX_FILTER)
           || (ctl & model_lbr_arch_kinds[br->kind].ctl);
}

static uint64_t
model_lbr_cycles(unsigned int cycles)
{
    return (cycles > 0xffff) ? 0xffff : cycles;
}

/* SDM vol. 3B, 17.4.8.1: what each legacy format puts where. */
static void
model_lbr_record_legacy(struct model_cpu *mc,
                        const struct msr_model_branch *br)
{
    struct model_lbr *l = &mc->lbr;
    uint64_t mis = br->mispred ? LBR_FROM_MISPRED : 0;
    uint64_t from = br->from, to = br->to, info = 0;
    unsigned int i;

    switch (mc->cfg.lbr_format) {
    case LBR_FMT_EIP_FLAGS:
        from = (from & ~LBR_FROM_MISPRED) | mis;
        break;
    case LBR_FMT_EIP_FLAGS2:
        /* No TSX here: the hardware leaves IN_TX and ABORT (62:61) 0. */
        from = (from & ((1ULL << 61) - 1)) | mis;
        break;
    case LBR_FMT_INFO:
    case LBR_FMT_INFO2:
        info = (br->mispred ? LBR_INFO_MISPRED : 0)
               | model_lbr_cycles(br->cycles);
        break;
    case LBR_FMT_TIME:
        from = (from & ~LBR_FROM_MISPRED) | mis;
        to = (to & ((1ULL << 48) - 1)) | model_lbr_cycles(br->cycles) << 48;
        break;
    default:
        break;
    }

    l->tos = (l->tos + 1) & (mc->cfg.lbr_depth - 1);
    i = l->tos;
    l->from[i] = from;
    l->to[i] = to;
    l->info[i] = info;
}

/* Arch LBR and AMD: the entries move down one, the newest goes to 0. */
static void
model_lbr_push(struct model_cpu *mc, uint64_t from, uint64_t to,
               uint64_t info)
{
    struct model_lbr *l = &mc->lbr;
    unsigned int depth = model_lbr_depth(mc);

    for (unsigned int i = depth - 1; i > 0; i--) {
        l->from[i] = l->from[i - 1];
        l->to[i] = l->to[i - 1];
        l->info[i] = l->info[i - 1];
    }

    l->from[0] = from;
    l->to[0] = to;
    l->info[0] = info;
}

static void
model_lbr_record_arch(struct model_cpu *mc, const struct msr_model_branch *br)
{
    uint32_t ecx = mc->cfg.arch_lbr_ecx;
    uint64_t info = 0;

    if ((ecx & LBR_CPUID_1C_ECX_MISPRED) && br->mispred) {
        info |= LBR_INFO_MISPRED;
    }

    if (ecx & LBR_CPUID_1C_ECX_TIMED) {
        info |= LBR_INFO_CYC_VALID | model_lbr_cycles(br->cycles);
    }

    if (ecx & LBR_CPUID_1C_ECX_TYPE) {
        info |= (uint64_t)model_lbr_arch_kinds[br->kind].type << 56;
    }

    model_lbr_push(mc, br->from, br->to, info);
}

/* APM: FROM[63] mispredicted; TO[63] valid, [62] speculative, [61] 0. */
static void
model_lbr_record_amd(struct model_cpu *mc, const struct msr_model_branch *br)
{
    uint64_t from = (br->from & ~LBR_FROM_MISPRED)
                    | (br->mispred ? LBR_FROM_MISPRED : 0);
    uint64_t to = (br->to & ((1ULL << 61) - 1)) | LBR_AMD_TO_VALID;

    model_lbr_push(mc, from, to, 0);
}

static bool
model_lbr_record(struct model_cpu *mc, const struct msr_model_branch *br)
{
    assert(br->kind <= MSR_MODEL_BR_FAR);

    if (!model_lbr_running(mc) || !model_lbr_passes(mc, br)) {
        return false;
    }

    switch (mc->cfg.lbr) {
    case MSR_MODEL_LBR_LEGACY:
        model_lbr_record_legacy(mc, br);
        break;
    case MSR_MODEL_LBR_ARCH:
        model_lbr_record_arch(mc, br);
        break;
    default:
        model_lbr_record_amd(mc, br);
        break;
    }

    mc->lbr.recorded++;
    return true;
}

bool
msr_model_branch(const struct msr_model_branch *branch)
{
    return model_lbr_record(model_cpu(), branch);
}

void
model_lbr_drift(struct model_cpu *mc)
{
    for (unsigned int i = 0; i < model_branch_drift; i++) {
        uint64_t ip = MSR_MODEL_DRIFT_IP
                      + 0x10 * (mc->lbr.drift_seq % MODEL_DRIFT_SPAN);
        struct msr_model_branch br = {
            .from = ip, .to = ip + 8, .kind = MSR_MODEL_BR_COND, .cycles = 1,
        };

        mc->lbr.drift_seq++;
        model_lbr_record(mc, &br);
    }
}

bool
msr_model_is_drift_ip(uint64_t addr)
{
    return addr >= MSR_MODEL_DRIFT_IP
           && addr < MSR_MODEL_DRIFT_IP + 0x10 * MODEL_DRIFT_SPAN + 0x10;
}

/*
 * SDM vol. 3B, "LBR freeze": the PMI a counter overflow requests freezes
 * the records while FREEZE_LBRS_ON_PMI is set: through the global status
 * from version 4 on (and on AMD with LbrAndPmcFreeze), before that by
 * clearing DEBUGCTL.LBR.
 */
void
model_lbr_pmi(struct model_cpu *mc)
{
    if (!(mc->lbr.debugctl & LBR_DEBUGCTL_FREEZE_LBRS)) {
        return;
    }

    if (model_lbr_status_bits(&mc->cfg) != 0) {
        mc->global_status |= LBR_STATUS_FROZEN;
    } else if (mc->cfg.lbr == MSR_MODEL_LBR_LEGACY) {
        mc->lbr.debugctl &= ~LBR_DEBUGCTL_LBR;
    }
}

bool
msr_model_lbr_recording(void)
{
    return model_lbr_running(model_cpu());
}

bool
msr_model_lbr_frozen(void)
{
    struct model_cpu *mc = model_cpu();

    if (model_lbr_status_bits(&mc->cfg) != 0) {
        return (mc->global_status & LBR_STATUS_FROZEN) != 0;
    }

    return mc->cfg.lbr == MSR_MODEL_LBR_LEGACY
           && (mc->lbr.debugctl & LBR_DEBUGCTL_FREEZE_LBRS)
           && !(mc->lbr.debugctl & LBR_DEBUGCTL_LBR);
}

unsigned int
msr_model_lbr_recorded(void)
{
    return model_cpu()->lbr.recorded;
}

/* ---- register semantics ------------------------------------------------- */

/* Valid DEBUGCTL bits (SDM vol. 3B, "IA32_DEBUGCTL MSR"). */
static uint64_t
model_lbr_debugctl_valid(const struct msr_model_config *c)
{
    uint64_t valid = LBR_DEBUGCTL_LBR | LBR_DEBUGCTL_BTF;

    if (model_lbr_can_freeze(c)) {
        valid |= LBR_DEBUGCTL_FREEZE_LBRS;
    }

    if (model_lbr_intel(c) && !model_lbr_hidden(c)) {
        valid |= LBR_DEBUGCTL_FREEZE_PERFMON;
    }

    return valid;
}

/*
 * DEBUGCTL.LBR and BTF are dropped, not refused, where there are no
 * records to drive (a hypervisor's guest; the model's CPUs without LBR).
 */
static int
model_lbr_write_debugctl(struct model_cpu *mc, uint64_t value)
{
    const struct msr_model_config *c = &mc->cfg;

    if (value & ~model_lbr_debugctl_valid(c)) {
        return -EIO;
    }

    if (c->lbr == MSR_MODEL_LBR_NONE || model_lbr_hidden(c)) {
        value &= ~(LBR_DEBUGCTL_LBR | LBR_DEBUGCTL_BTF);
    }

    mc->lbr.debugctl = value;
    return 0;
}

/* Whether bits hi..lo of value all equal bit lo (a sign extension). */
static bool
model_lbr_extended(uint64_t value, unsigned int lo, unsigned int hi)
{
    uint64_t mask = ((hi >= 63) ? UINT64_MAX : (1ULL << (hi + 1)) - 1)
                    & ~((1ULL << lo) - 1);

    return (value & mask) == 0 || (value & mask) == mask;
}

/*
 * A legacy FROM or TO as the format lays it out: the address sign
 * extended from bit 47 up to the format's flags (SDM vol. 3B, 17.4.8.1);
 * format 4's TSX flags must be the sign too (what WRMSR checks, though
 * the hardware records them 0 when TSX is off).
 */
static bool
model_lbr_legacy_canonical(unsigned int format, bool from, uint64_t value)
{
    if (!from) {
        return (format == LBR_FMT_TIME) ? true
                                        : model_lbr_extended(value, 47, 63);
    }

    switch (format) {
    case LBR_FMT_EIP_FLAGS:
    case LBR_FMT_EIP_FLAGS2:
    case LBR_FMT_TIME:
        return model_lbr_extended(value, 47, 62);
    default:
        return model_lbr_extended(value, 47, 63);
    }
}

/* Entry i of the FROM, TO or INFO records (reg). */
static uint64_t *
model_lbr_entry(struct model_lbr *l, unsigned int reg, unsigned int i)
{
    switch (reg) {
    case LREG_FROM:
        return &l->from[i];
    case LREG_TO:
        return &l->to[i];
    default:
        return &l->info[i];
    }
}

/* LBR_SELECT: Intel's and AMD's have the same bits, the rest reserved. */
static int
model_lbr_write_select(struct model_lbr *l, uint64_t value)
{
    if (value & ~LBR_SEL_MASK) {
        return -EIO;
    }

    l->select = value;
    return 0;
}

static int
model_lbr_write_legacy(struct model_cpu *mc, unsigned int reg,
                       unsigned int i, uint64_t value)
{
    struct model_lbr *l = &mc->lbr;
    unsigned int format = mc->cfg.lbr_format;

    switch (reg) {
    case LREG_SELECT:
        return model_lbr_write_select(l, value);
    case LREG_TOS:
        if (value >= mc->cfg.lbr_depth) {
            return -EIO;
        }
        l->tos = (unsigned int)value;
        return 0;
    case LREG_FROM:
    case LREG_TO:
        if (!model_lbr_legacy_canonical(format, reg == LREG_FROM, value)) {
            return -EIO;
        }
        *model_lbr_entry(l, reg, i) = value;
        return 0;
    default:
        /* LBR_INFO: 60:16 reserved. */
        if (value & 0x1fffffffffff0000ULL) {
            return -EIO;
        }
        l->info[i] = value;
        return 0;
    }
}

/* IA32_LBR_CTL bits leaf 1CH offers. */
static uint64_t
model_lbr_ctl_valid(const struct msr_model_config *c)
{
    uint64_t valid = LBR_CTL_LBREN;

    if (c->arch_lbr_ebx & LBR_CPUID_1C_EBX_CPL) {
        valid |= LBR_CTL_OS | LBR_CTL_USR;
    }

    if (c->arch_lbr_ebx & (1U << 2)) {
        valid |= LBR_CTL_CALL_STACK;
    }

    if (c->arch_lbr_ebx & LBR_CPUID_1C_EBX_FILTER) {
        valid |= LBR_CTL_KINDS;
    }

    return valid;
}

static int
model_lbr_write_arch(struct model_cpu *mc, unsigned int reg, unsigned int i,
                     uint64_t value)
{
    struct model_lbr *l = &mc->lbr;

    switch (reg) {
    case LREG_CTL:
        if (value & ~model_lbr_ctl_valid(&mc->cfg)) {
            return -EIO;
        }
        l->ctl = value;
        return 0;
    case LREG_DEPTH:
        /* A depth leaf 1CH offers; writing it empties every entry. */
        if (!model_lbr_arch_depth_ok(&mc->cfg, value)) {
            return -EIO;
        }
        l->depth = (unsigned int)value;
        memset(l->from, 0, sizeof(l->from));
        memset(l->to, 0, sizeof(l->to));
        memset(l->info, 0, sizeof(l->info));
        return 0;
    default:
        if (i >= l->depth) {
            return -EIO;
        }
        *model_lbr_entry(l, reg, i) = value;
        return 0;
    }
}

static int
model_lbr_write_amd(struct model_cpu *mc, unsigned int reg, unsigned int i,
                    uint64_t value)
{
    struct model_lbr *l = &mc->lbr;

    switch (reg) {
    case LREG_SELECT:
        return model_lbr_write_select(l, value);
    case LREG_CFG:
        if (value & ~LBR_AMD_DBG_EXTN_LBRV2EN) {
            return -EIO;
        }
        l->cfg = value;
        return 0;
    default:
        /* TO[61] is reserved. */
        if (reg == LREG_TO && (value & (1ULL << 61))) {
            return -EIO;
        }
        *model_lbr_entry(l, reg, i) = value;
        return 0;
    }
}

static int
model_lbr_read_reg(const struct model_cpu *mc, unsigned int reg,
                   unsigned int i, uint64_t *valuep)
{
    const struct model_lbr *l = &mc->lbr;

    if (mc->cfg.lbr == MSR_MODEL_LBR_ARCH
        && (reg == LREG_FROM || reg == LREG_TO || reg == LREG_INFO)
        && i >= l->depth) {
        return -EIO;
    }

    switch (reg) {
    case LREG_DEBUGCTL:
        *valuep = l->debugctl;
        return 0;
    case LREG_SELECT:
        *valuep = l->select;
        return 0;
    case LREG_TOS:
        *valuep = l->tos;
        return 0;
    case LREG_FROM:
        *valuep = l->from[i];
        return 0;
    case LREG_TO:
        *valuep = l->to[i];
        return 0;
    case LREG_INFO:
        *valuep = l->info[i];
        return 0;
    case LREG_CTL:
        *valuep = l->ctl;
        return 0;
    case LREG_DEPTH:
        *valuep = l->depth;
        return 0;
    default:
        *valuep = l->cfg;
        return 0;
    }
}

/* How the kind of machine answers for a record MSR, or NOT_MINE: as usual. */
static int
model_lbr_pretend(const struct msr_model_config *c, unsigned int reg,
                  uint64_t *valuep)
{
    if (c->lbr_kind == MSR_MODEL_LBRK_DEAD) {
        if (valuep != NULL) {
            *valuep = 0;
        }

        return 0;
    }

    /* KVM without a vPMU has no LBR MSRs: #GP (intel_pmu_get_msr and
       intel_pmu_set_msr handle them only with the guest's LBR on). */
    if ((c->lbr_kind == MSR_MODEL_LBRK_FAULTING
         || c->kind == MSR_MODEL_KVM_NO_PMU) && reg != LREG_DEBUGCTL) {
        return -EIO;
    }

    return MODEL_LBR_NOT_MINE;
}

int
model_lbr_read(struct model_cpu *mc, uint32_t msr, uint64_t *valuep)
{
    unsigned int i, reg = model_lbr_decode(&mc->cfg, msr, &i);
    int error;

    if (reg == LREG_NONE) {
        return MODEL_LBR_NOT_MINE;
    }

    error = model_lbr_pretend(&mc->cfg, reg, valuep);
    return (error != MODEL_LBR_NOT_MINE) ? error
                                         : model_lbr_read_reg(mc, reg, i,
                                                              valuep);
}

int
model_lbr_write(struct model_cpu *mc, uint32_t msr, uint64_t value)
{
    unsigned int i, reg = model_lbr_decode(&mc->cfg, msr, &i);
    int error;

    if (reg == LREG_NONE) {
        return MODEL_LBR_NOT_MINE;
    }

    error = model_lbr_pretend(&mc->cfg, reg, NULL);

    if (error != MODEL_LBR_NOT_MINE) {
        return error;
    }

    if (reg == LREG_DEBUGCTL) {
        return model_lbr_write_debugctl(mc, value);
    }

    switch (mc->cfg.lbr) {
    case MSR_MODEL_LBR_LEGACY:
        return model_lbr_write_legacy(mc, reg, i, value);
    case MSR_MODEL_LBR_ARCH:
        return model_lbr_write_arch(mc, reg, i, value);
    default:
        return model_lbr_write_amd(mc, reg, i, value);
    }
}
