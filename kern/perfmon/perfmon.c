/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: events, the per-CPU and per-thread counter
 * state, and the folding of counter wraps (overflow interrupt, or the
 * polls of kern/perfmon/perfmon_pmc.c).  The device table is in kern/perfmon/perfmon_dev.c,
 * the global counter table and its allocator in kern/perfmon/perfmon_pmc.c, the
 * overflow-interrupt callback registry in kern/perfmon/perfmon_intr.c.
 *
 * Three levels of counter state:
 *
 *   - global (struct perfmon_pmc, kern/perfmon/perfmon_i.h): one per counter slot,
 *     allocated to a raw event and reference counted by the events using
 *     it;
 *   - per CPU (struct perfmon_cpu_pmc): how many users need the counter
 *     running on this CPU, the last raw value read and a 64-bit value that
 *     only grows while the counter runs there;
 *   - per thread (struct perfmon_td_pmc, in kern/perfmon_types.h): the
 *     thread's accumulated count, plus a snapshot of the per-CPU value while
 *     loaded.
 *
 * An event remembers the thread or CPU value when it was attached; its
 * count is the difference.  So several events can share one counter, on
 * CPUs and threads at once.
 *
 * Lock order, outermost first:
 *
 *   event                  owned by its caller: no lock (see perfmon.h)
 *     thread perfmon state thread_call(): interrupts disabled on the CPU
 *                          running the thread, or its run queue locked
 *       run queue lock     kern/thread.c (the context switch hook)
 *         per-CPU PMU      interrupts disabled on that CPU; against the
 *                          NMI on the same CPU, the busy flag below
 *
 *   perfmon_lock           device table and counter allocator: taken alone,
 *                          in thread context, never held across an xcall,
 *                          thread_call or timer call (kern/perfmon/perfmon_i.h)
 *   perfmon_intr_lock      callback registry writers: taken alone, and
 *                          never by the interrupt path (perfmon_intr.c)
 *
 * Nothing reached from an overflow interrupt (NMI) takes a lock.  Because
 * disabling interrupts does not hold an NMI off, code touching the per-CPU
 * PMU sets its busy flag first; an overflow NMI that finds it set only
 * records which counters overflowed in the pending mask, and the interrupted
 * code folds them when it clears the flag.
 *
 * Reads of a counter running on the caller's CPU (a CPU event of that CPU,
 * the calling thread's own event) take none of this: with preemption
 * disabled they compute the count from the per-CPU state and a raw read,
 * writing nothing, and retry when the state's generation changed under
 * them (struct perfmon_cpu).
 *
 * The file is over the usual size on purpose.  Everything in it reads or
 * writes the per-CPU counter state under the rules above (the section,
 * the generation, the pending mask) and keeps one invariant between the
 * three levels: an event's count is the difference of two values that
 * only grow.  Attach and detach, enable and disable, the context switch,
 * the fold, sampling's re-arm and the times all move those values; apart,
 * each would need the others' internals.  What can stand alone already
 * does: devices, counter allocation, the callback registry, scheduling
 * counters among events, inheritance, branch stacks, sample rings.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/trap.h"
#include "kern/assert.h"
#include "kern/cmdline.h"
#include "kern/error.h"
#include "kern/init.h"
#include "kern/log.h"
#include "kern/macros.h"
#include "kern/num.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/string.h"
#include "kern/syscnt.h"
#include "kern/thread.h"
#include "kern/timer.h"
#include "kern/xcall.h"

/* Local reads fold past 1/16 of a period (perfmon_cpu_pmc_peek). */
#define PERFMON_PEEK_SHIFT          4

/* Event states; anything else is an event never initialised. */
#define PERFMON_EVENT_IDLE          0x5e1d      /* initialised or detached */
#define PERFMON_EVENT_THREAD        0x5e1e
#define PERFMON_EVENT_CPU           0x5e1f

/* The first period of a frequency-mode event that gave none. */
#define PERFMON_FREQ_FIRST_PERIOD   10000

/*
 * The fewest events a sampling counter is armed for, and the shortest
 * period: some x86 CPUs misbehave with a counter one event from its
 * overflow, so Linux arms them for at least 2 (x86_perf_event_set_period
 * in arch/x86/events/core.c).  A period of 1 is taken as 2, not refused:
 * `-c 1` works as under perf, and every sample says the 2 events it
 * stands for.
 */
#define PERFMON_MIN_PERIOD          2

/*
 * Throttling: the window over which a CPU's sampling time is measured,
 * and the most one interrupt may count for, as a fraction of the window:
 * under a hypervisor a vCPU may be preempted in the middle of a handler,
 * and one such stall must not pass for a storm of interrupts.
 */
#define PERFMON_THROTTLE_WINDOW_MS  100
#define PERFMON_THROTTLE_MAX_SHARE  64
#define PERFMON_SAMPLE_SHARE_DEFAULT 25

/*
 * Arguments of the thread_call() and xcall functions: the events to act
 * on (those of the array attached to the thread or CPU the call runs for),
 * whether to enable or disable them, or, to read one, where its counts go.
 */
struct perfmon_call {
    struct perfmon_event *const *events;
    unsigned int nr;
    struct thread *thread;              /* the target, NULL: this CPU */
    bool enable;
    struct perfmon_counts counts;
};

struct perfmon_cpu perfmon_cpus[CPU_MAX];

/* Most percent of a CPU's time sampling may take (perfmon.max_sample_share). */
static unsigned int perfmon_sample_share = PERFMON_SAMPLE_SHARE_DEFAULT;

static void perfmon_cpu_pmc_overflowed(struct perfmon_cpu *cpu,
                                       unsigned int slot);

/* ---- per-CPU PMU (interrupts disabled) ---------------------------------- */


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
static void
perfmon_cpu_pmc_update(struct perfmon_cpu *cpu, unsigned int slot, bool ovf)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    uint64_t mask = pmc->mask, bit = perfmon_slot_bit(slot), raw, delta;
    bool wrapped, consumed = false;

    do {
        if (READ_ONCE(cpu->pending) & bit) {
            __atomic_fetch_and(&cpu->pending, ~bit, __ATOMIC_RELAXED);
            ovf = true;
        }

        consumed |= ovf;

        barrier();
        raw = pmc->dev->ops->read(pmc->dev, pmc->hw_id) & mask;
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
            syscnt_inc(&cpu->nr_overflows);
        }

        pmc->value += delta;
        pmc->prev = raw;
        ovf = false;
    } while (READ_ONCE(cpu->pending) & bit);

    /* A sampling counter that overflowed has to be armed again. */
    if (consumed && perfmon_pmcs[slot].sampling != NULL) {
        perfmon_cpu_pmc_overflowed(cpu, slot);
    }
}

