/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the timer lists (kern/timer.c) on the fakes of
 * tests/unit/fakes/timer_deps.c (CPU number, clock, scheduler) and
 * tests/unit/fakes/spinlock.c (which fails on a lock taken twice, so a
 * timer function called with its list locked is caught).
 *
 * Covered: TIMER_INTR timers fire from timer_tick() in expiry order, ties
 * in scheduling order, never before their time, a past time at the next
 * tick; rescheduling moves a pending timer (later, earlier, to another
 * CPU); timer_cancel() of a pending timer returns true and it never fires,
 * of an idle or already fired one false; a function may reschedule or
 * cancel its own timer; thread-context timers are queued by the tick, the
 * CPU's timer thread is woken (and only then), and that thread runs them in
 * order, skipping those cancelled while queued; timer_cancel() waits for
 * a running thread-context function even after TIMER_INTR timers ran on
 * its CPU meanwhile; timer_setup() starts one pinned thread per CPU and
 * reports a failure to create one.
 *
 * kern/timer.c is included rather than linked so that the tests reach its
 * static timer thread and setup functions; the file is therefore not
 * listed in timer_test_SRCS.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kern/timer.c"

#include "kern/error.h"

#include "fakes/timer_deps.h"

#define NR_CPUS     4
#define MAX_FIRED   64

/* One firing: which timer (its index in timers[]), when, on which CPU. */
struct firing {
    unsigned int index;
    uint64_t now;
    unsigned int cpu;
    bool scheduled;     /* timer_scheduled() seen from inside the function */
};

static struct timer timers[16];
static struct firing fired[MAX_FIRED];
static unsigned int nr_fired;

/* Behaviour of self_fn, set by the test that uses it. */
static unsigned int self_resched_left;
static uint64_t self_resched_period;
static bool self_cancel_result;

static unsigned int
index_of(const struct timer *timer)
{
    return (unsigned int)(timer - timers);
}

static void
record_fn(struct timer *timer)
{
    assert_true(nr_fired < MAX_FIRED);
    fired[nr_fired].index = index_of(timer);
    fired[nr_fired].now = clock_get_time();
    fired[nr_fired].cpu = cpu_id();
    fired[nr_fired].scheduled = timer_scheduled(timer);
    nr_fired++;
}

/* Fires, then schedules itself again self_resched_left more times. */
static void
resched_fn(struct timer *timer)
{
    record_fn(timer);

    if (self_resched_left > 0) {
        self_resched_left--;
        timer_schedule(timer, clock_get_time() + self_resched_period);
        assert_true(timer_scheduled(timer));
    }
}

/* Cancels itself while running: nothing is pending, nothing to wait for. */
static void
self_cancel_fn(struct timer *timer)
{
    record_fn(timer);
    self_cancel_result = timer_cancel(timer);
}

/* Cancels timers[index_to_cancel] (scheduled on the same CPU). */
static unsigned int index_to_cancel;

static void
cancel_other_fn(struct timer *timer)
{
    record_fn(timer);
    self_cancel_result = timer_cancel(&timers[index_to_cancel]);
}

static int
setup(void **state)
{
    (void)state;
    fake_timer_deps_reset();
    fake_cpu_set(0, NR_CPUS);
    memset(timer_cpus, 0, sizeof(timer_cpus));
    assert_int_equal(timer_bootstrap(), 0);
    memset(timers, 0, sizeof(timers));
    memset(fired, 0, sizeof(fired));
    nr_fired = 0;
    self_resched_left = 0;
    self_cancel_result = false;
    return 0;
}

/* Every lock and preemption count is back to rest after each test. */
static int
teardown(void **state)
{
    (void)state;

    for (unsigned int cpu = 0; cpu < CPU_MAX; cpu++) {
        assert_false(timer_cpus[cpu].lock.locked);
        assert_null(timer_cpus[cpu].running);
    }

    assert_int_equal(fake_timer_stats()->preempt_level, 0);
    return 0;
}

