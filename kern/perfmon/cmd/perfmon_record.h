/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The profiling subcommands of `perfmon`: record (kern/perfmon/cmd/perfmon_record.c),
 * report and script (kern/perfmon/cmd/perfmon_report.c), top (kern/perfmon/cmd/perfmon_top.c).
 * Each is a perfmon_cmd_main_fn_t (kern/perfmon/cmd/perfmon_cmd.h) with
 * its usage.  Thread context.
 */

#ifndef KERN_PERFMON_RECORD_H
#define KERN_PERFMON_RECORD_H

/* perf's default sampling frequency, record's too. */
#define PERFMON_RECORD_FREQ_DEFAULT     4000

extern const char perfmon_record_usage[];
extern const char perfmon_report_usage[];
extern const char perfmon_script_usage[];
extern const char perfmon_top_usage[];

int perfmon_record_main(int argc, char **argv);
int perfmon_report_main(int argc, char **argv);
int perfmon_script_main(int argc, char **argv);
int perfmon_top_main(int argc, char **argv);

#endif /* KERN_PERFMON_RECORD_H */
