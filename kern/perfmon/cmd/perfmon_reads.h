/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The values the samples of a group's leader read (PERFMON_SF_READ, perf's
 * leader sampling), as `perfmon report`, `script` and the stream to perf
 * give them out.  Pure: the caller's state only.
 */

#ifndef KERN_PERFMON_READS_H
#define KERN_PERFMON_READS_H

#include <stdint.h>

#include "kern/param.h"
#include "kern/perfmon.h"

/* Most events whose values are kept (the events of one recording). */
#define PERFMON_READS_MAX_EVENTS        8

/*
 * The values a group's samples read, as the recording saw them.  A value
 * is a counter's on one CPU, which may have counted before the recording
 * (a counter slot keeps its value from one user to the next), so each
 * event's values on each CPU count from a base: at its first sample there,
 * the leader's value less the sample's period (what the leader counted to
 * it), a member's value (what it counted before is not known: nothing).
 * last keeps the values given out, for differences.  Zeroed at first.
 */
struct perfmon_reads {
    uint64_t base[PERFMON_READS_MAX_EVENTS][CPU_MAX];
    uint64_t last[PERFMON_READS_MAX_EVENTS][CPU_MAX];
    uint64_t seen[PERFMON_READS_MAX_EVENTS];          /* by CPU, a bit */
};

/*
 * Read i (0: the leader's own) of a sample on cpu, of event, as a value
 * counted from its base (set here at the event's first read on cpu).
 * cpu below CPU_MAX, event below PERFMON_READS_MAX_EVENTS.
 */
uint64_t perfmon_reads_value(struct perfmon_reads *reads,
                             const struct perfmon_sample *sample,
                             unsigned int i, uint32_t event);

#endif /* KERN_PERFMON_READS_H */
