/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * What the files of `perfmon selftest --accuracy` share: the run
 * (kern/perfmon/cmd/perfmon_accuracy.c, the multiplexing error) and the
 * hardware measurements (perfmon_accuracy_hw.c, over-count and skid).
 * Thread context, the run's thread, pinned to acc->cpu.
 */

#ifndef KERN_PERFMON_CMD_ACCURACY_I_H
#define KERN_PERFMON_CMD_ACCURACY_I_H

#include <stdbool.h>
#include <stdint.h>

#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_accuracy_calc.h"

/* Flexible events at most in a set: a device's slots, less the pinned. */
#define PERFMON_ACCURACY_MAX_FLEX   (PERFMON_DEV_MAX_PMCS - 2)

/*
 * A run: where lines go, the stop test, the CPU, and the workloads'
 * state: the walk's buffer, the yield helper's stop flag.
 */
struct perfmon_accuracy {
    const struct perfmon_accuracy_out *out;
    bool (*stop)(void);
    bool stopped;
    unsigned int cpu;
    struct perfmon_dev *step;
    volatile uint8_t *walk;
    bool yield_stop;                    /* READ_ONCE: set by the run */
};

/* The events of one measured span: up to two pinned ones, the rest not. */
struct perfmon_accuracy_set {
    struct perfmon_event ref;           /* step instructions, pinned */
    struct perfmon_event dev_ref;       /* the device's own, pinned */
    struct perfmon_event flex[PERFMON_ACCURACY_MAX_FLEX];
    struct perfmon_event *all[PERFMON_ACCURACY_MAX_FLEX + 2];
    unsigned int nr_all;
};

/* Whether the run goes on: false once asked to stop. */
bool perfmon_accuracy_go(struct perfmon_accuracy *acc);

/*
 * Attach event to this thread, disabled, on dev (NULL: the default),
 * counting generic id in kernel mode with flags, group: its own group;
 * added to set->all.  Returns perfmon_event_attach()'s errors.
 * perfmon_accuracy_detach() detaches set->all.
 */
int perfmon_accuracy_attach(struct perfmon_accuracy_set *set,
                            struct perfmon_event *event,
                            struct perfmon_dev *dev, unsigned int id,
                            unsigned int flags, bool group);
void perfmon_accuracy_detach(struct perfmon_accuracy_set *set);

/*
 * The pinned step reference, for dev other than the step PMU its own
 * pinned reference of id, then nr_flex flexible events of id on dev,
 * each its own group.  Returns 0, or an error with nothing attached.
 */
int perfmon_accuracy_set_attach(struct perfmon_accuracy *acc,
                                struct perfmon_accuracy_set *set,
                                struct perfmon_dev *dev, unsigned int id,
                                unsigned int nr_flex);

/*
 * Measurements 2 and 3 (perfmon_accuracy_hw.c): each prints its table;
 * returns 0 or why it could not be set up.  The over-count needs a
 * hardware PMU; the skid checks its reference, the step PMU's samples,
 * on any machine, and with hw_present measures the hardware's.
 */
int perfmon_accuracy_overcount_run(struct perfmon_accuracy *acc,
                                   struct perfmon_accuracy_set *set);
int perfmon_accuracy_skid_run(struct perfmon_accuracy *acc,
                              struct perfmon_accuracy_set *set,
                              bool hw_present);

#endif /* KERN_PERFMON_CMD_ACCURACY_I_H */
