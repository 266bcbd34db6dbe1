/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The arithmetic and the tables of `perfmon selftest --accuracy`
 * (kern/perfmon/cmd/perfmon_accuracy.h): how far a count is from the
 * step PMU's exact one, given the counts and the sample addresses a run
 * took.  Pure functions on what the caller passes in, integers only (no
 * floating point in the kernel: errors in parts per million), so that
 * the host tests feed them counts with known over-count and addresses
 * with known skid.  Any context; the tables go out through the caller's
 * print function.
 *
 * Three measurements:
 *   mux:       a multiplexed event's estimate, count x enabled / running
 *              (perf's scaling), against the exact count of the same span;
 *   overcount: a hardware count of a region against the step PMU's count
 *              of the same region, per region and per call;
 *   skid:      where a hardware sample's instruction pointer lands in a
 *              loop of known addresses, against where the step PMU's
 *              sample of the same number lands (exactly the Nth).
 */

#ifndef KERN_PERFMON_CMD_ACCURACY_CALC_H
#define KERN_PERFMON_CMD_ACCURACY_CALC_H

#include <stdbool.h>
#include <stdint.h>

#include "kern/macros.h"

/* One million: errors are in parts per million. */
#define PERFMON_ACCURACY_PPM        1000000

/*
 * Where the lines go: print gets each line without its newline.  sep
 * NULL and json false: tables a user reads; sep: one line a row, fields
 * apart by sep (perf stat -x); json: one JSON object a row.
 */
struct perfmon_accuracy_out {
    void (*print)(void *arg, const char *line);
    void *arg;
    const char *sep;
    bool json;
};

/* Print one line, formatted as by ksnprintf(), through out. */
void perfmon_accuracy_printf(const struct perfmon_accuracy_out *out,
                             const char *fmt, ...) __format_printf(2, 3);

/* ---- multiplexing -------------------------------------------------------- */

/*
 * count x enabled / running, without overflow, saturated; count when
 * running is 0 or not below enabled (the event always counted).
 */
uint64_t perfmon_accuracy_scale(uint64_t count, uint64_t enabled,
                                uint64_t running);

/*
 * (value - exact) / exact in parts per million, rounded towards 0 and
 * saturated to +-INT32_MAX; 0 when both are 0, PERFMON_ACCURACY_PPM when
 * only exact is 0.
 */
int64_t perfmon_accuracy_ppm(uint64_t value, uint64_t exact);

/*
 * Errors of repeated estimates: how many, their values and their
 * absolute values summed, the worst (largest absolute value, sign kept),
 * and how many could not be estimated (the event never held a counter:
 * running 0).
 */
struct perfmon_accuracy_err {
    unsigned int nr;
    unsigned int nr_uncounted;
    int64_t sum;
    uint64_t sum_abs;
    int64_t worst;
};

void perfmon_accuracy_err_init(struct perfmon_accuracy_err *err);
void perfmon_accuracy_err_add(struct perfmon_accuracy_err *err, int64_t ppm);
void perfmon_accuracy_err_uncounted(struct perfmon_accuracy_err *err);
void perfmon_accuracy_err_merge(struct perfmon_accuracy_err *err,
                                const struct perfmon_accuracy_err *other);

/*
 * The mean absolute error (ppm, rounded down; 0 with none), and the mean
 * error, sign kept (the bias: with equal shares, errors that only move
 * counts from one event to another cancel in it).
 */
uint64_t perfmon_accuracy_err_mean(const struct perfmon_accuracy_err *err);
int64_t perfmon_accuracy_err_bias(const struct perfmon_accuracy_err *err);

/*
 * One row of the multiplexing table: a workload counted runs times on
 * dev, by nr_events flexible events of one kind taking turns on
 * nr_counters counters, beside an exact reference (pinned) whose counts
 * ranged exact_min..exact_max; loop, when not 0, the instructions of the
 * workload's loop alone (two references subtracted); share_ppm the mean
 * share of the time the events held a counter; cover_ppm the mean over
 * runs of all the events' counts summed, against nr_counters x the exact
 * count (a million: every counter counted all the time, nothing lost and
 * nothing twice, however the turns fell); err all events' errors;
 * event, when not negative, says the row is that event's alone.
 */
struct perfmon_accuracy_mux_row {
    const char *dev;
    const char *event_name;             /* what the events count */
    const char *workload;
    int event;                          /* -1: all events */
    unsigned int mux_ms;
    unsigned int runs;
    unsigned int nr_events;
    unsigned int nr_counters;
    uint64_t exact_min;
    uint64_t exact_max;
    uint64_t loop;
    uint64_t share_ppm;
    uint64_t cover_ppm;
    struct perfmon_accuracy_err err;
};

/* The table's title and column heads (text only; nothing otherwise). */
void perfmon_accuracy_mux_head(const struct perfmon_accuracy_out *out,
                               unsigned int mux_ms, unsigned int runs);
void perfmon_accuracy_mux_print(const struct perfmon_accuracy_out *out,
                                const struct perfmon_accuracy_mux_row *row);

/* ---- over-count ---------------------------------------------------------- */

/*
 * A region run calls_short then calls_long times (calls_long >
 * calls_short), counted exactly once each (exact_short, exact_long: the
 * step PMU is deterministic) and by the hardware nr times each
 * (hw_short[], hw_long[]).  The fixed cost of starting and stopping each
 * counter cancels in the differences: the exact count of the extra
 * calls is exact_long - exact_short; the hardware's is hw_long[i] minus
 * the smallest hw_short (an interrupt or an SMI only ever adds).
 */
struct perfmon_accuracy_oc_in {
    uint64_t calls_short;
    uint64_t calls_long;
    uint64_t exact_short;
    uint64_t exact_long;
    const uint64_t *hw_short;
    const uint64_t *hw_long;
    unsigned int nr;
};

/*
 * The result: the exact count of the extra calls, and the hardware's
 * over-count of them (negative: under-count), smallest, mean and
 * largest over the runs, and per call in thousandths of an instruction.
 */
struct perfmon_accuracy_oc {
    uint64_t calls;
    uint64_t exact;
    unsigned int nr;
    int64_t min;
    int64_t mean;
    int64_t max;
    int64_t per_call_milli_min;
    int64_t per_call_milli_max;
};

/*
 * Returns 0, or -EINVAL for a NULL argument, nr 0, calls_long not above
 * calls_short or exact_long below exact_short.
 */
int perfmon_accuracy_overcount(const struct perfmon_accuracy_oc_in *in,
                               struct perfmon_accuracy_oc *oc);

/* The table's title and heads, then one row (name: what was counted). */
void perfmon_accuracy_oc_head(const struct perfmon_accuracy_out *out);
void perfmon_accuracy_oc_print(const struct perfmon_accuracy_out *out,
                               const char *name, const char *intr,
                               const struct perfmon_accuracy_oc *oc);

/* ---- skid ---------------------------------------------------------------- */

/*
 * A loop whose instructions are at addrs[0..nr) in order, addrs[nr - 1]
 * its branch back: sample k of the step PMU (exact[k]) is at the Nth
 * instruction exactly, and the hardware's sample k (hw[k]) should be;
 * the distance is how many instructions later in the loop hw[k] is
 * (negative: earlier), taken round the loop to -nr/2..nr/2 - 1.
 */
#define PERFMON_ACCURACY_SKID_BINS  9   /* <0, 0, 1, 2, 3, 4-7, 8-15,
                                           16-31, 32 and more */

struct perfmon_accuracy_skid {
    unsigned int nr;                    /* samples compared */
    unsigned int nr_outside;            /* either IP not in the loop */
    int64_t min;
    int64_t max;
    int64_t sum;
    unsigned int bins[PERFMON_ACCURACY_SKID_BINS];
};

/* The index of ip in addrs[0..nr) (sorted), or -1 when not one of them. */
int perfmon_accuracy_loop_index(const uint64_t *addrs, unsigned int nr,
                                uint64_t ip);

/* The bin of a distance in struct perfmon_accuracy_skid's bins. */
unsigned int perfmon_accuracy_skid_bin(int64_t distance);

/*
 * Compare nr_samples pairs.  Returns 0, or -EINVAL for a NULL argument,
 * or fewer than 2 loop addresses.
 */
int perfmon_accuracy_skid(const uint64_t *addrs, unsigned int nr_addrs,
                          const uint64_t *exact, const uint64_t *hw,
                          unsigned int nr_samples,
                          struct perfmon_accuracy_skid *skid);

/*
 * The table of one counter (name: "fixed counter", "general-purpose
 * counter"), period the N of the samples: a head row, then a row a bin.
 */
void perfmon_accuracy_skid_print(const struct perfmon_accuracy_out *out,
                                 const char *name, uint64_t period,
                                 const struct perfmon_accuracy_skid *skid);

/* Measurements 2 and 3 need a hardware PMU: one line saying so. */
void perfmon_accuracy_need_pmu(const struct perfmon_accuracy_out *out,
                               const char *what, const char *why);

/* A measurement that could not run: one line saying why, in out's form. */
void perfmon_accuracy_fail(const struct perfmon_accuracy_out *out,
                           const char *what, const char *why);

#endif /* KERN_PERFMON_CMD_ACCURACY_CALC_H */
