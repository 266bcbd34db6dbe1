/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Helpers shared by the host tests of the PMU drivers: see
 * tests/unit/pmu_test_common.h.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/x86/lapic.h"
#include "arch/x86/pmu.h"
#include "fakes/fake_smp.h"
#include "fakes/pmu_perfmon.h"
#include "kern/error.h"
#include "kern/perfmon.h"
#include "msr_model.h"
#include "pmu_test_common.h"

uint64_t pmu_test_rng_state;

struct perfmon_dev *
pmu_test_boot(const struct pmu_driver *drv, struct pmu_caps *caps,
              const struct msr_model_config *config, bool use_nmi)
{
    fake_cpu_reset(1);
    fake_perfmon_reset();
    msr_model_init(config);
    assert_int_equal(drv->probe(caps, use_nmi), 0);
    drv->cpu_init();

    if (caps->overflow_nmi) {
        lapic_pmc_setup();
    }

    assert_int_equal(perfmon_register(drv->dev), 0);
    return drv->dev;
}

void
pmu_test_check_declines(const struct pmu_driver *drv, struct pmu_caps *caps,
                        const struct msr_model_config *config,
                        const char *reason)
{
    fake_perfmon_reset();
    msr_model_init(config);
    assert_int_equal(drv->probe(caps, true), -ENODEV);
    assert_false(caps->present);
    assert_non_null(caps->reason);
    assert_string_equal(caps->reason, reason);
    pmu_test_assert_no_fault();
    /* No device: an NMI is not the driver's. */
    assert_false(perfmon_overflow_intr(drv->dev, NULL));
}

void
pmu_test_check_polled(int h, uint64_t seed)
{
    uint64_t total = 0;

    pmu_test_rng_state = seed;

    for (unsigned int i = 0; i < 2000; i++) {
        uint64_t n = pmu_test_rng_next() % (1ULL << 47);

        msr_model_inject(MSR_MODEL_EV_BRANCH, n, false);
        total += n;
        pmu_test_assert_count(fake_perfmon_value(h), total);
    }

    assert_int_equal(msr_model_nmis_pending(), 0);
}

void
pmu_test_check_count(uint64_t value, uint64_t injected, const char *file,
                     int line)
{
    uint64_t slack = msr_model_drifted();

    if (value < injected || value - injected > slack) {
        fail_msg("%s:%d: count %llu, expected %llu + at most %llu of drift",
                 file, line, (unsigned long long)value,
                 (unsigned long long)injected, (unsigned long long)slack);
    }
}

void
pmu_test_deliver_nmis(struct perfmon_dev *dev)
{
    while (msr_model_take_nmi()) {
        assert_true(perfmon_overflow_intr(dev, NULL));
        assert_false(msr_model_lvt_masked());
    }
}

uint64_t
pmu_test_peek(uint32_t msr)
{
    uint64_t value = 0;

    assert_true(msr_model_peek(msr, &value));
    return value;
}

void
pmu_test_assert_no_fault(void)
{
    assert_int_equal(msr_model_nr_gp_unsafe(), 0);
}

uint64_t
pmu_test_rng_next(void)
{
    pmu_test_rng_state ^= pmu_test_rng_state << 13;
    pmu_test_rng_state ^= pmu_test_rng_state >> 7;
    pmu_test_rng_state ^= pmu_test_rng_state << 17;
    return pmu_test_rng_state;
}
