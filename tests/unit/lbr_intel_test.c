/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the Intel legacy LBR back end (arch/x86/lbr_intel.c) and
 * of what the driver (arch/x86/lbr.c) does around it, on the
 * register-level model with the Intel PMU driver: the probe per model and
 * format and its refusals (a model outside the table, no
 * PERF_CAPABILITIES, format 0, perfmon version 1, MSRs that fault, that
 * drop writes, a DEBUGCTL that drops LBR, no PMU interrupt); the ring
 * read newest first from TOS across its wrap; each format decoded (sign
 * extension, mispredicts in FROM or LBR_INFO, cycles); the freeze, read,
 * unfreeze order on the PMI, both the version 4 status freeze and the
 * older DEBUGCTL one (the model records the driver's own branches while
 * the records run: a driver reading before the freeze, or after the
 * unfreeze, gets them in its stack); LBR_SELECT per filter and the
 * refusal of filters Nehalem's cannot do; the reset at switch-in; the
 * lifecycle: callback registered only while started, every CPU stopped
 * and the buffers poisoned after stop, which a late NMI would find.
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

#define SKX         0x55
#define HSW         0x3c
#define NHM         0x1a
#define SLM         0x37

/* ---- probe -------------------------------------------------------------- */

static void
test_probe_skylake(void **state)
{
    struct msr_model_config c = msr_model_intel_lbr(SKX, 4, LBR_FMT_INFO);
    const struct perfmon_branch_driver *drv;

    (void)state;
    drv = lbr_test_boot(&c, 1);
    assert_string_equal(drv->name, "lbr");
    assert_non_null(strstr(drv->desc, "Intel LBR, Skylake"));
    assert_non_null(strstr(drv->desc, "format 5"));
    assert_int_equal(drv->depth, 32);
    assert_int_equal(drv->filters, PERFMON_BRF_MASK);

    /* The probe leaves the records off. */
    assert_false(msr_model_lbr_recording());
}

static void
test_probe_models(void **state)
{
    static const struct {
        unsigned int model, format, depth;
        const char *name;
        unsigned int filters;
    } cases[] = {
        { HSW, LBR_FMT_EIP_FLAGS2, 16, "Haswell", PERFMON_BRF_MASK },
        { NHM, LBR_FMT_EIP_FLAGS, 16, "Nehalem",
          PERFMON_BRF_ANY | PERFMON_BRF_COND | PERFMON_BRF_IND_JMP
          | PERFMON_BRF_MODE },
        { SLM, LBR_FMT_EIP_FLAGS, 8, "Silvermont",
          PERFMON_BRF_ANY | PERFMON_BRF_COND | PERFMON_BRF_IND_JMP
          | PERFMON_BRF_MODE },
    };

    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct msr_model_config c = msr_model_intel_lbr(cases[i].model, 3,
                                                        cases[i].format);
        const struct perfmon_branch_driver *drv = lbr_test_boot(&c, 1);

        assert_non_null(strstr(drv->desc, cases[i].name));
        assert_int_equal(drv->depth, cases[i].depth);
        assert_int_equal(drv->filters, cases[i].filters);
    }
}

