/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the Intel Architectural LBR back end
 * (arch/x86/lbr_arch.c) on the register-level model with the Intel PMU
 * driver: the depth chosen from leaf 1CH (the deepest a sample carries),
 * the features it reports and its refusals (no depth it can use, MSRs
 * that fault or do not hold the depth, a DEBUGCTL without the freeze);
 * entry 0 read as the newest; LBR_INFO's mispredict, cycles and branch
 * type, each only where leaf 1CH:ECX offers it; the freeze, read,
 * unfreeze order on the PMI; IA32_LBR_CTL per filter, and the filters
 * refused where leaf 1CH:EBX has no branch or privilege filtering; the
 * reset at switch-in.
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

const struct pmu_driver *const lbr_test_pmu = &pmu_intel_driver;

/* Depths 8 to 64, every filter, every INFO field. */
#define ALL_DEPTHS  0xffU
#define ALL_EBX     (LBR_CPUID_1C_EBX_CPL | LBR_CPUID_1C_EBX_FILTER)
#define ALL_ECX     (LBR_CPUID_1C_ECX_MISPRED | LBR_CPUID_1C_ECX_TIMED \
                     | LBR_CPUID_1C_ECX_TYPE)

static struct msr_model_config
arch(void)
{
    return msr_model_arch_lbr(ALL_DEPTHS, ALL_EBX, ALL_ECX);
}

static void
test_probe(void **state)
{
    struct msr_model_config c = arch();
    const struct perfmon_branch_driver *drv;

    (void)state;
    drv = lbr_test_boot(&c, 2);
    assert_non_null(strstr(drv->desc, "Intel Architectural LBR"));
    assert_non_null(strstr(drv->desc, "mispredicts, cycles, branch types"));
    assert_int_equal(drv->depth, 32);
    assert_int_equal(drv->filters, PERFMON_BRF_MASK);

    /* Only the depths offered; the deepest up to 32. */
    c.arch_lbr_depths = 0x03;   /* 8, 16 */
    drv = lbr_test_boot(&c, 1);
    assert_int_equal(drv->depth, 16);

    /* No branch or privilege filtering: any, both modes. */
    c = msr_model_arch_lbr(ALL_DEPTHS, 0, 0);
    drv = lbr_test_boot(&c, 1);
    assert_int_equal(drv->filters, PERFMON_BRF_ANY);
    assert_string_equal(drv->desc, "Intel Architectural LBR");
}

static void
test_probe_declines(void **state)
{
    struct msr_model_config c = arch();

    (void)state;
    c.arch_lbr_depths = 0xf0;   /* 40 to 64 only */
    lbr_test_assert_declines(&c, "offers no depth up to 32");

    c = arch();
    lbr_test_check_broken(&c, "IA32_LBR_CTL faults",
                          "IA32_LBR_DEPTH does not hold");
}

/* Entry 0 is the newest; 40 branches into 32 entries. */
static void
test_capture_newest_first(void **state)
{
    struct msr_model_config c = arch();
    const struct perfmon_branch *stack;
    unsigned int nr;

    (void)state;
    lbr_test_boot_start(&c);
    assert_int_equal(pmu_test_peek(MSR_ARCH_LBR_DEPTH), 32);
    lbr_test_branches(0, 40, MSR_MODEL_BR_COND, false);
    stack = lbr_test_sample(&nr);
    assert_int_equal(nr, 32);
    lbr_test_assert_stack(stack, nr, 39, 32, true, true);

    /* A few: the walk stops at the first empty entry. */
    lbr_test_stop();
    lbr_test_start(LBR_TEST_ANY);
    lbr_test_branches(0, 3, MSR_MODEL_BR_COND, false);
    stack = lbr_test_sample(&nr);
    lbr_test_assert_stack(stack, nr, 2, 3, true, true);
    lbr_test_assert_drift_from(stack, nr, 3);
    lbr_test_stop();
}

/* Branch types from LBR_INFO; nothing the leaf does not offer. */
static void
test_info_fields(void **state)
{
    static const struct {
        unsigned int kind, type;
    } kinds[] = {
        { MSR_MODEL_BR_COND, PERFMON_BRT_COND },
        { MSR_MODEL_BR_REL_JMP, PERFMON_BRT_UNCOND },
        { MSR_MODEL_BR_IND_JMP, PERFMON_BRT_IND },
        { MSR_MODEL_BR_REL_CALL, PERFMON_BRT_CALL },
        { MSR_MODEL_BR_IND_CALL, PERFMON_BRT_IND_CALL },
        { MSR_MODEL_BR_RET, PERFMON_BRT_RET },
        { MSR_MODEL_BR_FAR, PERFMON_BRT_UNKNOWN },
    };
    struct msr_model_config c = arch();
    const struct perfmon_branch *stack;
    unsigned int nr;

    (void)state;
    lbr_test_boot_start(&c);

    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        lbr_test_branches(0, 2, kinds[i].kind, false);
        stack = lbr_test_sample(&nr);
        lbr_test_assert_stack(stack, nr, 1, 2, true, true);
        assert_int_equal((stack[0].flags & PERFMON_BR_TYPE_MASK)
                         >> PERFMON_BR_TYPE_SHIFT, kinds[i].type);
    }

    lbr_test_stop();

    /* Without ECX's fields: no mispredict, cycles or type. */
    c = msr_model_arch_lbr(ALL_DEPTHS, ALL_EBX, 0);
    lbr_test_boot_start(&c);
    lbr_test_branches(0, 4, MSR_MODEL_BR_RET, false);
    stack = lbr_test_sample(&nr);
    lbr_test_assert_stack(stack, nr, 3, 4, false, false);
    assert_int_equal(stack[0].flags, 0);
    lbr_test_stop();
}