/* Advance the clock to now and run the clock interrupt on cpu. */
static void
tick_at(unsigned int cpu, uint64_t now)
{
    unsigned int saved = cpu_id();

    fake_clock_set(now);
    fake_cpu_set(cpu, NR_CPUS);
    timer_tick();
    fake_cpu_set(saved, NR_CPUS);
}

static void
assert_fired(const unsigned int *indexes, unsigned int n)
{
    assert_int_equal(nr_fired, n);

    for (unsigned int i = 0; i < n; i++) {
        if (fired[i].index != indexes[i]) {
            fail_msg("firing %u: timer %u, expected timer %u", i,
                     fired[i].index, indexes[i]);
        }
    }
}

/* Run one pass of cpu's timer thread: until it has nothing left and sleeps. */
static void
run_timer_thread(unsigned int cpu)
{
    jmp_buf env;
    unsigned int saved = cpu_id();

    assert_non_null(timer_cpus[cpu].thread);
    fake_cpu_set(cpu, NR_CPUS);
    fake_thread_set_self(timer_cpus[cpu].thread);

    if (setjmp(env) == 0) {
        fake_thread_set_sleep_jmp(&env);
        timer_thread_main(&timer_cpus[cpu]);
        fail_msg("the timer thread returned");
    }

    fake_thread_set_sleep_jmp(NULL);
    fake_thread_set_self(NULL);
    fake_cpu_set(saved, NR_CPUS);
}

static void
test_init_idle(void **state)
{
    (void)state;
    memset(&timers[0], 0xa5, sizeof(timers[0]));
    timer_init(&timers[0], record_fn, TIMER_INTR);
    assert_false(timer_scheduled(&timers[0]));
    assert_false(timer_cancel(&timers[0]));
    tick_at(0, 1000);
    assert_int_equal(nr_fired, 0);
}

static void
test_intr_expiry_order(void **state)
{
    static const uint64_t when[] = { 30, 10, 20, 50, 40, 15 };
    static const unsigned int want[] = { 1, 5, 2, 0, 4, 3 };

    (void)state;

    for (unsigned int i = 0; i < ARRAY_SIZE(when); i++) {
        timer_init(&timers[i], record_fn, TIMER_INTR);
        timer_schedule(&timers[i], when[i]);
        assert_true(timer_scheduled(&timers[i]));
    }

    /* One tick per millisecond, as the clock does. */
    for (uint64_t now = 1; now <= 60; now++) {
        tick_at(0, now);
    }

    assert_fired(want, ARRAY_SIZE(want));

    for (unsigned int i = 0; i < nr_fired; i++) {
        assert_int_equal(fired[i].now, when[fired[i].index]);
        assert_int_equal(fired[i].cpu, 0);
        /* Running: no longer pending. */
        assert_false(fired[i].scheduled);
        assert_false(timer_scheduled(&timers[fired[i].index]));
    }

    /* Interrupt timers alone never wake the timer thread. */
    assert_int_equal(fake_timer_stats()->nr_wakeups, 0);
}

/* Several timers expire by one tick: all fire, in expiry order. */
static void
test_intr_batch_in_one_tick(void **state)
{
    static const uint64_t when[] = { 7, 3, 9, 1, 12 };
    static const unsigned int want[] = { 3, 1, 0, 2 };

    (void)state;

    for (unsigned int i = 0; i < ARRAY_SIZE(when); i++) {
        timer_init(&timers[i], record_fn, TIMER_INTR);
        timer_schedule(&timers[i], when[i]);
    }

    tick_at(0, 10);
    assert_fired(want, ARRAY_SIZE(want));
    assert_true(timer_scheduled(&timers[4]));
    tick_at(0, 11);
    assert_int_equal(nr_fired, 4);
    tick_at(0, 12);
    assert_int_equal(nr_fired, 5);
    assert_int_equal(fired[4].index, 4);
}

