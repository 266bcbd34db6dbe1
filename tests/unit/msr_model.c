/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The register-level model of the x86 PMU described in msr_model.h.  Each
 * behaviour is written from the Intel SDM (vol. 2A CPUID, vol. 3A local
 * APIC, vol. 3B chapter 20 "Performance Monitoring") or the AMD APM (vol. 2
 * section 13.2 "Performance-Monitoring Counters", vol. 3 appendix E CPUID)
 * and cites the part it follows.  Where the manuals leave room the model
 * is strict (it faults), so that a driver relying on lenient hardware
 * fails here rather than on a machine.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "arch/x86/pmu.h"
#include "kern/error.h"
#include "msr_model.h"

#define MODEL_MAX_GP        16
#define MODEL_MAX_FIXED     4

#define MODEL_MSR_OVF_CTRL          MSR_IA32_PERF_GLOBAL_OVF_CTRL
#define MODEL_MSR_AMD_STATUS_SET    MSR_AMD_PERF_CNTR_GLOBAL_STATUS_SET

static struct msr_model_config model_cfg;

static struct {
    uint64_t evtsel[MODEL_MAX_GP];
    uint64_t pmc[MODEL_MAX_GP];
    uint64_t fixed[MODEL_MAX_FIXED];
    uint64_t fixed_ctrl;
    uint64_t global_ctrl;
    uint64_t global_status;
    bool lvt_masked;
    unsigned int nmis;
    unsigned int lost;
    unsigned int merged;
    unsigned int unmasks;
    unsigned int gp_safe;
    unsigned int gp_unsafe;
    unsigned int writes;
} model;

/* ---- configurations ----------------------------------------------------- */

struct msr_model_config
msr_model_intel(unsigned int version)
{
    struct msr_model_config c = {
        .vendor = CPU_VENDOR_INTEL,
        .family = 6,
        .model = 0x55,
        .kind = MSR_MODEL_REAL,
        .apic = true,
        .version = version,
        .nr_gp = 4,
        .gp_width = 48,
        .ebx_len = 7,
    };

    switch (version) {
    case 1:
        /* Core Solo/Duo era: two 40-bit counters, nothing else. */
        c.model = 0x0e;
        c.nr_gp = 2;
        c.gp_width = 40;
        break;
    case 2:
        /* What KVM shows a -cpu host guest: version capped at 2. */
        c.nr_fixed = 3;
        c.fixed_width = 48;
        break;
    case 3:
        c.nr_fixed = 3;
        c.fixed_width = 48;
        c.pdcm = true;
        break;
    case 4:
        c.nr_gp = 8;
        c.nr_fixed = 3;
        c.fixed_width = 48;
        c.pdcm = true;
        c.fw_write = true;
        break;
    default:
        /* Version 5: four fixed counters, the fourth being topdown slots. */
        c.nr_gp = 8;
        c.nr_fixed = 4;
        c.fixed_width = 48;
        c.fixed_bitmap = 0xf;
        c.ebx_len = 8;
        c.pdcm = true;
        c.fw_write = true;
        break;
    }

    return c;
}

struct msr_model_config
msr_model_amd(unsigned int family, bool core_ext, bool perfmon_v2)
{
    struct msr_model_config c = {
        .vendor = CPU_VENDOR_AMD,
        .family = family,
        .model = 1,
        .kind = MSR_MODEL_REAL,
        .apic = true,
        .core_ext = core_ext || perfmon_v2,
        .perfmon_v2 = perfmon_v2,
        .v2_nr = perfmon_v2 ? 6 : 0,
    };

    return c;
}

void
msr_model_init(const struct msr_model_config *config)
{
    model_cfg = *config;
    memset(&model, 0, sizeof(model));

    /* The LVT entries come out of reset masked (SDM vol. 3A, "Local
       Vector Table"). */
    model.lvt_masked = true;
}

/* ---- queries ------------------------------------------------------------ */

bool
msr_model_take_nmi(void)
{
    if (model.nmis == 0) {
        return false;
    }

    model.nmis--;
    return true;
}

unsigned int
msr_model_nmis_pending(void)
{
    return model.nmis;
}

