/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: the per-CPU counter record.  Each CPU
 * keeps, for every counter slot it runs, the last raw value read and a
 * 64-bit value that only grows while the counter runs there (struct
 * perfmon_cpu_pmc, perfmon_cpu.h), extended past the counter's width by
 * folding: each read adds the difference since the last one, modulo the
 * width; the overflow interrupt settles the wraps a difference cannot
 * see.  Also here: starting and stopping a counter for the scheduler, the
 * slot's enabled and running times, and arming a sampling counter for its
 * next sample.
 *
 * Everything here runs on the CPU it is about, with interrupts disabled,
 * in a section (perfmon_cpu_enter).  Because disabling interrupts does not
 * hold an NMI off, a section sets the CPU's busy flag first; an overflow
 * NMI that finds it set only records which counters overflowed in the
 * pending mask, and the section folds them when it clears the flag.
 * Nothing reached from the NMI takes a lock.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/macros.h"
#include "kern/num.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/string.h"
#include "kern/syscnt.h"

/* The first period of a frequency-mode event that gave none. */
#define PERFMON_FREQ_FIRST_PERIOD   10000

struct perfmon_cpu perfmon_cpus[CPU_MAX];
unsigned long perfmon_cpu_slot_gen;

/*
 * Fold the counter of slot into its 64-bit value.  ovf: the device's
 * overflow interrupt says the counter wrapped since the last interrupt
 * for it.  That settles the one case a difference cannot see, a wrap after
 * which the counter already went past its previous value (interrupt
 * latency).
 *
 * An overflow NMI for the slot that lands in this section leaves its bit
 * in cpu->pending: taken before the read, it applies to this read; set
 * during the read, it makes us read again, so that a user taking the value
 * just after (a thread being switched out, say) does not lose the wrap.
 */
void
perfmon_cpu_pmc_update(struct perfmon_cpu *cpu, unsigned int slot, bool ovf)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    uint64_t mask = pmc->mask, bit = perfmon_slot_bit(slot), raw, delta;
    bool wrapped, consumed = false;

    __asm__("" : "+r"(pmc));    /* kept, not recomputed from slot */

    do {
        if (READ_ONCE(cpu->pending) & bit) {
            __atomic_fetch_and(&cpu->pending, ~bit, __ATOMIC_RELAXED);
            ovf = true;
        }

        consumed |= ovf;

        barrier();
        raw = perfmon_cpu_pmc_raw(pmc) & mask;
        barrier();
        delta = (raw - pmc->prev) & mask;
        wrapped = raw < pmc->prev;

        if (ovf) {
            if (!wrapped && !pmc->wrap_seen) {
                delta += mask + 1;      /* 0 at width 64: a no-op mod 2^64 */
                wrapped = true;
            }

            pmc->wrap_seen = false;
        } else if (wrapped) {
            pmc->wrap_seen = true;
        }

        if (wrapped) {
            perfmon_syscnt_inc_local(&cpu->nr_overflows);
        }

        pmc->value += delta;
        pmc->prev = raw;
        ovf = false;
    } while (READ_ONCE(cpu->pending) & bit);

    /* A sampling counter that overflowed has to be armed again. */
    if (consumed && perfmon_pmcs[slot].sampling != NULL
        && perfmon_cpu_pmc_overflowed(cpu, slot, pmc, cpu->in_intr)) {
        cpu->due |= bit;
    }
}

struct perfmon_cpu *
perfmon_cpu_pmc_handover_pending(struct perfmon_cpu *cpu,
                                 struct perfmon_cpu_pmc *from, uint64_t raw)
{
    const struct perfmon_cpu_dev *cdev = &cpu->devs[from->dev->index];
    unsigned int in = cdev->slot_of_hw[from->hw_id] - 1U;
    struct perfmon_cpu_pmc *to = &cpu->pmcs[in];
    uint64_t both = perfmon_slot_bit((unsigned int)(from - cpu->pmcs))
                    | perfmon_slot_bit(in);

    if (READ_ONCE(cpu->pending) & both) {
        __atomic_fetch_and(&cpu->pending, ~both, __ATOMIC_RELAXED);
        perfmon_cpu_pmc_add_ovf(cpu, from, raw);
    } else {
        perfmon_cpu_pmc_add(cpu, from, raw);
    }

    to->prev = from->prev;
    to->wrap_seen = from->wrap_seen;
    return cpu;
}

