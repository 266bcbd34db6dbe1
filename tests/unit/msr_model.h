/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * A register-level model of the x86 performance-monitoring hardware, for
 * the host tests of the PMU drivers: CPUID, the MSR space of each CPU
 * (Intel architectural perfmon versions 1 to 5, AMD legacy, core extension
 * and PerfMonV2), each CPU's local APIC performance-counter LVT, and the
 * machines that only pretend to have a PMU (KVM without a vPMU, QEMU TCG,
 * counters that do not hold values, MSRs that fault).
 *
 * It provides the drivers' hardware seam (pmu_msr_read/pmu_msr_write,
 * msr_read_safe/msr_write_safe, msr_rdpmc/msr_rdpmc_safe, pmu_cpuid,
 * lapic_pmc_setup/unmask), acting
 * on the CPU that cpu_id() names (tests/unit/fakes/cpu.c: a test switches
 * CPUs with fake_cpu_set_id()).  An access to an MSR the modelled CPU lacks
 * raises the modelled #GP: the safe accessors return -EIO, the plain ones
 * record an "unexpected #GP" that a test asserts never happens.  Tests
 * inject events (cycles, instructions, ... in kernel or user mode); the
 * model counts them in every enabled counter whose selector matches, wraps
 * at the modelled width and raises a PMI (a pending NMI) when the counter's
 * interrupt bit is set.
 *
 * The model is no kinder than hardware, by default:
 *
 * - Time passes while the driver runs: before every MSR access (and the
 *   unmask of the LVT) the model counts kernel-mode events on that CPU, by
 *   kind as an access costs on hardware: for a drift of
 *   MSR_MODEL_DEFAULT_DRIFT, that many instructions, four times as many
 *   cycles and reference cycles, a fifth as many branches (rounded up), no
 *   cache or branch misses (msr_model_set_drift() changes the amount, 0
 *   turns it off).  A driver that reads a running counter and writes it
 *   back loses what was counted in between, as on hardware
 *   (msr_model_lost_events()), and a counter count is only known within
 *   the drift (msr_model_drifted()).
 * - Under KVM the host's own users (its NMI watchdog, host perf) may take
 *   the hardware counter behind a guest's: it stops counting with no sign
 *   the guest can see (msr_model_set_host_owned()).
 * - Reset state as the SDM gives it: IA32_PERF_GLOBAL_CTRL (and AMD's
 *   PerfCntrGlobalCtl) come up with the general-purpose enable bits set;
 *   the LVT entries come up masked.  config.fw_running says which counters
 *   the firmware left counting.
 * - AMD family 15h counts its constrained events only on the counters that
 *   can count them, and each family knows only its own event codes.  From
 *   family 17h on a lone counter adds at most 15 events a cycle; an even
 *   counter merged with its odd neighbour by the Merge event counts them
 *   all (msr_model_merge.c).
 * - Branch records (Intel legacy LBR in every format, Architectural LBR,
 *   AMD LbrExtV2: msr_model_lbr.c) record what the test injects, filtered
 *   as programmed, and the driver's own branches between its accesses
 *   (msr_model_set_branch_drift()) unless a PMI froze them; reserved bits
 *   and entries past the depth fault.
 * - The local APIC masks the LVT on a PMI (Intel); a PMI that finds it
 *   masked is lost.  Tests may also raise PMIs that no counter caused
 *   (msr_model_spurious_pmi), NMIs from elsewhere (msr_model_foreign_nmi),
 *   AMD's late duplicate NMIs (msr_model_set_late_nmis) and skid
 *   (msr_model_set_skid).
 */

#ifndef TESTS_UNIT_MSR_MODEL_H
#define TESTS_UNIT_MSR_MODEL_H

#include <stdbool.h>
#include <stdint.h>

/* What the machine really does with its PMU. */
#define MSR_MODEL_REAL          0   /* a working PMU as CPUID describes */
#define MSR_MODEL_KVM_NO_PMU    1   /* CPUID.0AH zero; P6/K7 MSRs read 0, the
                                       rest #GP, LBR MSRs too */
#define MSR_MODEL_TCG           2   /* CPUID.0AH zero; every MSR reads 0 and
                                       drops writes */
#define MSR_MODEL_BROKEN        3   /* CPUID as REAL; counters read 0 and
                                       drop writes */