unsigned int
msr_model_pmis_lost(void)
{
    return model.lost;
}

unsigned int
msr_model_pmis_merged(void)
{
    return model.merged;
}

bool
msr_model_lvt_masked(void)
{
    return model.lvt_masked;
}

unsigned int
msr_model_nr_unmasks(void)
{
    return model.unmasks;
}

unsigned int
msr_model_nr_gp_safe(void)
{
    return model.gp_safe;
}

unsigned int
msr_model_nr_gp_unsafe(void)
{
    return model.gp_unsafe;
}

unsigned int
msr_model_nr_writes(void)
{
    return model.writes;
}

void
msr_model_set_status(uint64_t bits)
{
    model.global_status |= bits;
}

/* ---- helpers ------------------------------------------------------------ */

static bool
model_is_intel(void)
{
    return model_cfg.vendor == CPU_VENDOR_INTEL;
}

static bool
model_cpuid_has_pmu(void)
{
    return model_cfg.kind == MSR_MODEL_REAL || model_cfg.kind == MSR_MODEL_BROKEN
           || model_cfg.kind == MSR_MODEL_FAULTING;
}

static uint64_t
model_width_mask(unsigned int width)
{
    return (width >= 64) ? UINT64_MAX : (1ULL << width) - 1;
}

static uint64_t
model_gp_mask(void)
{
    return model_width_mask(model_is_intel() ? model_cfg.gp_width : 48);
}

static unsigned int
model_amd_nr(void)
{
    if (model_cfg.perfmon_v2 && model_cfg.v2_nr != 0) {
        return model_cfg.v2_nr;
    }

    return model_cfg.core_ext ? 6 : 4;
}

/*
 * Intel fixed counter i exists from version 2 on when i < EDX[4:0], or,
 * from version 5 on, when ECX bit i is set (SDM vol. 2A, CPUID leaf 0AH:
 * "FxCtr[i]_is_supported := ECX[i] || (EDX[4:0] > i)").
 */
static bool
model_fixed_exists(unsigned int i)
{
    if (model_cfg.version < 2 || i >= MODEL_MAX_FIXED) {
        return false;
    }

    return i < model_cfg.nr_fixed
           || (model_cfg.version >= 5 && (model_cfg.fixed_bitmap & (1U << i)));
}

/* Intel overflow-status / global-control bits of existing counters. */
static uint64_t
model_intel_counter_bits(void)
{
    uint64_t bits = model_width_mask(model_cfg.nr_gp);

    for (unsigned int i = 0; i < MODEL_MAX_FIXED; i++) {
        if (model_fixed_exists(i)) {
            bits |= 1ULL << (32 + i);
        }
    }

    return bits;
}

/* ---- CPUID -------------------------------------------------------------- */

static uint32_t
model_cpuid_version(void)
{
    unsigned int family = model_cfg.family, model_nr = model_cfg.model;
    uint32_t eax = (model_nr & 0xf) << 4;

    /* SDM vol. 2A, CPUID "Version Information": extended family from 0FH,
       extended model for families 06H and 0FH. */
    if (family >= 0xf) {
        eax |= 0xfU << 8 | (family - 0xf) << 20;
    } else {
        eax |= family << 8;
    }

    if (family == 0x6 || family >= 0xf) {
        eax |= ((model_nr >> 4) & 0xf) << 16;
    }

    return eax;
}

