/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Intel architectural performance monitoring driver (SDM vol. 3B, chapter
 * 20, "Architectural Performance Monitoring", versions 1 to 5).  It offers
 * the general-purpose counters IA32_PMCx and, from version 2 on, the fixed
 * counters for instructions, core cycles and reference cycles, so that the
 * general counters stay free for everything else.
 *
 * Counters run free and the core extends them to 64 bits.  From version 2
 * on, overflows are read from IA32_PERF_GLOBAL_STATUS.  Version 1 has no
 * status register: there the driver shows the core fewer bits than the
 * counter holds (width - 1, at most 31 without full-width writes) and keeps
 * the bits above armed (all ones), so that the counter overflows, and
 * raises its PMI, exactly when the value the core sees wraps; a counter
 * whose top bit is clear has overflowed.
 *
 * The probe runs on every CPU (pmu_probe_cpus): the boot CPU's CPUID gives
 * the candidates, each CPU keeps those it has and the firmware does not
 * use, and the device gets the counters every CPU has; counter masks may
 * have holes.
 *
 * Locking: alloc and free run under the core's allocator lock; start, stop,
 * read and the overflow handler act on the calling CPU with interrupts
 * disabled.  The per-CPU active masks are written by their CPU only and
 * read by its NMI handler.
 *
 * Over 900 lines: one PMU's facts (CPUID decoding, the event table, the
 * counters' write rules, the PMI order) are read in one place; what both
 * drivers share is in pmu.c.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "arch/x86/pmu.h"
#include "arch/x86/pmu_evtab.h"
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

/*
 * The probed PMU, written at boot by probe and commit (thread context,
 * before registration; cpu_probe only reads it) and constant afterwards,
 * except alloc_mask (the core's allocator lock).  Between probe and commit
 * nr_gp and fixed_map describe the boot CPU's candidates (cand_mask);
 * after commit, the counters in use (exist_mask), which may have holes
 * where the firmware keeps a counter.
 */
struct pmu_intel {
    unsigned int version;
    unsigned int nr_gp;
    unsigned int gp_width;
    unsigned int nr_fixed;
    unsigned int fixed_width;
    uint32_t fixed_map;         /* fixed counters, bit i = counter i */
    uint32_t avail;             /* available architectural events */
    uint64_t cnt_mask;          /* physical counter bits */
    uint64_t val_mask;          /* counter bits the core sees */
    uint64_t cand_mask;         /* hw ids the boot CPU offers */
    uint64_t exist_mask;        /* hw ids (= status bits) of our counters */
    bool fw_write;
    bool fixed_assumed;         /* fixed counters CPUID did not report */
    bool nmi;
    bool topbit;                /* version 1 overflow detection */
    uint64_t alloc_mask;
};

/* General-purpose counters are hw ids 0..31 (status bits below 32). */
#define PMU_INTEL_GP_BITS       ((1ULL << PMU_INTEL_FIXED_BASE) - 1)

static struct pmu_intel pmu_intel;

/*
 * Each CPU's IA32_FIXED_CTR_CTRL as the driver last wrote it: the driver
 * is the only writer (the firmware's fields were read once, at cpu_init),
 * so a fixed counter starts and stops with one write and no read.
 * Written by its CPU with interrupts disabled.
 */
static uint64_t pmu_intel_fixed_ctrl[CPU_MAX];

static struct perfmon_dev pmu_intel_dev;

#define PMU_INTEL_NONE          (-1)

/*
 * The events the driver knows, one row each: the generic event it is
 * (PMU_INTEL_NONE for a raw-only code), its code (event | umask << 8), the
 * CPUID.0AH:EBX bit that says whether general counters can count it, and
 * the fixed counter that counts it.
 *
 * Reference cycles: 3CH/01H on a general counter ticks at the bus or
 * crystal clock, not at the TSC rate, so the generic event is fixed
 * counter 2 alone, named by the pseudo code 0300H that no general counter
 * accepts; 3CH/01H stays available as a raw code.
 */
