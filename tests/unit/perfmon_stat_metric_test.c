/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of kern/perfmon/cmd/perfmon_stat_metric.c, `perfmon stat -M`: a
 * model's metric (Skylake-SP's TopDown frontend_bound) and a generic one
 * each add their events as one group, unknown metrics are refused by
 * name, and each value is printed by perfmon_stat_print() beside its
 * first event in perf's columns (under the event's own derived metric when
 * it has one), in -x's and -j's metric fields, per CPU (-A), per thread
 * (--per-thread) and per interval (-I), or why there is none.
 * perfmon_stat_add_events() is the test's: it records the lists it is
 * given.
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
#include "fakes/fake_smp.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_stat_i.h"
#include "kern/shell.h"

const char *fake_console_output(void);
void fake_console_reset(void);

#define NR_SLOTS 2

static struct perfmon_stat stat;
static struct perfmon_stat_count values[PERFMON_PARSE_MAX_EVENTS * NR_SLOTS];
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
        snprintf(ev->parsed.spec, sizeof(ev->parsed.spec), "%s", name);
        ev->state = PERFMON_STAT_EV_OK;
        ev->generic = (strcmp(name, "instructions") == 0)
                      ? PERFMON_EV_INSTRUCTION
                      : (strcmp(name, "cycles") == 0) ? PERFMON_EV_CYCLE
                      : (strcmp(name, "branch-misses") == 0)
                      ? PERFMON_EV_BRANCH_MISS
                      : (strcmp(name, "branches") == 0) ? PERFMON_EV_BRANCH
                      : -1;
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
    stat.repeat = 1;
    stat.elapsed_ns[0] = 1000000;
    fake_thread_reset();
    pmu_evtab_setup(CPU_VENDOR_INTEL, 6, 0x55, 4);
    fake_console_reset();
    return 0;
}

/* Event e counted value on slot s in the one run. */
static void
counted_on(unsigned int e, unsigned int s, uint64_t value)
{
    struct perfmon_stat_count *c = perfmon_stat_value(&stat, 0, e, s);

    c->value = value;
    c->enabled = c->running = 1000;
}

static void
counted(unsigned int e, uint64_t value)
{
    counted_on(e, 0, value);
}

/* The output has line, whole. */
static void
assert_line(const char *out, const char *line)
{
    size_t len = strlen(line);

    for (const char *p = out; (p = strstr(p, line)) != NULL; p++) {
        if ((p == out || p[-1] == '\n') && p[len] == '\n') {
            return;
        }
    }

    fail_msg("no line \"%s\" in:\n%s", line, out);
}

