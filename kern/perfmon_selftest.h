/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The self-test contract between the perfmon core and its devices.
 * `perfmon selftest` (kern/perfmon/cmd/perfmon_selftest.h) checks that
 * the counters count what they claim, on the machine the kernel runs on:
 * the checks the core's API can express are the command's; a device adds
 * those it cannot express through its selftest operation (struct
 * perfmon_dev_ops), measures them on the loop below and reports each with
 * the functions below (kern/perfmon/perfmon_selftest.c).  Each check
 * prints one line: its verdict (PASS, FAIL or SKIP), what it measured and
 * the range it expected.
 *
 * Everything here runs in thread context, one run at a time, on one CPU:
 * the run pins its thread to the CPU it starts on and restores its
 * affinity at the end.
 */

#ifndef KERN_PERFMON_SELFTEST_H
#define KERN_PERFMON_SELFTEST_H

#include <stdbool.h>
#include <stdint.h>

#include "kern/workload.h"

/* The longest line a run prints, its NUL included: longer ones are cut. */
#define PERFMON_SELFTEST_LINE_SIZE  192

/*
 * A run.  print is called with each line, without its newline; check (may
 * be NULL) instead of print with each check's verdict ("PASS", "FAIL",
 * "SKIP"), name, what it measured (or why it was skipped) and what it
 * expected (NULL: nothing said), for a report in another format; stop
 * (may be NULL) is asked between checks whether to give up (Ctrl-C).
 * The run sets cpu, and the counts, read them at the end.
 */
struct perfmon_selftest {
    void (*print)(void *arg, const char *line);
    void (*check)(void *arg, const char *verdict, const char *name,
                  const char *measured, const char *expected);
    void *arg;
    bool (*stop)(void);
    unsigned int cpu;                   /* the CPU the run is pinned to */
    unsigned int nr_pass;
    unsigned int nr_fail;
    unsigned int nr_skip;
    bool stopped;
};

/*
 * The loop the checks measure, workload_spin_loop() (kern/workload.h):
 * n iterations (n > 0) of exactly WORKLOAD_SPIN_INSNS instructions, one
 * of them a taken branch (the last iteration's falls through), plus a
 * constant.  Returns the TSC cycles it took.  Any context.
 */
uint64_t perfmon_selftest_spin(uint64_t n);

/*
 * Report a check.  name says what was measured ("counter 2: instructions
 * per spin iteration"); values are integers, or thousandths for the
 * _milli variant (printed with three decimals).  The verdict is PASS
 * when lo <= value <= hi, FAIL otherwise.  _hex compares a register's
 * value with the one expected (printed in hex).  _skip says why the check
 * could not run, _fail why it failed without a value.
 */
void perfmon_selftest_range(struct perfmon_selftest *st, const char *name,
                            uint64_t value, uint64_t lo, uint64_t hi);
void perfmon_selftest_milli(struct perfmon_selftest *st, const char *name,
                            uint64_t value, uint64_t lo, uint64_t hi);
void perfmon_selftest_hex(struct perfmon_selftest *st, const char *name,
                          uint64_t value, uint64_t expected);
void perfmon_selftest_skip(struct perfmon_selftest *st, const char *name,
                           const char *why);
void perfmon_selftest_fail(struct perfmon_selftest *st, const char *name,
                           const char *why);

/* num / den in thousandths (0 when den is 0), without overflowing. */
uint64_t perfmon_selftest_ratio(uint64_t num, uint64_t den);


#endif /* KERN_PERFMON_SELFTEST_H */
