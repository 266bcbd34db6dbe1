/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The thread calls of kern/thread.h that fakes/thread.c leaves out, for
 * host tests of shell commands that would start threads, sleep or move
 * (kern/perfmon/cmd/perfmon_cmd.c's runner, kern/workload.c): no thread can be
 * created (-ENOMEM, an error path the callers handle), so joining,
 * sleeping and waking must not be reached; yielding (one host thread:
 * nothing else can run meanwhile), sleeping a number of milliseconds and
 * the affinity are plain (the affinity is kept); a test may run a hook
 * where a sleep would let another thread run.
 */

#include <stdint.h>

#include "kern/assert.h"
#include "kern/error.h"
#include "fakes/fake_smp.h"
#include "kern/thread.h"

static uint64_t fake_thread_affinity = THREAD_CPUMASK_ALL;

int
thread_create(struct thread **threadp, const char *name, thread_fn_t fn,
              void *arg, uint64_t cpumask)
{
    (void)threadp;
    (void)name;
    (void)fn;
    (void)arg;
    (void)cpumask;
    return -ENOMEM;
}

void
thread_join(struct thread *thread)
{
    (void)thread;
    assert(!"thread_join: no thread was created");
}

void
thread_sleep_prepare(void)
{
    assert(!"thread_sleep_prepare: not on the host");
}

void
thread_sleep(void)
{
    assert(!"thread_sleep: not on the host");
}

void
thread_sleep_cancel(void)
{
    assert(!"thread_sleep_cancel: not on the host");
}

void
thread_wakeup(struct thread *thread)
{
    (void)thread;
    assert(!"thread_wakeup: not on the host");
}

void
thread_yield(void)
{
}

/* Run by each thread_msleep() (fake_thread_set_msleep_hook()). */
static void (*fake_msleep_hook)(void);

void
fake_thread_set_msleep_hook(void (*hook)(void))
{
    fake_msleep_hook = hook;
}

void
thread_msleep(uint64_t ms)
{
    (void)ms;

    if (fake_msleep_hook != NULL) {
        fake_msleep_hook();
    }
}

int
thread_set_affinity(struct thread *thread, uint64_t cpumask)
{
    (void)thread;

    if (cpumask == 0) {
        return -EINVAL;
    }

    fake_thread_affinity = cpumask;
    return 0;
}

uint64_t
thread_get_affinity(const struct thread *thread)
{
    (void)thread;
    return fake_thread_affinity;
}
