/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: the overflow interrupt.  A device's
 * interrupt handler calls perfmon_overflow_intr() (NMI context, or a soft
 * PMU's deadline call): the callbacks run, the counters that overflowed
 * are folded (or left pending for the section the interrupt landed in,
 * perfmon_cpu.c), the samples due are written and sampling is throttled
 * when it takes more than its share of the CPU.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/trap.h"
#include "kern/assert.h"
#include "kern/clock.h"
#include "kern/cmdline.h"
#include "kern/error.h"
#include "kern/log.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_control.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/perfmon/perfmon_nmi.h"
#include "kern/perfmon_region.h"
#include "kern/syscnt.h"

/*
 * Throttling: the window over which a CPU's sampling time is measured,
 * and the most one interrupt may count for, as a fraction of the window:
 * under a hypervisor a vCPU may be preempted in the middle of a handler,
 * and one such stall must not pass for a storm of interrupts.  The window
 * is counted in the ticks the CPU took, not in TSC time: time the host
 * held the vCPU is no time free of sampling, and counted so, a storm on a
 * host that runs the vCPU a tenth of the time was never throttled.
 */
#define PERFMON_THROTTLE_WINDOW_MS  100
#define PERFMON_THROTTLE_MAX_SHARE  64
#define PERFMON_SAMPLE_SHARE_DEFAULT 25

/*
 * Most percent of a CPU's time sampling may take: perfmon.max_sample_share
 * at boot, perfmon_set_max_sample_share() after (thread context); read by
 * the overflow interrupt when it works the limit out.
 */
static unsigned int perfmon_sample_share = PERFMON_SAMPLE_SHARE_DEFAULT;

/*
 * Throttling's figures in TSC cycles, for the TSC frequency freq_hz: the
 * most one interrupt counts for (cap), and one more than the most
 * sampling time the window may hold before the period doubles (limit:
 * the share of the window, floor(window * share / 100) + 1, so that the
 * interrupt compares without multiplying or dividing: w * 100 > window *
 * share holds exactly when w >= limit).  limit is 0 until computed, and
 * again once the share changes: the next interrupt that samples finds no
 * cycles below it and computes the figures (perfmon_cpu_throttle), and
 * again when a window starts at another frequency (it is calibrated
 * once, at boot): the divisions are off the interrupt's path.  Written
 * from NMI context, by any CPU, with the same values: limit is written
 * last and read first, so that a CPU seeing it nonzero sees the rest.
 */
struct perfmon_throttle {
    uint64_t cap;
    uint64_t limit;
    uint64_t freq_hz;
};

static struct perfmon_throttle perfmon_throttle;

static void __attribute__((noinline))
perfmon_throttle_set(uint64_t freq_hz)
{
    uint64_t window = freq_hz / 1000 * PERFMON_THROTTLE_WINDOW_MS;

    perfmon_throttle.cap = window / PERFMON_THROTTLE_MAX_SHARE;
    perfmon_throttle.freq_hz = freq_hz;
    __atomic_store_n(&perfmon_throttle.limit,
                     window * perfmon_sample_share / 100 + 1,
                     __ATOMIC_RELEASE);
}

/*
 * Throttling, when an interrupt that wrote samples took the window's
 * sampling time to its limit, when the window is over or when the
 * figures are to be computed (the inline part, below, found one of
 * them): start a window when it is over or the figures are new, count
 * cycles, and when the window's sampling time passes the share allowed,
 * double the period of every sampling counter running here, and say so
 * in their buffers.  The window starts again then, so the next doubling
 * needs as much again.
 */
static void __attribute__((noinline))
perfmon_cpu_throttle(struct perfmon_cpu *cpu, uint64_t cycles, uint64_t tick)
{
    uint64_t limit, freq_hz, slots;

    limit = __atomic_load_n(&perfmon_throttle.limit, __ATOMIC_ACQUIRE);

    if (tick >= cpu->window_end || limit == 0) {
        cpu->window_end = tick
                          + clock_ticks_from_ms(PERFMON_THROTTLE_WINDOW_MS);
        cpu->window_cycles = 0;
        freq_hz = cpu_tsc_freq();

        if (freq_hz == 0) {
            return;
        }

        if (limit == 0 || freq_hz != READ_ONCE(perfmon_throttle.freq_hz)) {
            perfmon_throttle_set(freq_hz);
            limit = perfmon_throttle.limit;
        }
    }

    cpu->window_cycles += MIN(cycles, perfmon_throttle.cap);

    if (cpu->window_cycles < limit) {
        return;
    }

    cpu->window_cycles = 0;
    perfmon_syscnt_inc_local(&cpu->nr_throttles);
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
 * After the interrupt's fold wrote samples: only the outermost interrupt
 * throttles, for all the time it took (timed: it read the TSC as it
 * started, at start).  A nested one that sampled before this one's
 * section is part of it, and would count twice on its own.  (One nested
 * in an interrupt that samples nothing is not counted: rare, as nesting
 * is, and never a storm on its own.)  The common case, a window going on
 * below its limit, is an add and two compares here; the rest is
 * perfmon_cpu_throttle's.
 */
static inline __attribute__((always_inline)) void
perfmon_overflow_sampled(struct perfmon_cpu *cpu, uint64_t timed,
                         uint64_t start)
{
    uint64_t cycles, limit, tick, window_cycles;

    if (cpu->intr_depth != 1 || timed == 0) {
        return;
    }

    cycles = cpu_rdtsc() - start;
    limit = __atomic_load_n(&perfmon_throttle.limit, __ATOMIC_ACQUIRE);
    tick = __atomic_load_n(cpu->ticks, __ATOMIC_RELAXED);   /* no call */
    window_cycles = cpu->window_cycles + MIN(cycles, perfmon_throttle.cap);

    if (likely(tick < cpu->window_end && window_cycles < limit)) {
        cpu->window_cycles = window_cycles;
        return;
    }

    perfmon_cpu_throttle(cpu, cycles, tick);
}

/*
 * The map's entry for dev's counter hw on cpu (slot + 1 holding it, 0:
 * none), read as a byte at its offset from cpu.  The device's index is
 * loaded here on its own (READ_ONCE): kept from the load that the slow
 * path's call takes, it would be copied.  The byte is a plain load, which
 * the compiler folds into the address: the common path reads it outside
 * a section, where nothing changes the map under it.
 */
static inline __attribute__((always_inline)) uint64_t
perfmon_nmi_map_entry(const struct perfmon_cpu *cpu,
                      const struct perfmon_dev *dev, uint64_t hw)
{
    uint64_t offset = (uint64_t)READ_ONCE(dev->index)
                      * sizeof(struct perfmon_cpu_dev)
                      + hw + offsetof(struct perfmon_cpu, devs)
                      + offsetof(struct perfmon_cpu_dev, slot_of_hw);

    return ((const uint8_t *)cpu)[offset];
}

/*
 * Write the sample of slot due in this interrupt (NMI context), of
 * period.  The sampling pointer is a READ_ONCE() so that it is loaded at
 * its place in one instruction, the slot's address not taken first.
 */
static inline __attribute__((always_inline)) void
perfmon_overflow_write_sample(uint64_t slot,
                              const struct trap_frame *frame,
                              uint64_t period)
{
    const struct perfmon_pmc *gpmc = &perfmon_pmcs[slot];

    perfmon_sample_writers[gpmc->sample_layout](
        READ_ONCE(gpmc->sampling), gpmc->sample_size, frame, period);
}

/*
 * The overflow interrupt's section in general (NMI context): the slots
 * running here whose counter overflowed (mask, dev's counters), by the map
 * from counter to slot, folded, their samples written and the throttle
 * fed; or, inside a section, left pending for its end.
 */
static void __attribute__((noinline))
perfmon_overflow_fold_all(struct perfmon_cpu *cpu,
                          const struct perfmon_dev *dev, uint64_t mask,
                          uint64_t timed, uint64_t start,
                          const struct trap_frame *frame)
{
    const struct perfmon_cpu_dev *cdev = &cpu->devs[dev->index];
    uint64_t slots = 0, due;

    /* A counter no slot holds now maps to none. */
    for (uint64_t hw = mask; hw != 0; hw &= hw - 1) {
        unsigned int slot = READ_ONCE(cdev->slot_of_hw[__builtin_ctzll(hw)]);

        if (slot != 0) {
            slots |= perfmon_slot_bit(slot - 1);
        }
    }

    /* Inside a section the map may be ahead of the slots running. */
    slots &= READ_ONCE(cpu->sched_mask);

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
        return;
    }

    perfmon_cpu_begin(cpu);
    cpu->in_intr = true;
    cpu->due = 0;
    perfmon_cpu_fold_intr(cpu, slots);
    cpu->in_intr = false;

    for (due = cpu->due; due != 0; due &= due - 1) {
        unsigned int slot = (unsigned int)__builtin_ctzll(due);

        perfmon_overflow_write_sample(slot, frame,
                                      cpu->pmcs[slot].due_period);
    }

    if (cpu->due != 0) {
        perfmon_overflow_sampled(cpu, timed, start);
    }

    /* Also folds what an NMI left pending, when this is not one. */
    perfmon_cpu_leave(cpu);
}

/*
 * The common interrupt: one counter overflowed, no section runs, nothing
 * is pending and a slot holds the counter.  Outside a section the map is
 * exact (the scheduler changes it and sched_mask together, in sections):
 * the counter's entry is the slot's.  A counting slot is folded inline,
 * with no test of pending: an NMI landing in the section (this being a
 * deadline call) marks its slots pending, which the leave folds.  A
 * sampling one goes through perfmon_cpu_fold_intr_sampling(), which
 * folds such an overflow before the arm writes the counter; it running
 * here means the interrupt was timed, from start.  False, having done
 * nothing, in any other case: then perfmon_overflow_fold_all().
 */
static inline __attribute__((always_inline)) bool
perfmon_overflow_fold_one(struct perfmon_cpu *cpu,
                          const struct perfmon_dev *dev, uint64_t mask,
                          uint64_t sampling, uint64_t start,
                          const struct trap_frame *frame)
{
    struct perfmon_cpu_pmc *pmc;
    uint64_t slot;

    /*
     * Loaded once each after the barrier, and not as READ_ONCE()s, so
     * that the compiler tests them in memory.
     */
    barrier();

    if (cpu->busy || cpu->pending != 0 || (mask & (mask - 1)) != 0) {
        return false;
    }

    /* 64 bits wide from the byte, for the index: no extension after. */
    slot = perfmon_nmi_map_entry(cpu, dev, cpu_ctz64(mask));

    if (slot == 0) {
        return false;
    }

    slot--;
    pmc = &cpu->pmcs[slot];
    perfmon_cpu_begin(cpu);

    /* A bit test (a mask of the slot's bit takes a shift more). */
    if (likely(!((sampling >> slot) & 1))) {
        __asm__("" : "+r"(slot));       /* nor here */
        perfmon_cpu_pmc_fold_ovf_alone(cpu, (unsigned int)slot, pmc);
    } else {
        uint64_t period;

        __asm__("" : "+r"(slot));       /* its narrowing not hoisted here */

        if (perfmon_cpu_fold_intr_sampling(cpu, slot, pmc, &period)) {
            perfmon_overflow_write_sample(slot, frame, period);
            perfmon_overflow_sampled(cpu, 1, start);
        }
    }

    perfmon_cpu_leave(cpu);
    return true;
}

/*
 * The interrupt's work once the device said which counters overflowed
 * (mask), no callbacks and no end of the device's to run: count it, fold.
 */
static inline __attribute__((always_inline)) void
perfmon_overflow_fold(struct perfmon_cpu *cpu, const struct perfmon_dev *dev,
                      uint64_t mask, uint64_t sampling, uint64_t timed,
                      uint64_t start, const struct trap_frame *frame)
{
    perfmon_syscnt_inc_local(&cpu->nr_intrs);

    if (!perfmon_overflow_fold_one(cpu, dev, mask, sampling, start, frame)) {
        perfmon_overflow_fold_all(cpu, dev, mask, timed, start, frame);
    }
}

/*
 * The same with the callbacks around the fold, when some may be
 * registered, and the device's end after it, when it has one.  The
 * callbacks first (branch records may add a branch stack to the samples):
 * records that do not freeze on the interrupt run on until a callback
 * stops them, and must not fill with the fold's branches.
 */
static void __attribute__((noinline))
perfmon_overflow_fold_more(struct perfmon_cpu *cpu, struct perfmon_dev *dev,
                           uint64_t mask, uint64_t sampling, uint64_t timed,
                           uint64_t start, struct trap_frame *frame)
{
    unsigned int cpu_index = cpu_id();
    bool callbacks = perfmon_intr_has_callbacks();

    if (callbacks) {
        perfmon_intr_run_callbacks(dev, cpu_index, mask, frame);
    }

    perfmon_overflow_fold(cpu, dev, mask, sampling, timed, start, frame);

    if (callbacks) {
        perfmon_intr_end_callbacks(cpu_index);
    }

    if (dev->intr_end) {
        dev->ops->overflow_intr_end(dev);
    }
}

PERFMON_REGION_DEFINE(pmi, "pmi");

bool
perfmon_overflow_nmi(void *arg, struct trap_frame *frame)
{
    struct perfmon_dev *dev = arg;
    uint64_t mask, sampling, start, timed;
    struct perfmon_cpu *cpu;
    unsigned int callbacks;

    assert(!cpu_intr_enabled());
    PERFMON_REGION_SCOPE(pmi);

    if (!perfmon_dev_is_registered(dev) || !dev->overflow_intr) {
        return false;
    }

    /*
     * The nesting level first: an NMI landing in a deadline call of the
     * soft or step PMU from here on is nested in it, and its time part of
     * this one's.
     */
    cpu = perfmon_cpu_get(cpu_id());
    __asm__("" : "+r"(cpu));    /* kept, not recomputed from the index */
    assert(cpu->intr_depth < PERFMON_INTR_MAX_DEPTH);
    perfmon_cpu_word_add(&cpu->intr_depth, 1);
    barrier();

    /*
     * Throttling times the interrupt, when a sample may be due in it
     * (timed: nonzero, the sampling slots running here).
     */
    sampling = READ_ONCE(perfmon_sampling_slots);
    timed = READ_ONCE(cpu->sched_mask) & sampling;
    start = (timed != 0) ? cpu_rdtsc() : 0;
    mask = dev->ops->handle_overflow_intr(dev);

    if (mask == 0) {
        perfmon_cpu_word_add(&cpu->intr_depth, -1UL);
        return false;
    }

    /*
     * One test for the callbacks (registered anywhere) and the device's
     * end (a flag of the device's, not the op's pointer): an interrupt
     * with neither makes no other.  A hardware PMU's, with an end and no
     * callbacks, folds inline too.
     */
    callbacks = __atomic_load_n(&perfmon_intr_nr_used, __ATOMIC_RELAXED);

    if (likely((callbacks | dev->intr_end) == 0)) {
        perfmon_overflow_fold(cpu, dev, mask, sampling, timed, start, frame);
    } else if (callbacks == 0) {
        perfmon_overflow_fold(cpu, dev, mask, sampling, timed, start, frame);
        dev->ops->overflow_intr_end(dev);
    } else {
        perfmon_overflow_fold_more(cpu, dev, mask, sampling, timed, start,
                                   frame);
    }

    barrier();
    perfmon_cpu_word_add(&cpu->intr_depth, -1UL);
    return true;
}

/* perfmon.max_sample_share=PERCENT, 1 to 100. */
void
perfmon_nmi_setup(void)
{
    uint64_t share;
    int error = cmdline_get_u64("perfmon.max_sample_share", &share);

    if (error == 0 && share >= 1 && share <= 100) {
        perfmon_sample_share = (unsigned int)share;
    } else if (error != -ENOENT) {
        log_warning("perfmon: perfmon.max_sample_share must be 1..100, "
                    "using %u", PERFMON_SAMPLE_SHARE_DEFAULT);
    }

    perfmon_throttle.limit = 0;         /* to compute again */

    for (unsigned int i = 0; i < cpu_count(); i++) {
        perfmon_cpu_get(i)->ticks = clock_cpu_ticks_word(i);
    }
}

unsigned int
perfmon_set_max_sample_share(unsigned int percent)
{
    unsigned int old = perfmon_sample_share;

    perfmon_assert_thread_context();
    assert(percent >= 1 && percent <= 100);
    WRITE_ONCE(perfmon_sample_share, percent);

    /* Interrupts work the limit out again from the share. */
    __atomic_store_n(&perfmon_throttle.limit, 0, __ATOMIC_RELEASE);
    return old;
}

#ifdef TALLY_HOST_TEST
void
perfmon_nmi_reset(void)
{
    perfmon_sample_share = PERFMON_SAMPLE_SHARE_DEFAULT;
    perfmon_throttle.limit = 0;
}
#endif /* TALLY_HOST_TEST */