static const struct pmu_intel_event {
    int id;
    uint64_t code;
    int arch;
    int fixed;
} pmu_intel_events[] = {
    { PERFMON_EV_INSTRUCTION, 0x00c0, PMU_INTEL_ARCH_INSTRUCTIONS, 0 },
    { PERFMON_EV_CYCLE, 0x003c, PMU_INTEL_ARCH_CYCLES, 1 },
    { PERFMON_EV_REF_CYCLE, 0x0300, PMU_INTEL_NONE, 2 },
    { PMU_INTEL_NONE, 0x013c, PMU_INTEL_ARCH_REF_CYCLES, PMU_INTEL_NONE },
    { PERFMON_EV_CACHE_REF, 0x4f2e, PMU_INTEL_ARCH_LLC_REF, PMU_INTEL_NONE },
    { PERFMON_EV_CACHE_MISS, 0x412e, PMU_INTEL_ARCH_LLC_MISS, PMU_INTEL_NONE },
    { PERFMON_EV_BRANCH, 0x00c4, PMU_INTEL_ARCH_BRANCH, PMU_INTEL_NONE },
    { PERFMON_EV_BRANCH_MISS, 0x00c5, PMU_INTEL_ARCH_BRANCH_MISS,
      PMU_INTEL_NONE },
};

static bool
pmu_intel_is_fixed(unsigned int hw_id)
{
    return hw_id >= PMU_INTEL_FIXED_BASE;
}

static bool
pmu_intel_hw_id_valid(unsigned int hw_id)
{
    return hw_id < 64 && (pmu_intel.exist_mask & (1ULL << hw_id)) != 0;
}

static uint32_t
pmu_intel_ctr_msr(unsigned int hw_id)
{
    if (pmu_intel_is_fixed(hw_id)) {
        return MSR_IA32_FIXED_CTR0 + (hw_id - PMU_INTEL_FIXED_BASE);
    }

    return MSR_IA32_PMC0 + hw_id;
}

/* RDPMC's index of a counter: fixed counters through bit 30. */
static uint32_t
pmu_intel_rdpmc_index(unsigned int hw_id)
{
    if (pmu_intel_is_fixed(hw_id)) {
        return MSR_RDPMC_FIXED | (hw_id - PMU_INTEL_FIXED_BASE);
    }

    return hw_id;
}

/* Write this CPU's IA32_FIXED_CTR_CTRL, and remember it. */
static void
pmu_intel_fixed_ctrl_set(uint64_t ctrl)
{
    pmu_msr_write(MSR_IA32_FIXED_CTR_CTRL, ctrl);
    pmu_intel_fixed_ctrl[cpu_id()] = ctrl;
}

/*
 * The physical value that shows value to the core and, in top-bit mode,
 * has every bit above the visible ones set, so the counter overflows when
 * the visible value wraps.
 */
static uint64_t
pmu_intel_armed(uint64_t value)
{
    value &= pmu_intel.val_mask;

    if (pmu_intel.topbit) {
        value |= pmu_intel.cnt_mask & ~pmu_intel.val_mask;
    }

    return value;
}

/*
 * Whether a write through the legacy IA32_PMCx alias, which loads bits 31:0
 * sign-extended (SDM vol. 3B, "Full-Width Writes to Performance Counter
 * Registers"), leaves the counter holding exactly value.
 */
static bool
pmu_intel_legacy_writable(uint64_t value)
{
    uint64_t loaded = (uint64_t)(int64_t)(int32_t)(uint32_t)value;

    return (loaded & pmu_intel.cnt_mask) == value;
}

/* Load a counter (physical value), this CPU.  -EINVAL if it cannot be. */
static int
pmu_intel_ctr_write(unsigned int hw_id, uint64_t value)
{
    if ((value & ~pmu_intel.cnt_mask) != 0) {
        return -EINVAL;
    }

    if (pmu_intel_is_fixed(hw_id)) {
        /* Fixed counters take every implemented bit. */
        pmu_msr_write(pmu_intel_ctr_msr(hw_id), value);
    } else if (pmu_intel.fw_write) {
        pmu_msr_write(MSR_IA32_A_PMC0 + hw_id, value);
    } else if (pmu_intel_legacy_writable(value)) {
        pmu_msr_write(MSR_IA32_PMC0 + hw_id, value & 0xffffffffULL);
    } else {
        return -EINVAL;
    }

    return 0;
}

