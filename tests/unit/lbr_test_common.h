/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Helpers shared by the host tests of the branch-record back ends
 * (lbr_intel_test.c, lbr_arch_test.c, lbr_amd_test.c): the PMU driver and
 * the branch-record driver booted on the register-level model, its
 * branch records (msr_model_lbr.c) fed known branches, an overflow PMI
 * raised and delivered through the PMU driver's path and the fake core's
 * callback registry (fakes/pmu_perfmon.c), and the stack the driver's
 * callback handed over compared with what was injected.  Each helper
 * fails the running cmocka test when something misbehaves.
 */

#ifndef TESTS_UNIT_LBR_TEST_COMMON_H
#define TESTS_UNIT_LBR_TEST_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/pmu.h"
#include "kern/perfmon.h"
#include "msr_model.h"

/* The PMU driver the test binary links (pmu_intel or pmu_amd). */
extern const struct pmu_driver *const lbr_test_pmu;

/* Filters used throughout. */
#define LBR_TEST_ANY    (PERFMON_BRF_ANY | PERFMON_BRF_MODE)

/* Where the injected branches start (kernel text), and their spacing. */
#define LBR_TEST_IP     0xffffffff80200000ULL
#define LBR_TEST_STEP   0x100

/*
 * The machine config, nr_cpus CPUs, its PMU probed and booted with
 * overflow NMIs, then the branch-record driver probed: returns the
 * probe's result; *reasonp (may be NULL) receives the reason it gave for
 * no records (NULL when it registered).
 */
int lbr_test_probe(const struct msr_model_config *config,
                   unsigned int nr_cpus, const char **reasonp);

/* The same, the last CPU built from odd instead (not NULL). */
int lbr_test_probe_odd(const struct msr_model_config *config,
                       unsigned int nr_cpus,
                       const struct msr_model_config *odd,
                       const char **reasonp);

/*
 * The branch-record driver probed on config (one CPU) with no hardware PMU
 * to capture on: returns the probe's result, *reasonp its reason.
 */
int lbr_test_probe_without_pmu(const struct msr_model_config *config,
                               const char **reasonp);

/* The same, which must succeed: returns the registered driver. */
const struct perfmon_branch_driver *
lbr_test_boot(const struct msr_model_config *config, unsigned int nr_cpus);

/*
 * lbr_test_boot() on one CPU, then the records started with every branch
 * of both modes (LBR_TEST_ANY).
 */
const struct perfmon_branch_driver *
lbr_test_boot_start(const struct msr_model_config *config);

/* The PMU device booted last. */
struct perfmon_dev *lbr_test_dev(void);

/* The driver's start (must succeed) and stop, as the core calls them. */
void lbr_test_start(unsigned int filter);
void lbr_test_stop(void);

/*
 * nr branches of kind on this CPU, the i-th from LBR_TEST_IP + i *
 * LBR_TEST_STEP + first * LBR_TEST_STEP to 0x40 further, mispredicted
 * when i is odd, i + 1 cycles each, in kernel mode unless user.  Returns
 * how many the records kept (filter).
 */
unsigned int lbr_test_branches(unsigned int first, unsigned int nr,
                               unsigned int kind, bool user);

/*
 * A counter armed to overflow after a few hundred cycles, with its
 * interrupt: lbr_test_overflow() makes it overflow (the PMI freezes the
 * records, as the hardware does, and stays pending); lbr_test_deliver()
 * delivers the pending NMIs through the PMU driver and the callbacks and
 * returns the stack the driver handed over (*nrp entries).
 */
int lbr_test_arm(void);
void lbr_test_overflow(int handle);
const struct perfmon_branch *lbr_test_deliver(unsigned int *nrp);

/*
 * arm, overflow, deliver: the stack of one sample (the arming records no
 * branch of the driver's: the newest are the test's).
 */
const struct perfmon_branch *lbr_test_sample(unsigned int *nrp);

/*
 * The stack holds, newest first, the injected branches last_first down
 * to last_first - nr + 1 (as lbr_test_branches() numbers them), their
 * flags as the back end can tell them (mispredicts: known; cycles: too).
 */
void lbr_test_assert_stack(const struct perfmon_branch *entries,
                           unsigned int nr_entries, unsigned int newest,
                           unsigned int nr, bool mispreds, bool cycles);

/* No entry of the stack is one of the driver's own (drift) branches. */
void lbr_test_assert_no_drift(const struct perfmon_branch *entries,
                              unsigned int nr);

/* Every entry of the stack from first on is one of the driver's own. */
void lbr_test_assert_drift_from(const struct perfmon_branch *entries,
                                unsigned int nr, unsigned int first);

/*
 * How many of the newest entries are the driver's own branches: those it
 * took in the interrupt before it stopped records that no PMI froze.
 */
unsigned int lbr_test_nr_own(const struct perfmon_branch *entries,
                             unsigned int nr);

/* The probe of config (one CPU) declines, with a reason holding reason. */
void lbr_test_assert_declines(const struct msr_model_config *config,
                              const char *reason);

/* A filter, and the value it programs into the back end's filter MSR. */
struct lbr_test_filter_value {
    unsigned int filter;
    uint64_t value;
};

/* Each case's filter, started then stopped in turn, programs msr so. */
void lbr_test_assert_filter_values(uint32_t msr,
                                   const struct lbr_test_filter_value *cases,
                                   size_t nr_cases);

/*
 * The checks every back end passes, on config (flags: what its records
 * tell, see lbr_test_assert_stack()):
 *
 * lbr_test_check_freeze: the PMI freezes the records; the stack the
 *   callback hands over is the newest depth of the 40 injected before it
 *   (none of the handler's own branches: a driver that read the records
 *   running, or after letting them run again, fails here), and the
 *   records run again after.
 * lbr_test_check_sched_in: a switch-in forgets what the records held:
 *   the stack of the next sample is the branches injected since, then only
 *   the driver's own.
 * lbr_test_check_addresses: the addresses of a sample's branches come
 *   back as they were taken, sign-extended from the top implemented bit
 *   (47: 48-bit addresses) whatever the bits next to it hold: kernel
 *   addresses at the bottom of the upper half (0xffff800000001000), at
 *   its top, and user addresses just below the hole.
 * lbr_test_check_stale_freeze: a freeze left set before the driver
 *   starts (an interrupt nobody captured) is cleared by the start, and
 *   the first sample's stack is the branches taken since.
 * lbr_test_check_broken: records advertised but not there are declined:
 *   MSRs that fault (with a reason holding faults), registers that drop
 *   writes (dead), a DEBUGCTL that faults on the LBR bits.
 */
void lbr_test_check_freeze(const struct msr_model_config *config,
                           unsigned int depth, bool mispreds, bool cycles);
void lbr_test_check_sched_in(const struct msr_model_config *config,
                             bool mispreds, bool cycles);
void lbr_test_check_addresses(const struct msr_model_config *config);
void lbr_test_check_stale_freeze(const struct msr_model_config *config,
                                 bool mispreds, bool cycles);
void lbr_test_check_broken(const struct msr_model_config *config,
                           const char *faults, const char *dead);

#endif /* TESTS_UNIT_LBR_TEST_COMMON_H */
