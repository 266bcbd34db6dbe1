/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon regions`: arm the kernel's code regions (kern/perfmon_region.h)
 * with events, show what each region cost per CPU, reset, disarm
 * (kern/perfmon/cmd/perfmon_regions.c).
 */

#ifndef KERN_PERFMON_REGIONS_H
#define KERN_PERFMON_REGIONS_H

/* The subcommand (perfmon_cmd_main_fn_t, kern/perfmon/cmd/perfmon_cmd.h). */
extern const char perfmon_regions_usage[];

int perfmon_regions_main(int argc, char **argv);

#endif /* KERN_PERFMON_REGIONS_H */
