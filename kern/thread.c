/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Threads and the scheduler.
 *
 * One file, over the size of most modules, on purpose: every section below
 * (run queues, switch, sleep, creation, migration, balancing, thread_call)
 * follows the same locking protocol around the run queues and threads in
 * transit, and that protocol is easier to check when it is read in one
 * place.
 *
 * Locking:
 *   - A run queue's lock (taken with interrupts disabled) protects its
 *     list, its current thread, and, for every thread whose `cpu` names
 *     that run queue: state, on_runq and cpu itself.  A thread moving to
 *     another run queue ("in transit") gets its new cpu written under the old
 *     lock, and is enqueued under the new one, so whoever reads `cpu` and
 *     locks that run queue sees a consistent thread.
 *   - Two run queue locks are never held together except by the balancer,
 *     which takes them in CPU order.  Work that needs another lock after a
 *     switch (waking a joiner, freeing a dead thread, enqueueing a migrated
 *     one) is done by the switch tail after the run queue lock is dropped.
 *   - thread_list_lock protects the list of all threads (for `threads`);
 *     it may be taken under a run queue lock, never the other way round.
 *
 * Preemption: a per-CPU count in struct cpu (a single GS-relative
 * instruction changes it, so an interrupt cannot split the update).  A
 * thread never sleeps with a nonzero count; the only count that crosses a
 * context switch is the run queue lock's own, released by the thread that
 * is switched in.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/trap.h"
#include "kern/assert.h"
#include "kern/clock.h"
#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/init.h"
#include "kern/kmem.h"
#include "kern/log.h"
#include "kern/mem.h"
#include "kern/macros.h"
#include "kern/panic.h"
#include "kern/perfmon.h"
#include "kern/perfmon_switchrec.h"
#include "kern/perfmon_types.h"
#include "kern/perfmon_region.h"
#include "kern/printf.h"
#include "kern/runq.h"
#include "kern/shell.h"
#include "kern/spinlock.h"
#include "kern/string.h"
#include "kern/swevent.h"
#include "kern/syscnt.h"
#include "kern/thread.h"
#include "kern/timer.h"
#include "kern/xcall.h"

/* thread->joiner once the thread has exited: no joiner may register. */
#define THREAD_JOIN_DONE        ((struct thread *)1)

/*
 * The scheduler's reference, as the top bit of thread->refcount: set from
 * creation until the switch tail after the thread's last run.  Its being
 * clear is what "exited" means, so one atomic operation both drops that
 * reference and publishes the exit: whoever sees the thread exited knows
 * the scheduler no longer holds it, and a join's return leaves the caller's
 * reference as the only one the exit left.
 */
#define THREAD_REF_LIVE         0x80000000u

/* What the switch tail must do with the thread switched out. */
#define THREAD_TAIL_NONE        0
#define THREAD_TAIL_DEAD        1   /* release it */
#define THREAD_TAIL_MOVE        2   /* enqueue it on its new CPU */

#define THREAD_STATE_RUNNING    0   /* running or runnable */
#define THREAD_STATE_SLEEPING   1
#define THREAD_STATE_DEAD       2

/*
 * A thread.  Locking keys: (r) the run queue named by cpu, (l) the list
 * lock, (a) atomic, (c) constant after creation, (s) the thread itself.
 */
struct thread {
    uint64_t sp;                    /* (r) saved stack pointer, when off CPU */
    unsigned int id;                /* (c) */
    char name[THREAD_NAME_SIZE];    /* (c) */
    unsigned int state;             /* (r) */
    unsigned int cpu;               /* (r) run queue holding it */
    unsigned int last_cpu;          /* (r) where it last ran */
    unsigned int move_to;           /* (r) target of a pending move */
    bool moving;                    /* (r) leaving its CPU at this switch */
    bool on_runq;                   /* (r) queued, not current */
    bool idle;                      /* (c) a CPU's idle thread */
    uint64_t cpumask;               /* (a) affinity */
    unsigned int slice;             /* (r) ticks left in its time slice */
    struct runq_node rq_node;       /* (r) run queue list */
    unsigned int refcount;          /* (a) references, and THREAD_REF_LIVE */
    struct thread *joiner;          /* (a) thread_join's caller, or DONE */
    void *stack;                    /* (c) NULL for boot and AP contexts */
    thread_fn_t fn;                 /* (c) */
    void *arg;                      /* (c) */
    uint64_t nr_switches;           /* (r) times switched in */
    struct thread *all_next;        /* (l) list of all threads */
    struct perfmon_td perfmon_td;   /* perfmon's, see perfmon_types.h */
    void *job;                      /* (s) the shell job, see thread_job() */
};