void
pmu_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t regs[4])
{
    bool intel = model_is_intel();

    (void)subleaf;
    memset(regs, 0, 4 * sizeof(regs[0]));

    switch (leaf) {
    case 0:
        regs[0] = 0x16;
        regs[1] = intel ? 0x756e6547 : 0x68747541;
        regs[3] = intel ? 0x49656e69 : 0x69746e65;
        regs[2] = intel ? 0x6c65746e : 0x444d4163;
        break;
    case 1:
        regs[0] = model_cpuid_version();
        regs[2] = (model_cfg.pdcm ? PMU_CPUID_1_ECX_PDCM : 0)
                  | (model_cfg.kind != MSR_MODEL_REAL
                     ? PMU_CPUID_1_ECX_HYPERVISOR : 0);
        regs[3] = PMU_CPUID_1_EDX_MSR
                  | (model_cfg.apic ? PMU_CPUID_1_EDX_APIC : 0);
        break;
    case 0xa:
        /* SDM vol. 2A, CPUID leaf 0AH; all zero without a (v)PMU. */
        if (intel && model_cpuid_has_pmu()) {
            regs[0] = model_cfg.version | model_cfg.nr_gp << 8
                      | model_cfg.gp_width << 16 | model_cfg.ebx_len << 24;
            regs[1] = model_cfg.ebx_unavail;
            regs[2] = model_cfg.version >= 5 ? model_cfg.fixed_bitmap : 0;
            regs[3] = model_cfg.version >= 2
                      ? (model_cfg.nr_fixed | model_cfg.fixed_width << 5) : 0;
        }
        break;
    case 0x80000000:
        regs[0] = intel ? 0x80000008 : (model_cfg.perfmon_v2 ? 0x80000022
                                                              : 0x8000001f);
        break;
    case 0x80000001:
        /* APM vol. 3, appendix E: Fn8000_0001 ECX[23] PerfCtrExtCore. */
        if (!intel && model_cfg.core_ext) {
            regs[2] = PMU_CPUID_X1_ECX_PERFCTR_CORE;
        }
        break;
    case 0x80000022:
        /* APM vol. 3, appendix E: Fn8000_0022 EAX[0] PerfMonV2, EBX[3:0]
           NumPerfCtrCore. */
        if (!intel && model_cfg.perfmon_v2) {
            regs[0] = PMU_CPUID_X22_EAX_PERFMON_V2;
            regs[1] = model_cfg.v2_nr;
        }
        break;
    default:
        break;
    }
}

/* ---- MSR decoding ------------------------------------------------------- */

/* Where an MSR lands in the model. */
#define REG_NONE        0
#define REG_EVTSEL      1
#define REG_PMC         2   /* Intel legacy alias, AMD counters */
#define REG_A_PMC       3
#define REG_FIXED       4
#define REG_FIXED_CTRL  5
#define REG_STATUS      6
#define REG_GLOBAL_CTRL 7
#define REG_STATUS_CLR  8
#define REG_PERF_CAP    9
#define REG_STATUS_SET  10
#define REG_DUMMY       11  /* reads 0, drops writes */

static unsigned int
model_decode_intel(uint32_t msr, unsigned int *indexp)
{
    unsigned int n = model_cfg.nr_gp;

    if (msr >= MSR_IA32_PMC0 && msr < MSR_IA32_PMC0 + n) {
        *indexp = msr - MSR_IA32_PMC0;
        return REG_PMC;
    }

    if (msr >= MSR_IA32_PERFEVTSEL0 && msr < MSR_IA32_PERFEVTSEL0 + n) {
        *indexp = msr - MSR_IA32_PERFEVTSEL0;
        return REG_EVTSEL;
    }

    /* SDM vol. 3B, "Full-Width Writes to Performance Counter Registers":
       IA32_A_PMCx exist when IA32_PERF_CAPABILITIES.FW_WRITE is set. */
    if (model_cfg.fw_write && msr >= MSR_IA32_A_PMC0
        && msr < MSR_IA32_A_PMC0 + n) {
        *indexp = msr - MSR_IA32_A_PMC0;
        return REG_A_PMC;
    }

    if (msr == MSR_IA32_PERF_CAPABILITIES && model_cfg.pdcm) {
        return REG_PERF_CAP;
    }

    /* SDM vol. 3B, "Architectural Performance Monitoring Version 2": the
       fixed counters and the global registers start with version 2. */
    if (model_cfg.version < 2) {
        return REG_NONE;
    }

    if (msr >= MSR_IA32_FIXED_CTR0 && msr < MSR_IA32_FIXED_CTR0 + MODEL_MAX_FIXED
        && model_fixed_exists(msr - MSR_IA32_FIXED_CTR0)) {
        *indexp = msr - MSR_IA32_FIXED_CTR0;
        return REG_FIXED;
    }

    switch (msr) {
    case MSR_IA32_FIXED_CTR_CTRL:
        return REG_FIXED_CTRL;
    case MSR_IA32_PERF_GLOBAL_STATUS:
        return REG_STATUS;
    case MSR_IA32_PERF_GLOBAL_CTRL:
        return REG_GLOBAL_CTRL;
    case MODEL_MSR_OVF_CTRL:
        return REG_STATUS_CLR;
    default:
        return REG_NONE;
    }
}

