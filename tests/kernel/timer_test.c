/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel tests of timers and the clock (kern/timer.h, kern/clock.h):
 * TIMER_INTR timers fire in expiry order (ties in scheduling order), never
 * early, on the CPU that scheduled them, with interrupts disabled;
 * thread-context timers run with interrupts and preemption enabled and may
 * sleep and issue xcalls; rescheduling moves a timer; timer_cancel() of a
 * pending timer returns true and it never fires, of an idle one false, and
 * waits for a function running on another CPU; thread_msleep() sleeps at
 * least the time asked.
 */

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "kern/clock.h"
#include "kern/ktest.h"
#include "kern/macros.h"
#include "kern/thread.h"
#include "kern/timer.h"
#include "kern/xcall.h"
#include "tests/kernel/ktest_util.h"

#define TIMER_TEST_MAX      8

/* One firing, in firing order. */
struct timer_test_fire {
    unsigned int index;
    uint64_t now;
    unsigned int cpu;
    bool intr_enabled;
    bool preempt_enabled;
};

static struct timer timer_test_timers[TIMER_TEST_MAX];
static struct timer_test_fire timer_test_fires[TIMER_TEST_MAX * 2];
static unsigned int timer_test_nr_fires;            /* atomic */

static void
timer_test_record(struct timer *timer)
{
    unsigned int i = __atomic_fetch_add(&timer_test_nr_fires, 1,
                                        __ATOMIC_ACQ_REL);

    if (i >= TIMER_TEST_MAX * 2) {
        return;
    }

    timer_test_fires[i].index = timer - timer_test_timers;
    timer_test_fires[i].now = clock_get_time();
    timer_test_fires[i].cpu = cpu_id();
    timer_test_fires[i].intr_enabled = cpu_intr_enabled();
    timer_test_fires[i].preempt_enabled = thread_preempt_enabled();
}

static void
timer_test_reset(void)
{
    __atomic_store_n(&timer_test_nr_fires, 0, __ATOMIC_RELEASE);
}

static unsigned int
timer_test_fired(void)
{
    return __atomic_load_n(&timer_test_nr_fires, __ATOMIC_ACQUIRE);
}

static bool
timer_test_fired_enough(void *arg)
{
    return timer_test_fired() >= (unsigned int)(uintptr_t)arg;
}

/* Wait (sleeping) until count firings or ms pass; returns the count. */
static unsigned int
timer_test_wait_fires(unsigned int count, unsigned int ms)
{
    ktest_wait_until(timer_test_fired_enough, (void *)(uintptr_t)count, ms);
    return timer_test_fired();
}

/*
 * Cancel every test timer, waiting for a function running (cleanup
 * paths): one left pending would fire into the next test's records.
 */
static void
timer_test_cancel_all(void)
{
    for (unsigned int i = 0; i < TIMER_TEST_MAX; i++) {
        timer_cancel(&timer_test_timers[i]);
    }
}

static int
timer_test_intr_order(void)
{
    static const uint64_t delay[] = { 40, 10, 25, 25, 5, 25 };
    static const unsigned int want[] = { 4, 1, 2, 3, 5, 0 };
    uint64_t now, when[6];
    unsigned int cpu, n;
    uint64_t saved;

    timer_test_reset();
    saved = ktest_pin_self(&cpu);
    now = clock_get_time();

    for (unsigned int i = 0; i < 6; i++) {
        when[i] = now + delay[i];
        timer_init(&timer_test_timers[i], timer_test_record, TIMER_INTR);
        timer_schedule(&timer_test_timers[i], when[i]);
        KTEST_CHECK(timer_scheduled(&timer_test_timers[i]));
    }

    n = timer_test_wait_fires(6, 1000);
    KTEST_CHECK_EQ(n, 6);

    for (unsigned int i = 0; i < 6; i++) {
        const struct timer_test_fire *f = &timer_test_fires[i];

        KTEST_CHECK_EQ(f->index, want[i]);
        KTEST_CHECK(f->now >= when[f->index]);
        KTEST_CHECK_EQ(f->cpu, cpu);
        KTEST_CHECK(!f->intr_enabled);
        KTEST_CHECK(!timer_scheduled(&timer_test_timers[i]));
    }

    thread_msleep(5);
    KTEST_CHECK_EQ(timer_test_fired(), 6);      /* one-shot */

out:
    timer_test_cancel_all();
    ktest_unpin_self(saved);
    return ktest_result();
}

