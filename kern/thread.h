/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Threads and the scheduler (work in progress: preemption control only).
 */

#ifndef KERN_THREAD_H
#define KERN_THREAD_H

#include <stdbool.h>

void thread_preempt_disable(void);
void thread_preempt_enable(void);
bool thread_preempt_enabled(void);

#endif /* KERN_THREAD_H */
