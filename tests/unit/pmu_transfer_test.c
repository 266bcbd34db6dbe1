/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of the x86 drivers' read method and transfer operations
 * (arch/x86/pmu_intel.c, arch/x86/pmu_amd.c) on the register-level model:
 * the read method names the RDPMC index that reads what read does (Intel's
 * fixed counters through bit 30); transfer returns the count at the
 * hand-over (one RDPMC) and reprograms a started counter
 * in place with one write of its event select (none for a fixed counter
 * whose modes are unchanged, one of IA32_FIXED_CTR_CTRL when they
 * change), keeps its count, the armed top bits of the drivers without an
 * overflow status register, and any overflow status the count raised.
 * And start leaves a value the core knows: 0, no stale status.
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
#include "fakes/pmu_perfmon.h"
#include "kern/error.h"
#include "kern/perfmon.h"
#include "msr_model.h"
#include "pmu_test_common.h"

#define KERN    PERFMON_EF_KERN
#define BOTH    (PERFMON_EF_KERN | PERFMON_EF_USER)

static struct pmu_caps caps;

/* drv on machine c, without the model's drift: counts are exact. */
static struct perfmon_dev *
boot(const struct pmu_driver *drv, struct msr_model_config c)
{
    struct perfmon_dev *dev = pmu_test_boot(drv, &caps, &c, true);

    msr_model_set_drift(0);
    return dev;
}

static struct msr_model_accesses accesses;

static void
accesses_begin(void)
{
    msr_model_get_accesses(&accesses);
}

/* The low width bits of a raw value, those the core keeps. */
static uint64_t
dev_mask(const struct perfmon_dev *dev)
{
    return (dev->width < 64) ? (1ULL << dev->width) - 1 : ~0ULL;
}

/* The accesses since accesses_begin(): RDMSR, WRMSR, RDPMC. */
static void
accesses_check(unsigned int rdmsr, unsigned int wrmsr, unsigned int rdpmc)
{
    struct msr_model_accesses now;

    msr_model_get_accesses(&now);
    assert_int_equal(now.rdmsr - accesses.rdmsr, rdmsr);
    assert_int_equal(now.wrmsr - accesses.wrmsr, wrmsr);
    assert_int_equal(now.rdpmc - accesses.rdpmc, rdpmc);
}

static uint64_t
raw_of(struct perfmon_dev *dev, unsigned int id)
{
    uint64_t raw;

    assert_int_equal(dev->ops->translate(dev, &raw, id), 0);
    return raw;
}

/* The read method of hw's counter reads, with RDPMC, what read does. */
static void
check_read_method(struct perfmon_dev *dev, unsigned int hw, uint32_t index)
{
    uintptr_t arg = ~(uintptr_t)0;

    assert_int_equal(dev->ops->read_method(dev, hw, &arg),
                     PERFMON_READ_RDPMC);
    assert_int_equal(arg, index);
    assert_int_equal(msr_rdpmc((uint32_t)arg), dev->ops->read(dev, hw));
}

static void
test_intel_read_method(void **state)
{
    struct perfmon_dev *dev;
    unsigned int hw_b, hw_i, hw_c;
    int hb, hi, hc;

    (void)state;
    dev = boot(&pmu_intel_driver, msr_model_intel(5));
    hb = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, &hw_b);
    hi = fake_perfmon_open(PERFMON_EV_INSTRUCTION, KERN, &hw_i);
    hc = fake_perfmon_open(PERFMON_EV_CYCLE, KERN, &hw_c);
    assert_int_equal(hw_i, PMU_INTEL_FIXED_BASE);
    assert_int_equal(hw_c, PMU_INTEL_FIXED_BASE + 1);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 1234, false);
    msr_model_inject(MSR_MODEL_EV_INSTRUCTIONS, 5678, false);
    check_read_method(dev, hw_b, hw_b);
    check_read_method(dev, hw_i, MSR_RDPMC_FIXED);
    check_read_method(dev, hw_c, MSR_RDPMC_FIXED | 1);
    fake_perfmon_close(hb);
    fake_perfmon_close(hi);
    fake_perfmon_close(hc);
    pmu_test_assert_no_fault();
}

/*
 * The device's transfer, handed the counter's read method as the core
 * hands it: an x86 counter keeps its RDPMC index, so it stays as it was.
 * No MSR access but the transfer's.
 */
static uint64_t
transfer(struct perfmon_dev *dev, unsigned int hw, uint64_t raw,
         unsigned int flags)
{
    uintptr_t arg, keep_arg;
    unsigned int how = dev->ops->read_method(dev, hw, &arg), keep_how = how;
    uint64_t value;

    keep_arg = arg;
    value = dev->ops->transfer(dev, hw, raw, flags, &how, &arg);
    assert_int_equal(how, keep_how);
    assert_int_equal(arg, keep_arg);
    return value;
}

