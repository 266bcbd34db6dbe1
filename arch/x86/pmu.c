/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * x86 hardware PMU: what the Intel and AMD drivers do the same way (mode
 * bits, the check that a counter holds values, the per-CPU active masks,
 * the two ways of finding overflowed counters, the end of a PMI and its
 * count).  It touches the hardware only through the seam of pmu.h, so the
 * host tests run it on the register-level model with the drivers.  The
 * boot glue that picks and registers a driver is pmu_boot.c.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "arch/x86/pmu.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "kern/log.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/printf.h"

/* Overflow-status rounds in one PMI before giving up (a stuck status). */
#define PMU_MAX_STATUS_ROUNDS   16

/* Counters started on each CPU (hw id bits), see pmu_active_add(). */
static uint64_t pmu_active[CPU_MAX];

/*
 * A CPU's overflow handler in progress: its global enable register while
 * frozen (which MSR, and the value to restore), and whether the LVT was
 * unmasked already (top-bit handlers unmask first).  Written and read by
 * its CPU's NMI handler only (NMIs do not nest).
 */
struct pmu_frozen {
    bool frozen;
    bool unmasked;
    uint32_t msr;
    uint64_t saved;
};

static struct pmu_frozen pmu_frozen[CPU_MAX];

static uint64_t pmu_pmis;

/* ---- shared by the drivers ----------------------------------------------- */

/* No libgcc in the kernel: count bits by hand (a few, at probe time). */
unsigned int
pmu_popcount(uint64_t x)
{
    unsigned int n = 0;

    while (x != 0) {
        x &= x - 1;
        n++;
    }

    return n;
}

uint64_t
pmu_mode_bits(unsigned int flags, uint64_t os, uint64_t usr)
{
    return ((flags & PERFMON_EF_KERN) ? os : 0)
           | ((flags & PERFMON_EF_USER) ? usr : 0);
}

bool
pmu_msr_holds(uint32_t msr, const uint64_t *patterns, unsigned int nr)
{
    bool holds = true;

    for (unsigned int i = 0; i < nr && holds; i++) {
        uint64_t back;

        holds = msr_write_safe(msr, patterns[i]) == 0
                && msr_read_safe(msr, &back) == 0 && back == patterns[i];
    }

    msr_write_safe(msr, 0);
    return holds;
}

bool
pmu_flags_valid(unsigned int flags)
{
    return (flags & ~PERFMON_EF_MODE) == 0 && (flags & PERFMON_EF_MODE) != 0;
}

int
pmu_alloc(struct perfmon_dev *dev, uint64_t *alloc_mask, unsigned int *hw_idp,
          uint64_t raw_event, unsigned int flags)
{
    uint64_t counters, prefer;
    int error;

    if (hw_idp == NULL) {
        return -EINVAL;
    }

    error = dev->ops->counters(dev, raw_event, flags, &counters, &prefer);
    return error ? error : pmu_alloc_pick(alloc_mask, counters, prefer,
                                          hw_idp);
}

void
pmu_free(uint64_t *alloc_mask, unsigned int hw_id)
{
    assert(*alloc_mask & (1ULL << hw_id));
    *alloc_mask &= ~(1ULL << hw_id);
}

int
pmu_alloc_pick(uint64_t *alloc_mask, uint64_t allowed, uint64_t prefer,
               unsigned int *hw_idp)
{
    uint64_t free = allowed & ~*alloc_mask;

    if (allowed == 0) {
        return -ENOENT;
    }

    if (free == 0) {
        return -EAGAIN;
    }

    if ((free & prefer) != 0) {
        free &= prefer;
    }

    *hw_idp = (unsigned int)__builtin_ctzll(free);
    *alloc_mask |= 1ULL << *hw_idp;
    return 0;
}

void
pmu_active_add(unsigned int hw_id)
{
    unsigned int cpu = cpu_id();

    WRITE_ONCE(pmu_active[cpu], pmu_active[cpu] | (1ULL << hw_id));
}

void
pmu_active_remove(unsigned int hw_id)
{
    unsigned int cpu = cpu_id();

    WRITE_ONCE(pmu_active[cpu], pmu_active[cpu] & ~(1ULL << hw_id));
}

uint64_t
pmu_active_get(void)
{
    return READ_ONCE(pmu_active[cpu_id()]);
}

void
pmu_probe_reset(void)
{
    for (unsigned int i = 0; i < ARRAY_SIZE(pmu_active); i++) {
        WRITE_ONCE(pmu_active[i], 0);
        pmu_frozen[i].frozen = false;
        pmu_frozen[i].unmasked = false;
    }

    __atomic_store_n(&pmu_pmis, 0, __ATOMIC_RELAXED);
}

void
pmu_status_drop(const struct pmu_driver *drv, unsigned int hw_id)
{
    uint64_t bit = 1ULL << hw_id;

    if (pmu_msr_read(drv->global_status_msr) & bit) {
        pmu_msr_write(drv->global_ack_msr, bit);
    }
}

