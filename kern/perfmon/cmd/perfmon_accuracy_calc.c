/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The arithmetic and the tables of `perfmon selftest --accuracy` (see
 * kern/perfmon/cmd/perfmon_accuracy_calc.h).  Every function works on its
 * arguments alone.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/error.h"
#include "kern/macros.h"
#include "kern/num.h"
#include "kern/perfmon/cmd/perfmon_accuracy_calc.h"
#include "kern/printf.h"

/* The longest line a table prints, its NUL included. */
#define PERFMON_ACCURACY_LINE_SIZE  512

static const char *const perfmon_accuracy_bin_names[] = {
    "<0", "0", "1", "2", "3", "4-7", "8-15", "16-31", ">=32",
};

void
perfmon_accuracy_printf(const struct perfmon_accuracy_out *out,
                        const char *fmt, ...)
{
    char line[PERFMON_ACCURACY_LINE_SIZE];
    va_list ap;

    va_start(ap, fmt);
    kvsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    out->print(out->arg, line);
}

static bool
perfmon_accuracy_text(const struct perfmon_accuracy_out *out)
{
    return out->sep == NULL && !out->json;
}

static uint64_t
perfmon_accuracy_abs(int64_t v)
{
    return (v < 0) ? 0 - (uint64_t)v : (uint64_t)v;
}

/* ---- multiplexing -------------------------------------------------------- */

uint64_t
perfmon_accuracy_scale(uint64_t count, uint64_t enabled, uint64_t running)
{
    if (running == 0 || running >= enabled) {
        return count;
    }

    return num_muldiv(count, enabled, running);
}

int64_t
perfmon_accuracy_ppm(uint64_t value, uint64_t exact)
{
    uint64_t diff, ppm;

    if (exact == 0) {
        return (value == 0) ? 0 : PERFMON_ACCURACY_PPM;
    }

    diff = (value >= exact) ? value - exact : exact - value;
    ppm = MIN(num_muldiv(diff, PERFMON_ACCURACY_PPM, exact),
              (uint64_t)INT32_MAX);
    return (value >= exact) ? (int64_t)ppm : -(int64_t)ppm;
}

void
perfmon_accuracy_err_init(struct perfmon_accuracy_err *err)
{
    err->nr = 0;
    err->nr_uncounted = 0;
    err->sum = 0;
    err->sum_abs = 0;
    err->worst = 0;
}

void
perfmon_accuracy_err_add(struct perfmon_accuracy_err *err, int64_t ppm)
{
    err->nr++;
    err->sum += ppm;
    err->sum_abs += perfmon_accuracy_abs(ppm);

    if (perfmon_accuracy_abs(ppm) > perfmon_accuracy_abs(err->worst)) {
        err->worst = ppm;
    }
}

void
perfmon_accuracy_err_uncounted(struct perfmon_accuracy_err *err)
{
    err->nr_uncounted++;
}

void
perfmon_accuracy_err_merge(struct perfmon_accuracy_err *err,
                           const struct perfmon_accuracy_err *other)
{
    err->nr += other->nr;
    err->nr_uncounted += other->nr_uncounted;
    err->sum += other->sum;
    err->sum_abs += other->sum_abs;

    if (perfmon_accuracy_abs(other->worst) > perfmon_accuracy_abs(err->worst)) {
        err->worst = other->worst;
    }
}

uint64_t
perfmon_accuracy_err_mean(const struct perfmon_accuracy_err *err)
{
    return (err->nr == 0) ? 0 : err->sum_abs / err->nr;
}

int64_t
perfmon_accuracy_err_bias(const struct perfmon_accuracy_err *err)
{
    return (err->nr == 0) ? 0 : err->sum / (int64_t)err->nr;
}

void
perfmon_accuracy_mux_head(const struct perfmon_accuracy_out *out,
                          unsigned int mux_ms, unsigned int runs)
{
    if (!perfmon_accuracy_text(out)) {
        return;
    }

    perfmon_accuracy_printf(out, "multiplexing error: estimate = count x "
                            "enabled / running, against the exact count "
                            "of the same span");
    perfmon_accuracy_printf(out, "(perfmon.mux_ms=%u, a boot option; %u runs "
                            "a workload; error in parts per million)",
                            mux_ms, runs);
    perfmon_accuracy_printf(out, "%-6s %-13s %-8s %6s %-22s %10s %6s %7s "
                            "%8s %9s %10s", "device", "events", "workload",
                            "ev/ctr", "exact count", "loop", "share",
                            "cover", "bias ppm", "mean ppm", "worst ppm");
}