_Static_assert(offsetof(struct thread, id) == THREAD_ID_OFFSET,
               "thread_self_id() reads the id at THREAD_ID_OFFSET");

/*
 * A CPU's run queue.  The list holds runnable threads that are not current,
 * in FIFO order.  switch_prev carries the thread switched out to the thread
 * switched in, which finishes the switch.
 */
struct thread_runq {
    struct spinlock lock;
    struct thread *current;
    struct thread *idle;
    struct runq_list list;
    struct thread *switch_prev;
    struct syscnt sc_switches;
    struct syscnt sc_migrations;
    uint64_t idle_ticks;            /* ticks taken while idle, for `cpus` */
    uint64_t busy_ticks;
} __aligned(CACHE_LINE_SIZE);

static struct thread_runq thread_runqs[CPU_MAX];

static struct spinlock thread_list_lock = SPINLOCK_INITIALIZER;
static struct thread *thread_list;
static unsigned int thread_next_id;
static bool thread_ready;


void thread_switch_context(uint64_t *prev_sp, uint64_t next_sp);
void thread_start_entry(void);

/* Preemption ------------------------------------------------------------ */

static void thread_preempt_point(void);

void
thread_preempt_enable_resched(void)
{
    if (cpu_local_read(preempt_count) == 0 && thread_ready) {
        thread_preempt_point();
    }
}

/* Accessors ------------------------------------------------------------- */

static struct thread_runq *
thread_runq_local(void)
{
    return &thread_runqs[cpu_id()];
}

unsigned int
thread_cpu(const struct thread *thread)
{
    return READ_ONCE(thread->cpu);
}

unsigned int
thread_id(const struct thread *thread)
{
    return thread->id;
}

const char *
thread_name(const struct thread *thread)
{
    return thread->name;
}

uint64_t
thread_get_affinity(const struct thread *thread)
{
    return __atomic_load_n(&thread->cpumask, __ATOMIC_ACQUIRE);
}

int
thread_name_of(unsigned int tid, char *buf, size_t size)
{
    unsigned long flags;
    int error = -ENOENT;

    spinlock_lock_intr_save(&thread_list_lock, &flags);

    for (const struct thread *t = thread_list; t != NULL; t = t->all_next) {
        if (t->id == tid) {
            strlcpy(buf, t->name, size);
            error = 0;
            break;
        }
    }

    spinlock_unlock_intr_restore(&thread_list_lock, flags);
    return error;
}

struct thread *
thread_lookup(unsigned int tid)
{
    struct thread *found = NULL;
    unsigned long flags;

    spinlock_lock_intr_save(&thread_list_lock, &flags);

    for (struct thread *t = thread_list; t != NULL; t = t->all_next) {
        unsigned int refs;

        if (t->id != tid) {
            continue;
        }

        /* A reference only while the thread lives. */
        refs = __atomic_load_n(&t->refcount, __ATOMIC_ACQUIRE);

        while ((refs & THREAD_REF_LIVE) != 0
               && !__atomic_compare_exchange_n(&t->refcount, &refs, refs + 1,
                                               false, __ATOMIC_ACQ_REL,
                                               __ATOMIC_ACQUIRE)) {
        }

        found = (refs & THREAD_REF_LIVE) != 0 ? t : NULL;
        break;
    }

    spinlock_unlock_intr_restore(&thread_list_lock, flags);
    return found;
}

bool
thread_exited(const struct thread *thread)
{
    return (__atomic_load_n(&thread->refcount, __ATOMIC_ACQUIRE)
            & THREAD_REF_LIVE) == 0;
}

void *
thread_job(const struct thread *thread)
{
    return READ_ONCE(thread->job);
}

void
thread_set_job(void *job)
{
    WRITE_ONCE(thread_self()->job, job);
}

bool
thread_stack_bounds(const struct thread *thread, uint64_t *lop, uint64_t *hip)
{
    if (thread == NULL || thread->stack == NULL) {
        return false;
    }

    *lop = (uint64_t)(uintptr_t)thread->stack;
    *hip = *lop + THREAD_STACK_SIZE;
    return true;
}

struct perfmon_td *
thread_get_perfmon_td(struct thread *thread)
{
    return &thread->perfmon_td;
}

static uint64_t
thread_online_mask(void)
{
    unsigned int n = cpu_count();

    return n >= 64 ? ~0ULL : (1ULL << n) - 1;
}

static bool
thread_allowed(const struct thread *thread, unsigned int cpu)
{
    return (thread_get_affinity(thread) & THREAD_CPUMASK(cpu)) != 0;
}

