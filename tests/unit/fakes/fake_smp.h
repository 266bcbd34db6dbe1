/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Control interface of the host fakes of the SMP kernel core: CPUs
 * (cpu.c), threads and the scheduler (thread.c), xcalls (xcall.c), timers
 * (timer.c), the clock (clock.c) and system counters (syscnt.c).  All run
 * in the one host thread of the test: "CPU N" is a value of cpu_id() that
 * the fakes switch while running code "there", and a context switch is a
 * call the test makes.  The fakes check the preconditions the real
 * modules assert (interrupts enabled for xcalls, and so on).
 */

#ifndef TESTS_UNIT_FAKES_FAKE_SMP_H
#define TESTS_UNIT_FAKES_FAKE_SMP_H

#include <stdbool.h>
#include <stdint.h>

#include "kern/perfmon_types.h"
#include "kern/thread.h"
#include "kern/timer.h"

/* ---- cpu.c ---- */

/* nr_cpus online, running as CPU 0, interrupts enabled, TSC at 3 GHz. */
void fake_cpu_reset(unsigned int nr_cpus);
void fake_cpu_set_id(unsigned int cpu);
void fake_cpu_set_intr(bool enabled);
void fake_cpu_set_tsc_freq(uint64_t hz);
void fake_cpu_advance_tsc(uint64_t cycles);

/*
 * The host holds the virtual CPUs for cycles: the TSC moves on, the
 * clock's per-CPU ticks (clock_cpu_ticks) do not.  fake_cpu_run_tsc(): the
 * TSC less the cycles stalled, which the ticks follow.
 */
void fake_cpu_stall(uint64_t cycles);
uint64_t fake_cpu_run_tsc(void);
/*
 * Called by every cpu_pause(), the spin-wait hint: lets a test deliver
 * what the code is spinning for (an NMI it sent itself, say).  NULL: none.
 */
void fake_cpu_set_pause_hook(void (*fn)(void));

/* ---- spinlock.c ---- */

struct spinlock;

/*
 * The next time a CPU takes a lock another fake CPU holds, call fn with
 * it first, once: fn plays the holder up to its unlock (the taker would
 * spin until then), and must leave the lock free.  NULL: none (taking a
 * held lock is an assertion failure).
 */
void fake_spinlock_set_contended_hook(void (*fn)(struct spinlock *lock));

/* ---- thread.c ---- */

/*
 * Run on another CPU as an interrupt handler would: save the current CPU,
 * interrupt and preemption state, then switch to cpu with interrupts and
 * preemption disabled.  fake_ctx_exit() restores the saved state.
 */
struct fake_ctx {
    unsigned int cpu;
    bool intr;
    unsigned int preempt;
};

void fake_ctx_enter(struct fake_ctx *saved, unsigned int cpu);
void fake_ctx_exit(const struct fake_ctx *saved);

/*
 * A fake thread: created not running, queued on CPU 0, with one reference
 * (the creator's).  A thread is "running" once a simulated context switch
 * made it current on a CPU.
 */
struct thread {
    char name[THREAD_NAME_SIZE];
    unsigned int id;
    int nr_refs;
    bool running;
    bool exited;
    unsigned int cpu;                   /* running on, or queued on */
    uint64_t stack_lo, stack_hi;        /* its stack, when a test gave one */
    struct perfmon_td perfmon_td;
};

void fake_thread_reset(void);
struct thread *fake_thread_create(const char *name);

/*
 * Context switch on cpu: the current thread there (if any) leaves, next
 * (NULL: the idle thread) arrives; perfmon's hook runs as in thread.c,
 * with interrupts and preemption disabled.  next must not be running.
 */
void fake_thread_switch(unsigned int cpu, struct thread *next);

/* The thread current on cpu, or NULL. */
struct thread *fake_thread_current(unsigned int cpu);

/* Give a thread a stack (thread_stack_bounds()): [lo, hi). */
void fake_thread_set_stack(struct thread *thread, uint64_t lo, uint64_t hi);

/* Move a thread that is not running to another CPU's queue. */
void fake_thread_migrate(struct thread *thread, unsigned int cpu);

/*
 * parent, running, creates a thread: perfmon's creation hook runs in
 * parent, as in thread_create().  The new thread (in *childp even on
 * error) is queued on parent's CPU, not running; returns the hook's error.
 */
int fake_thread_fork(struct thread *parent, const char *name,
                     struct thread **childp);

/*
 * The thread exits: it runs perfmon's exit hook (switched in on its CPU
 * first when it was not running), is switched out, and never runs again.
 */
void fake_thread_exit(struct thread *thread);

/* Calls of thread_call() that ran fn on another CPU (an xcall). */
unsigned int fake_thread_nr_remote_calls(void);

/* Calls of thread_call(), wherever fn ran. */
unsigned int fake_thread_nr_calls(void);

/*
 * Called with the target thread at the start of each thread_call(), in
 * the caller's context: lets a test act "elsewhere" at that moment.
 */
void fake_thread_set_call_hook(void (*hook)(struct thread *thread));

/*
 * Called by each thread_msleep() (fakes/thread_none.c): where a sleeping
 * thread lets others run, a test may run them (NULL: none).
 */
void fake_thread_set_msleep_hook(void (*hook)(void));

/* ---- xcall.c ---- */

void fake_xcall_reset(void);

/* xcalls sent to another CPU than the caller's. */
unsigned int fake_xcall_nr_remote(void);

/* xcalls (local ones included) that ran on cpu. */
unsigned int fake_xcall_nr_on(unsigned int cpu);

/*
 * Called with the target CPU just before each xcall runs there, in the
 * caller's context: lets a test act "on another CPU" at that moment.
 */
void fake_xcall_set_hook(void (*hook)(unsigned int cpu));

/* ---- timer.c ---- */

void fake_timer_reset(void);

/*
 * Run every scheduled timer whose time has come (fake clock), in thread
 * context on the current CPU, the earliest first.  Returns how many ran.
 */
unsigned int fake_timer_run_due(void);

/* ---- clock.c ---- */

void fake_clock_set(uint64_t ticks);
void fake_clock_advance_ms(uint64_t ms);

/* ---- syscnt.c ---- */

void fake_syscnt_reset(void);

#endif /* TESTS_UNIT_FAKES_FAKE_SMP_H */