/* "1,234" or "1,234..1,240": the exact counts of the runs. */
static void
perfmon_accuracy_fmt_range(char *buf, size_t size, uint64_t lo, uint64_t hi)
{
    char a[32], b[32];

    num_fmt_count(a, sizeof(a), lo);

    if (lo == hi) {
        ksnprintf(buf, size, "%s", a);
    } else {
        num_fmt_count(b, sizeof(b), hi);
        ksnprintf(buf, size, "%s..%s", a, b);
    }
}

void
perfmon_accuracy_mux_print(const struct perfmon_accuracy_out *out,
                           const struct perfmon_accuracy_mux_row *row)
{
    const struct perfmon_accuracy_err *err = &row->err;
    char range[64], loop[32], share[16], cover[16], event[16];
    const char *s = out->sep;

    if (row->event >= 0) {
        ksnprintf(event, sizeof(event), "%d", row->event);
    } else {
        ksnprintf(event, sizeof(event), "all");
    }

    if (out->json) {
        perfmon_accuracy_printf(out, "{\"measure\" : \"mux\", \"device\" : "
                                "\"%s\", \"events\" : \"%s\", \"workload\" : "
                                "\"%s\", \"event\" : \"%s\", \"mux_ms\" : %u, "
                                "\"runs\" : %u, \"nr_events\" : %u, "
                                "\"nr_counters\" : %u, \"exact_min\" : %llu, "
                                "\"exact_max\" : %llu, \"loop\" : %llu, "
                                "\"share_ppm\" : %llu, \"cover_ppm\" : %llu, "
                                "\"bias_ppm\" : %lld, \"mean_ppm\" : %llu, "
                                "\"worst_ppm\" : %lld, \"uncounted\" : %u}",
                                row->dev, row->event_name, row->workload,
                                event, row->mux_ms, row->runs, row->nr_events,
                                row->nr_counters,
                                (unsigned long long)row->exact_min,
                                (unsigned long long)row->exact_max,
                                (unsigned long long)row->loop,
                                (unsigned long long)row->share_ppm,
                                (unsigned long long)row->cover_ppm,
                                (long long)perfmon_accuracy_err_bias(err),
                                (unsigned long long)perfmon_accuracy_err_mean(err),
                                (long long)err->worst, err->nr_uncounted);
        return;
    }

    if (s != NULL) {
        perfmon_accuracy_printf(out, "mux%s%s%s%s%s%s%s%s%s%u%s%u%s%u%s%u%s"
                                "%llu%s%llu%s%llu%s%llu%s%llu%s%lld%s%llu%s"
                                "%lld%s%u",
                                s, row->dev, s, row->event_name, s,
                                row->workload, s, event, s, row->mux_ms, s,
                                row->runs, s, row->nr_events, s,
                                row->nr_counters, s,
                                (unsigned long long)row->exact_min, s,
                                (unsigned long long)row->exact_max, s,
                                (unsigned long long)row->loop, s,
                                (unsigned long long)row->share_ppm, s,
                                (unsigned long long)row->cover_ppm, s,
                                (long long)perfmon_accuracy_err_bias(err), s,
                                (unsigned long long)perfmon_accuracy_err_mean(err),
                                s, (long long)err->worst, s,
                                err->nr_uncounted);
        return;
    }

    perfmon_accuracy_fmt_range(range, sizeof(range), row->exact_min,
                               row->exact_max);

    if (row->loop != 0) {
        num_fmt_count(loop, sizeof(loop), row->loop);
    } else {
        ksnprintf(loop, sizeof(loop), "-");
    }

    num_fmt_ratio(share, sizeof(share), row->share_ppm, 10000, 1, false);
    num_fmt_ratio(cover, sizeof(cover), row->cover_ppm, 10000, 1, false);
    perfmon_accuracy_printf(out, "%-6s %-13s %-8s %3u/%-2u %-22s %10s %5s%% "
                            "%6s%% %8lld %9llu %10lld%s", row->dev,
                            row->event_name, row->workload, row->nr_events,
                            row->nr_counters, range, loop, share, cover,
                            (long long)perfmon_accuracy_err_bias(err),
                            (unsigned long long)perfmon_accuracy_err_mean(err),
                            (long long)err->worst,
                            (err->nr_uncounted != 0) ? "  (some never "
                            "counted)" : "");
}

/* ---- over-count ---------------------------------------------------------- */

int
perfmon_accuracy_overcount(const struct perfmon_accuracy_oc_in *in,
                           struct perfmon_accuracy_oc *oc)
{
    uint64_t short_min = UINT64_MAX, calls;
    int64_t sum = 0;

    if (in == NULL || oc == NULL || in->hw_short == NULL
        || in->hw_long == NULL || in->nr == 0
        || in->calls_long <= in->calls_short
        || in->exact_long < in->exact_short) {
        return -EINVAL;
    }

    for (unsigned int i = 0; i < in->nr; i++) {
        short_min = MIN(short_min, in->hw_short[i]);
    }