#define MSR_MODEL_FAULTING      4   /* CPUID as REAL; every PMU MSR #GP */

/* CPUs the model has (each with its own registers and LVT). */
#define MSR_MODEL_MAX_CPUS      4

/* Events counted per event kind on every MSR access, unless changed. */
#define MSR_MODEL_DEFAULT_DRIFT 5

/* The first fixed counter's bit in fw_running (as in GLOBAL_CTRL). */
#define MSR_MODEL_FIXED_BIT     32

struct msr_model_config {
    unsigned int vendor;        /* CPU_VENDOR_INTEL or CPU_VENDOR_AMD */
    bool hygon;                 /* AMD's: vendor string HygonGenuine */
    unsigned int family;
    unsigned int model;
    unsigned int kind;          /* MSR_MODEL_* */
    bool apic;                  /* CPUID.1:EDX.APIC */
    bool hypervisor;            /* CPUID.1:ECX[31], forced (REAL kind) */
    bool no_rdpmc;              /* RDPMC #GP though the counter MSRs
                                   answer (a hypervisor that intercepts
                                   the MSRs and not the instruction) */

    /*
     * Counters the firmware left counting at reset: general-purpose
     * counter i is bit i, Intel fixed counter i bit MSR_MODEL_FIXED_BIT + i.
     * Each counts cycles in both modes from MSR_MODEL_FW_VALUE.
     */
    uint64_t fw_running;

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
    /*
     * Fixed counters that exist without CPUID counting them (the early
     * version 2 parts Linux's "assume 3 fixed counters" is for).
     */
    unsigned int hidden_fixed;

    /*
     * Intel model-specific extra MSRs: MSR_OFFCORE_RSP_0/1 (1A6H, 1A7H),
     * MSR_PEBS_LD_LAT (3F6H), MSR_PEBS_FRONTEND (3F7H) (SDM vol. 4).  They
     * hold what is written; without them (and under KVM, which does not
     * emulate them) they #GP.
     */
    bool extra_msrs;

    /* AMD. */
    bool core_ext;              /* CPUID 8000_0001h:ECX[23] */
    bool perfmon_v2;            /* CPUID 8000_0022h:EAX[0] */
    unsigned int v2_nr;         /* CPUID 8000_0022h:EBX[3:0] */

    /*
     * Branch records (msr_model_lbr.c): which ones (MSR_MODEL_LBR_*), and
     * how they answer (MSR_MODEL_LBRK_*).  Legacy: the format in
     * IA32_PERF_CAPABILITIES[5:0] (pdcm must be set), the entries and
     * where FROM, TO and LBR_INFO start (lbr_info 0: none).  Arch: the
     * depths CPUID leaf 1CH offers (EAX[7:0]) and its EBX and ECX.  AMD:
     * the stack's depth (CPUID 8000_0022h:EBX[9:4]) and LbrAndPmcFreeze
     * (EAX[2]); perfmon_v2 must be set.
     */
    unsigned int lbr;
    unsigned int lbr_kind;
    unsigned int lbr_format;
    unsigned int lbr_depth;
    uint32_t lbr_from;
    uint32_t lbr_to;
    uint32_t lbr_info;
    uint32_t arch_lbr_depths;
    uint32_t arch_lbr_ebx;
    uint32_t arch_lbr_ecx;
    bool amd_lbr_freeze;
};

/* Branch records a configuration has. */
#define MSR_MODEL_LBR_NONE      0
#define MSR_MODEL_LBR_LEGACY    1   /* Intel LBR stack */
#define MSR_MODEL_LBR_ARCH      2   /* Intel Architectural LBR */
#define MSR_MODEL_LBR_AMD       3   /* AMD LbrExtV2 */

/* How they answer, CPUID advertising them in every case. */
#define MSR_MODEL_LBRK_REAL     0   /* as the manuals say */
#define MSR_MODEL_LBRK_FAULTING 1   /* every record MSR #GP */
#define MSR_MODEL_LBRK_DEAD     2   /* read 0, drop writes */
#define MSR_MODEL_LBRK_NO_DEBUGCTL 3 /* a hypervisor without LBR: DEBUGCTL
                                       drops LBR, #GP on the freeze bit */

#define MSR_MODEL_FW_VALUE      123456

