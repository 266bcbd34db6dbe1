/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of kern/perfmon/cmd/perfmon_stat_metric.c, `perfmon stat -M`: a
 * model's metric (Skylake-SP's TopDown frontend_bound) and a generic one
 * each add their events as one group, unknown metrics are refused by
 * name, and after the counts each value is printed in perf's layout and
 * the -x format, or why there is none.  perfmon_stat_add_events() is the
 * test's: it records the lists it is given.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "arch/x86/cpu.h"
#include "arch/x86/pmu_evtab.h"
#include "kern/perfmon/cmd/perfmon_stat_i.h"
#include "kern/shell.h"

const char *fake_console_output(void);
void fake_console_reset(void);

static struct perfmon_stat stat;
static struct perfmon_stat_count values[PERFMON_PARSE_MAX_EVENTS];
static char lists[4][PERFMON_PARSE_LIST_MAX + 1];
static unsigned int nr_lists;

/* The -e path, as far as metrics need it: one event per name. */
int
perfmon_stat_add_events(struct perfmon_stat *s, const char *list)
{
    char copy[PERFMON_PARSE_LIST_MAX + 1];

    snprintf(lists[nr_lists++], sizeof(lists[0]), "%s", list);
    snprintf(copy, sizeof(copy), "%s", list);

    for (char *name = strtok(copy, "{,}"); name != NULL;
         name = strtok(NULL, "{,}")) {
        struct perfmon_stat_ev *ev = &s->evs[s->nr_events++];

        memset(ev, 0, sizeof(*ev));
        snprintf(ev->parsed.name, sizeof(ev->parsed.name), "%s", name);
        ev->state = PERFMON_STAT_EV_OK;
    }

    return 0;
}

static int
setup(void **state)
{
    (void)state;
    memset(&stat, 0, sizeof(stat));
    memset(values, 0, sizeof(values));
    nr_lists = 0;
    stat.values = values;
    stat.nr_slots = 1;
    pmu_evtab_setup(CPU_VENDOR_INTEL, 6, 0x55, 4);
    fake_console_reset();
    return 0;
}

/* Event e counted value in the one run. */
static void
counted(unsigned int e, uint64_t value)
{
    values[e].value = value;
    values[e].enabled = values[e].running = 1000;
}

static void
test_add_as_groups(void **state)
{
    (void)state;
    assert_int_equal(perfmon_stat_metrics_add(&stat, "frontend_bound,ipc"),
                     0);
    assert_int_equal(nr_lists, 2);
    assert_string_equal(lists[0], "{IDQ_UOPS_NOT_DELIVERED.CORE,"
                                  "CPU_CLK_UNHALTED.THREAD}");
    assert_string_equal(lists[1], "{instructions,cycles}");
    assert_int_equal(stat.nr_metrics, 2);
    assert_string_equal(stat.metrics[0].name, "frontend_bound");
    assert_int_equal(stat.metrics[0].first, 0);
    assert_int_equal(stat.metrics[0].nr, 2);
    assert_int_equal(stat.metrics[1].first, 2);

    /* The model's cpi wins over the generic one of that name. */
    assert_int_equal(perfmon_stat_metrics_add(&stat, "cpi"), 0);
    assert_string_equal(lists[2], "{CPU_CLK_UNHALTED.THREAD,"
                                  "INST_RETIRED.ANY}");
}

static void
test_unknown_refused(void **state)
{
    (void)state;
    assert_int_equal(perfmon_stat_metrics_add(&stat, "ipc,nope"),
                     SHELL_ERR_REPORTED);
    assert_non_null(strstr(fake_console_output(), "perfmon: stat: unknown "
                           "metric 'nope' on skylakex (see 'perfmon list "
                           "metrics')"));
    assert_int_equal(perfmon_stat_metrics_add(&stat, "ipc,,cpi"),
                     SHELL_ERR_REPORTED);
    assert_int_equal(perfmon_stat_metrics_add(&stat, ""), SHELL_ERR_REPORTED);
}

static void
test_values_printed(void **state)
{
    const char *out;

    (void)state;
    assert_int_equal(perfmon_stat_metrics_add(&stat, "frontend_bound,ipc,"
                                              "branch_miss_rate"), 0);
    stat.runs_done = 1;
    counted(0, 1200);                   /* IDQ_UOPS_NOT_DELIVERED.CORE */
    counted(1, 1000);                   /* CPU_CLK_UNHALTED.THREAD */
    counted(2, 4500);                   /* instructions */
    counted(3, 3000);                   /* cycles */
    counted(4, 7);                      /* branch-misses */
    counted(5, 0);                      /* branches */
    fake_console_reset();
    perfmon_stat_metrics_print(&stat);
    out = fake_console_output();
    assert_non_null(strstr(out, "             30.00      #  frontend_bound "));
    assert_non_null(strstr(out, "              1.50      #  ipc "));
    assert_non_null(strstr(out, "     <not counted>      #  "
                           "branch_miss_rate "));

    /* -x: value, unit, name. */
    strcpy(stat.sep, ",");
    fake_console_reset();
    perfmon_stat_metrics_print(&stat);
    out = fake_console_output();
    assert_non_null(strstr(out, "30.00,,frontend_bound,\n"));
    assert_non_null(strstr(out, "1.50,,ipc,\n"));
    assert_non_null(strstr(out, "\n,,branch_miss_rate,\n"));

    /* An event no device counts: the metric is not supported either. */
    stat.sep[0] = '\0';
    stat.evs[3].state = PERFMON_STAT_EV_NOT_SUPPORTED;
    fake_console_reset();
    perfmon_stat_metrics_print(&stat);
    assert_non_null(strstr(fake_console_output(),
                           "   <not supported>      #  ipc "));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_add_as_groups, setup),
        cmocka_unit_test_setup(test_unknown_refused, setup),
        cmocka_unit_test_setup(test_values_printed, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
