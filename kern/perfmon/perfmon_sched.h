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

#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_cpu.h"

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
void perfmon_sched_evict_all(struct perfmon_dev *dev);
void perfmon_sched_setup(void);

#ifdef TALLY_HOST_TEST
void perfmon_sched_reset(void);
extern bool perfmon_sched_full_turns;
extern unsigned int perfmon_sched_nr_simple_turns;
#endif

#endif /* KERN_PERFMON_SCHED_H */
