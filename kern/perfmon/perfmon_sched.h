/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The scheduler of counters (perfmon_sched.c), private to the core, for
 * the files above it (see perfmon_i.h for the order).
 *
 * In a section on cpu (perfmon_cpu_enter):
 * perfmon_sched_ref_value: one more user of slot on this CPU (saved: the
 *   thread's sampling progress, when a thread loads a sampling slot); the
 *   first makes it active here and gives it a counter if one is free.
 *   Returns the slot's value here at now, folded.
 * perfmon_sched_ref_counts: the same, for a CPU event: counts, the slot's
 *   counts here at now.
 * perfmon_sched_unref: drop a user of slot on this CPU; the caller folded
 *   its value at now.  The last one gives its counter back.
 * perfmon_sched_transfer: slot out's last user leaves as the first of
 *   one of candidates comes: that one may take out's counter in place
 *   (returns it; PERFMON_MAX_PMCS: none did, unref and ref as usual).
 *   Its parts, inline below for the switch of one slot each way:
 *   perfmon_sched_may_pass, perfmon_sched_may_take, perfmon_sched_pass.
 * perfmon_sched_rotate: one turn of the slots waiting for a counter
 *   (every device's).  Also after a thread with slots waiting was loaded.
 *
 * perfmon_sched_evict_all: thread context, after a counter of dev was
 *   reserved: every CPU moves its flexible slots off it.
 * perfmon_sched_setup: the part of perfmon_setup for that file.
 */

#ifndef KERN_PERFMON_SCHED_H
#define KERN_PERFMON_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon/perfmon_i.h"

uint64_t perfmon_sched_ref_value(struct perfmon_cpu *cpu, unsigned int slot,
                                 const struct perfmon_td_pmc *saved,
                                 uint64_t now);
void perfmon_sched_ref_counts(struct perfmon_cpu *cpu, unsigned int slot,
                              const struct perfmon_td_pmc *saved,
                              uint64_t now, struct perfmon_counts *counts);
void perfmon_sched_unref(struct perfmon_cpu *cpu, unsigned int slot,
                         uint64_t now);
unsigned int perfmon_sched_transfer(struct perfmon_cpu *cpu, unsigned int out,
                                    uint64_t candidates, uint64_t now);
void perfmon_sched_rotate(struct perfmon_cpu *cpu, uint64_t now);

/*
 * Whether a slot of perfmon_pass_slots (gpmc, its fixed part) may take
 * over counter hw_id of device d here as placing it would: hw_id counts it, is not reserved,
 * and no preferred counter is free besides (a slot that prefers none, the
 * common case, is not asked).
 */
static inline __attribute__((always_inline)) bool
perfmon_sched_may_take(const struct perfmon_cpu *cpu, unsigned long d,
                       const struct perfmon_pmc *gpmc, unsigned int hw_id)
{
    uint64_t reserved = READ_ONCE(perfmon_dev_reserved[d]);

    if (!(((gpmc->counters & ~reserved) >> hw_id) & 1)) {
        return false;
    }

    return likely(gpmc->prefer == 0) || ((gpmc->prefer >> hw_id) & 1)
           || !(gpmc->prefer & ~reserved & ~cpu->devs[d].hw_used);
}

/*
 * Whether slot out's counter (its record from, its bit obit, its
 * device's state cdev) may pass
 * in place, at its last user's
 * leaving, to another slot of perfmon_pass_slots (counting, alone, on a
 * device that can transfer) getting its first: out is such a slot and
 * runs here with no other user, and no slot of the device waits for a
 * counter (it would have it first).
 */
static inline __attribute__((always_inline)) bool
perfmon_sched_may_pass(const struct perfmon_cpu *cpu,
                       const struct perfmon_cpu_dev *cdev,
                       const struct perfmon_cpu_pmc *from, uint64_t obit,
                       uint64_t pass)
{
    return from->nr_refs == 1 && (pass & cpu->sched_mask & obit)
           && cdev->waiting == 0;
}

/*
 * The pass itself (out's record from, its bit obit, its device's state
 * cdev; in's record to, its bit ibit), at
 * now, once out may pass and in (of perfmon_pass_slots, of out's device,
 * active nowhere here) may take its counter: out's last user leaves
 * (its times end, unclocked, as at perfmon_sched_unref) and in's first
 * comes, its times counted from now (as perfmon_sched_activate, in
 * needing no sampling); the counter passes in place
 * (perfmon_cpu_pmc_transfer, which returns cpu, reloaded).
 */
static inline __attribute__((always_inline)) struct perfmon_cpu *
perfmon_sched_pass(struct perfmon_cpu *cpu, struct perfmon_cpu_dev *cdev,
                   struct perfmon_cpu_pmc *from, uint64_t obit,
                   struct perfmon_cpu_pmc *to, unsigned int in,
                   uint64_t ibit, uint64_t now)
{
    from->nr_refs = 0;
    to->nr_refs = 1;
    to->stamp = now;
    to->enabled = 0;
    to->running = 0;
    /* As perfmon_cpu_pmc_turn_sync once in holds the counter. */
    cpu->turn_enabled[in] = -now;
    cpu->turn_running[in] = -now;
    cpu->turn_zero_at = now;
    WRITE_ONCE(cpu->active_mask, (cpu->active_mask & ~obit) | ibit);
    return perfmon_cpu_pmc_transfer(cpu, cdev, from, obit, to, in, ibit);
}

void perfmon_sched_evict_all(struct perfmon_dev *dev);
void perfmon_sched_setup(void);

#ifdef TALLY_HOST_TEST
void perfmon_sched_reset(void);
extern bool perfmon_sched_full_turns;
extern unsigned int perfmon_sched_nr_simple_turns;
#endif

#endif /* KERN_PERFMON_SCHED_H */
