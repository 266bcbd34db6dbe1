/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * x86 branch records: the branch-record driver (lbr.c) of the perfmon core
 * (see "Branch-record drivers" in kern/perfmon.h), with three back ends
 * chosen at boot from CPUID and IA32_PERF_CAPABILITIES: Intel's legacy
 * LBR stack (lbr_intel.c), Intel Architectural LBR (lbr_arch.c) and AMD's
 * LbrExtV2 (lbr_amd.c).  The hardware keeps the last branches taken; on
 * the PMU's overflow interrupt it stops recording (freezes), the driver's
 * callback in the core's interrupt registry reads the records, hands them
 * to the samples of that interrupt and lets the hardware record again.
 *
 * Nothing outside arch/x86 and the tests includes this header.  Hardware
 * access goes through the seam of pmu.h (pmu_msr_read/write, the safe
 * accessors for the probe, pmu_cpuid), so that the host tests run the
 * back ends on the register-level model (tests/unit/msr_model.c).
 */

#ifndef ARCH_X86_LBR_H
#define ARCH_X86_LBR_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/pmu.h"
#include "kern/perfmon.h"

/* The deepest stack the driver reads: what a sample carries. */
#define LBR_MAX_DEPTH               PERFMON_MAX_BRANCHES

/*
 * IA32_DEBUGCTL (SDM vol. 3B, "IA32_DEBUGCTL MSR"; AMD's DebugCtl has LBR
 * at bit 0 too, and the freeze bit with LbrAndPmcFreeze).
 */
#define LBR_DEBUGCTL_LBR            (1ULL << 0)
#define LBR_DEBUGCTL_BTF            (1ULL << 1)
#define LBR_DEBUGCTL_FREEZE_LBRS    (1ULL << 11)    /* ..._ON_PMI */
#define LBR_DEBUGCTL_FREEZE_PERFMON (1ULL << 12)

/*
 * The "LBRs frozen" bit of the PMU's global overflow status (Intel
 * IA32_PERF_GLOBAL_STATUS from architectural perfmon version 4, SDM vol.
 * 3B, "LBR freeze"; AMD PerfCntrGlobalStatus with LbrAndPmcFreeze),
 * cleared by writing it to the status reset register (Intel 0x390, AMD
 * PerfCntrGlobalStatusClr).  While it is set the LBRs record nothing.
 */
#define LBR_STATUS_FROZEN           (1ULL << 58)

/*
 * MSR_LBR_SELECT (Intel from Nehalem; AMD LBR_SELECT the same bits): a set
 * bit SUPPRESSES that kind of branch (SDM vol. 3B, table "MSR_LBR_SELECT
 * for Intel microarchitecture code name Nehalem").
 */
#define LBR_SEL_CPL_EQ_0            (1ULL << 0)     /* in ring 0 */
#define LBR_SEL_CPL_NEQ_0           (1ULL << 1)     /* in rings 1-3 */
#define LBR_SEL_JCC                 (1ULL << 2)
#define LBR_SEL_NEAR_REL_CALL       (1ULL << 3)
#define LBR_SEL_NEAR_IND_CALL       (1ULL << 4)
#define LBR_SEL_NEAR_RET            (1ULL << 5)
#define LBR_SEL_NEAR_IND_JMP        (1ULL << 6)
#define LBR_SEL_NEAR_REL_JMP        (1ULL << 7)
#define LBR_SEL_FAR                 (1ULL << 8)
#define LBR_SEL_MASK                0x1ffULL

/* Legacy LBR formats, IA32_PERF_CAPABILITIES[5:0] (SDM vol. 3B, 17.4.8.1). */
#define LBR_CAP_FORMAT(cap)         ((unsigned int)((cap) & 0x3f))
#define LBR_FMT_32                  0   /* one MSR: FROM 31:0, TO 63:32 */
#define LBR_FMT_LIP                 1   /* 64-bit addresses, no flags */
#define LBR_FMT_EIP                 2
#define LBR_FMT_EIP_FLAGS           3   /* FROM[63] mispredicted */
#define LBR_FMT_EIP_FLAGS2          4   /* FROM[63:61] mispred, TSX */
#define LBR_FMT_INFO                5   /* LBR_INFO: mispred, TSX, cycles */
#define LBR_FMT_TIME                6   /* FROM[63]; TO[63:48] cycles */
#define LBR_FMT_INFO2               7   /* LBR_INFO without TSX */

/* LBR_INFO (legacy formats 5 and 7, and Arch LBR's IA32_LBR_x_INFO). */
#define LBR_INFO_MISPRED            (1ULL << 63)
#define LBR_INFO_CYC_VALID          (1ULL << 60)    /* Arch LBR */
#define LBR_INFO_BR_TYPE(info)      ((unsigned int)(((info) >> 56) & 0xf))
#define LBR_INFO_CYCLES             0xffffULL
#define LBR_FROM_MISPRED            (1ULL << 63)    /* formats 3, 4, 6 */

