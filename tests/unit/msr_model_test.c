/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of the register-level model itself (tests/unit/msr_model.c,
 * msr_model_lbr.c) against what KVM presents a guest, as kvm-unit-tests
 * (x86/pmu.c, x86/pmu_lbr.c) and KVM's vPMU rules (Linux
 * arch/x86/kvm/pmu.c, vmx/pmu_intel.c, svm/pmu.c) have it: the driver
 * tests are only as good as the model's likeness to the hypervisor they
 * run under.  Each access goes through the drivers' seam, as a driver's
 * would.
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
#include "kern/error.h"
#include "msr_model.h"

#define SEL_KERN    (PMU_EVTSEL_OS | PMU_EVTSEL_EN)

/* General-purpose counter i programmed with code, counting from 0. */
static void
program(unsigned int i, uint64_t code)
{
    assert_int_equal(msr_write_safe(MSR_IA32_PERFEVTSEL0 + i, 0), 0);
    assert_int_equal(msr_write_safe(MSR_IA32_PMC0 + i, 0), 0);
    assert_int_equal(msr_write_safe(MSR_IA32_PERFEVTSEL0 + i,
                                    code | SEL_KERN), 0);
}

static uint64_t
peek(uint32_t msr)
{
    uint64_t value;

    assert_true(msr_model_peek(msr, &value));
    return value;
}

/*
 * CPUID.0AH:EBX bit 1 is instructions retired, bit 2 reference cycles
 * (SDM vol. 2A, CPUID leaf 0AH): an event the leaf enumerates counts, the
 * one it marks unavailable does not.
 */
static void
test_cpuid_ebx_bits(void **state)
{
    static const struct {
        uint32_t unavail;
        unsigned int hidden, shown;
    } cases[] = {
        { 1U << 1, MSR_MODEL_EV_INSTRUCTIONS, MSR_MODEL_EV_REF_CYCLES },
        { 1U << 2, MSR_MODEL_EV_REF_CYCLES, MSR_MODEL_EV_INSTRUCTIONS },
    };
    static const uint64_t code[MSR_MODEL_NR_EVENTS] = {
        [MSR_MODEL_EV_INSTRUCTIONS] = 0x00c0,
        [MSR_MODEL_EV_REF_CYCLES] = 0x013c,
    };

    (void)state;

    for (unsigned int i = 0; i < 2; i++) {
        struct msr_model_config c = msr_model_kvm_intel();

        c.ebx_unavail = cases[i].unavail;
        msr_model_init(&c);
        msr_model_set_drift(0);
        program(0, code[cases[i].hidden]);
        program(1, code[cases[i].shown]);
        msr_model_inject(cases[i].hidden, 1000, false);
        msr_model_inject(cases[i].shown, 1000, false);
        assert_int_equal(peek(MSR_IA32_PMC0), 0);
        assert_int_equal(peek(MSR_IA32_PMC0 + 1), 1000);
    }
}

/*
 * AnyThread (PERFEVTSELx bit 21, FIXED_CTR_CTRL bit 2 of each field) is
 * reserved under KVM whatever the version: #GP on 3, 4 and 5 too.
 */
static void
test_anythread_faults(void **state)
{
    (void)state;

    for (unsigned int version = 2; version <= 5; version++) {
        struct msr_model_config c = msr_model_intel(version);

        msr_model_init(&c);
        assert_int_equal(msr_write_safe(MSR_IA32_PERFEVTSEL0,
                                        0x003c | SEL_KERN | PMU_EVTSEL_ANY),
                         -EIO);
        assert_int_equal(msr_write_safe(MSR_IA32_FIXED_CTR_CTRL,
                                        PMU_FIXED_CTRL_OS
                                        | PMU_FIXED_CTRL_ANY), -EIO);
        assert_int_equal(msr_write_safe(MSR_IA32_FIXED_CTR_CTRL,
                                        PMU_FIXED_CTRL_OS), 0);
    }
}

/*
 * KVM without a vPMU has no LBR MSRs: the stack and its top #GP (as
 * kvm-unit-tests' pmu_lbr probes them), DEBUGCTL drops LBR and faults on
 * the freeze bit.
 */
static void
test_lbr_faults_without_vpmu(void **state)
{
    struct msr_model_config c = msr_model_intel_lbr(0x55, 2, LBR_FMT_INFO);
    uint64_t value;

    (void)state;
    c.kind = MSR_MODEL_KVM_NO_PMU;
    msr_model_init(&c);
    assert_int_equal(msr_read_safe(MSR_LBR_TOS, &value), -EIO);
    assert_int_equal(msr_read_safe(MSR_LBR_NHM_FROM, &value), -EIO);
    assert_int_equal(msr_write_safe(MSR_LBR_NHM_TO, 0), -EIO);
    assert_int_equal(msr_write_safe(MSR_IA32_DEBUGCTL,
                                    LBR_DEBUGCTL_FREEZE_LBRS), -EIO);
    assert_int_equal(msr_write_safe(MSR_IA32_DEBUGCTL, LBR_DEBUGCTL_LBR), 0);
    assert_int_equal(peek(MSR_IA32_DEBUGCTL) & LBR_DEBUGCTL_LBR, 0);
}

