/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon selftest --accuracy` (kern/perfmon/cmd/perfmon_accuracy.c):
 * how far to trust a count, measured against the step PMU's exact count
 * of the same code in the same run (drivers/pmu/step.h; boot with
 * perfmon.step=on).  Three measurements, each a table (or -x / -j lines),
 * their arithmetic in kern/perfmon/cmd/perfmon_accuracy_calc.h:
 *
 *   1. multiplexing error, on any machine: more events than counters take
 *      turns on the step PMU and on the software PMU while workloads run
 *      (spin, branchy, yield, memwalk); each event's estimate, count x
 *      enabled / running, against the count of a pinned event beside it;
 *   2. the hardware instructions event's over-count of a region, with and
 *      without interrupts arriving in it;
 *   3. the hardware instructions event's skid: where its samples land in
 *      a loop of known addresses, against the step PMU's samples, which
 *      land on the Nth instruction exactly.
 * 2 and 3 need a hardware PMU, and say so where there is none.
 *
 * Thread context, one run at a time; the run pins its thread to the CPU
 * it starts on and restores its affinity at the end.
 */

#ifndef KERN_PERFMON_CMD_ACCURACY_H
#define KERN_PERFMON_CMD_ACCURACY_H

#include <stdbool.h>

#include "kern/perfmon/cmd/perfmon_accuracy_calc.h"

/*
 * Run the three measurements, printing through out; stop (may be NULL)
 * is asked between runs whether to give up.  Returns 0, -ENODEV without
 * the step PMU (one line says how to get it), -EINTR when stopped, or
 * another negative errno after a line saying what could not be set up.
 */
int perfmon_accuracy_run(const struct perfmon_accuracy_out *out,
                         bool (*stop)(void));

/*
 * Whether argv (a `perfmon selftest` command line) asks for --accuracy,
 * and that command, with its options -x SEP and -j
 * (perfmon_cmd_main_fn_t, kern/perfmon/cmd/perfmon_cmd.h).
 */
bool perfmon_accuracy_asked(int argc, char **argv);
int perfmon_accuracy_main(int argc, char **argv);

#endif /* KERN_PERFMON_CMD_ACCURACY_H */