static void
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
 * happen at one time, cpu->now, which its times use.
 */
struct perfmon_cpu *
perfmon_cpu_enter(void)
{
    struct perfmon_cpu *cpu;

    assert(!cpu_intr_enabled());
    cpu = perfmon_cpu_get(cpu_id());
    assert(!cpu->busy);
    WRITE_ONCE(cpu->busy, true);
    WRITE_ONCE(cpu->gen, cpu->gen + 1);
    barrier();
    cpu->now = cpu_rdtsc();
    return cpu;
}

void
perfmon_cpu_leave(struct perfmon_cpu *cpu)
{
    barrier();
    WRITE_ONCE(cpu->busy, false);
    barrier();

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

/* ---- sampling (per-CPU slots, interrupts disabled) ------------------------ */

/*
 * Load a sampling counter so that it overflows after the events left to
 * the next sample, or as many as the device can arm: a longer period takes
 * several overflows, the intermediate ones writing no sample.
 */
static void
perfmon_cpu_pmc_arm(struct perfmon_cpu *cpu, unsigned int slot)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    struct perfmon_dev *dev = perfmon_slot_dev(slot);
    uint64_t mask = perfmon_width_mask(dev->width), max = mask, events;

    if (dev->max_period != 0) {
        max = MIN(max, dev->max_period);
    }

    assert(pmc->left > 0);
    events = MAX(MIN((uint64_t)pmc->left, max), PERFMON_MIN_PERIOD);
    pmc->prev = (0 - events) & mask;
    pmc->wrap_seen = false;
    pmc->armed_value = pmc->value;
    dev->ops->write(dev, pmc->hw_id, pmc->prev);
}

/*
 * Frequency mode, at a sample: the period that would have made the last
 * interval 1/freq seconds long, at the event rate seen over it.  Close to
 * the current period, move a quarter of the way (noise); far from it, jump
 * (a start, or a change of workload).
 */
static void
perfmon_cpu_pmc_adjust(struct perfmon_cpu_pmc *pmc,
                       const struct perfmon_sampling *sampling)
{
    uint64_t now = cpu_rdtsc(), dt = now - pmc->sample_tsc;
    uint64_t counted = pmc->value - pmc->sample_value, freq_hz, period;

    pmc->sample_tsc = now;
    pmc->sample_value = pmc->value;
    freq_hz = cpu_tsc_freq();

    if (sampling->freq == 0 || dt == 0 || counted == 0 || freq_hz == 0) {
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

    pmc->period = MAX(pmc->period, MAX(pmc->min_period, PERFMON_MIN_PERIOD));
    pmc->period = MIN(pmc->period, PERFMON_MAX_PERIOD);
}

/*
 * A sampling counter overflowed: count what it counted against the events
 * left, take a sample when they are used up (only in the interrupt's own
 * fold: then the interrupted frame is the one the sample must show), and
 * arm it again.
 */
static void
perfmon_cpu_pmc_overflowed(struct perfmon_cpu *cpu, unsigned int slot)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    const struct perfmon_sampling *sampling = perfmon_pmcs[slot].sampling;
    int64_t left = pmc->left - (int64_t)(pmc->value - pmc->armed_value);

    if (left <= 0) {
        if (cpu->in_intr) {
            cpu->due |= perfmon_slot_bit(slot);
            pmc->due_period = pmc->period;
        } else {
            syscnt_inc(&cpu->nr_unsampled);
        }

        perfmon_cpu_pmc_adjust(pmc, sampling);

        /* One sample, however far past the period the counter got. */
        left = (left <= -(int64_t)pmc->period) ? (int64_t)pmc->period
                                               : left + (int64_t)pmc->period;
    }

    pmc->left = left;
    perfmon_cpu_pmc_arm(cpu, slot);
}

/*
 * A sampling slot becomes active on this CPU: with a thread's saved
 * progress (saved, for thread events), or afresh.  Its counter is armed
 * whenever it gets one (perfmon_cpu_pmc_start).
 */
static void
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
                      ? MAX(sampling->period, PERFMON_MIN_PERIOD)
                      : PERFMON_FREQ_FIRST_PERIOD;
        pmc->min_period = 0;
        pmc->left = (int64_t)pmc->period;
    }

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
static void
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

/*
 * Throttling, after an interrupt that wrote samples and took cycles: when
 * the window's sampling time passes the share allowed, double the period
 * of every sampling counter running here, and say so in their buffers.
 * The window starts again then, so the next doubling needs as much again.
 */
static void
perfmon_cpu_throttle(struct perfmon_cpu *cpu, uint64_t cycles)
{
    uint64_t now = cpu_rdtsc(), freq_hz = cpu_tsc_freq(), window, slots;

    if (freq_hz == 0) {
        return;
    }

    window = freq_hz / 1000 * PERFMON_THROTTLE_WINDOW_MS;

    if (now - cpu->window_start > window) {
        cpu->window_start = now;
        cpu->window_cycles = 0;
    }

    cpu->window_cycles += MIN(cycles, window / PERFMON_THROTTLE_MAX_SHARE);

    if (cpu->window_cycles * 100 <= window * perfmon_sample_share) {
        return;
    }

    cpu->window_cycles = 0;
    syscnt_inc(&cpu->nr_throttles);
    slots = cpu->sched_mask & perfmon_sampling_slots;

    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);
        struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];

        slots &= slots - 1;
        pmc->period = MIN(pmc->period * 2, PERFMON_MAX_PERIOD);
        pmc->min_period = pmc->period;
        perfmon_sample_throttled(perfmon_pmcs[slot].sampling, pmc->period);
    }
}

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

/* Write the samples due in this interrupt (NMI context). */
static void
perfmon_cpu_write_samples(struct perfmon_cpu *cpu, uint64_t due,
                          const struct trap_frame *frame)
{
    while (due != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(due);

        due &= due - 1;
        perfmon_sample_write(perfmon_pmcs[slot].sampling, frame,
                             cpu->pmcs[slot].due_period);
    }
}