static unsigned int
model_decode_amd(uint32_t msr, unsigned int *indexp)
{
    unsigned int n = model_amd_nr();

    /* APM vol. 2, section 13.2.1: the legacy PerfEvtSel0-3 and PerfCtr0-3
       are always present; with the extension they alias counters 0-3. */
    if (msr >= MSR_AMD_K7_PERFEVTSEL0 && msr < MSR_AMD_K7_PERFEVTSEL0 + 4) {
        *indexp = msr - MSR_AMD_K7_PERFEVTSEL0;
        return REG_EVTSEL;
    }

    if (msr >= MSR_AMD_K7_PERFCTR0 && msr < MSR_AMD_K7_PERFCTR0 + 4) {
        *indexp = msr - MSR_AMD_K7_PERFCTR0;
        return REG_PMC;
    }

    if (model_cfg.core_ext && msr >= MSR_AMD_F15H_PERF_CTL0
        && msr < MSR_AMD_F15H_PERF_CTL0 + 2 * n) {
        *indexp = (msr - MSR_AMD_F15H_PERF_CTL0) / 2;
        return ((msr - MSR_AMD_F15H_PERF_CTL0) & 1) ? REG_PMC : REG_EVTSEL;
    }

    if (!model_cfg.perfmon_v2) {
        return REG_NONE;
    }

    switch (msr) {
    case MSR_AMD_PERF_CNTR_GLOBAL_STATUS:
        return REG_STATUS;
    case MSR_AMD_PERF_CNTR_GLOBAL_CTL:
        return REG_GLOBAL_CTRL;
    case MSR_AMD_PERF_CNTR_GLOBAL_STATUS_CLR:
        return REG_STATUS_CLR;
    case MODEL_MSR_AMD_STATUS_SET:
        return REG_STATUS_SET;
    default:
        return REG_NONE;
    }
}

/* Any PMU MSR of either vendor (for the pretend machines). */
static bool
model_is_pmu_msr(uint32_t msr)
{
    return (msr >= MSR_IA32_PMC0 && msr < MSR_IA32_PMC0 + 8)
           || (msr >= MSR_IA32_PERFEVTSEL0 && msr < MSR_IA32_PERFEVTSEL0 + 8)
           || (msr >= MSR_IA32_A_PMC0 && msr < MSR_IA32_A_PMC0 + 8)
           || (msr >= MSR_IA32_FIXED_CTR0 && msr < MSR_IA32_FIXED_CTR0 + 4)
           || (msr >= MSR_IA32_FIXED_CTR_CTRL && msr <= MODEL_MSR_OVF_CTRL)
           || msr == MSR_IA32_PERF_CAPABILITIES
           || (msr >= MSR_AMD_K7_PERFEVTSEL0 && msr < MSR_AMD_K7_PERFEVTSEL0 + 8)
           || (msr >= MSR_AMD_F15H_PERF_CTL0 && msr < MSR_AMD_F15H_PERF_CTL0 + 12)
           || (msr >= MSR_AMD_PERF_CNTR_GLOBAL_STATUS
               && msr <= MODEL_MSR_AMD_STATUS_SET);
}