/* Events a test injects. */
#define MSR_MODEL_EV_CYCLES         0
#define MSR_MODEL_EV_REF_CYCLES     1
#define MSR_MODEL_EV_INSTRUCTIONS   2
#define MSR_MODEL_EV_LLC_REF        3
#define MSR_MODEL_EV_LLC_MISS       4
#define MSR_MODEL_EV_BRANCH         5
#define MSR_MODEL_EV_BRANCH_MISS    6
#define MSR_MODEL_EV_FP_OPS         7   /* AMD PMCx003: family 15h's FP
                                           ops; from 17h, retired FLOPs
                                           (unit mask FFh), up to 64 a
                                           cycle: msr_model_merge.c */
#define MSR_MODEL_NR_EVENTS         8

/* The model's code of event on config's CPU, or UINT64_MAX for none. */
uint64_t msr_model_event_code(const struct msr_model_config *config,
                              unsigned int event);

/*
 * Typical machines: bare-metal Intel of a perfmon version (1: Core Duo, 2:
 * Core 2, 3 and 4: Skylake-SP era, 5: four fixed counters) and AMD.
 */
struct msr_model_config msr_model_intel(unsigned int version);
struct msr_model_config msr_model_amd(unsigned int family, bool core_ext,
                                      bool perfmon_v2);

/*
 * What KVM shows a -cpu host guest: on Intel, version 2 with PDCM,
 * full-width writes and the hypervisor bit; on AMD, a Zen 4 with
 * PerfMonV2 and its 6 counters.
 */
struct msr_model_config msr_model_kvm_intel(void);
struct msr_model_config msr_model_kvm_amd(void);

/*
 * Machines with branch records.  An Intel family 6 CPU of the given model
 * (0x1a Nehalem, 0x3c Haswell, 0x55 Skylake-SP, 0x37 Silvermont: their
 * depths and MSRs from the SDM's tables) with the given perfmon version
 * and LBR format; a Sapphire Rapids with Architectural LBR; an AMD Zen 4
 * with LbrExtV2.
 */
struct msr_model_config msr_model_intel_lbr(unsigned int model,
                                            unsigned int version,
                                            unsigned int format);
struct msr_model_config msr_model_arch_lbr(uint32_t depths, uint32_t ebx,
                                           uint32_t ecx);
struct msr_model_config msr_model_amd_lbr(unsigned int depth, bool freeze);

/*
 * A branch taken on this CPU, recorded when the records run (enabled, not
 * frozen) and their filter lets its kind and mode through, encoded as
 * the configuration's format has it: mispredicted or not, cycles since
 * the previous one (saturated to the format's field).
 */
#define MSR_MODEL_BR_COND       0   /* conditional jump */
#define MSR_MODEL_BR_REL_JMP    1
#define MSR_MODEL_BR_IND_JMP    2
#define MSR_MODEL_BR_REL_CALL   3
#define MSR_MODEL_BR_IND_CALL   4
#define MSR_MODEL_BR_RET        5
#define MSR_MODEL_BR_FAR        6   /* system call, interrupt, far jump */

struct msr_model_branch {
    uint64_t from;
    uint64_t to;
    unsigned int kind;
    bool mispred;
    bool user;
    unsigned int cycles;
};

bool msr_model_branch(const struct msr_model_branch *branch);

/*
 * The driver takes branches too: before every MSR access the model
 * records count conditional kernel branches (default 1) from
 * MSR_MODEL_DRIFT_IP up, when the records run.  A driver that reads them
 * without freezing sees them arrive between its reads.
 */
#define MSR_MODEL_DRIFT_IP      0xffffffff8fff0000ULL
#define MSR_MODEL_DEFAULT_BRANCH_DRIFT 1

void msr_model_set_branch_drift(unsigned int count);

/* Whether addr is one of the drift branches' addresses. */
bool msr_model_is_drift_ip(uint64_t addr);

/*
 * This CPU's records: recording now (enabled and not frozen), frozen by
 * a PMI, and the branches recorded since reset (drift included).
 */
bool msr_model_lbr_recording(void);
bool msr_model_lbr_frozen(void);
unsigned int msr_model_lbr_recorded(void);

/*
 * Reset the machine to config on every CPU: registers in their reset
 * state, LVTs masked, nothing pending, the default drift, no skid, no late
 * NMIs.  msr_model_set_cpu() then makes one CPU different (a hybrid part's
 * application processor), again from reset.
 */
