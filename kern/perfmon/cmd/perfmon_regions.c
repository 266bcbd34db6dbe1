/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon regions`: arm the code regions the kernel marks
 * (kern/perfmon_region.h) with events on some CPUs, show per region and
 * per CPU what their calls counted, reset the counts, disarm.  The
 * counting is the core's (kern/perfmon/perfmon_region.c); this file
 * parses, resolves the events, and prints as `stat` does: a table, or one
 * line a row with -x SEP or -j.
 *
 * The event names the user gave are kept here while the regions are
 * armed, for show.  Like every shell command this runs in the shell's one
 * thread, so that state needs no lock.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/num.h"
#include "kern/perfmon.h"
#include "kern/perfmon_region.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_json.h"
#include "kern/perfmon/cmd/perfmon_parse.h"
#include "kern/perfmon/cmd/perfmon_regions.h"
#include "kern/perfmon/cmd/perfmon_resolve.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/string.h"

#define PERFMON_REGIONS_SEP_MAX     8
#define PERFMON_REGIONS_OPT_EVERY   256

const char perfmon_regions_usage[] =
    "usage: perfmon regions [-e EVENTS] [-C CPUS] [--every N] [NAME...]\n"
    "       perfmon regions show [--self] [-x SEP] [-j]\n"
    "       perfmon regions list|reset|off\n"
    "  arm the code regions NAME... (all by default) on CPUS (all), counting\n"
    "  EVENTS (step/instructions/ with perfmon.step=on, else task-clock and\n"
    "  the hardware's cycles, instructions, branches, branch-misses);\n"
    "  --every N measures one call in N; show prints calls, sum, mean, min,\n"
    "  max and the largest calls per region, event and CPU (--self: less\n"
    "  the regions nested in them)\n";

static const char perfmon_regions_who[] = "regions";

/* The events' names as typed, while armed (show prints them). */
static char perfmon_regions_specs[PERFMON_REGION_MAX_EVENTS]
                                 [PERFMON_PARSE_NAME_SIZE];

#define perfmon_regions_error(...)                                          \
    perfmon_cmd_error(perfmon_regions_who, perfmon_regions_usage, __VA_ARGS__)

/* One line: the prefix (a format with one string), the region names. */
static void
perfmon_regions_print_names(const char *prefix, const char *arg)
{
    struct perfmon_cmd_line line;

    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, prefix, arg);

    for (unsigned int i = 0; i < perfmon_region_count(); i++) {
        perfmon_cmd_line_add(&line, " %s", perfmon_region_get(i)->name);
    }

    perfmon_cmd_line_add(&line, ")");
    perfmon_cmd_line_print(&line);
}

/* Arming ------------------------------------------------------------------
 */

struct perfmon_regions_arm {
    const char *events;                 /* -e, or NULL */
    const char *cpus;                   /* -C, or NULL */
    uint64_t every;
    struct perfmon_region_event evs[PERFMON_REGION_MAX_EVENTS];
    char specs[PERFMON_REGION_MAX_EVENTS][PERFMON_PARSE_NAME_SIZE];
    unsigned int nr_events;
};

static const struct perfmon_cmd_longopt perfmon_regions_arm_longopts[] = {
    { "event", 'e', true },
    { "cpu", 'C', true },
    { "every", PERFMON_REGIONS_OPT_EVERY, true },
    { NULL, 0, false },
};

static int
perfmon_regions_arm_option(void *ctx, int letter, const char *value)
{
    struct perfmon_regions_arm *arm = ctx;

    if (letter == 'e') {
        arm->events = value;
    } else if (letter == 'C') {
        arm->cpus = value;
    } else if (cmdline_parse_u64(value, &arm->every) != 0 || arm->every == 0
               || arm->every > PERFMON_REGION_EVERY_MAX) {
        return perfmon_cmd_error(perfmon_regions_who, perfmon_regions_usage,
                                 "--every %s: not a number from 1 to %u",
                                 value, PERFMON_REGION_EVERY_MAX);
    }

    return 0;
}

/* The default events: the step PMU's instructions, or the clock and the
 * hardware's usual four where a device counts them. */
static void
perfmon_regions_default_events(char *list, size_t size)
{
    static const char *const hw_events[] = {
        "cycles", "instructions", "branches", "branch-misses",
    };
    size_t len;

    if (perfmon_dev_find("step") != NULL) {
        strlcpy(list, "step/instructions/", size);
        return;
    }

    len = strlcpy(list, "task-clock", size);

    for (size_t i = 0; i < ARRAY_SIZE(hw_events); i++) {
        if (perfmon_resolve_dev_for(hw_events[i]) != NULL) {
            len += (size_t)ksnprintf(&list[len], size - len, ",%s",
                                     hw_events[i]);
        }
    }
}

/* -e (or the defaults) into arm->evs: 0 or SHELL_ERR_REPORTED. */
static int
perfmon_regions_resolve(struct perfmon_regions_arm *arm)
{
    struct perfmon_parse_event parsed[PERFMON_REGION_MAX_EVENTS];
    char defaults[PERFMON_PARSE_LIST_MAX + 1];
    const char *list = arm->events;
    struct perfmon_parse_error err;
    int nr;

    if (list == NULL) {
        perfmon_regions_default_events(defaults, sizeof(defaults));
        list = defaults;
    }

    nr = perfmon_parse_events(list, parsed, PERFMON_REGION_MAX_EVENTS, &err);

    if (nr == -E2BIG && strlen(list) <= PERFMON_PARSE_LIST_MAX) {
        return perfmon_cmd_error(perfmon_regions_who, perfmon_regions_usage,
                                 "-e %s: at most %u events, or an item too "
                                 "long", list, PERFMON_REGION_MAX_EVENTS);
    } else if (nr < 0) {
        return perfmon_cmd_error(perfmon_regions_who, perfmon_regions_usage,
                                 "-e: bad event list: %s%s%s%s", err.reason,
                                 (err.item[0] != '\0') ? " ('" : "", err.item,
                                 (err.item[0] != '\0') ? "')" : "");
    }

    for (int i = 0; i < nr; i++) {
        struct perfmon_resolved cev;

        if (perfmon_resolve(perfmon_regions_who, &parsed[i], &cev) != 0) {
            return SHELL_ERR_REPORTED;
        }

        if (!cev.supported) {
            return perfmon_regions_error("event '%s' is not counted here",
                                         parsed[i].spec);
        }

        arm->evs[i].id = cev.id;
        arm->evs[i].flags = (cev.flags & ~PERFMON_EF_PINNED)
                            | (parsed[i].flags & PERFMON_EF_MODE);
        arm->evs[i].dev = cev.dev;
        strlcpy(arm->specs[i], parsed[i].spec, sizeof(arm->specs[i]));
    }

    arm->nr_events = (unsigned int)nr;
    return 0;
}

static void
perfmon_regions_fmt_cpus(char *buf, size_t size, uint64_t cpus)
{
    size_t len = 0;

    buf[0] = '\0';

    for (unsigned int cpu = 0; cpu < 64 && len < size; cpu++) {
        unsigned int last = cpu;

        if (!(cpus & (1ULL << cpu))) {
            continue;
        }

        while (last + 1 < 64 && (cpus & (1ULL << (last + 1)))) {
            last++;
        }

        len += (size_t)ksnprintf(&buf[len], size - len,
                                 (last > cpu) ? "%s%u-%u" : "%s%u",
                                 (len != 0) ? "," : "", cpu, last);
        cpu = last;
    }
}

static unsigned int
perfmon_regions_nr_armed(void)
{
    unsigned int nr = 0;

    for (unsigned int i = 0; i < perfmon_region_count(); i++) {
        nr += (READ_ONCE(perfmon_region_get(i)->armed) != 0);
    }

    return nr;
}

static int
perfmon_regions_arm_main(int argc, char **argv)
{
    struct perfmon_regions_arm arm = { .every = 1 };
    struct perfmon_region_config config;
    const char *bad = NULL;
    unsigned int bad_event = 0;
    struct perfmon_cmd_opts opts;
    char cpus[64];
    int error;

    perfmon_cmd_opts_init(&opts, argc, argv, 2, "e:C:",
                          perfmon_regions_arm_longopts);
    error = perfmon_cmd_options(&opts, perfmon_regions_who,
                                perfmon_regions_usage,
                                perfmon_regions_arm_option, &arm);

    if (error) {
        return error;
    }

    memset(&config, 0, sizeof(config));
    error = perfmon_cmd_cpus(perfmon_regions_who, perfmon_regions_usage,
                             arm.cpus == NULL, arm.cpus, &config.cpus);

    if (error) {
        return error;
    }

    for (int i = opts.index; i < argc; i++) {
        if (perfmon_region_find(argv[i]) == NULL) {
            perfmon_regions_print_names("perfmon: regions: no region '%s' "
                                        "(regions:", argv[i]);
            return SHELL_ERR_REPORTED;
        }
    }

    error = perfmon_regions_resolve(&arm);

    if (error) {
        return error;
    }

    if (perfmon_region_armed() != NULL) {
        kprintf("perfmon: regions: already armed ('perfmon regions off' "
                "first)\n");
        return SHELL_ERR_REPORTED;
    }

    config.events = arm.evs;
    config.nr_events = arm.nr_events;
    config.every = (unsigned int)arm.every;
    config.names = (const char *const *)&argv[opts.index];
    config.nr_names = (unsigned int)(argc - opts.index);
    error = perfmon_region_arm(&config, &bad, &bad_event);

    if (error) {
        kprintf("perfmon: regions: %s: %s\n",
                (bad_event < arm.nr_events) ? arm.specs[bad_event] : "arm",
                error_str(error));
        return SHELL_ERR_REPORTED;
    }

    memcpy(perfmon_regions_specs, arm.specs, sizeof(arm.specs));
    perfmon_regions_fmt_cpus(cpus, sizeof(cpus), config.cpus);
    kprintf("perfmon regions: %u armed on CPUs %s, %u event%s, one call in "
            "%u\n", perfmon_regions_nr_armed(), cpus, arm.nr_events,
            (arm.nr_events > 1) ? "s" : "", config.every);
    return 0;
}

/* show --------------------------------------------------------------------
 */

struct perfmon_regions_show {
    bool self;
    bool json;
    char sep[PERFMON_REGIONS_SEP_MAX + 1];
    const struct perfmon_region_config *config;
    unsigned int nr_cpus;               /* armed */
    unsigned int cpus[64];
    size_t nr_stats;                    /* per CPU */
    struct perfmon_region_stats *stats; /* [cpu index][region][event] */
    struct perfmon_region_losses losses[64];
};

static const struct perfmon_cmd_longopt perfmon_regions_show_longopts[] = {
    { "self", 's', false },
    { "field-separator", 'x', true },
    { "json", 'j', false },
    { NULL, 0, false },
};

static int
perfmon_regions_show_option(void *ctx, int letter, const char *value)
{
    struct perfmon_regions_show *show = ctx;

    if (letter == 's') {
        show->self = true;
    } else if (letter == 'j') {
        show->json = true;
    } else if (*value == '\0' || strlen(value) > PERFMON_REGIONS_SEP_MAX) {
        return perfmon_cmd_error(perfmon_regions_who, perfmon_regions_usage,
                                 "-x: the separator '%s' must have 1 to "
                                 STRINGIFY(PERFMON_REGIONS_SEP_MAX)
                                 " characters", value);
    } else {
        strlcpy(show->sep, value, sizeof(show->sep));
    }

    return 0;
}

/* One row: a region's counts of an event on a CPU, or summed over all. */
struct perfmon_regions_row {
    const char *region;
    char cpu[8];
    const char *event;
    struct perfmon_region_stats st;
    uint64_t enabled_ns;
    uint64_t running_ns;
};

static void
perfmon_regions_row_add(struct perfmon_regions_row *row,
                        const struct perfmon_region_stats *st)
{
    row->st.calls += st->calls;
    row->st.seen += st->seen;
    row->st.sum += st->sum;
    row->st.min = MIN(row->st.min, st->min);
    row->st.max = MAX(row->st.max, st->max);
    row->st.self_sum += st->self_sum;
    row->st.self_min = MIN(row->st.self_min, st->self_min);
    row->st.self_max = MAX(row->st.self_max, st->self_max);

    for (unsigned int i = 0; i < PERFMON_REGION_NR_WORST; i++) {
        for (unsigned int k = 0; k < PERFMON_REGION_NR_WORST; k++) {
            if (st->worst[i] > row->st.worst[k]) {
                memmove(&row->st.worst[k + 1], &row->st.worst[k],
                        (PERFMON_REGION_NR_WORST - 1 - k)
                        * sizeof(row->st.worst[0]));
                row->st.worst[k] = st->worst[i];
                break;
            }
        }
    }
}

static void
perfmon_regions_print_json(const struct perfmon_regions_show *show,
                           const struct perfmon_regions_row *row,
                           uint64_t sum, uint64_t min, uint64_t max)
{
    struct perfmon_cmd_line line;

    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "{\"region\" : ");
    perfmon_json_add_string(&line, row->region);
    perfmon_cmd_line_add(&line, ", \"cpu\" : ");
    perfmon_json_add_string(&line, row->cpu);
    perfmon_cmd_line_add(&line, ", \"event\" : ");
    perfmon_json_add_string(&line, row->event);
    perfmon_cmd_line_add(&line, ", \"self\" : %s, \"calls\" : %lu, "
                         "\"seen\" : %lu, \"sum\" : %lu, \"min\" : %lu, "
                         "\"max\" : %lu, \"time-enabled-ns\" : %lu, "
                         "\"time-running-ns\" : %lu, \"worst\" : [",
                         show->self ? "true" : "false", row->st.calls,
                         row->st.seen, sum, min, max, row->enabled_ns,
                         row->running_ns);

    for (unsigned int i = 0; i < PERFMON_REGION_NR_WORST; i++) {
        if (row->st.worst[i] != 0) {
            perfmon_cmd_line_add(&line, "%s%lu", (i != 0) ? ", " : "",
                                 row->st.worst[i]);
        }
    }

    perfmon_cmd_line_add(&line, "]}");
    perfmon_cmd_line_print(&line);
}

static void
perfmon_regions_print_row(const struct perfmon_regions_show *show,
                          const struct perfmon_regions_row *row)
{
    uint64_t sum = show->self ? row->st.self_sum : row->st.sum;
    uint64_t min = show->self ? row->st.self_min : row->st.min;
    uint64_t max = show->self ? row->st.self_max : row->st.max;
    char b[5][32];
    struct perfmon_cmd_line line;

    min = (row->st.calls == 0) ? 0 : min;

    if (show->json) {
        perfmon_regions_print_json(show, row, sum, min, max);
        return;
    }

    perfmon_cmd_line_init(&line);

    if (show->sep[0] != '\0') {
        const char *s = show->sep;

        perfmon_cmd_line_add(&line, "%s%s%s%s%s%s%lu%s%lu%s%lu%s%lu%s%lu%s"
                             "%lu%s%lu", row->region, s, row->cpu, s,
                             row->event, s, row->st.calls, s, row->st.seen, s,
                             sum, s, min, s, max, s, row->enabled_ns, s,
                             row->running_ns);

        for (unsigned int i = 0; i < PERFMON_REGION_NR_WORST; i++) {
            perfmon_cmd_line_add(&line, "%s%lu", s, row->st.worst[i]);
        }

        perfmon_cmd_line_print(&line);
        return;
    }

    num_fmt_count(b[0], sizeof(b[0]), row->st.calls);
    num_fmt_count(b[1], sizeof(b[1]), sum);
    num_fmt_ratio(b[2], sizeof(b[2]), sum, row->st.calls, 2, true);
    num_fmt_count(b[3], sizeof(b[3]), min);
    num_fmt_count(b[4], sizeof(b[4]), max);
    perfmon_cmd_line_add(&line, "%-12s %4s %10s %15s %15s %12s %12s  %s",
                         row->region, row->cpu, b[0], b[1], b[2], b[3], b[4],
                         row->event);

    if (row->running_ns < row->enabled_ns) {
        num_fmt_percent(b[0], sizeof(b[0]), row->running_ns, row->enabled_ns,
                        false);
        perfmon_cmd_line_add(&line, " (%s%%)", b[0]);
    }

    perfmon_cmd_line_print(&line);

    if (row->st.worst[0] != 0) {
        perfmon_cmd_line_add(&line, "%17s largest:", "");

        for (unsigned int i = 0; i < PERFMON_REGION_NR_WORST; i++) {
            if (row->st.worst[i] != 0) {
                num_fmt_count(b[0], sizeof(b[0]), row->st.worst[i]);
                perfmon_cmd_line_add(&line, " %s", b[0]);
            }
        }

        perfmon_cmd_line_print(&line);
    }
}

/* The rows of region index r, event e: each CPU that saw calls, and all. */
static void
perfmon_regions_print_event(struct perfmon_regions_show *show, unsigned int r,
                            unsigned int e)
{
    unsigned int nr_events = show->config->nr_events;
    struct perfmon_regions_row all = {
        .region = perfmon_region_get(r)->name,
        .cpu = "all",
        .event = perfmon_regions_specs[e],
        .st = { .min = UINT64_MAX, .self_min = UINT64_MAX },
    };

    for (unsigned int i = 0; i < show->nr_cpus; i++) {
        const struct perfmon_region_stats *st =
            &show->stats[i * show->nr_stats + r * nr_events + e];
        struct perfmon_regions_row row = all;

        row.st = *st;
        row.enabled_ns = 0;
        row.running_ns = 0;
        ksnprintf(row.cpu, sizeof(row.cpu), "%u", show->cpus[i]);
        perfmon_region_event_times(show->cpus[i], e, &row.enabled_ns,
                                   &row.running_ns);
        perfmon_regions_row_add(&all, st);
        all.enabled_ns += row.enabled_ns;
        all.running_ns += row.running_ns;

        if (st->seen != 0 || show->nr_cpus == 1) {
            perfmon_regions_print_row(show, &row);
        }
    }

    if (show->nr_cpus > 1) {
        perfmon_regions_print_row(show, &all);
    }
}

static void
perfmon_regions_print_losses(const struct perfmon_regions_show *show)
{
    for (unsigned int i = 0; i < show->nr_cpus; i++) {
        const struct perfmon_region_losses *l = &show->losses[i];

        if (l->dropped + l->unread + l->too_deep + l->unmatched
            + l->abandoned != 0) {
            kprintf("cpu%u: calls not measured: %lu dropped (NMI), %lu "
                    "unread, %lu too deep, %lu unmatched ends, %lu "
                    "abandoned\n", show->cpus[i], l->dropped, l->unread,
                    l->too_deep, l->unmatched, l->abandoned);
        }
    }
}

static int
perfmon_regions_show_main(int argc, char **argv)
{
    struct perfmon_regions_show *show;
    struct perfmon_cmd_opts opts;
    size_t size;
    char cpus[64];
    int error;

    show = kmem_zalloc(sizeof(*show));

    if (show == NULL) {
        return -ENOMEM;
    }

    perfmon_cmd_opts_init(&opts, argc, argv, 3, "x:j",
                          perfmon_regions_show_longopts);
    error = perfmon_cmd_options(&opts, perfmon_regions_who,
                                perfmon_regions_usage,
                                perfmon_regions_show_option, show);

    if (!error && opts.index < argc) {
        error = perfmon_regions_error("show: unexpected '%s'",
                                      argv[opts.index]);
    } else if (!error && show->json && show->sep[0] != '\0') {
        error = perfmon_regions_error("show: %s", "-x and -j exclude each "
                                      "other");
    }

    show->config = perfmon_region_armed();

    if (!error && show->config == NULL) {
        kprintf("perfmon: regions: nothing armed (see 'perfmon help "
                "regions')\n");
        error = SHELL_ERR_REPORTED;
    }

    if (error) {
        kmem_free(show, sizeof(*show));
        return error;
    }

    for (uint64_t left = show->config->cpus; left != 0; left &= left - 1) {
        show->cpus[show->nr_cpus++] = (unsigned int)__builtin_ctzll(left);
    }

    show->nr_stats = perfmon_region_count() * show->config->nr_events;
    size = show->nr_cpus * show->nr_stats * sizeof(*show->stats);
    show->stats = kmem_alloc(size);
    error = (show->stats == NULL) ? -ENOMEM : 0;

    for (unsigned int i = 0; i < show->nr_cpus && !error; i++) {
        error = perfmon_region_snapshot(show->cpus[i],
                                        &show->stats[i * show->nr_stats],
                                        show->nr_stats, &show->losses[i]);
    }

    if (!error && show->sep[0] == '\0' && !show->json) {
        perfmon_regions_fmt_cpus(cpus, sizeof(cpus), show->config->cpus);
        kprintf("perfmon regions: CPUs %s, one call in %u, %s\n", cpus,
                show->config->every,
                show->self ? "self: less the regions nested in each call"
                           : "each call with the regions nested in it");
        kprintf("%-12s %4s %10s %15s %15s %12s %12s  %s\n", "region", "cpu",
                "calls", "sum", "mean", "min", "max", "event");
    }

    for (unsigned int r = 0; r < perfmon_region_count() && !error; r++) {
        if (!READ_ONCE(perfmon_region_get(r)->armed)) {
            continue;
        }

        for (unsigned int e = 0; e < show->config->nr_events; e++) {
            perfmon_regions_print_event(show, r, e);
        }
    }

    if (!error && show->sep[0] == '\0' && !show->json) {
        perfmon_regions_print_losses(show);
    }

    if (show->stats != NULL) {
        kmem_free(show->stats, size);
    }

    kmem_free(show, sizeof(*show));
    return error;
}

/* list, reset, off --------------------------------------------------------
 */

static int
perfmon_regions_list(void)
{
    for (unsigned int i = 0; i < perfmon_region_count(); i++) {
        const struct perfmon_region *region = perfmon_region_get(i);

        kprintf("%-12s %s\n", region->name,
                READ_ONCE(region->armed) ? "armed" : "-");
    }

    return 0;
}

int
perfmon_regions_main(int argc, char **argv)
{
    const char *sub = (argc > 2) ? argv[2] : "";
    int error;

    if (strcmp(sub, "show") == 0) {
        return perfmon_regions_show_main(argc, argv);
    }

    if (strcmp(sub, "list") != 0 && strcmp(sub, "reset") != 0
        && strcmp(sub, "off") != 0) {
        return perfmon_regions_arm_main(argc, argv);
    }

    if (argc > 3) {
        return perfmon_regions_error("unexpected '%s'", argv[3]);
    }

    if (strcmp(sub, "list") == 0) {
        return perfmon_regions_list();
    }

    error = (strcmp(sub, "reset") == 0) ? perfmon_region_reset()
                                        : perfmon_region_disarm();

    if (error == -ENOENT) {
        kprintf("perfmon: regions: nothing armed\n");
        return SHELL_ERR_REPORTED;
    } else if (error) {
        return error;
    }

    kprintf("perfmon regions: %s\n",
            (strcmp(sub, "reset") == 0) ? "counts reset" : "off");
    return 0;
}
