/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Threads and the scheduler.
 */

#include <stdbool.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/thread.h"

static unsigned int thread_preempt_counts[CPU_MAX];

void
thread_preempt_disable(void)
{
    thread_preempt_counts[cpu_id()]++;
    barrier();
}

void
thread_preempt_enable(void)
{
    barrier();
    assert(thread_preempt_counts[cpu_id()] != 0);
    thread_preempt_counts[cpu_id()]--;
}

bool
thread_preempt_enabled(void)
{
    return thread_preempt_counts[cpu_id()] == 0;
}
