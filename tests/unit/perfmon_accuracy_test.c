/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of kern/perfmon/cmd/perfmon_accuracy_calc.c, the measurements of
 * `perfmon selftest --accuracy`, on counts and addresses made here with a
 * known error injected: a small model of a run (a region of known exact
 * instructions, a hardware counter that adds a chosen over-count per call
 * and per interrupt; samples on a loop of known addresses that land a
 * chosen number of instructions late) stands in for the machine, and each
 * test checks that the measurement reports what was injected, in the
 * table a user reads and in the -x and -j lines a script reads.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kern/error.h"
#include "kern/perfmon/cmd/perfmon_accuracy_calc.h"

/* ---- the lines printed --------------------------------------------------- */

#define TEST_MAX_LINES  32

static char test_lines[TEST_MAX_LINES][512];
static unsigned int test_nr_lines;

static void
test_print(void *arg, const char *line)
{
    (void)arg;
    assert_true(test_nr_lines < TEST_MAX_LINES);
    snprintf(test_lines[test_nr_lines++], sizeof(test_lines[0]), "%s", line);
}

static int
setup(void **state)
{
    (void)state;
    test_nr_lines = 0;
    return 0;
}

static const struct perfmon_accuracy_out test_text = { .print = test_print };
static const struct perfmon_accuracy_out test_csv = { .print = test_print,
                                                      .sep = "," };
static const struct perfmon_accuracy_out test_json = { .print = test_print,
                                                       .json = true };

/* ---- the injection model ------------------------------------------------- */

/*
 * A run of calls calls of a region of insns_per_call instructions, with a
 * fixed cost fixed of starting and stopping the counter, as the step PMU
 * counts it (exact), and as a hardware counter that over-counts over_milli
 * thousandths of an instruction per call and intr_cost per interrupt
 * arriving, nr_intrs of them.
 */
struct test_region {
    uint64_t insns_per_call;
    uint64_t fixed;
    uint64_t over_milli;
    uint64_t intr_cost;
};

static uint64_t
test_region_exact(const struct test_region *r, uint64_t calls)
{
    return r->fixed + calls * r->insns_per_call;
}

static uint64_t
test_region_hw(const struct test_region *r, uint64_t calls,
               unsigned int nr_intrs)
{
    /* Another fixed cost: the hardware device's own start and stop. */
    return 17 + test_region_exact(r, calls) + calls * r->over_milli / 1000
           + nr_intrs * r->intr_cost;
}

/*
 * The addresses of a loop: 130 instructions of 4 bytes from 0x1000, the
 * last one its branch back.
 */
#define TEST_LOOP_LEN   130

static uint64_t test_loop[TEST_LOOP_LEN];

static void
test_loop_init(void)
{
    for (unsigned int i = 0; i < TEST_LOOP_LEN; i++) {
        test_loop[i] = 0x1000 + 4 * i;
    }
}

/*
 * nr samples every period instructions from loop index first: exact[k] the
 * exact Nth instructions, hw[k] skid[k] instructions later.
 */
static void
test_samples(uint64_t *exact, uint64_t *hw, const int *skid, unsigned int nr,
             unsigned int first, uint64_t period)
{
    for (unsigned int k = 0; k < nr; k++) {
        uint64_t pos = first + k * period;

        exact[k] = test_loop[pos % TEST_LOOP_LEN];
        hw[k] = test_loop[(pos + TEST_LOOP_LEN + skid[k]) % TEST_LOOP_LEN];
    }
}

/* ---- multiplexing -------------------------------------------------------- */

static void
test_scale(void **state)
{
    (void)state;
    assert_int_equal(perfmon_accuracy_scale(500, 1000, 500), 1000);
    assert_int_equal(perfmon_accuracy_scale(333, 1000, 333), 1000);
    assert_int_equal(perfmon_accuracy_scale(100, 3, 2), 150);
    /* Always counted, or never: the count as it is. */
    assert_int_equal(perfmon_accuracy_scale(100, 1000, 1000), 100);
    assert_int_equal(perfmon_accuracy_scale(100, 1000, 0), 100);
    /* No overflow in the product. */
    assert_int_equal(perfmon_accuracy_scale(1ULL << 62, 1ULL << 40,
                                            1ULL << 39), 1ULL << 63);
}

