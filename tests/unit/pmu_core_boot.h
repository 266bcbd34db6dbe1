/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * An x86 PMU driver on the register-level model, driven through the real
 * perfmon core (tests linking $(PERFMON_CORE_SRCS) and a driver, not the
 * stand-in core of fakes/pmu_perfmon.c).  The drivers' self-test is not
 * linked: pmu_core_boot.c stands in for it and fails the test if called.
 */

#ifndef TESTS_UNIT_PMU_CORE_BOOT_H
#define TESTS_UNIT_PMU_CORE_BOOT_H

#include "arch/x86/pmu.h"
#include "kern/perfmon.h"
#include "msr_model.h"

/*
 * A one-CPU machine as config says, the perfmon core and the fakes fresh,
 * drv probed (its capabilities in *capsp) and registered as the boot glue
 * does it (pmu_boot.c), the test's thread running.  Returns drv's device.
 */
struct perfmon_dev *pmu_core_boot(const struct pmu_driver *drv,
                                  const struct msr_model_config *config,
                                  struct pmu_caps *capsp);

#endif /* TESTS_UNIT_PMU_CORE_BOOT_H */
