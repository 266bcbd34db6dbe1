/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon stat [-e EVENTS] [-a | -C CPUS] [-A] [-r N] [-x SEP] [--]
 * COMMAND [ARGS...]`: count what a shell command does (kern/perfmon/cmd/perfmon_stat.c).
 */

#ifndef KERN_PERFMON_STAT_H
#define KERN_PERFMON_STAT_H

/* Most runs of -r. */
#define PERFMON_STAT_MAX_RUNS   100

/* The subcommand (perfmon_cmd_main_fn_t, kern/perfmon/cmd/perfmon_cmd.h). */
extern const char perfmon_stat_usage[];

int perfmon_stat_main(int argc, char **argv);

#endif /* KERN_PERFMON_STAT_H */