/*
 * Architectural LBR (SDM vol. 3B, "Architectural Last Branch Records";
 * CPUID.(EAX=07H,ECX=0):EDX[19] and leaf 1CH).
 */
#define LBR_CPUID_7_EDX_ARCH_LBR    (1U << 19)
#define LBR_CPUID_1C_DEPTHS(eax)    ((eax) & 0xff)  /* bit n: 8(n+1) */
#define LBR_CPUID_1C_EBX_CPL        (1U << 0)       /* CPL filtering */
#define LBR_CPUID_1C_EBX_FILTER     (1U << 1)       /* branch filtering */
#define LBR_CPUID_1C_ECX_MISPRED    (1U << 0)
#define LBR_CPUID_1C_ECX_TIMED      (1U << 1)
#define LBR_CPUID_1C_ECX_TYPE       (1U << 2)

/* IA32_LBR_CTL: enable-sense (a set bit records that kind). */
#define LBR_CTL_LBREN               (1ULL << 0)
#define LBR_CTL_OS                  (1ULL << 1)
#define LBR_CTL_USR                 (1ULL << 2)
#define LBR_CTL_CALL_STACK          (1ULL << 3)
#define LBR_CTL_JCC                 (1ULL << 16)
#define LBR_CTL_NEAR_REL_JMP        (1ULL << 17)
#define LBR_CTL_NEAR_IND_JMP        (1ULL << 18)
#define LBR_CTL_NEAR_REL_CALL       (1ULL << 19)
#define LBR_CTL_NEAR_IND_CALL       (1ULL << 20)
#define LBR_CTL_NEAR_RET            (1ULL << 21)
#define LBR_CTL_OTHER_BRANCH        (1ULL << 22)
#define LBR_CTL_KINDS               0x7f0000ULL

/* IA32_LBR_x_INFO branch types (LBR_INFO_BR_TYPE). */
#define LBR_BR_TYPE_JCC             0
#define LBR_BR_TYPE_NEAR_IND_JMP    1
#define LBR_BR_TYPE_NEAR_REL_JMP    2
#define LBR_BR_TYPE_NEAR_IND_CALL   3
#define LBR_BR_TYPE_NEAR_REL_CALL   4
#define LBR_BR_TYPE_NEAR_RET        5

/*
 * AMD LbrExtV2 (APM vol. 2, "Last Branch Stack"; CPUID Fn8000_0022:
 * EAX[1] LbrExtV2, EAX[2] LbrAndPmcFreeze, EBX[9:4] the stack's depth).
 * Entry i is the MSR pair FROM 0xC0010300 + 2i, TO + 1; entry 0 is the
 * newest.  FROM: bits 57:0 the address, sign-extended above, bit 63
 * mispredicted.  TO: bits 57:0 the address, bit 62 speculative, bit 63
 * valid (neither: no branch; speculative alone: a wrong-path branch).
 */
#define LBR_CPUID_X22_EAX_LBR_V2    (1U << 1)
#define LBR_CPUID_X22_EAX_FREEZE    (1U << 2)
#define LBR_CPUID_X22_EBX_DEPTH(ebx) (((ebx) >> 4) & 0x3f)
#define LBR_AMD_DBG_EXTN_LBRV2EN    (1ULL << 6)
#define LBR_AMD_TO_VALID            (1ULL << 63)
#define LBR_AMD_TO_SPEC             (1ULL << 62)
#define LBR_AMD_IP_BITS             58

/*
 * What a back end's probe found, written once at boot (thread context)
 * and constant afterwards.
 *
 * name: the back end ("intel", "arch", "amd"); what: one phrase for the
 * log and `perfmon info` ("Skylake-class, format 5 (LBR_INFO)"); reason:
 * why there is none, when the probe declines; depth: the entries read;
 * kinds: the PERFMON_BRF_* kinds its filter can select (ANY always);
 * modes: whether it can record one privilege level without the other;
 * any_dev: capture on the overflow interrupts of any device (a test's fake
 * back end), not only on the hardware PMU's, whose interrupt freezes the
 * records.
 */
struct lbr_caps {
    const char *name;
    const char *what;
    const char *reason;
    unsigned int depth;
    unsigned int kinds;
    bool modes;
    bool any_dev;
};

