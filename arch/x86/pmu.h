/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * x86 hardware performance counters: the definitions the Intel and AMD
 * drivers (pmu_intel.c, pmu_amd.c) share with each other, with their common
 * code (pmu.c), the boot glue (pmu_boot.c) and the tests.  Nothing outside arch/x86
 * and the tests includes this header: the kernel knows the hardware PMU
 * only as a perfmon device.  Each driver probes its PMU from CPUID, checks that
 * the counters really hold values before trusting CPUID, and registers a
 * struct perfmon_dev whose hw ids are the PMU's own overflow-status bit
 * numbers (Intel: general-purpose counters 0..n-1, fixed counters from 32;
 * AMD: counters 0..n-1).  Counter overflows arrive as NMIs through the
 * local APIC performance-counter LVT, or the core polls when there is no
 * usable interrupt.
 *
 * Hardware access goes through a small seam (pmu_msr_read/write, the safe
 * msr_*_safe() of msr.h, pmu_cpuid and lapic_pmc_unmask): the kernel maps
 * it onto the instructions, the host unit tests onto a register-level model
 * of the MSR space (tests/unit/msr_model.c).
 */

#ifndef ARCH_X86_PMU_H
#define ARCH_X86_PMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/msr.h"
#include "kern/perfmon.h"

/*
 * PERFEVTSEL layout, common to Intel IA32_PERFEVTSELx (SDM vol. 3B,
 * "Architectural Performance Monitoring Version 1", figure "Layout of
 * IA32_PERFEVTSELx MSRs") and AMD PerfEvtSeln (APM vol. 2, section 13.2.1,
 * "Performance Event-Select Registers").  AMD extends the event select to
 * 12 bits with bits 35:32.
 */
#define PMU_EVTSEL_EVENT            0x000000ffULL
#define PMU_EVTSEL_UMASK            0x0000ff00ULL
#define PMU_EVTSEL_USR              (1ULL << 16)
#define PMU_EVTSEL_OS               (1ULL << 17)
#define PMU_EVTSEL_EDGE             (1ULL << 18)
#define PMU_EVTSEL_PC               (1ULL << 19)    /* Intel pin control */
#define PMU_EVTSEL_INT              (1ULL << 20)
#define PMU_EVTSEL_ANY              (1ULL << 21)    /* Intel v3+ AnyThread */
#define PMU_EVTSEL_EN               (1ULL << 22)
#define PMU_EVTSEL_INV              (1ULL << 23)
#define PMU_EVTSEL_CMASK            0xff000000ULL
#define PMU_EVTSEL_AMD_EVENT_HI     0xf00000000ULL  /* event select 11:8 */
#define PMU_EVTSEL_AMD_GUEST_ONLY   (1ULL << 40)
#define PMU_EVTSEL_AMD_HOST_ONLY    (1ULL << 41)

/*
 * The bits of a raw event code a user may give: event select, unit mask,
 * edge, invert and counter mask.  USR/OS come from the event's mode flags,
 * INT and EN belong to the driver; anything else is refused with -EINVAL.
 */
#define PMU_INTEL_RAW_MASK  (PMU_EVTSEL_EVENT | PMU_EVTSEL_UMASK         \
                             | PMU_EVTSEL_EDGE | PMU_EVTSEL_INV          \
                             | PMU_EVTSEL_CMASK)
#define PMU_AMD_RAW_MASK    (PMU_INTEL_RAW_MASK | PMU_EVTSEL_AMD_EVENT_HI)

/*
 * IA32_FIXED_CTR_CTRL: a 4-bit field per fixed counter (SDM vol. 3B,
 * "Architectural Performance Monitoring Version 2", figure "Layout of
 * IA32_FIXED_CTR_CTRL MSR").
 */
#define PMU_FIXED_CTRL_OS           0x1ULL
#define PMU_FIXED_CTRL_USR          0x2ULL
#define PMU_FIXED_CTRL_ANY          0x4ULL
#define PMU_FIXED_CTRL_PMI          0x8ULL
#define PMU_FIXED_CTRL_SHIFT(i)     (4 * (i))
#define PMU_FIXED_CTRL_FIELD(i)     (0xfULL << PMU_FIXED_CTRL_SHIFT(i))

