/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Single-threaded fake of kern/spinlock.c for host tests: it checks lock
 * pairing (a double lock or an unlock of a free lock is an assertion
 * failure) without any real atomicity.
 */

#include "kern/assert.h"
#include "kern/spinlock.h"

void
spinlock_init(struct spinlock *lock)
{
    lock->locked = 0;
    lock->owner = SPINLOCK_OWNER_NONE;
}

void
spinlock_lock(struct spinlock *lock)
{
    assert(!lock->locked);
    lock->locked = 1;
    lock->owner = 0;
}

void
spinlock_unlock(struct spinlock *lock)
{
    assert(lock->locked);
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
    return lock->locked && lock->owner == 0;
}
