/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: which slot holds which hardware counter on
 * each CPU, and multiplexing.
 *
 * A pinned slot has its counter on every CPU (reserved when the slot was
 * made).  A flexible slot gets one when it becomes active on a CPU, if one
 * of the counters that can count it is free there: then it runs as if
 * nothing else existed, and costs nothing more.  When none is free it
 * waits, and the CPU has turns to take: every perfmon.mux_ms (the clock
 * tick calls perfmon_sched_rotate), and whenever a thread with slots
 * waiting is switched in, the flexible slots holding counters give them
 * up and all are placed again, in effect (a turn moves only what
 * changes), those that so far ran the smallest share
 * of their enabled time first (perfmon_turn_share: the loaded thread's
 * share for its slots, which follows it across switches and migrations,
 * the CPU's for the others).  So N slots over K counters each run about
 * K/N of the time, however often their thread moves.  Every slot's times
 * say what it got: enabled while active, running while it held a counter
 * (perfmon_cpu.c).
 *
 * A group's slots active on a CPU (a unit) are placed all together or not
 * at all, and leave together; a unit's share is its smallest slot's.  Each
 * member takes a free counter it can use, a preferred one first (a fixed
 * counter); a unit that does not fit is passed over for the next.
 *
 * Everything here runs on the CPU it is about, in a perfmon section
 * (perfmon_cpu_enter: interrupts disabled, the busy flag set against the
 * overflow NMI), with the section's TSC time now.  perfmon_mux_cpus is the
 * only state other CPUs read: the tick hook's one test.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/clock.h"
#include "kern/cmdline.h"
#include "kern/error.h"
#include "kern/log.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_control.h"
#include "kern/perfmon/perfmon_counters.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/perfmon/perfmon_sched.h"
#include "kern/perfmon/perfmon_turn.h"
#include "kern/xcall.h"

/* The longest multiplexing interval perfmon.mux_ms takes. */
#define PERFMON_MUX_MS_MAX          1000

uint64_t perfmon_mux_cpus;

#ifdef TALLY_HOST_TEST
/*
 * Every turn places everything again (perfmon_sched_replace), as turns did
 * before they moved only what changes: the host test's reference.
 */
bool perfmon_sched_full_turns;

/* The turns perfmon_sched_turn_simple() took, for the host tests. */
unsigned int perfmon_sched_nr_simple_turns;
#endif

/* Clock ticks between two rotations (perfmon.mux_ms), set at boot. */
static unsigned int perfmon_mux_ticks;

static struct perfmon_cpu_dev *
perfmon_sched_dev(struct perfmon_cpu *cpu, unsigned int slot)
{
    return &cpu->devs[slot / PERFMON_DEV_MAX_PMCS];
}

/* Tell the tick whether cpu has slots waiting (inline: every turn does). */
static inline __attribute__((always_inline)) void
perfmon_sched_set_mux(unsigned int cpu_index, bool waiting)
{
    uint64_t bit = 1ULL << cpu_index;

    if (waiting && !(READ_ONCE(perfmon_mux_cpus) & bit)) {
        __atomic_fetch_or(&perfmon_mux_cpus, bit, __ATOMIC_RELAXED);
    } else if (!waiting && (READ_ONCE(perfmon_mux_cpus) & bit)) {
        __atomic_fetch_and(&perfmon_mux_cpus, ~bit, __ATOMIC_RELAXED);
    }
}

/* Whether any device of cpu has slots waiting; says so to the tick. */
static void
perfmon_sched_update_mux(struct perfmon_cpu *cpu, unsigned int cpu_index)
{
    bool waiting = false;

    for (unsigned int d = 0; d < PERFMON_MAX_DEVS; d++) {
        waiting |= (cpu->devs[d].waiting != 0);
    }

    perfmon_sched_set_mux(cpu_index, waiting);
}

/* The active slots of slot's group on this CPU (slot alone: no group). */
static uint64_t
perfmon_sched_unit(const struct perfmon_cpu *cpu, unsigned int slot)
{
    uint64_t group = perfmon_pmcs[slot].group, slots, unit = 0;

    if (group == 0) {
        return perfmon_slot_bit(slot);
    }

    slots = cpu->active_mask & perfmon_dev_slots(perfmon_slot_dev(slot));

    while (slots != 0) {
        unsigned int s = (unsigned int)__builtin_ctzll(slots);

        slots &= slots - 1;

        if (perfmon_pmcs[s].group == group) {
            unit |= perfmon_slot_bit(s);
        }
    }

    return unit;
}

/*
 * A free counter for a flexible slot on this CPU: one it can count on,
 * neither reserved nor used here (nor taken, the other members of a
 * unit being placed), a preferred one first.  64: none.
 */
static unsigned int
perfmon_sched_pick(const struct perfmon_cpu_dev *cdev, unsigned int dev_index,
                   unsigned int slot, uint64_t taken)
{
    const struct perfmon_pmc *pmc = &perfmon_pmcs[slot];
    uint64_t free = pmc->counters & ~READ_ONCE(perfmon_dev_reserved[dev_index])
                    & ~cdev->hw_used & ~taken;

    if (free == 0) {
        return 64;
    }

    if (free & pmc->prefer) {
        free &= pmc->prefer;
    }

    return (unsigned int)__builtin_ctzll(free);
}

/*
 * Give every slot of unit (flexible, not running here) a counter, or none
 * of them: true when the unit runs.
 */
static bool
perfmon_sched_place(struct perfmon_cpu *cpu, uint64_t unit, uint64_t now)
{
    unsigned int first = (unsigned int)__builtin_ctzll(unit);
    unsigned int d = first / PERFMON_DEV_MAX_PMCS;
    struct perfmon_cpu_dev *cdev = &cpu->devs[d];
    uint64_t masks[PERFMON_DEV_MAX_PMCS], prefer[PERFMON_DEV_MAX_PMCS];
    unsigned int hw_ids[PERFMON_DEV_MAX_PMCS];
    uint64_t slots = unit;
    unsigned int n = 0;

    /* One slot, the common case (every context switch): no bookkeeping. */
    if ((unit & (unit - 1)) == 0) {
        unsigned int hw_id = perfmon_sched_pick(cdev, d, first, 0);

        if (hw_id >= 64) {
            return false;
        }

        perfmon_cpu_pmc_start(cpu, first, hw_id, now);
        cdev->hw_used |= 1ULL << hw_id;
        cdev->waiting &= ~unit;
        return true;
    }

    /*
     * Several slots: a matching of slots to free counters, so that a
     * member that can use few counters is not crowded out by one that
     * could have used others.
     */
    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);
        const struct perfmon_pmc *pmc = &perfmon_pmcs[slot];

        slots &= slots - 1;
        masks[n] = pmc->counters & ~READ_ONCE(perfmon_dev_reserved[d])
                   & ~cdev->hw_used;
        prefer[n++] = pmc->prefer;
    }

    if (!perfmon_counters_assign(masks, prefer, n, hw_ids)) {
        return false;
    }

    n = 0;

    for (slots = unit; slots != 0; slots &= slots - 1) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        perfmon_cpu_pmc_start(cpu, slot, hw_ids[n], now);
        cdev->hw_used |= 1ULL << hw_ids[n];
        n++;
    }

    cdev->waiting &= ~unit;
    return true;
}