/* Overflow status and global control: fixed counter i is bit 32 + i. */
#define PMU_INTEL_FIXED_BASE        32

/* IA32_PERF_CAPABILITIES bit 13: IA32_A_PMCx full-width writes. */
#define PMU_PERF_CAP_FW_WRITE       (1ULL << 13)

/*
 * Intel pre-defined architectural events (SDM vol. 3B, table "UMask and
 * Event Select Encodings for Pre-Defined Architectural Performance
 * Events"): index = bit of CPUID.0AH:EBX, which is set when the event is
 * NOT available.  Their encodings are in the driver's event table
 * (pmu_intel.c).
 */
#define PMU_INTEL_ARCH_CYCLES       0
#define PMU_INTEL_ARCH_INSTRUCTIONS 1
#define PMU_INTEL_ARCH_REF_CYCLES   2
#define PMU_INTEL_ARCH_LLC_REF      3
#define PMU_INTEL_ARCH_LLC_MISS     4
#define PMU_INTEL_ARCH_BRANCH       5
#define PMU_INTEL_ARCH_BRANCH_MISS  6
#define PMU_INTEL_NR_ARCH_EVENTS    7

/*
 * CPUID.0AH decoding (SDM vol. 2A, CPUID, "Architectural Performance
 * Monitoring Leaf").
 */
#define PMU_CPUID_0A_VERSION(eax)       ((eax) & 0xff)
#define PMU_CPUID_0A_NR_GP(eax)         (((eax) >> 8) & 0xff)
#define PMU_CPUID_0A_GP_WIDTH(eax)      (((eax) >> 16) & 0xff)
#define PMU_CPUID_0A_EBX_LEN(eax)       (((eax) >> 24) & 0xff)
#define PMU_CPUID_0A_NR_FIXED(edx)      ((edx) & 0x1f)
#define PMU_CPUID_0A_FIXED_WIDTH(edx)   (((edx) >> 5) & 0xff)

/* CPUID leaf 1 bits the drivers look at. */
#define PMU_CPUID_1_ECX_PDCM        (1U << 15)
#define PMU_CPUID_1_ECX_HYPERVISOR  (1U << 31)
#define PMU_CPUID_1_EDX_MSR         (1U << 5)
#define PMU_CPUID_1_EDX_APIC        (1U << 9)

/* AMD: CPUID 8000_0001h ECX[23] PerfCtrExtCore, 8000_0022h PerfMonV2. */
#define PMU_CPUID_X1_ECX_PERFCTR_CORE   (1U << 23)
#define PMU_CPUID_X22_EAX_PERFMON_V2    (1U << 0)
#define PMU_CPUID_X22_EBX_NR_CORE(ebx)  ((ebx) & 0xf)

/*
 * An AMD raw code from a 12-bit event select and a unit mask: bits 7:0 of
 * the select go to PerfEvtSel[7:0], bits 11:8 to PerfEvtSel[35:32] (APM
 * vol. 2, section 13.2.1).
 */
#define PMU_AMD_RAW(event, umask)                                       \
    ((((uint64_t)(event) & 0xf00) << 24) | ((uint64_t)(event) & 0xff)   \
     | (((uint64_t)(umask) & 0xff) << 8))

/* AMD counters are 48 bits wide (APM vol. 2, section 13.2.1). */
#define PMU_AMD_WIDTH               48
#define PMU_AMD_NR_LEGACY           4
#define PMU_AMD_NR_CORE             6

/* Limits of the drivers' tables. */
#define PMU_MAX_GP                  PERFMON_DEV_MAX_PMCS
#define PMU_MAX_FIXED               3   /* instructions, cycles, ref cycles */

/*
 * What the shell shows about the hardware PMU (`perfmon info`), filled
 * once at boot by the probe and constant afterwards.
 */