void msr_model_init(const struct msr_model_config *config);
void msr_model_set_cpu(unsigned int cpu, const struct msr_model_config *config);

/*
 * Count count occurrences of event in user or kernel mode on this CPU.
 * count must be below 2^width of the counters (one wrap at most per call).
 * The _spread variant says over how many cycles they came, evenly, which
 * the counter mask, invert and edge fields look at (a counter mask c
 * counts the cycles with at least c occurrences, inverted those with
 * fewer; edge counts the starts of runs of such cycles); plain injections
 * come in one cycle.
 */
void msr_model_inject(unsigned int event, uint64_t count, bool user);
void msr_model_inject_spread(unsigned int event, uint64_t count,
                             uint64_t cycles, bool user);

/* Events of each kind counted (kernel mode) before every MSR access. */
void msr_model_set_drift(uint64_t count);

/*
 * Drift events counted so far on this CPU: of the kind that drifted most
 * (the bound of any count), and of one kind.
 */
uint64_t msr_model_drifted(void);
uint64_t msr_model_drifted_event(unsigned int event);

/*
 * The host took these counters of this CPU (general-purpose counter i bit
 * i, Intel fixed counter i bit MSR_MODEL_FIXED_BIT + i; 0: none): they
 * count nothing, whatever they are programmed with, and raise no PMI;
 * their registers read and write as usual.
 */
void msr_model_set_host_owned(uint64_t counters);

/*
 * Events this CPU's counters counted after their last read and that a
 * write to the running counter then discarded.
 */
uint64_t msr_model_lost_events(void);

/*
 * Skid: an overflow's PMI comes only once count more events have been
 * counted on that CPU (0: at once).
 */
void msr_model_set_skid(uint64_t count);

/* AMD: each PMI's NMI is followed by a late duplicate once taken. */
void msr_model_set_late_nmis(bool late);

/*
 * Hardware (or hypervisors) that get something wrong, for the tests of
 * `perfmon selftest`, which must catch them: the LVT stays masked after a
 * PMI whatever is written to it; legacy counter writes load 32 bits
 * without extending the sign; the global enables do not gate counting.
 */
#define MSR_MODEL_QUIRK_LVT_STUCK       0x1
#define MSR_MODEL_QUIRK_NO_SIGN_EXTEND  0x2
#define MSR_MODEL_QUIRK_NO_GATE         0x4

void msr_model_set_quirks(unsigned int quirks);

/* A PMI through this CPU's LVT that no counter caused (no status bit). */
void msr_model_spurious_pmi(void);

/* An NMI from elsewhere (an IPI), whatever the LVT says. */
void msr_model_foreign_nmi(void);

/* Take one pending NMI of this CPU: true when there was one. */
bool msr_model_take_nmi(void);
unsigned int msr_model_nmis_pending(void);

/*
 * This CPU's PMIs that found the LVT masked with no NMI pending, and were
 * lost; PMIs merged into an NMI already pending; PMIs raised in all.
 */
unsigned int msr_model_pmis_lost(void);
unsigned int msr_model_pmis_merged(void);
unsigned int msr_model_pmis(void);

bool msr_model_lvt_masked(void);
unsigned int msr_model_nr_unmasks(void);

/* #GP raised by the safe accessors, and by the plain ones (a driver bug). */
unsigned int msr_model_nr_gp_safe(void);
unsigned int msr_model_nr_gp_unsafe(void);

/* MSR writes of any kind so far, on all CPUs. */
unsigned int msr_model_nr_writes(void);

/*
 * The accesses of each kind since msr_model_init(), on all CPUs, the
 * fault-safe ones and those that faulted included: what each costs a
 * guest is a VM exit.  The LVT's unmask is not among them (an MMIO store
 * in xAPIC mode): msr_model_nr_unmasks() counts it.
 */
struct msr_model_accesses {
    unsigned int rdmsr;
    unsigned int wrmsr;
    unsigned int rdpmc;
};

void msr_model_get_accesses(struct msr_model_accesses *accesses);

/*
 * Look at a register of this CPU without side effects (no drift): false
 * when the modelled CPU has no such MSR.
 */
bool msr_model_peek(uint32_t msr, uint64_t *valuep);

/* Set overflow-status bits of this CPU directly (stale or foreign bits). */
void msr_model_set_status(uint64_t bits);

#endif /* TESTS_UNIT_MSR_MODEL_H */