static void
test_ties_in_scheduling_order(void **state)
{
    static const unsigned int want[] = { 4, 0, 2, 5, 1, 3, 6 };

    (void)state;

    for (unsigned int i = 0; i < 7; i++) {
        timer_init(&timers[i], record_fn, TIMER_INTR);
    }

    /* 0, 2, 5 at 20; 1, 3 at 30; 4 at 10; 6 at 30 scheduled last. */
    timer_schedule(&timers[0], 20);
    timer_schedule(&timers[1], 30);
    timer_schedule(&timers[2], 20);
    timer_schedule(&timers[3], 30);
    timer_schedule(&timers[4], 10);
    timer_schedule(&timers[5], 20);
    timer_schedule(&timers[6], 30);

    tick_at(0, 100);
    assert_fired(want, ARRAY_SIZE(want));
}

/* A rescheduled timer goes behind the timers already due at its new time. */
static void
test_reschedule_tie_goes_last(void **state)
{
    static const unsigned int want[] = { 1, 2, 0 };

    (void)state;

    for (unsigned int i = 0; i < 3; i++) {
        timer_init(&timers[i], record_fn, TIMER_INTR);
        timer_schedule(&timers[i], 5);
    }

    timer_schedule(&timers[0], 5);
    tick_at(0, 5);
    assert_fired(want, ARRAY_SIZE(want));
}

static void
test_not_before_time(void **state)
{
    (void)state;
    fake_clock_set(100);
    timer_init(&timers[0], record_fn, TIMER_INTR);
    timer_schedule(&timers[0], 250);

    for (uint64_t now = 100; now < 250; now++) {
        tick_at(0, now);
    }

    assert_int_equal(nr_fired, 0);
    assert_true(timer_scheduled(&timers[0]));
    tick_at(0, 250);
    assert_int_equal(nr_fired, 1);

    /* One-shot: later ticks do not fire it again. */
    tick_at(0, 251);
    tick_at(0, 10000);
    assert_int_equal(nr_fired, 1);
}

/* A time already past fires at the next tick. */
static void
test_past_time_fires_next_tick(void **state)
{
    (void)state;
    fake_clock_set(500);
    timer_init(&timers[0], record_fn, TIMER_INTR);
    timer_init(&timers[1], record_fn, TIMER_INTR);
    timer_schedule(&timers[0], 3);
    timer_schedule(&timers[1], 0);
    assert_int_equal(nr_fired, 0);      /* not from timer_schedule itself */
    tick_at(0, 501);
    assert_int_equal(nr_fired, 2);
    assert_int_equal(fired[0].index, 1);
    assert_int_equal(fired[1].index, 0);
}

static void
test_reschedule_later(void **state)
{
    (void)state;
    timer_init(&timers[0], record_fn, TIMER_INTR);
    timer_init(&timers[1], record_fn, TIMER_INTR);
    timer_schedule(&timers[0], 10);
    timer_schedule(&timers[1], 20);
    timer_schedule(&timers[0], 30);

    tick_at(0, 10);
    assert_int_equal(nr_fired, 0);
    tick_at(0, 20);
    assert_int_equal(nr_fired, 1);
    assert_int_equal(fired[0].index, 1);
    tick_at(0, 29);
    assert_int_equal(nr_fired, 1);
    tick_at(0, 30);
    assert_int_equal(nr_fired, 2);
    assert_int_equal(fired[1].index, 0);
    assert_int_equal(fired[1].now, 30);
}

static void
test_reschedule_earlier(void **state)
{
    (void)state;
    timer_init(&timers[0], record_fn, TIMER_INTR);
    timer_schedule(&timers[0], 50);
    timer_schedule(&timers[0], 5);
    tick_at(0, 5);
    assert_int_equal(nr_fired, 1);
    tick_at(0, 50);
    assert_int_equal(nr_fired, 1);
}

/* Scheduling again after firing arms it again. */
static void
test_schedule_after_fire(void **state)
{
    (void)state;
    timer_init(&timers[0], record_fn, TIMER_INTR);
    timer_schedule(&timers[0], 5);
    tick_at(0, 5);
    timer_schedule(&timers[0], 8);
    assert_true(timer_scheduled(&timers[0]));
    tick_at(0, 7);
    assert_int_equal(nr_fired, 1);
    tick_at(0, 8);
    assert_int_equal(nr_fired, 2);
}