void
perfmon_cpu_fold(struct perfmon_cpu *cpu, uint64_t slots, bool ovf)
{
    slots &= cpu->sched_mask;

    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        slots &= slots - 1;
        perfmon_cpu_pmc_update(cpu, slot, ovf);
    }
}

/*
 * Enter and leave a section touching the local CPU's PMU state.  See the
 * top of the file for the busy flag; the NMI runs on this CPU, so compiler
 * barriers order the flag against the state.  The section's changes all
 * happen at one time, cpu->now, which its times use.  The leave is inline
 * (perfmon_cpu.h); what an NMI left pending is folded here.
 */
struct perfmon_cpu *
perfmon_cpu_enter(void)
{
    struct perfmon_cpu *cpu;

    assert(!cpu_intr_enabled());
    cpu = perfmon_cpu_self();
    assert(!cpu->busy);
    perfmon_cpu_begin(cpu);
    cpu->now = cpu_rdtsc();
    return cpu;
}

void
perfmon_cpu_leave_pending(struct perfmon_cpu *cpu)
{
    while (READ_ONCE(cpu->pending) != 0) {
        uint64_t pending;

        WRITE_ONCE(cpu->busy, true);
        barrier();
        pending = __atomic_exchange_n(&cpu->pending, 0, __ATOMIC_RELAXED);
        perfmon_cpu_fold(cpu, pending, true);
        barrier();
        WRITE_ONCE(cpu->busy, false);
        barrier();
    }
}

/*
 * Frequency mode (sampling->freq set), at a sample: the period that would
 * have made the last interval 1/freq seconds long, at the event rate seen
 * over it.  Close to the current period, move a quarter of the way
 * (noise); far from it, jump (a start, or a change of workload).
 */
void
perfmon_cpu_pmc_adjust(struct perfmon_cpu_pmc *pmc,
                       const struct perfmon_sampling *sampling)
{
    uint64_t now, dt, counted, freq_hz, period;

    now = cpu_rdtsc();
    dt = now - pmc->sample_tsc;
    counted = pmc->value - pmc->sample_value;
    pmc->sample_tsc = now;
    pmc->sample_value = pmc->value;
    freq_hz = cpu_tsc_freq();

    if (dt == 0 || counted == 0 || freq_hz == 0) {
        return;
    }

    /*
     * The event rate per second, then per sample: dt * freq would pass
     * 2^64 after some 17 hours at 100 kHz without a sample.  Dividing
     * twice gives the same floor.
     */
    period = num_muldiv(counted, freq_hz, dt) / sampling->freq;

    if (period < pmc->period / 2 || period / 2 > pmc->period) {
        pmc->period = period;
    } else if (period > pmc->period) {
        pmc->period += (period - pmc->period) / 4;
    } else {
        pmc->period -= (pmc->period - period) / 4;
    }

    pmc->period = MAX(pmc->period, MAX(pmc->min_period, pmc->dev->arm_min));
    pmc->period = MIN(pmc->period, PERFMON_MAX_PERIOD);
}

void
perfmon_cpu_fold_intr(struct perfmon_cpu *cpu, uint64_t slots)
{
    slots &= cpu->sched_mask;

    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        slots &= slots - 1;

        /* Folded inline, a sampling slot is accounted and armed here. */
        if (perfmon_cpu_pmc_fold_ovf(cpu, slot)
            && perfmon_pmcs[slot].sampling != NULL
            && perfmon_cpu_pmc_overflowed(cpu, slot, &cpu->pmcs[slot],
                                          true)) {
            cpu->due |= perfmon_slot_bit(slot);
        }
    }
}

/*
 * perfmon_cpu_fold_intr_sampling()'s other cases (perfmon_cpu.h), out of
 * its line: the update, in the interrupt's own fold, says whether it left
 * a sample due.
 */
bool
perfmon_cpu_fold_intr_update(struct perfmon_cpu *cpu, unsigned int slot,
                             bool ovf)
{
    cpu->in_intr = true;
    cpu->due = 0;
    perfmon_cpu_pmc_update(cpu, slot, ovf);
    cpu->in_intr = false;
    return cpu->due != 0;
}

/*
 * A sampling slot becomes active on this CPU: with a thread's saved
 * progress (saved, for thread events), or afresh.  Its counter is armed
 * whenever it gets one (perfmon_cpu_pmc_start).
 */