/*
 * Take their counters from the slots of unit that run here; folded: their
 * counts were just taken at now (a slot's last user leaving).
 */
static void
perfmon_sched_remove(struct perfmon_cpu *cpu, uint64_t unit, uint64_t now,
                     bool folded)
{
    unit &= cpu->sched_mask;

    while (unit != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(unit);

        unit &= unit - 1;
        perfmon_sched_dev(cpu, slot)->hw_used
            &= ~(1ULL << cpu->pmcs[slot].hw_id);
        perfmon_cpu_pmc_stop(cpu, slot, now, folded);
    }
}


/*
 * Place the waiting units of device d that fit, those that ran the
 * smallest share of their time first (ties: the lowest slot); those that
 * do not fit keep waiting.
 */
static void
perfmon_sched_fill(struct perfmon_cpu *cpu, unsigned int d, uint64_t now)
{
    struct perfmon_cpu_dev *cdev = &cpu->devs[d];
    struct perfmon_turn_share shares[PERFMON_DEV_MAX_PMCS];
    unsigned int base = d * PERFMON_DEV_MAX_PMCS;
    uint64_t left = cdev->waiting;

    /* Each share once: placing a unit changes no other's. */
    for (uint64_t slots = left; slots != 0; slots &= slots - 1) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        perfmon_turn_share(cpu, slot, now, &shares[slot - base]);
    }

    while (left != 0) {
        unsigned int best = (unsigned int)__builtin_ctzll(left);
        uint64_t unit;

        for (uint64_t slots = left & (left - 1); slots != 0;
             slots &= slots - 1) {
            unsigned int slot = (unsigned int)__builtin_ctzll(slots);

            if (perfmon_turn_share_below(&shares[slot - base],
                                         &shares[best - base])) {
                best = slot;
            }
        }

        unit = perfmon_sched_unit(cpu, best);
        left &= ~unit;
        perfmon_sched_place(cpu, unit, now);
    }
}