static void
test_cancel_pending(void **state)
{
    static const unsigned int want[] = { 0, 2 };

    (void)state;

    for (unsigned int i = 0; i < 3; i++) {
        timer_init(&timers[i], record_fn, TIMER_INTR);
        timer_schedule(&timers[i], 10 * (i + 1));
    }

    /* The middle, then the list's head. */
    assert_true(timer_cancel(&timers[1]));
    assert_false(timer_scheduled(&timers[1]));
    assert_false(timer_cancel(&timers[1]));

    tick_at(0, 100);
    assert_fired(want, ARRAY_SIZE(want));

    timer_schedule(&timers[0], 200);
    timer_schedule(&timers[2], 300);
    assert_true(timer_cancel(&timers[0]));
    tick_at(0, 1000);
    assert_int_equal(nr_fired, 3);
    assert_int_equal(fired[2].index, 2);
    assert_int_equal(fake_timer_stats()->nr_pauses, 0);
}

static void
test_cancel_idle_or_fired(void **state)
{
    (void)state;
    timer_init(&timers[0], record_fn, TIMER_INTR);
    assert_false(timer_cancel(&timers[0]));
    timer_schedule(&timers[0], 1);
    tick_at(0, 1);
    assert_int_equal(nr_fired, 1);
    assert_false(timer_cancel(&timers[0]));
    assert_int_equal(fake_timer_stats()->nr_pauses, 0);
}

/* The only timer cancelled, then the list must still work. */
static void
test_cancel_only_then_schedule(void **state)
{
    (void)state;
    timer_init(&timers[0], record_fn, TIMER_INTR);
    timer_init(&timers[1], record_fn, TIMER_INTR);
    timer_schedule(&timers[0], 10);
    assert_true(timer_cancel(&timers[0]));
    timer_schedule(&timers[1], 10);
    tick_at(0, 10);
    assert_int_equal(nr_fired, 1);
    assert_int_equal(fired[0].index, 1);
}

static void
test_self_reschedule(void **state)
{
    (void)state;
    self_resched_left = 3;
    self_resched_period = 10;
    timer_init(&timers[0], resched_fn, TIMER_INTR);
    timer_schedule(&timers[0], 10);

    for (uint64_t now = 1; now <= 100; now++) {
        tick_at(0, now);
    }

    assert_int_equal(nr_fired, 4);

    for (unsigned int i = 0; i < 4; i++) {
        assert_int_equal(fired[i].now, 10 * (i + 1));
    }

    assert_false(timer_scheduled(&timers[0]));
}

/*
 * A timer rescheduling itself for the current time (already due) fires at
 * the next clock tick, as timer_schedule() promises, not again within the
 * same tick: otherwise a function that keeps doing so never lets the clock
 * interrupt return.
 */
static void
test_self_reschedule_into_past(void **state)
{
    (void)state;
    self_resched_left = 2;
    self_resched_period = 0;
    timer_init(&timers[0], resched_fn, TIMER_INTR);
    timer_schedule(&timers[0], 5);
    tick_at(0, 5);
    assert_int_equal(nr_fired, 1);
    assert_true(timer_scheduled(&timers[0]));
    tick_at(0, 6);
    assert_int_equal(nr_fired, 2);
    assert_int_equal(fired[1].now, 6);
    tick_at(0, 7);
    assert_int_equal(nr_fired, 3);
    assert_false(timer_scheduled(&timers[0]));
}

static void
test_self_cancel_intr(void **state)
{
    (void)state;
    self_cancel_result = true;
    timer_init(&timers[0], self_cancel_fn, TIMER_INTR);
    timer_schedule(&timers[0], 3);
    tick_at(0, 3);
    assert_int_equal(nr_fired, 1);
    assert_false(self_cancel_result);
    /* It did not wait for itself. */
    assert_int_equal(fake_timer_stats()->nr_pauses, 0);
}