KTEST_DEFINE(timer, intr_fire_in_order, timer_test_intr_order);

/* Thread-context timers, in order too, in thread context. */
static int
timer_test_thread_order(void)
{
    static const uint64_t delay[] = { 30, 10, 20, 10 };
    static const unsigned int want[] = { 1, 3, 2, 0 };
    uint64_t now, when[4];
    unsigned int cpu, n;
    uint64_t saved;

    timer_test_reset();
    saved = ktest_pin_self(&cpu);
    now = clock_get_time();

    for (unsigned int i = 0; i < 4; i++) {
        when[i] = now + delay[i];
        timer_init(&timer_test_timers[i], timer_test_record, 0);
        timer_schedule(&timer_test_timers[i], when[i]);
    }

    n = timer_test_wait_fires(4, 1000);
    KTEST_CHECK_EQ(n, 4);

    for (unsigned int i = 0; i < 4; i++) {
        const struct timer_test_fire *f = &timer_test_fires[i];

        KTEST_CHECK_EQ(f->index, want[i]);
        KTEST_CHECK(f->now >= when[f->index]);
        KTEST_CHECK_EQ(f->cpu, cpu);
        KTEST_CHECK(f->intr_enabled);
        KTEST_CHECK(f->preempt_enabled);
    }

out:
    timer_test_cancel_all();
    ktest_unpin_self(saved);
    return ktest_result();
}

KTEST_DEFINE(timer, thread_fire_in_order, timer_test_thread_order);

/* A thread-context function may sleep and issue xcalls (perfmon polls). */
static volatile unsigned int timer_test_xcall_hits;
static volatile bool timer_test_heavy_done;
static int timer_test_heavy_error;

static void
timer_test_xcall_fn(void *arg)
{
    (void)arg;
    timer_test_xcall_hits++;
}

static void
timer_test_heavy_fn(struct timer *timer)
{
    (void)timer;
    thread_msleep(2);

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        int error = xcall_call(timer_test_xcall_fn, NULL, cpu);

        if (error) {
            timer_test_heavy_error = error;
        }
    }

    timer_test_heavy_done = true;
}

static int
timer_test_thread_may_sleep_and_xcall(void)
{
    struct timer *timer = &timer_test_timers[0];

    timer_test_xcall_hits = 0;
    timer_test_heavy_done = false;
    timer_test_heavy_error = 0;
    timer_init(timer, timer_test_heavy_fn, 0);
    timer_schedule(timer, clock_get_time() + 3);
    ktest_wait_flag(&timer_test_heavy_done, 2000);

    KTEST_CHECK(timer_test_heavy_done);
    KTEST_CHECK_EQ(timer_test_heavy_error, 0);
    KTEST_CHECK_EQ(timer_test_xcall_hits, cpu_count());

out:
    timer_test_cancel_all();
    return ktest_result();
}

KTEST_DEFINE(timer, thread_may_sleep_and_xcall,
             timer_test_thread_may_sleep_and_xcall);

