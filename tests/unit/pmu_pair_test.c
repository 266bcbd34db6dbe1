/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of the AMD driver's counter pairs (arch/x86/pmu_amd.c) on the
 * register-level model: on Zen, an event the model's lists mark as
 * large-increment gets from alloc an even counter with the Merge event on
 * its odd neighbour, pairs are given lowest first and never from an odd
 * counter left alone, freeing gives both back, and the pair counts what a
 * lone counter cannot (more than 15 events a cycle), exactly across
 * overflows, with PerfMonV2 and without.  A pair's allocation names both
 * its counters (alloc_counters); no lone counter is offered for such an
 * event, and the device says why.  tests/unit/pmu_pair_core_test.c drives
 * pairs through the real core.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/cpu.h"
#include "arch/x86/msr.h"
#include "arch/x86/pmu.h"
#include "arch/x86/pmu_evtab.h"
#include "fakes/pmu_perfmon.h"
#include "kern/error.h"
#include "kern/perfmon.h"
#include "kern/perfmon_evtab.h"
#include "msr_model.h"
#include "pmu_test_common.h"

#define KERN        PERFMON_EF_KERN
#define MERGE_SEL   (PMU_AMD_RAW(0xfff, 0) | PMU_EVTSEL_EN)

static struct pmu_caps caps;

/* A Zen 3 (family 19h model 01h) with its event table; its FLOPs code. */
static struct perfmon_dev *
boot_zen3(bool v2, uint64_t *flopsp)
{
    struct msr_model_config c = msr_model_amd(0x19, true, v2);
    struct perfmon_dev *dev = pmu_test_boot(&pmu_amd_driver, &caps, &c, true);
    const struct perfmon_evtab_model *m;

    pmu_evtab_setup(CPU_VENDOR_AMD, 0x19, 0x01, 1);
    m = perfmon_evtab_host();
    assert_string_equal(m->name, "amdzen3");
    *flopsp = pmu_evtab_raw(m, perfmon_evtab_lookup(m,
                                                    "fp_ret_sse_avx_ops.all"));
    assert_int_equal(*flopsp, msr_model_event_code(&c, MSR_MODEL_EV_FP_OPS));
    return dev;
}

static void
test_pair_alloc(void **state)
{
    uint64_t flops, counters, prefer;
    unsigned int hw, hw2, hw3;
    struct perfmon_dev *dev;
    int h1, h2, ha, hb;

    (void)state;
    dev = boot_zen3(true, &flops);

    /* No lone counter: the reason says where it counts. */
    assert_int_equal(dev->ops->counters(dev, flops, KERN, &counters,
                                        &prefer), -ENOENT);
    assert_string_equal(dev->ops->why_not(dev, flops),
                        "a large-increment event counts on a counter pair, "
                        "pinned events only (:D)");
    assert_null(dev->ops->why_not(dev, PMU_AMD_RAW(0x0c0, 0)));

    h1 = fake_perfmon_open_raw(flops, KERN, &hw);
    assert_true(h1 >= 0);
    assert_int_equal(hw, 0);
    assert_int_equal(pmu_test_peek(MSR_AMD_F15H_PERF_CTL0 + 2), MERGE_SEL);
    assert_int_equal(pmu_test_peek(MSR_AMD_F15H_PERF_CTR0 + 2), 0xffff);

    /* It takes its odd counter too, which the core reserves with it. */
    assert_int_equal(dev->ops->alloc_counters(dev, hw), 0x3);

    /* The next pair. */
    h2 = fake_perfmon_open_raw(flops, KERN, &hw);
    assert_true(h2 >= 0);
    assert_int_equal(hw, 2);
    assert_int_equal(pmu_test_peek(MSR_AMD_F15H_PERF_CTL0 + 6), MERGE_SEL);

    /* Counter 4 taken: counter 5 alone is no pair. */
    ha = fake_perfmon_open(PERFMON_EV_INSTRUCTION, KERN, &hw);
    assert_int_equal(hw, 4);
    assert_int_equal(dev->ops->alloc_counters(dev, 2), 0xc);
    assert_int_equal(dev->ops->alloc_counters(dev, 4), 0x10);
    assert_int_equal(fake_perfmon_open_raw(flops, KERN, &hw), -EAGAIN);
    fake_perfmon_close(ha);

    /* Freed, a pair gives back both its counters. */
    fake_perfmon_close(h1);
    assert_int_equal(pmu_test_peek(MSR_AMD_F15H_PERF_CTL0 + 2), 0);
    ha = fake_perfmon_open(PERFMON_EV_INSTRUCTION, KERN, &hw2);
    hb = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, &hw3);
    assert_int_equal(hw2, 0);
    assert_int_equal(hw3, 1);

    /* Counter 0 free again, 1 taken: the pair is 4-5, not 0. */
    fake_perfmon_close(ha);
    h1 = fake_perfmon_open_raw(flops, KERN, &hw);
    assert_int_equal(hw, 4);
    fake_perfmon_close(h1);
    fake_perfmon_close(hb);
    fake_perfmon_close(h2);
    pmu_test_assert_no_fault();
}

