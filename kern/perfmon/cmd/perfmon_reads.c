/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The values of groups' reads, counted from their base: see
 * kern/perfmon/cmd/perfmon_reads.h.
 */

#include <stdint.h>

#include "kern/assert.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_reads.h"

uint64_t
perfmon_reads_value(struct perfmon_reads *reads,
                    const struct perfmon_sample *sample, unsigned int i,
                    uint32_t event)
{
    uint64_t bit = 1ULL << sample->cpu;

    assert(sample->cpu < CPU_MAX && event < PERFMON_READS_MAX_EVENTS);

    if (!(reads->seen[event] & bit)) {
        reads->seen[event] |= bit;
        reads->base[event][sample->cpu] = sample->reads[i]
                                          - ((i == 0) ? sample->period : 0);
    }

    return sample->reads[i] - reads->base[event][sample->cpu];
}
