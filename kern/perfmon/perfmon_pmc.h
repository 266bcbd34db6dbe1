/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The global counter allocator (perfmon_pmc.c), private to the core, for
 * the files above it (see perfmon_i.h for the order).
 *
 * perfmon_event_get_pmc: find or allocate the counter slot of an event
 *   being attached (event->thread or event->cpu set) and add the event to
 *   its users; 0 or the errors of perfmon_event_attach().  Thread context.
 * perfmon_event_put_pmc: the reverse, at detach.
 * perfmon_pmc_setup: the part of perfmon_setup for this file.
 */

#ifndef KERN_PERFMON_PMC_H
#define KERN_PERFMON_PMC_H

#include "kern/perfmon.h"

int perfmon_event_get_pmc(struct perfmon_event *event);
void perfmon_event_put_pmc(struct perfmon_event *event);
void perfmon_pmc_setup(void);

#ifdef TALLY_HOST_TEST
void perfmon_pmc_reset(void);
#endif

#endif /* KERN_PERFMON_PMC_H */
