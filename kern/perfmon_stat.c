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
 * Event lists are parsed by kern/perfmon_parse.c.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/num.h"
#include "kern/perfmon.h"
#include "kern/perfmon_cmd.h"
#include "kern/perfmon_parse.h"
#include "kern/perfmon_stat.h"
#include "kern/perfmon_stat_i.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/string.h"
#include "kern/thread.h"

static const char perfmon_stat_usage[] =
    "usage: perfmon stat [-e EVENTS] [-a | -C CPUS] [-A] [-r N] [-x SEP] "
    "[--] COMMAND [ARGS...]\n";

/* ---- perfmon stat: options ---------------------------------------------- */

/* One line saying what is wrong, then the usage. */
static int __format_printf(1, 2)
perfmon_stat_error(const char *fmt, ...)
{
    struct perfmon_cmd_line line;
    va_list ap;

    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "perfmon: stat: ");
    va_start(ap, fmt);
    perfmon_cmd_line_vadd(&line, fmt, ap);
    va_end(ap);
    perfmon_cmd_line_print(&line);
    kprintf("%s", perfmon_stat_usage);
    return SHELL_ERR_REPORTED;
}

/* Find how to count a parsed event; print why not for an unknown name. */
static int
perfmon_stat_resolve(struct perfmon_stat_ev *ev)
{
    struct perfmon_cmd_event cev;
    int error = perfmon_cmd_resolve("stat", &ev->parsed, &cev);

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

static int
perfmon_stat_add_events(struct perfmon_stat *stat, const char *list)
{
    struct perfmon_parse_event parsed[PERFMON_PARSE_MAX_EVENTS];
    struct perfmon_parse_error err;
    unsigned int first = stat->nr_events;
    int nr;

    nr = perfmon_parse_events(list, parsed, PERFMON_PARSE_MAX_EVENTS - first,
                              &err);

    if (nr < 0) {
        kprintf("perfmon: stat: bad event list: %s%s%s%s\n%s", err.reason,
                (err.item[0] != '\0') ? " ('" : "", err.item,
                (err.item[0] != '\0') ? "')" : "", perfmon_stat_usage);
        return SHELL_ERR_REPORTED;
    }

    for (unsigned int i = 0; i < (unsigned int)nr; i++) {
        struct perfmon_stat_ev *ev = &stat->evs[first + i];
        int error;

        memset(ev, 0, sizeof(*ev));
        ev->parsed = parsed[i];
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
        if (perfmon_cmd_dev_for(hw_events[i]) != NULL) {
            len += (size_t)ksnprintf(&list[len], sizeof(list) - len, ",%s",
                                     hw_events[i]);
        }
    }

    return perfmon_stat_add_events(stat, list);
}

/* The value of an option: the rest of its word, or the next word. */
static const char *
perfmon_stat_optarg(int argc, char **argv, int *ip, const char *rest)
{
    if (*rest != '\0') {
        return rest;
    }

    if (*ip + 1 >= argc) {
        return NULL;
    }

    (*ip)++;
    return argv[*ip];
}

static int
perfmon_stat_option(struct perfmon_stat *stat, int argc, char **argv, int *ip)
{
    const char *word = argv[*ip];
    char opt_buf[3] = "-?";

    for (const char *p = word + 1; *p != '\0'; p++) {
        const char *val;
        uint64_t n;
        int error;

        opt_buf[1] = *p;

        switch (*p) {
        case 'a':
            stat->all_cpus = true;
            continue;
        case 'A':
            stat->per_cpu = true;
            continue;
        case 'e':
        case 'C':
        case 'r':
        case 'x':
            break;
        default:
            return perfmon_stat_error("unknown option '%s'", opt_buf);
        }

        val = perfmon_stat_optarg(argc, argv, ip, p + 1);

        if (val == NULL) {
            return perfmon_stat_error("option %s needs an argument",
                                      opt_buf);
        }

        switch (*p) {
        case 'e':
            error = perfmon_stat_add_events(stat, val);

            if (error) {
                return error;
            }

            break;
        case 'C':
            stat->cpu_list = val;
            break;
        case 'r':
            if ((cmdline_parse_u64(val, &n) != 0) || (n < 1)
                || (n > PERFMON_STAT_MAX_RUNS)) {
                return perfmon_stat_error("-r: '%s' is not a number from 1 "
                                          "to " STRINGIFY(PERFMON_STAT_MAX_RUNS),
                                          val);
            }

            stat->repeat = (unsigned int)n;
            break;
        case 'x':
            if ((*val == '\0') || (strlen(val) > PERFMON_STAT_SEP_MAX)) {
                return perfmon_stat_error("-x: the separator '%s' must have "
                                          "1 to " STRINGIFY(PERFMON_STAT_SEP_MAX)
                                          " characters", val);
            }

            strlcpy(stat->sep, val, sizeof(stat->sep));
            break;
        }

        /* The value took the rest of the word. */
        return 0;
    }

    return 0;
}

static int
perfmon_stat_select_cpus(struct perfmon_stat *stat)
{
    unsigned int nr_cpus = cpu_count();
    uint64_t mask;
    int error;

    if (stat->all_cpus && (stat->cpu_list != NULL)) {
        return perfmon_stat_error("-a and -C %s exclude each other",
                                  stat->cpu_list);
    }

    stat->cpu_mode = stat->all_cpus || (stat->cpu_list != NULL);

    if (stat->per_cpu && !stat->cpu_mode) {
        return perfmon_stat_error("-A needs -a or -C");
    }

    if (!stat->cpu_mode) {
        stat->nr_slots = 1;
        return 0;
    }

    if (stat->all_cpus) {
        mask = (nr_cpus >= 64) ? UINT64_MAX : (1ULL << nr_cpus) - 1;
    } else {
        error = perfmon_parse_cpulist(stat->cpu_list, nr_cpus, &mask);

        if (error == -ERANGE) {
            kprintf("perfmon: stat: -C %s: this machine has CPUs 0 to %u\n%s",
                    stat->cpu_list, nr_cpus - 1, perfmon_stat_usage);
            return SHELL_ERR_REPORTED;
        } else if (error) {
            return perfmon_stat_error("-C %s: bad CPU list (expected e.g. "
                                      "0,2-3)", stat->cpu_list);
        }
    }

    stat->nr_slots = 0;

    for (unsigned int cpu = 0; cpu < PERFMON_PARSE_MAX_CPUS; cpu++) {
        if (mask & (1ULL << cpu)) {
            stat->cpus[stat->nr_slots++] = cpu;
        }
    }

    return 0;
}

static int
perfmon_stat_parse(struct perfmon_stat *stat, int argc, char **argv)
{
    int i, error;

    stat->repeat = 1;

    for (i = 2; i < argc; i++) {
        const char *word = argv[i];

        if (strcmp(word, "--") == 0) {
            i++;
            break;
        }

        if ((word[0] != '-') || (word[1] == '\0')) {
            break;
        }

        error = perfmon_stat_option(stat, argc, argv, &i);

        if (error) {
            return error;
        }
    }

    if (i >= argc) {
        return perfmon_stat_error("missing command");
    }

    if (shell_cmd_lookup(argv[i]) == NULL) {
        return perfmon_stat_error("unknown command '%s' (type 'help')",
                                  argv[i]);
    }

    stat->cmd_argc = argc - i;
    stat->cmd_argv = &argv[i];

    error = perfmon_stat_select_cpus(stat);

    if (error) {
        return error;
    }

    if (stat->nr_events == 0) {
        error = perfmon_stat_default_events(stat);
    }

    return error;
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

        error = perfmon_event_init(pev, cev->id, cev->flags);

        if ((error == 0) && (cev->dev != NULL)) {
            error = perfmon_event_set_dev(pev, cev->dev);
        }

        if (error == 0) {
            error = stat->cpu_mode
                    ? perfmon_event_attach_cpu(pev, stat->cpus[s])
                    : perfmon_event_attach(pev, stat->runner.thread);
        }
    }

    if (error == 0) {
        return;
    }

    perfmon_stat_detach_event(stat, ev);

    if (error == -EAGAIN) {
        cev->state = PERFMON_STAT_EV_NOT_COUNTED;
        cev->full_dev = (cev->dev != NULL) ? cev->dev
                        : (cev->flags & PERFMON_EF_RAW) ? perfmon_dev_get(0)
                        : perfmon_cmd_dev_for(cev->parsed.name);
    } else {
        cev->state = PERFMON_STAT_EV_NOT_SUPPORTED;
    }
}