static uint64_t
pmu_intel_fixed_bits(unsigned int flags)
{
    uint64_t bits = pmu_mode_bits(flags, PMU_FIXED_CTRL_OS,
                                  PMU_FIXED_CTRL_USR);

    if (pmu_intel.nmi) {
        bits |= PMU_FIXED_CTRL_PMI;
    }

    return bits;
}

static bool
pmu_intel_arch_avail(int index)
{
    return index != PMU_INTEL_NONE && (pmu_intel.avail & (1U << index)) != 0;
}

static bool
pmu_intel_has_fixed(int index)
{
    return index != PMU_INTEL_NONE
           && (pmu_intel.fixed_map & (1U << index)) != 0;
}

/* The row of generic event id, or NULL. */
static const struct pmu_intel_event *
pmu_intel_event_of_id(unsigned int id)
{
    for (size_t i = 0; i < ARRAY_SIZE(pmu_intel_events); i++) {
        if (pmu_intel_events[i].id == (int)id) {
            return &pmu_intel_events[i];
        }
    }

    return NULL;
}

/* The row whose code equals raw's bits in mask, or NULL. */
static const struct pmu_intel_event *
pmu_intel_event_of_code(uint64_t raw, uint64_t mask)
{
    for (size_t i = 0; i < ARRAY_SIZE(pmu_intel_events); i++) {
        if (pmu_intel_events[i].code == (raw & mask)) {
            return &pmu_intel_events[i];
        }
    }

    return NULL;
}

/* ---- perfmon_dev operations --------------------------------------------- */

static int
pmu_intel_translate(struct perfmon_dev *dev, uint64_t *raw_eventp,
                    unsigned int event_id)
{
    const struct pmu_intel_event *e = pmu_intel_event_of_id(event_id);

    (void)dev;

    if (e == NULL || (!pmu_intel_has_fixed(e->fixed)
                      && !pmu_intel_arch_avail(e->arch))) {
        return -ENOENT;
    }

    *raw_eventp = e->code;
    return 0;
}

/*
 * The counters that can count raw_event, and in *preferp the fixed counter
 * that counts it: a fixed counter counts its event exactly (no edge,
 * invert or cmask); general counters count anything but the
 * reference-cycles pseudo code and the architectural events (whatever
 * their other bits) that the CPU marks unavailable.
 */
static uint64_t
pmu_intel_counters_for(uint64_t raw_event, uint64_t *preferp)
{
    const struct pmu_intel_event *e;
    uint64_t counters = 0;

    *preferp = 0;
    e = pmu_intel_event_of_code(raw_event, UINT64_MAX);

    if (e != NULL && pmu_intel_has_fixed(e->fixed)) {
        *preferp = 1ULL << (PMU_INTEL_FIXED_BASE + (unsigned int)e->fixed);
        counters = *preferp;
    }

    e = pmu_intel_event_of_code(raw_event, PMU_EVTSEL_EVENT | PMU_EVTSEL_UMASK);

    if (e == NULL || pmu_intel_arch_avail(e->arch)) {
        counters |= PMU_INTEL_GP_BITS;
    }

    /* Model-specific events count only where the model's list says. */
    counters &= pmu_evtab_constraint(perfmon_evtab_host(), raw_event);
    return counters & pmu_intel.exist_mask;
}

/* ---- extra MSRs ---------------------------------------------------------- */

/*
 * The extra MSRs of model-specific events (the event lists name them; SDM
 * vol. 4, each model's MSR table): MSR_OFFCORE_RSP_0/1, MSR_PEBS_LD_LAT,
 * MSR_PEBS_FRONTEND, the load-latency thresholds of newer parts.  Each
 * holds one value at a time, shared by every slot that asks for that
 * value (refs); a slot asking for another value takes the event's other
 * MSR when it has one (OFFCORE_RSP_1, with the event's second code), or
 * is refused.  probed/usable: whether the MSR answered a fault-safe read
 * (KVM raises #GP on them).  Written under the core's allocator lock;
 * read by start, on any CPU, for slots that hold an entry: a slot cannot
 * start before its hold nor after its release.
 */
#define PMU_INTEL_NR_EXTRA          8

static struct pmu_intel_extra {
    uint32_t msr;
    bool probed;
    bool usable;
    uint64_t value;
    unsigned int refs;
} pmu_intel_extras[PMU_INTEL_NR_EXTRA];

