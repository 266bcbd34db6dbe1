/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the AMD LbrExtV2 back end (arch/x86/lbr_amd.c) on the
 * register-level model with the AMD PMU driver (PerfMonV2): the probe and
 * its refusals (no Fn8000_0022, no LbrExtV2 as KVM guests see it, MSRs
 * that fault or drop writes); the stack read from entry 0, the newest,
 * addresses sign-extended, mispredicts from FROM, entries without a
 * retired branch (empty, wrong-path) passed over; the freeze, read,
 * unfreeze order through PerfCntrGlobalStatus where LbrAndPmcFreeze
 * exists, and the driver stopping the stack itself where it does not;
 * LBR_SELECT per filter; the reset at switch-in.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/lbr.h"
#include "arch/x86/msr.h"
#include "arch/x86/pmu.h"
#include "fakes/fake_smp.h"
#include "fakes/pmu_perfmon.h"
#include "kern/error.h"
#include "kern/perfmon.h"
#include "lbr_test_common.h"
#include "msr_model.h"
#include "pmu_test_common.h"

const struct pmu_driver *const lbr_test_pmu = &pmu_amd_driver;

static void
test_probe(void **state)
{
    struct msr_model_config c = msr_model_amd_lbr(16, true);
    const struct perfmon_branch_driver *drv;

    (void)state;
    drv = lbr_test_boot(&c, 2);
    assert_non_null(strstr(drv->desc, "AMD LbrExtV2, frozen on the PMI"));
    assert_int_equal(drv->depth, 16);
    assert_int_equal(drv->filters, PERFMON_BRF_MASK);

    c = msr_model_amd_lbr(16, false);
    drv = lbr_test_boot(&c, 1);
    assert_non_null(strstr(drv->desc, "no freeze"));
}

static void
test_probe_declines(void **state)
{
    struct msr_model_config c = msr_model_amd_lbr(16, true);
    const char *why;

    (void)state;

    /* A KVM guest: PerfMonV2, no LbrExtV2, and it says KVM hides it. */
    c.lbr = MSR_MODEL_LBR_NONE;
    lbr_test_assert_declines(&c, "no LbrExtV2");
    c = msr_model_kvm_amd();
    lbr_test_assert_declines(&c, "no LbrExtV2 (CPUID Fn8000_0022:EAX[1] "
                             "clear): the hypervisor hides it (KVM passes no "
                             "LbrExtV2)");

    c = msr_model_amd_lbr(16, true);
    lbr_test_check_broken(&c, "the LBR stack MSRs fault",
                          "LBR_SELECT does not hold values");

    /* Before Zen 4 (and QEMU's TCG): no Fn8000_0022 at all. */
    c = msr_model_amd(0x17, true, false);
    assert_int_equal(lbr_test_probe_without_pmu(&c, &why), -ENODEV);
    assert_non_null(strstr(why, "CPUID Fn8000_0022 absent"));
}

/* Entry 0 is the newest; 20 branches into 16 entries. */
static void
test_capture_newest_first(void **state)
{
    struct msr_model_config c = msr_model_amd_lbr(16, true);
    const struct perfmon_branch *stack;
    unsigned int nr;

    (void)state;
    lbr_test_boot_start(&c);
    lbr_test_branches(0, 20, MSR_MODEL_BR_COND, false);
    stack = lbr_test_sample(&nr);
    assert_int_equal(nr, 16);
    lbr_test_assert_stack(stack, nr, 19, 16, true, false);
    lbr_test_assert_no_drift(stack, nr);
    lbr_test_stop();
}

/* An entry whose TO is not valid (empty, wrong path) is passed over. */
static void
test_capture_skips_invalid(void **state)
{
    struct msr_model_config c = msr_model_amd_lbr(16, true);
    const struct perfmon_branch *stack;
    unsigned int nr;
    int h;

    (void)state;
    lbr_test_boot_start(&c);
    h = lbr_test_arm();
    lbr_test_branches(0, 16, MSR_MODEL_BR_COND, false);
    lbr_test_overflow(h);

    /* Entry 1 a wrong-path branch, entry 3 empty. */
    assert_int_equal(msr_write_safe(MSR_AMD_LBR_FROM_0 + 2 * 1 + 1,
                                    LBR_AMD_TO_SPEC | 0x1234), 0);
    assert_int_equal(msr_write_safe(MSR_AMD_LBR_FROM_0 + 2 * 3 + 1, 0), 0);
    stack = lbr_test_deliver(&nr);
    assert_int_equal(nr, 14);
    lbr_test_assert_stack(stack, 1, 15, 1, true, false);
    lbr_test_assert_stack(&stack[1], 1, 13, 1, true, false);
    lbr_test_assert_stack(&stack[2], 12, 11, 12, true, false);
    fake_perfmon_close(h);
    lbr_test_stop();
}

