/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The monotonic system clock, in ticks of 1/CLOCK_HZ second since boot,
 * advanced by the boot CPU's periodic timer interrupt.  Safe from any
 * context.
 */

#ifndef KERN_CLOCK_H
#define KERN_CLOCK_H

#include <stdint.h>

#include "kern/init.h"

#define CLOCK_HZ    1000

uint64_t clock_get_time(void);

static inline uint64_t
clock_ticks_from_ms(uint64_t ms)
{
    return (ms * CLOCK_HZ + 999) / 1000;
}

static inline uint64_t
clock_ms_from_ticks(uint64_t ticks)
{
    return ticks * 1000 / CLOCK_HZ;
}

/*
 * Start the tick on the calling CPU (its local APIC timer), once per CPU:
 * the boot CPU from clock_setup, each other CPU as it comes online
 * (arch/x86/smp.c), with interrupts disabled.
 */
void clock_start_cpu(void);

INIT_OP_DECLARE(clock_setup);

#endif /* KERN_CLOCK_H */
