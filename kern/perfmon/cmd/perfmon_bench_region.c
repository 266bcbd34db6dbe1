/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon bench`, rows 2m and 2n: a code region's markers
 * (kern/perfmon_region.h), a begin and its end around nothing.  2m with
 * nothing armed: each marker is one test of its region's flag.  2n with
 * the region armed with one event, the `test` event of the benchmark's
 * CPU: each marker reads its counter record in place, as a local read
 * does, and the end adds to calls and sum, so the pair is bounded by two
 * local CPU-event reads (row 2a).  The benchmark arms its own region,
 * "bench", which no other code marks, and disarms it before returning;
 * while a user has regions armed, row 2n says so and is not measured.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/bench.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_region.h"
#include "kern/perfmon/cmd/perfmon_bench_i.h"
#include "kern/printf.h"

PERFMON_REGION_DEFINE(bench, "bench");

/*
 * The code a region's markers go around in rows 2m and 2n: a call, as in
 * any function that has markers (it has a frame then, markers or not).
 * The rows are what the markers add to perfmon_bench_op_plain().
 */
static void __attribute__((noinline))
perfmon_bench_leaf(void)
{
    barrier();
}

static void
perfmon_bench_op_plain(struct perfmon_bench_run *run, void *arg)
{
    (void)run;
    (void)arg;
    perfmon_bench_leaf();
}

static void
perfmon_bench_op_region(struct perfmon_bench_run *run, void *arg)
{
    (void)run;
    (void)arg;
    PERFMON_REGION_BEGIN(bench);
    perfmon_bench_leaf();
    PERFMON_REGION_END(bench);
}

static void
perfmon_bench_row_region(struct perfmon_bench_run *run, const char *id,
                         const char *what, unsigned int budget)
{
    struct bench_result r;
    uint64_t insns;

    perfmon_bench_measure(run, perfmon_bench_op_region, NULL,
                          PERFMON_BENCH_BATCH, false, &r);
    insns = perfmon_bench_sub(
        perfmon_bench_insns(run, perfmon_bench_op_region, NULL, false, false),
        perfmon_bench_insns(run, perfmon_bench_op_plain, NULL, false, false));
    perfmon_bench_print(run, id, what, insns,
                        perfmon_bench_budget(budget), &r, NULL);
}

int
perfmon_bench_rows_region(struct perfmon_bench_run *run)
{
    static const char *const names[] = { "bench" };
    const struct perfmon_region_event event = {
        .id = PERFMON_EV_TEST,
        .flags = PERFMON_EF_KERN,
        .dev = run->soft.dev,
    };
    const struct perfmon_region_config config = {
        .events = &event,
        .nr_events = 1,
        .cpus = 1ULL << run->self,
        .every = 1,
        .names = names,
        .nr_names = ARRAY_SIZE(names),
    };
    const char *bad = NULL;
    unsigned int bad_event = 0;
    int error;

    perfmon_bench_row_region(run, "2m", "region begin + end, nothing armed",
                             PERFMON_BENCH_BUDGET_REGION_OFF);
    error = perfmon_region_arm(&config, &bad, &bad_event);

    if (error) {
        kprintf("%-4s region begin + end, armed: not measured: %s\n", "2n",
                (error == -EBUSY) ? "regions armed by a user" : error_str(error));
        return (error == -EBUSY) ? 0 : error;
    }

    perfmon_bench_row_region(run, "2n", "region begin + end, 1 event armed",
                             PERFMON_BENCH_BUDGET_REGION_ARMED);
    perfmon_region_disarm();
    return 0;
}