static void
test_ppm(void **state)
{
    (void)state;
    assert_int_equal(perfmon_accuracy_ppm(1000, 1000), 0);
    assert_int_equal(perfmon_accuracy_ppm(1001, 1000), 1000);
    assert_int_equal(perfmon_accuracy_ppm(999, 1000), -1000);
    assert_int_equal(perfmon_accuracy_ppm(1000000, 1000001), 0);
    assert_int_equal(perfmon_accuracy_ppm(1000000, 1000002), -1);
    assert_int_equal(perfmon_accuracy_ppm(0, 0), 0);
    assert_int_equal(perfmon_accuracy_ppm(5, 0), PERFMON_ACCURACY_PPM);
    assert_int_equal(perfmon_accuracy_ppm(UINT64_MAX, 1), INT32_MAX);
    assert_int_equal(perfmon_accuracy_ppm(0, 7), -PERFMON_ACCURACY_PPM);
}

static void
test_err(void **state)
{
    struct perfmon_accuracy_err a, b;

    (void)state;
    perfmon_accuracy_err_init(&a);
    assert_int_equal(perfmon_accuracy_err_mean(&a), 0);
    perfmon_accuracy_err_add(&a, 100);
    perfmon_accuracy_err_add(&a, -300);
    perfmon_accuracy_err_add(&a, 200);
    assert_int_equal(a.nr, 3);
    assert_int_equal(perfmon_accuracy_err_mean(&a), 200);
    assert_int_equal(perfmon_accuracy_err_bias(&a), 0);
    assert_int_equal(a.worst, -300);

    perfmon_accuracy_err_init(&b);
    perfmon_accuracy_err_add(&b, 400);
    perfmon_accuracy_err_uncounted(&b);
    perfmon_accuracy_err_merge(&a, &b);
    assert_int_equal(a.nr, 4);
    assert_int_equal(a.nr_uncounted, 1);
    assert_int_equal(perfmon_accuracy_err_mean(&a), 250);
    assert_int_equal(perfmon_accuracy_err_bias(&a), 100);
    assert_int_equal(a.worst, 400);
    perfmon_accuracy_err_init(&b);
    assert_int_equal(perfmon_accuracy_err_bias(&b), 0);
}

/*
 * Estimates of a run in which six events took turns on three counters,
 * each counting half the span: counts a little off half of the exact
 * one, as a workload that is not quite steady gives them.
 */