static int
timer_test_cancel(void)
{
    uint64_t now = clock_get_time();

    timer_test_reset();
    timer_init(&timer_test_timers[0], timer_test_record, TIMER_INTR);
    timer_init(&timer_test_timers[1], timer_test_record, 0);
    timer_init(&timer_test_timers[2], timer_test_record, TIMER_INTR);

    /* Idle: nothing to cancel. */
    KTEST_CHECK(!timer_cancel(&timer_test_timers[0]));

    timer_schedule(&timer_test_timers[0], now + 15);
    timer_schedule(&timer_test_timers[1], now + 15);
    timer_schedule(&timer_test_timers[2], now + 20);
    KTEST_CHECK(timer_cancel(&timer_test_timers[0]));
    KTEST_CHECK(timer_cancel(&timer_test_timers[1]));
    KTEST_CHECK(!timer_scheduled(&timer_test_timers[0]));
    KTEST_CHECK(!timer_scheduled(&timer_test_timers[1]));
    KTEST_CHECK(!timer_cancel(&timer_test_timers[0]));

    KTEST_CHECK_EQ(timer_test_wait_fires(1, 1000), 1);
    thread_msleep(30);
    KTEST_CHECK_EQ(timer_test_fired(), 1);
    KTEST_CHECK_EQ(timer_test_fires[0].index, 2);

    /* Fired: not pending any more. */
    KTEST_CHECK(!timer_cancel(&timer_test_timers[2]));

out:
    timer_test_cancel_all();
    return ktest_result();
}

KTEST_DEFINE(timer, cancel, timer_test_cancel);

/*
 * A rescheduled timer fires at its new time: after a timer due between
 * its old and new times when it moved later, before one due just before
 * its old time when it moved earlier.  The order holds however late the
 * host runs this CPU (one CPU's due timers fire in expiry order), where a
 * bound on the clock at the fire would not.
 */
static int
timer_test_reschedule(void)
{
    uint64_t now, saved;
    unsigned int cpu;

    timer_test_reset();
    saved = ktest_pin_self(&cpu);
    timer_init(&timer_test_timers[0], timer_test_record, TIMER_INTR);
    timer_init(&timer_test_timers[1], timer_test_record, TIMER_INTR);
    now = clock_get_time();
    timer_schedule(&timer_test_timers[0], now + 5);
    timer_schedule(&timer_test_timers[0], now + 40);
    timer_schedule(&timer_test_timers[1], now + 20);
    KTEST_CHECK(timer_scheduled(&timer_test_timers[0]));
    KTEST_CHECK_EQ(timer_test_wait_fires(2, 1000), 2);
    KTEST_CHECK_EQ(timer_test_fires[0].index, 1);
    KTEST_CHECK_EQ(timer_test_fires[1].index, 0);
    KTEST_CHECK(timer_test_fires[1].now >= now + 40);
    thread_msleep(10);
    KTEST_CHECK_EQ(timer_test_fired(), 2);

    /* Earlier: fires at the new time, not again at the old one. */
    timer_test_reset();
    now = clock_get_time();
    timer_schedule(&timer_test_timers[0], now + 60);
    timer_schedule(&timer_test_timers[1], now + 59);
    timer_schedule(&timer_test_timers[0], now + 3);
    KTEST_CHECK_EQ(timer_test_wait_fires(2, 1000), 2);
    KTEST_CHECK_EQ(timer_test_fires[0].index, 0);
    KTEST_CHECK_EQ(timer_test_fires[1].index, 1);
    thread_msleep(10);
    KTEST_CHECK_EQ(timer_test_fired(), 2);

out:
    timer_test_cancel_all();
    ktest_unpin_self(saved);
    return ktest_result();
}

KTEST_DEFINE(timer, reschedule_moves, timer_test_reschedule);

/*
 * timer_cancel() returns only once a running function has returned, even
 * when that function slept meanwhile and TIMER_INTR timers (its msleep's)
 * ran on its CPU: the function sleeps 30 ms, then stays busy 30 ms more,
 * and the cancel comes 40 ms after it started.
 */
static volatile bool timer_test_slow_started;
static volatile bool timer_test_slow_finished;

static void
timer_test_slow_fn(struct timer *timer)
{
    uint64_t end;

    (void)timer;
    timer_test_slow_started = true;
    thread_msleep(30);
    end = clock_get_time() + clock_ticks_from_ms(30);

    while (clock_get_time() < end) {
        cpu_pause();
    }

    timer_test_slow_finished = true;
}

