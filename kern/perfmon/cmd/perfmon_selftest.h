/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon selftest` (kern/perfmon/cmd/perfmon_selftest.c): the checks
 * that go through the core's API, and each device's own checks through
 * its selftest operation (kern/perfmon_selftest.h).  Thread context, one
 * run at a time.
 */

#ifndef KERN_PERFMON_CMD_SELFTEST_H
#define KERN_PERFMON_CMD_SELFTEST_H

#include "kern/perfmon_selftest.h"

/*
 * Run every check: a first line saying what hardware PMU there is, the
 * checks, and a summary line.  Returns the number of failed checks.
 */
unsigned int perfmon_selftest_run(struct perfmon_selftest *st);

/* The subcommand (perfmon_cmd_main_fn_t, kern/perfmon/cmd/perfmon_cmd.h). */
extern const char perfmon_selftest_usage[];

int perfmon_selftest_main(int argc, char **argv);

#endif /* KERN_PERFMON_CMD_SELFTEST_H */