/*
 * Zen 4's list says nothing of the Merge event, but its FLOPs are the
 * same event (PMCx003): they pair too.  Other events keep lone counters.
 */
static void
test_pair_zen4(void **state)
{
    struct msr_model_config c = msr_model_kvm_amd();
    const struct perfmon_evtab_model *m;
    unsigned int hw;
    uint64_t flops;
    int h, hi;

    (void)state;
    pmu_test_boot(&pmu_amd_driver, &caps, &c, true);
    pmu_evtab_setup(CPU_VENDOR_AMD, 0x19, 0x11, 1);
    m = perfmon_evtab_host();
    assert_string_equal(m->name, "amdzen4");
    hi = fake_perfmon_open(PERFMON_EV_INSTRUCTION, KERN, &hw);
    assert_int_equal(hw, 0);
    flops = pmu_evtab_raw(m, perfmon_evtab_lookup(m,
                                                   "fp_ret_sse_avx_ops.all"));
    h = fake_perfmon_open_raw(flops, KERN, &hw);
    assert_int_equal(hw, 2);
    assert_int_equal(pmu_test_peek(MSR_AMD_F15H_PERF_CTL0 + 6), MERGE_SEL);
    fake_perfmon_close(h);
    fake_perfmon_close(hi);
    pmu_test_assert_no_fault();
}

/*
 * 64 FLOPs a cycle: the pair counts them all, a lone counter (without the
 * table, nothing marks the event) at most 15 a cycle.  The read is the
 * pair's 64-bit count, its bits 63:48 the ones the driver keeps set.
 */
static void
test_pair_counts_what_one_cannot(void **state)
{
    struct perfmon_dev *dev;
    unsigned int hw;
    uint64_t flops;
    int h;

    (void)state;
    dev = boot_zen3(true, &flops);
    h = fake_perfmon_open_raw(flops, KERN, &hw);
    msr_model_inject_spread(MSR_MODEL_EV_FP_OPS, 6400, 100, false);
    assert_int_equal(dev->ops->read(dev, hw), (0xffffULL << 48) | 6400);
    assert_int_equal(fake_perfmon_close(h), 6400);

    pmu_evtab_setup(CPU_VENDOR_UNKNOWN, 0, 0, 0);
    h = fake_perfmon_open_raw(flops, KERN, &hw);
    msr_model_inject_spread(MSR_MODEL_EV_FP_OPS, 6400, 100, false);
    assert_int_equal(fake_perfmon_close(h), 1500);
    pmu_test_assert_no_fault();
}

/*
 * Each wrap of the bits the core sees is one overflow interrupt, the pair
 * set up again each time, and the count exact.
 */
static void
check_pair_wraps(bool v2)
{
    uint64_t flops, total = 0, step;
    struct perfmon_dev *dev;
    unsigned int hw;
    int h;

    dev = boot_zen3(v2, &flops);
    step = (3ULL << dev->width) / 4;
    h = fake_perfmon_open_raw(flops, KERN, &hw);

    for (unsigned int i = 0; i < 8; i++) {
        msr_model_inject(MSR_MODEL_EV_FP_OPS, step, false);
        total += step;
        pmu_test_deliver_nmis(dev);
    }

    assert_int_equal(fake_perfmon_nr_ovf_folds(), 6);
    assert_int_equal(fake_perfmon_close(h), total);
    pmu_test_assert_no_fault();
}

static void
test_pair_wraps_v2(void **state)
{
    (void)state;
    check_pair_wraps(true);
}

static void
test_pair_wraps_topbit(void **state)
{
    (void)state;
    check_pair_wraps(false);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pair_alloc),
        cmocka_unit_test(test_pair_zen4),
        cmocka_unit_test(test_pair_counts_what_one_cannot),
        cmocka_unit_test(test_pair_wraps_v2),
        cmocka_unit_test(test_pair_wraps_topbit),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