/* ---- per-CPU counters ----------------------------------------------------- */

/*
 * Count the time since the slot's stamp into its times: enabled while it
 * has users here, running while it holds a counter.  Called before either
 * changes, and to read them.
 */
static void
perfmon_cpu_pmc_clock(struct perfmon_cpu *cpu, unsigned int slot,
                      uint64_t now)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    uint64_t dt = now - pmc->stamp;

    if (pmc->nr_refs != 0) {
        pmc->enabled += dt;

        if (cpu->sched_mask & perfmon_slot_bit(slot)) {
            pmc->running += dt;
        }
    }

    pmc->stamp = now;
}

/* The slot's counts on this CPU at now, folded (entered). */
static void
perfmon_cpu_pmc_counts(struct perfmon_cpu *cpu, unsigned int slot,
                       uint64_t now, struct perfmon_counts *counts)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];

    if (cpu->sched_mask & perfmon_slot_bit(slot)) {
        perfmon_cpu_pmc_update(cpu, slot, false);
    }

    perfmon_cpu_pmc_clock(cpu, slot, now);
    counts->value = pmc->value;
    counts->enabled = pmc->enabled;
    counts->running = pmc->running;
}

/* a += b - c, field by field. */
static void
perfmon_counts_add_delta(struct perfmon_counts *a,
                         const struct perfmon_counts *b,
                         const struct perfmon_counts *c)
{
    a->value += b->value - c->value;
    a->enabled += b->enabled - c->enabled;
    a->running += b->running - c->running;
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
    struct perfmon_dev *dev = perfmon_slot_dev(slot);

    assert(!(cpu->sched_mask & perfmon_slot_bit(slot)));
    perfmon_cpu_pmc_clock(cpu, slot, now);
    pmc->hw_id = hw_id;
    pmc->dev = dev;
    pmc->mask = perfmon_width_mask(dev->width);
    dev->ops->start(dev, hw_id, gpmc->raw_event, gpmc->flags);
    pmc->prev = dev->ops->read(dev, hw_id) & pmc->mask;
    pmc->wrap_seen = false;

    if (gpmc->sampling != NULL) {
        pmc->left = MAX(pmc->left, 1);
        perfmon_cpu_pmc_arm(cpu, slot);
    }

    barrier();
    WRITE_ONCE(cpu->sched_mask, cpu->sched_mask | perfmon_slot_bit(slot));
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
    barrier();
    __atomic_fetch_and(&cpu->pending, ~perfmon_slot_bit(slot),
                       __ATOMIC_RELAXED);
    dev->ops->stop(dev, pmc->hw_id);
}

/*
 * One more user of slot on this CPU; saved: the thread's sampling
 * progress, when a thread loads a sampling slot.  The first makes it
 * active here, and the scheduler gives it a counter if it can; then its
 * counts are as of now already, and the caller may take them as they
 * are (returns true), not fold them again.
 */
static bool
perfmon_cpu_pmc_ref(struct perfmon_cpu *cpu, unsigned int slot,
                    const struct perfmon_td_pmc *saved, uint64_t now)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    uint64_t bit = perfmon_slot_bit(slot);

    if (pmc->nr_refs != 0) {
        pmc->nr_refs++;
        return false;
    }

    assert(perfmon_pmcs[slot].nr_refs != 0);
    perfmon_cpu_pmc_clock(cpu, slot, now);
    pmc->nr_refs = 1;
    pmc->share_enabled = pmc->enabled;
    pmc->share_running = pmc->running;

    if (perfmon_pmcs[slot].sampling != NULL) {
        perfmon_cpu_pmc_sample_init(cpu, slot, saved);
    }

    WRITE_ONCE(cpu->active_mask, cpu->active_mask | bit);
    perfmon_sched_in(cpu, slot, now);
    return true;
}

/* A slot's counts on this CPU after a ref: as they are, or folded. */
static void
perfmon_cpu_pmc_ref_counts(struct perfmon_cpu *cpu, unsigned int slot,
                           const struct perfmon_td_pmc *saved, uint64_t now,
                           struct perfmon_counts *counts)
{
    const struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];

    if (perfmon_cpu_pmc_ref(cpu, slot, saved, now)) {
        counts->value = pmc->value;
        counts->enabled = pmc->enabled;
        counts->running = pmc->running;
    } else {
        perfmon_cpu_pmc_counts(cpu, slot, now, counts);
    }
}

/*
 * Drop a user of slot on this CPU; the caller took the counts first (the
 * value is folded, the times counted to now).  The last one gives its
 * counter back, to a slot waiting for one.
 */
static void
perfmon_cpu_pmc_unref(struct perfmon_cpu *cpu, unsigned int slot,
                      uint64_t now)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    uint64_t bit = perfmon_slot_bit(slot);

    assert(pmc->nr_refs != 0);

    if (--pmc->nr_refs == 0) {
        WRITE_ONCE(cpu->active_mask, cpu->active_mask & ~bit);
        perfmon_sched_out(cpu, slot, now);
    }
}

/* ---- per-thread state --------------------------------------------------- */

void
perfmon_td_init(struct perfmon_td *td)
{
    memset(td, 0, sizeof(*td));
}

/*
 * Load slot of a thread running on this CPU (entered).  The CPU knows
 * the thread whose slots are loaded (cpu->td, for the scheduler): set
 * with its first slot, cleared with its last.
 */
static void
perfmon_td_pmc_load(struct perfmon_td *td, struct perfmon_cpu *cpu,
                    unsigned int slot, uint64_t now)
{
    assert(cpu->td == NULL || cpu->td == td);
    cpu->td = td;
    td->loaded_mask |= perfmon_slot_bit(slot);
    perfmon_cpu_pmc_ref_counts(cpu, slot, &td->pmcs[slot], now,
                               &td->pmcs[slot].snap);
}

