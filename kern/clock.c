/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The system clock: the local APIC timer of every CPU interrupts CLOCK_HZ
 * times a second; the boot CPU's advances the time, every CPU's expires its
 * timers and accounts its scheduler time slice.
 *
 * The timer runs in one-shot mode, programmed at each interrupt for the
 * next tick of its CPU (kept in TSC time, so ticks do not drift with the
 * timer's calibration) or for an earlier deadline a driver asked for with
 * clock_set_deadline(): the software PMU samples on time that way, at rates
 * above the tick's.  Without a calibrated TSC the timer stays periodic and
 * there are no deadlines.
 *
 * A local APIC keeps at most one timer interrupt pending, so ticks are lost
 * while the boot CPU runs with interrupts disabled for longer than a tick
 * (a line printed on a real 115200-baud UART takes over a millisecond).
 * Each tick therefore also looks at the TSC, and the time jumps to what the
 * TSC says when it fell behind: it never goes backwards, and lost ticks
 * come back at the next one.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/trap.h"
#include "arch/x86/tsc.h"
#include "kern/assert.h"
#include "kern/clock.h"
#include "kern/init.h"
#include "kern/log.h"
#include "kern/perfmon.h"
#include "kern/macros.h"
#include "kern/printf.h"
#include "kern/syscnt.h"
#include "kern/thread.h"
#include "kern/timer.h"


/*
 * A CPU's timer events, in TSC time: its next tick, and the deadline asked
 * for (0: none).  Used by that CPU only, with interrupts disabled.
 */
struct clock_cpu {
    uint64_t next_tick;
    uint64_t deadline;
} __aligned(CACHE_LINE_SIZE);

static uint64_t clock_ticks;            /* written by the boot CPU only */
static uint64_t clock_tsc_base;         /* TSC at tick 0 */
static uint64_t clock_tsc_per_tick;     /* 0: no calibrated TSC */
static struct syscnt clock_sc_ticks[CPU_MAX];
static struct clock_cpu clock_cpus[CPU_MAX];
static clock_deadline_fn_t clock_deadline_fn;   /* set once, at boot */

uint64_t
clock_get_time(void)
{
    return __atomic_load_n(&clock_ticks, __ATOMIC_ACQUIRE);
}

/* The time at this tick: one more, or what the TSC says if further. */
/* The ticks the TSC says have passed since tick 0. */
static uint64_t
clock_ticks_by_tsc(void)
{
    return (cpu_rdtsc() - clock_tsc_base) / clock_tsc_per_tick;
}

/*
 * With a calibrated TSC, the TSC is the time: a tick taken late catches up
 * with it, and the clock never runs ahead of it (a late tick that added
 * one on top of the catch-up would leave the clock ahead for good, and
 * sleeps short by that much).  It never goes back.
 */
static uint64_t
clock_ticks_next(void)
{
    if (clock_tsc_per_tick == 0) {
        return clock_ticks + 1;
    }

    return MAX(clock_ticks, clock_ticks_by_tsc());
}

uint64_t
clock_deadline_from_ms(uint64_t ms)
{
    uint64_t now = clock_get_time();

    /* The current tick may not have been taken yet (interrupts off). */
    if (clock_tsc_per_tick != 0) {
        now = MAX(now, clock_ticks_by_tsc());
    }

    /* Part of the current tick is gone: one more. */
    return now + clock_ticks_from_ms(ms) + 1;
}

uint64_t
clock_cpu_ticks(void)
{
    return syscnt_read(&clock_sc_ticks[cpu_id()]);
}

const uint64_t *
clock_cpu_ticks_word(unsigned int cpu)
{
    assert(cpu < CPU_MAX);
    return &clock_sc_ticks[cpu].value;
}

static void
clock_tick(void)
{
    syscnt_inc(&clock_sc_ticks[cpu_id()]);

    if (cpu_id() == 0) {
        __atomic_store_n(&clock_ticks, clock_ticks_next(), __ATOMIC_RELEASE);
    }

    timer_tick();
    thread_tick();
    perfmon_tick(cpu_id());
}

/* Program the timer for the earlier of the next tick and the deadline. */
static void
clock_program(struct clock_cpu *c, uint64_t now)
{
    uint64_t target = c->next_tick, delta;

    if (c->deadline != 0 && c->deadline < target) {
        target = c->deadline;
    }

    delta = (target > now) ? target - now : 0;
    lapic_timer_oneshot((uint32_t)(delta * lapic_timer_tick_count()
                                   / clock_tsc_per_tick));
}

static void
clock_intr(struct trap_frame *frame)
{
    struct clock_cpu *c = &clock_cpus[cpu_id()];
    uint64_t now;

    lapic_eoi();

    if (clock_tsc_per_tick == 0) {
        clock_tick();
        return;
    }

    now = cpu_rdtsc();

    if (now >= c->next_tick) {
        clock_tick();
        c->next_tick += clock_tsc_per_tick;

        /* Far behind (interrupts were off): the next tick from now. */
        if (c->next_tick <= now) {
            c->next_tick = now + clock_tsc_per_tick;
        }
    }

    if (c->deadline != 0 && now >= c->deadline) {
        c->deadline = 0;

        /* It may ask for the next deadline. */
        clock_deadline_fn(frame);
    }

    clock_program(c, cpu_rdtsc());
}

bool
clock_deadlines_supported(void)
{
    return clock_tsc_per_tick != 0;
}

void
clock_set_deadline_handler(clock_deadline_fn_t fn)
{
    __atomic_store_n(&clock_deadline_fn, fn, __ATOMIC_RELEASE);
}

void
clock_set_deadline(uint64_t tsc)
{
    struct clock_cpu *c = &clock_cpus[cpu_id()];

    assert(!cpu_intr_enabled());

    if (clock_tsc_per_tick == 0 || clock_deadline_fn == NULL) {
        return;
    }

    c->deadline = tsc;
    clock_program(c, cpu_rdtsc());
}

/* Start this CPU's clock interrupt (the boot CPU here, APs in smp.c). */

void
clock_start_cpu(void)
{
    struct clock_cpu *c = &clock_cpus[cpu_id()];

    syscnt_register_cpu(&clock_sc_ticks[cpu_id()], "clock_ticks", cpu_id());
    trap_setup_cpu();
    lapic_setup_cpu();

    if (clock_tsc_per_tick != 0) {
        c->next_tick = cpu_rdtsc() + clock_tsc_per_tick;
        c->deadline = 0;
        clock_program(c, cpu_rdtsc());
    }
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