/* Every line of out with a '#' has it at column col (perf's: 57). */
static void
assert_hash_column(const char *out, size_t col, unsigned int nr)
{
    unsigned int n = 0;

    for (const char *l = out; *l != '\0'; l = strchr(l, '\n') + 1) {
        const char *end = strchr(l, '\n'), *hash = strchr(l, '#');

        if (hash != NULL && hash < end) {
            assert_int_equal(hash - l, col);
            n++;
        }
    }

    assert_int_equal(n, nr);
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

/* frontend_bound, ipc and branch_miss_rate over known counts. */
static void
counts_three_metrics(void)
{
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
}

static void
test_values_beside_counts(void **state)
{
    const char *out;

    (void)state;
    counts_three_metrics();
    assert_int_equal(perfmon_stat_print(&stat, false), 0);
    out = fake_console_output();
    assert_line(out, "             1,200      IDQ_UOPS_NOT_DELIVERED.CORE     "
                     " #    30.00 frontend_bound");
    assert_line(out, "             1,000      CPU_CLK_UNHALTED.THREAD");

    /* Under the event's own metric, in its column. */
    assert_line(out, "             4,500      instructions                    "
                     " #    1.50  insn per cycle");
    assert_line(out, "                                                        "
                     " #     1.50 ipc");
    assert_line(out, "             3,000      cycles");
    assert_line(out, "                 7      branch-misses                   "
                     " # <not counted> branch_miss_rate");
    assert_line(out, "                 0      branches");
    assert_hash_column(out, 57, 4);
    assert_null(strstr(out, "metric:"));

    /* An event no device counts: the metric is not supported either. */
    stat.evs[3].state = PERFMON_STAT_EV_NOT_SUPPORTED;
    fake_console_reset();
    perfmon_stat_print(&stat, false);
    out = fake_console_output();
    assert_line(out, "             4,500      instructions                    "
                     " # <not supported> ipc");
    assert_line(out, "   <not supported>      cycles");
    stat.evs[0].state = PERFMON_STAT_EV_NOT_SUPPORTED;
    fake_console_reset();
    perfmon_stat_print(&stat, false);
    assert_line(fake_console_output(), "   <not supported>      "
                "IDQ_UOPS_NOT_DELIVERED.CORE # <not supported> frontend_bound");
}

static void
test_values_csv_json(void **state)
{
    const char *out;

    (void)state;
    counts_three_metrics();
    strcpy(stat.sep, ",");
    perfmon_stat_print(&stat, false);
    out = fake_console_output();

    /* perf's fields: counter,unit,event,runtime,pcnt,metric-value,-unit. */
    assert_line(out, "1200,,IDQ_UOPS_NOT_DELIVERED.CORE,1000,100.00,30.00,"
                     "frontend_bound");
    assert_line(out, "1000,,CPU_CLK_UNHALTED.THREAD,1000,100.00,,");
    assert_line(out, "4500,,instructions,1000,100.00,1.50,insn per cycle");
    assert_line(out, ",,,,,1.50,ipc");
    assert_line(out, "7,,branch-misses,1000,100.00,,branch_miss_rate");

    for (const char *l = out; *l != '\0'; l = strchr(l, '\n') + 1) {
        unsigned int seps = 0;

        for (const char *c = l; *c != '\n'; c++) {
            seps += (*c == ',');
        }

        assert_int_equal(seps, 6);
    }

    stat.sep[0] = '\0';
    stat.json = true;
    fake_console_reset();
    perfmon_stat_print(&stat, false);
    out = fake_console_output();
    assert_line(out, "{\"counter-value\" : \"4500\", \"unit\" : \"\", "
                     "\"event\" : \"instructions\", \"event-runtime\" : 1000, "
                     "\"pcnt-running\" : 100.00, \"metric-value\" : 1.50, "
                     "\"metric-unit\" : \"insn per cycle\"}");
    assert_line(out, "{\"metric-value\" : 1.50, \"metric-unit\" : \"ipc\"}");
    assert_non_null(strstr(out, "\"event\" : \"branch-misses\", "
                           "\"event-runtime\" : 1000, \"pcnt-running\" : "
                           "100.00, \"metric-value\" : null, \"metric-unit\" "
                           ": \"branch_miss_rate\"}\n"));
    assert_non_null(strstr(out, "\"event\" : \"cycles\", \"event-runtime\" : "
                           "1000, \"pcnt-running\" : 100.00, \"metric-value\" "
                           ": 0, \"metric-unit\" : \"\"}\n"));
}

/* -A and -I: each row's metric from that row's counts, after its prefix. */
static void
test_values_per_cpu_interval(void **state)
{
    const char *out;

    (void)state;
    stat.nr_slots = NR_SLOTS;
    stat.per_cpu = true;
    stat.cpus[0] = 0;
    stat.cpus[1] = 3;
    assert_int_equal(perfmon_stat_metrics_add(&stat, "cpi,ipc"), 0);
    stat.runs_done = 1;
    counted_on(0, 0, 2000);             /* CPU_CLK_UNHALTED.THREAD */
    counted_on(1, 0, 4000);             /* INST_RETIRED.ANY */
    counted_on(0, 1, 3000);
    counted_on(1, 1, 1000);
    counted_on(2, 0, 4000);             /* instructions */
    counted_on(3, 0, 2000);             /* cycles */
    counted_on(2, 1, 1000);
    counted_on(3, 1, 1000);
    fake_console_reset();
    perfmon_stat_print(&stat, false);
    out = fake_console_output();
    assert_line(out, "CPU0                    2,000      "
                     "CPU_CLK_UNHALTED.THREAD          #     0.50 cpi");
    assert_line(out, "CPU3                    3,000      "
                     "CPU_CLK_UNHALTED.THREAD          #     3.00 cpi");
    assert_line(out, "CPU0                    4,000      instructions        "
                     "             #    2.00  insn per cycle");
    assert_line(out, "CPU0                                                   "
                     "             #     2.00 ipc");
    assert_line(out, "CPU3                                                   "
                     "             #     1.00 ipc");
    assert_hash_column(out, 68, 6);

    stat.interval_ms = 100;
    stat.nr_intervals = 2;
    strcpy(stat.sep, ";");
    fake_console_reset();
    assert_int_equal(perfmon_stat_print_interval(&stat, 1500000000ULL), 0);
    out = fake_console_output();
    assert_line(out, "     1.500000000;CPU3;3000;;CPU_CLK_UNHALTED.THREAD;1000;"
                     "100.00;3.00;cpi");
    assert_line(out, "     1.500000000;CPU3;;;;;;1.00;ipc");
}

/* --per-thread: the thread's label starts each of its metric lines. */
static void
test_values_per_thread(void **state)
{
    const char *out;

    (void)state;
    stat.nr_slots = 1;
    stat.per_thread = true;
    stat.nr_threads = 1;
    stat.tid_list = "1";
    stat.threads[0] = fake_thread_create("worker");
    assert_int_equal(perfmon_stat_metrics_add(&stat, "ipc"), 0);
    stat.runs_done = 1;
    counted(0, 900);                    /* instructions */
    counted(1, 600);                    /* cycles */
    fake_console_reset();
    perfmon_stat_print(&stat, false);
    out = fake_console_output();
    assert_line(out, "            worker-1                900      "
                     "instructions                     #    1.50  insn per "
                     "cycle");
    assert_line(out, "            worker-1                                 "
                     "                         #     1.50 ipc");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_add_as_groups, setup),
        cmocka_unit_test_setup(test_unknown_refused, setup),
        cmocka_unit_test_setup(test_values_beside_counts, setup),
        cmocka_unit_test_setup(test_values_csv_json, setup),
        cmocka_unit_test_setup(test_values_per_cpu_interval, setup),
        cmocka_unit_test_setup(test_values_per_thread, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