/* A timer function cancels another due in the same tick: it never fires. */
static void
test_cancel_from_timer_fn(void **state)
{
    (void)state;
    index_to_cancel = 1;
    timer_init(&timers[0], cancel_other_fn, TIMER_INTR);
    timer_init(&timers[1], record_fn, TIMER_INTR);
    timer_schedule(&timers[0], 5);
    timer_schedule(&timers[1], 5);
    tick_at(0, 5);
    assert_int_equal(nr_fired, 1);
    assert_true(self_cancel_result);
    tick_at(0, 6);
    assert_int_equal(nr_fired, 1);
}

/* Each CPU fires its own timers; rescheduling from another CPU moves one. */
static void
test_per_cpu_lists(void **state)
{
    (void)state;
    timer_init(&timers[0], record_fn, TIMER_INTR);
    timer_init(&timers[1], record_fn, TIMER_INTR);

    fake_cpu_set(2, NR_CPUS);
    timer_schedule(&timers[0], 10);
    fake_cpu_set(1, NR_CPUS);
    timer_schedule(&timers[1], 10);

    tick_at(0, 10);
    tick_at(3, 10);
    assert_int_equal(nr_fired, 0);
    tick_at(2, 10);
    assert_int_equal(nr_fired, 1);
    assert_int_equal(fired[0].index, 0);
    assert_int_equal(fired[0].cpu, 2);

    /* Moved from CPU 1's list to CPU 3's. */
    fake_cpu_set(3, NR_CPUS);
    timer_schedule(&timers[1], 20);
    tick_at(1, 20);
    assert_int_equal(nr_fired, 1);
    tick_at(3, 20);
    assert_int_equal(nr_fired, 2);
    assert_int_equal(fired[1].index, 1);
    assert_int_equal(fired[1].cpu, 3);

    /* Cancel works from a CPU other than the timer's. */
    fake_cpu_set(0, NR_CPUS);
    timer_schedule(&timers[0], 30);
    fake_cpu_set(2, NR_CPUS);
    assert_true(timer_cancel(&timers[0]));
    tick_at(0, 30);
    assert_int_equal(nr_fired, 2);
}

static void
test_setup_starts_pinned_threads(void **state)
{
    const struct fake_timer_stats *stats = fake_timer_stats();
    char name[THREAD_NAME_SIZE];

    (void)state;
    assert_int_equal(timer_setup(), 0);
    assert_int_equal(stats->nr_created, NR_CPUS);

    for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++) {
        struct thread *thread = fake_thread_get(cpu);

        snprintf(name, sizeof(name), "timer/%u", cpu);
        assert_ptr_equal(timer_cpus[cpu].thread, thread);
        assert_string_equal(thread->name, name);
        assert_true(thread->cpumask == THREAD_CPUMASK(cpu));
        assert_ptr_equal(thread->arg, &timer_cpus[cpu]);
    }

    assert_int_equal(stats->nr_log_errors, 0);
}

static void
test_setup_failure_reported(void **state)
{
    const struct fake_timer_stats *stats = fake_timer_stats();

    (void)state;
    fake_thread_set_create_error(-ENOMEM, 2);
    assert_int_equal(timer_setup(), -ENOMEM);
    assert_int_equal(stats->nr_log_errors, 1);
    assert_non_null(strstr(stats->last_log, "cpu2"));
}

/*
 * Thread-context timers: the tick does not run them, it queues them and
 * wakes the CPU's timer thread, which runs them in expiry order.
 */