static void
test_mux_estimates(void **state)
{
    static const uint64_t exact = 400000;
    static const uint64_t counts[] = { 200000, 200400, 199800, 201000,
                                       200000, 199000 };
    struct perfmon_accuracy_mux_row row = {
        .dev = "step", .event_name = "instructions", .workload = "spin",
        .event = -1, .mux_ms = 4, .runs = 1, .nr_events = 6,
        .nr_counters = 3, .exact_min = exact, .exact_max = exact,
        .loop = 399996, .share_ppm = 500000, .cover_ppm = 1000300,
    };

    (void)state;
    perfmon_accuracy_err_init(&row.err);

    for (unsigned int i = 0; i < 6; i++) {
        uint64_t est = perfmon_accuracy_scale(counts[i], 2000, 1000);

        perfmon_accuracy_err_add(&row.err, perfmon_accuracy_ppm(est, exact));
    }

    /*
     * 0, 2000, -1000, 5000, 0, -5000 ppm: mean 2166, bias 166, the worst
     * +5000 (the first of the two).
     */
    assert_int_equal(perfmon_accuracy_err_mean(&row.err), 2166);
    assert_int_equal(perfmon_accuracy_err_bias(&row.err), 166);
    assert_int_equal(row.err.worst, 5000);

    perfmon_accuracy_mux_head(&test_text, 4, 1);
    perfmon_accuracy_mux_print(&test_text, &row);
    assert_int_equal(test_nr_lines, 4);
    assert_non_null(strstr(test_lines[1], "perfmon.mux_ms=4"));
    assert_non_null(strstr(test_lines[2], "worst ppm"));
    assert_non_null(strstr(test_lines[3], "step"));
    assert_non_null(strstr(test_lines[3], "400,000"));
    assert_non_null(strstr(test_lines[3], "399,996"));
    assert_non_null(strstr(test_lines[3], "50.0%"));
    assert_non_null(strstr(test_lines[3], "100.0%"));
    assert_non_null(strstr(test_lines[3], " 166 "));
    assert_non_null(strstr(test_lines[3], " 2166 "));
    assert_non_null(strstr(test_lines[3], " 5000"));

    perfmon_accuracy_mux_head(&test_csv, 4, 1);
    perfmon_accuracy_mux_print(&test_csv, &row);
    assert_int_equal(test_nr_lines, 5);
    assert_string_equal(test_lines[4], "mux,step,instructions,spin,all,4,1,"
                        "6,3,400000,400000,399996,500000,1000300,166,2166,"
                        "5000,0");

    row.event = 2;
    row.exact_max = exact + 3;
    perfmon_accuracy_err_uncounted(&row.err);
    perfmon_accuracy_mux_head(&test_json, 4, 1);
    perfmon_accuracy_mux_print(&test_json, &row);
    assert_int_equal(test_nr_lines, 6);
    assert_string_equal(test_lines[5], "{\"measure\" : \"mux\", \"device\" : "
                        "\"step\", \"events\" : \"instructions\", "
                        "\"workload\" : \"spin\", \"event\" : \"2\", "
                        "\"mux_ms\" : 4, \"runs\" : 1, \"nr_events\" : 6, "
                        "\"nr_counters\" : 3, \"exact_min\" : 400000, "
                        "\"exact_max\" : 400003, \"loop\" : 399996, "
                        "\"share_ppm\" : 500000, \"cover_ppm\" : 1000300, "
                        "\"bias_ppm\" : 166, \"mean_ppm\" : 2166, "
                        "\"worst_ppm\" : 5000, \"uncounted\" : 1}");

    /* Exact counts that differ show as a range; a never-counted event. */
    perfmon_accuracy_mux_print(&test_text, &row);
    assert_non_null(strstr(test_lines[6], "400,000..400,003"));
    assert_non_null(strstr(test_lines[6], "never counted"));
}

/* ---- over-count ---------------------------------------------------------- */

/* 2.5 instructions too many a call, no interrupt: reported as injected. */
static void
test_overcount_per_call(void **state)
{
    struct test_region r = { .insns_per_call = 1000, .fixed = 300,
                             .over_milli = 2500 };
    uint64_t hw_short[3], hw_long[3];
    struct perfmon_accuracy_oc_in in = {
        .calls_short = 10, .calls_long = 1010,
        .exact_short = test_region_exact(&r, 10),
        .exact_long = test_region_exact(&r, 1010),
        .hw_short = hw_short, .hw_long = hw_long, .nr = 3,
    };
    struct perfmon_accuracy_oc oc;

    (void)state;

    for (unsigned int i = 0; i < 3; i++) {
        hw_short[i] = test_region_hw(&r, 10, 0);
        hw_long[i] = test_region_hw(&r, 1010, 0);
    }

    assert_int_equal(perfmon_accuracy_overcount(&in, &oc), 0);
    assert_int_equal(oc.calls, 1000);
    assert_int_equal(oc.exact, 1000000);
    assert_int_equal(oc.min, 2500);
    assert_int_equal(oc.max, 2500);
    assert_int_equal(oc.mean, 2500);
    assert_int_equal(oc.per_call_milli_min, 2500);
    assert_int_equal(oc.per_call_milli_max, 2500);

    perfmon_accuracy_oc_head(&test_text);
    perfmon_accuracy_oc_print(&test_text, "instructions, fixed counter",
                              "off", &oc);
    assert_int_equal(test_nr_lines, 3);
    assert_non_null(strstr(test_lines[2], "2.500..2.500"));
    perfmon_accuracy_oc_head(&test_csv);
    perfmon_accuracy_oc_print(&test_csv, "fixed", "off", &oc);
    assert_string_equal(test_lines[3], "overcount,fixed,off,1000,1000000,3,"
                        "2500,2500,2500,2.500,2.500");
    perfmon_accuracy_oc_print(&test_json, "fixed", "off", &oc);
    assert_string_equal(test_lines[4], "{\"measure\" : \"overcount\", "
                        "\"counter\" : \"fixed\", \"interrupts\" : \"off\", "
                        "\"calls\" : 1000, \"exact\" : 1000000, \"runs\" : 3, "
                        "\"min\" : 2500, \"mean\" : 2500, \"max\" : 2500, "
                        "\"per_call_min\" : 2.500, \"per_call_max\" : 2.500}");
}