uint64_t
perfmon_cpu_pmc_share(struct perfmon_cpu *cpu, unsigned int slot,
                      uint64_t now)
{
    const struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    const struct perfmon_td *td = cpu->td;
    uint64_t enabled, running;

    perfmon_cpu_pmc_clock(cpu, slot, now);
    enabled = pmc->enabled - pmc->share_enabled;
    running = pmc->running - pmc->share_running;

    if (td != NULL && (td->loaded_mask & perfmon_slot_bit(slot))) {
        const struct perfmon_td_pmc *tpmc = &td->pmcs[slot];

        enabled = tpmc->total.enabled - tpmc->share_base.enabled
                  + (pmc->enabled - tpmc->snap.enabled);
        running = tpmc->total.running - tpmc->share_base.running
                  + (pmc->running - tpmc->snap.running);
    }

    return (enabled == 0) ? 0 : num_muldiv(running, 1ULL << 20, enabled);
}

/*
 * Fold what a loaded slot counted since the last fold into the thread;
 * counts: the CPU's counts of the slot at now.
 */
static void
perfmon_td_pmc_sync(struct perfmon_td *td, struct perfmon_cpu *cpu,
                    unsigned int slot, uint64_t now,
                    struct perfmon_counts *counts)
{
    struct perfmon_td_pmc *tpmc = &td->pmcs[slot];

    perfmon_cpu_pmc_counts(cpu, slot, now, counts);
    perfmon_counts_add_delta(&tpmc->total, counts, &tpmc->snap);
    tpmc->snap = *counts;
}

/*
 * Drop slot of a thread running on this CPU (entered, synced).  Always
 * inline: each caller keeps it in its own body, so that the context
 * switch's stays one piece.
 */
static inline __attribute__((always_inline)) void
perfmon_td_pmc_drop(struct perfmon_td *td, struct perfmon_cpu *cpu,
                    unsigned int slot)
{
    perfmon_cpu_pmc_unref(cpu, slot, cpu->now);
    td->loaded_mask &= ~perfmon_slot_bit(slot);

    if (td->loaded_mask == 0) {
        cpu->td = NULL;
    }
}

/*
 * Unload slot of a thread running on this CPU (entered, synced): a
 * sampling counter's progress goes with the thread.
 */
static void
perfmon_td_pmc_unload(struct perfmon_td *td, struct perfmon_cpu *cpu,
                      unsigned int slot)
{
    if (perfmon_pmcs[slot].sampling != NULL) {
        perfmon_cpu_pmc_sample_save(cpu, slot, &td->pmcs[slot]);
    }

    perfmon_td_pmc_drop(td, cpu, slot);
}

/*
 * A context switch from prev to next on this CPU, in one section.  A slot
 * both threads count keeps running: its CPU reference passes from prev to
 * next, so the counter is read once and neither stopped nor restarted.
 * Sampling slots are the exception: each thread has its own progress to
 * the next sample, so they are unloaded and loaded.
 */
void
perfmon_td_switch_slow(struct perfmon_td *prev, struct perfmon_td *next)
{
    struct perfmon_counts counts;
    struct perfmon_cpu *cpu;
    uint64_t kept, slots, now;

    assert(!thread_preempt_enabled());
    assert(next->loaded_mask == 0);
    cpu = perfmon_cpu_enter();
    assert(prev->loaded_mask == 0 || prev->cpu == cpu_id());
    now = cpu->now;
    kept = prev->loaded_mask & next->active_mask
           & ~READ_ONCE(perfmon_sampling_slots);
    slots = prev->loaded_mask;

    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        slots &= slots - 1;
        perfmon_td_pmc_sync(prev, cpu, slot, now, &counts);

        if (kept & perfmon_slot_bit(slot)) {
            next->pmcs[slot].snap = counts;
        } else {
            perfmon_td_pmc_unload(prev, cpu, slot);
        }
    }

    prev->loaded_mask = 0;
    cpu->td = (kept != 0) ? next : NULL;
    next->cpu = cpu_id();
    next->loaded_mask = kept;
    slots = next->active_mask & ~kept;

    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        slots &= slots - 1;
        perfmon_td_pmc_load(next, cpu, slot, now);
    }

    /*
     * Its slots took free counters in slot order: when some wait, they
     * all take turns by share now, not only at the next rotation.  (Only
     * then: slots waiting for another thread's sake wait for the tick.)
     */
    if (next->active_mask & ~cpu->sched_mask) {
        perfmon_sched_rotate(cpu, now);
    }

    /* What the branch records hold until now is another thread's. */
    if (next->active_mask & READ_ONCE(perfmon_branch_slots)) {
        perfmon_branch_sched_in();
    }

    perfmon_cpu_leave(cpu);
}

/*
 * The thread's counts on slot, up to date.  When running, the caller runs
 * on the thread's CPU with the PMU entered (cpu not NULL), and then every
 * active slot of the thread is loaded here.
 */
static void
perfmon_td_pmc_read(struct perfmon_td *td, struct perfmon_cpu *cpu,
                    unsigned int slot, uint64_t now,
                    struct perfmon_counts *counts)
{
    struct perfmon_counts cpu_counts;

    if (cpu != NULL) {
        assert(td->loaded_mask == td->active_mask);
        assert(td->cpu == cpu_id());
        perfmon_td_pmc_sync(td, cpu, slot, now, &cpu_counts);
    } else {
        assert(td->loaded_mask == 0);
    }

    *counts = td->pmcs[slot].total;
}

/*
 * Start counting an event of the thread: one more user of its slot,
 * loaded at once when the thread runs here.
 */
static void
perfmon_td_event_enable(struct perfmon_td *td, struct perfmon_cpu *cpu,
                        struct perfmon_event *event, uint64_t now)
{
    unsigned int slot = event->slot;
    struct perfmon_td_pmc *tpmc = &td->pmcs[slot];

    if (tpmc->nr_refs++ == 0) {
        td->active_mask |= perfmon_slot_bit(slot);
        tpmc->share_base = tpmc->total;

        if (cpu != NULL) {
            /* A thread without events was not loaded at its switch in. */
            if (td->loaded_mask == 0) {
                td->cpu = cpu_id();
            }

            perfmon_td_pmc_load(td, cpu, slot, now);
        }
    }

    perfmon_td_pmc_read(td, cpu, slot, now, &event->start);
}

static void
perfmon_td_event_disable(struct perfmon_td *td, struct perfmon_cpu *cpu,
                         struct perfmon_event *event, uint64_t now)
{
    unsigned int slot = event->slot;
    struct perfmon_td_pmc *tpmc = &td->pmcs[slot];
    struct perfmon_counts counts;

