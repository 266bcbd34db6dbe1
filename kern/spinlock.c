/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Spin locks: a test-and-test-and-set lock with owner tracking for
 * assertions.
 */

#include <stdbool.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/param.h"
#include "kern/spinlock.h"
#include "kern/thread.h"

/*
 * Per CPU: how many times an acquisition found its lock taken.  Only
 * the waiting CPU adds to its word, from thread or interrupt context; any
 * CPU reads it.
 */
static unsigned long spinlock_nr_contended[CPU_MAX];

unsigned long
spinlock_contended(unsigned int cpu)
{
    assert(cpu < CPU_MAX);
    return __atomic_load_n(&spinlock_nr_contended[cpu], __ATOMIC_RELAXED);
}

void
spinlock_init(struct spinlock *lock)
{
    lock->locked = 0;
    lock->owner = SPINLOCK_OWNER_NONE;
    lock->intr_taken = false;
}

static void
spinlock_acquire(struct spinlock *lock)
{
    /* A CPU spinning on a lock it holds would never get out. */
    assert(lock->owner != cpu_id() || !lock->locked);

    while (__atomic_exchange_n(&lock->locked, 1, __ATOMIC_ACQUIRE) != 0) {
        /* Off the uncontended path; an interrupt's own wait may split it. */
        __atomic_fetch_add(&spinlock_nr_contended[cpu_id()], 1,
                           __ATOMIC_RELAXED);

        while (__atomic_load_n(&lock->locked, __ATOMIC_RELAXED) != 0) {
            cpu_pause();
        }
    }

    lock->owner = cpu_id();

    if (cpu_in_intr()) {
        lock->intr_taken = true;
    }
}

static void
spinlock_release(struct spinlock *lock)
{
    assert(lock->locked && lock->owner == cpu_id());
    lock->owner = SPINLOCK_OWNER_NONE;
    __atomic_store_n(&lock->locked, 0, __ATOMIC_RELEASE);
}

void
spinlock_lock(struct spinlock *lock)
{
    /* An interrupt handler taking it here would spin on its own CPU. */
    assert(!lock->intr_taken || !cpu_intr_enabled());
    thread_preempt_disable();
    spinlock_acquire(lock);
}

void
spinlock_unlock(struct spinlock *lock)
{
    spinlock_release(lock);
    thread_preempt_enable();
}

void
spinlock_lock_intr_save(struct spinlock *lock, unsigned long *flagsp)
{
    thread_preempt_disable();
    *flagsp = cpu_intr_save();
    spinlock_acquire(lock);
}

void
spinlock_unlock_intr_restore(struct spinlock *lock, unsigned long flags)
{
    spinlock_release(lock);
    cpu_intr_restore(flags);
    thread_preempt_enable();
}

bool
spinlock_held(const struct spinlock *lock)
{
    return lock->locked && lock->owner == cpu_id();
}
