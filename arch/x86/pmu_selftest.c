/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * x86 PMU self-test: the checks of `perfmon selftest` that the core's API
 * cannot express (kern/perfmon_selftest.h), for both drivers, modelled on
 * what kvm-unit-tests checks of a virtual PMU:
 *
 * - every counter that can count instructions counts exactly
 *   WORKLOAD_SPIN_INSNS per iteration of the spin loop, every
 *   counter that can count cycles a plausible number per TSC cycle, and
 *   reference cycles tick at the TSC's rate where a counter counts them;
 * - a counter loaded near its wrap, its interrupt enabled, raises a PMI
 *   whose handler acknowledges the status bit, and a second wrap a second
 *   PMI (the LVT was unmasked); without the interrupt bit, no PMI, and the
 *   status bit waits for its acknowledgement;
 * - the counters take writes as the CPU says: Intel's legacy alias loads
 *   32 bits sign-extended, the full-width alias where PERF_CAPABILITIES
 *   says so, nothing beyond the width (#GP); AMD's take all 48 bits;
 * - the global enable gates counting;
 * - the counter-mask and edge fields of an event select behave;
 * - a counter reprogrammed in place (transfer) keeps its count and counts
 *   its new event.
 *
 * The counters are reserved with perfmon_dev_alloc() and driven with the
 * device's own operations; what is measured runs with interrupts disabled
 * on the CPU the run is pinned to (NMIs, the PMIs among them, still come).
 * Every count is the smallest of a few runs; per-iteration figures are the
 * difference of a long and a short run, so that the reads cancel out.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/msr.h"
#include "arch/x86/pmu.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_selftest.h"
#include "kern/printf.h"

#define PMU_SELFTEST_SHORT      100000ULL
#define PMU_SELFTEST_LONG       300000ULL
#define PMU_SELFTEST_ROUNDS     3

/* Events left before the wrap when a counter is loaded near it. */
#define PMU_SELFTEST_WRAP_LEFT  1000ULL

/*
 * Iterations that surely carry a loaded counter past its wrap, and how
 * many more such runs to wait for its PMI (a hypervisor injects it on its
 * next entry into the guest, which may take a while).
 */
#define PMU_SELFTEST_WRAP_SPIN  10000ULL
#define PMU_SELFTEST_PMI_WAITS  100

#define PMU_SELFTEST_NAME_SIZE  64

/* The counters reserved for one event, and its raw code. */
struct pmu_selftest_set {
    uint64_t raw;
    unsigned int nr;
    unsigned int hw_ids[PERFMON_DEV_MAX_PMCS];
};

/* Everything a check needs, for one device. */
struct pmu_selftest {
    struct perfmon_dev *dev;
    const struct pmu_driver *driver;
    const struct pmu_caps *caps;
    struct perfmon_selftest *st;
    uint64_t mask;                      /* the counter bits the core sees */
};

/* "counter 3" or, Intel's, "fixed 1": how users see hw ids (perfmon info). */
static void
pmu_selftest_name(const struct pmu_selftest *t, char *buf, size_t size,
                  unsigned int hw_id, const char *what)
{
    if (t->caps->vendor == CPU_VENDOR_INTEL && hw_id >= PMU_INTEL_FIXED_BASE) {
        ksnprintf(buf, size, "fixed %u: %s", hw_id - PMU_INTEL_FIXED_BASE,
                  what);
    } else {
        ksnprintf(buf, size, "counter %u: %s", hw_id, what);
    }
}

/*
 * Report a check of counter hw_id, named after it: perfmon_selftest_range(),
 * _milli() and _hex() with the name pmu_selftest_name() gives.
 */
static void
pmu_selftest_range(const struct pmu_selftest *t, unsigned int hw_id,
                   const char *what, uint64_t value, uint64_t lo, uint64_t hi)
{
    char name[PMU_SELFTEST_NAME_SIZE];

    pmu_selftest_name(t, name, sizeof(name), hw_id, what);
    perfmon_selftest_range(t->st, name, value, lo, hi);
}

static void
pmu_selftest_milli(const struct pmu_selftest *t, unsigned int hw_id,
                   const char *what, uint64_t value, uint64_t lo, uint64_t hi)
{
    char name[PMU_SELFTEST_NAME_SIZE];

    pmu_selftest_name(t, name, sizeof(name), hw_id, what);
    perfmon_selftest_milli(t->st, name, value, lo, hi);
}

static void
pmu_selftest_hex(const struct pmu_selftest *t, unsigned int hw_id,
                 const char *what, uint64_t value, uint64_t expected)
{
    char name[PMU_SELFTEST_NAME_SIZE];

    pmu_selftest_name(t, name, sizeof(name), hw_id, what);
    perfmon_selftest_hex(t->st, name, value, expected);
}

/* Every counter the device can give to event id, or none. */
static int
pmu_selftest_take(struct pmu_selftest *t, unsigned int id,
                  struct pmu_selftest_set *set)
{
    unsigned int hw_id;
    int error;

    set->nr = 0;
    error = perfmon_dev_translate(t->dev, id, &set->raw);

    if (error) {
        return error;
    }

    while (set->nr < ARRAY_SIZE(set->hw_ids)
           && perfmon_dev_alloc(t->dev, set->raw, PERFMON_EF_KERN,
                                &hw_id) == 0) {
        set->hw_ids[set->nr++] = hw_id;
    }

    return (set->nr != 0) ? 0 : -EAGAIN;
}

static void
pmu_selftest_give(struct pmu_selftest *t, struct pmu_selftest_set *set)
{
    for (unsigned int i = 0; i < set->nr; i++) {
        perfmon_dev_free(t->dev, set->hw_ids[i]);
    }

    set->nr = 0;
}

/* Keep the index-th counter of set alone, giving the others back. */
static unsigned int
pmu_selftest_keep(struct pmu_selftest *t, struct pmu_selftest_set *set,
                  unsigned int index)
{
    unsigned int hw_id = set->hw_ids[index];

    for (unsigned int i = 0; i < set->nr; i++) {
        if (i != index) {
            perfmon_dev_free(t->dev, set->hw_ids[i]);
        }
    }

    set->hw_ids[0] = hw_id;
    set->nr = 1;
    return hw_id;
}

/* Start or stop counter hw_id (the operations want interrupts off). */
static void
pmu_selftest_start(struct pmu_selftest *t, unsigned int hw_id, uint64_t raw)
{
    unsigned long flags = cpu_intr_save();

    t->dev->ops->start(t->dev, hw_id, raw, PERFMON_EF_KERN);
    cpu_intr_restore(flags);
}

static void
pmu_selftest_stop(struct pmu_selftest *t, unsigned int hw_id)
{
    unsigned long flags = cpu_intr_save();

    t->dev->ops->stop(t->dev, hw_id);
    cpu_intr_restore(flags);
}

/*
 * The events each counter of set counted over spin(n), interrupts
 * disabled: the smallest of PMU_SELFTEST_ROUNDS runs per counter, into
 * counts[], and the TSC cycles of the run of the first counter's smallest.
 */
static uint64_t
pmu_selftest_sample(struct pmu_selftest *t, const struct pmu_selftest_set *set,
                    uint64_t n, uint64_t *counts)
{
    uint64_t before[PERFMON_DEV_MAX_PMCS], tsc = 0;

    for (unsigned int i = 0; i < set->nr; i++) {
        counts[i] = UINT64_MAX;
    }

    for (unsigned int round = 0; round < PMU_SELFTEST_ROUNDS; round++) {
        unsigned long flags = cpu_intr_save();
        uint64_t spent;

        for (unsigned int i = 0; i < set->nr; i++) {
            before[i] = t->dev->ops->read(t->dev, set->hw_ids[i]);
        }

        spent = perfmon_selftest_spin(n);

        for (unsigned int i = 0; i < set->nr; i++) {
            uint64_t delta = (t->dev->ops->read(t->dev, set->hw_ids[i])
                              - before[i]) & t->mask;

            if (delta < counts[i]) {
                counts[i] = delta;
                tsc = (i == 0) ? spent : tsc;
            }
        }

        cpu_intr_restore(flags);
    }

    return tsc;
}

/* ---- counting ----------------------------------------------------------- */

/* Each counter of set, started with its event, counts per spin iteration. */
static void
pmu_selftest_per_iter(struct pmu_selftest *t, struct pmu_selftest_set *set,
                      const char *what, uint64_t lo, uint64_t hi)
{
    uint64_t shorter[PERFMON_DEV_MAX_PMCS], longer[PERFMON_DEV_MAX_PMCS];

    pmu_selftest_sample(t, set, PMU_SELFTEST_SHORT, shorter);
    pmu_selftest_sample(t, set, PMU_SELFTEST_LONG, longer);

    for (unsigned int i = 0; i < set->nr; i++) {
        pmu_selftest_milli(t, set->hw_ids[i], what,
                           (longer[i] > shorter[i])
                           ? perfmon_selftest_ratio(longer[i] - shorter[i],
                                                    PMU_SELFTEST_LONG
                                                    - PMU_SELFTEST_SHORT)
                           : 0, lo, hi);
    }
}

/* Each counter of set counts per TSC cycle of the long spin. */
static void
pmu_selftest_per_tsc(struct pmu_selftest *t, struct pmu_selftest_set *set,
                     const char *what, uint64_t lo, uint64_t hi)
{
    uint64_t counts[PERFMON_DEV_MAX_PMCS], tsc;

    tsc = pmu_selftest_sample(t, set, PMU_SELFTEST_LONG, counts);

    for (unsigned int i = 0; i < set->nr; i++) {
        pmu_selftest_milli(t, set->hw_ids[i], what,
                           perfmon_selftest_ratio(counts[i], tsc), lo, hi);
    }
}

/*
 * Run check on every counter the device can give to event id, started
 * with it; a SKIP line when the device cannot count it here.
 */
static void
pmu_selftest_each(struct pmu_selftest *t, unsigned int id, const char *what,
                  void (*check)(struct pmu_selftest *t,
                                struct pmu_selftest_set *set,
                                const char *what, uint64_t lo, uint64_t hi),
                  uint64_t lo, uint64_t hi)
{
    struct pmu_selftest_set set;
    char name[PMU_SELFTEST_NAME_SIZE];
    int error;

    error = pmu_selftest_take(t, id, &set);

    if (error) {
        ksnprintf(name, sizeof(name), "every counter: %s", what);
        perfmon_selftest_skip(t->st, name, (error == -EAGAIN)
                                           ? "no counter free"
                                           : "no code for this event");
        return;
    }

    for (unsigned int i = 0; i < set.nr; i++) {
        pmu_selftest_start(t, set.hw_ids[i], set.raw);
    }

    check(t, &set, what, lo, hi);

    for (unsigned int i = 0; i < set.nr; i++) {
        pmu_selftest_stop(t, set.hw_ids[i]);
    }

    pmu_selftest_give(t, &set);
}

/* ---- overflow ----------------------------------------------------------- */

/*
 * Load hw_id near its wrap, run past it and wait a while for the PMI: the
 * PMIs that came meanwhile.
 */
static uint64_t
pmu_selftest_wrap(struct pmu_selftest *t, unsigned int hw_id)
{
    unsigned long flags = cpu_intr_save();
    uint64_t pmis = pmu_nr_pmis();

    t->dev->ops->write(t->dev, hw_id, t->mask + 1 - PMU_SELFTEST_WRAP_LEFT);
    perfmon_selftest_spin(PMU_SELFTEST_WRAP_SPIN);

    for (unsigned int i = 0; i < PMU_SELFTEST_PMI_WAITS
                             && pmu_nr_pmis() == pmis; i++) {
        perfmon_selftest_spin(PMU_SELFTEST_WRAP_SPIN);
    }

    pmis = pmu_nr_pmis() - pmis;
    cpu_intr_restore(flags);
    return pmis;
}

/* The overflow status bit of hw_id (only with a global status register). */
static uint64_t
pmu_selftest_status(struct pmu_selftest *t, unsigned int hw_id)
{
    uint64_t status = 0;

    msr_read_safe(t->driver->global_status_msr, &status);
    return (status >> hw_id) & 1;
}

/*
 * Each counter of set (counting instructions), its interrupt enabled:
 * one wrap, one PMI, whose handler clears the status bit; a second wrap,
 * a second PMI, which comes only if the first one's handler unmasked the
 * LVT.
 */
static void
pmu_selftest_pmis(struct pmu_selftest *t, struct pmu_selftest_set *set,
                  const char *what, uint64_t lo, uint64_t hi)
{
    (void)what;
    (void)lo;
    (void)hi;

    for (unsigned int i = 0; i < set->nr; i++) {
        unsigned int hw_id = set->hw_ids[i];
        uint64_t first = pmu_selftest_wrap(t, hw_id);
        uint64_t second = pmu_selftest_wrap(t, hw_id);

        pmu_selftest_range(t, hw_id, "PMIs of a wrap", first, 1, 1);
        pmu_selftest_range(t, hw_id, "PMIs of the next wrap", second, 1, 1);

        if (t->caps->global_ctrl) {
            pmu_selftest_range(t, hw_id, "status bit after the PMI",
                               pmu_selftest_status(t, hw_id), 0, 0);
        }
    }
}

/*
 * A general-purpose counter without its interrupt bit: no PMI; with a
 * status register, the bit set by the wrap stays until acknowledged.
 */
static void
pmu_selftest_no_pmi(struct pmu_selftest *t, unsigned int hw_id, uint64_t raw)
{
    uint32_t ctl = t->driver->ctl_msr(hw_id);
    uint64_t sel, pmis, set = 0, acked = 0;
    unsigned long flags;

    pmu_selftest_start(t, hw_id, raw);
    flags = cpu_intr_save();
    sel = pmu_msr_read(ctl);
    pmu_msr_write(ctl, sel & ~PMU_EVTSEL_INT);
    pmis = pmu_nr_pmis();
    t->dev->ops->write(t->dev, hw_id, t->mask + 1 - PMU_SELFTEST_WRAP_LEFT);
    perfmon_selftest_spin(PMU_SELFTEST_WRAP_SPIN);
    pmis = pmu_nr_pmis() - pmis;

    if (t->caps->global_ctrl) {
        set = pmu_selftest_status(t, hw_id);
        msr_write_safe(t->driver->global_ack_msr, 1ULL << hw_id);
        acked = pmu_selftest_status(t, hw_id);
    }

    /* Armed again before the interrupt bit comes back. */
    t->dev->ops->write(t->dev, hw_id, 0);
    pmu_msr_write(ctl, sel);
    cpu_intr_restore(flags);
    pmu_selftest_stop(t, hw_id);

    pmu_selftest_range(t, hw_id, "PMIs of a wrap, interrupt bit clear", pmis,
                       0, 0);

    if (t->caps->global_ctrl) {
        pmu_selftest_range(t, hw_id, "status bit after that wrap", set, 1, 1);
        pmu_selftest_range(t, hw_id, "status bit once acknowledged", acked,
                           0, 0);
    }
}

static void
pmu_selftest_overflow(struct pmu_selftest *t)
{
    struct pmu_selftest_set set;

    if (!t->caps->overflow_nmi) {
        perfmon_selftest_skip(t->st, "every counter: PMIs of wraps",
                              "overflow is polled (no interrupt)");
        return;
    }

    pmu_selftest_each(t, PERFMON_EV_INSTRUCTION, "PMIs of wraps",
                      pmu_selftest_pmis, 0, 0);

    if (pmu_selftest_take(t, PERFMON_EV_BRANCH, &set) == 0) {
        pmu_selftest_no_pmi(t, pmu_selftest_keep(t, &set, 0), set.raw);
        pmu_selftest_give(t, &set);
    }
}

/* ---- writes, gates, fields ---------------------------------------------- */

/* A general-purpose counter reserved and stopped, for MSR-level checks. */
static bool
pmu_selftest_take_gp(struct pmu_selftest *t, struct pmu_selftest_set *set,
                     const char *name)
{
    if (pmu_selftest_take(t, PERFMON_EV_BRANCH, set) != 0) {
        perfmon_selftest_skip(t->st, name, "no general-purpose counter free");
        return false;
    }

    return true;
}

/*
 * Intel: IA32_PMCx loads bits 31:0 sign-extended (SDM vol. 3B, "Full-Width
 * Writes to Performance Counter Registers"); IA32_A_PMCx, present when
 * IA32_PERF_CAPABILITIES.FW_WRITE, load the full width, and a value
 * beyond it faults.  AMD: the counters take their 48 bits.
 */
static void
pmu_selftest_writes(struct pmu_selftest *t)
{
    uint64_t cnt_mask = (1ULL << t->caps->gp_width) - 1, back = 0;
    struct pmu_selftest_set set;
    char name[PMU_SELFTEST_NAME_SIZE];
    uint32_t ctr;
    unsigned int hw_id;
    unsigned long flags;
    int fault;

    if (!pmu_selftest_take_gp(t, &set, "writes to a counter")) {
        return;
    }

    hw_id = set.hw_ids[0];
    ctr = t->driver->ctr_msr(hw_id);
    flags = cpu_intr_save();

    if (t->caps->vendor == CPU_VENDOR_INTEL) {
        msr_write_safe(ctr, 0x80000000ULL);
        msr_read_safe(ctr, &back);
        cpu_intr_restore(flags);
        pmu_selftest_hex(t, hw_id, "legacy write of 0x80000000", back,
                         0xffffffff80000000ULL & cnt_mask);

        if (!t->caps->full_width_write) {
            pmu_selftest_name(t, name, sizeof(name), hw_id,
                              "full-width write");
            perfmon_selftest_skip(t->st, name,
                                  "PERF_CAPABILITIES.FW_WRITE is clear");
        } else {
            flags = cpu_intr_save();
            msr_write_safe(MSR_IA32_A_PMC0 + hw_id, (cnt_mask >> 1) + 0x5a5a);
            msr_read_safe(ctr, &back);
            fault = msr_write_safe(MSR_IA32_A_PMC0 + hw_id, cnt_mask + 1);
            cpu_intr_restore(flags);
            pmu_selftest_hex(t, hw_id, "full-width write", back,
                             (cnt_mask >> 1) + 0x5a5a);
            pmu_selftest_range(t, hw_id,
                               "full-width write beyond the width faults",
                               fault != 0, 1, 1);
        }
    } else {
        msr_write_safe(ctr, (cnt_mask >> 1) + 0x5a5a);
        msr_read_safe(ctr, &back);
        cpu_intr_restore(flags);
        pmu_selftest_hex(t, hw_id, "48-bit write", back,
                         (cnt_mask >> 1) + 0x5a5a);
    }

    flags = cpu_intr_save();
    msr_write_safe(ctr, 0);
    cpu_intr_restore(flags);
    pmu_selftest_give(t, &set);
}

/* The global enable of a counter stops it, and lets it count again. */
static void
pmu_selftest_gate(struct pmu_selftest *t)
{
    uint64_t counts[2], ctrl, bit;
    struct pmu_selftest_set set;
    uint64_t n = PMU_SELFTEST_LONG;
    unsigned int hw_id;
    unsigned long flags;

    if (!t->caps->global_ctrl) {
        perfmon_selftest_skip(t->st, "global enable gates counting",
                              "no global control register");
        return;
    }

    if (pmu_selftest_take(t, PERFMON_EV_INSTRUCTION, &set) != 0) {
        perfmon_selftest_skip(t->st, "global enable gates counting",
                              "no counter free");
        return;
    }

    hw_id = pmu_selftest_keep(t, &set, 0);
    pmu_selftest_start(t, hw_id, set.raw);
    flags = cpu_intr_save();
    ctrl = pmu_global_ctrl_get();
    bit = 1ULL << hw_id;
    pmu_global_ctrl_set(t->driver, ctrl & ~bit);
    cpu_intr_restore(flags);
    pmu_selftest_sample(t, &set, n, &counts[0]);
    flags = cpu_intr_save();
    pmu_global_ctrl_set(t->driver, ctrl);
    cpu_intr_restore(flags);
    pmu_selftest_sample(t, &set, n, &counts[1]);
    pmu_selftest_stop(t, hw_id);
    pmu_selftest_give(t, &set);

    pmu_selftest_range(t, hw_id, "instructions, global enable clear",
                       counts[0], 0, 0);
    pmu_selftest_range(t, hw_id, "instructions, global enable set",
                       counts[1], n * WORKLOAD_SPIN_INSNS,
                       n * WORKLOAD_SPIN_INSNS + n / 100 + 2000);
}

/*
 * Counter mask and edge on retired instructions: cmask 1 counts the
 * cycles that retire at least one (some, and no more than the
 * instructions), cmask 255 those that retire 255 (none: no core retires
 * that many at once), and the edge of cmask 1 the starts of such runs
 * (no more than the cycles themselves).
 */
static void
pmu_selftest_fields(struct pmu_selftest *t)
{
    static const char what[] = "counter mask and edge";
    uint64_t insns = PMU_SELFTEST_LONG * WORKLOAD_SPIN_INSNS;
    uint64_t counts[3], raw;
    struct pmu_selftest_set set;
    unsigned int hw_id;

    if (pmu_selftest_take(t, PERFMON_EV_INSTRUCTION, &set) != 0) {
        perfmon_selftest_skip(t->st, what, "no counter free");
        return;
    }

    /* A general-purpose counter (the last given): fixed ones have no
       such fields. */
    hw_id = pmu_selftest_keep(t, &set, set.nr - 1);
    raw = set.raw;

    if (t->driver->ctl_msr(hw_id) == 0) {
        pmu_selftest_give(t, &set);
        perfmon_selftest_skip(t->st, what, "no general-purpose counter free");
        return;
    }

    for (unsigned int i = 0; i < 3; i++) {
        static const uint64_t fields[3] = {
            1ULL << 24, 255ULL << 24, (1ULL << 24) | PMU_EVTSEL_EDGE,
        };

        pmu_selftest_start(t, hw_id, raw | fields[i]);
        pmu_selftest_sample(t, &set, PMU_SELFTEST_LONG, &counts[i]);
        pmu_selftest_stop(t, hw_id);
    }

    pmu_selftest_give(t, &set);
    pmu_selftest_range(t, hw_id, "cycles retiring >= 1 (cmask 1)", counts[0],
                       1, insns);
    pmu_selftest_range(t, hw_id, "cycles retiring >= 255 (cmask 255)",
                       counts[1], 0, 0);
    pmu_selftest_range(t, hw_id, "edges of cmask 1", counts[2], 0, counts[0]);
}

/*
 * A general-purpose counter passed on in place, as the core passes one
 * from an outgoing thread's event to an incoming one's (the device's
 * transfer): from instructions to an event that counts nothing (cmask
 * 255), it keeps the count it had, with no reset and none of the new
 * event; passed back, it counts instructions exactly again.
 */
static void
pmu_selftest_transfer(struct pmu_selftest *t)
{
    static const char what[] = "transfer in place";
    struct pmu_selftest_set set;
    uint64_t before, after;
    unsigned long flags;
    unsigned int hw_id, how = PERFMON_READ_OP;
    uintptr_t arg = 0;

    if (pmu_selftest_take(t, PERFMON_EV_INSTRUCTION, &set) != 0) {
        perfmon_selftest_skip(t->st, what, "no counter free");
        return;
    }

    hw_id = pmu_selftest_keep(t, &set, set.nr - 1);

    if (t->driver->ctl_msr(hw_id) == 0) {
        pmu_selftest_give(t, &set);
        perfmon_selftest_skip(t->st, what, "no general-purpose counter free");
        return;
    }

    pmu_selftest_start(t, hw_id, set.raw);
    flags = cpu_intr_save();
    perfmon_selftest_spin(PMU_SELFTEST_SHORT);
    before = t->dev->ops->read(t->dev, hw_id);
    t->dev->ops->transfer(t->dev, hw_id, set.raw | (255ULL << 24),
                          PERFMON_EF_KERN, &how, &arg);
    perfmon_selftest_spin(PMU_SELFTEST_SHORT);
    after = t->dev->ops->read(t->dev, hw_id);
    t->dev->ops->transfer(t->dev, hw_id, set.raw, PERFMON_EF_KERN, &how,
                          &arg);
    cpu_intr_restore(flags);

    /* What retires between the read and the write, a few instructions. */
    pmu_selftest_range(t, hw_id, "count kept by a transfer",
                       (after - before) & t->mask, 0, 100);
    pmu_selftest_per_iter(t, &set, "instructions/iter, transferred",
                          3960, 4040);
    pmu_selftest_stop(t, hw_id);
    pmu_selftest_give(t, &set);
}

/* ---- the operation ------------------------------------------------------ */

void
pmu_selftest(struct perfmon_dev *dev, struct perfmon_selftest *st)
{
    struct pmu_selftest t = {
        .dev = dev,
        .driver = pmu_get_driver(),
        .caps = pmu_get_caps(),
        .st = st,
        .mask = (dev->width >= 64) ? UINT64_MAX : (1ULL << dev->width) - 1,
    };

    if (t.driver == NULL || t.driver->dev != dev) {
        perfmon_selftest_fail(st, dev->name, "not the registered x86 PMU");
        return;
    }

    /*
     * The ranges of kern/perfmon/cmd/perfmon_selftest.c's, for the same reasons:
     * exactly 4 instructions per iteration, 1% for SMIs and hypervisors;
     * cycles anywhere from a throttled core to turbo; reference cycles at
     * the TSC's rate (less when a hypervisor takes the CPU away, off a
     * little where it scales the guest's TSC).
     */
    pmu_selftest_each(&t, PERFMON_EV_INSTRUCTION,
                      "instructions per spin iteration",
                      pmu_selftest_per_iter, 3960, 4040);
    pmu_selftest_each(&t, PERFMON_EV_CYCLE, "cycles per TSC cycle",
                      pmu_selftest_per_tsc, 200, 5000);
    pmu_selftest_each(&t, PERFMON_EV_REF_CYCLE, "ref-cycles per TSC cycle",
                      pmu_selftest_per_tsc, 300, 1500);
    pmu_selftest_overflow(&t);
    pmu_selftest_writes(&t);
    pmu_selftest_gate(&t);
    pmu_selftest_fields(&t);
    pmu_selftest_transfer(&t);
}
