/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * One-shot timers.
 *
 * Each CPU keeps its scheduled timers in a list sorted by expiry time,
 * under a lock taken with interrupts disabled.  The clock interrupt pops
 * the expired ones: TIMER_INTR timers run right there; the others move to
 * the CPU's run list, served by its timer thread in thread context.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/smp.h"
#include "kern/assert.h"
#include "kern/clock.h"
#include "kern/init.h"
#include "kern/log.h"
#include "kern/macros.h"
#include "kern/printf.h"
#include "kern/spinlock.h"
#include "kern/thread.h"
#include "kern/timer.h"

#define TIMER_STATE_IDLE        0
#define TIMER_STATE_SCHEDULED   1   /* in a CPU's sorted list */
#define TIMER_STATE_PENDING     2   /* expired, in a CPU's run list */
#define TIMER_STATE_RUNNING     3

/*
 * A CPU's timers.  lock protects both lists and the state of the timers on
 * them.  running is the timer whose function the timer thread runs now,
 * running_intr the TIMER_INTR one the clock interrupt runs now: two slots,
 * because a thread-context function can be interrupted by the clock, or
 * sleep while TIMER_INTR timers (its own msleep's) run.
 */
struct timer_cpu {
    struct spinlock lock;
    uint64_t tick_seq;              /* timer_tick() runs so far */
    struct timer *scheduled;        /* sorted by ticks, FIFO among equals */
    struct timer *run_head;
    struct timer *run_tail;
    struct timer *running;
    struct timer *running_intr;
    struct thread *thread;
} __aligned(CACHE_LINE_SIZE);

static struct timer_cpu timer_cpus[CPU_MAX];

void
timer_init(struct timer *timer, timer_fn_t fn, unsigned int flags)
{
    timer->ticks = 0;
    timer->fn = fn;
    timer->flags = flags;
    timer->cpu = 0;
    timer->state = TIMER_STATE_IDLE;
    timer->tick_seq = 0;
    timer->next = NULL;
}

static void
timer_list_insert(struct timer_cpu *tc, struct timer *timer)
{
    struct timer **p = &tc->scheduled;

    while (*p != NULL && (*p)->ticks <= timer->ticks) {
        p = &(*p)->next;
    }

    timer->next = *p;
    *p = timer;
    timer->state = TIMER_STATE_SCHEDULED;
}

static void
timer_list_remove(struct timer **head, struct timer **tailp,
                  struct timer *timer)
{
    struct timer **p = head, *prev = NULL;

    while (*p != timer) {
        assert(*p != NULL);
        prev = *p;
        p = &(*p)->next;
    }

    *p = timer->next;

    if (tailp != NULL && *tailp == timer) {
        *tailp = prev;
    }

    timer->next = NULL;
}

/* Lock the CPU list that holds timer (re-checked against a concurrent move). */
static struct timer_cpu *
timer_lock(struct timer *timer, unsigned long *flagsp)
{
    for (;;) {
        unsigned int cpu = READ_ONCE(timer->cpu);
        struct timer_cpu *tc = &timer_cpus[cpu];

        spinlock_lock_intr_save(&tc->lock, flagsp);

        if (timer->cpu == cpu) {
            return tc;
        }

        spinlock_unlock_intr_restore(&tc->lock, *flagsp);
    }
}

/* Whether timer's function runs now on tc's CPU; tc is locked. */
static bool
timer_is_running(const struct timer_cpu *tc, const struct timer *timer)
{
    return tc->running == timer || tc->running_intr == timer;
}

/*
 * Whether timer_cancel() must wait for timer's function; tc is locked.
 * Not when the caller is that function (the timer thread, or the clock
 * interrupt on the timer's CPU), which would wait for itself.
 */
static bool
timer_must_wait(const struct timer_cpu *tc, const struct timer *timer)
{
    return (tc->running == timer && thread_self() != tc->thread)
           || (tc->running_intr == timer && cpu_id() != timer->cpu);
}

/* Take timer off whatever list it is on; tc is locked.  True if it was. */
static bool
timer_unlink(struct timer_cpu *tc, struct timer *timer)
{
    if (timer->state == TIMER_STATE_SCHEDULED) {
        timer_list_remove(&tc->scheduled, NULL, timer);
    } else if (timer->state == TIMER_STATE_PENDING) {
        timer_list_remove(&tc->run_head, &tc->run_tail, timer);
    } else {
        return false;
    }

    timer->state = TIMER_STATE_IDLE;
    return true;
}

void
timer_schedule(struct timer *timer, uint64_t ticks)
{
    struct timer_cpu *tc;
    unsigned long flags;

    tc = timer_lock(timer, &flags);
    timer_unlink(tc, timer);

    /*
     * A timer whose function runs now stays on that CPU, so that it never
     * runs twice at once and its state stays under one lock.
     */
    if (tc != &timer_cpus[cpu_id()] && !timer_is_running(tc, timer)) {
        spinlock_unlock_intr_restore(&tc->lock, flags);
        thread_preempt_disable();
        tc = &timer_cpus[cpu_id()];
        spinlock_lock_intr_save(&tc->lock, &flags);
        thread_preempt_enable();
        WRITE_ONCE(timer->cpu, cpu_id());
    }

    timer->ticks = ticks;
    timer->tick_seq = tc->tick_seq;
    timer_list_insert(tc, timer);
    spinlock_unlock_intr_restore(&tc->lock, flags);
}

