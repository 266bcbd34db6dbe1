/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fake of the thread module for host tests: threads are records in a static
 * pool, context switches and migrations are calls the test makes
 * (fake_thread_switch(), fake_thread_migrate()), and thread_call() runs its
 * function "on" the thread's CPU by switching the fake cpu_id().  The
 * context switch runs the perfmon hook exactly as kern/thread.c does.
 */

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "arch/x86/cpu.h"
#include "fakes/fake_smp.h"
#include "kern/assert.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/thread.h"

#define FAKE_THREAD_MAX     64

static struct thread fake_threads[FAKE_THREAD_MAX];
static unsigned int fake_nr_threads;
static struct thread *fake_current[CPU_MAX];
static unsigned int fake_preempt[CPU_MAX];
static unsigned int fake_remote_calls;
static unsigned int fake_calls;
static void (*fake_call_hook)(struct thread *thread);

void
fake_ctx_enter(struct fake_ctx *saved, unsigned int cpu)
{
    saved->cpu = cpu_id();
    saved->intr = cpu_intr_enabled();
    saved->preempt = fake_preempt[cpu];
    fake_cpu_set_id(cpu);
    fake_cpu_set_intr(false);
    fake_preempt[cpu]++;
}

void
fake_ctx_exit(const struct fake_ctx *saved)
{
    fake_preempt[cpu_id()] = saved->preempt;
    fake_cpu_set_id(saved->cpu);
    fake_cpu_set_intr(saved->intr);
}

/* The idle threads' perfmon state: stays empty. */
static struct perfmon_td fake_idle_td[CPU_MAX];

void
fake_thread_reset(void)
{
    memset(fake_threads, 0, sizeof(fake_threads));
    memset(fake_current, 0, sizeof(fake_current));
    memset(fake_preempt, 0, sizeof(fake_preempt));
    memset(fake_idle_td, 0, sizeof(fake_idle_td));
    fake_nr_threads = 0;
    fake_remote_calls = 0;
    fake_calls = 0;
    fake_call_hook = NULL;
}

void
fake_thread_set_call_hook(void (*hook)(struct thread *thread))
{
    fake_call_hook = hook;
}

struct thread *
fake_thread_create(const char *name)
{
    struct thread *thread;

    assert(fake_nr_threads < FAKE_THREAD_MAX);
    thread = &fake_threads[fake_nr_threads];
    thread->id = ++fake_nr_threads;
    strncpy(thread->name, name, sizeof(thread->name) - 1);
    thread->nr_refs = 1;
    perfmon_td_init(&thread->perfmon_td);
    return thread;
}

void
fake_thread_switch(unsigned int cpu, struct thread *next)
{
    struct thread *prev = fake_current[cpu];
    struct fake_ctx ctx;

    assert(next == NULL || (!next->running && !next->exited));
    fake_ctx_enter(&ctx, cpu);

    /* NULL stands for the CPU's idle thread, which is never monitored. */
    perfmon_td_switch(prev != NULL ? &prev->perfmon_td : &fake_idle_td[cpu],
                      next != NULL ? &next->perfmon_td : &fake_idle_td[cpu]);

    if (prev != NULL) {
        prev->running = false;
    }

    if (next != NULL) {
        next->cpu = cpu;
        next->running = true;
    }

    fake_current[cpu] = next;
    fake_ctx_exit(&ctx);
}

struct thread *
fake_thread_current(unsigned int cpu)
{
    return fake_current[cpu];
}

void
fake_thread_migrate(struct thread *thread, unsigned int cpu)
{
    assert(!thread->running && cpu < cpu_count());
    thread->cpu = cpu;
}

/* Run fn as thread would, current on its CPU, in thread context. */
static void
fake_thread_run_as(struct thread *thread, void (*fn)(void *arg), void *arg)
{
    unsigned int saved_cpu = cpu_id();
    bool saved_intr = cpu_intr_enabled();

    assert(thread->running);
    fake_cpu_set_id(thread->cpu);
    fake_cpu_set_intr(true);
    assert(thread_preempt_enabled());
    fn(arg);
    fake_cpu_set_id(saved_cpu);
    fake_cpu_set_intr(saved_intr);
}