static void
test_thread_timers_deferred(void **state)
{
    const struct fake_timer_stats *stats = fake_timer_stats();
    static const unsigned int want_intr[] = { 1 };
    static const unsigned int want_all[] = { 1, 2, 0 };

    (void)state;
    assert_int_equal(timer_setup(), 0);

    timer_init(&timers[0], record_fn, 0);
    timer_init(&timers[1], record_fn, TIMER_INTR);
    timer_init(&timers[2], record_fn, 0);
    timer_schedule(&timers[0], 20);
    timer_schedule(&timers[1], 15);
    timer_schedule(&timers[2], 10);

    tick_at(0, 9);
    assert_int_equal(stats->nr_wakeups, 0);

    tick_at(0, 25);
    assert_fired(want_intr, 1);     /* only the interrupt one ran */
    assert_int_equal(stats->nr_wakeups, 1);
    assert_ptr_equal(stats->last_woken, timer_cpus[0].thread);

    /* Queued for the thread: still pending, still cancellable. */
    assert_true(timer_scheduled(&timers[0]));
    assert_true(timer_scheduled(&timers[2]));

    run_timer_thread(0);
    assert_fired(want_all, 3);
    assert_int_equal(fired[1].cpu, 0);
    assert_false(timer_scheduled(&timers[0]));
    assert_false(timer_scheduled(&timers[2]));

    /* Nothing left: another pass runs nothing and sleeps. */
    run_timer_thread(0);
    assert_int_equal(nr_fired, 3);

    /* A tick with nothing expired wakes nobody. */
    tick_at(0, 26);
    assert_int_equal(stats->nr_wakeups, 1);
}

/* The thread of the timer's CPU is the one woken. */
static void
test_thread_timer_wakes_own_cpu(void **state)
{
    const struct fake_timer_stats *stats = fake_timer_stats();

    (void)state;
    assert_int_equal(timer_setup(), 0);
    timer_init(&timers[0], record_fn, 0);
    fake_cpu_set(3, NR_CPUS);
    timer_schedule(&timers[0], 5);
    fake_cpu_set(0, NR_CPUS);

    tick_at(0, 5);
    assert_int_equal(stats->nr_wakeups, 0);
    tick_at(3, 5);
    assert_int_equal(stats->nr_wakeups, 1);
    assert_ptr_equal(stats->last_woken, timer_cpus[3].thread);

    run_timer_thread(0);
    assert_int_equal(nr_fired, 0);
    run_timer_thread(3);
    assert_int_equal(nr_fired, 1);
    assert_int_equal(fired[0].cpu, 3);
}

/* Cancelled after the tick queued it, before the thread ran it. */
static void
test_cancel_queued_thread_timer(void **state)
{
    (void)state;
    assert_int_equal(timer_setup(), 0);
    timer_init(&timers[0], record_fn, 0);
    timer_init(&timers[1], record_fn, 0);
    timer_init(&timers[2], record_fn, 0);
    timer_schedule(&timers[0], 5);
    timer_schedule(&timers[1], 6);
    timer_schedule(&timers[2], 7);
    tick_at(0, 10);

    /* The tail of the run list, then the head. */
    assert_true(timer_cancel(&timers[2]));
    assert_true(timer_cancel(&timers[0]));
    assert_false(timer_cancel(&timers[0]));
    run_timer_thread(0);
    assert_int_equal(nr_fired, 1);
    assert_int_equal(fired[0].index, 1);

    /* The run list is consistent after removing its tail: reuse it. */
    timer_schedule(&timers[2], 20);
    timer_schedule(&timers[0], 21);
    tick_at(0, 30);
    run_timer_thread(0);
    assert_int_equal(nr_fired, 3);
    assert_int_equal(fired[1].index, 2);
    assert_int_equal(fired[2].index, 0);
}

/* Rescheduled while queued for the thread: back in the sorted list. */
static void
test_reschedule_queued_thread_timer(void **state)
{
    (void)state;
    assert_int_equal(timer_setup(), 0);
    timer_init(&timers[0], record_fn, 0);
    timer_schedule(&timers[0], 5);
    tick_at(0, 5);
    timer_schedule(&timers[0], 50);
    run_timer_thread(0);
    assert_int_equal(nr_fired, 0);
    assert_true(timer_scheduled(&timers[0]));
    tick_at(0, 50);
    run_timer_thread(0);
    assert_int_equal(nr_fired, 1);
    assert_int_equal(fired[0].now, 50);
}

