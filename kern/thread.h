/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Kernel threads and the scheduler.
 *
 * Each CPU has a run queue, protected by its lock with interrupts disabled,
 * and an idle thread.  Scheduling is preemptive round-robin with a time
 * slice of THREAD_SLICE_TICKS; a periodic balancer moves runnable threads
 * from busy CPUs to idle ones, within each thread's affinity.
 *
 * Lifetime: a thread is reference counted.  thread_create() returns a
 * reference that the caller drops with thread_join() or thread_unref(); the
 * scheduler holds another while the thread can still run, and has dropped
 * it by the time thread_join() returns.  The structure is freed with its
 * last reference, so a thread may exit while others (a perfmon event, say)
 * still look at it.
 *
 * Context switch hook: thread_switch_hook() in thread.c is the single place
 * where a subsystem runs code for the thread leaving the CPU and the thread
 * arriving, with interrupts and preemption disabled and the run queue lock
 * held.  perfmon unloads and loads per-thread counters there.
 *
 * Sleeping: thread_sleep_prepare(), then check the condition, then
 * thread_sleep() (or thread_sleep_cancel() when it already holds); a
 * thread_wakeup() between prepare and sleep makes the sleep return at
 * once, so no wakeup is lost.  A sleep may also return without a wakeup
 * (after a preemption): callers always re-check their condition.  Sleeping
 * with preemption disabled or a spinlock held is a bug and is asserted.
 */

#ifndef KERN_THREAD_H
#define KERN_THREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/init.h"
#include "kern/macros.h"

#define THREAD_NAME_SIZE        24
#define THREAD_STACK_SIZE       16384
#define THREAD_SLICE_TICKS      10

/* Affinity masks: bit N allows CPU N; THREAD_CPUMASK_ALL allows every CPU. */
#define THREAD_CPUMASK_ALL      (~0ULL)
#define THREAD_CPUMASK(cpu)     (1ULL << (cpu))

struct thread;
struct perfmon_td;

typedef void (*thread_fn_t)(void *arg);

/*
 * Create a thread running fn(arg), allowed on the CPUs of cpumask, and make
 * it runnable.  *threadp receives a reference.  Returns 0, -EINVAL when
 * cpumask holds no online CPU, or -ENOMEM.  Thread context.
 */
int thread_create(struct thread **threadp, const char *name, thread_fn_t fn,
                  void *arg, uint64_t cpumask);

/* Terminate the calling thread.  Its resources go with its last reference. */
void thread_exit(void) __attribute__((noreturn));

/*
 * Wait for the thread to exit, then drop the caller's reference: when no
 * other reference is held, the thread's memory is back on return.
 */
void thread_join(struct thread *thread);

void thread_ref(struct thread *thread);
void thread_unref(struct thread *thread);

/* The calling thread (inline in the kernel: one GS-relative load). */
#ifdef TALLY_HOST_TEST
struct thread *thread_self(void);
#else
static inline struct thread *
thread_self(void)
{
    return cpu_local_read_ptr(thread);
}
#endif

/*
 * The CPU the thread runs on now, or, when it is not running, the CPU whose
 * run queue holds it (where it will run next unless migrated).
 */
unsigned int thread_cpu(const struct thread *thread);

unsigned int thread_id(const struct thread *thread);

/* Where a thread's id lies in its structure (checked by kern/thread.c). */
#define THREAD_ID_OFFSET        8

/*
 * The id of the calling thread, 0 before the CPU has one: inline in the
 * kernel, through the current thread's pointer, for sample records.  Any
 * context, NMI included (the id never changes).
 */
#ifdef TALLY_HOST_TEST
unsigned int thread_self_id(void);
#else
static inline unsigned int
thread_self_id(void)
{
    const char *thread = (const char *)thread_self();

    return (thread == NULL)
           ? 0 : *(const unsigned int *)(thread + THREAD_ID_OFFSET);
}
#endif

const char *thread_name(const struct thread *thread);

/*
 * Copy the name of the thread with id tid, while it exists (running,
 * sleeping, or exited and still referenced), into buf.  Returns 0, or
 * -ENOENT.  Thread or interrupt context, not NMI.
 */
int thread_name_of(unsigned int tid, char *buf, size_t size);

/*
 * The thread with id tid if it has not exited, with a reference the caller
 * drops with thread_unref(), or NULL.  thread_exited(): whether the thread
 * has run for the last time.  Thread or interrupt context, not NMI.
 */
struct thread *thread_lookup(unsigned int tid);
bool thread_exited(const struct thread *thread);