/*
 * The Intel -cpu host guest: version 2, PDCM, IA32_PERF_CAPABILITIES with
 * full-width writes and no LBR format, the IA32_A_PMCx aliases, the
 * hypervisor bit.
 */
static void
test_kvm_intel_shape(void **state)
{
    struct msr_model_config c = msr_model_kvm_intel();
    uint32_t regs[4];
    uint64_t cap;

    (void)state;
    msr_model_init(&c);
    pmu_cpuid(1, 0, regs);
    assert_true(regs[2] & PMU_CPUID_1_ECX_PDCM);
    assert_true(regs[2] & PMU_CPUID_1_ECX_HYPERVISOR);
    pmu_cpuid(0xa, 0, regs);
    assert_int_equal(PMU_CPUID_0A_VERSION(regs[0]), 2);
    assert_int_equal(PMU_CPUID_0A_NR_FIXED(regs[3]), 3);
    assert_int_equal(msr_read_safe(MSR_IA32_PERF_CAPABILITIES, &cap), 0);
    assert_true(cap & PMU_PERF_CAP_FW_WRITE);
    assert_int_equal(cap & 0x3f, 0);
    assert_int_equal(msr_write_safe(MSR_IA32_A_PMC0, 1ULL << 40), 0);
    assert_int_equal(peek(MSR_IA32_PMC0), 1ULL << 40);
}

/* The AMD guest: Zen 4, PerfMonV2 with 6 counters, no LbrExtV2. */
static void
test_kvm_amd_shape(void **state)
{
    struct msr_model_config c = msr_model_kvm_amd();
    uint32_t regs[4];
    uint64_t value;

    (void)state;
    msr_model_init(&c);
    pmu_cpuid(0x80000022, 0, regs);
    assert_true(regs[0] & PMU_CPUID_X22_EAX_PERFMON_V2);
    assert_int_equal(regs[0] & ~PMU_CPUID_X22_EAX_PERFMON_V2, 0);
    assert_int_equal(regs[1], 6);
    pmu_cpuid(1, 0, regs);
    assert_true(regs[2] & PMU_CPUID_1_ECX_HYPERVISOR);
    assert_int_equal(msr_read_safe(MSR_AMD_PERF_CNTR_GLOBAL_CTL, &value), 0);
    assert_int_equal(value, 0x3f);
}

/*
 * Across the driver's MSR accesses cycles advance faster than
 * instructions, and instructions faster than branches, as on hardware.
 */
static void
test_drift_per_event(void **state)
{
    struct msr_model_config c = msr_model_kvm_intel();
    uint64_t value, cycles, instructions, branches;

    (void)state;
    msr_model_init(&c);
    program(0, 0x003c);
    program(1, 0x00c0);
    program(2, 0x00c4);

    for (unsigned int i = 0; i < 100; i++) {
        assert_int_equal(msr_read_safe(MSR_IA32_PERF_GLOBAL_STATUS, &value),
                         0);
    }

    cycles = peek(MSR_IA32_PMC0);
    instructions = peek(MSR_IA32_PMC0 + 1);
    branches = peek(MSR_IA32_PMC0 + 2);
    assert_true(cycles > 2 * instructions);
    assert_true(instructions > 2 * branches);
    assert_true(branches > 0);
}

/*
 * The host takes a counter: it stops, silently, and comes back where it
 * was when the host gives it back.
 */
static void
test_host_owned(void **state)
{
    struct msr_model_config c = msr_model_kvm_intel();

    (void)state;
    msr_model_init(&c);
    msr_model_set_drift(0);
    program(0, 0x00c4);
    assert_int_equal(msr_write_safe(MSR_IA32_FIXED_CTR_CTRL,
                                    PMU_FIXED_CTRL_OS), 0);
    assert_int_equal(msr_write_safe(MSR_IA32_PERF_GLOBAL_CTRL,
                                    1ULL | 1ULL << MSR_MODEL_FIXED_BIT), 0);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 10, false);
    msr_model_inject(MSR_MODEL_EV_INSTRUCTIONS, 10, false);
    msr_model_set_host_owned(1ULL | 1ULL << MSR_MODEL_FIXED_BIT);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 1000, false);
    msr_model_inject(MSR_MODEL_EV_INSTRUCTIONS, 1000, false);
    assert_int_equal(peek(MSR_IA32_PMC0), 10);
    assert_int_equal(peek(MSR_IA32_FIXED_CTR0), 10);
    assert_int_equal(peek(MSR_IA32_PERF_GLOBAL_STATUS), 0);
    msr_model_set_host_owned(0);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 5, false);
    assert_int_equal(peek(MSR_IA32_PMC0), 15);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpuid_ebx_bits),
        cmocka_unit_test(test_anythread_faults),
        cmocka_unit_test(test_lbr_faults_without_vpmu),
        cmocka_unit_test(test_kvm_intel_shape),
        cmocka_unit_test(test_kvm_amd_shape),
        cmocka_unit_test(test_drift_per_event),
        cmocka_unit_test(test_host_owned),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