static unsigned int
thread_runq_nr_queued(unsigned int cpu)
{
    return READ_ONCE(thread_runqs[cpu].list.count);
}

/*
 * The allowed online CPU with the fewest threads (queued plus running).
 * Loads are read without locks: a stale value only makes a placement less
 * balanced, never wrong.
 */
static unsigned int
thread_pick_cpu(const struct thread *thread)
{
    uint64_t mask = thread_get_affinity(thread) & thread_online_mask();
    unsigned int loads[CPU_MAX], n = cpu_count();
    int cpu;

    for (unsigned int i = 0; i < n; i++) {
        loads[i] = thread_runq_nr_queued(i)
                   + (READ_ONCE(thread_runqs[i].current)
                      != thread_runqs[i].idle);
    }

    cpu = runq_pick_cpu(loads, n, mask);
    assert(cpu >= 0);
    return cpu;
}

/* References ------------------------------------------------------------ */

void
thread_ref(struct thread *thread)
{
    unsigned int prev = __atomic_fetch_add(&thread->refcount, 1,
                                           __ATOMIC_RELAXED);

    assert(prev != 0);
}

static void
thread_destroy(struct thread *thread)
{
    unsigned long flags;
    struct thread **p;

    spinlock_lock_intr_save(&thread_list_lock, &flags);

    for (p = &thread_list; *p != thread; p = &(*p)->all_next) {
        assert(*p != NULL);
    }

    *p = thread->all_next;
    spinlock_unlock_intr_restore(&thread_list_lock, flags);

    kmem_free(thread->stack, THREAD_STACK_SIZE);
    kmem_free(thread, sizeof(*thread));
}

void
thread_unref(struct thread *thread)
{
    unsigned int prev = __atomic_fetch_sub(&thread->refcount, 1,
                                           __ATOMIC_ACQ_REL);

    assert((prev & ~THREAD_REF_LIVE) != 0);

    if (prev == 1) {
        thread_destroy(thread);
    }
}

/* Run queues ------------------------------------------------------------ */

static void
thread_runq_enqueue(struct thread_runq *runq, struct thread *thread)
{
    assert(spinlock_held(&runq->lock));
    assert(!thread->on_runq && !thread->idle);
    runq_list_push(&runq->list, &thread->rq_node);
    thread->on_runq = true;
}

static struct thread *
thread_runq_dequeue(struct thread_runq *runq)
{
    struct runq_node *node;
    struct thread *thread;

    assert(spinlock_held(&runq->lock));
    node = runq_list_pop(&runq->list);

    if (node == NULL) {
        return NULL;
    }

    thread = structof(node, struct thread, rq_node);
    thread->on_runq = false;
    return thread;
}

static void
thread_runq_remove(struct thread_runq *runq, struct thread *thread)
{
    assert(thread->on_runq);
    runq_list_remove(&runq->list, &thread->rq_node);
    thread->on_runq = false;
}

/*
 * Lock the run queue that holds thread, coping with a concurrent move:
 * re-check cpu once the lock is held.
 */
static struct thread_runq *
thread_lock_runq(struct thread *thread, unsigned long *flagsp)
{
    for (;;) {
        unsigned int cpu = READ_ONCE(thread->cpu);
        struct thread_runq *runq = &thread_runqs[cpu];

        spinlock_lock_intr_save(&runq->lock, flagsp);

        if (thread->cpu == cpu) {
            return runq;
        }

        spinlock_unlock_intr_restore(&runq->lock, *flagsp);
    }
}

static void
thread_kick(unsigned int cpu)
{
    thread_preempt_disable();

    if (cpu == cpu_id()) {
        cpu_local_write(need_resched, 1);
    } else {
        lapic_ipi_send(cpu_table[cpu].apic_id, TRAP_VEC_RESCHED);
    }

    thread_preempt_enable();
}

/*
 * Put a runnable thread that is on no run queue (in transit, owned by the
 * caller) onto the run queue its cpu field names, set under the previous
 * run queue's lock.  Should its affinity have changed meanwhile, pick
 * again: the move to another queue follows the same protocol.
 */
static void
thread_enqueue_on(struct thread *thread)
{
    for (;;) {
        unsigned int cpu = thread->cpu;
        struct thread_runq *runq = &thread_runqs[cpu];
        unsigned long flags;
        bool kick;

        spinlock_lock_intr_save(&runq->lock, &flags);

        if (!thread_allowed(thread, cpu)) {
            thread->cpu = thread_pick_cpu(thread);
            spinlock_unlock_intr_restore(&runq->lock, flags);
            continue;
        }

        thread_runq_enqueue(runq, thread);
        kick = runq->current == runq->idle;
        spinlock_unlock_intr_restore(&runq->lock, flags);

        if (kick) {
            thread_kick(cpu);
        }

        return;
    }
}

