/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The register-level model of the x86 PMU described in msr_model.h.  Each
 * behaviour is written from the Intel SDM (vol. 2A CPUID, vol. 3A local
 * APIC and processor state after reset, vol. 3B chapter 20 "Performance
 * Monitoring") or the AMD APM (vol. 2 section 13.2 "Performance-Monitoring
 * Counters", vol. 3 appendix E CPUID) and the family BKDGs/PPRs, and cites
 * the part it follows.  Where the manuals leave room the model is strict
 * (it faults), so that a driver relying on lenient hardware fails here
 * rather than on a machine; the same where KVM is more lenient than the
 * manuals, each such rule saying so beside it.
 *
 * Over 900 lines: it is one machine, CPUID, MSRs, counting and interrupt
 * delivery, whose parts depend on each other (a write loses what a running
 * counter counted, a wrap sets a status bit and raises a PMI through the
 * LVT); split, each part would need the others' state.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "arch/x86/pmu.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "msr_model.h"
#include "msr_model_i.h"

#define MODEL_MSR_OVF_CTRL          MSR_IA32_PERF_GLOBAL_OVF_CTRL
#define MODEL_MSR_AMD_STATUS_SET    MSR_AMD_PERF_CNTR_GLOBAL_STATUS_SET

/* An event selector compares these bits of a PERFEVTSEL. */
#define MODEL_SEL_MASK  (PMU_EVTSEL_EVENT | PMU_EVTSEL_UMASK                \
                         | PMU_EVTSEL_AMD_EVENT_HI)

static struct {
    struct model_cpu cpus[MSR_MODEL_MAX_CPUS];
    uint64_t drift;
    uint64_t skid;
    bool late_nmis;
    unsigned int quirks;        /* MSR_MODEL_QUIRK_* */
    bool in_drift;              /* counting drift: no nested drift */
    unsigned int gp_safe;
    unsigned int gp_unsafe;
    unsigned int writes;
    struct msr_model_accesses accesses;
} model;

struct model_cpu *
model_cpu(void)
{
    unsigned int cpu = cpu_id();

    assert(cpu < MSR_MODEL_MAX_CPUS);
    return &model.cpus[cpu];
}

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
        /* A bare-metal version 2 part (Core 2): no PDCM; KVM's own
           version 2 guest is msr_model_kvm_intel(). */
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

/*
 * KVM's Intel vPMU as a -cpu host guest on a non-hybrid Skylake-SP or later
 * host sees it (Linux arch/x86/kvm/pmu.h, kvm_init_pmu_capability: the
 * version capped at 2, general-purpose counters at 8, fixed at 3, the
 * host's widths; vmx.c: PDCM set in the guest's CPUID whenever there is a
 * vPMU, and IA32_PERF_CAPABILITIES with FW_WRITE): the hypervisor bit,
 * full-width writes, no LBR format (QEMU passes one only with lbr-fmt).
 */
struct msr_model_config
msr_model_kvm_intel(void)
{
    struct msr_model_config c = msr_model_intel(2);

    c.hypervisor = true;
    c.pdcm = true;
    c.fw_write = true;
    return c;
}

/*
 * KVM's AMD vPMU with PerfMonV2 (Linux 6.3 on, and a QEMU newer than 7.2
 * with -cpu host; Linux arch/x86/kvm/svm/pmu.c and cpuid.c): family 19h
 * Zen 4, the core extension, CPUID 8000_0022h with PerfMonV2 and 6
 * counters (KVM's AMD maximum), the global control and status registers,
 * no LbrExtV2.
 */
struct msr_model_config
msr_model_kvm_amd(void)
{
    struct msr_model_config c = msr_model_amd(0x19, true, true);

    c.model = 0x11;
    c.hypervisor = true;
    c.v2_nr = 6;
    return c;
}

/* ---- helpers ------------------------------------------------------------ */

static bool
model_is_intel(const struct msr_model_config *c)
{
    return c->vendor == CPU_VENDOR_INTEL;
}

static bool
model_cpuid_has_pmu(const struct msr_model_config *c)
{
    return c->kind == MSR_MODEL_REAL || c->kind == MSR_MODEL_BROKEN
           || c->kind == MSR_MODEL_FAULTING;
}

static uint64_t
model_width_mask(unsigned int width)
{
    return (width >= 64) ? UINT64_MAX : (1ULL << width) - 1;
}

uint64_t
model_gp_mask(const struct msr_model_config *c)
{
    return model_width_mask(model_is_intel(c) ? c->gp_width : 48);
}

unsigned int
model_nr_gp(const struct msr_model_config *c)
{
    if (model_is_intel(c)) {
        return c->nr_gp;
    }

    if (c->perfmon_v2 && c->v2_nr != 0) {
        return c->v2_nr;
    }

    return c->core_ext ? 6 : 4;
}

/*
 * Intel fixed counter i exists from version 2 on when i < EDX[4:0], or,
 * from version 5 on, when ECX bit i is set (SDM vol. 2A, CPUID leaf 0AH:
 * "FxCtr[i]_is_supported := ECX[i] || (EDX[4:0] > i)"); hidden_fixed adds
 * those an early part has without reporting them.
 */
static bool
model_fixed_exists(const struct msr_model_config *c, unsigned int i)
{
    if (c->version < 2 || i >= MODEL_MAX_FIXED) {
        return false;
    }

    return i < c->nr_fixed || i < c->hidden_fixed
           || (c->version >= 5 && (c->fixed_bitmap & (1U << i)));
}

static unsigned int
model_fixed_width(const struct msr_model_config *c)
{
    return (c->fixed_width != 0) ? c->fixed_width : c->gp_width;
}