void
perfmon_cpu_pmc_sample_init(struct perfmon_cpu *cpu, unsigned int slot,
                            const struct perfmon_td_pmc *saved)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    const struct perfmon_sampling *sampling = perfmon_pmcs[slot].sampling;

    if (saved != NULL && saved->sample_period != 0) {
        pmc->period = saved->sample_period;
        pmc->min_period = saved->sample_min_period;
        pmc->left = MAX(saved->sample_left, 1);
    } else {
        pmc->period = (sampling->period != 0)
                      ? MAX(sampling->period,
                            perfmon_slot_dev(slot)->arm_min)
                      : PERFMON_FREQ_FIRST_PERIOD;
        pmc->min_period = 0;
        pmc->left = (int64_t)pmc->period;
    }

    pmc->freq = (sampling->freq != 0);
    pmc->sample_value = pmc->value;
    pmc->sample_tsc = cpu->now;
}

/*
 * A thread's sampling counter stops here (the caller updated its value):
 * keep its progress to the next sample and its period with the thread.
 * A slot waiting for a counter had its progress charged to left when the
 * scheduler took the counter (perfmon_cpu_pmc_stop); only one holding a
 * counter has events since the arm to charge.
 */
void
perfmon_cpu_pmc_sample_save(struct perfmon_cpu *cpu, unsigned int slot,
                            struct perfmon_td_pmc *tpmc)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];

    tpmc->sample_left = pmc->left;

    if (cpu->sched_mask & perfmon_slot_bit(slot)) {
        tpmc->sample_left -= (int64_t)(pmc->value - pmc->armed_value);
    }

    tpmc->sample_period = pmc->period;
    tpmc->sample_min_period = pmc->min_period;
}

void
perfmon_cpu_init(unsigned int cpu_index)
{
    struct perfmon_cpu *cpu = perfmon_cpu_get(cpu_index);

    /* No key is all ones: no pass is known yet. */
    for (unsigned int i = 0; i < ARRAY_SIZE(cpu->pass_memo); i++) {
        cpu->pass_memo[i] = UINT64_MAX;
    }

    for (unsigned int i = 0; i < ARRAY_SIZE(cpu->pmcs); i++) {
        perfmon_cpu_pmc_set_idle(&cpu->pmcs[i]);
        cpu->pmcs[i].td_offset = offsetof(struct perfmon_td, pmcs)
                                 + i * sizeof(struct perfmon_td_pmc)
                                 + offsetof(struct perfmon_td_pmc, value);
    }

    cpu_set_perfmon(cpu_index, cpu);
}

void
perfmon_cpu_slot_setup(unsigned int slot, struct perfmon_dev *dev)
{
    const struct perfmon_pmc *gpmc = &perfmon_pmcs[slot];
    uint64_t mask = perfmon_width_mask(dev->width);
    uint64_t counters = gpmc->pinned ? 0 : gpmc->counters;

    for (unsigned int i = 0; i < ARRAY_SIZE(perfmon_cpus); i++) {
        struct perfmon_cpu_pmc *pmc = &perfmon_cpus[i].pmcs[slot];

        pmc->dev = dev;
        pmc->mask = mask;
        pmc->peek_max = mask >> PERFMON_PEEK_SHIFT;
        perfmon_cpus[i].turn_counters[slot] = counters;
        pmc->raw_event = gpmc->raw_event;
        pmc->flags = gpmc->flags;
    }

    WRITE_ONCE(perfmon_cpu_slot_gen, perfmon_cpu_slot_gen + 1);
}

/* Ask the device how to read the counter pmc just started holds. */
static void
perfmon_cpu_pmc_read_method(struct perfmon_cpu_pmc *pmc)
{
    struct perfmon_dev *dev = pmc->dev;

    pmc->read_arg = 0;
    pmc->read_how = (dev->ops->read_method != NULL)
                    ? dev->ops->read_method(dev, pmc->hw_id, &pmc->read_arg)
                    : PERFMON_READ_OP;
    assert(pmc->read_how <= PERFMON_READ_MEM);
}

/*
 * The scheduler gives slot the hardware counter hw_id on this CPU: start
 * it, and arm it when it samples.  It is marked running (sched_mask) only
 * once started, the device having then cleared any overflow left on the
 * counter by its previous user: an overflow NMI before that maps to no
 * slot, not to this one.
 */
