/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Private to `perfmon stat`: what its parser and runner (perfmon_stat.c)
 * hand its printer (perfmon_stat_print.c).
 */

#ifndef KERN_PERFMON_STAT_I_H
#define KERN_PERFMON_STAT_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_parse.h"
#include "kern/perfmon/cmd/perfmon_stat.h"

struct thread;

#define PERFMON_STAT_SEP_MAX     8       /* -x separator, characters */

/*
 * What became of an event on the first run that tried it.  An event that
 * attached but never held a counter is not counted either: that shows in
 * its running time (perfmon_stat_print).
 */
#define PERFMON_STAT_EV_OK               0
#define PERFMON_STAT_EV_NOT_SUPPORTED    1   /* no device counts it */
#define PERFMON_STAT_EV_NOT_COUNTED      2   /* pinned: no free counter */

/* What one event counted on one slot in one run; times in ns. */
struct perfmon_stat_count {
    uint64_t value;
    uint64_t enabled;
    uint64_t running;
};

/*
 * One requested event: how to initialise it (id, flags, dev: the device
 * of a device-named raw event, else NULL to let the core choose), its
 * generic id when it has one (for the derived metrics), its group (the
 * index of its leader in evs, -1 for none), and its fate.
 */
struct perfmon_stat_ev {
    struct perfmon_parse_event parsed;
    uint64_t id;
    unsigned int flags;
    struct perfmon_dev *dev;
    int generic;                        /* PERFMON_EV_*, or -1 */
    int group;
    unsigned int state;
    struct perfmon_dev *full_dev;       /* NOT_COUNTED: the device */
    int error;                          /* why attaching it failed */
};

/*
 * A metric asked for with -M: its name and formula (static strings: the
 * tables' or the built-in ones), and its events, evs[first..first + nr),
 * counted as one group so that their ratio is not skewed by
 * multiplexing.
 */
#define PERFMON_STAT_MAX_METRICS    8

struct perfmon_stat_asked {
    const char *name;
    const char *formula;
    unsigned int first;
    unsigned int nr;
};

/*
 * A `perfmon stat` invocation, on the heap (too big for a thread stack).
 * pevs[e * nr_slots + s] is event e on slot s (the command's thread, the
 * s-th selected CPU, or the s-th thread of -t); values[(r * nr_events + e) * nr_slots + s] what it
 * counted in run r.
 */
struct perfmon_stat {
    struct perfmon_stat_ev evs[PERFMON_PARSE_MAX_EVENTS];
    unsigned int nr_events;
    bool cpu_mode;                      /* -a or -C */
    bool all_cpus;                      /* -a */
    bool per_cpu;                       /* -A */
    bool no_inherit;                    /* -i */
    const char *cpu_list;               /* -C argument */
    unsigned int cpus[PERFMON_PARSE_MAX_CPUS];
    const char *tid_list;               /* -t argument */
    bool per_thread;                    /* --per-thread */
    struct thread *threads[PERFMON_CMD_MAX_THREADS];  /* -t: referenced */
    unsigned int nr_threads;
    unsigned int nr_slots;
    unsigned int repeat;
    char sep[PERFMON_STAT_SEP_MAX + 1];  /* empty: human-readable output */
    bool json;                          /* -j: one JSON object a line */
    int cmd_argc;                       /* 0: no command (-a, -C) */
    char **cmd_argv;

    /*
     * -I: every interval_ms, values of run 0 hold what each event counted
     * since the last interval (prev: its totals then), elapsed_ns[0] the
     * interval's length; after interval_count intervals (0: no limit) or
     * timeout_ms (0: none) counting without a command stops.  time_ns
     * starts each line printed (the time column: since counting began);
     * read_max_ns is the longest time reading every event took, the
     * spread of one row's window.
     */
    uint64_t interval_ms;
    unsigned int interval_count;
    uint64_t timeout_ms;
    struct perfmon_stat_count *prev;
    unsigned int nr_intervals;
    uint64_t read_max_ns;
    uint64_t time_ns;

