/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * x86 hardware PMU boot glue: pick the driver for the CPU vendor (or none
 * with `perfmon.hw=off`), probe it on every CPU (pmu_probe_cpus), prepare
 * every CPU (counters stopped, performance-counter LVT set for NMI
 * delivery), hook the NMI chain,
 * register the device with the perfmon core and hand the core the one-line
 * status that `perfmon info` shows.  When there is no working PMU the log
 * says why in one line, the operation returns -ENODEV and the software PMU
 * serves alone.  `perfmon.nmi=off` asks for a polled device instead of
 * overflow NMIs.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/pmu.h"
#include "arch/x86/pmu_evtab.h"
#include "arch/x86/smp.h"
#include "arch/x86/trap.h"
#include "kern/cmdline.h"
#include "kern/error.h"
#include "kern/init.h"
#include "kern/log.h"
#include "kern/perfmon.h"
#include "kern/printf.h"
#include "kern/string.h"
#include "kern/xcall.h"

static struct pmu_caps pmu_caps = { .reason = "not probed" };

/* Published once registered; read by the NMI handler. */
static const struct pmu_driver *pmu_driver;
static struct perfmon_dev *pmu_dev;

const struct pmu_caps *
pmu_get_caps(void)
{
    return &pmu_caps;
}

struct perfmon_dev *
pmu_get_dev(void)
{
    return __atomic_load_n(&pmu_dev, __ATOMIC_ACQUIRE);
}

const struct pmu_driver *
pmu_get_driver(void)
{
    return __atomic_load_n(&pmu_driver, __ATOMIC_ACQUIRE);
}

static void
pmu_cpu_prepare(void *arg)
{
    const struct pmu_driver *driver = arg;

    driver->cpu_init();

    if (pmu_caps.overflow_nmi) {
        lapic_pmc_setup();
    }
}

static bool
pmu_option_off(const char *key)
{
    const char *value = cmdline_get(key);

    return value != NULL && strcmp(value, "off") == 0;
}

static const struct pmu_driver *
pmu_select_driver(void)
{
    switch (cpu_info.vendor) {
    case CPU_VENDOR_INTEL:
        return &pmu_intel_driver;
    case CPU_VENDOR_AMD:
        return &pmu_amd_driver;
    default:
        return NULL;
    }
}

/*
 * What to try when a hypervisor (CPUID.1:ECX[31]) showed no working PMU,
 * or NULL on bare metal.  KVM has no vPMU with kvm.enable_pmu=0 or on a
 * hybrid host (Linux arch/x86/kvm/pmu.c, kvm_init_pmu_capability), and
 * QEMU turns its vPMU on only for -cpu host and max, or with pmu=on.
 */
static const char *
pmu_hypervisor_hint(void)
{
    if (!(cpu_info.feat1_ecx & PMU_CPUID_1_ECX_HYPERVISOR)) {
        return NULL;
    }

    return "the hypervisor hides it: try QEMU pmu=on, kvm.enable_pmu=1, a "
           "non-hybrid host";
}

/*
 * No hardware device: say why, in the log and in `perfmon info`, and what
 * would expose one (hint, or NULL).
 */
static int
pmu_absent(const char *log_line, const char *hint)
{
    char status[PERFMON_HW_STATUS_SIZE];

    if (hint != NULL) {
        log_info("pmu: %s; %s", log_line, hint);
        ksnprintf(status, sizeof(status), "none (%s; %s)", pmu_caps.reason,
                  hint);
    } else {
        log_info("pmu: %s", log_line);
        ksnprintf(status, sizeof(status), "none (%s)", pmu_caps.reason);
    }

    perfmon_set_hw_status(false, status);
    return -ENODEV;
}

/* The summary of a registered device, for the log and `perfmon info`. */
static void
pmu_present(const struct pmu_driver *driver)
{
    char status[PERFMON_HW_STATUS_SIZE];
    const char *overflow = pmu_caps.overflow_nmi ? "nmi" : "poll";

    if (pmu_caps.nr_fixed != 0) {
        log_info("pmu: %s version %u, %u counters of %u bits, %u fixed, "
                 "overflow by %s", driver->name, pmu_caps.version,
                 pmu_caps.nr_gp, pmu_caps.gp_width, pmu_caps.nr_fixed,
                 overflow);
    } else {
        log_info("pmu: %s version %u, %u counters of %u bits, overflow by %s",
                 driver->name, pmu_caps.version, pmu_caps.nr_gp,
                 pmu_caps.gp_width, overflow);
    }

    ksnprintf(status, sizeof(status), "driver %s, version %u, %u "
              "general-purpose counters x %u bits, %u fixed x %u bits, "
              "overflow %s", driver->name, pmu_caps.version, pmu_caps.nr_gp,
              pmu_caps.gp_width, pmu_caps.nr_fixed, pmu_caps.fixed_width,
              pmu_caps.overflow_nmi ? "NMI" : "polled");
    perfmon_set_hw_status(true, status);
}

static int
pmu_setup(void)
{
    const struct pmu_driver *driver;
    struct perfmon_dev *dev;
    char line[PERFMON_HW_STATUS_SIZE];
    int error;

    /* The model's event names, also where no PMU shows (KVM, TCG). */
    pmu_evtab_setup(cpu_info.vendor, cpu_info.family, cpu_info.model,
                    cpu_info.stepping);

    if (pmu_option_off("perfmon.hw")) {
        pmu_caps = (struct pmu_caps){ .reason = "perfmon.hw=off" };
        return pmu_absent("hardware PMU disabled by perfmon.hw=off", NULL);
    }

    driver = pmu_select_driver();

    if (driver == NULL) {
        pmu_caps = (struct pmu_caps){ .reason = "unknown CPU vendor",
                                      .vendor = cpu_info.vendor };
        return pmu_absent("no hardware PMU (unknown CPU vendor), "
                          "software events only", NULL);
    }

    error = pmu_probe_cpus(driver, &pmu_caps, !pmu_option_off("perfmon.nmi"),
                           xcall_call);

    if (error) {
        ksnprintf(line, sizeof(line), "no hardware PMU (%s: %s), software "
                  "events only", driver->name, pmu_caps.reason);
        return pmu_absent(line, pmu_hypervisor_hint());
    }

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        error = xcall_call(pmu_cpu_prepare, (void *)driver, cpu);

        if (error) {
            log_error("pmu: cannot prepare cpu%u: %s", cpu, error_str(error));
        }
    }

    dev = driver->dev;

    /*
     * Hook the NMI chain first: an overflow can only follow registration.
     * Every NMI reaches the core's handler, which claims it only for a
     * registered device that reports overflowed counters.
     */
    trap_nmi_register(perfmon_overflow_nmi, dev);
    error = perfmon_register(dev);

    if (error) {
        pmu_caps.present = false;
        pmu_caps.reason = "registration failed";
        log_error("pmu: cannot register %s: %s", dev->name, error_str(error));
        perfmon_set_hw_status(false, "none (registration failed)");
        return error;
    }

    __atomic_store_n(&pmu_driver, driver, __ATOMIC_RELEASE);
    __atomic_store_n(&pmu_dev, dev, __ATOMIC_RELEASE);
    pmu_present(driver);
    return 0;
}

INIT_OP_DEFINE(pmu_setup, INIT_OP_DEP(perfmon_setup, true),
               INIT_OP_DEP(smp_setup, true), INIT_OP_DEP(lapic_setup, true));