/* Which extra MSR each held raw code uses, and how many slots hold it. */
static struct pmu_intel_hold {
    uint64_t raw_event;
    unsigned int extra;             /* index in pmu_intel_extras */
    bool second;                    /* the event's second MSR and code */
    unsigned int refs;
} pmu_intel_holds[PERFMON_DEV_MAX_PMCS];

/* The entry of msr, probed (fault-safe) when first asked for; NULL: none. */
static struct pmu_intel_extra *
pmu_intel_extra_of(uint32_t msr)
{
    struct pmu_intel_extra *free = NULL;
    uint64_t value;

    for (unsigned int i = 0; i < ARRAY_SIZE(pmu_intel_extras); i++) {
        struct pmu_intel_extra *x = &pmu_intel_extras[i];

        if (x->probed && x->msr == msr) {
            return x;
        }

        free = (free == NULL && !x->probed) ? x : free;
    }

    if (free != NULL) {
        *free = (struct pmu_intel_extra){
            .msr = msr, .probed = true,
            .usable = (msr_read_safe(msr, &value) == 0),
        };
    }

    return free;
}

static struct pmu_intel_hold *
pmu_intel_hold_of(uint64_t raw_event)
{
    for (unsigned int i = 0; i < ARRAY_SIZE(pmu_intel_holds); i++) {
        if (pmu_intel_holds[i].refs != 0
            && pmu_intel_holds[i].raw_event == raw_event) {
            return &pmu_intel_holds[i];
        }
    }

    return NULL;
}

/* Take msr with value for one more slot: false when it holds another. */
static bool
pmu_intel_extra_take(struct pmu_intel_extra *x, uint64_t value)
{
    if (x == NULL || !x->usable || (x->refs != 0 && x->value != value)) {
        return false;
    }

    x->value = value;
    x->refs++;
    return true;
}

static int
pmu_intel_hold(struct perfmon_dev *dev, uint64_t raw_event)
{
    const struct perfmon_evtab_extra *extra;
    struct pmu_intel_hold *hold = pmu_intel_hold_of(raw_event);
    struct pmu_intel_extra *x;
    bool valid;

    (void)dev;
    extra = pmu_evtab_raw_extra(raw_event, &valid);

    if (extra == NULL) {
        return 0;
    }

    if (hold != NULL) {
        hold->refs++;
        pmu_intel_extras[hold->extra].refs++;
        return 0;
    }

    for (unsigned int i = 0; hold == NULL && i < ARRAY_SIZE(pmu_intel_holds);
         i++) {
        hold = (pmu_intel_holds[i].refs == 0) ? &pmu_intel_holds[i] : NULL;
    }

    if (hold == NULL) {
        return -EAGAIN;
    }

    for (unsigned int m = 0; m < extra->nr_msrs && m < 2; m++) {
        x = pmu_intel_extra_of(extra->msr + m);

        /* The second MSR goes with the second code (B7H, BBH) or mask. */
        if ((m == 0 || extra->code2 != 0 || extra->nr_umasks >= 2)
            && pmu_intel_extra_take(x, extra->value)) {
            *hold = (struct pmu_intel_hold){
                .raw_event = raw_event, .refs = 1, .second = (m == 1),
                .extra = (unsigned int)(x - pmu_intel_extras),
            };
            return 0;
        }
    }

    x = pmu_intel_extra_of(extra->msr);
    return (x == NULL || !x->usable) ? -ENOENT : -EAGAIN;
}

static void
pmu_intel_release(struct perfmon_dev *dev, uint64_t raw_event)
{
    struct pmu_intel_hold *hold;
    bool valid;

    (void)dev;

    if (pmu_evtab_raw_extra(raw_event, &valid) == NULL) {
        return;
    }

    hold = pmu_intel_hold_of(raw_event);
    assert(hold != NULL && pmu_intel_extras[hold->extra].refs != 0);
    pmu_intel_extras[hold->extra].refs--;
    hold->refs--;
}

/*
 * The event select of a raw code: its PERFEVTSEL bits, with the second
 * code (or unit mask) when it holds the event's second MSR, after loading
 * the MSR it holds on this CPU.
 */
