/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The `perfmon` subcommands that live in files of their own, for the
 * host test of kern/perfmon_cmd.c's dispatcher: each records that it ran
 * and with how many words.
 */

#include "kern/perfmon_bench.h"
#include "kern/perfmon_record.h"
#include "kern/perfmon_stat.h"

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

int
perfmon_stat_main(int argc, char **argv)
{
    (void)argv;
    return fake_perfmon_subcmd_run("stat", argc);
}

int
perfmon_bench_main(int argc, char **argv)
{
    (void)argv;
    return fake_perfmon_subcmd_run("bench", argc);
}

int
perfmon_record_main(int argc, char **argv)
{
    (void)argv;
    return fake_perfmon_subcmd_run("record", argc);
}

int
perfmon_report_main(int argc, char **argv)
{
    (void)argv;
    return fake_perfmon_subcmd_run("report", argc);
}

int
perfmon_script_main(int argc, char **argv)
{
    (void)argv;
    return fake_perfmon_subcmd_run("script", argc);
}

int
perfmon_top_main(int argc, char **argv)
{
    (void)argv;
    return fake_perfmon_subcmd_run("top", argc);
}
