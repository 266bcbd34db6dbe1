/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The reference sample writer of the host tests (perfmon_sample_ref.c):
 * perfmon_sample_write() and perfmon_sample_throttled() as they wrote
 * records with byte copies, into ring (set up with perfmon_ring_init(),
 * one producer).
 */

#ifndef TESTS_UNIT_PERFMON_SAMPLE_REF_H
#define TESTS_UNIT_PERFMON_SAMPLE_REF_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/trap.h"
#include "kern/perfmon.h"
#include "kern/perfmon_ring.h"

bool ref_sample_write(struct perfmon_ring *ring,
                      const struct perfmon_sampling *sampling,
                      const struct trap_frame *frame, uint64_t period);
void ref_sample_throttled(struct perfmon_ring *ring,
                          const struct perfmon_sampling *sampling,
                          uint64_t period);

#endif /* TESTS_UNIT_PERFMON_SAMPLE_REF_H */