/*
 * A general-purpose counter passed from branches to cache misses: one
 * RDPMC of the count at the hand-over, one WRMSR, the count kept (what the new event counts adds to it), branches
 * no longer counted.  cfg: the machine.
 */
static void
check_transfer_gp(const struct pmu_driver *drv, struct msr_model_config cfg,
                  uint32_t ctl_base, unsigned int ctl_step)
{
    struct perfmon_dev *dev = boot(drv, cfg);
    uint64_t miss = raw_of(dev, PERFMON_EV_CACHE_MISS), value;
    unsigned int hw, how, keep_how;
    uintptr_t arg, keep_arg;
    int h;

    h = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, &hw);
    assert_true(h >= 0);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 1000, false);
    value = fake_perfmon_value(h);
    assert_int_equal(value, 1000);
    how = keep_how = dev->ops->read_method(dev, hw, &arg);
    keep_arg = arg;
    accesses_begin();
    assert_int_equal(dev->ops->transfer(dev, hw, miss, BOTH, &how, &arg)
                     & dev_mask(dev), 1000);
    accesses_check(0, 1, 1);

    /* The counter's RDPMC index stays with it: the method is left. */
    assert_int_equal(how, keep_how);
    assert_int_equal(arg, keep_arg);
    assert_int_equal(pmu_test_peek(ctl_base + ctl_step * hw)
                     & ~PMU_EVTSEL_INT,
                     miss | PMU_EVTSEL_EN | PMU_EVTSEL_OS | PMU_EVTSEL_USR);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 300, false);
    msr_model_inject(MSR_MODEL_EV_LLC_MISS, 500, true);
    assert_int_equal(fake_perfmon_value(h), value + 500);
    fake_perfmon_close(h);
    pmu_test_assert_no_fault();
}

static void
test_intel_transfer_gp(void **state)
{
    (void)state;
    check_transfer_gp(&pmu_intel_driver, msr_model_kvm_intel(),
                      MSR_IA32_PERFEVTSEL0, 1);
    check_transfer_gp(&pmu_intel_driver, msr_model_intel(5),
                      MSR_IA32_PERFEVTSEL0, 1);
}

static void
test_amd_transfer(void **state)
{
    (void)state;
    check_transfer_gp(&pmu_amd_driver, msr_model_kvm_amd(),
                      MSR_AMD_F15H_PERF_CTL0, 2);
    check_transfer_gp(&pmu_amd_driver, msr_model_amd(0x17, true, false),
                      MSR_AMD_F15H_PERF_CTL0, 2);
    check_transfer_gp(&pmu_amd_driver, msr_model_amd(0x10, false, false),
                      MSR_AMD_K7_PERFEVTSEL0, 1);
}

static void
test_amd_read_method(void **state)
{
    struct perfmon_dev *dev;
    unsigned int hw[3];
    int h[3];

    (void)state;
    dev = boot(&pmu_amd_driver, msr_model_kvm_amd());

    for (unsigned int i = 0; i < 3; i++) {
        h[i] = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, &hw[i]);
        assert_int_equal(hw[i], i);
    }

    msr_model_inject(MSR_MODEL_EV_BRANCH, 4321, false);

    for (unsigned int i = 0; i < 3; i++) {
        check_read_method(dev, hw[i], i);
        fake_perfmon_close(h[i]);
    }

    pmu_test_assert_no_fault();
}

/*
 * A fixed counter counts its own event: passed on in the same modes it
 * costs nothing; in others, one write of IA32_FIXED_CTR_CTRL, the other
 * fixed counters' fields as they were.
 */
static void
test_intel_transfer_fixed(void **state)
{
    struct perfmon_dev *dev;
    unsigned int hw, hw_c, shift;
    uint64_t insn, value;
    int h, hc;

    (void)state;
    dev = boot(&pmu_intel_driver, msr_model_intel(5));
    insn = raw_of(dev, PERFMON_EV_INSTRUCTION);
    h = fake_perfmon_open(PERFMON_EV_INSTRUCTION, KERN, &hw);
    hc = fake_perfmon_open(PERFMON_EV_CYCLE, KERN, &hw_c);
    msr_model_inject(MSR_MODEL_EV_INSTRUCTIONS, 1000, false);
    value = fake_perfmon_value(h);

    accesses_begin();
    assert_int_equal(transfer(dev, hw, insn, KERN) & dev_mask(dev),
                     1000);
    accesses_check(0, 0, 1);

    assert_int_equal(transfer(dev, hw, insn, BOTH) & dev_mask(dev),
                     1000);
    accesses_check(0, 1, 2);
    shift = PMU_FIXED_CTRL_SHIFT(hw - PMU_INTEL_FIXED_BASE);
    assert_int_equal((pmu_test_peek(MSR_IA32_FIXED_CTR_CTRL) >> shift) & 0x3,
                     PMU_FIXED_CTRL_OS | PMU_FIXED_CTRL_USR);
    shift = PMU_FIXED_CTRL_SHIFT(hw_c - PMU_INTEL_FIXED_BASE);
    assert_int_equal((pmu_test_peek(MSR_IA32_FIXED_CTR_CTRL) >> shift) & 0x3,
                     PMU_FIXED_CTRL_OS);

    msr_model_inject(MSR_MODEL_EV_INSTRUCTIONS, 700, true);
    assert_int_equal(fake_perfmon_value(h), value + 700);
    fake_perfmon_close(h);
    fake_perfmon_close(hc);
    pmu_test_assert_no_fault();
}