    perfmon_td_pmc_read(td, cpu, slot, now, &counts);
    perfmon_counts_add_delta(&event->total, &counts, &event->start);
    assert(tpmc->nr_refs != 0);

    /* Dropped without the sampling save: the period goes below. */
    if (--tpmc->nr_refs == 0) {
        if (cpu != NULL) {
            perfmon_td_pmc_drop(td, cpu, slot);
        }

        td->active_mask &= ~perfmon_slot_bit(slot);
        tpmc->sample_period = 0;
    }
}

/*
 * Whether event is one of a call's to act on where the call runs.  The
 * CPUs of one call run at once: an event of another CPU is told apart by
 * fields that stay fixed meanwhile, before its enabled flag is looked at.
 */
static bool
perfmon_call_targets(const struct perfmon_call *call,
                     const struct perfmon_event *event)
{
    return (event->thread == call->thread)
           && (call->thread != NULL || event->cpu == cpu_id())
           && (event->enabled != call->enable);
}

/* thread_call() functions. */

static void
perfmon_td_enable_fn(struct thread *thread, bool running, void *arg)
{
    struct perfmon_call *call = arg;
    struct perfmon_td *td = thread_get_perfmon_td(thread);
    struct perfmon_cpu *cpu = running ? perfmon_cpu_enter() : NULL;
    uint64_t now = (cpu != NULL) ? cpu->now : 0;

    for (unsigned int i = 0; i < call->nr; i++) {
        struct perfmon_event *event = call->events[i];

        if (!perfmon_call_targets(call, event)) {
            continue;
        }

        if (call->enable) {
            perfmon_td_event_enable(td, cpu, event, now);
        } else {
            perfmon_td_event_disable(td, cpu, event, now);
        }

        event->enabled = call->enable;
    }

    if (cpu != NULL) {
        perfmon_cpu_leave(cpu);
    }
}

static void
perfmon_td_read_fn(struct thread *thread, bool running, void *arg)
{
    struct perfmon_call *call = arg;
    struct perfmon_td *td = thread_get_perfmon_td(thread);
    struct perfmon_cpu *cpu = running ? perfmon_cpu_enter() : NULL;

    perfmon_td_pmc_read(td, cpu, call->events[0]->slot,
                        (cpu != NULL) ? cpu->now : 0, &call->counts);

    if (cpu != NULL) {
        perfmon_cpu_leave(cpu);
    }
}

/* xcall functions for CPU events, on the events' CPU. */

static void
perfmon_cpu_enable_xcall(void *arg)
{
    struct perfmon_call *call = arg;
    struct perfmon_cpu *cpu = perfmon_cpu_enter();
    uint64_t now = cpu->now;

    for (unsigned int i = 0; i < call->nr; i++) {
        struct perfmon_event *event = call->events[i];
        struct perfmon_counts counts;

        if (!perfmon_call_targets(call, event)) {
            continue;
        }

        if (call->enable) {
            perfmon_cpu_pmc_ref_counts(cpu, event->slot, NULL, now,
                                       &event->start);
        } else {
            perfmon_cpu_pmc_counts(cpu, event->slot, now, &counts);
            perfmon_counts_add_delta(&event->total, &counts, &event->start);
            perfmon_cpu_pmc_unref(cpu, event->slot, now);
        }

        event->enabled = call->enable;
    }

    perfmon_cpu_leave(cpu);
}

static void
perfmon_cpu_read_xcall(void *arg)
{
    struct perfmon_call *call = arg;
    struct perfmon_cpu *cpu = perfmon_cpu_enter();

    perfmon_cpu_pmc_counts(cpu, call->events[0]->slot, cpu->now,
                           &call->counts);
    perfmon_cpu_leave(cpu);
}

/* ---- poll ---------------------------------------------------------------- */

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

/* ---- events ------------------------------------------------------------- */

int
perfmon_event_init(struct perfmon_event *event, uint64_t id,
                   unsigned int flags)
{
    if (event == NULL || (flags & ~PERFMON_EF_MASK) != 0
        || (flags & PERFMON_EF_MODE) == 0) {
        return -EINVAL;
    }

    if (!(flags & PERFMON_EF_RAW) && id >= PERFMON_NR_EVENTS) {
        return -EINVAL;
    }

    memset(event, 0, sizeof(*event));
    event->id = id;
    event->flags = flags;
    event->state = PERFMON_EVENT_IDLE;
    return 0;
}

int
perfmon_event_set_dev(struct perfmon_event *event, struct perfmon_dev *dev)
{
    if (event == NULL || event->state != PERFMON_EVENT_IDLE) {
        return -EINVAL;
    }

    if (dev != NULL && !perfmon_dev_is_registered(dev)) {
        return -ENODEV;
    }

    event->dev = dev;
    return 0;
}

int
perfmon_event_set_sampling(struct perfmon_event *event,
                           const struct perfmon_sampling *sampling)
{
    if (event == NULL || event->state != PERFMON_EVENT_IDLE) {
        return -EINVAL;
    }

    if (sampling != NULL
        && ((sampling->period == 0 && sampling->freq == 0)
            || sampling->period > PERFMON_MAX_PERIOD
            || sampling->freq > PERFMON_MAX_FREQ
            || (sampling->fields & ~PERFMON_SF_MASK) != 0
            || sampling->sbuf == NULL
            || ((sampling->fields & PERFMON_SF_BRANCH)
                && !perfmon_branch_filter_valid(sampling->branch_filter))
            || ((sampling->fields & PERFMON_SF_READ)
                && !perfmon_sample_reads_valid(sampling)))) {
        return -EINVAL;
    }

    event->sampling = sampling;
    return 0;
}

int
perfmon_event_set_group(struct perfmon_event *event,
                        struct perfmon_event *leader)
{
    if (event == NULL || event->state != PERFMON_EVENT_IDLE) {
        return -EINVAL;
    }

    if (leader != NULL && leader != event && leader->group != leader) {
        return -EINVAL;
    }

    event->group = leader;
    return 0;
}

bool
perfmon_event_attached(const struct perfmon_event *event)
{
    return event != NULL && (event->state == PERFMON_EVENT_THREAD
                             || event->state == PERFMON_EVENT_CPU);
}