static uint64_t
pmu_intel_extra_load(uint64_t raw_event)
{
    uint64_t sel = raw_event & ~PMU_EVTAB_RAW_EXTRA_MASK;
    const struct perfmon_evtab_extra *extra;
    const struct pmu_intel_hold *hold;
    const struct pmu_intel_extra *x;
    bool valid;

    extra = pmu_evtab_raw_extra(raw_event, &valid);

    if (extra == NULL) {
        return sel;
    }

    hold = pmu_intel_hold_of(raw_event);
    assert(hold != NULL);
    x = &pmu_intel_extras[hold->extra];
    pmu_msr_write(x->msr, x->value);

    if (hold->second && extra->code2 != 0) {
        sel = (sel & ~PMU_EVTSEL_EVENT) | extra->code2;
    } else if (hold->second) {
        sel = (sel & ~PMU_EVTSEL_UMASK) | ((uint64_t)extra->umasks[0] << 8);
    }

    return sel;
}

static int
pmu_intel_counters(struct perfmon_dev *dev, uint64_t raw_event,
                   unsigned int flags, uint64_t *countersp, uint64_t *preferp)
{
    bool valid;

    (void)dev;
    pmu_evtab_raw_extra(raw_event, &valid);

    if (!pmu_flags_valid(flags) || !valid
        || (raw_event & ~(PMU_INTEL_RAW_MASK | PMU_EVTAB_RAW_EXTRA_MASK))
           != 0) {
        return -EINVAL;
    }

    *countersp = pmu_intel_counters_for(raw_event, preferp);
    return (*countersp == 0) ? -ENOENT : 0;
}

static int
pmu_intel_alloc(struct perfmon_dev *dev, unsigned int *hw_idp,
                uint64_t raw_event, unsigned int flags)
{
    return pmu_alloc(dev, &pmu_intel.alloc_mask, hw_idp, raw_event, flags);
}

static void
pmu_intel_free(struct perfmon_dev *dev, unsigned int hw_id)
{
    (void)dev;
    assert(pmu_intel_hw_id_valid(hw_id));
    pmu_free(&pmu_intel.alloc_mask, hw_id);
}

/*
 * The start contract (kern/perfmon.h): an overflow the counter's previous
 * user left in IA32_PERF_GLOBAL_STATUS is not the new user's.  Only where
 * the handler reads the status; version 1 re-arms the top bit instead.
 */
static void
pmu_intel_status_drop(unsigned int hw_id)
{
    if (pmu_intel.nmi && !pmu_intel.topbit) {
        pmu_status_drop(&pmu_intel_driver, hw_id);
    }
}

/*
 * The counter is stopped (cpu_init and stop leave its enable clear): it
 * is loaded while disabled, as the SDM wants, then enabled.
 */
static void
pmu_intel_start(struct perfmon_dev *dev, unsigned int hw_id,
                uint64_t raw_event, unsigned int flags)
{
    (void)dev;
    assert(pmu_intel_hw_id_valid(hw_id));
    assert(!(pmu_active_get() & (1ULL << hw_id)));

    if (pmu_intel_is_fixed(hw_id)) {
        unsigned int i = hw_id - PMU_INTEL_FIXED_BASE;
        uint64_t ctrl = pmu_intel_fixed_ctrl[cpu_id()];

        assert(!(ctrl & PMU_FIXED_CTRL_FIELD(i)));
        pmu_msr_write(pmu_intel_ctr_msr(hw_id), 0);
        pmu_intel_status_drop(hw_id);
        ctrl |= pmu_intel_fixed_bits(flags) << PMU_FIXED_CTRL_SHIFT(i);
        pmu_intel_fixed_ctrl_set(ctrl);
    } else {
        uint64_t sel = pmu_intel_extra_load(raw_event) | PMU_EVTSEL_EN
                       | pmu_mode_bits(flags, PMU_EVTSEL_OS, PMU_EVTSEL_USR);

        if (pmu_intel.nmi) {
            sel |= PMU_EVTSEL_INT;
        }

        pmu_intel_ctr_write(hw_id, pmu_intel_armed(0));
        pmu_intel_status_drop(hw_id);
        pmu_msr_write(MSR_IA32_PERFEVTSEL0 + hw_id, sel);
    }

    pmu_active_add(hw_id);
}