/*
 * Everything on device d takes turns again, all at once: the flexible
 * slots holding counters give them up, then all are placed by share.
 */
static void
perfmon_sched_replace(struct perfmon_cpu *cpu, unsigned int d, uint64_t now,
                      uint64_t flexible)
{
    struct perfmon_cpu_dev *cdev = &cpu->devs[d];

    perfmon_sched_remove(cpu, flexible, now, false);
    cdev->waiting |= flexible;
    perfmon_sched_fill(cpu, d, now);
}


/*
 * Whether slot in (its bit ibit, its fixed part gpmc), arriving in a
 * turn, may take over in place the counter slot out (its bit obit, its
 * record from), leaving, holds, as placing it would: neither samples (a
 * sampling slot's progress is read from its counter at its stop, and its
 * counter armed at start), the device can transfer, and in may take the
 * counter (perfmon_sched_may_take).  Not perfmon_pass_slots, the
 * switch's: a turn of single slots passes a group of one as well.
 */
static inline __attribute__((always_inline)) bool
perfmon_sched_turn_may_pass(const struct perfmon_cpu *cpu, unsigned int d,
                            const struct perfmon_cpu_pmc *from,
                            const struct perfmon_pmc *gpmc, uint64_t both)
{
    return !(both & READ_ONCE(perfmon_sampling_slots))
           && from->dev->ops->transfer != NULL
           && perfmon_sched_may_take(cpu, d, gpmc, from->hw_id);
}

/*
 * The moves of a turn of single slots: flexible, those that held
 * counters; chosen, those that run after it.  A slot leaving passes its
 * counter on to one arriving in place when it may: the device's transfer
 * returns the count at the hand-over, which ends the leaving slot's count
 * (perfmon_cpu_pmc_transfer), so none of its events count for the one
 * arriving; both are clocked at now, running until then and from then
 * on.  That is one device call for a stop, a fold and a start.  The
 * others stop, and the arrivals left take the counters freed.
 */
static void
perfmon_sched_move_simple(struct perfmon_cpu *cpu, unsigned int d,
                          uint64_t now, uint64_t flexible, uint64_t chosen)
{
    struct perfmon_cpu_dev *cdev = &cpu->devs[d];
    uint64_t leaving = flexible & ~chosen, arriving = chosen & ~flexible;

    while (leaving != 0 && arriving != 0) {
        uint64_t out = cpu_ctz64(leaving), in = cpu_ctz64(arriving);
        uint64_t obit = leaving & -leaving, ibit = arriving & -arriving;
        struct perfmon_cpu_pmc *from = perfmon_cpu_pmc_of(cpu, out);
        struct perfmon_cpu_pmc *to = perfmon_cpu_pmc_of(cpu, in);
        const struct perfmon_pmc *gpmc = &perfmon_pmcs[in];

        if (!perfmon_sched_turn_may_pass(cpu, d, from, gpmc, obit | ibit)) {
            break;
        }

        /*
         * Both active: out ran until now, in waited.  Their turn_running
         * as perfmon_cpu_pmc_turn_sync would set them after the transfer.
         */
        perfmon_cpu_pmc_clock_active(from, now, true);
        perfmon_cpu_pmc_clock_active(to, now, false);
        cpu->turn_running[out] += now;
        cpu->turn_running[in] -= now;
        cpu = perfmon_cpu_pmc_transfer(cpu, cdev, from, obit, to,
                                       (unsigned int)in, ibit);
        perfmon_cpu_td_pmc_run(cpu, (unsigned int)out, now, false);
        perfmon_cpu_td_pmc_run(cpu, (unsigned int)in, now, true);
        cdev = &cpu->devs[d];
        cdev->waiting ^= obit | ibit;
        leaving ^= obit;
        arriving ^= ibit;
    }

    if (leaving != 0) {
        perfmon_sched_remove(cpu, leaving, now, false);
        cdev->waiting |= leaving;
    }

    for (; arriving != 0; arriving &= arriving - 1) {
        uint64_t bit = arriving & -arriving;

        /* A stayer on a counter reserved since: everything again. */
        if (!perfmon_sched_place(cpu, bit, now)) {
            perfmon_sched_replace(cpu, d, now, cpu->sched_mask & chosen);
            return;
        }
    }
}