static unsigned int
model_decode(uint32_t msr, unsigned int *indexp)
{
    unsigned int reg;

    *indexp = 0;

    switch (model_cfg.kind) {
    case MSR_MODEL_TCG:
        /* QEMU TCG: unknown MSRs read 0 and ignore writes, no #GP. */
        return REG_DUMMY;
    case MSR_MODEL_KVM_NO_PMU:
        /* KVM without a vPMU: the P6 and K7 counter MSRs read 0 and drop
           writes; any other PMU MSR is #GP. */
        if ((msr >= MSR_IA32_PMC0 && msr < MSR_IA32_PMC0 + 2)
            || (msr >= MSR_IA32_PERFEVTSEL0 && msr < MSR_IA32_PERFEVTSEL0 + 2)
            || (msr >= MSR_AMD_K7_PERFEVTSEL0
                && msr < MSR_AMD_K7_PERFEVTSEL0 + 8)) {
            return REG_DUMMY;
        }
        return REG_NONE;
    case MSR_MODEL_FAULTING:
        return REG_NONE;
    default:
        break;
    }

    reg = model_is_intel() ? model_decode_intel(msr, indexp)
                           : model_decode_amd(msr, indexp);

    /* CPUID says yes, but the counters do not keep what is written. */
    if (model_cfg.kind == MSR_MODEL_BROKEN && reg != REG_NONE
        && model_is_pmu_msr(msr)) {
        return REG_DUMMY;
    }

    return reg;
}

/* ---- register semantics ------------------------------------------------- */

/*
 * Writable bits of a PERFEVTSEL.  Intel (SDM vol. 3B, figure "Layout of
 * IA32_PERFEVTSELx MSRs"): bits 31:0, AnyThread (21) only from version 3;
 * the upper half is reserved (no TSX modelled).  AMD (APM vol. 2, section
 * 13.2.1, "PerfEvtSeln"): bits 19 and 21 and 63:42 are reserved, 35:32
 * extend the event select, 40/41 are GuestOnly/HostOnly.
 */
static uint64_t
model_evtsel_valid(void)
{
    if (model_is_intel()) {
        uint64_t valid = 0xffffffffULL;

        if (model_cfg.version < 3) {
            valid &= ~PMU_EVTSEL_ANY;
        }

        return valid;
    }

    return (0xffffffffULL & ~(PMU_EVTSEL_PC | PMU_EVTSEL_ANY))
           | PMU_EVTSEL_AMD_EVENT_HI | PMU_EVTSEL_AMD_GUEST_ONLY
           | PMU_EVTSEL_AMD_HOST_ONLY;
}

/* Valid bits of IA32_FIXED_CTR_CTRL: fields of existing counters. */
static uint64_t
model_fixed_ctrl_valid(void)
{
    uint64_t valid = 0;

    for (unsigned int i = 0; i < MODEL_MAX_FIXED; i++) {
        if (model_fixed_exists(i)) {
            uint64_t field = 0xbULL;

            if (model_cfg.version >= 3) {
                field |= PMU_FIXED_CTRL_ANY;
            }

            valid |= field << (4 * i);
        }
    }

    return valid;
}

static uint64_t
model_status_valid(void)
{
    return model_is_intel() ? model_intel_counter_bits()
                            : model_width_mask(model_amd_nr());
}

static int
model_read(uint32_t msr, uint64_t *valuep)
{
    unsigned int reg, i;

    reg = model_decode(msr, &i);

    switch (reg) {
    case REG_EVTSEL:
        *valuep = model.evtsel[i];
        return 0;
    case REG_PMC:
    case REG_A_PMC:
        *valuep = model.pmc[i];
        return 0;
    case REG_FIXED:
        *valuep = model.fixed[i];
        return 0;
    case REG_FIXED_CTRL:
        *valuep = model.fixed_ctrl;
        return 0;
    case REG_STATUS:
        *valuep = model.global_status;
        return 0;
    case REG_GLOBAL_CTRL:
        *valuep = model.global_ctrl;
        return 0;
    case REG_PERF_CAP:
        *valuep = model_cfg.fw_write ? PMU_PERF_CAP_FW_WRITE : 0;
        return 0;
    case REG_STATUS_CLR:
    case REG_STATUS_SET:
    case REG_DUMMY:
        *valuep = 0;
        return 0;
    default:
        return -EIO;
    }
}

