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
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"

/* Overflow-status rounds in one PMI before giving up (a stuck status). */
#define PMU_MAX_STATUS_ROUNDS   16

/* Counters started on each CPU (hw id bits), see pmu_active_add(). */
static uint64_t pmu_active[CPU_MAX];

/*
 * A CPU's global enable register while its overflow handler has it
 * frozen: which MSR, and the value to restore.  Written and read by its
 * CPU's NMI handler only (NMIs do not nest).
 */
struct pmu_frozen {
    bool frozen;
    uint32_t msr;
    uint64_t saved;
};

static struct pmu_frozen pmu_frozen[CPU_MAX];

static uint64_t pmu_pmis;

/* ---- shared by the drivers ----------------------------------------------- */

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
    }

    __atomic_store_n(&pmu_pmis, 0, __ATOMIC_RELAXED);
}

uint64_t
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

uint64_t
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

void
pmu_freeze(uint32_t ctrl_msr, uint64_t ours)
{
    struct pmu_frozen *f = &pmu_frozen[cpu_id()];

    assert(!f->frozen);
    f->saved = pmu_msr_read(ctrl_msr);
    f->msr = ctrl_msr;
    f->frozen = true;
    pmu_msr_write(ctrl_msr, f->saved & ~ours);
}

uint64_t
pmu_intr_claimed(uint64_t mask)
{
    __atomic_fetch_add(&pmu_pmis, 1, __ATOMIC_RELAXED);
    return mask;
}

/*
 * Every interrupt the handler saw ends here, its own (through the core's
 * overflow_intr_end) or not (the handler calls it before answering "not
 * mine"): the gate opens as it was, then the LVT is unmasked.  Unmasking
 * even when no counter is active is what makes a late PMI harmless: a
 * counter stopped between its overflow and its NMI leaves nothing to
 * claim, but the PMI masked the LVT, and the next counter started here
 * would never interrupt.
 */
void
pmu_overflow_intr_end(struct perfmon_dev *dev)
{
    struct pmu_frozen *f = &pmu_frozen[cpu_id()];

    (void)dev;

    if (f->frozen) {
        f->frozen = false;
        pmu_msr_write(f->msr, f->saved);
    }

    lapic_pmc_unmask();
}

uint64_t
pmu_nr_pmis(void)
{
    return __atomic_load_n(&pmu_pmis, __ATOMIC_RELAXED);
}
