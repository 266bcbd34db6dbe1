/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel tests of the x86 hardware PMU (suite "pmu", run alone with
 * `test=pmu`).  Everywhere: the capability summary agrees with the device
 * table, and where there is no PMU the probe declines again cleanly while
 * the software PMU serves.  Where a PMU exists (tools/hwcheck boots with
 * `-enable-kvm -cpu host`): instructions of a loop of known length, cycles
 * of the same loop, and a counter wrap delivered through the NMI path;
 * without a PMU these are skipped with "# SKIP no PMU".
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/pmu.h"
#include "kern/error.h"
#include "kern/ktest.h"
#include "kern/perfmon.h"
#include "kern/string.h"
#include "kern/thread.h"

/* Iterations of the measured loop: two instructions each. */
#define PMU_TEST_LOOPS          1000000ULL
#define PMU_TEST_INSNS_PER_LOOP 2
/* Instructions the attach/read paths may add around the loop. */
#define PMU_TEST_SLACK          50000ULL

/* Exactly PMU_TEST_INSNS_PER_LOOP instructions per iteration. */
static void
pmu_test_loop(uint64_t n)
{
    __asm__ __volatile__("1: dec %0\n\t"
                         "jnz 1b"
                         : "+r"(n) : : "cc");
}

static bool
pmu_test_have_pmu(void)
{
    if (pmu_get_dev() == NULL) {
        ktest_skip_reason("no PMU");
        return false;
    }

    return true;
}

/*
 * Count generic event id of the hardware device in kernel mode while the
 * calling thread runs the loop.  The event follows the thread, so only
 * interrupts taken meanwhile add to the count (within the slack).
 */
static int
pmu_test_measure(unsigned int id, uint64_t *countp)
{
    struct perfmon_event ev;
    uint64_t before, after;
    int error;

    error = perfmon_event_init(&ev, id, PERFMON_EF_KERN);

    if (error == 0) {
        error = perfmon_event_set_dev(&ev, pmu_get_dev());
    }

    if (error == 0) {
        error = perfmon_event_attach(&ev, thread_self());
    }

    if (error) {
        return error;
    }

    before = perfmon_event_read(&ev);
    pmu_test_loop(PMU_TEST_LOOPS);
    after = perfmon_event_read(&ev);
    perfmon_event_detach(&ev);
    *countp = after - before;
    return 0;
}

static int
pmu_test_caps(void)
{
    const struct pmu_caps *caps = pmu_get_caps();
    struct perfmon_dev *dev = pmu_get_dev();

    KTEST_ASSERT(caps != NULL);
    /* The software PMU is there, hardware or not. */
    KTEST_ASSERT(perfmon_dev_find("soft") != NULL);

    if (!caps->present) {
        ktest_diag("no hardware PMU: %s", caps->reason);
        KTEST_ASSERT(caps->reason != NULL && caps->reason[0] != '\0');
        KTEST_ASSERT(dev == NULL);
        KTEST_ASSERT(perfmon_dev_find("intel") == NULL);
        KTEST_ASSERT(perfmon_dev_find("amd") == NULL);
        return KTEST_PASS;
    }

    ktest_diag("%s version %u: %u x %u bits, %u fixed, overflow by %s",
               caps->driver, caps->version, caps->nr_gp, caps->gp_width,
               caps->nr_fixed, caps->overflow_nmi ? "nmi" : "poll");
    KTEST_ASSERT(dev != NULL);
    KTEST_ASSERT(perfmon_dev_find(caps->driver) == dev);
    KTEST_ASSERT_EQ(dev->width, caps->width);
    KTEST_ASSERT_EQ(dev->nr_pmcs, caps->nr_gp + caps->nr_fixed);
    KTEST_ASSERT(caps->nr_gp >= 1);
    KTEST_ASSERT(dev->width >= 16 && dev->width <= 64);
    return KTEST_PASS;
}

KTEST_DEFINE(pmu, caps, pmu_test_caps);

/*
 * Without a working PMU, probing again declines the same way: the safe MSR
 * accesses absorb whatever the machine does (#GP under KVM, silent zeros
 * under TCG) and nothing is left registered.
 */
static int
pmu_test_absence(void)
{
    const struct pmu_caps *caps = pmu_get_caps();
    const struct pmu_driver *driver;
    struct pmu_caps again;

    if (caps->present) {
        ktest_skip_reason("a PMU is present");
        return KTEST_SKIP;
    }

    if (caps->driver == NULL) {
        ktest_skip_reason("no driver probed");
        return KTEST_SKIP;
    }

    driver = (strcmp(caps->driver, "intel") == 0) ? &pmu_intel_driver
                                                  : &pmu_amd_driver;
    KTEST_ASSERT_EQ(driver->probe(&again, true), -ENODEV);
    KTEST_ASSERT(!again.present);
    KTEST_ASSERT(strcmp(again.reason, caps->reason) == 0);
    KTEST_ASSERT(pmu_get_dev() == NULL);
    return KTEST_PASS;
}