/*
 * Interrupts arriving add their handlers' instructions: the spread over
 * runs is what they added, the smallest short run the baseline; an
 * interrupt in a short run does not move it.  An under-count shows
 * negative.
 */
static void
test_overcount_interrupts(void **state)
{
    struct test_region r = { .insns_per_call = 400, .fixed = 90,
                             .intr_cost = 150 };
    static const unsigned int intrs[] = { 0, 2, 5, 1 };
    uint64_t hw_short[4], hw_long[4];
    struct perfmon_accuracy_oc_in in = {
        .calls_short = 1, .calls_long = 101,
        .exact_short = test_region_exact(&r, 1),
        .exact_long = test_region_exact(&r, 101),
        .hw_short = hw_short, .hw_long = hw_long, .nr = 4,
    };
    struct perfmon_accuracy_oc oc;

    (void)state;

    for (unsigned int i = 0; i < 4; i++) {
        hw_short[i] = test_region_hw(&r, 1, 3 - i);
        hw_long[i] = test_region_hw(&r, 101, intrs[i]);
    }

    assert_int_equal(perfmon_accuracy_overcount(&in, &oc), 0);
    assert_int_equal(oc.min, 0);
    assert_int_equal(oc.max, 750);
    assert_int_equal(oc.mean, 300);
    assert_int_equal(oc.per_call_milli_max, 7500);

    hw_long[0] -= 7;
    assert_int_equal(perfmon_accuracy_overcount(&in, &oc), 0);
    assert_int_equal(oc.min, -7);
    assert_int_equal(oc.per_call_milli_min, -70);
    perfmon_accuracy_oc_print(&test_text, "gp", "on", &oc);
    assert_non_null(strstr(test_lines[0], "-0.070..7.500"));
}

static void
test_overcount_bad(void **state)
{
    uint64_t v[1] = { 5 };
    struct perfmon_accuracy_oc_in in = {
        .calls_short = 1, .calls_long = 2, .exact_short = 1, .exact_long = 2,
        .hw_short = v, .hw_long = v, .nr = 1,
    };
    struct perfmon_accuracy_oc oc;

    (void)state;
    assert_int_equal(perfmon_accuracy_overcount(NULL, &oc), -EINVAL);
    assert_int_equal(perfmon_accuracy_overcount(&in, NULL), -EINVAL);
    in.nr = 0;
    assert_int_equal(perfmon_accuracy_overcount(&in, &oc), -EINVAL);
    in.nr = 1;
    in.calls_long = 1;
    assert_int_equal(perfmon_accuracy_overcount(&in, &oc), -EINVAL);
    in.calls_long = 2;
    in.exact_long = 0;
    assert_int_equal(perfmon_accuracy_overcount(&in, &oc), -EINVAL);
    in.exact_long = 2;
    in.hw_long = NULL;
    assert_int_equal(perfmon_accuracy_overcount(&in, &oc), -EINVAL);
}

/* ---- skid ---------------------------------------------------------------- */