/* A thread-context timer that reschedules itself and one that cancels itself. */
static void
test_thread_timer_self_resched_and_cancel(void **state)
{
    (void)state;
    assert_int_equal(timer_setup(), 0);
    self_resched_left = 1;
    self_resched_period = 10;
    timer_init(&timers[0], resched_fn, 0);
    timer_init(&timers[1], self_cancel_fn, 0);
    timer_schedule(&timers[0], 10);
    timer_schedule(&timers[1], 10);
    self_cancel_result = true;

    tick_at(0, 10);
    run_timer_thread(0);
    assert_int_equal(nr_fired, 2);
    assert_false(self_cancel_result);
    assert_int_equal(fake_timer_stats()->nr_pauses, 0);
    assert_true(timer_scheduled(&timers[0]));
    assert_false(timer_scheduled(&timers[1]));

    tick_at(0, 20);
    run_timer_thread(0);
    assert_int_equal(nr_fired, 3);
    assert_int_equal(fired[2].index, 0);
    assert_int_equal(fired[2].now, 20);
    assert_false(timer_scheduled(&timers[0]));
}

/*
 * A thread-context function that sleeps (or is interrupted) lets the
 * clock run TIMER_INTR timers on its CPU meanwhile; a cancel from another
 * thread must still wait for the function.  The pause hook plays the
 * timer thread finishing the function while the canceller spins.
 */
static unsigned int slow_waits;

static void
slow_finishes(void)
{
    slow_waits++;
    timer_cpus[0].running = NULL;
}

static void
sleeping_fn(struct timer *timer)
{
    static const unsigned int want[] = { 1 };
    struct thread *timer_thread = thread_self();

    /* Asleep: the clock runs the TIMER_INTR timer due now. */
    tick_at(0, 30);
    assert_fired(want, 1);
    assert_ptr_equal(timer_cpus[0].running, timer);
    assert_null(timer_cpus[0].running_intr);

    /* Another thread cancels it, and waits for it. */
    fake_thread_set_self(NULL);
    fake_set_pause_hook(slow_finishes);
    assert_false(timer_cancel(timer));
    assert_int_equal(slow_waits, 1);
    fake_set_pause_hook(NULL);
    fake_thread_set_self(timer_thread);
}

static void
test_cancel_waits_across_intr_timer(void **state)
{
    (void)state;
    assert_int_equal(timer_setup(), 0);
    slow_waits = 0;
    timer_init(&timers[0], sleeping_fn, 0);
    timer_init(&timers[1], record_fn, TIMER_INTR);
    timer_schedule(&timers[0], 10);
    timer_schedule(&timers[1], 25);
    tick_at(0, 10);
    run_timer_thread(0);
    assert_int_equal(slow_waits, 1);
    assert_false(timer_scheduled(&timers[0]));
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_init_idle),
        T(test_intr_expiry_order),
        T(test_intr_batch_in_one_tick),
        T(test_ties_in_scheduling_order),
        T(test_reschedule_tie_goes_last),
        T(test_not_before_time),
        T(test_past_time_fires_next_tick),
        T(test_reschedule_later),
        T(test_reschedule_earlier),
        T(test_schedule_after_fire),
        T(test_cancel_pending),
        T(test_cancel_idle_or_fired),
        T(test_cancel_only_then_schedule),
        T(test_self_reschedule),
        T(test_self_reschedule_into_past),
        T(test_self_cancel_intr),
        T(test_cancel_from_timer_fn),
        T(test_per_cpu_lists),
        T(test_setup_starts_pinned_threads),
        T(test_setup_failure_reported),
        T(test_thread_timers_deferred),
        T(test_thread_timer_wakes_own_cpu),
        T(test_cancel_queued_thread_timer),
        T(test_reschedule_queued_thread_timer),
        T(test_thread_timer_self_resched_and_cancel),
        T(test_cancel_waits_across_intr_timer),
    };
#undef T

    return cmocka_run_group_tests(tests, NULL, NULL);
}
