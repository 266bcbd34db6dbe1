/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Booting a PMU driver on the register-level model under the real perfmon
 * core, for the tests of both together (see pmu_core_boot.h).
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/x86/lapic.h"
#include "fakes/fake_kmem.h"
#include "fakes/fake_log.h"
#include "fakes/fake_smp.h"
#include "pmu_core_boot.h"

/* The drivers' self-test report goes through the stand-in core only. */
void
pmu_selftest(struct perfmon_dev *dev, struct perfmon_selftest *st)
{
    (void)dev;
    (void)st;
    fail_msg("pmu_selftest is not part of this test");
}

static int
pmu_core_boot_run_on(void (*fn)(void *arg), void *arg, unsigned int cpu)
{
    struct fake_ctx saved;

    fake_ctx_enter(&saved, cpu);
    fn(arg);
    fake_ctx_exit(&saved);
    return 0;
}

struct perfmon_dev *
pmu_core_boot(const struct pmu_driver *drv,
              const struct msr_model_config *config, struct pmu_caps *capsp)
{
    struct fake_ctx saved;

    fake_cpu_reset(1);
    fake_thread_reset();
    fake_xcall_reset();
    fake_timer_reset();
    fake_syscnt_reset();
    fake_kmem_reset();
    fake_log_reset();
    fake_clock_set(1000);
    perfmon_reset();
    fake_thread_switch(0, fake_thread_create("self"));
    msr_model_init(config);
    assert_int_equal(pmu_probe_cpus(drv, capsp, true, pmu_core_boot_run_on),
                     0);
    fake_ctx_enter(&saved, 0);
    drv->cpu_init();
    lapic_pmc_setup();
    fake_ctx_exit(&saved);
    assert_int_equal(perfmon_register(drv->dev), 0);
    return drv->dev;
}
