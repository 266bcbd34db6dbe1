/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The step PMU: a perfmon device ("step") that counts instructions exactly
 * by single-stepping the code it counts (arch/x86/step.h), under QEMU TCG
 * and KVM alike, with or without a hardware PMU.  Each counted
 * instruction costs a trap: the code counted runs several hundred times
 * slower (about a microsecond per instruction under TCG).  So the device
 * is registered only with the boot option perfmon.step=on, and it counts
 * only the events that name it (`step/instructions/`, named_only in
 * kern/perfmon.h): it is never chosen by default for `instructions`,
 * hardware PMU or not.
 *
 * Events: `instructions` (the generic event, raw code 0x1) counts the
 * instructions retired outside interrupt and NMI handlers while the
 * counter runs: for a thread event, those of the thread (the switch
 * hook starts and stops stepping at its switches, so the count follows
 * it across sleeps and CPUs, and includes its side of each context
 * switch); for a CPU event, everything that CPU runs.  `instructions-nmi`
 * (raw 0x2) counts the NMI handlers that run meanwhile too (stepping
 * them): the overflow interrupt of a PMU, for one.  Device interrupt
 * handlers are never counted, so that a count does not depend on when
 * the clock ticked.
 *
 * Counters are steppmu.width= bits wide (16..64, default 48, as hardware
 * counters), wrap, and raise their overflow interrupt at the exact
 * instruction that wraps them (from the #DB handler), so sampling on them
 * lands every N instructions exactly.  STEPPMU_NR_PMCS counters per CPU.
 */

#ifndef DRIVERS_PMU_STEP_H
#define DRIVERS_PMU_STEP_H

#include "kern/init.h"

#define STEPPMU_NR_PMCS             4
#define STEPPMU_WIDTH_MIN           16
#define STEPPMU_WIDTH_DEFAULT       48

/* Raw event codes. */
#define STEPPMU_EV_INSTRUCTIONS         0x1
#define STEPPMU_EV_INSTRUCTIONS_NMI    0x2

INIT_OP_DECLARE(steppmu_setup);

#endif /* DRIVERS_PMU_STEP_H */