bool
perfmon_event_enabled(const struct perfmon_event *event)
{
    return perfmon_event_attached(event) && event->enabled;
}

/*
 * Enable or disable the events of an array: one call on each thread or
 * CPU they are attached to, which acts on all the events of that target;
 * the CPUs' calls run at once (perfmon_cpu_enable_xcall only touches the
 * events of its own CPU), so that CPU events share one span.
 */
static int
perfmon_events_set_enabled(struct perfmon_event *const *events,
                           unsigned int nr, bool enable)
{
    struct perfmon_call call = {
        .events = events,
        .nr = nr,
        .enable = enable,
    };
    uint64_t cpus = 0;
    int error;

    perfmon_assert_thread_context();

    if (events == NULL) {
        return -EINVAL;
    }

    for (unsigned int i = 0; i < nr; i++) {
        if (!perfmon_event_attached(events[i])) {
            return -EINVAL;
        }
    }

    /* Threads one at a time; a thread seen earlier was served then. */
    for (unsigned int i = 0; i < nr; i++) {
        const struct perfmon_event *event = events[i];
        bool done = false;

        if (event->thread == NULL) {
            cpus |= 1ULL << event->cpu;
            continue;
        }

        for (unsigned int j = 0; j < i && !done; j++) {
            done = events[j]->thread == event->thread;
        }

        if (!done) {
            call.thread = event->thread;
            thread_call(event->thread, perfmon_td_enable_fn, &call);
        }
    }

    /* The CPUs all at once, each acting on its own events. */
    if (cpus != 0) {
        call.thread = NULL;
        error = xcall_call_many(perfmon_cpu_enable_xcall, &call, cpus);
        assert(error == 0);             /* CPUs never go offline */
    }

    /* The children of inherited events follow their parents. */
    for (unsigned int i = 0; i < nr; i++) {
        if (perfmon_event_is_root(events[i])) {
            perfmon_family_set_enabled(events[i]->family, enable);
        }
    }

    return 0;
}

int
perfmon_events_enable(struct perfmon_event *const *events, unsigned int nr)
{
    return perfmon_events_set_enabled(events, nr, true);
}

int
perfmon_events_disable(struct perfmon_event *const *events, unsigned int nr)
{
    return perfmon_events_set_enabled(events, nr, false);
}

int
perfmon_event_enable(struct perfmon_event *event)
{
    return perfmon_events_set_enabled(&event, 1, true);
}

int
perfmon_event_disable(struct perfmon_event *event)
{
    return perfmon_events_set_enabled(&event, 1, false);
}

/*
 * Count an event that asks for branch stacks as a user of the branch-record
 * driver, once it has its slot (and so its device); on failure the slot
 * goes back.
 */
static int
perfmon_event_get_branches(struct perfmon_event *event)
{
    int error = perfmon_branch_get(event);

    if (error) {
        perfmon_event_put_pmc(event);
    }

    return error;
}

/*
 * The common end of the two attaches: the event has its counter slot;
 * set it up as inherited, then start it unless attached disabled.
 */
static int
perfmon_event_attach_finish(struct perfmon_event *event)
{
    int error;

    event->enabled = false;
    event->start = (struct perfmon_counts){ 0 };

    if (event->flags & PERFMON_EF_INHERIT) {
        error = perfmon_family_create(event);

        if (error) {
            return error;
        }
    }

    if (!(event->flags & PERFMON_EF_DISABLED)) {
        perfmon_event_enable(event);
    }

    return 0;
}

int
perfmon_event_attach(struct perfmon_event *event, struct thread *thread)
{
    struct perfmon_dev *dev;
    int error;

    perfmon_assert_thread_context();

    if (event == NULL || thread == NULL
        || event->state != PERFMON_EVENT_IDLE) {
        return -EINVAL;
    }

    /* The device the counter slot resolves to is kept only on success. */
    dev = event->dev;

    /* Referenced while on the counter's user list (perfmon_pmc_foreach). */
    thread_ref(thread);
    event->thread = thread;
    event->cpu = 0;
    error = perfmon_event_get_pmc(event);

    if (error) {
        event->thread = NULL;
        thread_unref(thread);
        return error;
    }

    error = perfmon_event_get_branches(event);

    if (error == 0) {
        event->state = PERFMON_EVENT_THREAD;
        error = perfmon_event_attach_finish(event);

        if (error) {
            event->state = PERFMON_EVENT_IDLE;
            perfmon_event_put_pmc(event);
            perfmon_branch_put(event);
        }
    }

    if (error) {
        event->dev = dev;
        event->thread = NULL;
        thread_unref(thread);
    }

    return error;
}

int
perfmon_event_attach_cpu(struct perfmon_event *event, unsigned int cpu)
{
    struct perfmon_dev *dev;
    int error;

    perfmon_assert_thread_context();

    if (event == NULL || event->state != PERFMON_EVENT_IDLE
        || cpu >= cpu_count() || (event->flags & PERFMON_EF_INHERIT)) {
        return -EINVAL;
    }

    dev = event->dev;

    event->thread = NULL;
    event->cpu = cpu;
    error = perfmon_event_get_pmc(event);

    if (error == 0) {
        error = perfmon_event_get_branches(event);

        if (error) {
            event->dev = dev;
        }
    }

    if (error) {
        return error;
    }

    event->state = PERFMON_EVENT_CPU;
    return perfmon_event_attach_finish(event);
}

int
perfmon_event_detach(struct perfmon_event *event)
{
    perfmon_assert_thread_context();

    if (!perfmon_event_attached(event)) {
        return -EINVAL;
    }

    /* The children go first: their counts end up in the event's total. */
    if (perfmon_event_is_root(event)) {
        perfmon_family_destroy(event);
    }

    if (event->enabled) {
        perfmon_events_set_enabled(&event, 1, false);
    }

    event->state = PERFMON_EVENT_IDLE;
    perfmon_event_put_pmc(event);
    perfmon_branch_put(event);

    if (event->thread != NULL) {
        thread_unref(event->thread);
        event->thread = NULL;
    }

    return 0;
}