static void
test_probe_declines(void **state)
{
    struct msr_model_config c;
    const char *why;

    (void)state;
    c = msr_model_intel_lbr(SKX, 4, LBR_FMT_INFO);
    c.model = 0x17;     /* Core 2: no LBR_SELECT */
    lbr_test_assert_declines(&c, "model 0x17 is not in the LBR table");

    c = msr_model_intel_lbr(SKX, 4, LBR_FMT_INFO);
    c.pdcm = false;
    lbr_test_assert_declines(&c, "no IA32_PERF_CAPABILITIES");

    c = msr_model_intel_lbr(SKX, 4, LBR_FMT_32);
    lbr_test_assert_declines(&c, "LBR format 0");

    c = msr_model_intel_lbr(HSW, 1, LBR_FMT_EIP_FLAGS2);
    lbr_test_assert_declines(&c, "version 2");

    /* Advertised, not there: faults, dead registers, a hypervisor's. */
    c = msr_model_intel_lbr(SKX, 4, LBR_FMT_INFO);
    lbr_test_check_broken(&c, "the LBR MSRs fault",
                          "MSR_LBR_SELECT does not hold values");

    /* Records, but no PMU interrupt to capture them on. */
    assert_int_equal(lbr_test_probe_without_pmu(&c, &why), -ENODEV);
    assert_non_null(strstr(why, "found, but no hardware PMU"));

    /* QEMU's TCG: every MSR reads 0 and drops writes. */
    c.kind = MSR_MODEL_TCG;
    assert_int_equal(lbr_test_probe_without_pmu(&c, &why), -ENODEV);
    assert_non_null(strstr(why, "LBR format 0"));
}

/*
 * A KVM guest says what its hypervisor hides and what exposes it: on an
 * Arch LBR host (Emerald Rapids, model 0xcf) the cleared CPUID bit, on a
 * legacy one QEMU's lbr-fmt; without a vPMU, pmu=on.
 */
static void
test_probe_declines_in_kvm_guest(void **state)
{
    struct msr_model_config c = msr_model_kvm_intel();

    (void)state;
    c.model = 0xcf;
    lbr_test_assert_declines(&c, "Intel family 0x6 model 0xcf is not in the "
                             "LBR table and CPUID.7:EDX[19] (Arch LBR) is "
                             "clear: the hypervisor hides it (KVM has no "
                             "Arch LBR)");

    c = msr_model_kvm_intel();
    lbr_test_assert_declines(&c, "LBR format 0 (IA32_PERF_CAPABILITIES[5:0]):"
                             " the hypervisor passes none (under KVM, QEMU "
                             "-cpu host,pmu=on,lbr-fmt=<the host's>)");

    c = msr_model_kvm_intel();
    c.pdcm = false;
    lbr_test_assert_declines(&c, "the hypervisor shows no vPMU (under KVM, "
                             "QEMU -cpu host,pmu=on)");

    /* With the host's format passed, the guest has its records. */
    c = msr_model_intel_lbr(SKX, 2, LBR_FMT_INFO);
    c.hypervisor = true;
    c.fw_write = true;
    assert_non_null(lbr_test_boot(&c, 1));
}

/* One CPU unlike the others: refused, naming it. */
static void
test_probe_every_cpu(void **state)
{
    struct msr_model_config c = msr_model_intel_lbr(SKX, 4, LBR_FMT_INFO);
    struct msr_model_config odd = c;
    const char *why;

    (void)state;
    odd.lbr_kind = MSR_MODEL_LBRK_FAULTING;
    assert_int_equal(lbr_test_probe_odd(&c, 3, &odd, &why), -ENODEV);
    assert_non_null(strstr(why, "on cpu2: the LBR MSRs fault"));
    assert_int_equal(lbr_test_probe_odd(&c, 3, &c, &why), 0);
}

/* ---- capture ------------------------------------------------------------ */

/* 45 branches through a 32-entry ring: the newest 32, newest first. */
static void
test_capture_wraps(void **state)
{
    struct msr_model_config c = msr_model_intel_lbr(SKX, 4, LBR_FMT_INFO);
    const struct perfmon_branch *stack;
    unsigned int nr;

    (void)state;
    lbr_test_boot_start(&c);
    assert_true(msr_model_lbr_recording());
    assert_int_equal(lbr_test_branches(0, 45, MSR_MODEL_BR_COND, false), 45);
    stack = lbr_test_sample(&nr);
    assert_int_equal(nr, 32);
    lbr_test_assert_stack(stack, nr, 44, 32, true, true);
    lbr_test_assert_no_drift(stack, nr);

    /* And again, the ring having moved on from wherever TOS was. */
    for (unsigned int round = 1; round < 4; round++) {
        unsigned int n = 7 + round * 7;

        lbr_test_branches(100 * round, n, MSR_MODEL_BR_COND, false);
        stack = lbr_test_sample(&nr);
        assert_int_equal(nr, 32);
        lbr_test_assert_stack(stack, nr, 100 * round + n - 1, n, true, true);
    }

    lbr_test_stop();
}