    calls = in->calls_long - in->calls_short;
    oc->calls = calls;
    oc->exact = in->exact_long - in->exact_short;
    oc->nr = in->nr;
    oc->min = INT64_MAX;
    oc->max = INT64_MIN;

    for (unsigned int i = 0; i < in->nr; i++) {
        int64_t over = (int64_t)(in->hw_long[i] - short_min - oc->exact);

        oc->min = MIN(oc->min, over);
        oc->max = MAX(oc->max, over);
        sum += over;
    }

    oc->mean = sum / (int64_t)in->nr;
    oc->per_call_milli_min = oc->min * 1000 / (int64_t)calls;
    oc->per_call_milli_max = oc->max * 1000 / (int64_t)calls;
    return 0;
}

void
perfmon_accuracy_oc_head(const struct perfmon_accuracy_out *out)
{
    if (!perfmon_accuracy_text(out)) {
        return;
    }

    perfmon_accuracy_printf(out, "hardware over-count: the hardware "
                            "instructions event's count of a region minus "
                            "the step PMU's exact count");
    perfmon_accuracy_printf(out, "%-28s %-10s %6s %12s %8s %8s %8s %18s",
                            "counter", "interrupts", "calls", "exact", "min",
                            "mean", "max", "per call min..max");
}

/* "-1.234" from thousandths. */
static void
perfmon_accuracy_fmt_milli(char *buf, size_t size, int64_t milli)
{
    uint64_t a = perfmon_accuracy_abs(milli);

    ksnprintf(buf, size, "%s%llu.%03llu", (milli < 0) ? "-" : "",
              (unsigned long long)(a / 1000), (unsigned long long)(a % 1000));
}

void
perfmon_accuracy_oc_print(const struct perfmon_accuracy_out *out,
                          const char *name, const char *intr,
                          const struct perfmon_accuracy_oc *oc)
{
    char lo[24], hi[24], range[52];
    const char *s = out->sep;

    perfmon_accuracy_fmt_milli(lo, sizeof(lo), oc->per_call_milli_min);
    perfmon_accuracy_fmt_milli(hi, sizeof(hi), oc->per_call_milli_max);

    if (out->json) {
        perfmon_accuracy_printf(out, "{\"measure\" : \"overcount\", "
                                "\"counter\" : \"%s\", \"interrupts\" : "
                                "\"%s\", \"calls\" : %llu, \"exact\" : %llu, "
                                "\"runs\" : %u, \"min\" : %lld, \"mean\" : "
                                "%lld, \"max\" : %lld, \"per_call_min\" : %s, "
                                "\"per_call_max\" : %s}", name, intr,
                                (unsigned long long)oc->calls,
                                (unsigned long long)oc->exact, oc->nr,
                                (long long)oc->min, (long long)oc->mean,
                                (long long)oc->max, lo, hi);
    } else if (s != NULL) {
        perfmon_accuracy_printf(out, "overcount%s%s%s%s%s%llu%s%llu%s%u%s%lld"
                                "%s%lld%s%lld%s%s%s%s", s, name, s, intr, s,
                                (unsigned long long)oc->calls, s,
                                (unsigned long long)oc->exact, s, oc->nr, s,
                                (long long)oc->min, s, (long long)oc->mean, s,
                                (long long)oc->max, s, lo, s, hi);
    } else {
        ksnprintf(range, sizeof(range), "%s..%s", lo, hi);
        perfmon_accuracy_printf(out, "%-28s %-10s %6llu %12llu %8lld %8lld "
                                "%8lld %18s", name, intr,
                                (unsigned long long)oc->calls,
                                (unsigned long long)oc->exact,
                                (long long)oc->min, (long long)oc->mean,
                                (long long)oc->max, range);
    }
}

/* ---- skid ---------------------------------------------------------------- */

int
perfmon_accuracy_loop_index(const uint64_t *addrs, unsigned int nr,
                            uint64_t ip)
{
    unsigned int lo = 0, hi = nr;

    while (lo < hi) {
        unsigned int mid = lo + (hi - lo) / 2;

        if (addrs[mid] < ip) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }

    return (lo < nr && addrs[lo] == ip) ? (int)lo : -1;
}

unsigned int
perfmon_accuracy_skid_bin(int64_t distance)
{
    if (distance < 0) {
        return 0;
    } else if (distance < 4) {
        return 1 + (unsigned int)distance;
    } else if (distance < 8) {
        return 5;
    } else if (distance < 16) {
        return 6;
    } else if (distance < 32) {
        return 7;
    }

    return 8;
}

int
perfmon_accuracy_skid(const uint64_t *addrs, unsigned int nr_addrs,
                      const uint64_t *exact, const uint64_t *hw,
                      unsigned int nr_samples,
                      struct perfmon_accuracy_skid *skid)
{
    int64_t len = (int64_t)nr_addrs;