/* Context switch -------------------------------------------------------- */

/*
 * The single hook point of the context switch: runs on the switching CPU
 * with interrupts and preemption disabled and the run queue lock held.
 */
static void
thread_switch_hook(struct thread *prev, struct thread *next, unsigned int cpu)
{
    /*
     * Counted for prev: its events are still loaded.  The same test
     * covers switch recordings (kern/perfmon_switchrec.h).
     */
    if (unlikely(swevent_watched(SWEVENT_CONTEXT_SWITCH))) {
        swevent_count(SWEVENT_CONTEXT_SWITCH, 1);
        perfmon_switchrec_write(prev, next, !prev->idle
                                && prev->state == THREAD_STATE_RUNNING);
    }

    perfmon_td_switch(&prev->perfmon_td, &next->perfmon_td);

    /* Counted for next, once its events are loaded. */
    if (next->last_cpu != cpu && !next->idle) {
        swevent_add(SWEVENT_MIGRATION, 1);
        syscnt_inc(&thread_runqs[cpu].sc_migrations);
    }
}

/*
 * Complete the switch away from prev on its old CPU, with that run queue
 * still locked: only now that prev is off the CPU may its cpu field name
 * the run queue it moves to (thread_call() trusts `cpu` and `current`).
 */
static unsigned int
thread_switch_finish(struct thread *prev)
{
    if (prev == NULL) {
        return THREAD_TAIL_NONE;
    }

    if (prev->state == THREAD_STATE_DEAD) {
        return THREAD_TAIL_DEAD;
    }

    if (prev->moving) {
        prev->moving = false;
        prev->cpu = prev->move_to;
        return THREAD_TAIL_MOVE;
    }

    return THREAD_TAIL_NONE;
}

/*
 * Drop the scheduler's reference on a thread that has run for the last
 * time, and tell thread_join's caller, if any, that it is gone.
 */
static void
thread_release(struct thread *thread)
{
    struct thread *joiner;
    unsigned long flags;
    unsigned int prev;

    /*
     * A joiner that comes after the exchange spins until the reference is
     * dropped: nothing may delay the CPU between the two.
     */
    flags = cpu_intr_save();
    joiner = __atomic_exchange_n(&thread->joiner, THREAD_JOIN_DONE,
                                 __ATOMIC_SEQ_CST);
    prev = __atomic_fetch_and(&thread->refcount, ~THREAD_REF_LIVE,
                              __ATOMIC_ACQ_REL);
    cpu_intr_restore(flags);
    assert((prev & THREAD_REF_LIVE) != 0);

    if (prev == THREAD_REF_LIVE) {
        thread_destroy(thread);
    }

    /* The joiner held a reference on the thread: it was not destroyed. */
    if (joiner != NULL) {
        thread_wakeup(joiner);
        thread_unref(joiner);       /* taken by thread_join */
    }
}

/*
 * Work left by the switch for the thread switched in, done after the run
 * queue lock is released.  action was decided under that lock: prev is
 * then either dead or in transit, so nobody else can run or requeue it
 * before this.
 */
static void
thread_switch_tail(struct thread *prev, unsigned int action)
{
    if (action == THREAD_TAIL_DEAD) {
        thread_release(prev);
    } else if (action == THREAD_TAIL_MOVE) {
        thread_enqueue_on(prev);
    }
}

/*
 * Choose what to do with prev, the thread leaving: requeue it here, leave
 * it off (sleeping or dead), or send it to another CPU (affinity).  Sets
 * prev->cpu for a move, under this run queue's lock.
 */
static void
thread_put_prev(struct thread_runq *runq, struct thread *prev,
                unsigned int cpu)
{
    if (prev->idle || prev->state != THREAD_STATE_RUNNING) {
        return;
    }

    if (thread_allowed(prev, cpu)) {
        thread_runq_enqueue(runq, prev);
    } else {
        /* Moved by thread_switch_finish, enqueued by the switch tail. */
        prev->move_to = thread_pick_cpu(prev);
        prev->moving = true;
    }
}

/* A context switch, from the hook to the thread switched in. */
PERFMON_REGION_DEFINE(switch, "switch");

