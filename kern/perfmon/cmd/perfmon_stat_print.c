/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon stat`'s output: the counts of a run (summed over its CPUs or one
 * row per CPU, the means and relative deviations of repeated runs), perf's
 * derived metrics beside them, in perf's layout or as separated fields
 * (-x).  Integer arithmetic only (kern/num.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/tsc.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/num.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_json.h"
#include "kern/perfmon/cmd/perfmon_resolve.h"
#include "kern/perfmon/cmd/perfmon_stat_i.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/string.h"
#include "kern/thread.h"

/* count * enabled / running: what the event would have counted. */
static uint64_t
perfmon_stat_scaled(const struct perfmon_stat_count *c)
{
    if (c->running == 0 || c->running >= c->enabled) {
        return (c->running == 0) ? 0 : c->value;
    }

    return num_muldiv(c->value, c->enabled, c->running);
}

static void
perfmon_stat_row_compute(struct perfmon_stat *stat,
                         struct perfmon_stat_row *row, int slot,
                         uint64_t *scratch)
{
    unsigned int first = (slot >= 0) ? (unsigned int)slot : 0;
    unsigned int end = (slot >= 0) ? first + 1 : stat->nr_slots;
    uint64_t rsd;

    row->slot = slot;

    for (unsigned int e = 0; e < stat->nr_events; e++) {
        uint64_t enabled = 0, running = 0;

        for (unsigned int r = 0; r < stat->runs_done; r++) {
            uint64_t v = 0;

            for (unsigned int s = first; s < end; s++) {
                const struct perfmon_stat_count *c;

                c = perfmon_stat_value(stat, r, e, s);
                v += perfmon_stat_scaled(c);
                enabled += c->enabled;
                running += MIN(c->running, c->enabled);
            }

            scratch[r] = v;
        }

        num_stats(scratch, stat->runs_done, &row->mean[e], &row->rsd[e]);
        row->share[e] = (enabled == 0) ? 10000
                        : num_muldiv(running, 10000, enabled);
        row->running_ns[e] = running / MAX(stat->runs_done, 1U);
    }

    num_stats(stat->elapsed_ns, stat->runs_done, &row->elapsed_ns, &rsd);
}

/* The first counted event of generic id, or -1. */
static int
perfmon_stat_find(const struct perfmon_stat *stat, unsigned int id)
{
    for (unsigned int e = 0; e < stat->nr_events; e++) {
        if ((stat->evs[e].generic == (int)id)
            && (stat->evs[e].state == PERFMON_STAT_EV_OK)) {
            return (int)e;
        }
    }

    return -1;
}

/*
 * A metric shown beside a count, as perf shows it after '#': its value
 * (text; empty when there is none), unit, and the character perf's
 * format puts after the number inside the 8 columns of the value (' '
 * for the instructions per cycle, '%' for a percentage; 0: none), which
 * perf's -x and -j leave out.  none: value says why there is no value
 * ("<not supported>"): -x leaves the field empty, -j writes null.
 */
struct perfmon_stat_metric {
    char value[40];
    const char *unit;
    char tail;
    bool none;
};

static void
perfmon_stat_rate(struct perfmon_stat_metric *m, uint64_t count,
                  uint64_t time_ns, bool group)
{
    /* Events per second, times 1000 for three decimals. */
    uint64_t rate = num_muldiv(count, 1000000000000ULL, time_ns);

    if (rate >= 1000000000ULL) {
        num_fmt_ratio(m->value, sizeof(m->value), rate, 1000000000ULL, 3,
                          group);
        m->unit = "M/sec";
    } else if (rate >= 1000000ULL) {
        num_fmt_ratio(m->value, sizeof(m->value), rate, 1000000ULL, 3,
                          group);
        m->unit = "K/sec";
    } else {
        num_fmt_ratio(m->value, sizeof(m->value), rate, 1000, 3, group);
        m->unit = "/sec";
    }
}

static void
perfmon_stat_percent(struct perfmon_stat_metric *m, uint64_t part,
                     uint64_t whole, const char *unit, bool group)
{
    num_fmt_percent(m->value, sizeof(m->value), part, whole, group);
    m->unit = unit;
    m->tail = '%';
}

/* Counts grouped in thousands: in perf's default format only. */
static bool
perfmon_stat_grouped(const struct perfmon_stat *stat)
{
    return (stat->sep[0] == '\0') && !stat->json;
}

static void
perfmon_stat_metric(struct perfmon_stat *stat,
                    const struct perfmon_stat_row *row, unsigned int e,
                    struct perfmon_stat_metric *m)
{
    int clock = perfmon_stat_find(stat, PERFMON_EV_TASK_CLOCK);
    int cycles = perfmon_stat_find(stat, PERFMON_EV_CYCLE);
    int branches = perfmon_stat_find(stat, PERFMON_EV_BRANCH);
    int refs = perfmon_stat_find(stat, PERFMON_EV_CACHE_REF);
    bool group = perfmon_stat_grouped(stat);
    uint64_t v = row->mean[e], clock_ns = 0;

    *m = (struct perfmon_stat_metric){ .value = "", .unit = "" };

    if (clock >= 0) {
        clock_ns = tsc_cycles_to_ns(row->mean[clock]);
    }

    switch (stat->evs[e].generic) {
    case PERFMON_EV_TASK_CLOCK:
        num_fmt_ratio(m->value, sizeof(m->value), tsc_cycles_to_ns(v),
                          row->elapsed_ns, 3, group);
        m->unit = "CPUs utilized";
        break;
    case PERFMON_EV_CYCLE:
        if (clock_ns != 0) {
            num_fmt_ratio(m->value, sizeof(m->value), v, clock_ns, 3,
                              group);
            m->unit = "GHz";
        }

        break;
    case PERFMON_EV_INSTRUCTION:
        if ((cycles >= 0) && (row->mean[cycles] != 0)) {
            num_fmt_ratio(m->value, sizeof(m->value), v,
                              row->mean[cycles], 2, group);
            m->unit = "insn per cycle";
            m->tail = ' ';
        }

        break;
    case PERFMON_EV_BRANCH_MISS:
        if ((branches >= 0) && (row->mean[branches] != 0)) {
            perfmon_stat_percent(m, v, row->mean[branches],
                                 "of all branches", group);
        }

        break;
    case PERFMON_EV_CACHE_MISS:
        if ((refs >= 0) && (row->mean[refs] != 0)) {
            perfmon_stat_percent(m, v, row->mean[refs], "of all cache refs",
                                 group);
        }

        break;
    default:
        if (clock_ns != 0) {
            perfmon_stat_rate(m, v, clock_ns, group);
        }

        break;
    }
}

/* The count column: msec for the clock, grouped counts otherwise. */
static void
perfmon_stat_fmt_value(const struct perfmon_stat *stat, unsigned int e,
                       uint64_t v, char *buf, size_t size, const char **unitp)
{
    bool group = perfmon_stat_grouped(stat);

    if (stat->evs[e].generic == PERFMON_EV_TASK_CLOCK) {
        num_fmt_ratio(buf, size, tsc_cycles_to_ns(v), 1000000, 2, group);
        *unitp = "msec";
    } else {
        ksnprintf(buf, size, group ? "%'llu" : "%llu", (unsigned long long)v);
        *unitp = "";
    }
}

/*
 * -I's time column, as perf prints it: seconds since counting began, to
 * the nanosecond, then the separator (a blank in perf's default format).
 */
static void
perfmon_stat_add_time(const struct perfmon_stat *stat,
                      struct perfmon_cmd_line *line)
{
    if (stat->interval_ms == 0) {
        return;
    }

    perfmon_cmd_line_add(line, "%6llu.%09llu%s",
                         (unsigned long long)(stat->time_ns / 1000000000ULL),
                         (unsigned long long)(stat->time_ns % 1000000000ULL),
                         (stat->sep[0] != '\0') ? stat->sep : " ");
}

/*
 * A thread's label in --per-thread rows, as perf writes it: NAME-TID (a
 * thread name has no quote or backslash to escape), between open and
 * close.
 */
static void
perfmon_stat_add_thread(const struct perfmon_stat *stat,
                        struct perfmon_cmd_line *line, int slot, int width,
                        const char *open, const char *close)
{
    const struct thread *thread = stat->threads[slot];
    char label[THREAD_NAME_SIZE + 12];

    ksnprintf(label, sizeof(label), "%s-%u", thread_name(thread),
              thread_id(thread));
    perfmon_cmd_line_add(line, "%s%*s%s", open, width, label, close);
}

/*
 * What begins every line of a row, in the format chosen: -I's time, then
 * the row's CPU (-A) or thread (--per-thread), as perf writes them: its
 * columns ("CPU%-7d" and a blank), -x's fields or -j's members.
 */
static void
perfmon_stat_add_prefix(const struct perfmon_stat *stat,
                        const struct perfmon_stat_row *row,
                        struct perfmon_cmd_line *line)
{
    const char *sep = (stat->sep[0] != '\0') ? stat->sep : " ";
    bool thread = row->slot >= 0 && perfmon_stat_thread_mode(stat);

    if (!stat->json) {
        perfmon_stat_add_time(stat, line);

        if (thread) {
            perfmon_stat_add_thread(stat, line, row->slot,
                                    (stat->sep[0] != '\0') ? 0 : 20, "", sep);
        } else if (row->slot >= 0) {
            perfmon_cmd_line_add(line, (stat->sep[0] != '\0') ? "CPU%u%s"
                                 : "CPU%-7u%s", stat->cpus[row->slot], sep);
        }

        return;
    }

    if (stat->interval_ms != 0) {
        perfmon_cmd_line_add(line, "\"interval\" : %llu.%09llu, ",
                             (unsigned long long)(stat->time_ns
                                                  / 1000000000ULL),
                             (unsigned long long)(stat->time_ns
                                                  % 1000000000ULL));
    }

    if (thread) {
        perfmon_cmd_line_add(line, "\"thread\" : ");
        perfmon_stat_add_thread(stat, line, row->slot, 0, "\"", "\", ");
    } else if (row->slot >= 0) {
        perfmon_cmd_line_add(line, "\"cpu\" : \"%u\", ",
                             stat->cpus[row->slot]);
    }
}

/*
 * The n-th metric shown beside event e on row, in perf's order: the one
 * its count derives (perfmon_stat_metric, when it counted), then each of
 * -M's whose first event it is.  False past the last.
 */
static bool
perfmon_stat_metric_nth(struct perfmon_stat *stat,
                        const struct perfmon_stat_row *row, unsigned int e,
                        unsigned int n, struct perfmon_stat_metric *m)
{
    if (perfmon_stat_counted(stat, row, e)) {
        perfmon_stat_metric(stat, row, e, m);

        if (m->value[0] != '\0' && n-- == 0) {
            return true;
        }
    }

    for (unsigned int i = 0; i < stat->nr_metrics; i++) {
        if (stat->metrics[i].first != e || n-- != 0) {
            continue;
        }

        *m = (struct perfmon_stat_metric){ .unit = stat->metrics[i].name };
        m->none = !perfmon_stat_metric_value(stat, i, row, m->value,
                                             sizeof(m->value));
        return true;
    }

    return false;
}

/* -j: a metric's members, as perf writes them (null: no value). */
static void
perfmon_stat_add_metric_json(struct perfmon_cmd_line *line,
                             const struct perfmon_stat_metric *m)
{
    perfmon_cmd_line_add(line, "\"metric-value\" : %s, \"metric-unit\" : ",
                         m->none ? "null" : m->value);
    perfmon_json_add_string(line, m->unit);
}

/*
 * The share of its enabled time an event counted (in hundredths of a
 * percent), for -x and -j, as perf gives it: 0 for one enabled that never
 * ran, 100% for one never enabled (perf's running and enabled times both
 * 0 make it so).
 */
static void
perfmon_stat_fmt_share(struct perfmon_stat *stat,
                       const struct perfmon_stat_row *row, unsigned int e,
                       char *buf, size_t size)
{
    uint64_t share = 0;

    if (perfmon_stat_counted(stat, row, e)) {
        share = row->share[e];
    } else if (stat->evs[e].state == PERFMON_STAT_EV_NOT_SUPPORTED) {
        share = 10000;
    }

    num_fmt_ratio(buf, size, share, 100, 2, false);
}

/*
 * -j: one JSON object, with perf stat's field names: the interval and the
 * CPU where they apply, the count (a string: it may be "<not counted>"),
 * its unit, the event, the relative deviation of -r ("variance", as perf
 * names it), the time it counted and the share of its enabled time, and
 * its first metric (0 and "" without one); each further metric in an
 * object of its own after it, as perf prints one: the interval and CPU,
 * the metric's value and unit.
 */
static void
perfmon_stat_print_json(struct perfmon_stat *stat,
                        const struct perfmon_stat_row *row, unsigned int e)
{
    const struct perfmon_stat_ev *cev = &stat->evs[e];
    bool counted = perfmon_stat_counted(stat, row, e);
    struct perfmon_stat_metric m;
    struct perfmon_cmd_line line;
    char value[40], share[16], rsd[16];
    const char *unit = "";

    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "{");
    perfmon_stat_add_prefix(stat, row, &line);

    if (counted) {
        perfmon_stat_fmt_value(stat, e, row->mean[e], value, sizeof(value),
                               &unit);
    } else {
        strlcpy(value, (cev->state == PERFMON_STAT_EV_NOT_SUPPORTED)
                       ? "<not supported>" : "<not counted>", sizeof(value));
    }

    perfmon_cmd_line_add(&line, "\"counter-value\" : \"%s\", \"unit\" : ",
                         value);
    perfmon_json_add_string(&line, unit);
    perfmon_cmd_line_add(&line, ", \"event\" : ");
    perfmon_json_add_string(&line, cev->parsed.spec);

    if (stat->repeat > 1) {
        num_fmt_ratio(rsd, sizeof(rsd), counted ? row->rsd[e] : 0, 100, 2,
                      false);
        perfmon_cmd_line_add(&line, ", \"variance\" : %s", rsd);
    }

    perfmon_stat_fmt_share(stat, row, e, share, sizeof(share));
    perfmon_cmd_line_add(&line, ", \"event-runtime\" : %llu, "
                         "\"pcnt-running\" : %s, ",
                         counted ? (unsigned long long)row->running_ns[e]
                                 : 0ULL, share);
    if (!perfmon_stat_metric_nth(stat, row, e, 0, &m)) {
        m = (struct perfmon_stat_metric){ .value = "0", .unit = "" };
    }

    perfmon_stat_add_metric_json(&line, &m);
    perfmon_cmd_line_add(&line, "}");
    perfmon_cmd_line_print(&line);

    for (unsigned int n = 1; perfmon_stat_metric_nth(stat, row, e, n, &m);
         n++) {
        perfmon_cmd_line_add(&line, "{");
        perfmon_stat_add_prefix(stat, row, &line);
        perfmon_stat_add_metric_json(&line, &m);
        perfmon_cmd_line_add(&line, "}");
        perfmon_cmd_line_print(&line);
    }
}

/*
 * -x: perf's fields, counter,unit,event[,variance],runtime,pcnt,
 * metric-value,metric-unit after the time and CPU; each further metric on
 * a line of its own after it, with the same fields, empty but the
 * metric's (a metric without a value: its value empty).
 */
static void
perfmon_stat_print_csv(struct perfmon_stat *stat,
                       const struct perfmon_stat_row *row, unsigned int e)
{
    const struct perfmon_stat_ev *cev = &stat->evs[e];
    struct perfmon_stat_metric m = { .value = "", .unit = "" };
    const char *sep = stat->sep, *unit = "";
    struct perfmon_cmd_line line;
    char value[40], rsd[16], share[16];
    bool counted = perfmon_stat_counted(stat, row, e);

    perfmon_cmd_line_init(&line);
    perfmon_stat_add_prefix(stat, row, &line);

    if (counted) {
        perfmon_stat_fmt_value(stat, e, row->mean[e], value, sizeof(value),
                               &unit);
    } else {
        strlcpy(value, (cev->state == PERFMON_STAT_EV_NOT_SUPPORTED)
                       ? "<not supported>" : "<not counted>", sizeof(value));
    }

    perfmon_cmd_line_add(&line, "%s%s%s%s%s", value, sep, unit, sep,
                         cev->parsed.spec);

    if (stat->repeat > 1) {
        num_fmt_ratio(rsd, sizeof(rsd), row->rsd[e], 100, 2, false);
        perfmon_cmd_line_add(&line, "%s%s%%", sep, counted ? rsd : "");
    }

    perfmon_stat_fmt_share(stat, row, e, share, sizeof(share));
    perfmon_cmd_line_add(&line, "%s%llu%s%s%s", sep,
                         counted ? (unsigned long long)row->running_ns[e]
                                 : 0ULL, sep, share, sep);

    for (unsigned int n = 0; perfmon_stat_metric_nth(stat, row, e, n, &m)
                             || n == 0; n++) {
        if (n > 0) {
            perfmon_cmd_line_print(&line);
            perfmon_stat_add_prefix(stat, row, &line);

            for (unsigned int f = (stat->repeat > 1) ? 6 : 5; f > 0; f--) {
                perfmon_cmd_line_add(&line, "%s", sep);
            }
        }

        perfmon_cmd_line_add(&line, "%s%s%s", m.none ? "" : m.value, sep,
                             m.unit);
    }

    perfmon_cmd_line_print(&line);
}

/*
 * A metric in perf's columns: " # ", the value right-aligned in 8, a
 * blank, the unit in 23.
 */
static void
perfmon_stat_add_metric_human(struct perfmon_cmd_line *line,
                              const struct perfmon_stat_metric *m)
{
    if (m->tail != '\0') {
        perfmon_cmd_line_add(line, " # %7s%c %-23s", m->value, m->tail,
                             m->unit);
    } else {
        perfmon_cmd_line_add(line, " # %8s %-23s", m->value, m->unit);
    }
}

/*
 * perf's default layout: the count in 18 columns, its unit in 4, the event
 * in 32 (25 when it has no count), then its first metric (or 35 blanks
 * before what follows), the relative deviation of -r, and the share of
 * its time it held a counter; each further metric on a line of its own,
 * under the first.
 */
static void
perfmon_stat_print_human(struct perfmon_stat *stat,
                         const struct perfmon_stat_row *row, unsigned int e)
{
    const struct perfmon_stat_ev *cev = &stat->evs[e];
    bool counted = perfmon_stat_counted(stat, row, e);
    bool metric, trailer = counted && (stat->repeat > 1
                                       || row->share[e] < 10000);
    struct perfmon_cmd_line line;
    struct perfmon_stat_metric m;
    char value[40], rsd[16], share[16];
    const char *unit;
    size_t col;

    perfmon_cmd_line_init(&line);
    perfmon_stat_add_prefix(stat, row, &line);

    if (counted) {
        perfmon_stat_fmt_value(stat, e, row->mean[e], value, sizeof(value),
                               &unit);
        perfmon_cmd_line_add(&line, "%18s %-4s %-32s", value, unit,
                             cev->parsed.spec);
    } else {
        perfmon_cmd_line_add(&line, "%18s      %-25s",
                             (cev->state == PERFMON_STAT_EV_NOT_SUPPORTED)
                             ? "<not supported>" : "<not counted>",
                             cev->parsed.spec);
    }

    if (cev->state == PERFMON_STAT_EV_NOT_COUNTED) {
        struct perfmon_dev_info info = { .nr_pmcs = 0 };

        if (cev->full_dev != NULL) {
            perfmon_dev_get_info(cev->full_dev, &info);
        }

        perfmon_cmd_line_add(&line, " (all %u counters of %s are reserved)",
                             info.nr_pmcs, (cev->full_dev != NULL)
                                           ? cev->full_dev->name
                                           : "the device");
    }

    col = line.len;
    metric = perfmon_stat_metric_nth(stat, row, e, 0, &m);

    if (metric) {
        perfmon_stat_add_metric_human(&line, &m);
    } else if (trailer) {
        perfmon_cmd_line_add(&line, "%35s", "");
    }

    if (counted && stat->repeat > 1) {
        num_fmt_ratio(rsd, sizeof(rsd), row->rsd[e], 100, 2, true);
        perfmon_cmd_line_add(&line, "  ( +-%6s%% )", rsd);
    }

    if (counted && row->share[e] < 10000) {
        num_fmt_ratio(share, sizeof(share), row->share[e], 100, 2, true);
        perfmon_cmd_line_add(&line, "  (%s%%)", share);
    }

    perfmon_cmd_line_print(&line);

    for (unsigned int n = 1; metric
         && perfmon_stat_metric_nth(stat, row, e, n, &m); n++) {
        perfmon_stat_add_prefix(stat, row, &line);
        perfmon_cmd_line_add(&line, "%*s", (int)(col - line.len), "");
        perfmon_stat_add_metric_human(&line, &m);
        perfmon_cmd_line_print(&line);
    }
}

/*
 * What was counted, as perf's header names it: the command (and the CPUs
 * or threads counted while it ran), or without one the threads or CPUs.
 */
static void
perfmon_stat_add_target(const struct perfmon_stat *stat,
                        struct perfmon_cmd_line *line)
{
    if (stat->cmd_argc == 0) {
        if (perfmon_stat_thread_mode(stat)) {
            perfmon_cmd_line_add(line, "thread id '%s'", stat->tid_list);
        } else if (stat->all_cpus) {
            perfmon_cmd_line_add(line, "'system wide' (%u CPUs)",
                                 stat->nr_slots);
        } else {
            perfmon_cmd_line_add(line, "'CPU(s) %s'", stat->cpu_list);
        }

        return;
    }

    perfmon_cmd_line_add(line, "'");

    for (int i = 0; i < stat->cmd_argc; i++) {
        perfmon_cmd_line_add(line, "%s%s", (i == 0) ? "" : " ",
                             stat->cmd_argv[i]);
    }

    perfmon_cmd_line_add(line, "'");

    if (perfmon_stat_thread_mode(stat)) {
        perfmon_cmd_line_add(line, " (thread id %s)", stat->tid_list);
    } else if (stat->all_cpus) {
        perfmon_cmd_line_add(line, " (system wide, %u CPUs)",
                             stat->nr_slots);
    } else if (stat->cpu_mode) {
        perfmon_cmd_line_add(line, " (CPUs %s)", stat->cpu_list);
    }
}

static void
perfmon_stat_print_header(struct perfmon_stat *stat)
{
    struct perfmon_cmd_line line;

    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, " Performance counter stats for ");
    perfmon_stat_add_target(stat, &line);

    if (stat->runs_done < stat->repeat) {
        perfmon_cmd_line_add(&line, " (%u of %u runs)", stat->runs_done,
                             stat->repeat);
    } else if (stat->repeat > 1) {
        perfmon_cmd_line_add(&line, " (%u runs)", stat->runs_done);
    }

    perfmon_cmd_line_add(&line, ":");
    kprintf("\n");
    perfmon_cmd_line_print(&line);
    kprintf("\n");
}

/*
 * Why an event the devices know was refused, once, in a line after the
 * counts (perf prints <not supported> alone; here the reason is known).
 */
static void
perfmon_stat_print_reason(const struct perfmon_stat *stat,
                          const struct perfmon_stat_ev *cev)
{
    struct perfmon_dev *dev = cev->dev;
    const char *why = NULL;
    uint64_t raw = cev->id;

    /* Said once for all events (perfmon_stat_print). */
    if (cev->error == -EBUSY) {
        return;
    }

    if (dev == NULL && cev->generic >= 0) {
        dev = perfmon_resolve_dev_for(cev->parsed.name);
    }

    if (dev != NULL && (cev->generic < 0
                        || perfmon_dev_translate(dev, (unsigned int)cev->generic,
                                                 &raw) == 0)) {
        why = perfmon_dev_why_not(dev, raw);
    }

    if (why != NULL) {
        kprintf("perfmon: stat: %s: not counted: %s\n", cev->parsed.spec,
                why);
    } else if (cev->group >= 0 && cev->error == -EINVAL
               && &stat->evs[cev->group] != cev) {
        kprintf("perfmon: stat: %s: not counted: its group's first event, "
                "%s, is not\n", cev->parsed.spec,
                stat->evs[cev->group].parsed.spec);
    } else if (cev->error != 0 && cev->error != -ENOENT) {
        kprintf("perfmon: stat: %s: not counted: %s\n", cev->parsed.spec,
                error_str(cev->error));
    }
}

/*
 * An event attached but never given a counter: more events than counters
 * took turns and the command ended first, or its group needs more
 * counters at once than pinned events leave free.
 */
static void
perfmon_stat_print_never_ran(const struct perfmon_stat *stat, unsigned int e)
{
    const struct perfmon_stat_ev *cev = &stat->evs[e];
    unsigned int n = 0;

    for (unsigned int i = 0; i < stat->nr_events; i++) {
        n += (cev->group >= 0 && stat->evs[i].group == cev->group);
    }

    if (n > 1) {
        kprintf("perfmon: stat: %s: never held a counter: its group needs %u "
                "at once (pinned events hold some, or it ended first)\n",
                cev->parsed.spec, n);
    } else {
        kprintf("perfmon: stat: %s: never held a counter: the events took "
                "turns and the command ended first\n", cev->parsed.spec);
    }
}

static void
perfmon_stat_print_footer(struct perfmon_stat *stat)
{
    struct perfmon_cmd_line line;
    uint64_t mean, rsd;
    char secs[40], rsd_buf[16];

    num_stats(stat->elapsed_ns, stat->runs_done, &mean, &rsd);
    num_fmt_ratio(secs, sizeof(secs), mean, 1000000000ULL, 9, true);
    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "%18s seconds time elapsed", secs);

    if (stat->repeat > 1) {
        num_fmt_ratio(rsd_buf, sizeof(rsd_buf), rsd, 100, 2, true);
        perfmon_cmd_line_add(&line, "    ( +- %5s%% )", rsd_buf);
    }

    kprintf("\n");
    perfmon_cmd_line_print(&line);
    kprintf("\n");
}

/* One row of one event, in the format chosen. */
static void
perfmon_stat_print_event(struct perfmon_stat *stat,
                         const struct perfmon_stat_row *row, unsigned int e)
{
    if (stat->json) {
        perfmon_stat_print_json(stat, row, e);
    } else if (stat->sep[0] != '\0') {
        perfmon_stat_print_csv(stat, row, e);
    } else {
        perfmon_stat_print_human(stat, row, e);
    }
}

/*
 * The rows of the runs done, on the heap: one per slot with -A, else one;
 * rows[*nr_rowsp] is the sum over the slots.  Each row is computed once (a
 * row's metrics read its other events).  NULL: out of memory, said.
 */
static struct perfmon_stat_row *
perfmon_stat_rows(struct perfmon_stat *stat, unsigned int *nr_rowsp,
                  size_t *sizep)
{
    size_t scratch_size = sizeof(uint64_t) * PERFMON_STAT_MAX_RUNS;
    unsigned int nr_rows = perfmon_stat_per_slot(stat) ? stat->nr_slots : 1;
    size_t rows_size = sizeof(struct perfmon_stat_row) * (nr_rows + 1);
    struct perfmon_stat_row *rows;
    uint64_t *scratch;

    rows = kmem_alloc(rows_size);
    scratch = kmem_alloc(scratch_size);

    if ((rows == NULL) || (scratch == NULL)) {
        kmem_free(rows, rows_size);
        kmem_free(scratch, scratch_size);
        kprintf("perfmon: stat: out of memory\n");
        return NULL;
    }

    for (unsigned int r = 0; r < nr_rows; r++) {
        perfmon_stat_row_compute(stat, &rows[r],
                                 perfmon_stat_per_slot(stat) ? (int)r : -1,
                                 scratch);
    }

    if (perfmon_stat_per_slot(stat)) {
        perfmon_stat_row_compute(stat, &rows[nr_rows], -1, scratch);
    } else {
        rows[nr_rows] = rows[0];
    }

    kmem_free(scratch, scratch_size);
    *nr_rowsp = nr_rows;
    *sizep = rows_size;
    return rows;
}

int
perfmon_stat_print_interval(struct perfmon_stat *stat, uint64_t time_ns)
{
    struct perfmon_stat_row *rows;
    unsigned int nr_rows;
    size_t rows_size;

    rows = perfmon_stat_rows(stat, &nr_rows, &rows_size);

    if (rows == NULL) {
        return SHELL_ERR_REPORTED;
    }

    stat->time_ns = time_ns;

    if (stat->nr_intervals == 1 && !stat->json && stat->sep[0] == '\0') {
        kprintf("#           time %s            counts unit events\n",
                stat->per_cpu ? "CPU        "
                : stat->per_thread ? "thread                " : "");
    }

    for (unsigned int e = 0; e < stat->nr_events; e++) {
        for (unsigned int r = 0; r < nr_rows; r++) {
            perfmon_stat_print_event(stat, &rows[r], e);
        }
    }

    kmem_free(rows, rows_size);
    return 0;
}

/*
 * After the intervals, in perf's default format only: how many, and what
 * reading them cost, which is also how far apart a row's first and last
 * events were read.
 */
static void
perfmon_stat_print_interval_cost(const struct perfmon_stat *stat)
{
    char us[24];

    if (stat->json || stat->sep[0] != '\0') {
        return;
    }

    num_fmt_ratio(us, sizeof(us), stat->read_max_ns, 1000, 1, true);
    kprintf("# %u intervals of %llu ms; reading the counters took at most "
            "%s us each (the spread of a row's window)\n",
            stat->nr_intervals, (unsigned long long)stat->interval_ms, us);
}

/*
 * -t: each thread that exited while counted; its row ends with what it
 * counted until then.
 */
static void
perfmon_stat_print_exited(const struct perfmon_stat *stat)
{
    for (unsigned int t = 0; t < stat->nr_threads; t++) {
        if (thread_exited(stat->threads[t])) {
            kprintf("perfmon: stat: thread %u (%s) exited while counted: its "
                    "counts are until then\n", thread_id(stat->threads[t]),
                    thread_name(stat->threads[t]));
        }
    }
}

int
perfmon_stat_print(struct perfmon_stat *stat, bool interrupted)
{
    struct perfmon_stat_row *rows, *row;
    bool csv = (stat->sep[0] != '\0') || stat->json, hook_off = false;
    unsigned int nr_rows;
    size_t rows_size;

    rows = perfmon_stat_rows(stat, &nr_rows, &rows_size);

    if (rows == NULL) {
        return SHELL_ERR_REPORTED;
    }

    row = &rows[nr_rows];

    /* -I printed its rows as they came: the totals are their sums. */
    if (stat->interval_ms != 0) {
        perfmon_stat_print_interval_cost(stat);
    } else {
        if (!csv) {
            perfmon_stat_print_header(stat);
        }

        for (unsigned int e = 0; e < stat->nr_events; e++) {
            for (unsigned int r = 0; r < nr_rows; r++) {
                perfmon_stat_print_event(stat, &rows[r], e);
            }
        }

        if (!csv) {
            perfmon_stat_print_footer(stat);
        }
    }

    for (unsigned int e = 0; e < stat->nr_events; e++) {
        if (stat->evs[e].state == PERFMON_STAT_EV_NOT_SUPPORTED) {
            perfmon_stat_print_reason(stat, &stat->evs[e]);
            hook_off |= (stat->evs[e].error == -EBUSY);
        } else if (!perfmon_stat_counted(stat, row, e)
                   && stat->evs[e].state == PERFMON_STAT_EV_OK) {
            perfmon_stat_print_never_ran(stat, e);
        }
    }

    perfmon_stat_print_exited(stat);

    if (hook_off) {
        kprintf("perfmon: stat: thread events are refused while "
                "perfmon.hook=off (%s): count CPUs with -a\n",
                error_str(-EBUSY));
    }

    if (interrupted && stat->repeat > 1) {
        kprintf("perfmon: stat: interrupted: the counts are the means of %u "
                "of %u runs%s\n", stat->runs_done, stat->repeat,
                stat->partial ? " (the first run, unfinished)"
                              : " (the unfinished run left out)");
    } else if (interrupted) {
        kprintf("perfmon: stat: interrupted (the counts until then)\n");
    }

    kmem_free(rows, rows_size);
    return 0;
}
