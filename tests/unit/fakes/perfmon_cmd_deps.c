/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The `perfmon` subcommands that live in files of their own, for the
 * host test of kern/perfmon/cmd/perfmon_cmd.c's dispatcher: each records that it ran
 * and with how many words.
 */

#include <string.h>

#include "kern/error.h"
#include "kern/perfmon/cmd/perfmon_bench.h"
#include "kern/perfmon/cmd/perfmon_record.h"
#include "kern/perfmon/cmd/perfmon_regions.h"
#include "kern/perfmon/cmd/perfmon_selftest.h"
#include "kern/perfmon/cmd/perfmon_stat.h"

/* The last subcommand run ("stat", "top"...) and its word count. */
const char *fake_perfmon_subcmd;
int fake_perfmon_subcmd_argc;

static int
fake_perfmon_subcmd_run(const char *name, int argc)
{
    fake_perfmon_subcmd = name;
    fake_perfmon_subcmd_argc = argc;
    return 0;
}

/*
 * A subcommand's stand-in: it records its name and word count, and
 * fails when argv[1] is not its name (every subcommand gets the shell's
 * words).  Its usage names it, for the help test.
 */
#define FAKE_PERFMON_SUBCMD(name)                                       \
    const char perfmon_##name##_usage[] = "usage: perfmon " #name       \
                                          " (fake)\n";                  \
                                                                        \
    int                                                                 \
    perfmon_##name##_main(int argc, char **argv)                        \
    {                                                                   \
        if (argc < 2 || strcmp(argv[1], #name) != 0) {                  \
            return -EINVAL;                                             \
        }                                                               \
                                                                        \
        return fake_perfmon_subcmd_run(#name, argc);                    \
    }

FAKE_PERFMON_SUBCMD(stat)
FAKE_PERFMON_SUBCMD(bench)
FAKE_PERFMON_SUBCMD(record)
FAKE_PERFMON_SUBCMD(report)
FAKE_PERFMON_SUBCMD(script)
FAKE_PERFMON_SUBCMD(top)
FAKE_PERFMON_SUBCMD(regions)
FAKE_PERFMON_SUBCMD(selftest)