static int
model_write(uint32_t msr, uint64_t value)
{
    unsigned int reg, i;

    reg = model_decode(msr, &i);
    model.writes++;

    switch (reg) {
    case REG_EVTSEL:
        if (value & ~model_evtsel_valid()) {
            return -EIO;
        }
        model.evtsel[i] = value;
        return 0;
    case REG_PMC:
        if (model_is_intel()) {
            /* SDM vol. 3B, "Full-Width Writes to Performance Counter
               Registers": a write to IA32_PMCx loads bits 31:0, sign
               extended to the counter's width. */
            model.pmc[i] = (uint64_t)(int64_t)(int32_t)(uint32_t)value
                           & model_gp_mask();
            return 0;
        }
        /* APM vol. 2, section 13.2.1: 48-bit counters; the model treats
           bits 63:48 as reserved. */
        if (value & ~model_gp_mask()) {
            return -EIO;
        }
        model.pmc[i] = value;
        return 0;
    case REG_A_PMC:
        /* Full-width writes load the counter's width; bits above are
           treated as reserved (strict). */
        if (value & ~model_gp_mask()) {
            return -EIO;
        }
        model.pmc[i] = value;
        return 0;
    case REG_FIXED:
        if (value & ~model_width_mask(model_cfg.fixed_width)) {
            return -EIO;
        }
        model.fixed[i] = value;
        return 0;
    case REG_FIXED_CTRL:
        if (value & ~model_fixed_ctrl_valid()) {
            return -EIO;
        }
        model.fixed_ctrl = value;
        return 0;
    case REG_GLOBAL_CTRL:
        if (value & ~model_status_valid()) {
            return -EIO;
        }
        model.global_ctrl = value;
        return 0;
    case REG_STATUS_CLR:
        /* SDM vol. 3B, IA32_PERF_GLOBAL_OVF_CTRL, and APM vol. 2,
           PerfCntrGlobalStatusClr: writing 1 clears the status bit.  Bits
           of counters that do not exist are reserved: #GP. */
        if (value & ~model_status_valid()) {
            return -EIO;
        }
        model.global_status &= ~value;
        return 0;
    case REG_STATUS_SET:
        if (value & ~model_status_valid()) {
            return -EIO;
        }
        model.global_status |= value;
        return 0;
    case REG_DUMMY:
        return 0;
    default:
        /* Read-only registers (status, capabilities) and missing MSRs. */
        return -EIO;
    }
}

bool
msr_model_peek(uint32_t msr, uint64_t *valuep)
{
    return model_read(msr, valuep) == 0;
}

/* ---- the seam ----------------------------------------------------------- */

int
msr_read_safe(uint32_t msr, uint64_t *valuep)
{
    int error = model_read(msr, valuep);

    if (error) {
        model.gp_safe++;
    }

    return error;
}

int
msr_write_safe(uint32_t msr, uint64_t value)
{
    int error = model_write(msr, value);

    if (error) {
        model.gp_safe++;
    }

    return error;
}

uint64_t
pmu_msr_read(uint32_t msr)
{
    uint64_t value;

    if (model_read(msr, &value) != 0) {
        model.gp_unsafe++;
        return 0;
    }

    return value;
}

void
pmu_msr_write(uint32_t msr, uint64_t value)
{
    if (model_write(msr, value) != 0) {
        model.gp_unsafe++;
    }
}

void
lapic_pmc_setup(void)
{
    model.lvt_masked = false;
}

void
lapic_pmc_unmask(void)
{
    model.lvt_masked = false;
    model.unmasks++;
}

/* ---- counting ----------------------------------------------------------- */