/*
 * Without a status register (Intel version 1, AMD without PerfMonV2) the
 * counter's armed top bits stay, so its wrap still interrupts; with one, a
 * status bit the count raised stays for the core to fold.
 */
static void
test_transfer_keeps_overflow(void **state)
{
    struct perfmon_dev *dev;
    unsigned int hw;
    uint64_t top = 1ULL << (PMU_AMD_WIDTH - 1);
    int h;

    (void)state;
    dev = boot(&pmu_amd_driver, msr_model_amd(0x17, true, false));
    h = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, &hw);
    transfer(dev, hw, raw_of(dev, PERFMON_EV_INSTRUCTION), KERN);
    assert_true(pmu_test_peek(MSR_AMD_F15H_PERF_CTR0 + 2 * hw) & top);
    msr_model_inject(MSR_MODEL_EV_INSTRUCTIONS, top, false);
    pmu_test_deliver_nmis(dev);
    assert_int_equal(fake_perfmon_nr_ovf_folds(), 1);
    fake_perfmon_close(h);

    dev = boot(&pmu_intel_driver, msr_model_intel(1));
    h = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, &hw);
    transfer(dev, hw, raw_of(dev, PERFMON_EV_INSTRUCTION), KERN);
    msr_model_inject(MSR_MODEL_EV_INSTRUCTIONS, 1ULL << (dev->width), false);
    pmu_test_deliver_nmis(dev);
    assert_int_equal(fake_perfmon_nr_ovf_folds(), 1);
    fake_perfmon_close(h);

    dev = boot(&pmu_intel_driver, msr_model_kvm_intel());
    h = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, &hw);
    msr_model_set_status(1ULL << hw);
    transfer(dev, hw, raw_of(dev, PERFMON_EV_CACHE_MISS), KERN);
    assert_true(pmu_test_peek(MSR_IA32_PERF_GLOBAL_STATUS) & (1ULL << hw));
    fake_perfmon_close(h);
    pmu_test_assert_no_fault();
}

/*
 * The start contract: a started counter reads 0 within the device's
 * width (armed above it where there is no status register), its stale
 * overflow status dropped, so the core knows its value without a read.
 */
static void
check_start_known(const struct pmu_driver *drv, struct msr_model_config c,
                  uint32_t status_msr)
{
    struct perfmon_dev *dev = boot(drv, c);
    uint64_t mask = (1ULL << dev->width) - 1, status;
    unsigned int hw;
    uintptr_t arg;
    int h;

    if (status_msr != 0) {
        msr_model_set_status(1);
    }

    h = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, &hw);
    assert_int_equal(hw, 0);
    assert_int_equal(dev->ops->read_method(dev, hw, &arg),
                     PERFMON_READ_RDPMC);
    assert_int_equal(msr_rdpmc((uint32_t)arg) & mask, 0);

    if (status_msr != 0) {
        assert_true(msr_model_peek(status_msr, &status));
        assert_int_equal(status & 1, 0);
    }

    fake_perfmon_close(h);
    pmu_test_assert_no_fault();
}

static void
test_start_known(void **state)
{
    (void)state;
    check_start_known(&pmu_intel_driver, msr_model_intel(1), 0);
    check_start_known(&pmu_intel_driver, msr_model_kvm_intel(),
                      MSR_IA32_PERF_GLOBAL_STATUS);
    check_start_known(&pmu_intel_driver, msr_model_intel(5),
                      MSR_IA32_PERF_GLOBAL_STATUS);
    check_start_known(&pmu_amd_driver, msr_model_amd(0x17, true, false), 0);
    check_start_known(&pmu_amd_driver, msr_model_kvm_amd(),
                      MSR_AMD_PERF_CNTR_GLOBAL_STATUS);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intel_read_method),
        cmocka_unit_test(test_amd_read_method),
        cmocka_unit_test(test_intel_transfer_gp),
        cmocka_unit_test(test_amd_transfer),
        cmocka_unit_test(test_intel_transfer_fixed),
        cmocka_unit_test(test_transfer_keeps_overflow),
        cmocka_unit_test(test_start_known),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
