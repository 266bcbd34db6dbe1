/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The software PMU: a perfmon device ("soft") registered on every machine,
 * whose counters count kernel software events (kern/swevent.h) and TSC
 * cycles.  It behaves like hardware: counters are softpmu.width= bits wide
 * (16..64, default 32) and wrap, and in softpmu.overflow=nmi mode a wrap
 * raises a self-NMI that reaches perfmon_overflow_intr() like a PMI; in
 * the default poll mode the core's poll timer catches the wraps.
 *
 * Events (generic id: raw code):
 *   task-clock, cpu-clock  PERFMON_EV_TASK_CLOCK: SOFTPMU_RAW_TASK_CLOCK,
 *                          TSC cycles while the counter runs
 *   context-switches       SOFTPMU_RAW_CONTEXT_SWITCH
 *   cpu-migrations         SOFTPMU_RAW_MIGRATION
 *   interrupts             SOFTPMU_RAW_INTERRUPT
 *   xcalls                 SOFTPMU_RAW_XCALL
 *   nmis                   SOFTPMU_RAW_NMI
 *   test                   SOFTPMU_RAW_TEST, softpmu_test_add()
 *
 * Exactness: in nmi mode every wrap of an event counter is folded before
 * the next one, whatever the increments (a large one is split at each
 * wrap, waiting for its NMI).  In poll mode, and for the clock counters in
 * both modes (which raise no NMI and are polled), a counter must not
 * advance by a full period (2^width) between two polls.
 */

#ifndef DRIVERS_PMU_SOFT_H
#define DRIVERS_PMU_SOFT_H

#include <stdbool.h>
#include <stdint.h>

#include "kern/init.h"

#define SOFTPMU_RAW_TASK_CLOCK      0x1
#define SOFTPMU_RAW_CONTEXT_SWITCH  0x2
#define SOFTPMU_RAW_MIGRATION       0x3
#define SOFTPMU_RAW_INTERRUPT       0x4
#define SOFTPMU_RAW_XCALL           0x5
#define SOFTPMU_RAW_NMI             0x6
#define SOFTPMU_RAW_TEST            0x7

#define SOFTPMU_NR_PMCS             8
#define SOFTPMU_WIDTH_MIN           16
#define SOFTPMU_WIDTH_DEFAULT       32

/* Add n to the `test` event on the calling CPU.  Any context. */
void softpmu_test_add(uint64_t n);

/* The device, once registered (NULL before). */
struct perfmon_dev *softpmu_dev(void);

/* True when wraps raise NMIs (softpmu.overflow=nmi). */
bool softpmu_nmi_mode(void);

INIT_OP_DECLARE(softpmu_setup);

#endif /* DRIVERS_PMU_SOFT_H */
