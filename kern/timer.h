/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * One-shot timers on the system clock (kern/clock.h ticks).
 *
 * A timer is scheduled for an absolute time on the CPU that schedules it
 * and fires there.  Context rule: by default a timer's function runs in
 * the per-CPU timer thread, in thread context with interrupts and
 * preemption enabled, so it may sleep, allocate and issue xcalls (the
 * perfmon poll timer does).  With TIMER_INTR it runs from the clock
 * interrupt instead, with interrupts disabled, and must be short.
 * Timers fire in order of their expiry time (ties in scheduling order).
 * A function may reschedule its own timer.
 */

#ifndef KERN_TIMER_H
#define KERN_TIMER_H

#include <stdbool.h>
#include <stdint.h>

#include "kern/init.h"

#define TIMER_INTR      0x1

struct timer;

typedef void (*timer_fn_t)(struct timer *timer);

/*
 * Timer state.  All fields are private to kern/timer.c and protected by the
 * lock of the CPU's timer list the timer is on.
 */
struct timer {
    uint64_t ticks;                 /* expiry time */
    timer_fn_t fn;
    unsigned int flags;
    unsigned int cpu;               /* the list it is on, when scheduled */
    unsigned int state;
    uint64_t tick_seq;              /* clock tick of the CPU when scheduled */
    struct timer *next;             /* in the sorted list */
    void *arg;                      /* for the user */
};

void timer_init(struct timer *timer, timer_fn_t fn, unsigned int flags);

/*
 * Arm the timer to fire at ticks (already past: at the next clock tick).
 * Rescheduling a pending timer moves it.  Callable from any context but
 * NMI.
 */
void timer_schedule(struct timer *timer, uint64_t ticks);

/*
 * Disarm the timer.  When its function is running (on another CPU, or
 * asleep in this CPU's timer thread), wait for it to return: thread
 * context only, unless the caller knows the function is not running or is
 * that function.  Returns true if the timer was pending.
 */
bool timer_cancel(struct timer *timer);

bool timer_scheduled(const struct timer *timer);

/*
 * The timers' part of the clock tick (kern/clock.c): run the expired
 * TIMER_INTR timers of the calling CPU and wake its timer thread for the
 * others.  Interrupt context.
 */
void timer_tick(void);

INIT_OP_DECLARE(timer_setup);

#endif /* KERN_TIMER_H */
