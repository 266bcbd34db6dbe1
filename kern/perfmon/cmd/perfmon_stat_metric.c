/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon stat -M`: metrics over the counts.  Each metric's events are
 * added as one group (equal running times, so their ratio holds however
 * the counters are shared); its value on each output row is computed
 * from that row's counts by the fixed-point evaluator
 * (kern/perfmon/cmd/perfmon_metric.h), and the printer shows it beside
 * the metric's first event, as perf does.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/perfmon_evtab.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
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
    const struct perfmon_stat_row *row;
    const char *missing;                /* why there is no value, or NULL */
};

/* The row's count of the metric's event named name[0..len). */
static int
perfmon_stat_metric_count(void *arg, const char *name, size_t len,
                          uint64_t *countp)
{
    struct perfmon_stat_metric_eval *ev = arg;
    const struct perfmon_stat *stat = ev->stat;

    for (unsigned int e = ev->m->first; e < ev->m->first + ev->m->nr; e++) {
        const char *ename = stat->evs[e].parsed.name;

        if (strlen(ename) != len || memcmp(ename, name, len) != 0) {
            continue;
        }

        if (stat->evs[e].state == PERFMON_STAT_EV_NOT_SUPPORTED) {
            ev->missing = "<not supported>";
        } else if (!perfmon_stat_counted(stat, ev->row, e)
                   && ev->missing == NULL) {
            ev->missing = "<not counted>";
        }

        *countp = ev->row->mean[e];
        return 0;
    }

    return -ENOENT;
}

bool
perfmon_stat_metric_value(struct perfmon_stat *stat, unsigned int i,
                          const struct perfmon_stat_row *row, char *buf,
                          size_t size)
{
    struct perfmon_stat_metric_eval ev = {
        .stat = stat, .m = &stat->metrics[i], .row = row, .missing = NULL,
    };
    int64_t v = 0;
    int error;

    assert(i < stat->nr_metrics);
    error = perfmon_metric_eval(ev.m->formula, perfmon_stat_metric_count,
                                &ev, &v, NULL);

    if (ev.missing == NULL && error) {
        ev.missing = "<not counted>";
    }

    if (ev.missing != NULL) {
        strlcpy(buf, ev.missing, size);
        return false;
    }

    perfmon_metric_format(v, buf, size);
    return true;
}