struct pmu_caps {
    bool present;               /* a hardware device is registered */
    const char *driver;         /* "intel", "amd", or NULL */
    const char *reason;         /* why there is none, when !present */
    unsigned int vendor;        /* CPU_VENDOR_* */
    unsigned int family;
    unsigned int model;
    unsigned int version;       /* Intel arch perfmon version; AMD: 1, or
                                   2 with PerfMonV2 */
    bool core_ext;              /* AMD core performance counter extension */
    unsigned int nr_gp;         /* general-purpose counters in use */
    unsigned int gp_width;      /* their physical width */
    unsigned int nr_fixed;      /* fixed counters in use */
    unsigned int fixed_width;
    unsigned int width;         /* counter width the core sees */
    bool global_ctrl;           /* global control and status registers */
    bool full_width_write;      /* Intel IA32_A_PMCx */
    bool overflow_nmi;          /* overflow NMIs; false: the core polls */
    uint32_t arch_events;       /* Intel: available architectural events */
    uint64_t fw_busy;           /* hw ids the firmware left counting on
                                   some CPU: not ours */
};

/*
 * A vendor driver, as pmu_probe_cpus() drives it.  Counters are named by
 * their hw ids (bit i of a counter mask: hw id i).
 *
 * probe: on the boot CPU, at boot, before any other call: read CPUID,
 *   check that the counters work (on counters the firmware does not use),
 *   fill *caps with what it found (always: also the reason when it
 *   declines) and return 0 with the candidate counters known, or -ENODEV
 *   when there is no working PMU (nothing is left programmed).  use_nmi
 *   false asks for a device without overflow interrupt (polled).
 * cpu_probe: then on each CPU, the boot CPU included, interrupts disabled,
 *   with the fault-safe accessors only: the candidates this CPU has (its
 *   own CPUID, MSRs that answer) and that are free; *busyp receives those
 *   the firmware left enabled.  Writes nothing.
 * commit: then once, on the counters every CPU has and none uses
 *   (usable): make the device ready to register and finish *caps; -ENODEV
 *   with caps->reason when nothing usable is left.
 * cpu_init: on each CPU after a successful commit, interrupts disabled:
 *   stop every counter of ours, clear their stale overflow status, open
 *   their global enables; what is not ours stays as it is.
 *
 * ctl_msr, ctr_msr: for the self-test (pmu_selftest.c), the MSRs of
 *   counter hw_id: its event select (0 for an Intel fixed counter, whose
 *   control is a field of IA32_FIXED_CTR_CTRL) and its count (Intel's
 *   legacy alias for a general-purpose counter).
 * global_ctrl_msr, global_status_msr, global_ack_msr: the global enable,
 *   overflow status and acknowledgement registers, when caps.global_ctrl.
 *
 * Loading a counter (the self-tests' wraps) is the device's write
 * operation: one way to do it, one set of rules.
 */
struct pmu_driver {
    const char *name;
    int (*probe)(struct pmu_caps *caps, bool use_nmi);
    uint64_t (*cpu_probe)(uint64_t *busyp);
    int (*commit)(struct pmu_caps *caps, uint64_t usable);
    void (*cpu_init)(void);
    uint32_t (*ctl_msr)(unsigned int hw_id);
    uint32_t (*ctr_msr)(unsigned int hw_id);
    uint32_t global_ctrl_msr;
    uint32_t global_status_msr;
    uint32_t global_ack_msr;
    struct perfmon_dev *dev;
};

extern const struct pmu_driver pmu_intel_driver;
extern const struct pmu_driver pmu_amd_driver;

/*
 * The hardware seam.  pmu_msr_read/pmu_msr_write are for MSRs the probe
 * has shown to exist; the probe itself uses msr_read_safe/msr_write_safe.
 * pmu_cpuid returns the four registers of a CPUID leaf.
 */
#ifdef TALLY_HOST_TEST

uint64_t pmu_msr_read(uint32_t msr);
void pmu_msr_write(uint32_t msr, uint64_t value);
void pmu_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t regs[4]);