/*
 * The job a thread runs for: an opaque word of the shell's background
 * commands (kern/shell_job.c), NULL for the shell's own work.  A new thread
 * takes its creator's; thread_set_job() sets the caller's, before it
 * creates any.  Any context.
 */
void *thread_job(const struct thread *thread);
void thread_set_job(void *job);

/*
 * The thread's stack, [*lop, *hip): false for the boot and idle contexts,
 * whose stacks the scheduler did not allocate.  Any context, NMI included
 * (for call chains).
 */
bool thread_stack_bounds(const struct thread *thread, uint64_t *lop,
                         uint64_t *hip);

/*
 * Change the CPUs a thread may run on, effective at once: a thread running
 * or queued on a CPU outside the new mask is moved.  When thread is the
 * caller, the call returns on an allowed CPU.  Returns 0 or -EINVAL when
 * the mask holds no online CPU.  Thread context.
 */
int thread_set_affinity(struct thread *thread, uint64_t cpumask);
uint64_t thread_get_affinity(const struct thread *thread);

void thread_yield(void);

void thread_sleep_prepare(void);
void thread_sleep(void);
void thread_sleep_cancel(void);

/* Make a sleeping thread runnable.  Any context but NMI. */
void thread_wakeup(struct thread *thread);

/* Sleep for at least ms milliseconds. */
void thread_msleep(uint64_t ms);

/*
 * Nesting counts; the scheduler does not preempt while disabled.  In the
 * kernel they are inline, a GS-relative instruction or two, because they
 * sit on every hot path (perfmon reads, xcalls, spinlocks); host tests
 * supply their own.
 */
#ifdef TALLY_HOST_TEST

void thread_preempt_disable(void);
void thread_preempt_enable(void);
bool thread_preempt_enable_unless_resched(void);
bool thread_preempt_enabled(void);

#else /* TALLY_HOST_TEST */

/* The rare part of thread_preempt_enable(): a reschedule is due. */
void thread_preempt_enable_resched(void);

static inline void
thread_preempt_disable(void)
{
    cpu_local_add(preempt_count, 1);
    barrier();
}

static inline void
thread_preempt_enable(void)
{
    barrier();
    assert(cpu_local_read(preempt_count) != 0);
    cpu_local_add(preempt_count, -1);

    if (unlikely(cpu_local_read(need_resched) != 0)) {
        thread_preempt_enable_resched();
    }
}

/*
 * thread_preempt_enable() for a path that must call nothing: when a
 * reschedule is due, preemption stays disabled and it returns false; the
 * caller then calls thread_preempt_enable(), which reschedules.  Only for
 * a path that disabled preemption itself, with nothing in between that
 * could enable it: the count is then known not to be 0, and is not
 * asserted (the host tests' version checks it).
 */
static inline bool
thread_preempt_enable_unless_resched(void)
{
    barrier();
    cpu_local_add(preempt_count, -1);

    if (unlikely(cpu_local_read(need_resched) != 0)) {
        cpu_local_add(preempt_count, 1);
        return false;
    }

    return true;
}

static inline bool
thread_preempt_enabled(void)
{
    return cpu_local_read(preempt_count) == 0;
}

#endif /* TALLY_HOST_TEST */

/* The perfmon state embedded in each thread. */
struct perfmon_td *thread_get_perfmon_td(struct thread *thread);

/*
 * Run fn(thread, running, arg) with interrupts disabled at a point where
 * the thread cannot be switched in or out:
 *   - running == true: on the CPU the thread is running on, while it is the
 *     current thread there (through an xcall, or directly when thread is
 *     the caller);
 *   - running == false: on the calling CPU, with the run queue that holds
 *     the thread locked, so it cannot start running during fn.
 * fn must not sleep.  Thread context with interrupts enabled.
 */
typedef void (*thread_call_fn_t)(struct thread *thread, bool running,
                                 void *arg);
void thread_call(struct thread *thread, thread_call_fn_t fn, void *arg);


/*
 * Start the scheduler on the calling CPU: the calling context becomes the
 * CPU's idle thread and never returns.
 */
void thread_run_idle(void) __attribute__((noreturn));

/*
 * The scheduler's part of the clock tick (kern/clock.c): preemption and
 * load balancing decisions on the calling CPU.  Interrupt context.
 */
void thread_tick(void);

/*
 * Make the calling application processor schedulable (its idle thread and
 * counters), as it comes online (arch/x86/smp.c).  Interrupts disabled.
 */
void thread_setup_ap(void);

INIT_OP_DECLARE(thread_setup);

#endif /* KERN_THREAD_H */