/*
 * Every format decodes: the address sign-extended from the right bit,
 * the mispredict bit where the format keeps it, cycles where it has them.
 */
static void
test_formats(void **state)
{
    static const struct {
        unsigned int model, format;
        bool mispreds, cycles;
    } cases[] = {
        { HSW, LBR_FMT_LIP, false, false },
        { HSW, LBR_FMT_EIP, false, false },
        { HSW, LBR_FMT_EIP_FLAGS, true, false },
        { HSW, LBR_FMT_EIP_FLAGS2, true, false },
        { SKX, LBR_FMT_INFO, true, true },
        { HSW, LBR_FMT_TIME, true, true },
        { SKX, LBR_FMT_INFO2, true, true },
    };

    (void)state;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct msr_model_config c = msr_model_intel_lbr(cases[i].model, 4,
                                                        cases[i].format);
        const struct perfmon_branch *stack;
        unsigned int nr;

        lbr_test_boot_start(&c);
        lbr_test_branches(0, 12, MSR_MODEL_BR_COND, false);
        stack = lbr_test_sample(&nr);
        lbr_test_assert_stack(stack, nr, 11, 12, cases[i].mispreds,
                              cases[i].cycles);
        lbr_test_stop();
    }
}

/*
 * Every format gives back the addresses as taken, sign-extended from the
 * top of the address (bit 47) or from below its flag bits, whatever the
 * bits next to the sign bit hold.
 */
static void
test_addresses(void **state)
{
    static const unsigned int formats[] = {
        LBR_FMT_LIP, LBR_FMT_EIP, LBR_FMT_EIP_FLAGS, LBR_FMT_EIP_FLAGS2,
        LBR_FMT_INFO, LBR_FMT_TIME, LBR_FMT_INFO2,
    };

    (void)state;

    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
        struct msr_model_config c = msr_model_intel_lbr(SKX, 4, formats[i]);

        lbr_test_check_addresses(&c);
    }
}

/* ---- freeze, read, unfreeze --------------------------------------------- */

/*
 * The PMI froze the records: read them, then let them run.  A driver that
 * unfreezes before reading, or reads without the freeze, fails here.
 */
static void
test_freeze_status_v4(void **state)
{
    struct msr_model_config c;

    (void)state;
    c = msr_model_intel_lbr(SKX, 4, LBR_FMT_INFO);
    lbr_test_check_freeze(&c, 32, true, true);
}

static void
test_freeze_debugctl_v2(void **state)
{
    struct msr_model_config c;

    (void)state;
    c = msr_model_intel_lbr(SKX, 2, LBR_FMT_INFO);
    lbr_test_check_freeze(&c, 32, true, true);
}

/*
 * An interrupt that did not freeze them (not the PMU's doing): the driver
 * stops the records itself before reading, and starts them again.  The
 * branches it took until it stopped them are the newest (as the
 * interrupt's own entry path would be on hardware); none after.
 */
