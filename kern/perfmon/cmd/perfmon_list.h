/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon list [FILTER]` and `perfmon info`: what this machine can count
 * and what is counting now (kern/perfmon/cmd/perfmon_list.c and
 * perfmon_info.c).
 */

#ifndef KERN_PERFMON_LIST_H
#define KERN_PERFMON_LIST_H

#include <stdbool.h>
#include <stdint.h>

/* The subcommands (perfmon_cmd_main_fn_t, kern/perfmon/cmd/perfmon_cmd.h). */
extern const char perfmon_list_usage[];
extern const char perfmon_info_usage[];

int perfmon_list_main(int argc, char **argv);
int perfmon_info_main(int argc, char **argv);

/*
 * Shared by list and info.  perfmon_list_options(): their options (-j,
 * --json) through the shared parser: the index of the first word after
 * them, or -1 after saying what is wrong.  perfmon_list_raw_name(): the
 * name of a raw code on a device, or NULL.
 */
struct perfmon_dev;

int perfmon_list_options(int argc, char **argv, const char *who,
                         const char *usage, bool *jsonp);
const char *perfmon_list_raw_name(struct perfmon_dev *dev, uint64_t raw);

#endif /* KERN_PERFMON_LIST_H */
