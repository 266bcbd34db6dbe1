/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon list [FILTER]` and `perfmon info`: what this machine can count
 * and what is counting now (kern/perfmon/cmd/perfmon_list.c).
 */

#ifndef KERN_PERFMON_LIST_H
#define KERN_PERFMON_LIST_H

/* The subcommands (perfmon_cmd_main_fn_t, kern/perfmon/cmd/perfmon_cmd.h). */
extern const char perfmon_list_usage[];
extern const char perfmon_info_usage[];

int perfmon_list_main(int argc, char **argv);
int perfmon_info_main(int argc, char **argv);

#endif /* KERN_PERFMON_LIST_H */