KTEST_DEFINE(pmu, absence, pmu_test_absence);

static int
pmu_test_instructions(void)
{
    uint64_t count = 0;
    int error;

    if (!pmu_test_have_pmu()) {
        return KTEST_SKIP;
    }

    error = pmu_test_measure(PERFMON_EV_INSTRUCTION, &count);

    if (error == -ENOENT) {
        ktest_skip_reason("instructions not counted by this PMU");
        return KTEST_SKIP;
    }

    KTEST_ASSERT_EQ(error, 0);
    ktest_diag("%llu instructions for %llu loops",
               (unsigned long long)count, (unsigned long long)PMU_TEST_LOOPS);
    KTEST_ASSERT(count >= PMU_TEST_INSNS_PER_LOOP * PMU_TEST_LOOPS);
    KTEST_ASSERT(count <= PMU_TEST_INSNS_PER_LOOP * PMU_TEST_LOOPS
                          + PMU_TEST_SLACK);
    return KTEST_PASS;
}

KTEST_DEFINE(pmu, instructions, pmu_test_instructions);

static int
pmu_test_cycles(void)
{
    uint64_t count = 0;
    int error;

    if (!pmu_test_have_pmu()) {
        return KTEST_SKIP;
    }

    error = pmu_test_measure(PERFMON_EV_CYCLE, &count);

    if (error == -ENOENT) {
        ktest_skip_reason("cycles not counted by this PMU");
        return KTEST_SKIP;
    }

    KTEST_ASSERT_EQ(error, 0);
    ktest_diag("%llu cycles for %llu loops", (unsigned long long)count,
               (unsigned long long)PMU_TEST_LOOPS);
    /* A taken branch per iteration: at least half a cycle each, and the
       loop is not slowed a hundredfold. */
    KTEST_ASSERT(count >= PMU_TEST_LOOPS / 2);
    KTEST_ASSERT(count <= 100 * PMU_TEST_LOOPS);
    return KTEST_PASS;
}

KTEST_DEFINE(pmu, cycles, pmu_test_cycles);

/*
 * A counter loaded just below its wrap must overflow during the loop and
 * raise a PMI that the driver claims through the NMI chain.  The counter,
 * reserved with perfmon_dev_alloc (no event can have it meanwhile), is
 * driven directly through the device operations, on this CPU with
 * interrupts off.
 */
static int
pmu_test_wrap_nmi(void)
{
    struct perfmon_dev *dev = pmu_get_dev();
    uint64_t raw, mask, pmis, value;
    unsigned long flags;
    unsigned int hw_id;
    int error;

    if (!pmu_test_have_pmu()) {
        return KTEST_SKIP;
    }

    if (!pmu_get_caps()->overflow_nmi) {
        ktest_skip_reason("overflow is polled");
        return KTEST_SKIP;
    }

    KTEST_ASSERT_EQ(dev->ops->translate(dev, &raw, PERFMON_EV_INSTRUCTION), 0);
    mask = (dev->width >= 64) ? UINT64_MAX : (1ULL << dev->width) - 1;

    error = perfmon_dev_alloc(dev, raw, PERFMON_EF_KERN, &hw_id);

    if (error == -EAGAIN) {
        ktest_skip_reason("no free counter");
        return KTEST_SKIP;
    }

    KTEST_ASSERT_EQ(error, 0);
    flags = cpu_intr_save();
    pmis = pmu_nr_pmis();
    dev->ops->start(dev, hw_id, raw, PERFMON_EF_KERN);
    dev->ops->write(dev, hw_id, mask - 10000);
    pmu_test_loop(PMU_TEST_LOOPS);

    value = dev->ops->read(dev, hw_id) & mask;
    dev->ops->stop(dev, hw_id);
    cpu_intr_restore(flags);
    perfmon_dev_free(dev, hw_id);

    ktest_diag("after the wrap: %llu, PMIs %llu -> %llu",
               (unsigned long long)value, (unsigned long long)pmis,
               (unsigned long long)pmu_nr_pmis());
    /* Wrapped: about 2 * loops - 10000 counted past zero. */
    KTEST_ASSERT(value < PMU_TEST_INSNS_PER_LOOP * PMU_TEST_LOOPS
                         + PMU_TEST_SLACK);
    KTEST_ASSERT(value >= PMU_TEST_INSNS_PER_LOOP * PMU_TEST_LOOPS - 10001);
    KTEST_ASSERT(pmu_nr_pmis() > pmis);
    return KTEST_PASS;
}

KTEST_DEFINE(pmu, wrap_nmi, pmu_test_wrap_nmi);