static void
thread_schedule(bool sleep)
{
    struct thread_runq *runq;
    struct thread *prev, *next;
    unsigned int cpu, action;
    unsigned long flags;

    thread_preempt_disable();
    cpu = cpu_id();
    runq = &thread_runqs[cpu];
    spinlock_lock_intr_save(&runq->lock, &flags);
    thread_preempt_enable();    /* the lock's own count remains */

    prev = runq->current;
    cpu_local_write(need_resched, 0);

    /*
     * Preempted between sleep_prepare and sleep: the thread stays runnable,
     * and its sleep returns at once (callers re-check their condition).
     */
    if (!sleep && prev->state == THREAD_STATE_SLEEPING) {
        prev->state = THREAD_STATE_RUNNING;
    }

    thread_put_prev(runq, prev, cpu);
    next = thread_runq_dequeue(runq);

    if (next == NULL) {
        next = runq->idle;
    }

    if (next == prev) {
        spinlock_unlock_intr_restore(&runq->lock, flags);
        return;
    }

    PERFMON_REGION_BEGIN(switch);
    thread_switch_hook(prev, next, cpu);
    next->cpu = cpu;
    next->last_cpu = cpu;
    next->slice = THREAD_SLICE_TICKS;
    next->nr_switches++;
    runq->current = next;
    cpu_table[cpu].idle = next->idle;
    cpu_local_write_ptr(thread, next);
    runq->switch_prev = prev;
    syscnt_inc(&runq->sc_switches);
    thread_switch_context(&prev->sp, next->sp);

    /* Back in prev, possibly on another CPU. */
    runq = thread_runq_local();
    prev = runq->switch_prev;
    runq->switch_prev = NULL;
    PERFMON_REGION_END(switch);
    action = thread_switch_finish(prev);
    spinlock_unlock_intr_restore(&runq->lock, flags);
    thread_switch_tail(prev, action);
}

static void
thread_preempt_point(void)
{
    if (cpu_intr_enabled()) {
        thread_schedule(false);
    }
}

/* Called by trap_dispatch() at the end of every device interrupt. */
void
trap_intr_exit(struct trap_frame *frame)
{
    swevent_add(SWEVENT_INTERRUPT, 1);

    if (cpu_local_read(need_resched) && cpu_local_read(preempt_count) == 0
        && (frame->rflags & CPU_RFLAGS_IF) && thread_ready) {
        thread_schedule(false);
    }
}

void
thread_yield(void)
{
    assert(thread_preempt_enabled());
    thread_schedule(false);
}

/* Entered on a new thread's stack with the run queue lock held. */
static void __attribute__((noreturn))
thread_start(void)
{
    struct thread_runq *runq = thread_runq_local();
    struct thread *self = runq->current, *prev = runq->switch_prev;
    unsigned int action;

    runq->switch_prev = NULL;
    PERFMON_REGION_END(switch);
    action = thread_switch_finish(prev);
    spinlock_unlock(&runq->lock);
    cpu_intr_enable();
    thread_switch_tail(prev, action);
    self->fn(self->arg);
    thread_exit();
}

/* Sleep and wakeup ------------------------------------------------------ */

/* Change the caller's state under its run queue's lock (see wakeup). */
static void
thread_set_self_state(unsigned int state)
{
    struct thread_runq *runq;
    unsigned long flags;

    thread_preempt_disable();
    runq = thread_runq_local();
    spinlock_lock_intr_save(&runq->lock, &flags);
    thread_self()->state = state;
    spinlock_unlock_intr_restore(&runq->lock, flags);
    thread_preempt_enable();
}

void
thread_sleep_prepare(void)
{
    thread_set_self_state(THREAD_STATE_SLEEPING);
}

void
thread_sleep_cancel(void)
{
    thread_set_self_state(THREAD_STATE_RUNNING);
}

void
thread_sleep(void)
{
    assert(thread_preempt_enabled());
    assert(cpu_intr_enabled());
    thread_schedule(true);
}

void
thread_wakeup(struct thread *thread)
{
    struct thread_runq *runq;
    unsigned long flags;
    unsigned int target;

    runq = thread_lock_runq(thread, &flags);

    if (thread->state != THREAD_STATE_SLEEPING) {
        spinlock_unlock_intr_restore(&runq->lock, flags);
        return;
    }

    thread->state = THREAD_STATE_RUNNING;

    /* Not switched out yet (between prepare and sleep): nothing to do. */
    if (runq->current == thread || thread->on_runq) {
        spinlock_unlock_intr_restore(&runq->lock, flags);
        return;
    }

    target = thread->cpu;

    if (!thread_allowed(thread, target)) {
        target = thread_pick_cpu(thread);
    }

    if (target == thread->cpu) {
        bool kick = runq->current == runq->idle;

        thread_runq_enqueue(runq, thread);
        spinlock_unlock_intr_restore(&runq->lock, flags);

        if (kick) {
            thread_kick(target);
        }

        return;
    }

    thread->cpu = target;
    spinlock_unlock_intr_restore(&runq->lock, flags);
    thread_enqueue_on(thread);
}

