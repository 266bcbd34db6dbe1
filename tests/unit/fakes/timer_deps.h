/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Controls of the fakes that kern/timer.c is linked against in its host
 * test (tests/unit/fakes/timer_deps.c): CPU, clock and thread stand-ins,
 * and what the code under test did with them.
 */

#ifndef TESTS_UNIT_FAKES_TIMER_DEPS_H
#define TESTS_UNIT_FAKES_TIMER_DEPS_H

#include <setjmp.h>
#include <stdint.h>

#include "kern/thread.h"

/* A created thread: what thread_create() was asked for. */
struct thread {
    char name[THREAD_NAME_SIZE];
    thread_fn_t fn;
    void *arg;
    uint64_t cpumask;
};

/* What the code under test did. */
struct fake_timer_stats {
    unsigned int nr_created;
    unsigned int nr_wakeups;
    struct thread *last_woken;
    unsigned int nr_sleep_prepare;
    unsigned int nr_sleep;
    unsigned int nr_sleep_cancel;
    int preempt_level;
    unsigned int nr_pauses;
    unsigned int nr_log_errors;
    char last_log[128];
};

void fake_timer_deps_reset(void);
void fake_cpu_set(unsigned int cpu, unsigned int count);
void fake_clock_set(uint64_t now);
struct thread *fake_thread_get(unsigned int index);
void fake_thread_set_self(struct thread *thread);
void fake_thread_set_create_error(int error, unsigned int after);
void fake_thread_set_sleep_jmp(jmp_buf *env);
const struct fake_timer_stats *fake_timer_stats(void);

/* Called by each cpu_pause(): what another CPU does while we spin. */
void fake_set_pause_hook(void (*hook)(void));

#endif /* TESTS_UNIT_FAKES_TIMER_DEPS_H */
