/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Cross-CPU calls.
 *
 * xcall_call(fn, arg, cpu) runs fn(arg) on the given CPU, with interrupts
 * disabled there, and returns once fn has returned.  A call for the local
 * CPU runs fn directly (with interrupts disabled).  Calls from many CPUs to
 * one CPU are all served, one at a time.
 *
 * Context: thread context with interrupts and preemption enabled, so no
 * spinlock held (both asserted): a CPU waiting for its call keeps serving
 * calls made to it, so two CPUs calling each other cannot deadlock, and no
 * target can be spinning on a lock the caller holds.  fn runs in interrupt context: it must not
 * sleep, and must not take a lock that is held with interrupts enabled.
 */

#ifndef KERN_XCALL_H
#define KERN_XCALL_H

#include <stdint.h>

#include "kern/init.h"

typedef void (*xcall_fn_t)(void *arg);

/* Returns 0, or -EINVAL when cpu is not online. */
int xcall_call(xcall_fn_t fn, void *arg, unsigned int cpu);

/*
 * Run fn(arg) on every CPU of the mask (bit N for CPU N) at once: the
 * calls are all sent before any is waited for, so the CPUs run fn at about
 * the same time (fn must expect to run concurrently with itself); the
 * caller's own CPU, when in the mask, runs it meanwhile.  Returns once all
 * have returned: 0, or -EINVAL for an empty mask or one naming a CPU that
 * is not online.
 */
int xcall_call_many(xcall_fn_t fn, void *arg, uint64_t cpus);

/*
 * Register the calling CPU's xcall counters, as it comes online
 * (arch/x86/smp.c; the boot CPU's from xcall_setup).
 */
void xcall_setup_cpu(void);

INIT_OP_DECLARE(xcall_setup);

#endif /* KERN_XCALL_H */