bool
timer_scheduled(const struct timer *timer)
{
    unsigned int state = READ_ONCE(timer->state);

    return state == TIMER_STATE_SCHEDULED || state == TIMER_STATE_PENDING;
}

bool
timer_cancel(struct timer *timer)
{
    struct timer_cpu *tc;
    unsigned long flags;
    bool was_pending;

    tc = timer_lock(timer, &flags);
    was_pending = timer_unlink(tc, timer);

    /* Its function may be running: wait, unless we are that function. */
    while (timer_must_wait(tc, timer)) {
        spinlock_unlock_intr_restore(&tc->lock, flags);
        cpu_pause();
        spinlock_lock_intr_save(&tc->lock, &flags);
    }

    spinlock_unlock_intr_restore(&tc->lock, flags);
    return was_pending;
}

/* Run a timer's function with its CPU list unlocked, then settle its state. */
static void
timer_run(struct timer_cpu *tc, struct timer *timer, unsigned long *flagsp)
{
    struct timer **slot = (timer->flags & TIMER_INTR) ? &tc->running_intr
                                                      : &tc->running;

    assert(*slot == NULL);
    timer->state = TIMER_STATE_RUNNING;
    *slot = timer;
    spinlock_unlock_intr_restore(&tc->lock, *flagsp);
    timer->fn(timer);
    spinlock_lock_intr_save(&tc->lock, flagsp);
    *slot = NULL;

    if (timer->state == TIMER_STATE_RUNNING) {
        timer->state = TIMER_STATE_IDLE;
    }
}

/* Unlink and return the first timer due by now and not scheduled this tick. */
static struct timer *
timer_next_expired(struct timer_cpu *tc, uint64_t now)
{
    struct timer **p = &tc->scheduled, *timer;

    while ((timer = *p) != NULL && timer->ticks <= now) {
        if (timer->tick_seq != tc->tick_seq) {
            *p = timer->next;
            timer->next = NULL;
            return timer;
        }

        p = &timer->next;
    }

    return NULL;
}

/* Called by the clock interrupt on every CPU, interrupts disabled. */

void
timer_tick(void)
{
    struct timer_cpu *tc = &timer_cpus[cpu_id()];
    uint64_t now = clock_get_time();
    bool wake = false;
    unsigned long flags;
    struct timer *timer;

    spinlock_lock_intr_save(&tc->lock, &flags);
    tc->tick_seq++;

    /*
     * A timer (re)scheduled by a function run during this tick waits for the
     * next tick, even when already due: otherwise a function rescheduling
     * itself in the past would keep the interrupt from ever returning.
     */
    while ((timer = timer_next_expired(tc, now)) != NULL) {

        if (timer->flags & TIMER_INTR) {
            timer_run(tc, timer, &flags);
            continue;
        }

        timer->state = TIMER_STATE_PENDING;

        if (tc->run_tail == NULL) {
            tc->run_head = timer;
        } else {
            tc->run_tail->next = timer;
        }

        tc->run_tail = timer;
        wake = true;
    }

    spinlock_unlock_intr_restore(&tc->lock, flags);

    if (wake && tc->thread != NULL) {
        thread_wakeup(tc->thread);
    }
}

static void
timer_thread_main(void *arg)
{
    struct timer_cpu *tc = arg;
    unsigned long flags;
    struct timer *timer;

    for (;;) {
        thread_sleep_prepare();
        spinlock_lock_intr_save(&tc->lock, &flags);
        timer = tc->run_head;
        spinlock_unlock_intr_restore(&tc->lock, flags);

        if (timer == NULL) {
            thread_sleep();
            continue;
        }

        thread_sleep_cancel();

        /*
         * Take the head and run it without dropping the lock in between: a
         * timer off the list but still PENDING would confuse timer_unlink.
         */
        spinlock_lock_intr_save(&tc->lock, &flags);
        timer = tc->run_head;

        if (timer != NULL) {
            tc->run_head = timer->next;

            if (tc->run_head == NULL) {
                tc->run_tail = NULL;
            }

            timer->next = NULL;
            timer_run(tc, timer, &flags);
        }

        spinlock_unlock_intr_restore(&tc->lock, flags);
    }
}

/* Start the timer thread of each online CPU. */
static int
timer_setup(void)
{
    char name[THREAD_NAME_SIZE];
    int error;

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        ksnprintf(name, sizeof(name), "timer/%u", cpu);
        error = thread_create(&timer_cpus[cpu].thread, name,
                              timer_thread_main, &timer_cpus[cpu],
                              THREAD_CPUMASK(cpu));

        if (error) {
            log_error("timer: cannot start the timer thread of cpu%u", cpu);
            return error;
        }
    }

    return 0;
}

/* The lists must be usable from the first clock tick on. */
static int
timer_bootstrap(void)
{
    for (unsigned int cpu = 0; cpu < CPU_MAX; cpu++) {
        spinlock_init(&timer_cpus[cpu].lock);
    }

    return 0;
}

INIT_OP_DEFINE(timer_bootstrap);
INIT_OP_DEFINE(timer_setup, INIT_OP_DEP(timer_bootstrap, true),
               INIT_OP_DEP(smp_setup, true),
               INIT_OP_DEP(thread_setup, true));
