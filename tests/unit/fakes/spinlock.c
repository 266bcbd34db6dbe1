/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Single-threaded fake of kern/spinlock.c for host tests, with no real
 * atomicity but the ownership rules of the real lock asserted: a lock is
 * owned by the fake CPU that took it (cpu_id() of fakes/cpu.c when the
 * test links it, CPU 0 otherwise); taking a lock already held (by this
 * CPU: a deadlock; by another fake CPU: a spin that would never end on
 * one host thread) and releasing one not held by this CPU are assertion
 * failures.  spinlock_held() answers for this CPU, so code that asserts
 * it holds a lock, and fakes that check their callers hold one
 * (tests/unit/fdev.c for the perfmon allocator lock), catch a lock that
 * was dropped.  A test may let a lock held by another fake CPU be waited
 * for instead (fake_spinlock_set_contended_hook(), fakes/fake_smp.h): its
 * hook runs that CPU to its unlock, as the waiter would spin until then.
 */

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/spinlock.h"
#include "fakes/fake_smp.h"

/* Tests without the CPU fake have one CPU: a weak reference, NULL then. */
unsigned int cpu_id(void) __attribute__((weak));

static unsigned int
fake_spinlock_cpu(void)
{
    return (cpu_id != NULL) ? cpu_id() : 0;
}

void
spinlock_init(struct spinlock *lock)
{
    lock->locked = 0;
    lock->owner = SPINLOCK_OWNER_NONE;
}

/* Called once, at the next lock found held by another CPU; or NULL. */
static void (*fake_spinlock_contended)(struct spinlock *lock);

void
fake_spinlock_set_contended_hook(void (*fn)(struct spinlock *lock))
{
    fake_spinlock_contended = fn;
}

void
spinlock_lock(struct spinlock *lock)
{
    if (lock->locked && lock->owner != fake_spinlock_cpu()
        && fake_spinlock_contended != NULL) {
        void (*fn)(struct spinlock *lock) = fake_spinlock_contended;

        fake_spinlock_contended = NULL;
        fn(lock);
    }

    assert(!lock->locked);
    lock->locked = 1;
    lock->owner = fake_spinlock_cpu();
}

void
spinlock_unlock(struct spinlock *lock)
{
    assert(lock->locked);
    assert(lock->owner == fake_spinlock_cpu());
    lock->locked = 0;
    lock->owner = SPINLOCK_OWNER_NONE;
}

void
spinlock_lock_intr_save(struct spinlock *lock, unsigned long *flagsp)
{
    *flagsp = 0x200;
    spinlock_lock(lock);
}

void
spinlock_unlock_intr_restore(struct spinlock *lock, unsigned long flags)
{
    (void)flags;
    spinlock_unlock(lock);
}

bool
spinlock_held(const struct spinlock *lock)
{
    return lock->locked && lock->owner == fake_spinlock_cpu();
}