struct fake_fork {
    struct thread *child;
    int error;
};

static void
fake_thread_fork_fn(void *arg)
{
    struct fake_fork *fork = arg;

    fork->error = perfmon_thread_fork(fork->child);
}

int
fake_thread_fork(struct thread *parent, const char *name,
                 struct thread **childp)
{
    struct fake_fork fork = { .child = fake_thread_create(name) };

    fork.child->cpu = parent->cpu;
    fake_thread_run_as(parent, fake_thread_fork_fn, &fork);
    *childp = fork.child;
    return fork.error;
}

static void
fake_thread_exit_fn(void *arg)
{
    (void)arg;
    perfmon_thread_exit();
}

void
fake_thread_exit(struct thread *thread)
{
    if (!thread->running) {
        fake_thread_switch(thread->cpu, thread);
    }

    fake_thread_run_as(thread, fake_thread_exit_fn, NULL);
    fake_thread_switch(thread->cpu, NULL);
    thread->exited = true;
}

unsigned int
fake_thread_nr_remote_calls(void)
{
    return fake_remote_calls;
}

unsigned int
fake_thread_nr_calls(void)
{
    return fake_calls;
}

void
thread_ref(struct thread *thread)
{
    assert(thread->nr_refs > 0);
    thread->nr_refs++;
}

void
thread_unref(struct thread *thread)
{
    assert(thread->nr_refs > 0);
    thread->nr_refs--;
}

struct thread *
thread_self(void)
{
    return fake_current[cpu_id()];
}

unsigned int
thread_cpu(const struct thread *thread)
{
    return thread->cpu;
}

unsigned int
thread_id(const struct thread *thread)
{
    return thread->id;
}

unsigned int
thread_self_id(void)
{
    struct thread *thread = thread_self();

    return (thread != NULL) ? thread->id : 0;
}

const char *
thread_name(const struct thread *thread)
{
    return thread->name;
}

void
thread_preempt_disable(void)
{
    fake_preempt[cpu_id()]++;
}

void
thread_preempt_enable(void)
{
    assert(fake_preempt[cpu_id()] != 0);
    fake_preempt[cpu_id()]--;
}

/* No reschedule is ever due here. */
bool
thread_preempt_enable_unless_resched(void)
{
    thread_preempt_enable();
    return true;
}

bool
thread_preempt_enabled(void)
{
    return fake_preempt[cpu_id()] == 0;
}

void
fake_thread_set_stack(struct thread *thread, uint64_t lo, uint64_t hi)
{
    thread->stack_lo = lo;
    thread->stack_hi = hi;
}

/*
 * Fake threads have no stack unless a test gave one: call chains then stop
 * at the interrupted ip.
 */
bool
thread_stack_bounds(const struct thread *thread, uint64_t *lop, uint64_t *hip)
{
    if (thread == NULL || thread->stack_hi == 0) {
        return false;
    }

    *lop = thread->stack_lo;
    *hip = thread->stack_hi;
    return true;
}

struct perfmon_td *
thread_get_perfmon_td(struct thread *thread)
{
    return &thread->perfmon_td;
}

void
thread_call(struct thread *thread, thread_call_fn_t fn, void *arg)
{
    struct fake_ctx ctx;

    assert(cpu_intr_enabled());
    assert(thread->nr_refs > 0);
    fake_calls++;

    if (fake_call_hook != NULL) {
        fake_call_hook(thread);
    }

    if (thread->running) {
        if (thread->cpu != cpu_id()) {
            fake_remote_calls++;
        }

        fake_ctx_enter(&ctx, thread->cpu);
        fn(thread, true, arg);
    } else {
        /* The run queue lock of the thread's CPU would be held here. */
        fake_ctx_enter(&ctx, cpu_id());
        fn(thread, false, arg);
    }

    fake_ctx_exit(&ctx);
}

struct thread *
thread_lookup(unsigned int tid)
{
    for (unsigned int i = 0; i < fake_nr_threads; i++) {
        if (fake_threads[i].id == tid && !fake_threads[i].exited) {
            thread_ref(&fake_threads[i]);
            return &fake_threads[i];
        }
    }

    return NULL;
}

bool
thread_exited(const struct thread *thread)
{
    return thread->exited;
}
