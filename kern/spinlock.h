/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Spin locks.
 *
 * spinlock_lock() disables preemption for as long as the lock is held; it
 * must not be taken by interrupt handlers.  The _intr_save variants also
 * disable local interrupts and must be used for any lock that an interrupt
 * handler (not an NMI: nothing called from NMI context takes a lock) may take.
 *
 * Misuse is asserted: taking a lock already held by the current CPU,
 * releasing one not held by it, and taking with interrupts enabled a lock
 * that an interrupt handler has taken (the handler could interrupt the
 * holder on its own CPU and spin forever) all fail loudly.
 */

#ifndef KERN_SPINLOCK_H
#define KERN_SPINLOCK_H

#include <stdbool.h>

struct spinlock {
    volatile unsigned int locked;
    unsigned int owner;             /* CPU holding it, for assertions */
    bool intr_taken;                /* ever taken by an interrupt handler */
};

#define SPINLOCK_OWNER_NONE     (~0U)
#define SPINLOCK_INITIALIZER    { 0, SPINLOCK_OWNER_NONE, false }

void spinlock_init(struct spinlock *lock);

void spinlock_lock(struct spinlock *lock);
void spinlock_unlock(struct spinlock *lock);

/*
 * Disable local interrupts (saving their previous state in *flagsp), then
 * take the lock.
 */
void spinlock_lock_intr_save(struct spinlock *lock, unsigned long *flagsp);
void spinlock_unlock_intr_restore(struct spinlock *lock, unsigned long flags);

/*
 * How many times cpu found a lock taken and spun for it, since boot: a
 * path's instruction count includes its spins, which depend on what other
 * CPUs do and when.
 */
unsigned long spinlock_contended(unsigned int cpu);

/* True when the lock is held by the current CPU. */
bool spinlock_held(const struct spinlock *lock);

#endif /* KERN_SPINLOCK_H */
