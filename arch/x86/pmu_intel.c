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
 * The probe (pmu_intel_probe.c) runs on every CPU (pmu_probe_cpus): the
 * boot CPU's CPUID gives the candidates, each CPU keeps those it has and
 * the firmware does not use, and the device gets the counters every CPU
 * has; counter masks may have holes.  This file holds the operations.
 *
 * Locking: alloc and free run under the core's allocator lock; start, stop,
 * read and the overflow handler act on the calling CPU with interrupts
 * disabled.  The per-CPU active masks are written by their CPU only and
 * read by its NMI handler.
 *
 * What both drivers share is in pmu.c.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "arch/x86/pmu.h"
#include "arch/x86/pmu_evtab.h"
#include "arch/x86/pmu_intel_i.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/string.h"

struct pmu_intel pmu_intel;
uint64_t pmu_intel_fixed_ctrl[CPU_MAX];
struct perfmon_dev pmu_intel_dev;

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
pmu_intel_hw_id_valid(unsigned int hw_id)
{
    return hw_id < 64 && (pmu_intel.exist_mask & (1ULL << hw_id)) != 0;
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

void
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

void
pmu_intel_extra_reset(void)
{
    memset(pmu_intel_extras, 0, sizeof(pmu_intel_extras));
    memset(pmu_intel_holds, 0, sizeof(pmu_intel_holds));
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
 * The event select that counts raw_event in the modes of flags, enabled,
 * with its interrupt where there is one, after loading on this CPU the
 * extra MSR the event holds.
 */
static uint64_t
pmu_intel_sel(uint64_t raw_event, unsigned int flags)
{
    uint64_t sel = pmu_intel_extra_load(raw_event) | PMU_EVTSEL_EN
                   | pmu_mode_bits(flags, PMU_EVTSEL_OS, PMU_EVTSEL_USR);

    return pmu_intel.nmi ? (sel | PMU_EVTSEL_INT) : sel;
}

/* This CPU's IA32_FIXED_CTR_CTRL with fixed counter hw_id's field bits. */
static uint64_t
pmu_intel_fixed_with(unsigned int hw_id, uint64_t bits)
{
    unsigned int i = hw_id - PMU_INTEL_FIXED_BASE;

    return (pmu_intel_fixed_ctrl[cpu_id()] & ~PMU_FIXED_CTRL_FIELD(i))
           | (bits << PMU_FIXED_CTRL_SHIFT(i));
}

/*
 * The counter is stopped (cpu_init and stop leave its enable clear): it
 * is loaded while disabled, as the SDM wants, then enabled.  It starts
 * from 0 (armed, in top-bit mode) with its stale status dropped, so the
 * core knows its value without reading it.
 */
static void
pmu_intel_start(struct perfmon_dev *dev, unsigned int hw_id,
                uint64_t raw_event, unsigned int flags)
{
    (void)dev;
    assert(pmu_intel_hw_id_valid(hw_id));
    assert(!(pmu_active_get() & (1ULL << hw_id)));

    if (pmu_intel_is_fixed(hw_id)) {
        uint64_t bits = pmu_intel_fixed_bits(flags);

        assert(!(pmu_intel_fixed_ctrl[cpu_id()]
                 & PMU_FIXED_CTRL_FIELD(hw_id - PMU_INTEL_FIXED_BASE)));
        pmu_msr_write(pmu_intel_ctr_msr(hw_id), 0);
        pmu_intel_status_drop(hw_id);
        pmu_intel_fixed_ctrl_set(pmu_intel_fixed_with(hw_id, bits));
    } else {
        pmu_intel_ctr_write(hw_id, pmu_intel_armed(0));
        pmu_intel_status_drop(hw_id);
        pmu_msr_write(MSR_IA32_PERFEVTSEL0 + hw_id,
                      pmu_intel_sel(raw_event, flags));
    }

    pmu_active_add(hw_id);
}

/*
 * The counter goes on from the count it holds; only what it counts
 * changes: one write of its event select (and of the extra MSR the new
 * event asks for), or for a fixed counter, whose event is its own, one
 * write of IA32_FIXED_CTR_CTRL when the modes differ and none when they
 * do not.  An overflow status it holds belongs to that continuing count,
 * which the core goes on folding: it is kept.
 */
static uint64_t pmu_intel_read(struct perfmon_dev *dev, unsigned int hw_id);

static uint64_t
pmu_intel_transfer(struct perfmon_dev *dev, unsigned int hw_id,
                   uint64_t raw_event, unsigned int flags,
                   unsigned int *read_howp, uintptr_t *argp)
{
    uint64_t raw = pmu_intel_read(dev, hw_id);

    /* The counter's RDPMC index stays: the read method holds. */
    (void)read_howp;
    (void)argp;

    assert(pmu_active_get() & (1ULL << hw_id));

    if (pmu_intel_is_fixed(hw_id)) {
        uint64_t ctrl = pmu_intel_fixed_with(hw_id,
                                             pmu_intel_fixed_bits(flags));

        if (ctrl != pmu_intel_fixed_ctrl[cpu_id()]) {
            pmu_intel_fixed_ctrl_set(ctrl);
        }
    } else {
        pmu_msr_write(MSR_IA32_PERFEVTSEL0 + hw_id,
                      pmu_intel_sel(raw_event, flags));
    }

    return raw;
}

static void
pmu_intel_stop(struct perfmon_dev *dev, unsigned int hw_id)
{
    (void)dev;
    assert(pmu_intel_hw_id_valid(hw_id));

    if (pmu_intel_is_fixed(hw_id)) {
        pmu_intel_fixed_ctrl_set(pmu_intel_fixed_with(hw_id, 0));
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

/* The core reads a started counter as read does: RDPMC, by its index. */
static unsigned int
pmu_intel_read_method(struct perfmon_dev *dev, unsigned int hw_id,
                      uintptr_t *argp)
{
    (void)dev;
    assert(pmu_intel_hw_id_valid(hw_id));
    *argp = pmu_intel_rdpmc_index(hw_id);
    return PERFMON_READ_RDPMC;
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

const struct perfmon_dev_ops pmu_intel_ops = {
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
    .read_method = pmu_intel_read_method,
    .transfer = pmu_intel_transfer,
};