#else /* TALLY_HOST_TEST */

#include "arch/x86/cpu.h"

static inline uint64_t
pmu_msr_read(uint32_t msr)
{
    return msr_read(msr);
}

static inline void
pmu_msr_write(uint32_t msr, uint64_t value)
{
    msr_write(msr, value);
}

static inline void
pmu_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t regs[4])
{
    cpu_cpuid(leaf, subleaf, &regs[0], &regs[1], &regs[2], &regs[3]);
}

#endif /* TALLY_HOST_TEST */

/*
 * Family and model from CPUID leaf 1 EAX (SDM vol. 2A, CPUID, "Version
 * Information"): the extended fields count from family 0FH on (Intel
 * also adds the extended model for family 06H).
 */
static inline unsigned int
pmu_cpuid_family(uint32_t eax)
{
    unsigned int family = (eax >> 8) & 0xf;

    return (family == 0xf) ? family + ((eax >> 20) & 0xff) : family;
}

static inline unsigned int
pmu_cpuid_model(uint32_t eax)
{
    unsigned int family = (eax >> 8) & 0xf;
    unsigned int model = (eax >> 4) & 0xf;

    if (family == 0x6 || family == 0xf) {
        model |= ((eax >> 16) & 0xf) << 4;
    }

    return model;
}

/*
 * What both drivers do the same way (pmu.c).
 *
 * pmu_popcount: the bits set in x.
 * pmu_mode_bits: the bits that select the counting modes of PERFMON_EF_MODE
 *   flags, os for the kernel and usr for user mode (PMU_EVTSEL_OS and
 *   PMU_EVTSEL_USR in a PERFEVTSEL, PMU_FIXED_CTRL_* in a fixed counter's
 *   field).
 * pmu_flags_valid: whether flags are mode bits, at least one (what the
 *   counters operations accept).
 * pmu_alloc, pmu_free: the alloc and free operations of both drivers:
 *   reserve in *alloc_mask a counter among those dev's counters operation
 *   names for raw_event (pmu_alloc_pick's rule), release it.
 * pmu_alloc_pick: the allocators' one rule, for counter constraints of
 *   any kind (AMD family 15h's, Intel's fixed counters): reserve in
 *   *alloc_mask the lowest free counter of those in allowed that can count
 *   the event, one of prefer (a subset, such as the fixed counter that
 *   counts it) when one is free.  Returns 0 with its hw id in *hw_idp,
 *   -ENOENT when no counter can count the event (allowed empty), -EAGAIN
 *   when all that can are taken.  Allocation is per event, first come
 *   first served, without moving events already placed: an event needing
 *   a counter an unconstrained one took gets -EAGAIN.
 * pmu_msr_holds: whether an MSR keeps each of nr patterns written to it,
 *   through the fault-safe accessors; it is left holding 0 either way.
 * pmu_active_*: the counters started on each CPU (hw id bits), written by
 *   their CPU with interrupts disabled and read by its overflow handler.
 * pmu_probe_reset: the state a probe starts from: no active counter on any
 *   CPU, no PMI counted.
 * pmu_status_drop: for a start (the counter loaded, not yet enabled), on
 *   drivers that take overflows from drv's global status: clear counter
 *   hw_id's status bit if its previous user left it set (an overflow
 *   whose PMI is still on its way, or was lost), so that the handler never
 *   reports it for the new user.  The bit is read first and written only
 *   when set, as the handler does: some emulators fault on clearing a bit
 *   that is clear.
 * pmu_handle_overflow_intr: the handle_overflow_intr operation of both
 *   drivers, for their exist counters.  With topbit (no status register:
 *   Intel version 1, AMD without PerfMonV2) the counters are kept armed
 *   with bit top set, and an active one of this CPU whose bit top is clear
 *   has wrapped: rearm(hw_id, value) arms it again; the LVT is unmasked
 *   first, as the counters run on meanwhile.  Else drv's global
 *   enable is frozen for ours (the firmware's bits kept) while the status
 *   is read and acknowledged and the core folds and re-arms them, and
 *   pmu_overflow_intr_end restores it.  Returns the counters that
 *   overflowed, the PMI counted; 0 for an interrupt not the driver's,
 *   which then ends at once (pmu_overflow_intr_end).
 * pmu_overflow_intr_end: the overflow_intr_end operation of both drivers,
 *   also called by their handlers for an interrupt that was not theirs:
 *   unmask the local APIC's performance-counter LVT entry, which an Intel
 *   PMI masks on delivery (unless the handler did), then restore what
 *   pmu_freeze froze.
 * pmu_nr_pmis: overflow interrupts claimed, on all CPUs.
 */