/* Frozen by the PMI: read, then the frozen bit cleared. */
static void
test_freeze_order(void **state)
{
    struct msr_model_config c = msr_model_amd_lbr(16, true);

    (void)state;
    lbr_test_check_freeze(&c, 16, true, false);
    assert_int_equal(pmu_test_peek(MSR_AMD_DBG_EXTN_CFG), 0);
    assert_int_equal(pmu_test_peek(MSR_IA32_DEBUGCTL), 0);
}

/* Addresses sign-extended from bit 47, whatever the bits below it hold. */
static void
test_addresses(void **state)
{
    struct msr_model_config c = msr_model_amd_lbr(16, true);

    (void)state;
    lbr_test_check_addresses(&c);
}

/* A freeze nobody captured, left before the start, is the start's. */
static void
test_start_clears_stale_freeze(void **state)
{
    struct msr_model_config c = msr_model_amd_lbr(16, true);

    (void)state;
    lbr_test_check_stale_freeze(&c, true, false);
}

/*
 * Without LbrAndPmcFreeze the stack runs into the interrupt: the driver
 * stops it first thing, so that only the branches it took until then
 * come before the sample's, and starts it again after.
 */
static void
test_no_freeze(void **state)
{
    struct msr_model_config c = msr_model_amd_lbr(16, false);
    const struct perfmon_branch *stack;
    unsigned int nr, own;
    int h;

    (void)state;
    lbr_test_boot_start(&c);
    assert_int_equal(pmu_test_peek(MSR_IA32_DEBUGCTL), 0);
    h = lbr_test_arm();
    lbr_test_branches(0, 20, MSR_MODEL_BR_COND, false);
    lbr_test_overflow(h);
    assert_false(msr_model_lbr_frozen());
    stack = lbr_test_deliver(&nr);
    own = lbr_test_nr_own(stack, nr);
    assert_int_equal(nr, 16);
    lbr_test_assert_stack(&stack[own], nr - own, 19, 16 - own, true, false);
    assert_true(msr_model_lbr_recording());
    fake_perfmon_close(h);
    lbr_test_stop();
}

static void
test_filters(void **state)
{
    static const struct lbr_test_filter_value selects[] = {
        { PERFMON_BRF_ANY | PERFMON_BRF_MODE, 0 },
        { PERFMON_BRF_ANY | PERFMON_BRF_USER, 0x001 },
        { PERFMON_BRF_COND | PERFMON_BRF_KERN, 0x1fa },
        { PERFMON_BRF_ANY_RET | PERFMON_BRF_MODE, 0x0dc },
    };
    struct msr_model_config c = msr_model_amd_lbr(16, true);

    (void)state;
    lbr_test_boot(&c, 1);
    lbr_test_assert_filter_values(MSR_AMD_LBR_SELECT, selects,
                                  sizeof(selects) / sizeof(selects[0]));

    lbr_test_start(PERFMON_BRF_ANY_RET | PERFMON_BRF_MODE);
    assert_int_equal(lbr_test_branches(0, 2, MSR_MODEL_BR_COND, false), 0);
    assert_int_equal(lbr_test_branches(0, 2, MSR_MODEL_BR_RET, true), 2);
    lbr_test_stop();
}

static void
test_sched_in_resets(void **state)
{
    struct msr_model_config c = msr_model_amd_lbr(16, true);

    (void)state;
    lbr_test_check_sched_in(&c, true, false);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_probe_declines),
        cmocka_unit_test(test_capture_newest_first),
        cmocka_unit_test(test_capture_skips_invalid),
        cmocka_unit_test(test_freeze_order),
        cmocka_unit_test(test_addresses),
        cmocka_unit_test(test_start_clears_stale_freeze),
        cmocka_unit_test(test_no_freeze),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_sched_in_resets),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
