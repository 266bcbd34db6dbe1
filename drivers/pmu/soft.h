/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The software PMU: a perfmon device ("soft") registered on every machine,
 * whose counters count kernel software events (kern/swevent.h) and TSC
 * cycles.  It behaves like hardware: counters are softpmu.width= bits wide
 * (16..64, default 32) and wrap, and in softpmu.overflow=nmi mode (the
 * default) a wrap raises a self-NMI that reaches perfmon_overflow_intr()
 * like a PMI; in poll mode the core's poll timer catches the wraps.  Each
 * CPU has softpmu.counters= of them (1..SOFTPMU_NR_PMCS, default all):
 * fewer make events take turns, to test multiplexing.
 *
 * Events: the generic software events (task-clock and cpu-clock count TSC
 * cycles while the counter runs; context-switches, cpu-migrations,
 * interrupts, xcalls, nmis and test count the software events of
 * kern/swevent.h), their raw codes being the SWEVENT_* numbers.  The core
 * reaches the device as "soft" (perfmon_dev_find()); nothing else about it
 * is public.
 *
 * Exactness: in nmi mode every wrap of an event counter is folded before
 * the next one, whatever the increments (a large one is split at each
 * wrap, waiting for its NMI).  In poll mode, and for the clock counters in
 * both modes (which raise no NMI and are polled), a counter must not
 * advance by a full period (2^width) between two polls.
 */

#ifndef DRIVERS_PMU_SOFT_H
#define DRIVERS_PMU_SOFT_H

#include "kern/init.h"

#define SOFTPMU_NR_PMCS             8
#define SOFTPMU_WIDTH_MIN           16
#define SOFTPMU_WIDTH_DEFAULT       32

INIT_OP_DECLARE(softpmu_setup);

#endif /* DRIVERS_PMU_SOFT_H */
