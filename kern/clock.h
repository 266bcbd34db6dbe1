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

#include <stdbool.h>
#include <stdint.h>

#include "kern/init.h"

#define CLOCK_HZ    1000

uint64_t clock_get_time(void);

/*
 * The ticks the calling CPU has taken since its tick started: it grows
 * with the time the CPU runs, and by one tick only over a stretch the
 * host held a virtual CPU (the interrupts that would have come meanwhile
 * arrive as one).  Any context, NMI included: one load.
 */
uint64_t clock_cpu_ticks(void);

/*
 * The word clock_cpu_ticks() reads on CPU cpu, for a reader that keeps
 * its address to read it by one load (the overflow interrupt's
 * throttling): a relaxed atomic load, any context, NMI included.
 */
const uint64_t *clock_cpu_ticks_word(unsigned int cpu);

/*
 * The first tick at which at least ms milliseconds of real time will have
 * passed since the call, however late the current tick was taken: a wait
 * that ends there lasts at least ms.  Safe from any context.
 */
uint64_t clock_deadline_from_ms(uint64_t ms);

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
 * Deadlines: a driver that must act at a precise time on a CPU, more often
 * than the tick (the software PMU's time-based sampling), sets a deadline
 * in TSC time on that CPU; the clock interrupt calls the handler, with the
 * interrupted frame, once the TSC passed it, and forgets it (the handler
 * may set the next one).  One handler, set at boot; one deadline per CPU,
 * a new one replaces the old, 0 cancels.  clock_set_deadline(): the
 * calling CPU, interrupts disabled, not in NMI context.  Without a
 * calibrated TSC there are no deadlines (clock_deadlines_supported()).
 */
struct trap_frame;

typedef void (*clock_deadline_fn_t)(struct trap_frame *frame);

bool clock_deadlines_supported(void);
void clock_set_deadline_handler(clock_deadline_fn_t fn);
void clock_set_deadline(uint64_t tsc);

/*
 * Start the tick on the calling CPU (its local APIC timer), once per CPU:
 * the boot CPU from clock_setup, each other CPU as it comes online
 * (arch/x86/smp.c), with interrupts disabled.
 */
void clock_start_cpu(void);

INIT_OP_DECLARE(clock_setup);

#endif /* KERN_CLOCK_H */