unsigned int pmu_popcount(uint64_t x);
uint64_t pmu_mode_bits(unsigned int flags, uint64_t os, uint64_t usr);
bool pmu_flags_valid(unsigned int flags);
int pmu_alloc(struct perfmon_dev *dev, uint64_t *alloc_mask,
              unsigned int *hw_idp, uint64_t raw_event, unsigned int flags);
void pmu_free(uint64_t *alloc_mask, unsigned int hw_id);
int pmu_alloc_pick(uint64_t *alloc_mask, uint64_t allowed, uint64_t prefer,
                   unsigned int *hw_idp);
bool pmu_msr_holds(uint32_t msr, const uint64_t *patterns, unsigned int nr);
void pmu_active_add(unsigned int hw_id);
void pmu_active_remove(unsigned int hw_id);
uint64_t pmu_active_get(void);
void pmu_probe_reset(void);
void pmu_status_drop(const struct pmu_driver *drv, unsigned int hw_id);
uint64_t pmu_handle_overflow_intr(struct perfmon_dev *dev,
                                  const struct pmu_driver *drv, bool topbit,
                                  uint64_t top,
                                  void (*rearm)(unsigned int hw_id,
                                                uint64_t value),
                                  uint64_t exist);
void pmu_overflow_intr_end(struct perfmon_dev *dev);
uint64_t pmu_nr_pmis(void);

/*
 * The whole probe: drv->probe on this CPU (the boot CPU, thread context),
 * drv->cpu_probe on every CPU through run_on (xcall_call in the kernel:
 * it runs fn(arg) on cpu with interrupts disabled and returns 0, or an
 * error when it cannot), then drv->commit with the counters all CPUs have
 * and none uses.  Counters the firmware left counting, and CPUs whose
 * counters differ from the boot CPU's (a hybrid part's small cores), are
 * reported in the log, one line each; caps->fw_busy says which were left
 * alone.  Returns 0 or the driver's -ENODEV (caps->reason says why).
 */
typedef int (*pmu_run_on_fn_t)(void (*fn)(void *arg), void *arg,
                               unsigned int cpu);

int pmu_probe_cpus(const struct pmu_driver *drv, struct pmu_caps *caps,
                   bool use_nmi, pmu_run_on_fn_t run_on);

/*
 * A counter mask as the log shows it: "0-3, fixed 0-2" (fixed counters
 * from hw id fixed_base on; 0: none), "none" when empty.
 */
void pmu_fmt_counters(char *buf, size_t size, uint64_t mask,
                      unsigned int fixed_base);

/*
 * The checks of `perfmon selftest` the core's API cannot express
 * (pmu_selftest.c): the selftest operation of both drivers' devices.
 */
struct perfmon_selftest;

void pmu_selftest(struct perfmon_dev *dev, struct perfmon_selftest *st);

/* The boot glue (pmu_boot.c). */

/* The capability summary (thread context, after boot); never NULL. */
const struct pmu_caps *pmu_get_caps(void);

/* The registered hardware device, or NULL when there is none. */
struct perfmon_dev *pmu_get_dev(void);

/* The driver in use, or NULL. */
const struct pmu_driver *pmu_get_driver(void);

INIT_OP_DECLARE(pmu_setup);

#endif /* ARCH_X86_PMU_H */
