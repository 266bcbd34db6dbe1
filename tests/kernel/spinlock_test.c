/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel tests of the spin locks' contention count
 * (spinlock_contended()): a lock taken free adds nothing to it, and one
 * that another CPU holds adds to the count of the CPU that waits for it.
 */

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/ktest.h"
#include "kern/macros.h"
#include "kern/spinlock.h"
#include "kern/thread.h"
#include "tests/kernel/ktest_util.h"

#define SPINLOCK_TEST_FREE_ROUNDS   100
#define SPINLOCK_TEST_HOLD_SPINS    10000000    /* at most, held */
#define SPINLOCK_TEST_WAIT_MS       1000

static struct spinlock spinlock_test_lock = SPINLOCK_INITIALIZER;

/*
 * Between the test and its holder thread: set before the holder starts,
 * the waiting CPU and its count then; held while the holder holds the lock.
 */
static unsigned int spinlock_test_waiter;
static unsigned long spinlock_test_before;
static volatile bool spinlock_test_held;

static int
spinlock_test_free(void)
{
    unsigned long flags, before, after;
    unsigned int cpu;

    /* Interrupts off: none of this CPU's handlers waits for a lock meanwhile. */
    flags = cpu_intr_save();
    cpu = cpu_id();
    before = spinlock_contended(cpu);

    for (unsigned int i = 0; i < SPINLOCK_TEST_FREE_ROUNDS; i++) {
        spinlock_lock(&spinlock_test_lock);
        spinlock_unlock(&spinlock_test_lock);
    }

    after = spinlock_contended(cpu);
    cpu_intr_restore(flags);
    KTEST_ASSERT_EQ(after, before);
    return KTEST_PASS;
}

KTEST_DEFINE(spinlock, free_lock_not_counted, spinlock_test_free);

/*
 * Hold the lock until the waiting CPU's count moves: so the test's take
 * waits, whenever it comes.  Bounded, should the count never move.
 */
static void
spinlock_test_holder(void *arg)
{
    unsigned long flags;

    (void)arg;
    spinlock_lock_intr_save(&spinlock_test_lock, &flags);
    WRITE_ONCE(spinlock_test_held, true);

    for (unsigned long i = 0; i < SPINLOCK_TEST_HOLD_SPINS
         && spinlock_contended(spinlock_test_waiter) == spinlock_test_before;
         i++) {
        cpu_pause();
    }

    WRITE_ONCE(spinlock_test_held, false);
    spinlock_unlock_intr_restore(&spinlock_test_lock, flags);
}

static int
spinlock_test_held_lock(void)
{
    uint64_t deadline = ktest_deadline(SPINLOCK_TEST_WAIT_MS);
    uint64_t affinity = thread_get_affinity(thread_self());
    struct thread *holder = NULL;
    bool counted = false;
    unsigned int self;

    if (cpu_count() < 2) {
        ktest_skip_reason("one CPU: no other holds the lock");
        return KTEST_SKIP;
    }

    thread_preempt_disable();
    self = cpu_id();
    thread_preempt_enable();
    KTEST_CHECK_EQ(thread_set_affinity(thread_self(), THREAD_CPUMASK(self)),
                   0);
    spinlock_test_waiter = self;
    spinlock_test_before = spinlock_contended(self);
    WRITE_ONCE(spinlock_test_held, false);
    KTEST_CHECK_EQ(thread_create(&holder, "spinlock-holder",
                                 spinlock_test_holder, NULL,
                                 THREAD_CPUMASK((self + 1) % cpu_count())),
                   0);

    while (!READ_ONCE(spinlock_test_held)) {
        KTEST_CHECK(!ktest_expired(deadline));
        thread_yield();
    }

    spinlock_lock(&spinlock_test_lock);
    spinlock_unlock(&spinlock_test_lock);
    counted = spinlock_contended(self) > spinlock_test_before;
    KTEST_CHECK(counted);

out:
    if (holder != NULL) {
        thread_join(holder);
    }

    thread_set_affinity(thread_self(), affinity);
    return ktest_result();
}

KTEST_DEFINE(spinlock, held_lock_counted_for_waiter, spinlock_test_held_lock);