/* One run: thread, events, gate, wait, counts, and everything released. */
static int
perfmon_stat_run(struct perfmon_stat *stat, unsigned int run)
{
    uint64_t start;
    int error;

    error = perfmon_cmd_runner_start(&stat->runner, "perfmon-stat",
                                     stat->cmd_argc, stat->cmd_argv);

    if (error) {
        kprintf("perfmon: stat: cannot create a thread: %s\n",
                error_str(error));
        return SHELL_ERR_REPORTED;
    }

    for (unsigned int e = 0; e < stat->nr_events; e++) {
        perfmon_stat_attach_event(stat, e);
    }

    start = cpu_rdtsc();
    perfmon_cmd_runner_go(&stat->runner);
    stat->cmd_result = perfmon_cmd_runner_join(&stat->runner);
    stat->elapsed_ns[run] = tsc_cycles_to_ns(cpu_rdtsc() - start);

    /* Stop every counter first, then read the final counts. */
    for (unsigned int e = 0; e < stat->nr_events; e++) {
        perfmon_stat_detach_event(stat, e);
    }

    for (unsigned int e = 0; e < stat->nr_events; e++) {
        for (unsigned int s = 0; s < stat->nr_slots; s++) {
            *perfmon_stat_value(stat, run, e, s)
                = (stat->evs[e].state == PERFMON_STAT_EV_OK)
                  ? perfmon_event_read(perfmon_stat_pev(stat, e, s)) : 0;
        }
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
    stat->pevs = kmem_zalloc(stat->pevs_size);
    stat->values = kmem_zalloc(stat->values_size);

    if ((stat->pevs == NULL) || (stat->values == NULL)) {
        kprintf("perfmon: stat: out of memory\n");
        perfmon_stat_free(stat);
        return SHELL_ERR_REPORTED;
    }

    for (unsigned int run = 0; run < stat->repeat; run++) {
        error = perfmon_stat_run(stat, run);

        if (error) {
            break;
        }

        /* The flag latches until the next command starts: still set here. */
        if (shell_interrupted()) {
            interrupted = true;
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