/*
 * A back end.  Processor-local operations act on the calling CPU with
 * interrupts disabled; the driver calls them in this order on each CPU:
 * cpu_start, then any number of cpu_reset and (NMI) capture, then
 * cpu_stop.
 *
 * probe (boot CPU, thread context): read CPUID and the capability MSRs,
 *   check with the fault-safe accessors that the MSRs exist and hold what
 *   is written (a hypervisor may advertise records it does not keep), and
 *   fill *caps: 0, or -ENODEV with caps->reason.  Leaves the records off.
 * cpu_check (each CPU, interrupts disabled, fault-safe accessors only):
 *   NULL when this CPU's records answer as the boot CPU's, else why not.
 * check_filter (any context): NULL when filter (complete, see
 *   kern/perfmon.h) can be programmed, else one line saying why not.
 * cpu_start: forget the records, program filter, record, freezing on the
 *   PMU's interrupt.
 * cpu_stop: stop recording, forget the records, leave nothing frozen.
 * cpu_reset: forget the records (context switch), recording on.
 * capture (NMI context, the PMU's interrupt, or any with caps.any_dev):
 *   freeze the records if the interrupt did not, read them into entries
 *   newest first, and only then let the hardware record again; returns
 *   how many it stored (at most caps.depth).
 */
struct lbr_backend {
    int (*probe)(struct lbr_caps *caps);
    const char *(*cpu_check)(void);
    const char *(*check_filter)(unsigned int filter);
    void (*cpu_start)(unsigned int filter);
    void (*cpu_stop)(void);
    void (*cpu_reset)(void);
    unsigned int (*capture)(struct perfmon_branch *entries);
};

extern const struct lbr_backend lbr_intel_backend;
extern const struct lbr_backend lbr_arch_backend;
extern const struct lbr_backend lbr_amd_backend;

/*
 * What the back ends share (lbr.c).
 *
 * lbr_sext: value sign-extended from bit (63 leaves it as it is).
 * lbr_select: the suppress-sense LBR_SELECT value (Intel legacy, AMD) that
 *   records what filter asks for.
 * lbr_flags: a branch's perfmon flags: mispredicted or not when known,
 *   cycles (saturated; 0: unknown), type (PERFMON_BRT_*).
 * lbr_pmu_version: the Intel architectural perfmon version of CPUID leaf
 *   0AH (0 when there is none).
 * lbr_debugctl_holds: the probe's check that IA32_DEBUGCTL keeps bits
 *   (fault-safe accessors; left with them clear): NULL, or why not.
 * lbr_select_holds: the probe's check that an LBR_SELECT (Intel legacy,
 *   AMD: the same fields) keeps the values written to it.
 * lbr_set_freeze: DEBUGCTL's freeze-on-PMI bit set or cleared, the other
 *   bits kept.
 * lbr_unfreeze_stale: a freeze left by an interrupt nobody captured (the
 *   status MSR's LBR_STATUS_FROZEN) cleared through clr_msr.
 */
uint64_t lbr_sext(uint64_t value, unsigned int bit);
uint64_t lbr_select(unsigned int filter);
uint64_t lbr_flags(bool known, bool mispred, uint64_t cycles,
                   unsigned int type);
unsigned int lbr_pmu_version(void);
const char *lbr_debugctl_holds(uint64_t bits);
bool lbr_select_holds(uint32_t msr);
void lbr_set_freeze(bool on);
void lbr_unfreeze_stale(uint32_t status_msr, uint32_t clr_msr);

/*
 * The driver (lbr.c).
 *
 * lbr_probe: choose and probe the back end for this CPU (its vendor,
 *   CPUID), check every CPU through run_on (see pmu_probe_cpus() in
 *   pmu.h), and register the driver with the core when the hardware PMU
 *   dev raises overflow interrupts to capture on; otherwise say why not
 *   (perfmon_branch_set_absent()).  One line in the log either way.
 *   Returns 0 or -ENODEV.  Boot, thread context (lbr_setup calls it).
 * lbr_install: put backend (a test's fake one, caps its probe result) in
 *   place of the probed one, registering the driver if none was; NULL
 *   puts the probed one back (unregistering the driver if there was
 *   none).  -EBUSY while events record branches.  Thread context.
 * lbr_nr_poisoned: interrupts whose callback found its CPU's buffer
 *   poisoned, i.e. ran after the callback was unregistered and the buffer
 *   given up (a bug of the registry; the in-kernel tests check it).
 */
int lbr_probe(struct perfmon_dev *dev, pmu_run_on_fn_t run_on);
int lbr_install(const struct lbr_backend *backend,
                const struct lbr_caps *caps);
uint64_t lbr_nr_poisoned(void);

#ifdef TALLY_HOST_TEST
/* Forget everything, as at boot (host tests only). */
void lbr_reset(void);
#endif

#endif /* ARCH_X86_LBR_H */