/* Intel overflow-status / global-control bits of existing counters. */
static uint64_t
model_intel_counter_bits(const struct msr_model_config *c)
{
    uint64_t bits = model_width_mask(c->nr_gp);

    for (unsigned int i = 0; i < MODEL_MAX_FIXED; i++) {
        if (model_fixed_exists(c, i)) {
            bits |= 1ULL << (MSR_MODEL_FIXED_BIT + i);
        }
    }

    return bits;
}

/* Global control and status registers: Intel v2+, AMD PerfMonV2. */
static bool
model_has_global(const struct msr_model_config *c)
{
    return model_is_intel(c) ? c->version >= 2 : c->perfmon_v2;
}

/* Whether the global enables let counter bit count. */
static bool
model_gate_open(const struct model_cpu *mc, unsigned int bit)
{
    return !model_has_global(&mc->cfg)
           || (model.quirks & MSR_MODEL_QUIRK_NO_GATE)
           || (mc->global_ctrl & (1ULL << bit));
}

/* ---- configurations, continued: reset ----------------------------------- */

/*
 * A CPU out of reset.  IA32_PERF_GLOBAL_CTRL: "Sets bits n-1:0 and clears
 * the upper bits", n the number of general-purpose counters (SDM vol. 3A,
 * table "IA-32 and Intel 64 Processor States Following Power-up, Reset, or
 * INIT"), so that software written for version 1 still counts; AMD's
 * PerfCntrGlobalCtl does the same for the same reason.  The LVT entries
 * come out of reset masked (SDM vol. 3A, "Local Vector Table").
 */
static void
model_cpu_reset(struct model_cpu *mc, const struct msr_model_config *config)
{
    memset(mc, 0, sizeof(*mc));
    mc->cfg = *config;
    mc->lvt_masked = true;

    if (model_has_global(config)) {
        mc->global_ctrl = model_width_mask(model_nr_gp(config));
    }

    for (unsigned int i = 0; i < model_nr_gp(config); i++) {
        if (config->fw_running & (1ULL << i)) {
            mc->evtsel[i] = msr_model_event_code(config, MSR_MODEL_EV_CYCLES)
                            | PMU_EVTSEL_USR | PMU_EVTSEL_OS | PMU_EVTSEL_EN;
            mc->pmc[i] = MSR_MODEL_FW_VALUE;
        }
    }

    for (unsigned int i = 0; i < MODEL_MAX_FIXED; i++) {
        if ((config->fw_running & (1ULL << (MSR_MODEL_FIXED_BIT + i)))
            && model_fixed_exists(config, i)) {
            mc->fixed_ctrl |= (PMU_FIXED_CTRL_OS | PMU_FIXED_CTRL_USR)
                              << PMU_FIXED_CTRL_SHIFT(i);
            mc->fixed[i] = MSR_MODEL_FW_VALUE;
            mc->global_ctrl |= 1ULL << (MSR_MODEL_FIXED_BIT + i);
        }
    }

    model_lbr_reset(mc);
}

void
msr_model_init(const struct msr_model_config *config)
{
    memset(&model, 0, sizeof(model));
    model.drift = MSR_MODEL_DEFAULT_DRIFT;
    model_lbr_init();

    for (unsigned int i = 0; i < MSR_MODEL_MAX_CPUS; i++) {
        model_cpu_reset(&model.cpus[i], config);
    }
}

void
msr_model_set_cpu(unsigned int cpu, const struct msr_model_config *config)
{
    assert(cpu < MSR_MODEL_MAX_CPUS);
    model_cpu_reset(&model.cpus[cpu], config);
}

void
msr_model_set_drift(uint64_t count)
{
    model.drift = count;
}

void
msr_model_set_skid(uint64_t count)
{
    model.skid = count;
}

void
msr_model_set_late_nmis(bool late)
{
    model.late_nmis = late;
}

void
msr_model_set_quirks(unsigned int quirks)
{
    model.quirks = quirks;
}

/* ---- queries ------------------------------------------------------------ */

bool
msr_model_take_nmi(void)
{
    struct model_cpu *mc = model_cpu();
    bool was_pmi = mc->nmi_is_pmi;

    if (mc->nmis == 0) {
        return false;
    }

    mc->nmis = 0;
    mc->nmi_is_pmi = false;

    /*
     * AMD: the overflow NMI may be signalled again after the handler has
     * already taken it (Linux's perf_nmi_window, FreeBSD's NMI credit):
     * the duplicate is pending as soon as this one is taken.
     */
    if (was_pmi && model.late_nmis && !model_is_intel(&mc->cfg)) {
        mc->nmis = 1;
    }

    return true;
}

unsigned int
msr_model_nmis_pending(void)
{
    return model_cpu()->nmis;
}

unsigned int
msr_model_pmis_lost(void)
{
    return model_cpu()->lost_pmis;
}

unsigned int
msr_model_pmis_merged(void)
{
    return model_cpu()->merged;
}

unsigned int
msr_model_pmis(void)
{
    return model_cpu()->pmis;
}

bool
msr_model_lvt_masked(void)
{
    return model_cpu()->lvt_masked;
}

