/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * SMP bring-up: every CPU the MADT lists is started with INIT-SIPI-SIPI
 * (Intel SDM vol. 3A, 9.4.4) through a real-mode trampoline.  A CPU that
 * has not claimed the trampoline within SMP_AP_TIMEOUT_MS is reported and
 * left out; if it answers later, it parks in the trampoline.  The boot
 * option `smp=N` limits the CPUs started (1 boots the boot CPU only).
 */

#ifndef ARCH_X86_SMP_H
#define ARCH_X86_SMP_H

#include "kern/init.h"

#define SMP_TRAMPOLINE_PA   0x8000
#define SMP_AP_TIMEOUT_MS   1000

/*
 * CPUs that ran the trampoline after the boot CPU had given up on them (or
 * after bring-up) and parked there, since boot.
 */
unsigned int smp_nr_parked(void);

INIT_OP_DECLARE(smp_setup);

#endif /* ARCH_X86_SMP_H */
