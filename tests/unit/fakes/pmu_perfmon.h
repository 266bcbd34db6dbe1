/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * A small stand-in for the perfmon core, for the PMU driver tests: it
 * takes the device the driver registers, opens counters on it the way the
 * core does (alloc, then start on "this CPU"), and extends their values to
 * 64 bits from plain reads and from the overflow interrupt
 * (perfmon_overflow_intr, which the driver's NMI path calls).  One CPU.
 * It also has the core's perfmon_dev_translate, perfmon_dev_alloc and
 * perfmon_dev_free, for the drivers' self-test, and, for the branch-record
 * driver's tests, the callback registry (the callbacks run between the
 * fold and the device's overflow_intr_end, as in the core), the branch
 * stack a callback hands over, and the branch driver's registration.
 */

#ifndef TESTS_UNIT_FAKES_PMU_PERFMON_H
#define TESTS_UNIT_FAKES_PMU_PERFMON_H

#include <stdbool.h>
#include <stdint.h>

#include "kern/perfmon.h"

#define FAKE_PERFMON_MAX_OPEN   32

/* Forget the registered device and every open counter. */
void fake_perfmon_reset(void);

/* The registered device, or NULL. */
struct perfmon_dev *fake_perfmon_dev(void);

/*
 * Open a counter for raw code raw (or generic event id through translate)
 * with mode flags: alloc and start.  Returns a handle >= 0, or the
 * driver's error.  *hw_idp (may be NULL) receives the hw id.
 */
int fake_perfmon_open_raw(uint64_t raw, unsigned int flags,
                          unsigned int *hw_idp);
int fake_perfmon_open(unsigned int event_id, unsigned int flags,
                      unsigned int *hw_idp);

/*
 * Re-arm an open counter from every overflow interrupt that reports it, as
 * sampling does: after folding, load it with value through the device's
 * write operation (0: do not re-arm).  The counter is armed at once too.
 */
void fake_perfmon_set_rearm(int handle, uint64_t value);

/* Load an open counter with value, as the core arms a sampling counter. */
void fake_perfmon_write(int handle, uint64_t value);

/* The 64-bit count of an open counter, after a plain read. */
uint64_t fake_perfmon_value(int handle);

/* Stop and free; returns the final count. */
uint64_t fake_perfmon_close(int handle);

/* Overflow interrupts the fake core saw claimed, and counters folded. */
unsigned int fake_perfmon_nr_intrs(void);
unsigned int fake_perfmon_nr_ovf_folds(void);

/* The overflow mask the driver returned last. */
uint64_t fake_perfmon_last_mask(void);

/*
 * The branch stack a callback set in the last interrupt that ran them
 * (its entries, their number in *nrp: 0 when none was set), and how many
 * interrupts ran the callbacks.
 */
const struct perfmon_branch *fake_perfmon_branches(unsigned int *nrp);
unsigned int fake_perfmon_nr_callback_runs(void);

/*
 * Callbacks registered now, and the last one registered (kept after it
 * is unregistered: a test may call it as a late NMI would).
 */
unsigned int fake_perfmon_nr_callbacks(void);
perfmon_intr_fn_t fake_perfmon_last_callback(void);

/*
 * The registered branch-record driver (NULL: none), and the reason for
 * none its probe gave (perfmon_branch_set_absent(); "" before).
 */
const struct perfmon_branch_driver *fake_perfmon_branch_driver(void);
const char *fake_perfmon_branch_absent(void);

#endif /* TESTS_UNIT_FAKES_PMU_PERFMON_H */
