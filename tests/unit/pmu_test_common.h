/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Helpers shared by the host tests of the PMU drivers (pmu_intel_test.c,
 * pmu_amd_test.c): booting a driver on the register-level model of
 * tests/unit/msr_model.c, delivering its NMIs, looking at registers and a
 * small deterministic generator for chunk sizes.  Each helper fails the
 * running cmocka test when the model or the driver misbehaves.
 */

#ifndef TESTS_UNIT_PMU_TEST_COMMON_H
#define TESTS_UNIT_PMU_TEST_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/pmu.h"
#include "kern/perfmon.h"
#include "msr_model.h"

/*
 * xcall_call as the boot glue (and the branch-record driver) use it: fn on
 * cpu, interrupts disabled, then back.  Returns 0.
 */
int pmu_test_run_on(void (*fn)(void *arg), void *arg, unsigned int cpu);

/*
 * Model, probe, per-CPU init, LVT armed, registration: drv booted on a
 * one-CPU machine built from config.  The probe must succeed; *caps is
 * what it reported.  Returns the registered device.
 */
struct perfmon_dev *pmu_test_boot(const struct pmu_driver *drv,
                                  struct pmu_caps *caps,
                                  const struct msr_model_config *config,
                                  bool use_nmi);

/*
 * The same on the model as the test set it up (msr_model_init, and
 * msr_model_set_cpu for the CPUs that differ), with nr_cpus CPUs: the
 * probe, as the boot glue runs it, then each CPU's init and LVT.  Leaves
 * the test on CPU 0.  pmu_test_probe_cpus() is the probe alone, returning
 * its result.
 */
struct perfmon_dev *pmu_test_boot_cpus(const struct pmu_driver *drv,
                                       struct pmu_caps *caps,
                                       unsigned int nr_cpus, bool use_nmi);
int pmu_test_probe_cpus(const struct pmu_driver *drv, struct pmu_caps *caps,
                        unsigned int nr_cpus, bool use_nmi);

/*
 * drv, probed on a machine built from config, must decline it for reason,
 * without a fault, leaving no device to take an NMI.
 */
void pmu_test_check_declines(const struct pmu_driver *drv,
                             struct pmu_caps *caps,
                             const struct msr_model_config *config,
                             const char *reason);

/*
 * Inject branches in 2000 chunks of random sizes below 2^47 (generator
 * seeded with seed), reading h, a polled branch counter, after each: the
 * count must stay exact across the wraps, with no NMI raised.
 */
void pmu_test_check_polled(int h, uint64_t seed);

/*
 * A kernel-mode count of injected events: what the test injected, plus
 * at most the events the model counted while the driver ran (its drift).
 * A user-mode count owes nothing to the drift: compare it exactly.
 */
#define pmu_test_assert_count(value, injected)                          \
    pmu_test_check_count((value), (injected), __FILE__, __LINE__)

void pmu_test_check_count(uint64_t value, uint64_t injected,
                          const char *file, int line);

/* Deliver the pending NMIs through the driver's path; all must be its. */
void pmu_test_deliver_nmis(struct perfmon_dev *dev);

/*
 * The same, some of them perhaps not the driver's (late, foreign):
 * returns how many it did not claim.  Each leaves the LVT unmasked.
 */
unsigned int pmu_test_deliver_any_nmis(struct perfmon_dev *dev);

/*
 * Branches injected in chunks of random sizes below max_chunk, nr_rounds
 * times, into counter h of dev, read now and then, NMIs delivered after
 * each chunk (some perhaps not the driver's): the count must stay within
 * the drift of what was injected.  Returns the NMIs not claimed.
 */
unsigned int pmu_test_check_branches(struct perfmon_dev *dev, int h,
                                     unsigned int nr_rounds,
                                     uint64_t max_chunk);

/*
 * The raw event code refused (-EINVAL) by dev's alloc with each of the
 * nr_bad bits of bad added (bits the driver owns or the hardware does not
 * define), and with bad mode flags.
 */
void pmu_test_check_raw_refused(struct perfmon_dev *dev, uint64_t code,
                                const uint64_t *bad, size_t nr_bad);

/*
 * Three counters of dev (branches and cycles in the kernel, instructions
 * in both modes, every other chunk of them in user mode) through
 * nr_rounds injections of random sizes below max_chunk, the NMIs
 * delivered after each and the branch count read now and then: the counts
 * must stay exact across at least min_wraps folded overflows, no PMI lost
 * (some merged, as they come faster than one NMI each), every one
 * acknowledged (the global status clear, where there is one) and
 * followed by an unmasked LVT.
 */
void pmu_test_check_wraps(struct perfmon_dev *dev, unsigned int nr_rounds,
                          uint64_t max_chunk, unsigned int min_wraps);

/*
 * A counter of dev that wraps, raising its PMI, and is stopped and
 * started for a new user before the NMI is taken (one section of the
 * core: a thread switch, a multiplexing turn): the NMI must not charge
 * the previous user's overflow to the new one, whose count stays exact,
 * and no overflow-status bit of the counter is left behind.
 */
void pmu_test_check_restart_drops_overflow(struct perfmon_dev *dev);

/*
 * A sampling counter of dev re-armed from each PMI so close to its wrap
 * that it wraps at the next of the driver's accesses with the counters
 * running: the handler's end must let that wrap's PMI through (the LVT
 * unmasked before the counters count again), or the counter never
 * interrupts again.  Every round's wrap raises a PMI that is taken; none
 * is lost; the count stays exact.
 */
void pmu_test_check_unmask_window(struct perfmon_dev *dev);

/*
 * Sampling re-arms counters from the PMI: the core reads, then writes.
 * Two counters of dev (branches, instructions) re-armed on every overflow
 * through thousands of them: with a global control register (ctrl_msr)
 * the handler freezes them first, so that not an event is lost (model
 * drift included), and leaves the register as it found it.
 */
void pmu_test_check_rearm(struct perfmon_dev *dev, uint32_t ctrl_msr);

/*
 * Run the x86 self-test (pmu_selftest) on dev, booted on the model:
 * returns its failures, after checking that it left every counter free
 * and stopped, the global enables as they were, and made no plain access
 * that faulted.  verbose prints its lines (do when a test fails on them).
 */
unsigned int pmu_test_selftest(struct perfmon_dev *dev, bool verbose);

/*
 * The last pmu_test_selftest() printed a line holding check (its verdict
 * and name: "PASS  counter 2: cycles per TSC cycle") that shows measured
 * as its value (NULL: any).
 */
void pmu_test_assert_selftest_line(const char *check, const char *measured);

/* The value of an MSR the modelled CPU must have. */
uint64_t pmu_test_peek(uint32_t msr);

/* No plain MSR access has faulted (a driver bug). */
void pmu_test_assert_no_fault(void);

/* State of pmu_test_rng_next(): a test seeds it (nonzero) before use. */
extern uint64_t pmu_test_rng_state;

/* The next value of a xorshift generator. */
uint64_t pmu_test_rng_next(void);

#endif /* TESTS_UNIT_PMU_TEST_COMMON_H */