static void
thread_msleep_wake(struct timer *timer)
{
    thread_wakeup(timer->arg);
}

void
thread_msleep(uint64_t ms)
{
    uint64_t deadline = clock_deadline_from_ms(ms);
    struct timer timer;

    timer_init(&timer, thread_msleep_wake, TIMER_INTR);
    timer.arg = thread_self();

    while (clock_get_time() < deadline) {
        thread_sleep_prepare();
        timer_schedule(&timer, deadline);

        if (clock_get_time() >= deadline) {
            thread_sleep_cancel();
            break;
        }

        thread_sleep();
    }

    timer_cancel(&timer);
}

/* Creation, exit, join -------------------------------------------------- */

static void
thread_init_common(struct thread *thread, const char *name, uint64_t cpumask)
{
    unsigned long flags;

    strlcpy(thread->name, name, sizeof(thread->name));
    thread->state = THREAD_STATE_RUNNING;
    thread->cpumask = cpumask;
    thread->refcount = THREAD_REF_LIVE;
    thread->slice = THREAD_SLICE_TICKS;
    perfmon_td_init(&thread->perfmon_td);

    spinlock_lock_intr_save(&thread_list_lock, &flags);
    thread->id = thread_next_id++;
    thread->all_next = thread_list;
    thread_list = thread;
    spinlock_unlock_intr_restore(&thread_list_lock, flags);
}

int
thread_create(struct thread **threadp, const char *name, thread_fn_t fn,
              void *arg, uint64_t cpumask)
{
    struct thread *thread;
    uint64_t *sp;
    int error;

    if ((cpumask & thread_online_mask()) == 0) {
        return -EINVAL;
    }

    thread = kmem_zalloc(sizeof(*thread));

    if (thread == NULL) {
        return -ENOMEM;
    }

    thread->stack = kmem_alloc_aligned(THREAD_STACK_SIZE, 16);

    if (thread->stack == NULL) {
        kmem_free(thread, sizeof(*thread));
        return -ENOMEM;
    }

    thread->fn = fn;
    thread->arg = arg;
    thread->job = thread_job(thread_self());
    thread_init_common(thread, name, cpumask);
    thread->refcount = THREAD_REF_LIVE | 1;     /* and the caller's */

    /* A frame as thread_switch_context leaves it: r15..rbp, then return. */
    sp = (uint64_t *)((char *)thread->stack + THREAD_STACK_SIZE);
    *--sp = (uint64_t)thread_start_entry;
    *--sp = 0;                      /* rbp */
    *--sp = (uint64_t)thread_start; /* rbx */
    for (unsigned int i = 0; i < 4; i++) {
        *--sp = 0;                  /* r12..r15 */
    }
    thread->sp = (uint64_t)sp;

    thread_preempt_disable();
    thread->cpu = thread_allowed(thread, cpu_id()) ? cpu_id()
                                                   : thread_pick_cpu(thread);
    thread->last_cpu = thread->cpu;
    thread_preempt_enable();

    /* Counted by the inherited events that count the creator. */
    error = perfmon_thread_fork(thread);

    if (error) {
        thread_destroy(thread);
        return error;
    }

    thread_enqueue_on(thread);
    *threadp = thread;
    return 0;
}

void
thread_exit(void)
{
    struct thread *self = thread_self();

    assert(!self->idle);
    perfmon_thread_exit();
    thread_set_self_state(THREAD_STATE_DEAD);
    thread_schedule(true);
    panic("thread: dead thread %s scheduled again", self->name);
}

