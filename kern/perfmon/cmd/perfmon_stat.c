/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon stat`, modelled on Linux `perf stat`: run a shell command in a
 * new thread and print what it counted, per thread (following it across
 * CPUs) or per CPU (-a, -C), summed or per CPU (-A), once or repeated
 * (-r), in perf's default or CSV-like (-x) format, with perf's derived
 * metrics.  Everything a run creates (the thread, the events and their
 * counters) is released before the command returns, whatever happened.
 * Event lists are parsed by kern/perfmon/cmd/perfmon_parse.c.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "kern/clock.h"
#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/num.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_parse.h"
#include "kern/perfmon/cmd/perfmon_resolve.h"
#include "kern/perfmon/cmd/perfmon_stat.h"
#include "kern/perfmon/cmd/perfmon_stat_i.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/string.h"
#include "kern/thread.h"

const char perfmon_stat_usage[] =
    "usage: perfmon stat [-e EVENTS] [-M METRICS] [-a | -C CPUS | -t TIDS] "
    "[-A | --per-thread] [-i] [-r N] [-x SEP | -j] "
    "[-I MS [--interval-count N]] [--timeout MS] [--] [COMMAND [ARGS...]]\n"
    "  (no COMMAND: count the CPUs or threads until Ctrl-C or --timeout "
    "MS)\n"
    "  -e EVENTS  comma-separated names or aliases from 'perfmon list', raw "
    "codes rHEX,\n"
    "             each with optional modifiers :u :k (default both) :D "
    "(pinned); groups\n"
    "             {a,b}[:mods] count together; -e may repeat; the CPU "
    "model's events by\n"
    "             name, any case; cpu/event=0xNN,umask=0xNN,cmask=N,inv,"
    "edge,name=NAME/\n"
    "  -M METRICS comma-separated metrics from 'perfmon list metrics', each "
    "counted as a group\n"
    "  -a         count on all CPUs instead of the thread\n"
    "  -C CPUS    count on these CPUs, e.g. 0,2-3\n"
    "  -A         one row per CPU instead of the sum (with -a or -C)\n"
    "  -t TIDS    count these running threads (ids as 'threads' shows "
    "them, e.g. 9,12);\n"
    "             --per-thread: one row each (a command run with a "
    "trailing & prints its id)\n"
    "  -i         the command's thread only, not the threads it creates\n"
    "  -r N       run N times (1 to " STRINGIFY(PERFMON_STAT_MAX_RUNS)
    "): mean and relative deviation\n"
    "  -x SEP     machine-readable: [CPU,]value,unit,event,[dev%,]time ns,"
    "percent,metric,metric unit\n"
    "  -j         one JSON object per line, in perf stat's field names\n"
    "  -I MS      the counts of every MS ms (10 or more), a time column "
    "first;\n"
    "             --interval-count N: N of them, without a COMMAND\n"
    "             (long forms: --event= --metrics= --all-cpus --cpu= "
    "--no-aggr --no-inherit\n"
    "             --repeat= --field-separator= --json --interval-print= "
    "--tid=)\n";

/* Long options without a letter of their own. */
#define PERFMON_STAT_OPT_INTERVAL_COUNT  0x100
#define PERFMON_STAT_OPT_TIMEOUT         0x101
#define PERFMON_STAT_OPT_PER_THREAD      0x102

/* How often counting -t threads without a command looks for their exit. */
#define PERFMON_STAT_EXIT_POLL_MS        20

/* The shortest -I (perf's). */
#define PERFMON_STAT_INTERVAL_MIN_MS     10

/* ---- perfmon stat: options ---------------------------------------------- */

/* One line saying what is wrong, then the usage. */
#define perfmon_stat_error(...) \
    perfmon_cmd_error("stat", perfmon_stat_usage, __VA_ARGS__)

/* Find how to count a parsed event; print why not for an unknown name. */
static int
perfmon_stat_resolve(struct perfmon_stat_ev *ev)
{
    struct perfmon_resolved cev;
    int error = perfmon_resolve("stat", &ev->parsed, &cev);

    if (error) {
        return error;
    }

    ev->id = cev.id;
    ev->flags = cev.flags;
    ev->dev = cev.dev;
    ev->generic = cev.generic;
    ev->state = cev.supported ? PERFMON_STAT_EV_OK
                              : PERFMON_STAT_EV_NOT_SUPPORTED;
    ev->full_dev = NULL;
    return 0;
}

int
perfmon_stat_add_events(struct perfmon_stat *stat, const char *list)
{
    struct perfmon_parse_event parsed[PERFMON_PARSE_MAX_EVENTS];
    struct perfmon_parse_error err;
    unsigned int first = stat->nr_events;
    int nr;

    nr = perfmon_parse_events(list, parsed, PERFMON_PARSE_MAX_EVENTS - first,
                              &err);

    if (nr < 0) {
        kprintf("perfmon: stat: bad event list: %s%s%s%s", err.reason,
                (err.item[0] != '\0') ? " ('" : "", err.item,
                (err.item[0] != '\0') ? "')" : "");

        if (err.pos != 0) {
            kprintf(" at character %u of '%s'", err.pos, list);
        }

        kprintf("\n%s", perfmon_stat_usage);
        return SHELL_ERR_REPORTED;
    }

    for (unsigned int i = 0; i < (unsigned int)nr; i++) {
        struct perfmon_stat_ev *ev = &stat->evs[first + i];
        int error;

        memset(ev, 0, sizeof(*ev));
        ev->parsed = parsed[i];
        ev->group = (parsed[i].group < 0) ? -1
                    : (int)first + parsed[i].group;
        error = perfmon_stat_resolve(ev);

        if (error) {
            return error;
        }
    }

    stat->nr_events += (unsigned int)nr;
    return 0;
}

static int
perfmon_stat_default_events(struct perfmon_stat *stat)
{
    static const char *const hw_events[] = {
        "cycles", "instructions", "branches", "branch-misses",
    };
    char list[PERFMON_PARSE_LIST_MAX + 1];
    size_t len;

    /* perf shows cpu-clock for CPUs, task-clock for a task. */
    len = strlcpy(list, stat->cpu_mode ? "cpu-clock" : "task-clock",
                  sizeof(list));
    len += strlcpy(&list[len], ",context-switches,cpu-migrations",
                   sizeof(list) - len);

    for (size_t i = 0; i < ARRAY_SIZE(hw_events); i++) {
        if (perfmon_resolve_dev_for(hw_events[i]) != NULL) {
            len += (size_t)ksnprintf(&list[len], sizeof(list) - len, ",%s",
                                     hw_events[i]);
        }
    }

    return perfmon_stat_add_events(stat, list);
}

static const struct perfmon_cmd_longopt perfmon_stat_longopts[] = {
    { "event", 'e', true },
    { "metrics", 'M', true },
    { "all-cpus", 'a', false },
    { "no-aggr", 'A', false },
    { "cpu", 'C', true },
    { "repeat", 'r', true },
    { "field-separator", 'x', true },
    { "no-inherit", 'i', false },
    { "json", 'j', false },
    { "interval-print", 'I', true },
    { "interval-count", PERFMON_STAT_OPT_INTERVAL_COUNT, true },
    { "timeout", PERFMON_STAT_OPT_TIMEOUT, true },
    { "tid", 't', true },
    { "per-thread", PERFMON_STAT_OPT_PER_THREAD, false },
    { NULL, 0, false },
};

/* A number of milliseconds from least to PERFMON_CMD_TIME_MAX_MS. */
static int
perfmon_stat_parse_ms(const char *opt, const char *val, uint64_t least,
                      uint64_t *msp)
{
    if ((cmdline_parse_u64(val, msp) != 0) || (*msp < least)
        || (*msp > PERFMON_CMD_TIME_MAX_MS)) {
        return perfmon_stat_error("%s: '%s' is not a number of ms from %llu "
                                  "to %llu", opt, val,
                                  (unsigned long long)least,
                                  PERFMON_CMD_TIME_MAX_MS);
    }

    return 0;
}

static int
perfmon_stat_option(void *arg, int opt, const char *val)
{
    struct perfmon_stat *stat = arg;
    uint64_t n;

    switch (opt) {
    case 'e':
        return perfmon_stat_add_events(stat, val);
    case 'M':
        return perfmon_stat_metrics_add(stat, val);
    case 'a':
        stat->all_cpus = true;
        return 0;
    case 'A':
        stat->per_cpu = true;
        return 0;
    case 'C':
        stat->cpu_list = val;
        return 0;
    case 'i':
        stat->no_inherit = true;
        return 0;
    case 'r':
        if ((cmdline_parse_u64(val, &n) != 0) || (n < 1)
            || (n > PERFMON_STAT_MAX_RUNS)) {
            return perfmon_stat_error("-r: '%s' is not a number from 1 "
                                      "to " STRINGIFY(PERFMON_STAT_MAX_RUNS),
                                      val);
        }

        stat->repeat = (unsigned int)n;
        return 0;
    case 'x':
        if ((*val == '\0') || (strlen(val) > PERFMON_STAT_SEP_MAX)) {
            return perfmon_stat_error("-x: the separator '%s' must have "
                                      "1 to " STRINGIFY(PERFMON_STAT_SEP_MAX)
                                      " characters", val);
        }

        strlcpy(stat->sep, val, sizeof(stat->sep));
        return 0;
    case 'j':
        stat->json = true;
        return 0;
    case 'I':
        return perfmon_stat_parse_ms("-I", val, PERFMON_STAT_INTERVAL_MIN_MS,
                                     &stat->interval_ms);
    case PERFMON_STAT_OPT_INTERVAL_COUNT:
        if ((cmdline_parse_u64(val, &n) != 0) || (n < 1) || (n > UINT32_MAX)) {
            return perfmon_stat_error("--interval-count: '%s' is not a "
                                      "number from 1 to %u", val, UINT32_MAX);
        }

        stat->interval_count = (unsigned int)n;
        return 0;
    case PERFMON_STAT_OPT_TIMEOUT:
        return perfmon_stat_parse_ms("--timeout", val, 1, &stat->timeout_ms);
    case 't':
        stat->tid_list = val;
        return 0;
    case PERFMON_STAT_OPT_PER_THREAD:
        stat->per_thread = true;
        return 0;
    default:
        return 0;
    }
}

/* The device that counts an event (NULL: none here). */
static struct perfmon_dev *
perfmon_stat_ev_dev(const struct perfmon_stat_ev *cev)
{
    return perfmon_resolve_event_dev(cev->dev, cev->flags, cev->parsed.name);
}

/* A mask of hw ids as a list: "1", "0,2,3", "fixed 0". */
static void
perfmon_stat_fmt_counters(uint64_t mask, char *buf, size_t size)
{
    size_t len = 0;

    buf[0] = '\0';

    for (unsigned int i = 0; i < 64 && len < size; i++) {
        if (mask & (1ULL << i)) {
            len += (size_t)ksnprintf(&buf[len], size - len, "%s%s%u",
                                     (len == 0) ? "" : ",",
                                     (i >= 32) ? "fixed " : "", i % 32);
        }
    }
}

/*
 * The group led by evs[l] on dev: whether its members can hold a counter
 * each at once under the counters each may use; if not, one line naming
 * the members that may use only some of dev's counters.
 */
static int
perfmon_stat_check_fit(struct perfmon_stat *stat, unsigned int l,
                       struct perfmon_dev *dev)
{
    uint64_t masks[PERFMON_PARSE_MAX_EVENTS], all = 0;
    struct perfmon_cmd_line line;
    unsigned int n = 0, idx[PERFMON_PARSE_MAX_EVENTS];
    char list[64];

    for (unsigned int e = l; e < stat->nr_events; e++) {
        const struct perfmon_stat_ev *ev = &stat->evs[e];
        uint64_t raw = ev->id;

        if (ev->group != (int)l || ev->state != PERFMON_STAT_EV_OK
            || (ev->generic >= 0
                && perfmon_dev_translate(dev, (unsigned int)ev->generic,
                                         &raw) != 0)
            || perfmon_dev_counters(dev, raw, ev->flags & PERFMON_EF_MODE,
                                    &masks[n]) != 0) {
            continue;
        }

        all |= masks[n];
        idx[n++] = e;
    }

    if (perfmon_counters_fit(masks, n)) {
        return 0;
    }

    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "the group of '%s' cannot count together on "
                         "%s:", stat->evs[l].parsed.spec, dev->name);

    for (unsigned int i = 0; i < n; i++) {
        if (masks[i] != all) {
            perfmon_stat_fmt_counters(masks[i], list, sizeof(list));
            perfmon_cmd_line_add(&line, " '%s' counts only on counter%s %s;",
                                 stat->evs[idx[i]].parsed.spec,
                                 (masks[i] & (masks[i] - 1)) ? "s" : "",
                                 list);
        }
    }

    perfmon_cmd_line_add(&line, " split the group");
    return perfmon_stat_error("%s", line.buf);
}

/*
 * Groups: counted by one device, no larger than its counters, and
 * placeable under the counters each member may use (it could never run
 * all together otherwise).
 */
static int
perfmon_stat_check_groups(struct perfmon_stat *stat)
{
    for (unsigned int l = 0; l < stat->nr_events; l++) {
        struct perfmon_dev *dev = perfmon_stat_ev_dev(&stat->evs[l]);
        struct perfmon_dev_info info;
        unsigned int n = 0;

        if (stat->evs[l].group != (int)l || dev == NULL) {
            continue;
        }

        for (unsigned int e = l; e < stat->nr_events; e++) {
            struct perfmon_dev *edev;

            if (stat->evs[e].group != (int)l) {
                continue;
            }

            edev = perfmon_stat_ev_dev(&stat->evs[e]);
            n++;

            if (edev != NULL && edev != dev) {
                return perfmon_stat_error("a group's events are counted by "
                                          "one device: '%s' is %s's, '%s' "
                                          "%s's", stat->evs[l].parsed.spec,
                                          dev->name, stat->evs[e].parsed.spec,
                                          edev->name);
            }
        }

        if (perfmon_dev_get_info(dev, &info) == 0 && n > info.nr_pmcs) {
            return perfmon_stat_error("the group of '%s' has %u events, but "
                                      "%s has %u counters",
                                      stat->evs[l].parsed.spec, n, dev->name,
                                      info.nr_pmcs);
        }

        if (perfmon_stat_check_fit(stat, l, dev) != 0) {
            return SHELL_ERR_REPORTED;
        }
    }

    return 0;
}

static int
perfmon_stat_select_cpus(struct perfmon_stat *stat)
{
    uint64_t mask;
    int error;

    error = perfmon_cmd_cpus("stat", perfmon_stat_usage, stat->all_cpus,
                             stat->cpu_list, &mask);

    if (error) {
        return error;
    }

    stat->cpu_mode = stat->all_cpus || (stat->cpu_list != NULL);

    if (stat->per_cpu && !stat->cpu_mode) {
        return perfmon_stat_error("-A needs -a or -C");
    }

    if (stat->tid_list != NULL && stat->cpu_mode) {
        return perfmon_stat_error("-t and %s exclude each other",
                                  stat->all_cpus ? "-a" : "-C");
    }

    if (stat->per_thread && stat->tid_list == NULL) {
        return perfmon_stat_error("--per-thread needs -t");
    }

    if (stat->tid_list != NULL) {
        error = perfmon_cmd_threads("stat", perfmon_stat_usage,
                                    stat->tid_list, stat->threads,
                                    &stat->nr_threads);
        stat->nr_slots = stat->nr_threads;
        return error;
    }

    if (!stat->cpu_mode) {
        stat->nr_slots = 1;
        return 0;
    }

    stat->nr_slots = 0;

    for (unsigned int cpu = 0; cpu < PERFMON_PARSE_MAX_CPUS; cpu++) {
        if (mask & (1ULL << cpu)) {
            stat->cpus[stat->nr_slots++] = cpu;
        }
    }

    return 0;
}

/*
 * The options that exclude each other, and what counting without a
 * command needs: CPUs to count (the final summary comes at Ctrl-C or
 * --timeout).  A command ends itself: --timeout and --interval-count
 * would have to stop it, and are refused with one.
 */
static int
perfmon_stat_check_modes(const struct perfmon_stat *stat)
{
    if (stat->json && (stat->sep[0] != '\0')) {
        return perfmon_stat_error("-j and -x exclude each other");
    }

    if ((stat->interval_ms != 0) && (stat->repeat > 1)) {
        return perfmon_stat_error("-I and -r exclude each other");
    }

    if ((stat->interval_count != 0) && (stat->interval_ms == 0)) {
        return perfmon_stat_error("--interval-count needs -I");
    }

    if (stat->cmd_argc == 0 && !stat->cpu_mode
        && !perfmon_stat_thread_mode(stat)) {
        return perfmon_stat_error("missing command (or -a, -C or -t to "
                                  "count until Ctrl-C)");
    }

    if (stat->cmd_argc == 0 && stat->repeat > 1) {
        return perfmon_stat_error("-r needs a command to repeat");
    }

    if (stat->cmd_argc != 0 && stat->timeout_ms != 0) {
        return perfmon_stat_error("--timeout counts without a command (a "
                                  "command ends itself, or on Ctrl-C)");
    }

    if (stat->cmd_argc != 0 && stat->interval_count != 0) {
        return perfmon_stat_error("--interval-count counts without a "
                                  "command (a command ends itself, or on "
                                  "Ctrl-C)");
    }

    return 0;
}

static int
perfmon_stat_parse(struct perfmon_stat *stat, int argc, char **argv)
{
    struct perfmon_cmd_opts opts;
    int error;

    stat->repeat = 1;
    perfmon_cmd_opts_init(&opts, argc, argv, 2, "e:M:aAC:r:x:ijI:t:",
                          perfmon_stat_longopts);

    error = perfmon_cmd_options(&opts, "stat", perfmon_stat_usage,
                                perfmon_stat_option, stat);

    if (error) {
        return error;
    }

    error = perfmon_stat_select_cpus(stat);

    if (error) {
        return error;
    }

    error = perfmon_cmd_command("stat", perfmon_stat_usage, argc, argv,
                                opts.index, &stat->cmd_argc,
                                &stat->cmd_argv);

    if (error == 0) {
        error = perfmon_stat_check_modes(stat);
    }

    if (error) {
        return error;
    }

    if (stat->nr_events == 0) {
        error = perfmon_stat_default_events(stat);
    }

    return (error == 0) ? perfmon_stat_check_groups(stat) : error;
}

/* ---- perfmon stat: counting --------------------------------------------- */

static struct perfmon_event *
perfmon_stat_pev(struct perfmon_stat *stat, unsigned int ev, unsigned int slot)
{
    return &stat->pevs[ev * stat->nr_slots + slot];
}

static void
perfmon_stat_detach_event(struct perfmon_stat *stat, unsigned int ev)
{
    for (unsigned int s = 0; s < stat->nr_slots; s++) {
        struct perfmon_event *pev = perfmon_stat_pev(stat, ev, s);

        if (perfmon_event_attached(pev)) {
            perfmon_event_detach(pev);
        }
    }
}

/*
 * Every event is attached disabled, and enabled with the others in one
 * step when the command starts (perfmon_stat_run); a thread's also counts
 * the threads it creates unless -i.
 */
static unsigned int
perfmon_stat_flags(const struct perfmon_stat *stat)
{
    return PERFMON_EF_DISABLED
           | ((stat->cpu_mode || stat->no_inherit) ? 0 : PERFMON_EF_INHERIT);
}

/* Whether stat enables the events itself: on CPUs and -t threads. */
static bool
perfmon_stat_enables(const struct perfmon_stat *stat)
{
    return stat->cpu_mode || perfmon_stat_thread_mode(stat);
}

/*
 * Attach event ev to every slot, or to none: an event counted on some of
 * its CPUs only would print a misleading sum.
 */
static void
perfmon_stat_attach_event(struct perfmon_stat *stat, unsigned int ev)
{
    struct perfmon_stat_ev *cev = &stat->evs[ev];
    int error = 0;

    if (cev->state != PERFMON_STAT_EV_OK) {
        return;
    }

    for (unsigned int s = 0; (s < stat->nr_slots) && (error == 0); s++) {
        struct perfmon_event *pev = perfmon_stat_pev(stat, ev, s);

        error = perfmon_event_init(pev, cev->id,
                                   cev->flags | perfmon_stat_flags(stat));

        if ((error == 0) && (cev->dev != NULL)) {
            error = perfmon_event_set_dev(pev, cev->dev);
        }

        /* The group's first event leads it, on each slot. */
        if ((error == 0) && (cev->group >= 0)) {
            error = perfmon_event_set_group(pev,
                                            perfmon_stat_pev(stat,
                                                (unsigned int)cev->group, s));
        }

        if (error == 0) {
            error = stat->cpu_mode
                    ? perfmon_event_attach_cpu(pev, stat->cpus[s])
                    : perfmon_event_attach(pev,
                                           perfmon_stat_thread_mode(stat)
                                           ? stat->threads[s]
                                           : stat->runner.thread);
        }
    }

    if (error == 0) {
        return;
    }

    perfmon_stat_detach_event(stat, ev);
    cev->error = error;

    if (error == -EAGAIN) {
        cev->state = PERFMON_STAT_EV_NOT_COUNTED;
        cev->full_dev = perfmon_stat_ev_dev(cev);
    } else {
        cev->state = PERFMON_STAT_EV_NOT_SUPPORTED;
    }
}

/* The events attached in this run, for enabling and disabling at once. */
static unsigned int
perfmon_stat_collect(struct perfmon_stat *stat)
{
    unsigned int n = 0;

    for (unsigned int e = 0; e < stat->nr_events; e++) {
        for (unsigned int s = 0; s < stat->nr_slots; s++) {
            struct perfmon_event *pev = perfmon_stat_pev(stat, e, s);

            if (perfmon_event_attached(pev)) {
                stat->set[n++] = pev;
            }
        }
    }

    return n;
}

/* The counts of every event on every slot, CPU by CPU, into counts. */
static void
perfmon_stat_read(struct perfmon_stat *stat,
                  struct perfmon_stat_count *counts)
{
    for (unsigned int s = 0; s < stat->nr_slots; s++) {
        for (unsigned int e = 0; e < stat->nr_events; e++) {
            struct perfmon_stat_count *c;

            c = &counts[(size_t)e * stat->nr_slots + s];

            if (stat->evs[e].state == PERFMON_STAT_EV_OK) {
                c->value = perfmon_event_read_times(
                               perfmon_stat_pev(stat, e, s), &c->enabled,
                               &c->running);
            }
        }
    }
}

/*
 * One interval of -I: every event read, slot by slot, what each counted
 * since the last interval printed.  The reads follow each other: a row's
 * window spreads over the time they take, which read_max_ns keeps.  The
 * deltas of all intervals add up to the totals exactly.
 */
static void
perfmon_stat_interval(struct perfmon_stat *stat, uint64_t start,
                      uint64_t *lastp)
{
    size_t nr = (size_t)stat->nr_events * stat->nr_slots;
    uint64_t now = cpu_rdtsc(), read_ns;

    perfmon_stat_read(stat, stat->values);
    read_ns = tsc_cycles_to_ns(cpu_rdtsc() - now);
    stat->read_max_ns = MAX(stat->read_max_ns, read_ns);

    for (size_t i = 0; i < nr; i++) {
        struct perfmon_stat_count *c = &stat->values[i], *p = &stat->prev[i];
        struct perfmon_stat_count total = *c;

        c->value -= p->value;
        c->enabled -= p->enabled;
        c->running -= p->running;
        *p = total;
    }

    stat->elapsed_ns[0] = tsc_cycles_to_ns(now - *lastp);
    stat->runs_done = 1;
    stat->nr_intervals++;
    *lastp = now;
    perfmon_stat_print_interval(stat, tsc_cycles_to_ns(now - start));
}

/* -t: whether every thread named has exited (nothing left to count). */
static bool
perfmon_stat_threads_gone(const struct perfmon_stat *stat)
{
    for (unsigned int t = 0; t < stat->nr_threads; t++) {
        if (!thread_exited(stat->threads[t])) {
            return false;
        }
    }

    return perfmon_stat_thread_mode(stat);
}

/*
 * While the events count: until the command returns, or without one until
 * Ctrl-C, --timeout, the last of --interval-count intervals or (-t) the
 * exit of every thread, printing the intervals of -I on the way, at times
 * set from the start (they do not drift).  *lastp: the TSC time of the
 * last interval printed.
 */
static void
perfmon_stat_wait(struct perfmon_stat *stat, uint64_t start, uint64_t *lastp)
{
    bool cmd = (stat->cmd_argc != 0);
    uint64_t t0 = clock_get_time(), end = UINT64_MAX, next = UINT64_MAX;
    uint64_t k = 1;

    if (cmd && (stat->interval_ms == 0)) {
        return;
    }

    if (stat->timeout_ms != 0) {
        end = t0 + clock_ticks_from_ms(stat->timeout_ms);
    }

    if (stat->interval_ms != 0) {
        next = t0 + clock_ticks_from_ms(stat->interval_ms);
    }

    for (;;) {
        uint64_t deadline = MIN(next, end);
        bool ended;

        if (!cmd && perfmon_stat_thread_mode(stat)) {
            deadline = MIN(deadline, clock_get_time()
                           + clock_ticks_from_ms(PERFMON_STAT_EXIT_POLL_MS));
        }

        ended = cmd ? perfmon_cmd_runner_wait(&stat->runner, deadline)
                    : shell_wait_interrupt(deadline);

        if (ended || (clock_get_time() >= end)
            || (!cmd && perfmon_stat_threads_gone(stat))) {
            return;
        }

        if (clock_get_time() < next) {
            continue;
        }

        perfmon_stat_interval(stat, start, lastp);
        next = t0 + clock_ticks_from_ms(++k * stat->interval_ms);

        if ((stat->interval_count != 0)
            && (stat->nr_intervals >= stat->interval_count)) {
            return;
        }
    }
}

/*
 * One run: thread, events, gate, wait, counts, and everything released.
 * The events start together after the start time is taken and stop
 * together before the end time: on CPUs around the command (or the wait
 * without one), on its thread with its first and last instruction (the
 * runner enables them).  With -I the last, shorter interval is printed
 * too, unless --interval-count ended it.
 */
static int
perfmon_stat_run(struct perfmon_stat *stat, unsigned int run)
{
    bool cmd = (stat->cmd_argc != 0);
    uint64_t start, last, end;
    unsigned int nr;
    int error;

    if (cmd) {
        error = perfmon_cmd_runner_start(&stat->runner, "perfmon-stat",
                                         stat->cmd_argc, stat->cmd_argv);

        if (error) {
            kprintf("perfmon: stat: cannot create a thread: %s\n",
                    error_str(error));
            return SHELL_ERR_REPORTED;
        }
    }

    for (unsigned int e = 0; e < stat->nr_events; e++) {
        perfmon_stat_attach_event(stat, e);
    }

    nr = perfmon_stat_collect(stat);
    start = cpu_rdtsc();
    last = start;

    if (perfmon_stat_enables(stat)) {
        perfmon_events_enable(stat->set, nr);
    }

    if (cmd) {
        perfmon_cmd_runner_go(&stat->runner,
                              perfmon_stat_enables(stat) ? NULL : stat->set,
                              perfmon_stat_enables(stat) ? 0 : nr);
    }

    perfmon_stat_wait(stat, start, &last);

    if (cmd) {
        stat->cmd_result = perfmon_cmd_runner_join(&stat->runner);
    }

    if (perfmon_stat_enables(stat)) {
        perfmon_events_disable(stat->set, nr);
    }

    end = cpu_rdtsc();

    /* The totals, for what is said after the intervals: their sums. */
    if (stat->interval_ms != 0) {
        if ((stat->interval_count == 0)
            || (stat->nr_intervals < stat->interval_count)) {
            perfmon_stat_interval(stat, start, &last);
        }

        memcpy(stat->values, stat->prev, stat->values_size);
    } else {
        perfmon_stat_read(stat, perfmon_stat_value(stat, run, 0, 0));
    }

    stat->elapsed_ns[run] = tsc_cycles_to_ns(end - start);

    for (unsigned int e = 0; e < stat->nr_events; e++) {
        perfmon_stat_detach_event(stat, e);
    }

    stat->runs_done = run + 1;
    return 0;
}

/* ---- perfmon stat ------------------------------------------------------- */

static void
perfmon_stat_free(struct perfmon_stat *stat)
{
    if (stat->pevs != NULL) {
        kmem_free(stat->pevs, stat->pevs_size);
    }

    if (stat->values != NULL) {
        kmem_free(stat->values, stat->values_size);
    }

    if (stat->set != NULL) {
        kmem_free(stat->set, stat->set_size);
    }

    if (stat->prev != NULL) {
        kmem_free(stat->prev, stat->values_size);
    }

    perfmon_cmd_threads_put(stat->threads, stat->nr_threads);

    kmem_free(stat, sizeof(*stat));
}

int
perfmon_stat_main(int argc, char **argv)
{
    struct perfmon_stat *stat;
    bool interrupted = false;
    int error;

    stat = kmem_zalloc(sizeof(*stat));

    if (stat == NULL) {
        kprintf("perfmon: stat: out of memory\n");
        return SHELL_ERR_REPORTED;
    }

    error = perfmon_stat_parse(stat, argc, argv);

    if (error) {
        perfmon_stat_free(stat);
        return error;
    }

    stat->pevs_size = sizeof(*stat->pevs) * stat->nr_events * stat->nr_slots;
    stat->values_size = sizeof(*stat->values) * stat->repeat
                        * stat->nr_events * stat->nr_slots;
    stat->set_size = sizeof(*stat->set) * stat->nr_events * stat->nr_slots;
    stat->pevs = kmem_zalloc(stat->pevs_size);
    stat->values = kmem_zalloc(stat->values_size);
    stat->set = kmem_zalloc(stat->set_size);

    if (stat->interval_ms != 0) {
        stat->prev = kmem_zalloc(stat->values_size);
    }

    if ((stat->pevs == NULL) || (stat->values == NULL)
        || (stat->set == NULL)
        || ((stat->interval_ms != 0) && (stat->prev == NULL))) {
        kprintf("perfmon: stat: out of memory\n");
        perfmon_stat_free(stat);
        return SHELL_ERR_REPORTED;
    }

    for (unsigned int run = 0; run < stat->repeat; run++) {
        error = perfmon_stat_run(stat, run);

        if (error) {
            break;
        }

        /*
         * The flag latches until the next command starts: still set here.
         * With -r, the means are of complete runs: the interrupted one is
         * left out, unless it is all there is.  Without a command,
         * Ctrl-C is how counting ends.
         */
        if ((stat->cmd_argc != 0) && shell_interrupted()) {
            interrupted = true;

            if (stat->runs_done > 1) {
                stat->runs_done--;
            } else {
                stat->partial = true;
            }

            break;
        }

        if ((stat->cmd_result != 0) && (stat->repeat > 1)) {
            break;
        }
    }

    if (stat->runs_done > 0) {
        perfmon_stat_print(stat, interrupted);
    }

    if ((error == 0) && (interrupted || (stat->cmd_result != 0))) {
        error = SHELL_ERR_REPORTED;
    }

    perfmon_stat_free(stat);
    return error;
}