/*
 * Bring the bits of device d in cpu->grouped up to date (they are set
 * when a group's second slot becomes active here, and only cleared here):
 * the groups with two slots or more still active.  True when none is.
 */
static bool
perfmon_sched_regroup(struct perfmon_cpu *cpu, unsigned int d)
{
    uint64_t dev_slots = PERFMON_DEV_SLOT_MASK << (d * PERFMON_DEV_MAX_PMCS);
    uint64_t slots = cpu->grouped & cpu->active_mask & dev_slots;
    uint64_t grouped = 0;

    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);
        uint64_t unit = perfmon_sched_unit(cpu, slot);

        grouped |= (unit & (unit - 1)) ? unit : 0;
        slots &= ~unit;
    }

    cpu->grouped = (cpu->grouped & ~dev_slots) | grouped;
    return grouped == 0;
}

/*
 * A turn on device d (slots waiting) when its active flexible slots are
 * single slots (no two of a group: cpu->grouped) that all count on the
 * same counters, as events of one kind do.  Then no order is needed: the
 * full placement gives each, the smallest share first, one of those
 * counters while any is left that no pinned slot holds, so it runs all
 * but the ones with the largest shares (ties: the highest slot goes
 * first), found in one pass each, the first in the pass that checks the
 * slots.  Then perfmon_sched_move_simple().  False, with nothing done,
 * when the slots are not such.
 */
static inline bool
perfmon_sched_turn_simple(struct perfmon_cpu *cpu, unsigned int d,
                          uint64_t now)
{
    struct perfmon_cpu_dev *cdev = &cpu->devs[d];
    const struct perfmon_td *td = cpu->td;
    uint64_t loaded = (td != NULL) ? td->loaded_mask : 0;
    uint64_t sched = cpu->sched_mask, chosen, fit, slots;
    uint64_t counters = cpu->turn_counters[__builtin_ctzll(cdev->waiting)];
    struct perfmon_turn_share max = PERFMON_TURN_SHARE_NONE;
    uint64_t flexible = cpu->active_mask & (PERFMON_DEV_SLOT_MASK
                                            << (d * PERFMON_DEV_MAX_PMCS));
    unsigned int last = 0;
    bool simple;
    int out;

#ifdef TALLY_HOST_TEST
    if (perfmon_sched_full_turns) {
        return false;
    }
#endif

    if (unlikely(cpu->grouped & flexible)
        && !perfmon_sched_regroup(cpu, d)) {
        return false;
    }

    fit = counters & ~READ_ONCE(perfmon_dev_reserved[d]);
    loaded &= flexible;

    /* Slots of the thread, or one of no enabled time: the general pass. */
    simple = likely(loaded == 0 && cpu->turn_zero_at != now)
             ? perfmon_turn_scan_cpu(cpu, flexible, now, counters,
                                     &flexible, &fit, &max, &last)
             : perfmon_turn_scan_simple(cpu, td, loaded, flexible, now,
                                        counters, &flexible, &fit, &max,
                                        &last);

    if (!simple) {
        return false;
    }

    /* out: how many do not fit; last, the largest share, goes first. */
    /* Most turns are like the last: the same slots on the same counters. */
    if (unlikely(flexible != cdev->turn_memo_slots
                 || fit != cdev->turn_memo_fit)) {
        cdev->turn_memo_slots = flexible;
        cdev->turn_memo_fit = fit;
        cdev->turn_memo_over = perfmon_turn_nr_over(flexible, fit);
    }

    out = cdev->turn_memo_over;

    for (chosen = flexible; out > 0; out--) {
        chosen &= ~perfmon_slot_bit(last);
        max = (struct perfmon_turn_share)PERFMON_TURN_SHARE_NONE;

        for (slots = (out > 1) ? chosen : 0; slots != 0; slots &= slots - 1) {
            perfmon_turn_largest_of(cpu, td, loaded, sched,
                                    (unsigned int)__builtin_ctzll(slots),
                                    now, &max, &last);
        }
    }

#ifdef TALLY_HOST_TEST
    perfmon_sched_nr_simple_turns++;
#endif

    perfmon_sched_move_simple(cpu, d, now, flexible & sched, chosen);
    return true;
}