static int
timer_test_cancel_waits(void)
{
    struct timer *timer = &timer_test_timers[0];
    uint64_t deadline;
    bool pending, finished;

    timer_test_slow_started = false;
    timer_test_slow_finished = false;
    timer_init(timer, timer_test_slow_fn, 0);
    timer_schedule(timer, clock_get_time() + 2);
    deadline = ktest_deadline(1000);

    while (!timer_test_slow_started && !ktest_expired(deadline)) {
        cpu_pause();
    }

    KTEST_CHECK(timer_test_slow_started);
    thread_msleep(40);
    pending = timer_cancel(timer);
    finished = timer_test_slow_finished;
    KTEST_CHECK(!pending);
    KTEST_CHECK(finished);

out:
    timer_test_cancel_all();
    return ktest_result();
}

KTEST_DEFINE(timer, cancel_waits_for_running, timer_test_cancel_waits);

/*
 * Ticks lost while the boot CPU runs with interrupts disabled come back:
 * after 50 ms with interrupts off on CPU 0, the time has moved on by about
 * 50 ms, not by the one tick its local APIC kept pending.
 */
static int
timer_test_clock_catches_up(void)
{
    uint64_t saved = thread_get_affinity(thread_self());
    uint64_t before, after, end;
    unsigned long flags;
    bool on_cpu0;

    KTEST_ASSERT_EQ(thread_set_affinity(thread_self(), THREAD_CPUMASK(0)), 0);
    flags = cpu_intr_save();
    on_cpu0 = cpu_id() == 0;
    before = clock_get_time();
    end = tsc_ns() + 50 * 1000000ULL;

    while (tsc_ns() < end) {
        cpu_pause();
    }

    cpu_intr_restore(flags);
    thread_msleep(3);
    after = clock_get_time();
    ktest_unpin_self(saved);
    KTEST_ASSERT(on_cpu0);
    KTEST_ASSERT(after - before >= clock_ticks_from_ms(50));
    return KTEST_PASS;
}

KTEST_DEFINE(timer, clock_catches_up, timer_test_clock_catches_up);

/*
 * A sleep lasts at least what it asked for, in real time, wherever in a
 * tick it starts: each sleep starts 0.9 ms into a tick, where a deadline
 * counted from the current tick would wake it 0.9 ms early.
 */
static int
timer_test_msleep(void)
{
    static const uint64_t ms[] = { 1, 2, 5, 20, 50 };
    const uint64_t late_ns = 900000;
    uint64_t tick, start, slept;

    for (size_t i = 0; i < ARRAY_SIZE(ms); i++) {
        tick = clock_get_time();

        while (clock_get_time() == tick) {
            cpu_pause();
        }

        start = tsc_ns();

        while (tsc_ns() - start < late_ns) {
            cpu_pause();
        }

        thread_msleep(ms[i]);
        slept = tsc_ns() - start - late_ns;

        if (slept < ms[i] * 1000000 || slept > (ms[i] + 1000) * 1000000) {
            ktest_diag("msleep(%llu) slept %llu ns", (unsigned long long)ms[i],
                       (unsigned long long)slept);
            return KTEST_FAIL;
        }
    }

    /* Zero: returns. */
    thread_msleep(0);
    return KTEST_PASS;
}

KTEST_DEFINE(timer, msleep_at_least, timer_test_msleep);

static int
timer_test_clock(void)
{
    uint64_t a, b;

    KTEST_ASSERT_EQ(CLOCK_HZ, 1000);
    KTEST_ASSERT_EQ(clock_ticks_from_ms(7), 7);
    KTEST_ASSERT_EQ(clock_ms_from_ticks(1500), 1500);

    a = clock_get_time();

    for (unsigned int i = 0; i < 1000; i++) {
        b = clock_get_time();
        KTEST_ASSERT(b >= a);
        a = b;
    }

    /* It advances on its own (the CPU busy, interrupts on). */
    a = clock_get_time();

    for (uint64_t spins = 0; clock_get_time() < a + 3; spins++) {
        KTEST_ASSERT(spins < 1000000000ULL);
        cpu_pause();
    }

    return KTEST_PASS;
}

KTEST_DEFINE(timer, clock_monotonic, timer_test_clock);