    if (addrs == NULL || exact == NULL || hw == NULL || skid == NULL
        || nr_addrs < 2) {
        return -EINVAL;
    }

    *skid = (struct perfmon_accuracy_skid){ .min = INT64_MAX,
                                            .max = INT64_MIN };

    for (unsigned int k = 0; k < nr_samples; k++) {
        int e = perfmon_accuracy_loop_index(addrs, nr_addrs, exact[k]);
        int h = perfmon_accuracy_loop_index(addrs, nr_addrs, hw[k]);
        int64_t d;

        if (e < 0 || h < 0) {
            skid->nr_outside++;
            continue;
        }

        /* Round the loop, to -len/2 .. len/2 - 1. */
        d = ((int64_t)h - e) % len;
        d = (d + len + len / 2) % len - len / 2;
        skid->nr++;
        skid->sum += d;
        skid->min = MIN(skid->min, d);
        skid->max = MAX(skid->max, d);
        skid->bins[perfmon_accuracy_skid_bin(d)]++;
    }

    if (skid->nr == 0) {
        skid->min = skid->max = 0;
    }

    return 0;
}

void
perfmon_accuracy_skid_print(const struct perfmon_accuracy_out *out,
                            const char *name, uint64_t period,
                            const struct perfmon_accuracy_skid *skid)
{
    const char *s = out->sep;
    char mean[24];

    perfmon_accuracy_fmt_milli(mean, sizeof(mean),
                               (skid->nr == 0) ? 0
                               : skid->sum * 1000 / (int64_t)skid->nr);

    if (perfmon_accuracy_text(out)) {
        perfmon_accuracy_printf(out, "skid, %s: samples every %llu "
                                "instructions; %u compared, %u outside the "
                                "loop; distance min %lld, mean %s, max %lld",
                                name, (unsigned long long)period, skid->nr,
                                skid->nr_outside, (long long)skid->min, mean,
                                (long long)skid->max);
        perfmon_accuracy_printf(out, "  %-8s %8s", "distance", "samples");
    } else if (out->json) {
        perfmon_accuracy_printf(out, "{\"measure\" : \"skid\", \"counter\" : "
                                "\"%s\", \"period\" : %llu, \"samples\" : %u, "
                                "\"outside\" : %u, \"min\" : %lld, \"mean\" : "
                                "%s, \"max\" : %lld}", name,
                                (unsigned long long)period, skid->nr,
                                skid->nr_outside, (long long)skid->min, mean,
                                (long long)skid->max);
    } else {
        perfmon_accuracy_printf(out, "skid%s%s%s%llu%s%u%s%u%s%lld%s%s%s%lld",
                                s, name, s, (unsigned long long)period, s,
                                skid->nr, s, skid->nr_outside, s,
                                (long long)skid->min, s, mean, s,
                                (long long)skid->max);
    }

    for (unsigned int i = 0; i < PERFMON_ACCURACY_SKID_BINS; i++) {
        const char *bin = perfmon_accuracy_bin_names[i];

        if (perfmon_accuracy_text(out)) {
            perfmon_accuracy_printf(out, "  %-8s %8u", bin, skid->bins[i]);
        } else if (out->json) {
            perfmon_accuracy_printf(out, "{\"measure\" : \"skid-bin\", "
                                    "\"counter\" : \"%s\", \"distance\" : "
                                    "\"%s\", \"samples\" : %u}", name, bin,
                                    skid->bins[i]);
        } else {
            perfmon_accuracy_printf(out, "skid-bin%s%s%s%s%s%u", s, name, s,
                                    bin, s, skid->bins[i]);
        }
    }
}

void
perfmon_accuracy_need_pmu(const struct perfmon_accuracy_out *out,
                          const char *what, const char *why)
{
    if (out->json) {
        perfmon_accuracy_printf(out, "{\"measure\" : \"%s\", \"skipped\" : "
                                "\"needs a hardware PMU: %s\"}", what, why);
    } else if (out->sep != NULL) {
        perfmon_accuracy_printf(out, "%s%sskipped%sneeds a hardware PMU: %s",
                                what, out->sep, out->sep, why);
    } else {
        perfmon_accuracy_printf(out, "%s: needs a hardware PMU (%s)", what,
                                why);
    }
}

void
perfmon_accuracy_fail(const struct perfmon_accuracy_out *out,
                      const char *what, const char *why)
{
    if (out->json) {
        perfmon_accuracy_printf(out, "{\"measure\" : \"%s\", \"failed\" : "
                                "\"%s\"}", what, why);
    } else if (out->sep != NULL) {
        perfmon_accuracy_printf(out, "%s%sfailed%s%s", what, out->sep,
                                out->sep, why);
    } else {
        perfmon_accuracy_printf(out, "%s: cannot measure: %s", what, why);
    }
}