/*
 * The 64-bit value slot would have on this CPU if it were folded now,
 * computed without changing anything; correct while the counter has not
 * advanced a full period since its last fold.  Returns false once it is
 * more than 1/16 of a period (PERFMON_PEEK_SHIFT) past that fold: the
 * caller then folds instead.  A peek leaves prev where it was, so two
 * peeks in a row are only known to be in order when they are less than
 * 15/16 of a period apart (the folding read allowed a full period); the
 * poll interval and the overflow interrupt fold far more often than that.
 * prev and value are loaded after the device's read, so that fewer values
 * live across its call: a fold in between changes the generation, and
 * the caller reads again.
 */
static inline __attribute__((always_inline)) bool
perfmon_cpu_pmc_peek(const struct perfmon_cpu_pmc *pmc, uint64_t *valuep)
{
    uint64_t raw = pmc->dev->ops->read(pmc->dev, pmc->hw_id), delta;

    barrier();
    delta = (raw - pmc->prev) & pmc->mask;

    if (delta > (pmc->mask >> PERFMON_PEEK_SHIFT)) {
        return false;
    }

    *valuep = pmc->value + delta;
    return true;
}

/*
 * The current counts of slot on this CPU, as perfmon_cpu_pmc_counts()
 * would fold them at now (the times only with times), computed without
 * changing anything.  False when the counter needs a fold.
 */
static inline __attribute__((always_inline)) bool
perfmon_cpu_pmc_peek_counts(const struct perfmon_cpu *cpu, unsigned int slot,
                            bool times, struct perfmon_counts *counts)
{
    const struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    bool sched = READ_ONCE(cpu->sched_mask) & perfmon_slot_bit(slot);
    uint64_t dt;

    if (!sched) {
        counts->value = pmc->value;
    } else if (!perfmon_cpu_pmc_peek(pmc, &counts->value)) {
        return false;
    }

    if (times) {
        dt = cpu_rdtsc() - pmc->stamp;
        counts->enabled = pmc->enabled + dt;
        counts->running = pmc->running + (sched ? dt : 0);
    }

    return true;
}

/*
 * The current counts behind an enabled event whose counter runs on this
 * CPU: a CPU event of this CPU, or an event of the calling thread; the
 * times only with times.  Preemption disabled, interrupts enabled:
 * nothing is written, and the reads are retried when an interrupt or NMI
 * section changed the per-CPU state meanwhile (cpu->gen).  Returns false
 * when the event is a CPU event of another CPU, or its counter needs a
 * fold; the caller then takes the general path.  Inline, with nothing of
 * the general path around it: it is the read that runs most.
 */
static inline __attribute__((always_inline)) bool
perfmon_event_read_local(const struct perfmon_event *event, bool times,
                         struct perfmon_counts *counts)
{
    unsigned int cpu_index = cpu_id(), slot = event->slot;
    const struct perfmon_cpu *cpu = perfmon_cpu_get(cpu_index);
    const struct perfmon_td_pmc *tpmc = NULL;
    unsigned long gen;

    if (event->state == PERFMON_EVENT_THREAD) {
        const struct perfmon_td *td = thread_get_perfmon_td(event->thread);

        /* Thread events need the switch hook, which loads them. */
        assert(td->loaded_mask & perfmon_slot_bit(slot));
        tpmc = &td->pmcs[slot];
    } else if (event->cpu != cpu_index) {
        return false;
    }

    do {
        gen = READ_ONCE(cpu->gen);
        barrier();

        if (!perfmon_cpu_pmc_peek_counts(cpu, slot, times, counts)) {
            return false;
        }

        /* The times only when asked for: they were not read otherwise. */
        if (tpmc != NULL && times) {
            struct perfmon_counts cpu_counts = *counts;

            *counts = tpmc->total;
            perfmon_counts_add_delta(counts, &cpu_counts, &tpmc->snap);
        } else if (tpmc != NULL) {
            counts->value = tpmc->total.value
                            + (counts->value - tpmc->snap.value);
        }

        barrier();
    } while (READ_ONCE(cpu->gen) != gen);

    return true;
}

/*
 * An event's own counts (its children's aside), up to date; the times
 * are only right with times.
 */
/* The general read: on the thread's or the event's CPU, folding. */
static void __attribute__((noinline))
perfmon_event_read_sync(struct perfmon_event *event,
                        struct perfmon_counts *counts)
{
    struct perfmon_call call = { .events = &event, .nr = 1 };
    int error;

    if (event->state == PERFMON_EVENT_THREAD) {
        thread_call(event->thread, perfmon_td_read_fn, &call);
    } else {
        error = xcall_call(perfmon_cpu_read_xcall, &call, event->cpu);
        assert(error == 0);
    }

    perfmon_counts_add_delta(counts, &call.counts, &event->start);
}

/*
 * perfmon_event_read_counts(), inline: perfmon_event_read() takes the
 * local read with nothing around it.
 */
static inline __attribute__((always_inline)) void
perfmon_event_read_counts_inline(struct perfmon_event *event, bool times,
                                 struct perfmon_counts *counts)
{
    struct perfmon_counts now;

    *counts = event->total;

    if (!perfmon_event_enabled(event)) {
        return;
    }

    perfmon_assert_thread_context();

    /* The calling thread, or the CPU it runs on: no cross-CPU call. */
    if (event->state == PERFMON_EVENT_CPU || event->thread == thread_self()) {
        bool local;

        thread_preempt_disable();
        local = perfmon_event_read_local(event, times, &now);
        thread_preempt_enable();

        if (local) {
            counts->value += now.value - event->start.value;

            if (times) {
                counts->enabled += now.enabled - event->start.enabled;
                counts->running += now.running - event->start.running;
            }

            return;
        }
    }

    perfmon_event_read_sync(event, counts);
}

void
perfmon_event_read_counts(struct perfmon_event *event, bool times,
                          struct perfmon_counts *counts)
{
    perfmon_event_read_counts_inline(event, times, counts);
}

uint64_t
perfmon_event_read(struct perfmon_event *event)
{
    struct perfmon_counts counts;

    if (event == NULL) {
        return 0;
    }

    perfmon_event_read_counts_inline(event, false, &counts);

    if (unlikely(event->family != NULL) && perfmon_event_is_root(event)) {
        perfmon_family_add_counts(event->family, false, &counts);
    }

    return counts.value;
}