/*
 * A turn on device d that perfmon_sched_turn_simple() could not take.
 * First the units a full placement by share would run
 * (perfmon_sched_replace: the flexible units running here and those
 * waiting, the smallest share first, each where it fits), computed on a
 * copy of the counters in use; then only what changes moves: the units
 * leaving stop, those arriving start on the counters freed, those
 * staying keep theirs, counting on.  Should an arrival not fit where the
 * stayers left room (counters cut up among groups), the turn places
 * everything again.
 */
static void __attribute__((noinline))
perfmon_sched_rebalance(struct perfmon_cpu *cpu, unsigned int d,
                        uint64_t now)
{
    struct perfmon_cpu_dev *cdev = &cpu->devs[d];
    uint64_t dev_slots = PERFMON_DEV_SLOT_MASK << (d * PERFMON_DEV_MAX_PMCS);
    uint64_t running = cpu->sched_mask & dev_slots, flexible = 0;
    uint64_t order[PERFMON_DEV_MAX_PMCS], chosen, used, arriving;
    unsigned int nr_order;

    used = cdev->hw_used;

    for (; running != 0; running &= running - 1) {
        unsigned int slot = (unsigned int)__builtin_ctzll(running);

        if (!perfmon_pmcs[slot].pinned) {
            flexible |= perfmon_slot_bit(slot);
            used &= ~(1ULL << cpu->pmcs[slot].hw_id);
        }
    }

#ifdef TALLY_HOST_TEST
    if (perfmon_sched_full_turns) {
        perfmon_sched_replace(cpu, d, now, flexible);
        return;
    }
#endif

    nr_order = perfmon_turn_select(cpu, d, now, flexible, used, order,
                                   &chosen);

    /* Those leaving give their counters up; those arriving take them. */
    perfmon_sched_remove(cpu, flexible & ~chosen, now, false);
    cdev->waiting |= flexible & ~chosen;
    arriving = chosen & ~flexible;

    for (unsigned int i = 0; i < nr_order && arriving != 0; i++) {
        if (!(order[i] & arriving)) {
            continue;
        }

        arriving &= ~order[i];

        if (!perfmon_sched_place(cpu, order[i], now)) {
            perfmon_sched_replace(cpu, d, now, cpu->sched_mask & chosen);
            return;
        }
    }
}

/*
 * A pinned slot became active: it takes its own counter, and every other
 * its alloc took (a pair's odd one), from the flexible slots holding them,
 * if any (placed there before the pinned event reserved them; flexible
 * slots never pick a reserved counter after).  Those units take free
 * counters if there are any, or wait for their turn.  Out of line: pinned
 * events are rare, and inlined this would cost every flexible slot's
 * switch-in registers to save.
 */