void
thread_join(struct thread *thread)
{
    struct thread *self = thread_self(), *expected = NULL;

    assert(thread != self);

    /*
     * Register as the joiner, holding a reference on ourselves that the
     * exiting side drops after its wakeup, so that it never wakes a freed
     * thread.  Already DONE: the switch tail is between its exchange and
     * the drop of its reference, with interrupts disabled, so we wait for
     * that drop without sleeping: nobody will wake us.
     */
    thread_ref(self);

    if (!__atomic_compare_exchange_n(&thread->joiner, &expected, self, false,
                                     __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        assert(expected == THREAD_JOIN_DONE);   /* one joiner at most */
        thread_unref(self);

        while (!thread_exited(thread)) {
            cpu_pause();
        }
    }

    for (;;) {
        thread_sleep_prepare();

        if (thread_exited(thread)) {
            thread_sleep_cancel();
            break;
        }

        thread_sleep();
    }

    /* The scheduler's is gone: ours frees it, unless others remain. */
    thread_unref(thread);
}

/* Affinity and migration ------------------------------------------------ */

int
thread_set_affinity(struct thread *thread, uint64_t cpumask)
{
    struct thread_runq *runq;
    unsigned long flags;
    unsigned int target, cpu;

    if ((cpumask & thread_online_mask()) == 0) {
        return -EINVAL;
    }

    __atomic_store_n(&thread->cpumask, cpumask, __ATOMIC_RELEASE);

    if (thread == thread_self()) {
        while (!thread_allowed(thread, cpu_id())) {
            thread_yield();     /* the switch sends us to an allowed CPU */
        }

        return 0;
    }

    runq = thread_lock_runq(thread, &flags);
    cpu = thread->cpu;

    if (thread_allowed(thread, cpu)) {
        spinlock_unlock_intr_restore(&runq->lock, flags);
        return 0;
    }

    if (runq->current == thread) {
        spinlock_unlock_intr_restore(&runq->lock, flags);
        thread_kick(cpu);       /* its next switch moves it */
        return 0;
    }

    if (!thread->on_runq) {
        /* Sleeping (its wakeup picks an allowed CPU) or already moving. */
        spinlock_unlock_intr_restore(&runq->lock, flags);
        return 0;
    }

    thread_runq_remove(runq, thread);
    target = thread_pick_cpu(thread);
    thread->cpu = target;
    spinlock_unlock_intr_restore(&runq->lock, flags);
    thread_enqueue_on(thread);
    return 0;
}

/*
 * Load balancing, run by an idle CPU: take the last queued thread of the
 * busiest run queue that may run here.  Both locks are taken in CPU order.
 */
static bool
thread_balance_pull(unsigned int cpu)
{
    struct thread_runq *src, *dst = &thread_runqs[cpu], *first, *second;
    unsigned int queued[CPU_MAX], n = cpu_count();
    struct thread *candidate = NULL;
    unsigned long flags;
    int busiest;

    for (unsigned int i = 0; i < n; i++) {
        queued[i] = thread_runq_nr_queued(i);
    }

    busiest = runq_pick_busiest(queued, n, cpu);

    if (busiest < 0) {
        return false;
    }

    src = &thread_runqs[busiest];
    first = src < dst ? src : dst;
    second = src < dst ? dst : src;
    spinlock_lock_intr_save(&first->lock, &flags);
    spinlock_lock(&second->lock);

    for (struct runq_node *node = src->list.head; node != NULL;
         node = node->next) {
        struct thread *thread = structof(node, struct thread, rq_node);

        if (thread_allowed(thread, cpu)) {
            candidate = thread;
        }
    }

    if (candidate != NULL) {
        thread_runq_remove(src, candidate);
        candidate->cpu = cpu;
        thread_runq_enqueue(dst, candidate);
    }

    spinlock_unlock(&second->lock);
    spinlock_unlock_intr_restore(&first->lock, flags);
    return candidate != NULL;
}

/* Clock tick ------------------------------------------------------------ */

/* Called by the clock interrupt on every CPU, interrupts disabled. */
void
thread_tick(void)
{
    struct thread_runq *runq = thread_runq_local();
    struct thread *current = runq->current;

    if (!thread_ready || current == NULL) {
        return;
    }

    if (current == runq->idle) {
        runq->idle_ticks++;
        return;
    }

    runq->busy_ticks++;

    if (current->slice > 0) {
        current->slice--;
    }

    if (current->slice == 0 && thread_runq_nr_queued(cpu_id()) != 0) {
        cpu_local_write(need_resched, 1);
    }
}

/* Calls pinned to a thread ---------------------------------------------- */

struct thread_call_ctx {
    struct thread *thread;
    thread_call_fn_t fn;
    void *arg;
    bool done;
};

static void
thread_call_remote(void *arg)
{
    struct thread_call_ctx *ctx = arg;

    if (thread_runq_local()->current == ctx->thread) {
        ctx->fn(ctx->thread, true, ctx->arg);
        ctx->done = true;
    }
}

static bool
thread_call_if_stopped(struct thread *thread, thread_call_fn_t fn, void *arg)
{
    struct thread_runq *runq;
    unsigned long flags;

    runq = thread_lock_runq(thread, &flags);

    if (runq->current == thread) {
        spinlock_unlock_intr_restore(&runq->lock, flags);
        return false;
    }

    fn(thread, false, arg);
    spinlock_unlock_intr_restore(&runq->lock, flags);
    return true;
}

void
thread_call(struct thread *thread, thread_call_fn_t fn, void *arg)
{
    struct thread_call_ctx ctx = { thread, fn, arg, false };
    unsigned long flags;
    unsigned int cpu;

    assert(cpu_intr_enabled());

    for (;;) {
        flags = cpu_intr_save();

        if (thread == thread_self()) {
            fn(thread, true, arg);
            cpu_intr_restore(flags);
            return;
        }

        cpu_intr_restore(flags);
        cpu = READ_ONCE(thread->cpu);

        if (READ_ONCE(thread_runqs[cpu].current) == thread) {
            xcall_call(thread_call_remote, &ctx, cpu);

            if (ctx.done) {
                return;
            }
        } else if (thread_call_if_stopped(thread, fn, arg)) {
            return;
        }
    }
}

/* Idle threads and bootstrap -------------------------------------------- */

static struct thread thread_idle_threads[CPU_MAX];

/*
 * Make the calling context the idle thread of this CPU (the boot context,
 * or an AP's first context), so it can be switched away from.
 */
static void
thread_bootstrap_cpu(void)
{
    unsigned int cpu = cpu_id();
    struct thread_runq *runq = &thread_runqs[cpu];
    struct thread *idle = &thread_idle_threads[cpu];
    char name[THREAD_NAME_SIZE];

    ksnprintf(name, sizeof(name), "idle/%u", cpu);
    thread_init_common(idle, name, THREAD_CPUMASK(cpu));
    idle->idle = true;
    idle->cpu = cpu;
    idle->last_cpu = cpu;
    runq->idle = idle;
    runq->current = idle;
    cpu_local_write_ptr(thread, idle);
}

void
thread_run_idle(void)
{
    struct thread_runq *runq = thread_runq_local();
    unsigned int cpu = cpu_id();

    assert(thread_self() == runq->idle);
    cpu_intr_enable();

    for (;;) {
        if (thread_runq_nr_queued(cpu) == 0) {
            thread_balance_pull(cpu);
        }

        cpu_intr_disable();

        if (thread_runq_nr_queued(cpu) != 0) {
            cpu_intr_enable();
            thread_schedule(false);
            continue;
        }

        cpu_idle_wait();        /* sti; hlt: no wakeup lost in between */
    }
}

static void
thread_intr_resched(struct trap_frame *frame)
{
    (void)frame;
    lapic_eoi();
    cpu_local_write(need_resched, 1);
}

static void
thread_register_counters(unsigned int cpu)
{
    syscnt_register_cpu(&thread_runqs[cpu].sc_switches, "thread_switches",
                        cpu);
    syscnt_register_cpu(&thread_runqs[cpu].sc_migrations,
                        "thread_migrations", cpu);
}

/* Bring up the scheduler structures of every possible CPU. */
static int
thread_setup(void)
{
    for (unsigned int cpu = 0; cpu < CPU_MAX; cpu++) {
        spinlock_init(&thread_runqs[cpu].lock);
        runq_list_init(&thread_runqs[cpu].list);
    }

    trap_register(TRAP_VEC_RESCHED, thread_intr_resched);
    thread_bootstrap_cpu();
    thread_register_counters(0);
    __atomic_store_n(&thread_ready, true, __ATOMIC_RELEASE);
    return 0;
}

INIT_OP_DEFINE(thread_setup, INIT_OP_DEP(mem_setup, true),
               INIT_OP_DEP(syscnt_setup, true));

/* Per-AP part of the setup, on the AP itself. */

void
thread_setup_ap(void)
{
    thread_bootstrap_cpu();
    thread_register_counters(cpu_id());
}

/* Shell command --------------------------------------------------------- */

static const char *
thread_state_name(const struct thread *thread)
{
    static const char *const names[] = { "run", "sleep", "dead" };

    if (thread->state == THREAD_STATE_RUNNING
        && thread_runqs[thread->cpu].current == thread) {
        return "oncpu";
    }

    return names[thread->state];
}

static int
thread_cmd(int argc, char **argv)
{
    unsigned long flags;

    (void)argv;

    if (argc != 1) {
        kprintf("usage: threads\n");
        return SHELL_ERR_REPORTED;
    }

    kprintf("%4s %-16s %3s %-6s %-18s %10s\n", "ID", "NAME", "CPU", "STATE",
            "AFFINITY", "SWITCHES");
    spinlock_lock_intr_save(&thread_list_lock, &flags);

    for (struct thread *t = thread_list; t != NULL; t = t->all_next) {
        kprintf("%4u %-16s %3u %-6s 0x%016lx %10lu\n", t->id, t->name,
                t->cpu, thread_state_name(t),
                thread_get_affinity(t) & thread_online_mask(),
                t->nr_switches);
    }

    spinlock_unlock_intr_restore(&thread_list_lock, flags);
    return 0;
}

SHELL_COMMAND(threads, "threads", "", "list threads", thread_cmd);
