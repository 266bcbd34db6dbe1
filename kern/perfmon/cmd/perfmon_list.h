/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon list [FILTER]` and `perfmon info`: what this machine can count
 * and what is counting now (kern/perfmon/cmd/perfmon_list.c).
 */

#ifndef KERN_PERFMON_LIST_H
#define KERN_PERFMON_LIST_H

/*
 * The subcommands, from the shell's `perfmon` command: each takes the
 * command's words (argv[0] "perfmon", argv[1] "list" or "info").  Thread
 * context.
 */
int perfmon_list_main(int argc, char **argv);
int perfmon_info_main(int argc, char **argv);

#endif /* KERN_PERFMON_LIST_H */