static void __attribute__((noinline))
perfmon_sched_in_pinned(struct perfmon_cpu *cpu, unsigned int slot,
                        uint64_t now)
{
    struct perfmon_cpu_dev *cdev = perfmon_sched_dev(cpu, slot);
    unsigned int hw_id = perfmon_pmcs[slot].hw_id;
    uint64_t taken = perfmon_pmcs[slot].taken;
    uint64_t users;

    if (cdev->hw_used & taken) {
        users = cpu->sched_mask & perfmon_dev_slots(perfmon_slot_dev(slot));

        while (users != 0) {
            unsigned int s = (unsigned int)__builtin_ctzll(users);

            users &= users - 1;

            if (taken & (1ULL << cpu->pmcs[s].hw_id)) {
                uint64_t unit = perfmon_sched_unit(cpu, s);

                assert(!perfmon_pmcs[s].pinned);
                perfmon_sched_remove(cpu, unit, now, false);
                cdev->waiting |= unit;
                users &= ~unit;
            }
        }
    }

    assert(!(cdev->hw_used & taken));
    perfmon_cpu_pmc_start(cpu, slot, hw_id, now);
    cdev->hw_used |= 1ULL << hw_id;

    /* The unit moved off may run on another counter at once. */
    if (cdev->waiting != 0) {
        perfmon_sched_fill(cpu, slot / PERFMON_DEV_MAX_PMCS, now);
    }
}

static void
perfmon_sched_in(struct perfmon_cpu *cpu, unsigned int slot, uint64_t now)
{
    struct perfmon_cpu_dev *cdev = perfmon_sched_dev(cpu, slot);
    uint64_t unit, bit = perfmon_slot_bit(slot);
    bool waited = (cdev->waiting != 0);

    assert(cpu->active_mask & bit);
    assert(!(cpu->sched_mask & bit));

    if (perfmon_pmcs[slot].pinned) {
        perfmon_sched_in_pinned(cpu, slot, now);
    } else if (perfmon_pmcs[slot].group == 0) {
        /* Alone: a free counter, or it waits. */
        if (!perfmon_sched_place(cpu, bit, now)) {
            cdev->waiting |= bit;
        }
    } else {
        /* Its group runs: it joins, or the group waits with it. */
        unit = perfmon_sched_unit(cpu, slot);

        if (unit & (unit - 1)) {
            cpu->grouped |= unit;
        }

        if (unit & cpu->sched_mask) {
            if (!perfmon_sched_place(cpu, bit, now)) {
                perfmon_sched_remove(cpu, unit, now, false);
                cdev->waiting |= unit;
            }
        } else if (!(unit & cdev->waiting & ~bit)) {
            if (!perfmon_sched_place(cpu, bit, now)) {
                cdev->waiting |= bit;
            }
        } else {
            cdev->waiting |= bit;
        }
    }

    /* The tick's bit only changes when waiting starts or ends. */
    if (waited != (cdev->waiting != 0)) {
        perfmon_sched_update_mux(cpu, cpu_id());
    }
}

static void
perfmon_sched_out(struct perfmon_cpu *cpu, unsigned int slot, uint64_t now)
{
    struct perfmon_cpu_dev *cdev = perfmon_sched_dev(cpu, slot);
    uint64_t bit = perfmon_slot_bit(slot);
    bool waited = (cdev->waiting != 0);

    assert(!(cpu->active_mask & bit));
    cdev->waiting &= ~bit;

    /* Its last user took its counts at now: no fold again. */
    if (cpu->sched_mask & bit) {
        perfmon_sched_remove(cpu, bit, now, true);
    }

    /* A counter came free: those waiting may have it. */
    if (cdev->waiting != 0) {
        perfmon_sched_fill(cpu, slot / PERFMON_DEV_MAX_PMCS, now);
    }

    if (waited != (cdev->waiting != 0)) {
        perfmon_sched_update_mux(cpu, cpu_id());
    }
}

void
perfmon_sched_rotate(struct perfmon_cpu *cpu, uint64_t now)
{
    unsigned int nr = perfmon_nr_devs_load();
    uint64_t waiting = 0;

    /*
     * Most devices have nothing waiting: they cost a test each (and one
     * not registered has nothing).
     */
    for (unsigned int d = 0; d < nr; d++) {
        if (likely(cpu->devs[d].waiting == 0)) {
            continue;
        }

        if (!perfmon_sched_turn_simple(cpu, d, now)) {
            perfmon_sched_rebalance(cpu, d, now);
        }

        perfmon_syscnt_inc_local(&cpu->nr_rotations);
        waiting |= cpu->devs[d].waiting;
    }

    cpu->mux_ticks = 0;
    perfmon_sched_set_mux(cpu_id(), waiting != 0);
}