uint64_t
perfmon_event_read_times(struct perfmon_event *event, uint64_t *enabled_nsp,
                         uint64_t *running_nsp)
{
    struct perfmon_counts counts = { 0 };

    if (event != NULL) {
        perfmon_event_read_counts(event, true, &counts);

        if (perfmon_event_is_root(event)) {
            perfmon_family_add_counts(event->family, true, &counts);
        }
    }

    if (enabled_nsp != NULL) {
        *enabled_nsp = num_muldiv(counts.enabled, 1000000000, cpu_tsc_freq());
    }

    if (running_nsp != NULL) {
        *running_nsp = num_muldiv(counts.running, 1000000000, cpu_tsc_freq());
    }

    return counts.value;
}

/* ---- overflow interrupt and callbacks ----------------------------------- */

bool
perfmon_overflow_intr(struct perfmon_dev *dev, struct trap_frame *frame)
{
    uint64_t mask, slots, active, start, due;
    struct perfmon_cpu *cpu;
    unsigned int cpu_index;

    assert(!cpu_intr_enabled());

    if (!perfmon_dev_is_registered(dev) || !dev->overflow_intr) {
        return false;
    }

    /*
     * The nesting level first: an NMI landing in a deadline call of the
     * soft or step PMU from here on is nested in it, and its time part of
     * this one's.
     */
    cpu_index = cpu_id();
    cpu = perfmon_cpu_get(cpu_index);
    assert(cpu->intr_depth < PERFMON_INTR_MAX_DEPTH);
    WRITE_ONCE(cpu->intr_depth, cpu->intr_depth + 1);
    barrier();
    start = cpu_rdtsc();
    mask = dev->ops->handle_overflow_intr(dev);

    if (mask == 0) {
        WRITE_ONCE(cpu->intr_depth, cpu->intr_depth - 1);
        return false;
    }

    /*
     * The callbacks first (branch records may add a branch stack to the
     * samples): records that do not freeze on the interrupt run on until
     * a callback stops them, and must not fill with the fold's branches.
     */
    perfmon_intr_run_callbacks(dev, cpu_index, mask, frame);
    syscnt_inc(&cpu->nr_intrs);

    /* The slots of the device running here whose counter overflowed. */
    active = READ_ONCE(cpu->sched_mask) & perfmon_dev_slots(dev);
    slots = 0;

    while (active != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(active);

        active &= active - 1;

        if (mask & (1ULL << cpu->pmcs[slot].hw_id)) {
            slots |= perfmon_slot_bit(slot);
        }
    }

    /*
     * Inside a section the fold waits for the section's end, where the
     * frame is gone: such overflows are counted, re-armed, not sampled.
     * The samples and the throttle are part of the section: an NMI landing
     * in this handler when it is no NMI itself (the soft and step PMUs'
     * deadline calls) then leaves its overflow pending instead of changing
     * periods and the throttle's window under it.
     */
    if (READ_ONCE(cpu->busy)) {
        __atomic_fetch_or(&cpu->pending, slots, __ATOMIC_RELAXED);
    } else {
        WRITE_ONCE(cpu->busy, true);
        WRITE_ONCE(cpu->gen, cpu->gen + 1);
        barrier();
        cpu->in_intr = true;
        cpu->due = 0;
        perfmon_cpu_fold(cpu, slots, true);
        cpu->in_intr = false;

        due = cpu->due;

        /*
         * Only the outermost interrupt throttles, for all the time it
         * took: a nested one that sampled before this one's section is
         * part of it, and would count twice on its own.  (One nested in
         * an interrupt that samples nothing is not counted: rare, as
         * nesting is, and never a storm on its own.)
         */
        if (due != 0) {
            perfmon_cpu_write_samples(cpu, due, frame);

            if (cpu->intr_depth == 1) {
                perfmon_cpu_throttle(cpu, cpu_rdtsc() - start);
            }
        }

        /* Also folds what an NMI left pending, when this is not one. */
        perfmon_cpu_leave(cpu);
    }

    if (dev->ops->overflow_intr_end != NULL) {
        dev->ops->overflow_intr_end(dev);
    }

    barrier();
    WRITE_ONCE(cpu->intr_depth, cpu->intr_depth - 1);
    return true;
}

/* ---- setup -------------------------------------------------------------- */

/* perfmon.max_sample_share=PERCENT, 1 to 100. */
static void
perfmon_setup_sample_share(void)
{
    uint64_t share;
    int error = cmdline_get_u64("perfmon.max_sample_share", &share);

    if (error == 0 && share >= 1 && share <= 100) {
        perfmon_sample_share = (unsigned int)share;
    } else if (error != -ENOENT) {
        log_warning("perfmon: perfmon.max_sample_share must be 1..100, "
                    "using %u", PERFMON_SAMPLE_SHARE_DEFAULT);
    }
}

static int
perfmon_setup(void)
{
    unsigned int nr_cpus = cpu_count();

    for (unsigned int i = 0; i < nr_cpus; i++) {
        struct perfmon_cpu *cpu = perfmon_cpu_get(i);

        syscnt_register_cpu(&cpu->nr_overflows, "perfmon_nr_overflows", i);
        syscnt_register_cpu(&cpu->nr_intrs, "perfmon_nr_intrs", i);
        syscnt_register_cpu(&cpu->nr_polls, "perfmon_nr_polls", i);
        syscnt_register_cpu(&cpu->nr_unsampled, "perfmon_nr_unsampled", i);
        syscnt_register_cpu(&cpu->nr_throttles, "perfmon_nr_throttles", i);
        syscnt_register_cpu(&cpu->nr_rotations, "perfmon_nr_rotations", i);
    }

    perfmon_setup_sample_share();

    perfmon_pmc_setup();
    perfmon_sched_setup();
    perfmon_ready = true;
    return 0;
}

INIT_OP_DEFINE(perfmon_setup, INIT_OP_DEP(xcall_setup, true),
               INIT_OP_DEP(timer_setup, true),
               INIT_OP_DEP(thread_setup, true));

#ifdef TALLY_HOST_TEST
void
perfmon_reset(void)
{
    perfmon_dev_reset();
    perfmon_intr_reset();
    perfmon_pmc_reset();
    perfmon_sched_reset();
    perfmon_branch_reset();
    memset(perfmon_cpus, 0, sizeof(perfmon_cpus));
    perfmon_sample_share = PERFMON_SAMPLE_SHARE_DEFAULT;
    perfmon_setup();
}
#endif /* TALLY_HOST_TEST */
