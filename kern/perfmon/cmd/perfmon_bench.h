/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon bench`: microbenchmarks of the perfmon layer next to the raw
 * device operations it wraps, in two views: path length (instructions,
 * counted exactly by the step PMU when the kernel was booted with
 * perfmon.step=on), judged against an instruction budget per row, and TSC
 * cycles, measured side by side in one run so that their ratios mean
 * something on a noisy machine.
 *
 * Rows: 1 raw device read; 2 local reads (CPU event, own thread event);
 * 3 bare xcall round trip and remote reads (CPU event, running thread);
 * 4 context switch ping-pong with no event, with the perfmon hook off,
 * with 1 and 4 events per thread, one event each on different counters,
 * and what each adds per switch, against the raw stop/read/start cost;
 * 5 attach+detach; 6 the software PMU's overflow NMI, the fold of one
 * counter, a sample written and each frame of its call chain; 7 remote
 * read at this boot's CPU count (tools/bench boots with 1, 2, 4 and 8
 * CPUs).  Each row line starts with its row id, then its instructions,
 * budget, verdict, cycles (min, median) and ratio, so that tools/bench
 * can parse it; the last line says how many budgets were met and missed.
 */

#ifndef KERN_PERFMON_BENCH_H
#define KERN_PERFMON_BENCH_H

/* The subcommand (perfmon_cmd_main_fn_t, kern/perfmon/cmd/perfmon_cmd.h). */
extern const char perfmon_bench_usage[];

int perfmon_bench_main(int argc, char **argv);

#endif /* KERN_PERFMON_BENCH_H */