void
perfmon_tick_slow(void)
{
    struct perfmon_cpu *cpu = perfmon_cpu_get(cpu_id());

    assert(!cpu_intr_enabled());

    if (++cpu->mux_ticks < perfmon_mux_ticks) {
        return;
    }

    cpu = perfmon_cpu_enter();
    perfmon_sched_rotate(cpu, cpu->now);
    perfmon_cpu_leave(cpu);
}

void
perfmon_rotate_local(void)
{
    unsigned long flags = cpu_intr_save();
    struct perfmon_cpu *cpu = perfmon_cpu_enter();

    perfmon_sched_rotate(cpu, cpu->now);
    perfmon_cpu_leave(cpu);
    cpu_intr_restore(flags);
}

unsigned int
perfmon_rotate_local_moved(void)
{
    unsigned long flags = cpu_intr_save();
    struct perfmon_cpu *cpu = perfmon_cpu_enter();
    unsigned int hw_ids[PERFMON_MAX_PMCS], moved;
    uint64_t before = cpu->sched_mask, changed, kept;

    for (unsigned int i = 0; i < PERFMON_MAX_PMCS; i++) {
        hw_ids[i] = cpu->pmcs[i].hw_id;
    }

    perfmon_sched_rotate(cpu, cpu->now);
    changed = before ^ cpu->sched_mask;
    kept = before & cpu->sched_mask;
    moved = 0;

    /* No popcount: the kernel is built for any x86-64, without libgcc. */
    for (; changed != 0; changed &= changed - 1) {
        moved++;
    }

    while (kept != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(kept);

        kept &= kept - 1;
        moved += cpu->pmcs[slot].hw_id != hw_ids[slot];
    }

    perfmon_cpu_leave(cpu);
    cpu_intr_restore(flags);
    return moved;
}

/* ---- users of a slot ------------------------------------------------------- */

/* Slot's first user here: it becomes active, its times counted from now. */
static void
perfmon_sched_activate(struct perfmon_cpu *cpu, unsigned int slot,
                       const struct perfmon_td_pmc *saved, uint64_t now)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];

    assert(perfmon_pmcs[slot].nr_refs != 0);
    pmc->nr_refs = 1;
    pmc->stamp = now;
    pmc->enabled = 0;
    pmc->running = 0;
    perfmon_cpu_pmc_turn_sync(cpu, slot);
    cpu->turn_zero_at = now;

    if (perfmon_pmcs[slot].sampling != NULL) {
        perfmon_cpu_pmc_sample_init(cpu, slot, saved);
    }

    WRITE_ONCE(cpu->active_mask, cpu->active_mask | perfmon_slot_bit(slot));
}

/*
 * One more user of slot on this CPU; saved: the thread's sampling
 * progress, when a thread loads a sampling slot.  The first makes it
 * active here, and the scheduler gives it a counter if it can.  Returns
 * the slot's value here, folded: as it is after an activation.
 */
uint64_t
perfmon_sched_ref_value(struct perfmon_cpu *cpu, unsigned int slot,
                        const struct perfmon_td_pmc *saved, uint64_t now)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];

    if (pmc->nr_refs != 0) {
        pmc->nr_refs++;
        return perfmon_cpu_pmc_value(cpu, slot);
    }

    perfmon_sched_activate(cpu, slot, saved, now);
    perfmon_sched_in(cpu, slot, now);
    return pmc->value;
}

/* The same, for a CPU event: the slot's counts here at now. */
void
perfmon_sched_ref_counts(struct perfmon_cpu *cpu, unsigned int slot,
                         const struct perfmon_td_pmc *saved, uint64_t now,
                         struct perfmon_counts *counts)
{
    const struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];

    counts->value = perfmon_sched_ref_value(cpu, slot, saved, now);
    perfmon_cpu_pmc_clock(cpu, slot, now);
    counts->enabled = pmc->enabled;
    counts->running = pmc->running;
}

/*
 * Drop a user of slot on this CPU; the caller folded its value at now.
 * The last one gives its counter back, to a slot waiting for one (its
 * times end unclocked: nothing reads them after it).
 */