/* Selector (event | umask << 8, AMD event bits 11:8 at 35:32) of event. */
static bool
model_selector(unsigned int event, uint64_t *selp)
{
    /* Intel: SDM vol. 3B, table "UMask and Event Select Encodings for
       Pre-Defined Architectural Performance Events". */
    static const uint64_t intel[MSR_MODEL_NR_EVENTS] = {
        [MSR_MODEL_EV_CYCLES] = 0x003c,
        [MSR_MODEL_EV_REF_CYCLES] = 0x013c,
        [MSR_MODEL_EV_INSTRUCTIONS] = 0x00c0,
        [MSR_MODEL_EV_LLC_REF] = 0x4f2e,
        [MSR_MODEL_EV_LLC_MISS] = 0x412e,
        [MSR_MODEL_EV_BRANCH] = 0x00c4,
        [MSR_MODEL_EV_BRANCH_MISS] = 0x00c5,
    };
    /* AMD: families 10h-16h (BKDG: CPU clocks not halted 076h, retired
       instructions 0C0h, branches 0C2h/0C3h, L2/NB cache requests
       07Dh/07Eh with unit mask 07h); family 17h+ (PPR: L3 accesses 060h
       unit mask 0FFh, and misses 064h unit mask 09h). */
    static const uint64_t amd_k8[MSR_MODEL_NR_EVENTS] = {
        [MSR_MODEL_EV_CYCLES] = 0x0076,
        [MSR_MODEL_EV_REF_CYCLES] = UINT64_MAX,
        [MSR_MODEL_EV_INSTRUCTIONS] = 0x00c0,
        [MSR_MODEL_EV_LLC_REF] = 0x077d,
        [MSR_MODEL_EV_LLC_MISS] = 0x077e,
        [MSR_MODEL_EV_BRANCH] = 0x00c2,
        [MSR_MODEL_EV_BRANCH_MISS] = 0x00c3,
    };
    static const uint64_t amd_zen[MSR_MODEL_NR_EVENTS] = {
        [MSR_MODEL_EV_CYCLES] = 0x0076,
        [MSR_MODEL_EV_REF_CYCLES] = UINT64_MAX,
        [MSR_MODEL_EV_INSTRUCTIONS] = 0x00c0,
        [MSR_MODEL_EV_LLC_REF] = 0xff60,
        [MSR_MODEL_EV_LLC_MISS] = 0x0964,
        [MSR_MODEL_EV_BRANCH] = 0x00c2,
        [MSR_MODEL_EV_BRANCH_MISS] = 0x00c3,
    };
    uint64_t sel;

    if (model_is_intel()) {
        /* An event CPUID marks unavailable never counts. */
        if (event < model_cfg.ebx_len
            && (model_cfg.ebx_unavail & (1U << event))) {
            return false;
        }

        if (event >= model_cfg.ebx_len) {
            return false;
        }

        sel = intel[event];
    } else {
        sel = (model_cfg.family >= 0x17) ? amd_zen[event] : amd_k8[event];
    }

    if (sel == UINT64_MAX) {
        return false;
    }

    *selp = sel;
    return true;
}

/*
 * A PMI through the performance-counter LVT.  Intel: the local APIC sets
 * the LVT mask bit when it delivers the PMI (SDM vol. 3A, "Local Vector
 * Table", note on the performance counter register), so a handler that does
 * not unmask gets no further PMI.  AMD leaves the mask alone.  The
 * processor holds at most one NMI pending (SDM vol. 3A, "NMI Handling"): a
 * PMI raised while one is pending merges with it, and the handler must
 * find every overflowed counter in one go.  A PMI that finds the LVT masked
 * and nothing pending is lost.
 */
static void
model_pmi(void)
{
    if (model.nmis != 0) {
        model.merged++;
        return;
    }

    if (model.lvt_masked) {
        model.lost++;
        return;
    }

    model.nmis = 1;

    if (model_is_intel()) {
        model.lvt_masked = true;
    }
}

/*
 * Add count to a counter of the given width; on wrap set the status bit
 * (Intel from version 2, AMD with PerfMonV2) and raise a PMI when the
 * interrupt is enabled (SDM vol. 3B, "Architectural Performance Monitoring
 * Version 2"; APM vol. 2, section 13.2.1, PerfEvtSel Int bit).
 */
static void
model_count(uint64_t *ctr, uint64_t mask, uint64_t count, unsigned int bit,
            bool intr)
{
    uint64_t sum = *ctr + count;
    bool wrapped = (mask == UINT64_MAX) ? sum < *ctr : sum > mask;

    *ctr = sum & mask;

    if (!wrapped) {
        return;
    }

    if ((model_is_intel() && model_cfg.version >= 2)
        || (!model_is_intel() && model_cfg.perfmon_v2)) {
        model.global_status |= 1ULL << bit;
    }

    if (intr) {
        model_pmi();
    }
}