void
perfmon_cpu_pmc_start(struct perfmon_cpu *cpu, unsigned int slot,
                      unsigned int hw_id, uint64_t now)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    const struct perfmon_pmc *gpmc = &perfmon_pmcs[slot];
    struct perfmon_dev *dev = pmc->dev;

    assert(dev == perfmon_slot_dev(slot));
    assert(!(cpu->sched_mask & perfmon_slot_bit(slot)));
    perfmon_cpu_pmc_clock(cpu, slot, now);
    pmc->hw_id = hw_id;
    dev->ops->start(dev, hw_id, gpmc->raw_event, gpmc->flags);
    perfmon_cpu_pmc_read_method(pmc);

    /* The device's start leaves the counter at 0 (kern/perfmon.h). */
    pmc->prev = 0;
    pmc->wrap_seen = false;

    if (gpmc->sampling != NULL) {
        pmc->left = MAX(pmc->left, 1);
        perfmon_cpu_pmc_arm(pmc);
    }

    WRITE_ONCE(cpu->devs[dev->index].slot_of_hw[hw_id], slot + 1);
    barrier();
    WRITE_ONCE(cpu->sched_mask, cpu->sched_mask | perfmon_slot_bit(slot));
    perfmon_cpu_pmc_turn_sync(cpu, slot);
    perfmon_cpu_td_pmc_run(cpu, slot, now, true);
}

/*
 * The scheduler takes slot's counter on this CPU: fold what it counted,
 * keep a sampling slot's progress to its next sample, stop it.  It stops
 * being marked running first: a later overflow NMI of the counter maps to
 * no slot.  The events it counts between the fold and the stop are lost,
 * as at any stop, and so is the overflow an NMI left pending after the
 * fold: were the section to start the slot again, its exit would fold
 * that bit as a wrap of the new run.
 */
void
perfmon_cpu_pmc_stop(struct perfmon_cpu *cpu, unsigned int slot,
                     uint64_t now, bool folded)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    struct perfmon_dev *dev = pmc->dev;

    assert(cpu->sched_mask & perfmon_slot_bit(slot));

    if (!folded) {
        perfmon_cpu_pmc_update(cpu, slot, false);
        perfmon_cpu_pmc_clock(cpu, slot, now);
    }

    if (perfmon_pmcs[slot].sampling != NULL) {
        pmc->left -= (int64_t)(pmc->value - pmc->armed_value);
    }

    WRITE_ONCE(cpu->sched_mask, cpu->sched_mask & ~perfmon_slot_bit(slot));
    perfmon_cpu_pmc_turn_sync(cpu, slot);
    barrier();
    WRITE_ONCE(cpu->devs[dev->index].slot_of_hw[pmc->hw_id], 0);
    __atomic_fetch_and(&cpu->pending, ~perfmon_slot_bit(slot),
                       __ATOMIC_RELAXED);
    dev->ops->stop(dev, pmc->hw_id);
    perfmon_cpu_pmc_set_idle(pmc);
    perfmon_cpu_td_pmc_run(cpu, slot, now, false);
}

void
perfmon_cpu_poll_xcall(void *arg)
{
    const struct perfmon_dev *dev = arg;
    struct perfmon_cpu *cpu = perfmon_cpu_enter();

    perfmon_cpu_fold(cpu, perfmon_dev_slots(dev), false);
    syscnt_inc(&cpu->nr_polls);
    perfmon_cpu_leave(cpu);
}

uint64_t
perfmon_cpu_active_slots(unsigned int cpu)
{
    return READ_ONCE(perfmon_cpu_get(cpu)->sched_mask);
}

#ifdef TALLY_HOST_TEST
void
perfmon_cpu_reset(void)
{
    memset(perfmon_cpus, 0, sizeof(perfmon_cpus));

    for (unsigned int i = 0; i < ARRAY_SIZE(perfmon_cpus); i++) {
        perfmon_cpu_init(i);
    }
}
#endif /* TALLY_HOST_TEST */

/*
 * For PERFMON_SF_READ, in the overflow interrupt's section (NMI context):
 * the value of event's counter slot on this CPU, a counting slot folded
 * now (a sampling one was, by the interrupt).
 */
uint64_t
perfmon_intr_read_value(const struct perfmon_event *event)
{
    struct perfmon_cpu *cpu = perfmon_cpu_get(cpu_id());
    unsigned int slot = event->slot;

    assert(READ_ONCE(cpu->busy));

    if ((cpu->sched_mask & perfmon_slot_bit(slot))
        && perfmon_pmcs[slot].sampling == NULL) {
        perfmon_cpu_pmc_update(cpu, slot, false);
    }

    return cpu->pmcs[slot].value;
}
