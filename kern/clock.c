/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The system clock: the local APIC timer of every CPU interrupts CLOCK_HZ
 * times a second; the boot CPU's advances the time, every CPU's expires its
 * timers and accounts its scheduler time slice.
 *
 * A local APIC keeps at most one timer interrupt pending, so ticks are lost
 * while the boot CPU runs with interrupts disabled for longer than a tick
 * (a line printed on a real 115200-baud UART takes over a millisecond).
 * Each tick therefore also looks at the TSC, and the time jumps to what the
 * TSC says when it fell behind: it never goes backwards, and lost ticks
 * come back at the next one.
 */

#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/trap.h"
#include "arch/x86/tsc.h"
#include "kern/clock.h"
#include "kern/init.h"
#include "kern/log.h"
#include "kern/macros.h"
#include "kern/printf.h"
#include "kern/syscnt.h"
#include "kern/thread.h"
#include "kern/timer.h"


static uint64_t clock_ticks;            /* written by the boot CPU only */
static uint64_t clock_tsc_base;         /* TSC at tick 0 */
static uint64_t clock_tsc_per_tick;     /* 0: no calibrated TSC */
static struct syscnt clock_sc_ticks[CPU_MAX];

uint64_t
clock_get_time(void)
{
    return __atomic_load_n(&clock_ticks, __ATOMIC_ACQUIRE);
}

/* The time at this tick: one more, or what the TSC says if further. */
static uint64_t
clock_ticks_next(void)
{
    uint64_t ticks = clock_ticks + 1, elapsed;

    if (clock_tsc_per_tick != 0) {
        elapsed = (cpu_rdtsc() - clock_tsc_base) / clock_tsc_per_tick;
        ticks = MAX(ticks, elapsed);
    }

    return ticks;
}

static void
clock_intr(struct trap_frame *frame)
{
    (void)frame;
    lapic_eoi();
    syscnt_inc(&clock_sc_ticks[cpu_id()]);

    if (cpu_id() == 0) {
        __atomic_store_n(&clock_ticks, clock_ticks_next(), __ATOMIC_RELEASE);
    }

    timer_tick();
    thread_tick();
}

/* Start this CPU's clock interrupt (the boot CPU here, APs in smp.c). */

void
clock_start_cpu(void)
{
    syscnt_register_cpu(&clock_sc_ticks[cpu_id()], "clock_ticks", cpu_id());
    trap_setup_cpu();
    lapic_setup_cpu();
}

static int
clock_setup(void)
{
    clock_tsc_per_tick = tsc_freq() / CLOCK_HZ;
    clock_tsc_base = cpu_rdtsc();
    trap_register(TRAP_VEC_TIMER, clock_intr);
    clock_start_cpu();
    cpu_intr_enable();
    log_info("clock: %u Hz tick on every CPU", CLOCK_HZ);
    return 0;
}

INIT_OP_DEFINE(clock_setup, INIT_OP_DEP(lapic_setup, true),
               INIT_OP_DEP(thread_setup, true),
               INIT_OP_DEP(syscnt_setup, true));
