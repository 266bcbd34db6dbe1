/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Private interface of kern/perfmon/perfmon_counters.c.
 *
 * perfmon_counters_assign: a counter for each of n slots, slot i taking
 *   one of masks[i] (those of prefer[i] first), each its own, into
 *   hw_ids[] (may be NULL); false when there is no such assignment.
 *   Pure; any context (NMI included: no lock, no allocation).
 * perfmon_counters_fit (kern/perfmon.h) is the same question without
 * preferences or answer.
 */

#ifndef KERN_PERFMON_COUNTERS_H
#define KERN_PERFMON_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>

bool perfmon_counters_assign(const uint64_t *masks, const uint64_t *prefer,
                             unsigned int n, unsigned int *hw_ids);

#endif /* KERN_PERFMON_COUNTERS_H */