    struct perfmon_event *pevs;
    size_t pevs_size;
    struct perfmon_stat_count *values;
    size_t values_size;
    struct perfmon_event **set;         /* the attached ones of a run */
    size_t set_size;
    uint64_t elapsed_ns[PERFMON_STAT_MAX_RUNS];
    unsigned int runs_done;             /* those the counts are of */
    bool partial;                       /* the last of them interrupted */

    struct perfmon_cmd_runner runner;
    int cmd_result;

    struct perfmon_stat_asked metrics[PERFMON_STAT_MAX_METRICS];
    unsigned int nr_metrics;
};

/*
 * -t: the slots are the threads named, counted from outside as CPUs are
 * (stat enables and disables their events, not the command's runner).
 */
static inline bool
perfmon_stat_thread_mode(const struct perfmon_stat *stat)
{
    return stat->nr_threads != 0;
}

/* One output row per slot (-A, --per-thread), else their sum. */
static inline bool
perfmon_stat_per_slot(const struct perfmon_stat *stat)
{
    return stat->per_cpu || stat->per_thread;
}

/* What event ev counted on slot in run run. */
static inline struct perfmon_stat_count *
perfmon_stat_value(struct perfmon_stat *stat, unsigned int run,
                   unsigned int ev, unsigned int slot)
{
    return &stat->values[((size_t)run * stat->nr_events + ev) * stat->nr_slots
                         + slot];
}

/*
 * Every event on one output row: the mean of its counts over the runs
 * (each the sum over the row's slots of count * enabled / running, perf's
 * estimate for an event that took turns on a counter), their relative
 * deviation, and the share of its enabled time it really counted, in
 * hundredths of a percent (10000: all of it; 0: it never ran).  Computed
 * once by the printer, which owns it; the metrics read it.
 */
struct perfmon_stat_row {
    int slot;                           /* -1: the sum over the slots */
    uint64_t mean[PERFMON_PARSE_MAX_EVENTS];
    uint64_t rsd[PERFMON_PARSE_MAX_EVENTS];
    uint64_t share[PERFMON_PARSE_MAX_EVENTS];
    uint64_t running_ns[PERFMON_PARSE_MAX_EVENTS];  /* mean over runs */
    uint64_t elapsed_ns;
};

/* Whether event e counted at all on a row: it ran some of its time. */
static inline bool
perfmon_stat_counted(const struct perfmon_stat *stat,
                     const struct perfmon_stat_row *row, unsigned int e)
{
    return stat->evs[e].state == PERFMON_STAT_EV_OK && row->share[e] != 0;
}

/*
 * Print the counts of the runs done, as perf stat does (the -x format when
 * a separator was given), then "interrupted" when the runs were.  Returns 0
 * or SHELL_ERR_REPORTED (out of memory, said).
 */
int perfmon_stat_print(struct perfmon_stat *stat, bool interrupted);

/*
 * Print one interval of -I: its rows (values of run 0), each line after
 * the time time_ns since counting began, in the format chosen, and the
 * column header before the first.  Returns as perfmon_stat_print().
 */
int perfmon_stat_print_interval(struct perfmon_stat *stat, uint64_t time_ns);
/* Add the events of an -e list (perfmon_stat.c). */
int perfmon_stat_add_events(struct perfmon_stat *stat, const char *list);

/*
 * -M: add the metrics of a comma-separated list (the CPU model's, then
 * the generic ones), each one's events as a group; unknown or too many
 * are refused in one line (perfmon_stat_metric.c).
 */
int perfmon_stat_metrics_add(struct perfmon_stat *stat, const char *list);

/*
 * The value of metric stat->metrics[i] on row, from the row's counts of
 * its events, as text in buf (two decimals): true, or false and why there
 * is none ("<not supported>": an event of it no device counts; "<not
 * counted>": one never ran on the row, or the formula is undefined there,
 * a division by zero).  The printer shows it beside the metric's first
 * event (perfmon_stat_print.c).
 */
bool perfmon_stat_metric_value(struct perfmon_stat *stat, unsigned int i,
                               const struct perfmon_stat_row *row, char *buf,
                               size_t size);

#endif /* KERN_PERFMON_STAT_I_H */
