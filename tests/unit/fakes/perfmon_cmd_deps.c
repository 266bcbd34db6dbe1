/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The `perfmon` subcommands that live in files of their own, for the
 * host test of kern/perfmon/cmd/perfmon_cmd.c's dispatcher: each records that it ran
 * and with how many words.
 */

#include "kern/perfmon/cmd/perfmon_bench.h"
#include "kern/perfmon/cmd/perfmon_record.h"
#include "kern/perfmon_selftest.h"
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

/* A subcommand's stand-in: it records its name and word count. */
#define FAKE_PERFMON_SUBCMD(fn, name)                                   \
    int                                                                 \
    fn(int argc, char **argv)                                           \
    {                                                                   \
        (void)argv;                                                     \
        return fake_perfmon_subcmd_run(name, argc);                     \
    }

FAKE_PERFMON_SUBCMD(perfmon_stat_main, "stat")
FAKE_PERFMON_SUBCMD(perfmon_bench_main, "bench")
FAKE_PERFMON_SUBCMD(perfmon_record_main, "record")
FAKE_PERFMON_SUBCMD(perfmon_report_main, "report")
FAKE_PERFMON_SUBCMD(perfmon_script_main, "script")
FAKE_PERFMON_SUBCMD(perfmon_top_main, "top")
FAKE_PERFMON_SUBCMD(perfmon_selftest_main, "selftest")