static void
test_capture_unfrozen(void **state)
{
    struct msr_model_config c = msr_model_intel_lbr(SKX, 4, LBR_FMT_INFO);
    const struct perfmon_branch *stack;
    perfmon_intr_fn_t fn;
    unsigned int nr, own;

    (void)state;
    lbr_test_boot_start(&c);
    fn = fake_perfmon_last_callback();
    lbr_test_branches(0, 40, MSR_MODEL_BR_COND, false);
    assert_true(msr_model_lbr_recording());
    fake_cpu_set_intr(false);
    fn(lbr_test_dev(), 0, 1, NULL, NULL);
    fake_cpu_set_intr(true);
    stack = fake_perfmon_branches(&nr);
    assert_int_equal(nr, 32);
    own = lbr_test_nr_own(stack, nr);
    assert_true(own <= 3);
    lbr_test_assert_stack(&stack[own], nr - own, 39, 32 - own, true, true);
    assert_true(msr_model_lbr_recording());

    /* Another device's interrupt did not freeze them: left alone. */
    perfmon_intr_set_branches(NULL, 0);
    fake_cpu_set_intr(false);
    fn((struct perfmon_dev *)&c, 0, 1, NULL, NULL);
    fake_cpu_set_intr(true);
    fake_perfmon_branches(&nr);
    assert_int_equal(nr, 0);
    assert_true(msr_model_lbr_recording());
    lbr_test_stop();
}

/* ---- filters ------------------------------------------------------------ */

/* LBR_SELECT (suppress sense) for each filter, and what gets recorded. */
static void
test_filters(void **state)
{
    static const struct {
        unsigned int filter;
        uint64_t select;
        unsigned int kind;
        bool user;
        bool kept;
    } cases[] = {
        { PERFMON_BRF_ANY | PERFMON_BRF_MODE, 0, MSR_MODEL_BR_RET, true,
          true },
        { PERFMON_BRF_ANY | PERFMON_BRF_KERN, 0x002, MSR_MODEL_BR_COND,
          true, false },
        { PERFMON_BRF_COND | PERFMON_BRF_KERN, 0x1fa, MSR_MODEL_BR_COND,
          false, true },
        { PERFMON_BRF_COND | PERFMON_BRF_KERN, 0x1fa, MSR_MODEL_BR_REL_CALL,
          false, false },
        { PERFMON_BRF_CALL | PERFMON_BRF_USER, 0x1f5, MSR_MODEL_BR_REL_CALL,
          true, true },
        { PERFMON_BRF_ANY_CALL | PERFMON_BRF_MODE, 0x0e4,
          MSR_MODEL_BR_IND_CALL, false, true },
        { PERFMON_BRF_ANY_CALL | PERFMON_BRF_MODE, 0x0e4, MSR_MODEL_BR_RET,
          false, false },
        { PERFMON_BRF_ANY_RET | PERFMON_BRF_MODE, 0x0dc, MSR_MODEL_BR_FAR,
          false, true },
        { PERFMON_BRF_IND_CALL | PERFMON_BRF_MODE, 0x1ec,
          MSR_MODEL_BR_IND_CALL, false, true },
        { PERFMON_BRF_IND_JMP | PERFMON_BRF_MODE, 0x1bc,
          MSR_MODEL_BR_IND_JMP, false, true },
        { PERFMON_BRF_IND_JMP | PERFMON_BRF_MODE, 0x1bc,
          MSR_MODEL_BR_REL_JMP, false, false },
    };
    struct msr_model_config c = msr_model_intel_lbr(SKX, 4, LBR_FMT_INFO);

    (void)state;
    lbr_test_boot(&c, 1);

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct perfmon_branch *stack;
        unsigned int nr;

        lbr_test_start(cases[i].filter);
        assert_int_equal(pmu_test_peek(MSR_LBR_SELECT), cases[i].select);
        assert_int_equal(lbr_test_branches(0, 3, cases[i].kind,
                                           cases[i].user),
                         cases[i].kept ? 3 : 0);
        stack = lbr_test_sample(&nr);

        if (cases[i].kept) {
            lbr_test_assert_stack(stack, nr, 2, 3, true, true);
        } else {
            assert_true(nr == 0 || stack[0].from != LBR_TEST_IP + 2 * 0x100);
        }

        lbr_test_stop();
        assert_int_equal(pmu_test_peek(MSR_LBR_SELECT), 0);
    }
}