/*
 * The bits of status_msr within mask, each acknowledged by writing it to
 * clear_msr, re-read until none is left (a counter may overflow meanwhile;
 * the rounds are bounded against a stuck status).  Returns the bits seen.
 */
static uint64_t
pmu_status_ack(uint32_t status_msr, uint32_t clear_msr, uint64_t mask)
{
    uint64_t seen = 0;

    for (unsigned int round = 0; round < PMU_MAX_STATUS_ROUNDS; round++) {
        uint64_t bits = pmu_msr_read(status_msr) & mask;

        if (bits == 0) {
            break;
        }

        pmu_msr_write(clear_msr, bits);
        seen |= bits;
    }

    return seen;
}

/*
 * The active counters of this CPU whose bit top is clear have wrapped:
 * each is armed again by rearm.  Returns them.
 */
static uint64_t
pmu_topbit_scan(uint64_t top, uint32_t (*ctr_msr)(unsigned int),
                void (*rearm)(unsigned int hw_id, uint64_t value))
{
    uint64_t active = pmu_active_get();
    uint64_t wrapped = 0;

    while (active != 0) {
        unsigned int hw_id = (unsigned int)__builtin_ctzll(active);
        uint64_t value;

        active &= active - 1;
        value = pmu_msr_read(ctr_msr(hw_id));

        if ((value & top) == 0) {
            rearm(hw_id, value);
            wrapped |= 1ULL << hw_id;
        }
    }

    return wrapped;
}

/*
 * The bits ours of ctrl_msr cleared, the others (the firmware's) kept, so
 * that our counters stand still; pmu_overflow_intr_end restores it.
 */
static void
pmu_freeze(uint32_t ctrl_msr, uint64_t ours)
{
    struct pmu_frozen *f = &pmu_frozen[cpu_id()];

    assert(!f->frozen);
    f->saved = pmu_msr_read(ctrl_msr);
    f->msr = ctrl_msr;
    f->frozen = true;
    pmu_msr_write(ctrl_msr, f->saved & ~ours);
}

/* An overflow handler that found mask: count the PMI.  Returns mask. */
static uint64_t
pmu_intr_claimed(uint64_t mask)
{
    __atomic_fetch_add(&pmu_pmis, 1, __ATOMIC_RELAXED);
    return mask;
}

uint64_t
pmu_handle_overflow_intr(struct perfmon_dev *dev,
                         const struct pmu_driver *drv, bool topbit,
                         uint64_t top,
                         void (*rearm)(unsigned int hw_id, uint64_t value),
                         uint64_t exist)
{
    uint64_t mask;

    if (topbit) {
        /*
         * The counters run on through the scan: a counter that wraps
         * after its read must find the LVT unmasked, or its PMI (masked
         * on delivery, on Intel) is lost.  One that wraps after the unmask
         * and before its read is taken now, and its NMI then finds
         * nothing: a harmless unclaimed NMI.
         */
        lapic_pmc_unmask();
        pmu_frozen[cpu_id()].unmasked = true;
        mask = pmu_topbit_scan(top, drv->ctr_msr, rearm);
    } else {
        if (pmu_active_get() != 0) {
            pmu_freeze(drv->global_ctrl_msr, exist);
        }

        mask = pmu_status_ack(drv->global_status_msr, drv->global_ack_msr,
                              exist);
    }

    if (mask == 0) {
        pmu_overflow_intr_end(dev);
        return 0;
    }

    return pmu_intr_claimed(mask);
}

/*
 * Every interrupt the handler saw ends here, its own (through the core's
 * overflow_intr_end) or not (the handler calls it before answering "not
 * mine"): the LVT is unmasked, then the gate opens as it was.  In that
 * order: a counter that wraps once the gate is open raises a PMI the LVT
 * takes (pending until this NMI returns); the other order leaves a window
 * in which the PMI finds the LVT still masked and is dropped, its status
 * bit set with nothing pending, and the counter never interrupts again
 * (Linux's late unmask has the same window; its Alder Lake E-core path
 * and Zircon unmask before re-enabling).  Unmasking even when no counter
 * is active is what makes a late PMI harmless: a counter stopped between
 * its overflow and its NMI leaves nothing to claim, but the PMI masked the
 * LVT, and the next counter started here would never interrupt.
 */
void
pmu_overflow_intr_end(struct perfmon_dev *dev)
{
    struct pmu_frozen *f = &pmu_frozen[cpu_id()];

    (void)dev;

    if (!f->unmasked) {
        lapic_pmc_unmask();
    }

    f->unmasked = false;

    if (f->frozen) {
        f->frozen = false;
        pmu_msr_write(f->msr, f->saved);
    }
}

uint64_t
pmu_nr_pmis(void)
{
    return __atomic_load_n(&pmu_pmis, __ATOMIC_RELAXED);
}

/* ---- the probe of every CPU ---------------------------------------------- */

