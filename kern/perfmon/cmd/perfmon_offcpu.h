/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Switch records on the command side (kern/perfmon/cmd/perfmon_offcpu.c):
 * a recording's records in time order, the line `perfmon script` prints
 * for a switch, and the off-CPU view of `perfmon report --sort offcpu`:
 * the time each thread spent switched out, by the function it switched
 * out in.  Thread context; one user of a recording at a time.
 */

#ifndef KERN_PERFMON_CMD_PERFMON_OFFCPU_H
#define KERN_PERFMON_CMD_PERFMON_OFFCPU_H

#include <stdbool.h>
#include <stdint.h>

#include "kern/perfmon/cmd/perfmon_capture.h"
#include "kern/perfmon_ring.h"
#include "kern/perfmon_switchrec.h"

/*
 * Call fn for each record of cap in time order, until it returns false:
 * the records of each CPU keep their order (they were written so, in
 * time), and those of different CPUs are merged by time.  A record with
 * no CPU or no time (a thread's name, a loss) comes as soon as its CPU's
 * turn reaches it.  Falls back to the store's order when there is no
 * memory for the merge.
 */
void perfmon_offcpu_foreach_timed(const struct perfmon_capture *cap,
                                  perfmon_capture_fn_t fn, void *arg);

/* The `perfmon script` line of the switch record hdr (perf's form). */
void perfmon_offcpu_script(const struct perfmon_capture *cap,
                           const struct perfmon_rec_hdr *hdr);

/*
 * Off-CPU time: fed the switch records in time order, a span runs from a
 * thread's switch out to its next switch in, on any CPU, and counts for
 * the thread and for the first function of the switch-out's call chain
 * outside the scheduler (kern/thread.c's thread_* functions and the
 * switch records' own); a thread still out at the end, or whose switch
 * in was not recorded, adds nothing.
 */
struct perfmon_offcpu;

/* Returns 0 or -ENOMEM. */
int perfmon_offcpu_create(struct perfmon_offcpu **offcpup);
void perfmon_offcpu_destroy(struct perfmon_offcpu *offcpu);
void perfmon_offcpu_add(struct perfmon_offcpu *offcpu,
                        const struct perfmon_switch *sw);

/* What a view holds: rows (thread, function), their total, and a row. */
struct perfmon_offcpu_row {
    unsigned int tid;
    uint64_t func;                      /* its start, 0: unknown */
    uint64_t ns;                        /* switched out, in total */
    uint64_t nr_spans;
};

unsigned int perfmon_offcpu_nr_rows(const struct perfmon_offcpu *offcpu);
uint64_t perfmon_offcpu_total_ns(const struct perfmon_offcpu *offcpu);

/* The rows, heaviest first, into rows (at most max); returns how many. */
unsigned int perfmon_offcpu_sorted(const struct perfmon_offcpu *offcpu,
                                   struct perfmon_offcpu_row *rows,
                                   unsigned int max);

/*
 * `perfmon report --sort offcpu`: the table of cap's switch records, down
 * to limit_bp hundredths of a percent.  Returns 0, or SHELL_ERR_REPORTED
 * after one line (no switch records, out of memory).
 */
int perfmon_offcpu_report(const struct perfmon_capture *cap,
                          unsigned int limit_bp);

#endif /* KERN_PERFMON_CMD_PERFMON_OFFCPU_H */