/* Nehalem's LBR_SELECT records calls with jumps: such filters refused. */
static void
test_filter_erratum(void **state)
{
    struct msr_model_config c = msr_model_intel_lbr(NHM, 3,
                                                    LBR_FMT_EIP_FLAGS);
    const struct perfmon_branch_driver *drv;

    (void)state;
    drv = lbr_test_boot(&c, 1);

    for (unsigned int kind = PERFMON_BRF_ANY; kind & PERFMON_BRF_KINDS;
         kind <<= 1) {
        const char *why = drv->ops->check(lbr_test_dev(),
                                          kind | PERFMON_BRF_KERN);
        bool ok = (kind & (PERFMON_BRF_ANY | PERFMON_BRF_COND
                           | PERFMON_BRF_IND_JMP)) != 0;

        assert_int_equal(why == NULL, ok);

        if (!ok) {
            assert_non_null(strstr(why, "Nehalem"));
        }
    }
}

/* Branch stacks need the hardware PMU's interrupt. */
static void
test_check_device(void **state)
{
    struct msr_model_config c = msr_model_intel_lbr(SKX, 4, LBR_FMT_INFO);
    const struct perfmon_branch_driver *drv;
    struct perfmon_dev other = { .name = "soft" };

    (void)state;
    drv = lbr_test_boot(&c, 1);
    assert_null(drv->ops->check(lbr_test_dev(), LBR_TEST_ANY));
    assert_null(drv->ops->check(NULL, LBR_TEST_ANY));
    assert_non_null(strstr(drv->ops->check(&other, LBR_TEST_ANY),
                           "need a hardware event"));
}

/* ---- threads and lifecycle ---------------------------------------------- */

/* A switch-in forgets what the records held. */
static void
test_sched_in_resets(void **state)
{
    struct msr_model_config c = msr_model_intel_lbr(SKX, 4, LBR_FMT_INFO);

    (void)state;
    lbr_test_check_sched_in(&c, true, true);
}

/*
 * Started: the callback registered, every CPU recording.  Stopped: every
 * CPU stopped and cleared, the callback gone, and the buffers poisoned:
 * an interrupt that still ran the callback (a late NMI the registry
 * failed to wait for) finds the poison and is counted.
 */
static void
test_lifecycle(void **state)
{
    struct msr_model_config c = msr_model_intel_lbr(SKX, 4, LBR_FMT_INFO);
    const struct perfmon_branch *stack;
    perfmon_intr_fn_t fn;
    unsigned int nr;

    (void)state;
    lbr_test_boot(&c, 2);
    assert_int_equal(fake_perfmon_nr_callbacks(), 0);
    lbr_test_start(LBR_TEST_ANY);

    for (unsigned int cpu = 0; cpu < 2; cpu++) {
        fake_cpu_set_id(cpu);
        assert_true(msr_model_lbr_recording());
        assert_true(pmu_test_peek(MSR_IA32_DEBUGCTL)
                    & LBR_DEBUGCTL_FREEZE_LBRS);
    }

    fake_cpu_set_id(0);
    fn = fake_perfmon_last_callback();
    lbr_test_stop();

    for (unsigned int cpu = 0; cpu < 2; cpu++) {
        fake_cpu_set_id(cpu);
        assert_false(msr_model_lbr_recording());
        assert_false(msr_model_lbr_frozen());
        assert_int_equal(pmu_test_peek(MSR_IA32_DEBUGCTL), 0);
        assert_int_equal(pmu_test_peek(MSR_LBR_SELECT), 0);
        assert_int_equal(pmu_test_peek(MSR_LBR_NHM_FROM), 0);
    }

    fake_cpu_set_id(0);

    /* A PMI now: no callback runs, nothing is captured. */
    lbr_test_branches(0, 5, MSR_MODEL_BR_COND, false);
    stack = lbr_test_sample(&nr);
    (void)stack;
    assert_int_equal(nr, 0);
    assert_int_equal(lbr_nr_poisoned(), 0);

    /* The callback run late, on either CPU: the poison is seen. */
    for (unsigned int cpu = 0; cpu < 2; cpu++) {
        fake_cpu_set_id(cpu);
        fake_cpu_set_intr(false);
        fn(lbr_test_dev(), cpu, 1, NULL, NULL);
        fake_cpu_set_intr(true);
    }

    fake_cpu_set_id(0);
    assert_int_equal(lbr_nr_poisoned(), 2);

    /* Started again: live buffers, no poison seen. */
    lbr_test_start(LBR_TEST_ANY);
    lbr_test_branches(0, 4, MSR_MODEL_BR_COND, false);
    stack = lbr_test_sample(&nr);
    lbr_test_assert_stack(stack, nr, 3, 4, true, true);
    assert_int_equal(lbr_nr_poisoned(), 2);
    lbr_test_stop();
}