static void
pmu_intel_stop(struct perfmon_dev *dev, unsigned int hw_id)
{
    (void)dev;
    assert(pmu_intel_hw_id_valid(hw_id));

    if (pmu_intel_is_fixed(hw_id)) {
        uint64_t field = PMU_FIXED_CTRL_FIELD(hw_id - PMU_INTEL_FIXED_BASE);

        pmu_intel_fixed_ctrl_set(pmu_intel_fixed_ctrl[cpu_id()] & ~field);
    } else {
        pmu_msr_write(MSR_IA32_PERFEVTSEL0 + hw_id, 0);
    }

    pmu_active_remove(hw_id);
}

static uint64_t
pmu_intel_read(struct perfmon_dev *dev, unsigned int hw_id)
{
    (void)dev;
    assert(pmu_intel_hw_id_valid(hw_id));
    return msr_rdpmc(pmu_intel_rdpmc_index(hw_id));
}

/* Arm a counter again after its top bit cleared (version 1). */
static void
pmu_intel_rearm(unsigned int hw_id, uint64_t value)
{
    pmu_intel_ctr_write(hw_id, pmu_intel_armed(value));
}

/*
 * Version 2 and later, in the order of the SDM and Linux: freeze our
 * counters (their IA32_PERF_GLOBAL_CTRL bits), then take the overflowed
 * ones from IA32_PERF_GLOBAL_STATUS, cleared through
 * IA32_PERF_GLOBAL_OVF_CTRL (SDM vol. 3B, "Architectural Performance
 * Monitoring Version 2"); the core folds and re-arms them frozen, and
 * overflow_intr_end unmasks the LVT, then opens the gate.  Only bits of
 * counters we run are acknowledged: other status bits (buffers, trace,
 * CondChgd) and bits of counters that do not exist are left alone, since
 * clearing bits that are not set or not implemented may fault.  Version 1
 * has no status register and no gate: an active counter whose top bit is
 * clear has wrapped (see the top of the file), and its re-arm cannot help
 * losing what counts between its read and write.
 *
 * An interrupt that is not ours (an NMI from elsewhere, a spurious PMI, a
 * late one for a counter stopped since) still ends as ours would.
 */
static uint64_t
pmu_intel_handle_overflow_intr(struct perfmon_dev *dev)
{
    return pmu_handle_overflow_intr(dev, &pmu_intel_driver, pmu_intel.topbit,
                                    (pmu_intel.cnt_mask >> 1) + 1,
                                    pmu_intel_rearm, pmu_intel.exist_mask);
}

/*
 * The core arms within the device's width and, without full-width
 * writes, within max_period: every such value is one a legacy write can
 * load (bits 31 up all ones, or all zeros).
 */
static void
pmu_intel_write(struct perfmon_dev *dev, unsigned int hw_id, uint64_t value)
{
    int error;

    (void)dev;
    assert(pmu_intel_hw_id_valid(hw_id));
    assert((value & ~pmu_intel.val_mask) == 0);
    error = pmu_intel_ctr_write(hw_id, pmu_intel_armed(value));
    assert(error == 0);
    (void)error;
}

static const struct perfmon_dev_ops pmu_intel_ops = {
    .translate = pmu_intel_translate,
    .counters = pmu_intel_counters,
    .alloc = pmu_intel_alloc,
    .free = pmu_intel_free,
    .start = pmu_intel_start,
    .stop = pmu_intel_stop,
    .read = pmu_intel_read,
    .write = pmu_intel_write,
    .handle_overflow_intr = pmu_intel_handle_overflow_intr,

    /*
     * The local APIC sets the mask bit of the performance-counter LVT when
     * it delivers a PMI (SDM vol. 3A, "Local Vector Table"): it is unmasked
     * once the overflows are cleared, before the gate opens again, or a
     * counter wrapping in between would raise no PMI, nor any after.
     */
    .overflow_intr_end = pmu_overflow_intr_end,
    .hold = pmu_intel_hold,
    .release = pmu_intel_release,
    .selftest = pmu_selftest,
};

/* ---- probe -------------------------------------------------------------- */

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
    memset(pmu_intel_extras, 0, sizeof(pmu_intel_extras));
    memset(pmu_intel_holds, 0, sizeof(pmu_intel_holds));
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