void
perfmon_sched_unref(struct perfmon_cpu *cpu, unsigned int slot,
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

/*
 * Slot out's last user here leaves (folded by the hand-over) while one of
 * the slots of candidates (active nowhere here) gets its first: when out
 * may pass its counter (perfmon_sched_may_pass), the first candidate of
 * perfmon_pass_slots on its device that may take the counter gets it in
 * place, with nothing stopped or started.  Returns that slot, or
 * PERFMON_MAX_PMCS when the caller must unref out and ref the candidates
 * itself.
 */
unsigned int
perfmon_sched_transfer(struct perfmon_cpu *cpu, unsigned int out,
                       uint64_t candidates, uint64_t now)
{
    struct perfmon_cpu_pmc *from = &cpu->pmcs[out];
    unsigned int d = out / PERFMON_DEV_MAX_PMCS;
    struct perfmon_cpu_dev *cdev = &cpu->devs[d];
    uint64_t pass = READ_ONCE(perfmon_pass_slots);
    uint64_t obit = perfmon_slot_bit(out);

    if (!perfmon_sched_may_pass(cpu, cdev, from, obit, pass)) {
        return PERFMON_MAX_PMCS;
    }

    candidates &= pass & ~cpu->active_mask
                  & (PERFMON_DEV_SLOT_MASK << (d * PERFMON_DEV_MAX_PMCS));

    for (; candidates != 0; candidates &= candidates - 1) {
        unsigned int in = (unsigned int)__builtin_ctzll(candidates);
        const struct perfmon_pmc *gpmc = &perfmon_pmcs[in];

        if (perfmon_sched_may_take(cpu, d, gpmc, from->hw_id)) {
            perfmon_sched_pass(cpu, cdev, from, obit, &cpu->pmcs[in], in,
                               perfmon_slot_bit(in), now);
            return in;
        }
    }

    return PERFMON_MAX_PMCS;
}

/* ---- reserving a counter ---------------------------------------------------- */

/* Move the flexible slots of dev off the counters reserved since placed. */
static void
perfmon_sched_evict_xcall(void *arg)
{
    const struct perfmon_dev *dev = arg;
    struct perfmon_cpu *cpu = perfmon_cpu_enter();
    struct perfmon_cpu_dev *cdev = &cpu->devs[dev->index];
    uint64_t reserved = READ_ONCE(perfmon_dev_reserved[dev->index]);
    uint64_t slots = cpu->sched_mask & perfmon_dev_slots(dev);

    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        slots &= slots - 1;

        if (!perfmon_pmcs[slot].pinned
            && (reserved & (1ULL << cpu->pmcs[slot].hw_id))) {
            uint64_t unit = perfmon_sched_unit(cpu, slot);

            perfmon_sched_remove(cpu, unit, cpu->now, false);
            cdev->waiting |= unit;
            slots &= ~unit;
        }
    }

    if (cdev->waiting != 0) {
        perfmon_sched_fill(cpu, dev->index, cpu->now);
    }

    perfmon_sched_update_mux(cpu, cpu_id());
    perfmon_cpu_leave(cpu);
}

void
perfmon_sched_evict_all(struct perfmon_dev *dev)
{
    unsigned int nr = cpu_count();
    uint64_t all = (nr >= 64) ? UINT64_MAX : (1ULL << nr) - 1;
    int error;

    perfmon_assert_thread_context();
    error = xcall_call_many(perfmon_sched_evict_xcall, dev, all);
    assert(error == 0);
}

/* ---- setup -------------------------------------------------------------------- */

void
perfmon_sched_setup(void)
{
    uint64_t ms;
    int error = cmdline_get_u64("perfmon.mux_ms", &ms);

    if (error != 0 || ms < 1 || ms > PERFMON_MUX_MS_MAX) {
        if (error != -ENOENT) {
            log_warning("perfmon: perfmon.mux_ms must be 1..%u, using %u",
                        PERFMON_MUX_MS_MAX, PERFMON_MUX_MS_DEFAULT);
        }

        ms = PERFMON_MUX_MS_DEFAULT;
    }

    perfmon_mux_ticks = MAX((unsigned int)clock_ticks_from_ms(ms), 1U);
}

#ifdef TALLY_HOST_TEST
void
perfmon_sched_reset(void)
{
    perfmon_mux_cpus = 0;
    perfmon_sched_full_turns = false;
    perfmon_sched_nr_simple_turns = 0;
}
#endif
