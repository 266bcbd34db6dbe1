/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon stat -M`: metrics over the counts.  Each metric's events are
 * added as one group (equal running times, so their ratio holds however
 * the counters are shared), and after the counts its value is printed
 * as perf prints a metric, from the means of the runs, by the fixed-point
 * evaluator (kern/perfmon/cmd/perfmon_metric.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/perfmon_evtab.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_json.h"
#include "kern/perfmon/cmd/perfmon_metric.h"
#include "kern/perfmon/cmd/perfmon_stat.h"
#include "kern/perfmon/cmd/perfmon_stat_i.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/string.h"

/* The formula of metric name: the CPU model's first, then the generic. */
static const char *
perfmon_stat_metric_formula(const char *name, const char **namep)
{
    const struct perfmon_evtab_metric *metric;
    const char *bname, *formula;

    metric = perfmon_evtab_metric_lookup(perfmon_evtab_host(), name);

    if (metric != NULL) {
        *namep = perfmon_evtab_metric_name(metric);
        return perfmon_evtab_metric_formula(metric);
    }

    for (unsigned int i = 0; perfmon_metric_builtin(i, &bname, &formula);
         i++) {
        if (strcmp(bname, name) == 0) {
            *namep = bname;
            return formula;
        }
    }

    return NULL;
}

/* A group of a formula's events being written: "{a,b,c}". */
struct perfmon_stat_metric_list {
    char buf[PERFMON_PARSE_LIST_MAX + 1];
    size_t len;
    unsigned int nr;
};

static int
perfmon_stat_metric_add_name(void *arg, const char *name, size_t len)
{
    struct perfmon_stat_metric_list *l = arg;
    int n;

    n = ksnprintf(&l->buf[l->len], sizeof(l->buf) - l->len, "%s%.*s",
                  (l->nr == 0) ? "{" : ",", (int)len, name);

    if (n < 0 || (size_t)n >= sizeof(l->buf) - l->len - 1) {
        return -E2BIG;
    }

    l->len += (size_t)n;
    l->nr++;
    return 0;
}

static int
perfmon_stat_metric_add(struct perfmon_stat *stat, const char *name)
{
    struct perfmon_stat_metric_list l = { .len = 0, .nr = 0 };
    struct perfmon_stat_asked *m;
    const char *formula, *canonical;
    int error;

    formula = perfmon_stat_metric_formula(name, &canonical);

    if (formula == NULL) {
        return perfmon_cmd_error("stat", perfmon_stat_usage, "unknown metric "
                                 "'%s'%s%s (see 'perfmon list metrics')",
                                 name, (perfmon_evtab_host() != NULL) ? " on " : "",
                                 (perfmon_evtab_host() != NULL)
                                 ? perfmon_evtab_host()->name : "");
    }

    if (stat->nr_metrics == ARRAY_SIZE(stat->metrics)) {
        return perfmon_cmd_error("stat", perfmon_stat_usage, "too many "
                                 "metrics (at most %u)",
                                 (unsigned int)ARRAY_SIZE(stat->metrics));
    }

    error = perfmon_metric_events(formula, perfmon_stat_metric_add_name, &l);

    if (error <= 0 || stat->nr_events + l.nr > PERFMON_PARSE_MAX_EVENTS) {
        return perfmon_cmd_error("stat", perfmon_stat_usage, "metric '%s' "
                                 "needs %u events, too many with the others "
                                 "(at most " STRINGIFY(PERFMON_PARSE_MAX_EVENTS)
                                 ")", canonical, l.nr);
    }

    l.buf[l.len++] = '}';
    l.buf[l.len] = '\0';
    m = &stat->metrics[stat->nr_metrics];
    *m = (struct perfmon_stat_asked){
        .name = canonical, .formula = formula, .first = stat->nr_events,
        .nr = l.nr,
    };
    error = perfmon_stat_add_events(stat, (l.nr == 1) ? &l.buf[1] : l.buf);

    if (error) {
        return error;
    }

    stat->nr_metrics++;
    return 0;
}

int
perfmon_stat_metrics_add(struct perfmon_stat *stat, const char *list)
{
    char name[PERFMON_PARSE_NAME_SIZE];

    for (const char *s = list;; s++) {
        const char *comma = strchr(s, ',');
        size_t len = (comma == NULL) ? strlen(s) : (size_t)(comma - s);
        int error;

        if (len == 0 || len >= sizeof(name)) {
            return perfmon_cmd_error("stat", perfmon_stat_usage, "-M: bad "
                                     "metric list '%s'", list);
        }

        memcpy(name, s, len);
        name[len] = '\0';
        error = perfmon_stat_metric_add(stat, name);

        if (error) {
            return error;
        }

        if (comma == NULL) {
            return 0;
        }

        s = comma;
    }
}

/* ---- values --------------------------------------------------------------- */

struct perfmon_stat_metric_eval {
    struct perfmon_stat *stat;
    const struct perfmon_stat_asked *m;
    bool missing;
};

/* The mean count of the metric's event named name, over slots and runs. */
static int
perfmon_stat_metric_value(void *arg, const char *name, size_t len,
                          uint64_t *countp)
{
    struct perfmon_stat_metric_eval *ev = arg;
    struct perfmon_stat *stat = ev->stat;

    for (unsigned int e = ev->m->first; e < ev->m->first + ev->m->nr; e++) {
        const struct perfmon_stat_ev *sev = &stat->evs[e];
        uint64_t sum = 0;

        if (strlen(sev->parsed.name) != len
            || memcmp(sev->parsed.name, name, len) != 0) {
            continue;
        }

        if (sev->state != PERFMON_STAT_EV_OK) {
            ev->missing = true;
        }

        for (unsigned int r = 0; r < stat->runs_done; r++) {
            for (unsigned int s = 0; s < stat->nr_slots; s++) {
                sum += perfmon_stat_value(stat, r, e, s)->value;
            }
        }

        *countp = sum / MAX(stat->runs_done, 1U);
        return 0;
    }

    return -ENOENT;
}

void
perfmon_stat_metrics_print(struct perfmon_stat *stat)
{
    for (unsigned int i = 0; i < stat->nr_metrics; i++) {
        struct perfmon_stat_metric_eval ev = {
            .stat = stat, .m = &stat->metrics[i], .missing = false,
        };
        struct perfmon_cmd_line line;
        char value[32];
        int64_t v = 0;
        int error;

        error = perfmon_metric_eval(ev.m->formula, perfmon_stat_metric_value,
                                    &ev, &v, NULL);

        if (ev.missing) {
            strlcpy(value, "<not supported>", sizeof(value));
        } else if (error) {
            strlcpy(value, "<not counted>", sizeof(value));
        } else {
            perfmon_metric_format(v, value, sizeof(value));
        }

        perfmon_cmd_line_init(&line);

        /* -j: as perf prints a metric alone; null when there is none. */
        if (stat->json) {
            perfmon_cmd_line_add(&line, "{\"metric-value\" : %s, "
                                 "\"metric-unit\" : ",
                                 ev.missing || error ? "null" : value);
            perfmon_json_add_string(&line, ev.m->name);
            perfmon_cmd_line_add(&line, "}");
        } else if (stat->sep[0] != '\0') {
            perfmon_cmd_line_add(&line, "%s%s%s%s%s", ev.missing || error
                                 ? "" : value, stat->sep, stat->sep,
                                 ev.m->name, stat->sep);
        } else {
            perfmon_cmd_line_add(&line, "%18s      #  %s (metric: %s)",
                                 value, ev.m->name, ev.m->formula);
        }

        perfmon_cmd_line_print(&line);
    }
}