/* Whether the mode bits (USR/OS layout) select the injected mode. */
static bool
model_mode_ok(bool usr, bool os, bool user)
{
    return user ? usr : os;
}

static void
model_inject_gp(unsigned int event, uint64_t count, bool user)
{
    unsigned int n = model_is_intel() ? model_cfg.nr_gp : model_amd_nr();
    uint64_t sel, key;

    if (!model_selector(event, &sel)) {
        return;
    }

    /* Compare event select (12 bits on AMD) and unit mask. */
    key = (sel & 0xff) | ((sel >> 8) & 0xff) << 12;

    for (unsigned int i = 0; i < n; i++) {
        uint64_t e = model.evtsel[i];
        uint64_t code = (e & 0xff) | ((e >> 8) & 0xff) << 12;

        if (!model_is_intel()) {
            /* APM vol. 2, section 13.2.1: EventSelect[11:8] at 35:32. */
            code |= ((e >> 32) & 0xf) << 8;
        }

        if (!(e & PMU_EVTSEL_EN) || code != key
            || !model_mode_ok(e & PMU_EVTSEL_USR, e & PMU_EVTSEL_OS, user)) {
            continue;
        }

        /* Global enable: Intel from version 2, AMD with PerfMonV2. */
        if (((model_is_intel() && model_cfg.version >= 2)
             || (!model_is_intel() && model_cfg.perfmon_v2))
            && !(model.global_ctrl & (1ULL << i))) {
            continue;
        }

        /* Plain events only: edge, invert and counter mask are not
           modelled, so a selector using them never counts; GuestOnly
           counts nothing in this host-only model. */
        if (e & (PMU_EVTSEL_EDGE | PMU_EVTSEL_INV | PMU_EVTSEL_CMASK
                 | PMU_EVTSEL_AMD_GUEST_ONLY)) {
            continue;
        }

        model_count(&model.pmc[i], model_gp_mask(), count, i,
                    (e & PMU_EVTSEL_INT) != 0);
    }
}

/*
 * Intel fixed counters (SDM vol. 3B, "Architectural Performance Monitoring
 * Version 2"): 0 counts INST_RETIRED.ANY, 1 CPU_CLK_UNHALTED.CORE, 2
 * CPU_CLK_UNHALTED.REF; their IA32_FIXED_CTR_CTRL field enables ring 0
 * (bit 0) and ring > 0 (bit 1) counting and the PMI (bit 3).
 */
static void
model_inject_fixed(unsigned int event, uint64_t count, bool user)
{
    static const int fixed_of[MSR_MODEL_NR_EVENTS] = {
        [MSR_MODEL_EV_CYCLES] = 1,
        [MSR_MODEL_EV_REF_CYCLES] = 2,
        [MSR_MODEL_EV_INSTRUCTIONS] = 0,
        [MSR_MODEL_EV_LLC_REF] = -1,
        [MSR_MODEL_EV_LLC_MISS] = -1,
        [MSR_MODEL_EV_BRANCH] = -1,
        [MSR_MODEL_EV_BRANCH_MISS] = -1,
    };
    int i = fixed_of[event];
    uint64_t field;

    if (i < 0 || !model_fixed_exists((unsigned int)i)
        || !(model.global_ctrl & (1ULL << (32 + i)))) {
        return;
    }

    field = (model.fixed_ctrl >> (4 * i)) & 0xf;

    if (!model_mode_ok(field & PMU_FIXED_CTRL_USR, field & PMU_FIXED_CTRL_OS,
                       user)) {
        return;
    }

    model_count(&model.fixed[i], model_width_mask(model_cfg.fixed_width),
                count, 32 + (unsigned int)i, (field & PMU_FIXED_CTRL_PMI) != 0);
}

void
msr_model_inject(unsigned int event, uint64_t count, bool user)
{
    if (model_cfg.kind != MSR_MODEL_REAL || event >= MSR_MODEL_NR_EVENTS) {
        return;
    }

    model_inject_gp(event, count, user);

    if (model_is_intel()) {
        model_inject_fixed(event, count, user);
    }
}