static void
test_loop_index(void **state)
{
    (void)state;
    test_loop_init();
    assert_int_equal(perfmon_accuracy_loop_index(test_loop, TEST_LOOP_LEN,
                                                 0x1000), 0);
    assert_int_equal(perfmon_accuracy_loop_index(test_loop, TEST_LOOP_LEN,
                                                 0x1004), 1);
    assert_int_equal(perfmon_accuracy_loop_index(test_loop, TEST_LOOP_LEN,
                                                 0x1000 + 4 * 129), 129);
    assert_int_equal(perfmon_accuracy_loop_index(test_loop, TEST_LOOP_LEN,
                                                 0x1002), -1);
    assert_int_equal(perfmon_accuracy_loop_index(test_loop, TEST_LOOP_LEN,
                                                 0xfff), -1);
    assert_int_equal(perfmon_accuracy_loop_index(test_loop, TEST_LOOP_LEN,
                                                 0x2000), -1);
    assert_int_equal(perfmon_accuracy_skid_bin(-1), 0);
    assert_int_equal(perfmon_accuracy_skid_bin(0), 1);
    assert_int_equal(perfmon_accuracy_skid_bin(3), 4);
    assert_int_equal(perfmon_accuracy_skid_bin(4), 5);
    assert_int_equal(perfmon_accuracy_skid_bin(15), 6);
    assert_int_equal(perfmon_accuracy_skid_bin(31), 7);
    assert_int_equal(perfmon_accuracy_skid_bin(32), 8);
}

/*
 * No skid: every distance 0.  With skid injected: the distances are the
 * injected ones, also where the late sample wraps round the loop's
 * branch back to its top, and an early one shows negative.
 */
static void
test_skid_injected(void **state)
{
    static const int none[8] = { 0 };
    static const int skid[8] = { 1, 1, 2, 0, 5, 40, -2, 1 };
    static const unsigned int bins[PERFMON_ACCURACY_SKID_BINS] = {
        1, 1, 3, 1, 0, 1, 0, 0, 1,
    };
    uint64_t exact[8], hw[8];
    struct perfmon_accuracy_skid s;

    (void)state;
    test_loop_init();
    test_samples(exact, hw, none, 8, 3, 1000);
    assert_int_equal(perfmon_accuracy_skid(test_loop, TEST_LOOP_LEN, exact,
                                           hw, 8, &s), 0);
    assert_int_equal(s.nr, 8);
    assert_int_equal(s.min, 0);
    assert_int_equal(s.max, 0);
    assert_int_equal(s.bins[1], 8);

    /* Sample 0 at the branch back: one late is the loop's top. */
    test_samples(exact, hw, skid, 8, TEST_LOOP_LEN - 1, 1000);
    assert_int_equal(perfmon_accuracy_skid(test_loop, TEST_LOOP_LEN, exact,
                                           hw, 8, &s), 0);
    assert_int_equal(exact[0], test_loop[TEST_LOOP_LEN - 1]);
    assert_int_equal(hw[0], test_loop[0]);
    assert_int_equal(s.nr, 8);
    assert_int_equal(s.nr_outside, 0);
    assert_int_equal(s.min, -2);
    assert_int_equal(s.max, 40);
    assert_int_equal(s.sum, 48);
    assert_memory_equal(s.bins, bins, sizeof(bins));

    perfmon_accuracy_skid_print(&test_text, "fixed counter", 1000, &s);
    assert_int_equal(test_nr_lines, 2 + PERFMON_ACCURACY_SKID_BINS);
    assert_non_null(strstr(test_lines[0], "min -2, mean 6.000, max 40"));
    assert_string_equal(test_lines[2], "  <0              1");
    assert_string_equal(test_lines[4], "  1               3");
    assert_string_equal(test_lines[10], "  >=32            1");

    test_nr_lines = 0;
    perfmon_accuracy_skid_print(&test_csv, "gp", 1000, &s);
    assert_string_equal(test_lines[0], "skid,gp,1000,8,0,-2,6.000,40");
    assert_string_equal(test_lines[3], "skid-bin,gp,1,3");
    test_nr_lines = 0;
    perfmon_accuracy_skid_print(&test_json, "gp", 1000, &s);
    assert_string_equal(test_lines[0], "{\"measure\" : \"skid\", \"counter\" "
                        ": \"gp\", \"period\" : 1000, \"samples\" : 8, "
                        "\"outside\" : 0, \"min\" : -2, \"mean\" : 6.000, "
                        "\"max\" : 40}");
    assert_string_equal(test_lines[1], "{\"measure\" : \"skid-bin\", "
                        "\"counter\" : \"gp\", \"distance\" : \"<0\", "
                        "\"samples\" : 1}");
}

