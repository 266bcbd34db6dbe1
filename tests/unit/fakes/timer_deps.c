/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fakes of what kern/timer.c needs from the rest of the kernel, for its
 * host tests: a settable CPU number and CPU count, a settable clock, and a
 * scheduler that creates no real thread but records what is asked of it
 * (threads created, wakeups, sleeps, preemption nesting).  thread_sleep()
 * can leave the caller through a longjmp so that a test runs one pass of a
 * thread's endless loop; cpu_pause() fails the test once it spins far too
 * long, so a wait that can never end is reported instead of hanging.
 * The fake's own interface, and its struct thread, are in
 * fakes/timer_deps.h.  ksnprintf() is the kernel's own (kern/printf.c).
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "arch/x86/cpu.h"
#include "kern/clock.h"
#include "kern/log.h"
#include "kern/thread.h"

#include "fakes/timer_deps.h"

#define FAKE_MAX_THREADS    8
#define FAKE_PAUSE_LIMIT    100000

static unsigned int fake_cpu;
static unsigned int fake_nr_cpus = 1;
static uint64_t fake_now;
static struct thread fake_threads[FAKE_MAX_THREADS];
static struct thread *fake_self;
static int fake_create_error;
static unsigned int fake_create_error_after;
static jmp_buf *fake_sleep_jmp;
static struct fake_timer_stats fake_stats;
static void (*fake_pause_hook)(void);

void
fake_timer_deps_reset(void)
{
    fake_cpu = 0;
    fake_nr_cpus = 1;
    fake_now = 0;
    memset(fake_threads, 0, sizeof(fake_threads));
    fake_self = NULL;
    fake_create_error = 0;
    fake_create_error_after = 0;
    fake_sleep_jmp = NULL;
    fake_pause_hook = NULL;
    memset(&fake_stats, 0, sizeof(fake_stats));
}

void
fake_cpu_set(unsigned int cpu, unsigned int count)
{
    fake_cpu = cpu;
    fake_nr_cpus = count;
}

void
fake_clock_set(uint64_t now)
{
    fake_now = now;
}

struct thread *
fake_thread_get(unsigned int index)
{
    assert_true(index < fake_stats.nr_created);
    return &fake_threads[index];
}

void
fake_thread_set_self(struct thread *thread)
{
    fake_self = thread;
}

/* thread_create() fails with error once `after` threads were created. */
void
fake_thread_set_create_error(int error, unsigned int after)
{
    fake_create_error = error;
    fake_create_error_after = after;
}

void
fake_thread_set_sleep_jmp(jmp_buf *env)
{
    fake_sleep_jmp = env;
}

const struct fake_timer_stats *
fake_timer_stats(void)
{
    return &fake_stats;
}

void
fake_set_pause_hook(void (*hook)(void))
{
    fake_pause_hook = hook;
}

unsigned int
cpu_id(void)
{
    return fake_cpu;
}

unsigned int
cpu_count(void)
{
    return fake_nr_cpus;
}

bool
cpu_intr_enabled(void)
{
    return true;
}

void
cpu_pause(void)
{
    fake_stats.nr_pauses++;

    if (fake_stats.nr_pauses > FAKE_PAUSE_LIMIT) {
        fail_msg("cpu_pause: spinning forever");
    }

    if (fake_pause_hook != NULL) {
        fake_pause_hook();
    }
}

uint64_t
clock_get_time(void)
{
    return fake_now;
}

int
thread_create(struct thread **threadp, const char *name, thread_fn_t fn,
              void *arg, uint64_t cpumask)
{
    struct thread *thread;

    if (fake_create_error != 0
        && fake_stats.nr_created >= fake_create_error_after) {
        return fake_create_error;
    }

    assert_true(fake_stats.nr_created < FAKE_MAX_THREADS);
    thread = &fake_threads[fake_stats.nr_created++];
    snprintf(thread->name, sizeof(thread->name), "%s", name);
    thread->fn = fn;
    thread->arg = arg;
    thread->cpumask = cpumask;
    *threadp = thread;
    return 0;
}

struct thread *
thread_self(void)
{
    return fake_self;
}

void
thread_wakeup(struct thread *thread)
{
    fake_stats.nr_wakeups++;
    fake_stats.last_woken = thread;
}

void
thread_sleep_prepare(void)
{
    fake_stats.nr_sleep_prepare++;
}

void
thread_sleep(void)
{
    fake_stats.nr_sleep++;

    if (fake_sleep_jmp != NULL) {
        longjmp(*fake_sleep_jmp, 1);
    }
}

void
thread_sleep_cancel(void)
{
    fake_stats.nr_sleep_cancel++;
}

void
thread_preempt_disable(void)
{
    fake_stats.preempt_level++;
}

void
thread_preempt_enable(void)
{
    assert_true(fake_stats.preempt_level > 0);
    fake_stats.preempt_level--;
}

void
log_msg(unsigned int level, const char *fmt, ...)
{
    va_list ap;

    if (level == LOG_ERROR) {
        fake_stats.nr_log_errors++;
    }

    va_start(ap, fmt);
    vsnprintf(fake_stats.last_log, sizeof(fake_stats.last_log), fmt, ap);
    va_end(ap);
}