/* What each CPU's cpu_probe found, filled once at boot (thread context). */
struct pmu_cpu_found {
    const struct pmu_driver *drv;
    int error;                  /* of run_on: the CPU could not be asked */
    uint64_t usable;
    uint64_t busy;
};

static struct pmu_cpu_found pmu_cpu_found[CPU_MAX];

static void
pmu_cpu_probe_fn(void *arg)
{
    struct pmu_cpu_found *found = arg;

    found->usable = found->drv->cpu_probe(&found->busy);
}

/* Append "a-b" or "a" for the run of bits from first to last, to buf. */
static size_t
pmu_fmt_run(char *buf, size_t size, size_t len, unsigned int first,
            unsigned int last, const char *prefix)
{
    if (len >= size) {
        return len;
    }

    if (first == last) {
        return len + (size_t)ksnprintf(&buf[len], size - len, "%s%u",
                                       prefix, first);
    }

    return len + (size_t)ksnprintf(&buf[len], size - len, "%s%u-%u", prefix,
                                   first, last);
}

void
pmu_fmt_counters(char *buf, size_t size, uint64_t mask,
                 unsigned int fixed_base)
{
    size_t len = 0;
    bool fixed_seen = false;

    assert(size > 0);
    buf[0] = '\0';

    if (mask == 0) {
        ksnprintf(buf, size, "none");
        return;
    }

    while (mask != 0) {
        unsigned int first = (unsigned int)__builtin_ctzll(mask), last = first;
        bool fixed = fixed_base != 0 && first >= fixed_base;
        const char *prefix;

        while (last < 63 && (mask & (1ULL << (last + 1)))
               && (fixed_base == 0 || last + 1 != fixed_base)) {
            last++;
        }

        mask &= ~(((last >= 63) ? UINT64_MAX : (1ULL << (last + 1)) - 1)
                  & ~((1ULL << first) - 1));

        if (fixed && !fixed_seen) {
            prefix = (len == 0) ? "fixed " : ", fixed ";
            fixed_seen = true;
        } else {
            prefix = (len == 0) ? "" : ", ";
        }

        len = pmu_fmt_run(buf, size, len, fixed ? first - fixed_base : first,
                          fixed ? last - fixed_base : last, prefix);
    }
}

/*
 * The CPUs whose counters differ from the boot CPU's, in one log line: the
 * first of them, how many others, and what is used.
 */
static void
pmu_report_mismatch(const struct pmu_caps *caps, unsigned int nr_cpus,
                    uint64_t common)
{
    unsigned int fixed_base = (caps->vendor == CPU_VENDOR_INTEL)
                              ? PMU_INTEL_FIXED_BASE : 0;
    unsigned int first = 0, others = 0;
    char theirs[48], boot[48], used[48];

    for (unsigned int cpu = 1; cpu < nr_cpus; cpu++) {
        const struct pmu_cpu_found *f = &pmu_cpu_found[cpu];

        if (f->error == 0 && (f->usable | f->busy)
                             != (pmu_cpu_found[0].usable
                                 | pmu_cpu_found[0].busy)) {
            if (first == 0) {
                first = cpu;
            } else {
                others++;
            }
        }
    }

    if (first == 0) {
        return;
    }

    pmu_fmt_counters(theirs, sizeof(theirs), pmu_cpu_found[first].usable,
                     fixed_base);
    pmu_fmt_counters(boot, sizeof(boot), pmu_cpu_found[0].usable, fixed_base);
    pmu_fmt_counters(used, sizeof(used), common, fixed_base);
    log_warning("pmu: cpu%u%s has counters %s, the boot CPU %s: using those "
                "every CPU has: %s", first, (others != 0) ? " (and others)"
                                                          : "",
                theirs, boot, used);
}

int
pmu_probe_cpus(const struct pmu_driver *drv, struct pmu_caps *caps,
               bool use_nmi, pmu_run_on_fn_t run_on)
{
    unsigned int nr_cpus = cpu_count();
    uint64_t common = UINT64_MAX, busy = 0;
    char buf[48];
    int error;

    assert(nr_cpus <= CPU_MAX);
    error = drv->probe(caps, use_nmi);

    if (error) {
        return error;
    }

    for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
        struct pmu_cpu_found *f = &pmu_cpu_found[cpu];

        *f = (struct pmu_cpu_found){ .drv = drv };
        f->error = run_on(pmu_cpu_probe_fn, f, cpu);

        if (f->error) {
            log_error("pmu: cannot probe cpu%u: %s", cpu,
                      error_str(f->error));
            continue;
        }

        common &= f->usable;
        busy |= f->busy;
    }

    common &= ~busy;
    caps->fw_busy = busy;

    if (busy != 0) {
        pmu_fmt_counters(buf, sizeof(buf), busy,
                         (caps->vendor == CPU_VENDOR_INTEL)
                         ? PMU_INTEL_FIXED_BASE : 0);
        log_warning("pmu: the firmware left counters %s counting: left "
                    "alone", buf);
    }

    pmu_report_mismatch(caps, nr_cpus, common);
    return drv->commit(caps, common);
}