/* A sample outside the loop (an interrupt handler's) is counted apart. */
static void
test_skid_outside(void **state)
{
    uint64_t exact[3] = { 0x1000, 0x1010, 0x1020 };
    uint64_t hw[3] = { 0x1004, 0xdead0, 0x1020 };
    struct perfmon_accuracy_skid s;

    (void)state;
    test_loop_init();
    assert_int_equal(perfmon_accuracy_skid(test_loop, TEST_LOOP_LEN, exact,
                                           hw, 3, &s), 0);
    assert_int_equal(s.nr, 2);
    assert_int_equal(s.nr_outside, 1);
    assert_int_equal(s.max, 1);

    hw[0] = hw[2] = 0xdead0;
    assert_int_equal(perfmon_accuracy_skid(test_loop, TEST_LOOP_LEN, exact,
                                           hw, 3, &s), 0);
    assert_int_equal(s.nr, 0);
    assert_int_equal(s.min, 0);
    assert_int_equal(s.max, 0);
    perfmon_accuracy_skid_print(&test_text, "gp", 7, &s);
    assert_non_null(strstr(test_lines[0], "0 compared, 3 outside"));

    assert_int_equal(perfmon_accuracy_skid(test_loop, 1, exact, hw, 3, &s),
                     -EINVAL);
    assert_int_equal(perfmon_accuracy_skid(NULL, 3, exact, hw, 3, &s),
                     -EINVAL);
    assert_int_equal(perfmon_accuracy_skid(test_loop, 3, exact, hw, 3, NULL),
                     -EINVAL);
}

static void
test_need_pmu(void **state)
{
    (void)state;
    perfmon_accuracy_need_pmu(&test_text, "skid", "none (no CPUID leaf 0AH)");
    perfmon_accuracy_need_pmu(&test_csv, "skid", "none");
    perfmon_accuracy_need_pmu(&test_json, "overcount", "none");
    assert_string_equal(test_lines[0], "skid: needs a hardware PMU (none (no "
                        "CPUID leaf 0AH))");
    assert_string_equal(test_lines[1], "skid,skipped,needs a hardware PMU: "
                        "none");
    assert_string_equal(test_lines[2], "{\"measure\" : \"overcount\", "
                        "\"skipped\" : \"needs a hardware PMU: none\"}");

    /* A measurement that could not run says so in each form. */
    perfmon_accuracy_fail(&test_text, "skid", "out of memory");
    perfmon_accuracy_fail(&test_csv, "skid", "out of memory");
    perfmon_accuracy_fail(&test_json, "skid", "out of memory");
    assert_string_equal(test_lines[3], "skid: cannot measure: out of memory");
    assert_string_equal(test_lines[4], "skid,failed,out of memory");
    assert_string_equal(test_lines[5], "{\"measure\" : \"skid\", "
                        "\"failed\" : \"out of memory\"}");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_scale, setup),
        cmocka_unit_test_setup(test_ppm, setup),
        cmocka_unit_test_setup(test_err, setup),
        cmocka_unit_test_setup(test_mux_estimates, setup),
        cmocka_unit_test_setup(test_overcount_per_call, setup),
        cmocka_unit_test_setup(test_overcount_interrupts, setup),
        cmocka_unit_test_setup(test_overcount_bad, setup),
        cmocka_unit_test_setup(test_loop_index, setup),
        cmocka_unit_test_setup(test_skid_injected, setup),
        cmocka_unit_test_setup(test_skid_outside, setup),
        cmocka_unit_test_setup(test_need_pmu, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
