/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Per-thread counts (perfmon_td.c), private to the core, for the event
 * layer above (see perfmon_i.h for the order).  cpu: the thread's CPU,
 * the caller's, in a section on it, when the thread runs; NULL when it
 * does not (its state then held by thread_call()).
 *
 * perfmon_td_pmc_read: the thread's counts on slot, up to date.
 * perfmon_td_event_enable: one more user of the event's slot in the
 *   thread, loaded at once when it runs; event->start set.
 * perfmon_td_event_disable: the reverse; what the event counted is added
 *   to event->total.
 */

#ifndef KERN_PERFMON_TD_H
#define KERN_PERFMON_TD_H

#include <stdint.h>

#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_cpu.h"

void perfmon_td_pmc_read(struct perfmon_td *td, struct perfmon_cpu *cpu,
                         unsigned int slot, uint64_t now,
                         struct perfmon_counts *counts);
void perfmon_td_event_enable(struct perfmon_td *td, struct perfmon_cpu *cpu,
                             struct perfmon_event *event, uint64_t now);
void perfmon_td_event_disable(struct perfmon_td *td, struct perfmon_cpu *cpu,
                              struct perfmon_event *event, uint64_t now);

#endif /* KERN_PERFMON_TD_H */