/*
 * A stale freeze (an interrupt nobody captured) is cleared at start: the
 * first sample's stack is the branches taken since.
 */
static void
test_start_clears_stale_freeze(void **state)
{
    struct msr_model_config c = msr_model_intel_lbr(SKX, 4, LBR_FMT_INFO);

    (void)state;
    lbr_test_check_stale_freeze(&c, true, true);
}

/*
 * A test's back end installed in place of the probed one, and the probed
 * one put back; refused while started.  With no records probed, putting
 * back leaves no driver.
 */
static const struct lbr_caps fake_caps = {
    .name = "fake", .what = "fake records", .depth = 4,
    .kinds = PERFMON_BRF_ANY, .any_dev = true,
};

static void
test_install(void **state)
{
    struct msr_model_config c = msr_model_intel_lbr(SKX, 4, LBR_FMT_INFO);
    const struct perfmon_branch_driver *drv;
    const char *why;

    (void)state;
    drv = lbr_test_boot(&c, 1);
    assert_int_equal(lbr_install(&lbr_intel_backend, &fake_caps), 0);
    assert_ptr_equal(fake_perfmon_branch_driver(), drv);
    assert_string_equal(drv->desc, "fake records");
    assert_int_equal(drv->depth, 4);
    assert_int_equal(drv->filters, PERFMON_BRF_ANY);

    /* Any device, then: a soft PMU's interrupt is as good. */
    assert_null(drv->ops->check(&(struct perfmon_dev){ .name = "soft" },
                                LBR_TEST_ANY));
    assert_int_equal(lbr_install(NULL, NULL), 0);
    assert_non_null(strstr(drv->desc, "Skylake"));
    assert_int_equal(drv->depth, 32);

    /* No records: installed, then nothing left. */
    c.pdcm = false;
    assert_int_equal(lbr_test_probe(&c, 1, &why), -ENODEV);
    assert_null(fake_perfmon_branch_driver());
    assert_int_equal(lbr_install(&lbr_intel_backend, &fake_caps), 0);
    assert_non_null(fake_perfmon_branch_driver());
    assert_int_equal(lbr_install(NULL, NULL), 0);
    assert_null(fake_perfmon_branch_driver());
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_skylake),
        cmocka_unit_test(test_probe_models),
        cmocka_unit_test(test_probe_declines),
        cmocka_unit_test(test_probe_declines_in_kvm_guest),
        cmocka_unit_test(test_probe_every_cpu),
        cmocka_unit_test(test_capture_wraps),
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_addresses),
        cmocka_unit_test(test_freeze_status_v4),
        cmocka_unit_test(test_freeze_debugctl_v2),
        cmocka_unit_test(test_capture_unfrozen),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_filter_erratum),
        cmocka_unit_test(test_check_device),
        cmocka_unit_test(test_sched_in_resets),
        cmocka_unit_test(test_lifecycle),
        cmocka_unit_test(test_start_clears_stale_freeze),
        cmocka_unit_test(test_install),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
