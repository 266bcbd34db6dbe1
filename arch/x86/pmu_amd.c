/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * AMD performance counter driver (APM vol. 2, section 13.2,
 * "Performance-Monitoring Counters"): the four legacy counters at
 * C001_0000h, the six counters of the core performance counter extension
 * at C001_0200h when CPUID 8000_0001h:ECX[23] says so, and the PerfMonV2
 * global control and status registers at C000_0300h when CPUID
 * 8000_0022h:EAX[0] says so.
 *
 * Counters run free and the core extends them to 64 bits.  With PerfMonV2
 * the overflowed counters are read from PerfCntrGlobalStatus.  Without it
 * there is no status register: the driver shows the core 47 of the 48
 * bits and keeps bit 47 set, so the counter overflows, raising its
 * interrupt, exactly when the 47 bits the core sees wrap; an active counter
 * whose bit 47 is clear has overflowed.
 *
 * From family 17h (Zen) on, an event that counts more than a counter's
 * increment takes per cycle (a large-increment event, as the model's
 * event lists mark it) counts on a pair: the even counter programmed with
 * the event, its odd neighbour with the Merge event, which makes the two
 * one 64-bit counter (PPR for AMD family 19h, "Large Increment per Cycle
 * Events").  Pairs are for pinned events: alloc takes both counters, and
 * alloc_counters names both, for the core to reserve and evict from.
 *
 * Locking: as for the Intel driver, alloc and free run under the core's
 * allocator lock, everything else on the calling CPU with interrupts
 * disabled; the per-CPU active masks are written by their CPU only.
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

/* AMD's vendor string in CPUID leaf 0 (EBX, EDX, ECX). */
#define PMU_AMD_VENDOR_EBX      0x68747541  /* "Auth" */
#define PMU_AMD_VENDOR_EDX      0x69746e65  /* "enti" */
#define PMU_AMD_VENDOR_ECX      0x444d4163  /* "cAMD" */

/*
 * Hygon's (Dhyana, family 18h: a licensed Zen with AMD's PMU; Linux runs
 * the AMD driver for it).
 */
#define PMU_HYGON_VENDOR_EBX    0x6f677948  /* "Hygo" */
#define PMU_HYGON_VENDOR_EDX    0x6e65476e  /* "nGen" */
#define PMU_HYGON_VENDOR_ECX    0x656e6975  /* "uine" */

#define PMU_AMD_CNT_MASK        ((1ULL << PMU_AMD_WIDTH) - 1)
#define PMU_AMD_TOP_BIT         (1ULL << (PMU_AMD_WIDTH - 1))

/*
 * Counter pairs (PPR, "Large Increment per Cycle Events"): the Merge
 * event, 0FFFh, on the odd counter makes its bits 15:0 bits 63:48 of the
 * even counter's count.  The driver keeps them all ones (PMU_AMD_PAIR_HIGH)
 * whenever it loads the even counter, so that the pair overflows, with the
 * even counter's status bit and interrupt, exactly when the bits the core
 * sees wrap, as a lone counter does.
 */
#define PMU_AMD_MERGE_EVENT     PMU_AMD_RAW(0xfff, 0)
#define PMU_AMD_PAIR_HIGH       0xffffULL
#define PMU_AMD_PAIR_SHIFT      48
#define PMU_AMD_FAMILY_ZEN      0x17

/*
 * The probed PMU, written at boot by probe and commit (cpu_probe only
 * reads it) and constant afterwards except alloc_mask (core lock).  Until
 * commit, nr counts the boot CPU's candidates; after, the counters in use
 * (exist_mask), which may have holes where the firmware keeps one.
 */
struct pmu_amd {
    unsigned int family;
    unsigned int model;
    unsigned int nr;            /* counters */
    bool core_ext;              /* C001_0200h counters */
    bool v2;                    /* PerfMonV2 global registers */
    bool nmi;
    bool topbit;                /* overflow from bit 47, without v2 */
    uint64_t val_mask;          /* counter bits the core sees */
    uint64_t cand_mask;         /* hw ids the boot CPU offers */
    uint64_t exist_mask;
    uint64_t alloc_mask;
    uint64_t pair_mask;         /* even hw ids alloc gave as pairs (core
                                   lock; read by the per-CPU operations
                                   of the pair's slot, which cannot run
                                   before its alloc nor after its free) */
};

static struct pmu_amd pmu_amd;

static struct perfmon_dev pmu_amd_dev;

/*
 * Codes of the generic events (AMD family 10h-16h BKDGs and family 17h+
 * PPRs, as the APM lists the core events), in the PMU_AMD_RAW() layout, by
 * generation (PMU_AMD_GEN_*): cache references and misses moved with Zen
 * (family 17h); reference cycles came with Zen 4 (PMCx120, cycles not
 * halted at the P0 frequency, like MPERF; Linux's Zen 4 event map).  0:
 * none, refused at translate rather than failing later.
 */
#define PMU_AMD_GEN_K8          0   /* families 06h-16h */
#define PMU_AMD_GEN_ZEN         1   /* 17h, 18h (Hygon), 19h before Zen 4 */
#define PMU_AMD_GEN_ZEN4        2
#define PMU_AMD_NR_GENS         3

static const struct pmu_amd_event {
    unsigned int id;
    uint64_t codes[PMU_AMD_NR_GENS];
} pmu_amd_events[] = {
    { PERFMON_EV_CYCLE, { 0x0076, 0x0076, 0x0076 } },
    { PERFMON_EV_INSTRUCTION, { 0x00c0, 0x00c0, 0x00c0 } },
    { PERFMON_EV_CACHE_REF, { 0x077d, 0xff60, 0xff60 } },
    { PERFMON_EV_CACHE_MISS, { 0x077e, 0x0964, 0x0964 } },
    { PERFMON_EV_BRANCH, { 0x00c2, 0x00c2, 0x00c2 } },
    { PERFMON_EV_BRANCH_MISS, { 0x00c3, 0x00c3, 0x00c3 } },
    { PERFMON_EV_REF_CYCLE, { 0, 0, PMU_AMD_RAW(0x120, 0x00) } },
};

/*
 * The generation of family/model: Zen from family 17h; Zen 4 in family
 * 19h models 10h-1Fh and 60h-AFh (the rest of 19h is Zen 3), and every
 * family from 1Ah on.
 */
static unsigned int
pmu_amd_generation(unsigned int family, unsigned int model)
{
    if (family >= 0x1a
        || (family == 0x19 && ((model >= 0x10 && model <= 0x1f)
                               || (model >= 0x60 && model <= 0xaf)))) {
        return PMU_AMD_GEN_ZEN4;
    }

    return (family >= 0x17) ? PMU_AMD_GEN_ZEN : PMU_AMD_GEN_K8;
}

/*
 * Counter i's MSRs: the extension interleaves control and counter (step
 * 2), the legacy block has four controls then four counters.  The legacy
 * MSRs alias the first four extension counters.
 */
static uint32_t
pmu_amd_ctl_msr(unsigned int i)
{
    return pmu_amd.core_ext ? MSR_AMD_F15H_PERF_CTL0 + 2 * i
                            : MSR_AMD_K7_PERFEVTSEL0 + i;
}

static uint32_t
pmu_amd_ctr_msr(unsigned int i)
{
    return pmu_amd.core_ext ? MSR_AMD_F15H_PERF_CTR0 + 2 * i
                            : MSR_AMD_K7_PERFCTR0 + i;
}

static bool
pmu_amd_hw_id_valid(unsigned int hw_id)
{
    return hw_id < 64 && (pmu_amd.exist_mask & (1ULL << hw_id)) != 0;
}

static uint64_t
pmu_amd_armed(uint64_t value)
{
    value &= pmu_amd.val_mask;
    return pmu_amd.topbit ? (value | PMU_AMD_TOP_BIT) : value;
}

/*
 * Family 15h counter constraints (BKDG for AMD family 15h models 00h-0Fh,
 * section "Performance Monitor Counters", whose event list gives the
 * counters each event can use; the same facts as Linux's
 * amd_get_event_constraints_f15h).  An event counts only on the counters
 * of its unit (bits 7:4 of the event select: FP, load/store and data
 * cache, execution, instruction cache and decode, northbridge), except the
 * listed events, which have their own.  umask says when an exception
 * applies: always, or only with a unit mask of more than one bit, at most
 * one bit, or bits in both of its nibbles.
 */
#define PMU_AMD_UMASK_ANY       0
#define PMU_AMD_UMASK_MULTI     1
#define PMU_AMD_UMASK_SINGLE    2
#define PMU_AMD_UMASK_NIBBLES   3

static const struct pmu_amd_constraint {
    uint16_t first;             /* 12-bit event selects first..last */
    uint16_t last;
    uint8_t umask;              /* PMU_AMD_UMASK_* */
    uint8_t counters;           /* hw ids that count it */
} pmu_amd_f15h_events[] = {
    { 0x000, 0x000, PMU_AMD_UMASK_NIBBLES, 0x08 },
    { 0x003, 0x003, PMU_AMD_UMASK_ANY, 0x08 },
    { 0x004, 0x004, PMU_AMD_UMASK_MULTI, 0x08 },
    { 0x00b, 0x00b, PMU_AMD_UMASK_ANY, 0x08 },
    { 0x00d, 0x00d, PMU_AMD_UMASK_ANY, 0x08 },
    { 0x023, 0x023, PMU_AMD_UMASK_ANY, 0x07 },
    { 0x02d, 0x02d, PMU_AMD_UMASK_ANY, 0x08 },
    { 0x02e, 0x02e, PMU_AMD_UMASK_ANY, 0x09 },
    { 0x031, 0x031, PMU_AMD_UMASK_SINGLE, 0x07 },
    { 0x031, 0x031, PMU_AMD_UMASK_MULTI, 0x00 },
    { 0x043, 0x043, PMU_AMD_UMASK_ANY, 0x07 },
    { 0x045, 0x046, PMU_AMD_UMASK_ANY, 0x07 },
    { 0x054, 0x055, PMU_AMD_UMASK_ANY, 0x07 },
    { 0x08f, 0x08f, PMU_AMD_UMASK_ANY, 0x01 },
    { 0x0db, 0x0df, PMU_AMD_UMASK_ANY, 0x3f },
    { 0x187, 0x188, PMU_AMD_UMASK_ANY, 0x01 },
    { 0x1c0, 0x1c0, PMU_AMD_UMASK_ANY, 0x38 },
    { 0x1d6, 0x1d6, PMU_AMD_UMASK_ANY, 0x3f },
    { 0x1d8, 0x1d8, PMU_AMD_UMASK_ANY, 0x3f },
};

/* The counters of each unit, by bits 7:4 of the event select. */
static const uint8_t pmu_amd_f15h_units[16] = {
    [0x0] = 0x38, [0x1] = 0x38,                             /* FP */
    [0x2] = 0x3f, [0x3] = 0x3f, [0x4] = 0x3f, [0x5] = 0x3f, /* LS, DC */
    [0x6] = 0x07, [0x7] = 0x07,                             /* CU */
    [0x8] = 0x07, [0x9] = 0x07,                             /* IC, DE */
    [0xc] = 0x3f,                                           /* EX, LS */
    [0xd] = 0x07,                                           /* DE */
    /* 0xA-0xB: none; 0xE-0xF: northbridge, its own counters. */
};

#define PMU_AMD_FAMILY_15H      0x15

static bool
pmu_amd_umask_matches(unsigned int rule, unsigned int umask)
{
    switch (rule) {
    case PMU_AMD_UMASK_MULTI:
        return pmu_popcount(umask) > 1;
    case PMU_AMD_UMASK_SINGLE:
        return pmu_popcount(umask) <= 1;
    case PMU_AMD_UMASK_NIBBLES:
        return (umask & 0xf0) != 0 && (umask & 0x0f) != 0;
    default:
        return true;
    }
}

/* The counters that can count raw_event: all but on family 15h. */
static uint64_t
pmu_amd_counters_for(uint64_t raw_event)
{
    unsigned int event = (unsigned int)(((raw_event >> 24) & 0xf00)
                                        | (raw_event & 0xff));
    unsigned int umask = (unsigned int)((raw_event >> 8) & 0xff);

    if (pmu_amd.family != PMU_AMD_FAMILY_15H) {
        return UINT64_MAX;
    }

    for (size_t i = 0; i < ARRAY_SIZE(pmu_amd_f15h_events); i++) {
        const struct pmu_amd_constraint *c = &pmu_amd_f15h_events[i];

        if (event >= c->first && event <= c->last
            && pmu_amd_umask_matches(c->umask, umask)) {
            return c->counters;
        }
    }

    return pmu_amd_f15h_units[(event >> 4) & 0xf];
}

/* ---- perfmon_dev operations --------------------------------------------- */

static int
pmu_amd_translate(struct perfmon_dev *dev, uint64_t *raw_eventp,
                  unsigned int event_id)
{
    unsigned int gen = pmu_amd_generation(pmu_amd.family, pmu_amd.model);

    (void)dev;

    for (size_t i = 0; i < ARRAY_SIZE(pmu_amd_events); i++) {
        if (pmu_amd_events[i].id == event_id
            && pmu_amd_events[i].codes[gen] != 0) {
            *raw_eventp = pmu_amd_events[i].codes[gen];
            return 0;
        }
    }

    return -ENOENT;
}

static int
pmu_amd_counters(struct perfmon_dev *dev, uint64_t raw_event,
                 unsigned int flags, uint64_t *countersp, uint64_t *preferp)
{
    (void)dev;

    if (!pmu_flags_valid(flags) || (raw_event & ~PMU_AMD_RAW_MASK) != 0) {
        return -EINVAL;
    }

    /*
     * The model's lists may restrict it (large-increment events: none
     * alone).  The odd counters of pairs given stay in: the core reserves
     * them with the even ones (pmu_amd_alloc_counters).
     */
    *countersp = pmu_amd_counters_for(raw_event) & pmu_amd.exist_mask
                 & pmu_evtab_constraint(perfmon_evtab_host(), raw_event);
    *preferp = 0;
    return (*countersp == 0) ? -ENOENT : 0;
}

/* Whether raw_event counts on a counter pair (see the top of the file). */
static bool
pmu_amd_pairs(uint64_t raw_event)
{
    return pmu_amd.family >= PMU_AMD_FAMILY_ZEN
           && (raw_event & ~PMU_AMD_RAW_MASK) == 0
           && pmu_evtab_pairs(perfmon_evtab_host(), raw_event);
}

static bool
pmu_amd_is_pair(unsigned int hw_id)
{
    return (pmu_amd.pair_mask & (1ULL << hw_id)) != 0;
}

/*
 * The lowest even counter free with its odd neighbour, both ours, both
 * reserved; -ENOENT when the device has no such pair, -EAGAIN when every
 * pair has a counter taken.  An odd counter left alone is no pair.
 */
static int
pmu_amd_alloc_pair(unsigned int *hw_idp, unsigned int flags)
{
    bool any = false;

    if (!pmu_flags_valid(flags)) {
        return -EINVAL;
    }

    for (unsigned int i = 0; i + 1 < PMU_MAX_GP; i += 2) {
        uint64_t pair = 3ULL << i;

        if ((pmu_amd.exist_mask & pair) != pair) {
            continue;
        }

        any = true;

        if ((pmu_amd.alloc_mask & pair) == 0) {
            pmu_amd.alloc_mask |= pair;
            pmu_amd.pair_mask |= 1ULL << i;
            *hw_idp = i;
            return 0;
        }
    }

    return any ? -EAGAIN : -ENOENT;
}

static int
pmu_amd_alloc(struct perfmon_dev *dev, unsigned int *hw_idp,
              uint64_t raw_event, unsigned int flags)
{
    if (hw_idp != NULL && pmu_amd_pairs(raw_event)) {
        return pmu_amd_alloc_pair(hw_idp, flags);
    }

    return pmu_alloc(dev, &pmu_amd.alloc_mask, hw_idp, raw_event, flags);
}

/* A pair takes its odd counter with the even one alloc gave. */
static uint64_t
pmu_amd_alloc_counters(struct perfmon_dev *dev, unsigned int hw_id)
{
    (void)dev;
    assert(pmu_amd_hw_id_valid(hw_id));
    return (pmu_amd_is_pair(hw_id) ? 3ULL : 1ULL) << hw_id;
}

/* A pair's two counters go back together. */
static void
pmu_amd_free(struct perfmon_dev *dev, unsigned int hw_id)
{
    (void)dev;
    assert(pmu_amd_hw_id_valid(hw_id));

    if (pmu_amd_is_pair(hw_id)) {
        pmu_amd.pair_mask &= ~(1ULL << hw_id);
        pmu_free(&pmu_amd.alloc_mask, hw_id + 1);
    }

    pmu_free(&pmu_amd.alloc_mask, hw_id);
}

/*
 * The event select that counts raw_event in the modes of flags, enabled,
 * with its interrupt where there is one.  Neither HostOnly nor GuestOnly:
 * count in both (APM vol. 2, section 13.2.1); the mode comes from OS and
 * USR.
 */
static uint64_t
pmu_amd_sel(uint64_t raw_event, unsigned int flags)
{
    uint64_t sel = raw_event | PMU_EVTSEL_EN
                   | pmu_mode_bits(flags, PMU_EVTSEL_OS, PMU_EVTSEL_USR);

    return pmu_amd.nmi ? (sel | PMU_EVTSEL_INT) : sel;
}

/* Load counter hw_id with value (within the bits the core sees), armed. */
static void
pmu_amd_ctr_load(unsigned int hw_id, uint64_t value)
{
    pmu_msr_write(pmu_amd_ctr_msr(hw_id), pmu_amd_armed(value));

    if (pmu_amd_is_pair(hw_id)) {
        pmu_msr_write(pmu_amd_ctr_msr(hw_id + 1), PMU_AMD_PAIR_HIGH);
    }
}

/*
 * The counter starts from 0 (armed, without PerfMonV2) with no stale
 * status, so the core knows its value without reading it.  A pair's
 * Merge event is enabled before the event, as its counters are loaded.
 */
static void
pmu_amd_start(struct perfmon_dev *dev, unsigned int hw_id,
              uint64_t raw_event, unsigned int flags)
{
    (void)dev;
    assert(pmu_amd_hw_id_valid(hw_id));

    /* Stopped (cpu_init and stop clear its enable): loaded disabled. */
    assert(!(pmu_active_get() & (1ULL << hw_id)));
    pmu_amd_ctr_load(hw_id, 0);

    /*
     * The start contract (kern/perfmon.h): with PerfMonV2 an overflow the
     * previous user left in PerfCntrGlobalStatus is not the new user's;
     * without it, the load re-armed bit 47.
     */
    if (pmu_amd.nmi && !pmu_amd.topbit) {
        pmu_status_drop(&pmu_amd_driver, hw_id);
    }

    if (pmu_amd_is_pair(hw_id)) {
        pmu_msr_write(pmu_amd_ctl_msr(hw_id + 1),
                      PMU_AMD_MERGE_EVENT | PMU_EVTSEL_EN);
    }

    pmu_msr_write(pmu_amd_ctl_msr(hw_id), pmu_amd_sel(raw_event, flags));
    pmu_active_add(hw_id);
}

/*
 * One write of the event select; the counter goes on from its count, and
 * an overflow status it holds is that count's, kept for the core to fold.
 * A pair never passes on: it is a pinned slot's own.
 */
static uint64_t pmu_amd_read(struct perfmon_dev *dev, unsigned int hw_id);

static uint64_t
pmu_amd_transfer(struct perfmon_dev *dev, unsigned int hw_id,
                 uint64_t raw_event, unsigned int flags,
                 unsigned int *read_howp, uintptr_t *argp)
{
    uint64_t raw = pmu_amd_read(dev, hw_id);

    /* The counter's RDPMC index stays: the read method holds. */
    (void)read_howp;
    (void)argp;

    assert(!pmu_amd_is_pair(hw_id));
    assert(pmu_active_get() & (1ULL << hw_id));
    pmu_msr_write(pmu_amd_ctl_msr(hw_id), pmu_amd_sel(raw_event, flags));
    return raw;
}

static void
pmu_amd_stop(struct perfmon_dev *dev, unsigned int hw_id)
{
    (void)dev;
    assert(pmu_amd_hw_id_valid(hw_id));
    pmu_msr_write(pmu_amd_ctl_msr(hw_id), 0);

    if (pmu_amd_is_pair(hw_id)) {
        pmu_msr_write(pmu_amd_ctl_msr(hw_id + 1), 0);
    }

    pmu_active_remove(hw_id);
}

/*
 * RDPMC numbers the counters as the driver does (APM vol. 3).  A pair
 * reads as its 64-bit count: the even counter's 48 bits, the odd one's
 * bits 15:0 above them.
 */
static uint64_t
pmu_amd_read(struct perfmon_dev *dev, unsigned int hw_id)
{
    uint64_t value;

    (void)dev;
    assert(pmu_amd_hw_id_valid(hw_id));
    value = msr_rdpmc(hw_id);

    if (pmu_amd_is_pair(hw_id)) {
        value = (value & PMU_AMD_CNT_MASK)
                | ((msr_rdpmc(hw_id + 1) & PMU_AMD_PAIR_HIGH)
                   << PMU_AMD_PAIR_SHIFT);
    }

    return value;
}

/*
 * RDPMC of the counter, a pair's even one: it holds every bit the core
 * keeps (the device's width), the same as read's within them.
 */
static unsigned int
pmu_amd_read_method(struct perfmon_dev *dev, unsigned int hw_id,
                    uintptr_t *argp)
{
    (void)dev;
    assert(pmu_amd_hw_id_valid(hw_id));
    *argp = hw_id;
    return PERFMON_READ_RDPMC;
}

/* Arm a counter again after bit 47 cleared (without PerfMonV2). */
static void
pmu_amd_rearm(unsigned int hw_id, uint64_t value)
{
    pmu_amd_ctr_load(hw_id, value);
}

/*
 * PerfMonV2, as Intel from version 2: freeze our counters in
 * PerfCntrGlobalCtl, take the overflowed ones from PerfCntrGlobalStatus,
 * cleared through PerfCntrGlobalStatusClr (only bits of our counters are
 * taken or cleared); overflow_intr_end opens the gate again.  Without it,
 * an active counter whose bit 47 is clear has wrapped (see the top of the
 * file).  An interrupt that is not ours ends as ours would: AMD's late
 * duplicate NMIs (the NMI of an overflow may be signalled again after the
 * handler took it) find nothing, and are left to the NMI chain's count of
 * unclaimed NMIs.
 */
static uint64_t
pmu_amd_handle_overflow_intr(struct perfmon_dev *dev)
{
    uint64_t mask, pairs;

    mask = pmu_handle_overflow_intr(dev, &pmu_amd_driver, pmu_amd.topbit,
                                    PMU_AMD_TOP_BIT, pmu_amd_rearm,
                                    pmu_amd.exist_mask);

    /*
     * A pair that wrapped holds 0 in its high bits: set them again, while
     * frozen, for its next wrap to overflow too (the re-arm did it in
     * top-bit mode).
     */
    pairs = pmu_amd.topbit ? 0 : mask & pmu_amd.pair_mask;

    while (pairs != 0) {
        unsigned int hw_id = (unsigned int)__builtin_ctzll(pairs);

        pairs &= pairs - 1;
        pmu_msr_write(pmu_amd_ctr_msr(hw_id + 1), PMU_AMD_PAIR_HIGH);
    }

    return mask;
}

static void
pmu_amd_write(struct perfmon_dev *dev, unsigned int hw_id, uint64_t value)
{
    (void)dev;
    assert(pmu_amd_hw_id_valid(hw_id));
    assert((value & ~pmu_amd.val_mask) == 0);
    pmu_amd_ctr_load(hw_id, value);
}

/* A large-increment event counts only on a pair, which only alloc gives. */
static const char *
pmu_amd_why_not(struct perfmon_dev *dev, uint64_t raw_event)
{
    (void)dev;
    return pmu_amd_pairs(raw_event)
           ? "a large-increment event counts on a counter pair, pinned "
             "events only (:D)"
           : NULL;
}

static const struct perfmon_dev_ops pmu_amd_ops = {
    .translate = pmu_amd_translate,
    .counters = pmu_amd_counters,
    .alloc = pmu_amd_alloc,
    .alloc_counters = pmu_amd_alloc_counters,
    .free = pmu_amd_free,
    .start = pmu_amd_start,
    .stop = pmu_amd_stop,
    .read = pmu_amd_read,
    .write = pmu_amd_write,
    .handle_overflow_intr = pmu_amd_handle_overflow_intr,

    /*
     * AMD does not mask the LVT on a PMI, but rewriting it unmasked is
     * harmless and keeps us working where a hypervisor does.
     */
    .overflow_intr_end = pmu_overflow_intr_end,
    .why_not = pmu_amd_why_not,
    .selftest = pmu_selftest,
    .read_method = pmu_amd_read_method,
    .transfer = pmu_amd_transfer,
};

/* ---- probe -------------------------------------------------------------- */

/*
 * This CPU's counters among mask whose MSRs answer, and (in *busyp) those
 * of them the firmware has enabled.  Fault-safe reads only.
 */
static uint64_t
pmu_amd_counters_here(uint64_t mask, uint64_t *busyp)
{
    uint64_t answer = 0;

    *busyp = 0;

    while (mask != 0) {
        unsigned int i = (unsigned int)__builtin_ctzll(mask);
        uint64_t ctl, value;

        mask &= mask - 1;

        if (msr_read_safe(pmu_amd_ctl_msr(i), &ctl) == 0
            && msr_read_safe(pmu_amd_ctr_msr(i), &value) == 0) {
            answer |= 1ULL << i;
            *busyp |= (ctl & PMU_EVTSEL_EN) ? (1ULL << i) : 0;
        }
    }

    return answer;
}

/*
 * Nothing in CPUID announces the legacy counters, and emulators (QEMU TCG)
 * let their MSRs read 0 and drop writes: check that a counter the firmware
 * does not use keeps values, including its top bit, and that the MSRs do
 * not fault (PerfCntrGlobalCtl is written back as it was, so that the
 * firmware's counters go on).
 */
static const char *
pmu_amd_check_hw(void)
{
    static const uint64_t patterns[] = { 0x5a5a, PMU_AMD_TOP_BIT | 0xa5a5 };
    uint64_t busy, free, ctl;
    unsigned int i;

    pmu_amd_counters_here(pmu_amd.cand_mask, &busy);
    free = pmu_amd.cand_mask & ~busy;

    if (free == 0) {
        return "the firmware uses every counter";
    }

    i = (unsigned int)__builtin_ctzll(free);

    if (pmu_amd.v2
        && (msr_read_safe(MSR_AMD_PERF_CNTR_GLOBAL_CTL, &ctl) != 0
            || msr_write_safe(MSR_AMD_PERF_CNTR_GLOBAL_CTL, ctl) != 0)) {
        return "PerfCntrGlobalCtl faults";
    }

    if (msr_write_safe(pmu_amd_ctl_msr(i), 0) != 0) {
        return "PerfEvtSeln faults";
    }

    if (!pmu_msr_holds(pmu_amd_ctr_msr(i), patterns, ARRAY_SIZE(patterns))) {
        return "counters do not hold values";
    }

    if (!pmu_rdpmc_reads(pmu_amd_ctr_msr(i), i)) {
        return "RDPMC does not read the counters";
    }

    return NULL;
}

static bool
pmu_amd_is_amd(void)
{
    uint32_t regs[4];

    pmu_cpuid(0, 0, regs);
    return (regs[1] == PMU_AMD_VENDOR_EBX && regs[3] == PMU_AMD_VENDOR_EDX
            && regs[2] == PMU_AMD_VENDOR_ECX)
           || (regs[1] == PMU_HYGON_VENDOR_EBX
               && regs[3] == PMU_HYGON_VENDOR_EDX
               && regs[2] == PMU_HYGON_VENDOR_ECX);
}

static void
pmu_amd_reset_state(void)
{
    pmu_amd = (struct pmu_amd){ 0 };
    pmu_probe_reset();
}

static int
pmu_amd_decline(struct pmu_caps *caps, const char *reason)
{
    caps->present = false;
    caps->reason = reason;
    pmu_amd_reset_state();
    return -ENODEV;
}

/*
 * The counters this CPU's CPUID announces: the four legacy ones, six with
 * the core extension, PerfMonV2's own count when it gives one.  *core_extp
 * and *v2p (may be NULL) receive the two features.
 */
static unsigned int
pmu_amd_cpuid_nr(bool *core_extp, bool *v2p)
{
    uint32_t ext0[4], ext1[4], ext22[4];
    bool core_ext = false, v2 = false;
    unsigned int nr;

    pmu_cpuid(0x80000000, 0, ext0);

    if (ext0[0] >= 0x80000001) {
        pmu_cpuid(0x80000001, 0, ext1);
        core_ext = (ext1[2] & PMU_CPUID_X1_ECX_PERFCTR_CORE) != 0;
    }

    nr = core_ext ? PMU_AMD_NR_CORE : PMU_AMD_NR_LEGACY;

    if (ext0[0] >= 0x80000022) {
        pmu_cpuid(0x80000022, 0, ext22);

        /* PerfMonV2 counters use the extension's MSRs. */
        if ((ext22[0] & PMU_CPUID_X22_EAX_PERFMON_V2) && core_ext) {
            v2 = true;

            if (PMU_CPUID_X22_EBX_NR_CORE(ext22[1]) != 0) {
                nr = PMU_CPUID_X22_EBX_NR_CORE(ext22[1]);
            }
        }
    }

    if (core_extp != NULL) {
        *core_extp = core_ext;
    }

    if (v2p != NULL) {
        *v2p = v2;
    }

    return MIN(nr, PMU_MAX_GP);
}

static int
pmu_amd_probe(struct pmu_caps *caps, bool use_nmi)
{
    uint32_t leaf1[4];
    const char *reason;

    assert(caps != NULL);
    pmu_amd_reset_state();
    *caps = (struct pmu_caps){ .driver = "amd", .vendor = CPU_VENDOR_AMD };

    if (!pmu_amd_is_amd()) {
        return pmu_amd_decline(caps, "not an AMD or Hygon CPU");
    }

    pmu_cpuid(1, 0, leaf1);
    pmu_amd.family = pmu_cpuid_family(leaf1[0]);
    pmu_amd.model = pmu_cpuid_model(leaf1[0]);
    caps->family = pmu_amd.family;
    caps->model = pmu_amd.model;

    if (!(leaf1[3] & PMU_CPUID_1_EDX_MSR)) {
        return pmu_amd_decline(caps, "no MSRs");
    }

    /* The counters came with the K7, family 6. */
    if (pmu_amd.family < 6) {
        return pmu_amd_decline(caps, "CPU family without counters");
    }

    pmu_amd.nr = pmu_amd_cpuid_nr(&pmu_amd.core_ext, &pmu_amd.v2);
    pmu_amd.cand_mask = (1ULL << pmu_amd.nr) - 1;
    caps->version = pmu_amd.v2 ? 2 : 1;
    caps->core_ext = pmu_amd.core_ext;
    reason = pmu_amd_check_hw();

    if (reason != NULL) {
        return pmu_amd_decline(caps, reason);
    }

    pmu_amd.nmi = use_nmi && (leaf1[3] & PMU_CPUID_1_EDX_APIC);
    return 0;
}

/* This CPU's counters among the boot CPU's candidates, free ones only. */
static uint64_t
pmu_amd_cpu_probe(uint64_t *busyp)
{
    unsigned int nr = pmu_amd_cpuid_nr(NULL, NULL);
    uint64_t mine = ((nr == 0) ? 0 : (1ULL << nr) - 1) & pmu_amd.cand_mask;

    return pmu_amd_counters_here(mine, busyp) & ~*busyp;
}

static int
pmu_amd_commit(struct pmu_caps *caps, uint64_t usable)
{
    usable &= pmu_amd.cand_mask;

    if (usable == 0) {
        return pmu_amd_decline(caps, "no counter common to every CPU");
    }

    pmu_amd.exist_mask = usable;
    pmu_amd.nr = pmu_popcount(usable);
    pmu_amd.topbit = pmu_amd.nmi && !pmu_amd.v2;
    pmu_amd.val_mask = pmu_amd.topbit ? PMU_AMD_CNT_MASK >> 1
                                      : PMU_AMD_CNT_MASK;

    pmu_amd_dev = (struct perfmon_dev){
        .name = "amd",
        .ops = &pmu_amd_ops,
        .overflow_intr = pmu_amd.nmi,
        .width = pmu_amd.topbit ? PMU_AMD_WIDTH - 1 : PMU_AMD_WIDTH,
        .nr_pmcs = pmu_amd.nr,
    };

    caps->present = true;
    caps->reason = NULL;
    caps->nr_gp = pmu_amd.nr;
    caps->gp_width = PMU_AMD_WIDTH;
    caps->width = pmu_amd_dev.width;
    caps->global_ctrl = pmu_amd.v2;
    caps->full_width_write = true;
    caps->overflow_nmi = pmu_amd.nmi;
    return 0;
}

/*
 * Our counters stopped and cleared, their stale overflow bits cleared and,
 * with PerfMonV2, their global enables set; the firmware's left as they
 * are.
 */
static void
pmu_amd_cpu_init(void)
{
    uint64_t mask = pmu_amd.exist_mask;

    while (mask != 0) {
        unsigned int i = (unsigned int)__builtin_ctzll(mask);

        mask &= mask - 1;
        pmu_msr_write(pmu_amd_ctl_msr(i), 0);
        pmu_msr_write(pmu_amd_ctr_msr(i), 0);
    }

    if (pmu_amd.v2) {
        uint64_t stale = pmu_msr_read(MSR_AMD_PERF_CNTR_GLOBAL_STATUS)
                         & pmu_amd.exist_mask;

        if (stale != 0) {
            pmu_msr_write(MSR_AMD_PERF_CNTR_GLOBAL_STATUS_CLR, stale);
        }

        pmu_global_ctrl_set(&pmu_amd_driver,
                            pmu_msr_read(MSR_AMD_PERF_CNTR_GLOBAL_CTL)
                            | pmu_amd.exist_mask);
    }
}

const struct pmu_driver pmu_amd_driver = {
    .name = "amd",
    .probe = pmu_amd_probe,
    .cpu_probe = pmu_amd_cpu_probe,
    .commit = pmu_amd_commit,
    .cpu_init = pmu_amd_cpu_init,
    .ctl_msr = pmu_amd_ctl_msr,
    .ctr_msr = pmu_amd_ctr_msr,
    .global_ctrl_msr = MSR_AMD_PERF_CNTR_GLOBAL_CTL,
    .global_status_msr = MSR_AMD_PERF_CNTR_GLOBAL_STATUS,
    .global_ack_msr = MSR_AMD_PERF_CNTR_GLOBAL_STATUS_CLR,
    .dev = &pmu_amd_dev,
};