/* Read frozen, none of the handler's branches; recording after. */
static void
test_freeze_order(void **state)
{
    struct msr_model_config c = arch();

    (void)state;
    lbr_test_check_freeze(&c, 32, true, true);
    assert_int_equal(pmu_test_peek(MSR_ARCH_LBR_CTL), 0);
    assert_int_equal(pmu_test_peek(MSR_IA32_DEBUGCTL), 0);
}

/* Addresses sign-extended from bit 47, whatever the bits below it hold. */
static void
test_addresses(void **state)
{
    struct msr_model_config c = arch();

    (void)state;
    lbr_test_check_addresses(&c);
}

/* A freeze nobody captured, left before the start, is the start's. */
static void
test_start_clears_stale_freeze(void **state)
{
    struct msr_model_config c = arch();

    (void)state;
    lbr_test_check_stale_freeze(&c, true, true);
}

static void
test_filters(void **state)
{
    static const struct lbr_test_filter_value ctls[] = {
        { PERFMON_BRF_ANY | PERFMON_BRF_MODE, 0x7f0007 },
        { PERFMON_BRF_ANY | PERFMON_BRF_USER, 0x7f0005 },
        { PERFMON_BRF_COND | PERFMON_BRF_KERN, 0x010003 },
        { PERFMON_BRF_CALL | PERFMON_BRF_IND_CALL | PERFMON_BRF_KERN,
          0x180003 },
        { PERFMON_BRF_ANY_CALL | PERFMON_BRF_KERN, 0x580003 },
        { PERFMON_BRF_ANY_RET | PERFMON_BRF_KERN, 0x600003 },
        { PERFMON_BRF_IND_JMP | PERFMON_BRF_KERN, 0x040003 },
    };
    struct msr_model_config c = arch();
    const struct perfmon_branch_driver *drv;

    (void)state;
    lbr_test_boot(&c, 1);
    lbr_test_assert_filter_values(MSR_ARCH_LBR_CTL, ctls,
                                  sizeof(ctls) / sizeof(ctls[0]));

    /* A cond filter records no call. */
    lbr_test_start(PERFMON_BRF_COND | PERFMON_BRF_KERN);
    assert_int_equal(lbr_test_branches(0, 2, MSR_MODEL_BR_REL_CALL, false),
                     0);
    assert_int_equal(lbr_test_branches(0, 2, MSR_MODEL_BR_COND, false), 2);
    assert_int_equal(lbr_test_branches(0, 2, MSR_MODEL_BR_COND, true), 0);
    lbr_test_stop();

    /* Without branch and privilege filtering: only any, both modes. */
    c = msr_model_arch_lbr(ALL_DEPTHS, 0, ALL_ECX);
    drv = lbr_test_boot(&c, 1);
    assert_non_null(strstr(drv->ops->check(lbr_test_dev(),
                                           PERFMON_BRF_COND
                                           | PERFMON_BRF_MODE),
                           "cannot filter by branch kind"));
    assert_non_null(strstr(drv->ops->check(lbr_test_dev(),
                                           PERFMON_BRF_ANY
                                           | PERFMON_BRF_KERN),
                           "cannot filter by privilege level"));
    lbr_test_start(LBR_TEST_ANY);
    assert_int_equal(pmu_test_peek(MSR_ARCH_LBR_CTL), LBR_CTL_LBREN);
    assert_int_equal(lbr_test_branches(0, 2, MSR_MODEL_BR_RET, true), 2);
    lbr_test_stop();
}

static void
test_sched_in_resets(void **state)
{
    struct msr_model_config c = arch();

    (void)state;
    lbr_test_check_sched_in(&c, true, true);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_probe_declines),
        cmocka_unit_test(test_capture_newest_first),
        cmocka_unit_test(test_info_fields),
        cmocka_unit_test(test_freeze_order),
        cmocka_unit_test(test_addresses),
        cmocka_unit_test(test_start_clears_stale_freeze),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_sched_in_resets),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