unsigned int
msr_model_nr_unmasks(void)
{
    return model_cpu()->unmasks;
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
msr_model_get_accesses(struct msr_model_accesses *accesses)
{
    *accesses = model.accesses;
}

uint64_t
msr_model_drifted(void)
{
    uint64_t most = 0;

    for (unsigned int e = 0; e < MSR_MODEL_NR_EVENTS; e++) {
        most = MAX(most, model_cpu()->drifted[e]);
    }

    return most;
}

uint64_t
msr_model_drifted_event(unsigned int event)
{
    assert(event < MSR_MODEL_NR_EVENTS);
    return model_cpu()->drifted[event];
}

void
msr_model_set_host_owned(uint64_t counters)
{
    model_cpu()->host_owned = counters;
}

uint64_t
msr_model_lost_events(void)
{
    return model_cpu()->lost;
}

void
msr_model_set_status(uint64_t bits)
{
    model_cpu()->global_status |= bits;
}

/* ---- CPUID -------------------------------------------------------------- */

static uint32_t
model_cpuid_version(const struct msr_model_config *c)
{
    unsigned int family = c->family, model_nr = c->model;
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

/* The vendor string of CPUID leaf 0, in EBX, EDX, ECX order. */
static void
model_cpuid_vendor(const struct msr_model_config *c, uint32_t regs[4])
{
    const char *s = model_is_intel(c) ? "GenuineIntel"
                    : (c->hygon ? "HygonGenuine" : "AuthenticAMD");

    memcpy(&regs[1], s, 4);
    memcpy(&regs[3], s + 4, 4);
    memcpy(&regs[2], s + 8, 4);
}

void
pmu_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t regs[4])
{
    const struct msr_model_config *c = &model_cpu()->cfg;
    bool intel = model_is_intel(c);

    (void)subleaf;
    memset(regs, 0, 4 * sizeof(regs[0]));

    switch (leaf) {
    case 0:
        regs[0] = 0x16;
        model_cpuid_vendor(c, regs);
        break;
    case 1:
        regs[0] = model_cpuid_version(c);
        regs[2] = (c->pdcm ? PMU_CPUID_1_ECX_PDCM : 0)
                  | ((c->kind != MSR_MODEL_REAL || c->hypervisor)
                     ? PMU_CPUID_1_ECX_HYPERVISOR : 0);
        regs[3] = PMU_CPUID_1_EDX_MSR | (c->apic ? PMU_CPUID_1_EDX_APIC : 0);
        break;
    case 0xa:
        /* SDM vol. 2A, CPUID leaf 0AH; all zero without a (v)PMU. */
        if (intel && model_cpuid_has_pmu(c)) {
            regs[0] = c->version | c->nr_gp << 8 | c->gp_width << 16
                      | c->ebx_len << 24;
            regs[1] = c->ebx_unavail;
            regs[2] = c->version >= 5 ? c->fixed_bitmap : 0;
            regs[3] = c->version >= 2
                      ? (c->nr_fixed | c->fixed_width << 5) : 0;
        }
        break;
    case 0x80000000:
        regs[0] = intel ? 0x80000008 : (c->perfmon_v2 ? 0x80000022
                                                       : 0x8000001f);
        break;
    case 0x80000001:
        /* APM vol. 3, appendix E: Fn8000_0001 ECX[23] PerfCtrExtCore. */
        if (!intel && c->core_ext) {
            regs[2] = PMU_CPUID_X1_ECX_PERFCTR_CORE;
        }
        break;
    case 0x80000022:
        /* APM vol. 3, appendix E: Fn8000_0022 EAX[0] PerfMonV2, EBX[3:0]
           NumPerfCtrCore. */
        if (!intel && c->perfmon_v2) {
            regs[0] = PMU_CPUID_X22_EAX_PERFMON_V2;
            regs[1] = c->v2_nr;
        }
        break;
    default:
        break;
    }

    model_lbr_cpuid(c, leaf, regs);
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
#define REG_EXTRA       12  /* offcore response, load latency, frontend */

/*
 * Intel's counters.  Only those CPUID gives exist: KVM still lets 0xc1 and
 * 0xc2 (the P6 counters) read 0 past them (kvm_get_msr_common); the
 * model faults, stricter, as a driver past its counters has a bug.
 */
static unsigned int
model_decode_intel(const struct msr_model_config *c, uint32_t msr,
                   unsigned int *indexp)
{
    unsigned int n = c->nr_gp;

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
    if (c->fw_write && msr >= MSR_IA32_A_PMC0 && msr < MSR_IA32_A_PMC0 + n) {
        *indexp = msr - MSR_IA32_A_PMC0;
        return REG_A_PMC;
    }

    if (msr == MSR_IA32_PERF_CAPABILITIES && c->pdcm) {
        return REG_PERF_CAP;
    }

    if (c->extra_msrs && (msr == 0x1a6 || msr == 0x1a7)) {
        *indexp = msr - 0x1a6;
        return REG_EXTRA;
    }

    if (c->extra_msrs && (msr == 0x3f6 || msr == 0x3f7)) {
        *indexp = 2 + msr - 0x3f6;
        return REG_EXTRA;
    }

    /* SDM vol. 3B, "Architectural Performance Monitoring Version 2": the
       fixed counters and the global registers start with version 2. */
    if (c->version < 2) {
        return REG_NONE;
    }

    if (msr >= MSR_IA32_FIXED_CTR0 && msr < MSR_IA32_FIXED_CTR0 + MODEL_MAX_FIXED
        && model_fixed_exists(c, msr - MSR_IA32_FIXED_CTR0)) {
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
model_decode_amd(const struct msr_model_config *c, uint32_t msr,
                 unsigned int *indexp)
{
    unsigned int n = model_nr_gp(c);

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

    if (c->core_ext && msr >= MSR_AMD_F15H_PERF_CTL0
        && msr < MSR_AMD_F15H_PERF_CTL0 + 2 * n) {
        *indexp = (msr - MSR_AMD_F15H_PERF_CTL0) / 2;
        return ((msr - MSR_AMD_F15H_PERF_CTL0) & 1) ? REG_PMC : REG_EVTSEL;
    }

    if (!c->perfmon_v2) {
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
model_decode(const struct msr_model_config *c, uint32_t msr,
             unsigned int *indexp)
{
    unsigned int reg;

    *indexp = 0;

    switch (c->kind) {
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

    reg = model_is_intel(c) ? model_decode_intel(c, msr, indexp)
                            : model_decode_amd(c, msr, indexp);

    /* CPUID says yes, but the counters do not keep what is written. */
    if (c->kind == MSR_MODEL_BROKEN && reg != REG_NONE
        && model_is_pmu_msr(msr)) {
        return REG_DUMMY;
    }

    return reg;
}

/* ---- counting ----------------------------------------------------------- */

/*
 * Zen 4 and later count reference cycles (PMCx120, cycles not halted at
 * the P0 frequency): family 19h models 10h-1Fh and 60h-AFh, family 1Ah on.
 */
static bool
model_amd_zen4(const struct msr_model_config *c)
{
    return c->family >= 0x1a
           || (c->family == 0x19
               && ((c->model >= 0x10 && c->model <= 0x1f)
                   || (c->model >= 0x60 && c->model <= 0xaf)));
}

uint64_t
msr_model_event_code(const struct msr_model_config *c, unsigned int event)
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
        [MSR_MODEL_EV_FP_OPS] = UINT64_MAX,
    };
    /* AMD families 10h-16h (BKDG: CPU clocks not halted 076h, retired
       instructions 0C0h, branches 0C2h/0C3h, L2/NB cache requests 07Dh/07Eh
       with unit mask 07h; family 15h: retired SSE/AVX operations 003h). */
    static const uint64_t amd_k8[MSR_MODEL_NR_EVENTS] = {
        [MSR_MODEL_EV_CYCLES] = 0x0076,
        [MSR_MODEL_EV_REF_CYCLES] = UINT64_MAX,
        [MSR_MODEL_EV_INSTRUCTIONS] = 0x00c0,
        [MSR_MODEL_EV_LLC_REF] = 0x077d,
        [MSR_MODEL_EV_LLC_MISS] = 0x077e,
        [MSR_MODEL_EV_BRANCH] = 0x00c2,
        [MSR_MODEL_EV_BRANCH_MISS] = 0x00c3,
        [MSR_MODEL_EV_FP_OPS] = 0x0003,
    };
    /* Family 17h on (PPR: L3 accesses 060h unit mask 0FFh, misses 064h
       unit mask 09h; Zen 4 on: reference cycles 120h; FLOPs 003h/0FFh). */
    static const uint64_t amd_zen[MSR_MODEL_NR_EVENTS] = {
        [MSR_MODEL_EV_CYCLES] = 0x0076,
        [MSR_MODEL_EV_REF_CYCLES] = UINT64_MAX,
        [MSR_MODEL_EV_INSTRUCTIONS] = 0x00c0,
        [MSR_MODEL_EV_LLC_REF] = 0xff60,
        [MSR_MODEL_EV_LLC_MISS] = 0x0964,
        [MSR_MODEL_EV_BRANCH] = 0x00c2,
        [MSR_MODEL_EV_BRANCH_MISS] = 0x00c3,
        [MSR_MODEL_EV_FP_OPS] = 0xff03,
    };

    if (event >= MSR_MODEL_NR_EVENTS) {
        return UINT64_MAX;
    }

    if (model_is_intel(c)) {
        /* An event CPUID marks unavailable, or past the vector, never
           counts: EBX bit i is the SDM's architectural event i (vol. 2A,
           CPUID leaf 0AH: 0 core cycles, 1 instructions retired, 2
           reference cycles, ...), not the model's numbering. */
        static const unsigned int ebx_bit[MSR_MODEL_NR_EVENTS] = {
            [MSR_MODEL_EV_CYCLES] = 0,
            [MSR_MODEL_EV_INSTRUCTIONS] = 1,
            [MSR_MODEL_EV_REF_CYCLES] = 2,
            [MSR_MODEL_EV_LLC_REF] = 3,
            [MSR_MODEL_EV_LLC_MISS] = 4,
            [MSR_MODEL_EV_BRANCH] = 5,
            [MSR_MODEL_EV_BRANCH_MISS] = 6,
        };

        if (event >= MSR_MODEL_EV_FP_OPS || ebx_bit[event] >= c->ebx_len
            || (c->ebx_unavail & (1U << ebx_bit[event]))) {
            return UINT64_MAX;
        }

        return intel[event];
    }

    if (c->family < 0x17) {
        return (event == MSR_MODEL_EV_FP_OPS && c->family != 0x15)
               ? UINT64_MAX : amd_k8[event];
    }

    if (event == MSR_MODEL_EV_REF_CYCLES && model_amd_zen4(c)) {
        return PMU_AMD_RAW(0x120, 0);
    }

    return amd_zen[event];
}

/*
 * AMD family 15h: some events count only on some counters (BKDG for
 * family 15h, "Core Performance Counter constraints"): the clocks and the
 * L2 events on counters 0-2, this FP event on counter 3 alone; the others
 * the model injects count anywhere.  A counter programmed with an event it
 * cannot count counts nothing.
 */
static uint64_t
model_f15h_counters(uint64_t code)
{
    switch (code) {
    case 0x0076:
    case 0x077d:
    case 0x077e:
        return 0x07;
    case 0x0003:
        return 0x08;
    default:
        return 0x3f;
    }
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
model_pmi(struct model_cpu *mc)
{
    mc->pmis++;

    if (mc->nmis != 0) {
        mc->merged++;
        mc->nmi_is_pmi = true;
        return;
    }

    if (mc->lvt_masked) {
        mc->lost_pmis++;
        return;
    }

    mc->nmis = 1;
    mc->nmi_is_pmi = true;

    if (model_is_intel(&mc->cfg)) {
        mc->lvt_masked = true;
    }
}

/* count events went by on this CPU: a skidded PMI may come now. */
static void
model_skid_advance(struct model_cpu *mc, uint64_t count)
{
    if (!mc->skid_pending) {
        return;
    }

    if (count < mc->skid_left) {
        mc->skid_left -= count;
        return;
    }

    mc->skid_pending = false;
    model_pmi(mc);
}

/*
 * Add count to counter ctr (index idx in since_read) of the given width;
 * on wrap set the status bit (Intel from version 2, AMD with PerfMonV2)
 * and raise a PMI when the interrupt is enabled, after the skid (SDM vol.
 * 3B, "Architectural Performance Monitoring Version 2"; APM vol. 2,
 * section 13.2.1, PerfEvtSel Int bit).
 */
void
model_count(struct model_cpu *mc, uint64_t *ctr, unsigned int idx,
            uint64_t mask, uint64_t count, unsigned int bit, bool intr)
{
    uint64_t sum = *ctr + count;
    bool wrapped = (mask == UINT64_MAX) ? sum < *ctr : sum > mask;

    *ctr = sum & mask;
    mc->since_read[idx] += count;

    if (!wrapped) {
        return;
    }

    if (model_has_global(&mc->cfg)) {
        mc->global_status |= 1ULL << bit;
    }

    if (!intr) {
        return;
    }

    /* The PMI request freezes the branch records at once (skid or not). */
    model_lbr_pmi(mc);

    if (model.skid == 0) {
        model_pmi(mc);
    } else if (!mc->skid_pending) {
        mc->skid_pending = true;
        mc->skid_left = model.skid;
    }
}

/* Whether the mode bits (USR/OS layout) select the injected mode. */
static bool
model_mode_ok(bool usr, bool os, bool user)
{
    return user ? usr : os;
}

/*
 * What a counter programmed with e counts of count occurrences spread
 * evenly over cycles cycles (SDM vol. 3B, figure "Layout of
 * IA32_PERFEVTSELx MSRs": CMASK, INV, E; APM vol. 2, PerfEvtSel CntMask,
 * Inv, Edge): without a counter mask, the occurrences; with one, the cycles
 * with at least that many (fewer, inverted); with edge, the number of runs
 * of such cycles that start.
 */
static uint64_t
model_masked_count(struct model_cpu *mc, unsigned int i, uint64_t e,
                   uint64_t count, uint64_t cycles)
{
    uint64_t cmask = (e & PMU_EVTSEL_CMASK) >> 24;
    uint64_t base = count / cycles, extra = count % cycles, meeting;
    bool inv = (e & PMU_EVTSEL_INV) != 0;

    if (cmask == 0) {
        return count;
    }

    /* extra cycles see base + 1 occurrences, the others base. */
    meeting = ((base + 1 >= cmask) ? extra : 0)
              + ((base >= cmask) ? cycles - extra : 0);

    if (inv) {
        meeting = cycles - meeting;
    }

    if (!(e & PMU_EVTSEL_EDGE)) {
        return meeting;
    }

    if (meeting == 0) {
        mc->edge_state[i] = false;
        return 0;
    }

    if (meeting < cycles) {
        /* Interleaved with cycles that do not meet it: each one a run. */
        mc->edge_state[i] = false;
        return meeting;
    }

    count = mc->edge_state[i] ? 0 : 1;
    mc->edge_state[i] = true;
    return count;
}

static void
model_inject_gp(struct model_cpu *mc, unsigned int event, uint64_t count,
                uint64_t cycles, bool user)
{
    const struct msr_model_config *c = &mc->cfg;
    uint64_t sel = msr_model_event_code(c, event);

    if (sel == UINT64_MAX) {
        return;
    }

    for (unsigned int i = 0; i < model_nr_gp(c); i++) {
        uint64_t e = mc->evtsel[i];

        if (!(e & PMU_EVTSEL_EN) || (e & MODEL_SEL_MASK) != sel
            || !model_mode_ok(e & PMU_EVTSEL_USR, e & PMU_EVTSEL_OS, user)) {
            continue;
        }

        /* Global enable: Intel from version 2, AMD with PerfMonV2.  A
           counter the host took counts nothing, silently. */
        if (!model_gate_open(mc, i) || (mc->host_owned & (1ULL << i))) {
            continue;
        }

        if (!model_is_intel(c) && c->family == 0x15
            && !(model_f15h_counters(sel) & (1ULL << i))) {
            continue;
        }

        /* GuestOnly counts nothing in this host-only model; edge or
           invert without a counter mask are not modelled, and count
           nothing either. */
        if ((e & PMU_EVTSEL_AMD_GUEST_ONLY)
            || ((e & (PMU_EVTSEL_EDGE | PMU_EVTSEL_INV))
                && !(e & PMU_EVTSEL_CMASK))) {
            continue;
        }

        model_merge_count(mc, i, model_masked_count(mc, i, e, count, cycles),
                          cycles, (e & PMU_EVTSEL_INT) != 0);
    }
}

/*
 * Intel fixed counters (SDM vol. 3B, "Architectural Performance Monitoring
 * Version 2"): 0 counts INST_RETIRED.ANY, 1 CPU_CLK_UNHALTED.CORE, 2
 * CPU_CLK_UNHALTED.REF; their IA32_FIXED_CTR_CTRL field enables ring 0
 * (bit 0) and ring > 0 (bit 1) counting and the PMI (bit 3).
 */
static void
model_inject_fixed(struct model_cpu *mc, unsigned int event, uint64_t count,
                   bool user)
{
    static const int fixed_of[MSR_MODEL_NR_EVENTS] = {
        [MSR_MODEL_EV_CYCLES] = 1,
        [MSR_MODEL_EV_REF_CYCLES] = 2,
        [MSR_MODEL_EV_INSTRUCTIONS] = 0,
        [MSR_MODEL_EV_LLC_REF] = -1,
        [MSR_MODEL_EV_LLC_MISS] = -1,
        [MSR_MODEL_EV_BRANCH] = -1,
        [MSR_MODEL_EV_BRANCH_MISS] = -1,
        [MSR_MODEL_EV_FP_OPS] = -1,
    };
    const struct msr_model_config *c = &mc->cfg;
    int i = fixed_of[event];
    uint64_t field;

    if (i < 0 || !model_fixed_exists(c, (unsigned int)i)
        || !model_gate_open(mc, MSR_MODEL_FIXED_BIT + (unsigned int)i)
        || (mc->host_owned & (1ULL << (MSR_MODEL_FIXED_BIT + i)))) {
        return;
    }

    field = (mc->fixed_ctrl >> PMU_FIXED_CTRL_SHIFT(i)) & 0xf;

    if (!model_mode_ok(field & PMU_FIXED_CTRL_USR, field & PMU_FIXED_CTRL_OS,
                       user)) {
        return;
    }

    model_count(mc, &mc->fixed[i], MODEL_MAX_GP + (unsigned int)i,
                model_width_mask(model_fixed_width(c)), count,
                MSR_MODEL_FIXED_BIT + (unsigned int)i,
                (field & PMU_FIXED_CTRL_PMI) != 0);
}

static void
model_inject(struct model_cpu *mc, unsigned int event, uint64_t count,
             uint64_t cycles, bool user)
{
    if (mc->cfg.kind != MSR_MODEL_REAL || event >= MSR_MODEL_NR_EVENTS
        || count == 0) {
        return;
    }

    model_inject_gp(mc, event, count, cycles, user);

    if (model_is_intel(&mc->cfg)) {
        model_inject_fixed(mc, event, count, user);
    }

    model_skid_advance(mc, count);
}

void
msr_model_inject(unsigned int event, uint64_t count, bool user)
{
    model_inject(model_cpu(), event, count, 1, user);
}

void
msr_model_inject_spread(unsigned int event, uint64_t count, uint64_t cycles,
                        bool user)
{
    assert(cycles > 0);
    model_inject(model_cpu(), event, count, cycles, user);
}

/*
 * The events of kind event that the driver's code between two accesses
 * causes, for a drift of drift: an MSR access costs the core far more
 * cycles (reference cycles alike) than it retires instructions, and a
 * few instructions hold at most one branch; the driver's code misses no
 * cache and mispredicts nothing.  Weights in fifths of the drift, rounded
 * up, so that a drift of 1 still moves instructions and branches.
 */
static uint64_t
model_drift_of(unsigned int event, uint64_t drift)
{
    static const uint64_t fifths[MSR_MODEL_NR_EVENTS] = {
        [MSR_MODEL_EV_CYCLES] = 20,
        [MSR_MODEL_EV_REF_CYCLES] = 20,
        [MSR_MODEL_EV_INSTRUCTIONS] = 5,
        [MSR_MODEL_EV_BRANCH] = 1,
    };

    return (drift * fifths[event] + 4) / 5;
}

/* The driver's code runs between two accesses: its events count. */
static void
model_drift(struct model_cpu *mc)
{
    if (model.in_drift) {
        return;
    }

    model.in_drift = true;
    model_lbr_drift(mc);

    for (unsigned int e = 0; e < MSR_MODEL_NR_EVENTS; e++) {
        uint64_t count = model_drift_of(e, model.drift);

        mc->drifted[e] += count;
        model_inject(mc, e, count, 1, false);
    }

    model.in_drift = false;
}

void
msr_model_spurious_pmi(void)
{
    model_pmi(model_cpu());
}

void
msr_model_foreign_nmi(void)
{
    struct model_cpu *mc = model_cpu();

    if (mc->nmis == 0) {
        mc->nmis = 1;
        mc->nmi_is_pmi = false;
    }
}

/* ---- register semantics ------------------------------------------------- */

/*
 * Writable bits of a PERFEVTSEL.  Intel (SDM vol. 3B, figure "Layout of
 * IA32_PERFEVTSELx MSRs"): bits 31:0 but AnyThread (21), which the SDM
 * gives versions 3 and 4 but KVM reserves on every version (Linux
 * arch/x86/kvm/vmx/pmu_intel.c, the event selectors' reserved bits): a
 * guest that sets it takes a #GP, and no driver of ours sets it; the upper
 * half is reserved (no TSX modelled).  AMD (APM vol. 2, section 13.2.1,
 * "PerfEvtSeln"): bits 19 and 21 and 63:42 are reserved, 35:32 extend the
 * event select, 40/41 are GuestOnly/HostOnly.  KVM drops AMD's reserved
 * bits instead of faulting (svm/pmu.c); the model faults, stricter,
 * because a driver that sets them has a bug either way.
 */
static uint64_t
model_evtsel_valid(const struct msr_model_config *c)
{
    if (model_is_intel(c)) {
        return 0xffffffffULL & ~PMU_EVTSEL_ANY;
    }

    return (0xffffffffULL & ~(PMU_EVTSEL_PC | PMU_EVTSEL_ANY))
           | PMU_EVTSEL_AMD_EVENT_HI | PMU_EVTSEL_AMD_GUEST_ONLY
           | PMU_EVTSEL_AMD_HOST_ONLY;
}

/*
 * Valid bits of IA32_FIXED_CTR_CTRL: the OS, USR and PMI bits of existing
 * counters' fields.  Their AnyThread bit is KVM's reserved bit as in the
 * event selectors (vmx/pmu_intel.c builds the mask from OS, USR and PMI
 * alone).
 */
static uint64_t
model_fixed_ctrl_valid(const struct msr_model_config *c)
{
    uint64_t valid = 0;

    for (unsigned int i = 0; i < MODEL_MAX_FIXED; i++) {
        if (model_fixed_exists(c, i)) {
            valid |= 0xbULL << PMU_FIXED_CTRL_SHIFT(i);
        }
    }

    return valid;
}

static uint64_t
model_status_valid(const struct msr_model_config *c)
{
    return model_is_intel(c) ? model_intel_counter_bits(c)
                             : model_width_mask(model_nr_gp(c));
}

/* Whether counter idx (since_read numbering) is enabled. */
static bool
model_ctr_enabled(const struct model_cpu *mc, unsigned int idx)
{
    if (idx < MODEL_MAX_GP) {
        return (mc->evtsel[idx] & PMU_EVTSEL_EN) != 0;
    }

    return ((mc->fixed_ctrl >> PMU_FIXED_CTRL_SHIFT(idx - MODEL_MAX_GP))
            & (PMU_FIXED_CTRL_OS | PMU_FIXED_CTRL_USR)) != 0;
}

/*
 * Load counter idx with value: what the running counter counted since it
 * was last read is gone (the read-modify-write cost of a driver that did
 * not stop it).
 */
static void
model_load(struct model_cpu *mc, uint64_t *ctr, unsigned int idx,
           uint64_t value)
{
    if (model_ctr_enabled(mc, idx)) {
        mc->lost += mc->since_read[idx];
    }

    mc->since_read[idx] = 0;
    *ctr = value;
}

static int
model_read(struct model_cpu *mc, uint32_t msr, uint64_t *valuep, bool peek)
{
    const struct msr_model_config *c = &mc->cfg;
    unsigned int reg, i;
    int error;

    /* QEMU's TCG answers every MSR alike, the records' too. */
    if (c->kind != MSR_MODEL_TCG) {
        error = model_lbr_read(mc, msr, valuep);

        if (error != MODEL_LBR_NOT_MINE) {
            return error;
        }
    }

    reg = model_decode(c, msr, &i);

    switch (reg) {
    case REG_EVTSEL:
        *valuep = mc->evtsel[i];
        return 0;
    case REG_PMC:
    case REG_A_PMC:
        *valuep = mc->pmc[i];
        mc->since_read[i] = peek ? mc->since_read[i] : 0;
        return 0;
    case REG_FIXED:
        *valuep = mc->fixed[i];
        mc->since_read[MODEL_MAX_GP + i] = peek
                                           ? mc->since_read[MODEL_MAX_GP + i]
                                           : 0;
        return 0;
    case REG_FIXED_CTRL:
        *valuep = mc->fixed_ctrl;
        return 0;
    case REG_EXTRA:
        *valuep = mc->extra[i];
        return 0;
    case REG_STATUS:
        *valuep = mc->global_status;
        return 0;
    case REG_GLOBAL_CTRL:
        *valuep = mc->global_ctrl;
        return 0;
    case REG_PERF_CAP:
        *valuep = (c->fw_write ? PMU_PERF_CAP_FW_WRITE : 0)
                  | model_lbr_perf_cap(c);
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
model_write(struct model_cpu *mc, uint32_t msr, uint64_t value)
{
    const struct msr_model_config *c = &mc->cfg;
    unsigned int reg, i;
    int error;

    model.writes++;

    if (c->kind != MSR_MODEL_TCG) {
        error = model_lbr_write(mc, msr, value);

        if (error != MODEL_LBR_NOT_MINE) {
            return error;
        }
    }

    reg = model_decode(c, msr, &i);

    switch (reg) {
    case REG_EVTSEL:
        if (value & ~model_evtsel_valid(c)) {
            return -EIO;
        }
        mc->evtsel[i] = value;
        return 0;
    case REG_PMC:
        if (model_is_intel(c)) {
            /* SDM vol. 3B, "Full-Width Writes to Performance Counter
               Registers": a write to IA32_PMCx loads bits 31:0, sign
               extended to the counter's width. */
            model_load(mc, &mc->pmc[i], i,
                       ((model.quirks & MSR_MODEL_QUIRK_NO_SIGN_EXTEND)
                        ? (uint32_t)value
                        : (uint64_t)(int64_t)(int32_t)(uint32_t)value)
                       & model_gp_mask(c));
            return 0;
        }
        /* APM vol. 2, section 13.2.1: 48-bit counters.  KVM drops bits
           63:48 (pmc_write_counter masks to the width); the model faults,
           stricter: a driver that writes them lost track of the width. */
        if (value & ~model_gp_mask(c)) {
            return -EIO;
        }
        model_load(mc, &mc->pmc[i], i, value);
        return 0;
    case REG_A_PMC:
        /* Full-width writes load the counter's width; bits above are
           reserved: #GP (SDM vol. 3B, "Full-Width Writes to Performance
           Counter Registers"). */
        if (value & ~model_gp_mask(c)) {
            return -EIO;
        }
        model_load(mc, &mc->pmc[i], i, value);
        return 0;
    case REG_FIXED:
        /* KVM drops the bits above the width, as for the general
           counters; the model faults (stricter), for the same reason. */
        if (value & ~model_width_mask(model_fixed_width(c))) {
            return -EIO;
        }
        model_load(mc, &mc->fixed[i], MODEL_MAX_GP + i, value);
        return 0;
    case REG_FIXED_CTRL:
        if (value & ~model_fixed_ctrl_valid(c)) {
            return -EIO;
        }
        mc->fixed_ctrl = value;
        return 0;
    case REG_GLOBAL_CTRL:
        /* Enables of counters that do not exist are reserved: #GP, on
           hardware and under KVM (kvm_pmu_set_msr checks them against
           the vPMU's reserved bits), Intel and AMD alike. */
        if (value & ~model_status_valid(c)) {
            return -EIO;
        }
        mc->global_ctrl = value;
        return 0;
    case REG_STATUS_CLR:
        /* SDM vol. 3B, IA32_PERF_GLOBAL_OVF_CTRL, and APM vol. 2,
           PerfCntrGlobalStatusClr: writing 1 clears the status bit.  Bits
           of counters that do not exist are reserved: #GP.  KVM also
           accepts Intel's bits 62 and 63 (DS buffer overflow, CondChgd);
           the model faults, stricter: the drivers use neither. */
        if (value & ~(model_status_valid(c) | model_lbr_status_bits(c))) {
            return -EIO;
        }
        mc->global_status &= ~value;
        return 0;
    case REG_STATUS_SET:
        if (value & ~(model_status_valid(c) | model_lbr_status_bits(c))) {
            return -EIO;
        }
        mc->global_status |= value;
        return 0;
    case REG_DUMMY:
        return 0;
    case REG_EXTRA:
        mc->extra[i] = value;
        return 0;
    default:
        /* Read-only registers (status, capabilities) and missing MSRs.
           A guest's write to the global status faults under KVM too
           (kvm_pmu_set_msr: only the host may write it). */
        return -EIO;
    }
}

bool
msr_model_peek(uint32_t msr, uint64_t *valuep)
{
    return model_read(model_cpu(), msr, valuep, true) == 0;
}

/* ---- the seam ----------------------------------------------------------- */

int
msr_read_safe(uint32_t msr, uint64_t *valuep)
{
    struct model_cpu *mc = model_cpu();
    int error;

    model_drift(mc);
    model.accesses.rdmsr++;
    error = model_read(mc, msr, valuep, false);

    if (error) {
        model.gp_safe++;
    }

    return error;
}

int
msr_write_safe(uint32_t msr, uint64_t value)
{
    struct model_cpu *mc = model_cpu();
    int error;

    model_drift(mc);
    model.accesses.wrmsr++;
    error = model_write(mc, msr, value);

    if (error) {
        model.gp_safe++;
    }

    return error;
}

uint64_t
pmu_msr_read(uint32_t msr)
{
    struct model_cpu *mc = model_cpu();
    uint64_t value;

    model_drift(mc);
    model.accesses.rdmsr++;

    if (model_read(mc, msr, &value, false) != 0) {
        model.gp_unsafe++;
        return 0;
    }

    return value;
}

void
pmu_msr_write(uint32_t msr, uint64_t value)
{
    struct model_cpu *mc = model_cpu();

    model_drift(mc);
    model.accesses.wrmsr++;

    if (model_write(mc, msr, value) != 0) {
        model.gp_unsafe++;
    }
}

/*
 * RDPMC (SDM vol. 2B and APM vol. 3, RDPMC): the counter of index, read
 * as through its MSR (a full-width value), or #GP for an index the CPU
 * lacks: Intel's general-purpose counters 0..n-1, fixed counters from
 * version 2 on with bit 30 set, any other bit reserved; AMD's counters
 * 0..n-1 (KVM masks off AMD's bits 31:30; the model faults, stricter, as
 * a driver setting them has a bug).  Where the PMU is a pretence the
 * instruction faults: #UD under TCG, #GP under KVM without a vPMU
 * (kvm_pmu_rdpmc fails with no vPMU version) and on the faulting kind;
 * counters that drop writes read 0.
 */
static int
model_rdpmc(struct model_cpu *mc, uint32_t index, uint64_t *valuep)
{
    const struct msr_model_config *c = &mc->cfg;
    uint32_t i = index & ~MSR_RDPMC_FIXED;
    uint32_t msr;

    if (c->kind == MSR_MODEL_TCG || c->kind == MSR_MODEL_KVM_NO_PMU
        || c->kind == MSR_MODEL_FAULTING || c->no_rdpmc) {
        return -EIO;
    }

    if (!model_is_intel(c)) {
        if (index >= model_nr_gp(c)) {
            return -EIO;
        }

        msr = c->core_ext ? MSR_AMD_F15H_PERF_CTR0 + 2 * index
                          : MSR_AMD_K7_PERFCTR0 + index;
    } else if (index & MSR_RDPMC_FIXED) {
        if (c->version < 2 || i >= MODEL_MAX_FIXED
            || !model_fixed_exists(c, i)) {
            return -EIO;
        }

        msr = MSR_IA32_FIXED_CTR0 + i;
    } else {
        if (index >= c->nr_gp) {
            return -EIO;
        }

        msr = MSR_IA32_PMC0 + index;
    }

    return model_read(mc, msr, valuep, false);
}

int
msr_rdpmc_safe(uint32_t index, uint64_t *valuep)
{
    struct model_cpu *mc = model_cpu();
    int error;

    model_drift(mc);
    model.accesses.rdpmc++;
    error = model_rdpmc(mc, index, valuep);

    if (error) {
        *valuep = 0;
        model.gp_safe++;
    }

    return error;
}

uint64_t
msr_rdpmc(uint32_t index)
{
    struct model_cpu *mc = model_cpu();
    uint64_t value;

    model_drift(mc);
    model.accesses.rdpmc++;

    if (model_rdpmc(mc, index, &value) != 0) {
        model.gp_unsafe++;
        return 0;
    }

    return value;
}

void
lapic_pmc_setup(void)
{
    model_cpu()->lvt_masked = false;
}

/*
 * The unmask is an access like the others (an x2APIC MSR write, or an
 * MMIO store): time passes before it as before an MSR access, and what
 * overflows meanwhile finds the LVT still masked.
 */
void
lapic_pmc_unmask(void)
{
    struct model_cpu *mc = model_cpu();

    model_drift(mc);
    mc->lvt_masked = (model.quirks & MSR_MODEL_QUIRK_LVT_STUCK) != 0;
    mc->unmasks++;
}
