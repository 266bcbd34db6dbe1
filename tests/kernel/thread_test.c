/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel tests of threads and the scheduler (kern/thread.h): creation,
 * join and the reference rule (freed with the last reference, not at
 * exit; the memory back when a join returns), bad affinity masks refused, threads pinned to each CPU and
 * migrated (by themselves, or while running by another thread) reporting
 * the right thread_cpu() and cpu_id(), sleep and wakeup without lost
 * wakeups, yield handing the CPU over, thread_call() on a running remote
 * thread and on a sleeping one, and a create/migrate/join stress that must
 * give back every heap object and page it took.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/clock.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/ktest.h"
#include "kern/pmem.h"
#include "kern/string.h"
#include "kern/thread.h"
#include "tests/kernel/ktest_util.h"

#define THREAD_TEST_WAIT_MS     2000

/* Sleep until *flag is set; false after THREAD_TEST_WAIT_MS. */
static bool
thread_test_wait(volatile bool *flag)
{
    return ktest_wait_flag(flag, THREAD_TEST_WAIT_MS);
}

/*
 * The CPU the caller runs on, and whether thread_cpu() says the same,
 * both read with migration excluded.
 */
static unsigned int
thread_test_cpu_now(bool *consistentp)
{
    unsigned int cpu;

    thread_preempt_disable();
    cpu = cpu_id();
    *consistentp = thread_cpu(thread_self()) == cpu;
    thread_preempt_enable();
    return cpu;
}

/* Join the first *nrp threads, then set *nrp to 0 (for cleanup paths). */
static void
thread_test_join_all(struct thread **threads, unsigned int *nrp)
{
    for (unsigned int i = 0; i < *nrp; i++) {
        thread_join(threads[i]);
    }

    *nrp = 0;
}

/* Creation and join ----------------------------------------------------- */

struct thread_test_basic {
    unsigned int in;
    unsigned int out;
    struct thread *self;
    bool intr_enabled;
    bool preempt_enabled;
};

static void
thread_test_basic_fn(void *arg)
{
    struct thread_test_basic *b = arg;

    b->self = thread_self();
    b->intr_enabled = cpu_intr_enabled();
    b->preempt_enabled = thread_preempt_enabled();
    b->out = b->in * 3 + 1;
}

static int
thread_test_create_join(void)
{
    struct thread_test_basic b[3];
    struct thread *t[3];
    const char *long_name = "a_thread_name_longer_than_the_field_holds";
    unsigned int nr_threads = 0;

    for (unsigned int i = 0; i < 3; i++) {
        b[i] = (struct thread_test_basic){ .in = 10 + i };
        KTEST_CHECK_EQ(thread_create(&t[i], i == 2 ? long_name : "basic",
                                     thread_test_basic_fn, &b[i],
                                     THREAD_CPUMASK_ALL), 0);
        nr_threads++;
    }

    KTEST_CHECK(thread_id(t[0]) != thread_id(t[1]));
    KTEST_CHECK(thread_id(t[1]) != thread_id(t[2]));
    KTEST_CHECK(strcmp(thread_name(t[0]), "basic") == 0);
    KTEST_CHECK_EQ(strlen(thread_name(t[2])), THREAD_NAME_SIZE - 1);
    KTEST_CHECK(strncmp(thread_name(t[2]), long_name,
                        THREAD_NAME_SIZE - 1) == 0);
    thread_test_join_all(t, &nr_threads);

    for (unsigned int i = 0; i < 3; i++) {
        KTEST_CHECK_EQ(b[i].out, b[i].in * 3 + 1);
        KTEST_CHECK(b[i].self == t[i]);
        KTEST_CHECK(b[i].intr_enabled);
        KTEST_CHECK(b[i].preempt_enabled);
    }

out:
    thread_test_join_all(t, &nr_threads);
    return ktest_result();
}

KTEST_DEFINE(thread, create_join, thread_test_create_join);

static int
thread_test_bad_mask(void)
{
    struct thread *sentinel = (struct thread *)0x1234, *t = sentinel;
    struct thread_test_basic b = { .in = 1 };
    struct kmem_stats before, after;
    uint64_t mask = thread_get_affinity(thread_self());

    kmem_stats_get(&before);
    KTEST_CHECK_EQ(thread_create(&t, "bad", thread_test_basic_fn, &b, 0),
                   -EINVAL);

    if (cpu_count() < 64) {
        uint64_t offline = ~((1ULL << cpu_count()) - 1);

        KTEST_CHECK_EQ(thread_create(&t, "bad", thread_test_basic_fn, &b,
                                     offline), -EINVAL);
        KTEST_CHECK_EQ(thread_set_affinity(thread_self(), offline),
                       -EINVAL);
    }

    kmem_stats_get(&after);
    KTEST_CHECK(t == sentinel);
    KTEST_CHECK_EQ(b.out, 0);
    KTEST_CHECK_EQ(after.nr_allocs, before.nr_allocs);

    /* A refused affinity leaves the old one in place. */
    KTEST_CHECK_EQ(thread_set_affinity(thread_self(), 0), -EINVAL);
    KTEST_CHECK(thread_get_affinity(thread_self()) == mask);

out:
    /* A bad mask taken after all: let that thread run, it writes to b. */
    if (t != sentinel) {
        thread_set_affinity(t, THREAD_CPUMASK_ALL);
        thread_join(t);
    }

    thread_set_affinity(thread_self(), mask);
    return ktest_result();
}

KTEST_DEFINE(thread, bad_mask_refused, thread_test_bad_mask);

/*
 * The scheduler's reference keeps nothing alive after the exit; a reference
 * of our own keeps the thread (structure and stack) until we drop it.
 */
static int
thread_test_ref_outlives_exit(void)
{
    struct thread_test_basic b = { .in = 5 };
    struct kmem_stats base, s;
    struct thread *warm, *t = NULL;
    unsigned int id;

    /* Warm up, so that no lazy allocation lands in the measurement. */
    KTEST_ASSERT_EQ(thread_create(&warm, "warm", thread_test_basic_fn, &b,
                                  THREAD_CPUMASK_ALL), 0);
    thread_join(warm);
    thread_msleep(5);

    kmem_stats_get(&base);
    KTEST_CHECK_EQ(thread_create(&t, "ref", thread_test_basic_fn, &b,
                                 THREAD_CPUMASK_ALL), 0);
    id = thread_id(t);
    thread_ref(t);
    thread_join(t);             /* drops the creator's reference */
    kmem_stats_get(&s);
    KTEST_CHECK_EQ(s.nr_allocs, base.nr_allocs + 2);   /* thread + stack */
    KTEST_CHECK_EQ(thread_id(t), id);
    KTEST_CHECK(strcmp(thread_name(t), "ref") == 0);

    thread_unref(t);
    t = NULL;
    kmem_stats_get(&s);
    KTEST_CHECK_EQ(s.nr_allocs, base.nr_allocs);
    KTEST_CHECK_EQ(s.bytes_in_use, base.bytes_in_use);

out:
    /* Ours is the last reference: the thread goes with it. */
    if (t != NULL) {
        thread_unref(t);
    }

    return ktest_result();
}

KTEST_DEFINE(thread, ref_outlives_exit, thread_test_ref_outlives_exit);

static int
thread_test_join_exited(void)
{
    struct thread_test_basic b = { .in = 2 };
    struct thread *t = NULL;
    uint64_t saved, ticks;
    unsigned int cpu;

    KTEST_CHECK_EQ(thread_create(&t, "quick", thread_test_basic_fn, &b,
                                 THREAD_CPUMASK_ALL), 0);
    thread_msleep(30);
    KTEST_CHECK_EQ(b.out, 7);

    /*
     * No wait: counted in the clock ticks this CPU took, which a host that
     * stalls the CPU does not add to (it does to the clock's time).
     */
    saved = ktest_pin_self(&cpu);
    ticks = ktest_syscnt_read_cpu("clock_ticks", cpu);
    thread_join(t);
    t = NULL;
    ticks = ktest_syscnt_read_cpu("clock_ticks", cpu) - ticks;
    ktest_unpin_self(saved);
    KTEST_CHECK(ticks < clock_ticks_from_ms(500));

out:
    if (t != NULL) {
        thread_join(t);
    }

    return ktest_result();
}

KTEST_DEFINE(thread, join_exited, thread_test_join_exited);

#define THREAD_TEST_JOIN_ROUNDS 200

/*
 * thread_join() returns with the thread's memory back, whichever CPU it
 * last ran on: the scheduler's reference is gone before the joiner can
 * see the exit (a shell command that ran a thread leaves the heap as it
 * found it).
 */
static int
thread_test_join_frees(void)
{
    struct thread_test_basic b = { .in = 1 };
    struct kmem_stats base, s;
    unsigned int n = cpu_count();
    struct thread *t;

    KTEST_ASSERT_EQ(thread_create(&t, "warm", thread_test_basic_fn, &b,
                                  THREAD_CPUMASK_ALL), 0);
    thread_join(t);

    for (unsigned int i = 0; i < THREAD_TEST_JOIN_ROUNDS; i++) {
        kmem_stats_get(&base);
        KTEST_ASSERT_EQ(thread_create(&t, "joined", thread_test_basic_fn, &b,
                                      THREAD_CPUMASK(i % n)), 0);
        thread_join(t);
        kmem_stats_get(&s);
        KTEST_ASSERT_EQ(s.nr_allocs, base.nr_allocs);
        KTEST_ASSERT_EQ(s.bytes_in_use, base.bytes_in_use);
    }

    return KTEST_PASS;
}

KTEST_DEFINE(thread, join_frees, thread_test_join_frees);

/* Pinning and migration ------------------------------------------------- */

struct thread_test_pin {
    unsigned int cpu;
    unsigned int nr_wrong;
    unsigned int nr_checks;
};

static void
thread_test_pinned_fn(void *arg)
{
    struct thread_test_pin *p = arg;
    bool consistent;

    for (unsigned int i = 0; i < 40; i++) {
        unsigned int cpu = thread_test_cpu_now(&consistent);

        p->nr_checks++;

        if (cpu != p->cpu || !consistent
            || thread_get_affinity(thread_self()) != THREAD_CPUMASK(p->cpu)) {
            p->nr_wrong++;
        }

        if (i % 4 == 0) {
            thread_msleep(1);
        } else {
            thread_yield();
        }
    }
}

static int
thread_test_pinned_each_cpu(void)
{
    struct thread_test_pin pins[CPU_MAX];
    struct thread *t[CPU_MAX];
    unsigned int n = cpu_count(), nr_threads = 0;

    for (unsigned int cpu = 0; cpu < n; cpu++) {
        pins[cpu] = (struct thread_test_pin){ .cpu = cpu };
        KTEST_CHECK_EQ(thread_create(&t[cpu], "pinned",
                                     thread_test_pinned_fn, &pins[cpu],
                                     THREAD_CPUMASK(cpu)), 0);
        nr_threads++;
        KTEST_CHECK_EQ(thread_cpu(t[cpu]), cpu);
    }

    thread_test_join_all(t, &nr_threads);

    for (unsigned int cpu = 0; cpu < n; cpu++) {
        KTEST_CHECK_EQ(pins[cpu].nr_checks, 40);
        KTEST_CHECK_EQ(pins[cpu].nr_wrong, 0);
    }

out:
    thread_test_join_all(t, &nr_threads);
    return ktest_result();
}

KTEST_DEFINE(thread, pinned_each_cpu, thread_test_pinned_each_cpu);

struct thread_test_self_migrate {
    unsigned int nr_moves;
    unsigned int nr_wrong;
    int error;
};

static void
thread_test_self_migrate_fn(void *arg)
{
    struct thread_test_self_migrate *m = arg;
    struct thread *self = thread_self();
    unsigned int n = cpu_count();
    bool consistent;

    for (unsigned int round = 0; round < 3; round++) {
        for (unsigned int k = 0; k < n; k++) {
            unsigned int target = (n - 1 - k + round) % n, cpu;
            int error = thread_set_affinity(self, THREAD_CPUMASK(target));

            if (error) {
                m->error = error;
                return;
            }

            /* The call returns on an allowed CPU, and it stays there. */
            for (unsigned int i = 0; i < 3; i++) {
                cpu = thread_test_cpu_now(&consistent);

                if (cpu != target || !consistent
                    || thread_cpu(self) != target) {
                    m->nr_wrong++;
                }

                thread_yield();
            }

            m->nr_moves++;
        }
    }

    /* A set of two CPUs: either is fine, nothing else. */
    if (n >= 2) {
        uint64_t mask = THREAD_CPUMASK(0) | THREAD_CPUMASK(n - 1);

        m->error = thread_set_affinity(self, mask);

        for (unsigned int i = 0; i < 10; i++) {
            if ((mask & THREAD_CPUMASK(thread_test_cpu_now(&consistent)))
                == 0 || !consistent) {
                m->nr_wrong++;
            }

            thread_msleep(1);
        }
    }
}

static int
thread_test_self_migrate(void)
{
    struct thread_test_self_migrate m = { 0, 0, 0 };
    struct thread *t;

    KTEST_ASSERT_EQ(thread_create(&t, "migrate", thread_test_self_migrate_fn,
                                  &m, THREAD_CPUMASK_ALL), 0);
    thread_join(t);
    KTEST_ASSERT_EQ(m.error, 0);
    KTEST_ASSERT_EQ(m.nr_moves, 3 * cpu_count());
    KTEST_ASSERT_EQ(m.nr_wrong, 0);
    return KTEST_PASS;
}

KTEST_DEFINE(thread, self_migrate, thread_test_self_migrate);

/* A busy thread that never sleeps, reporting where it runs. */
struct thread_test_spinner {
    volatile unsigned int seen_cpu;
    volatile bool started;
    volatile bool stop;
    unsigned int nr_inconsistent;
};

static void
thread_test_spinner_fn(void *arg)
{
    struct thread_test_spinner *s = arg;
    bool consistent;

    s->started = true;

    while (!s->stop) {
        s->seen_cpu = thread_test_cpu_now(&consistent);

        if (!consistent) {
            s->nr_inconsistent++;
        }

        cpu_pause();
    }
}

struct thread_test_where {
    struct thread_test_spinner *s;
    struct thread *t;
    unsigned int cpu;
};

static bool
thread_test_spinner_is_on(void *arg)
{
    const struct thread_test_where *w = arg;

    return w->s->seen_cpu == w->cpu && thread_cpu(w->t) == w->cpu;
}

/* Wait until the spinner reports cpu and thread_cpu() agrees. */
static bool
thread_test_spinner_on(struct thread_test_spinner *s, struct thread *t,
                       unsigned int cpu)
{
    struct thread_test_where w = { s, t, cpu };

    return ktest_wait_until(thread_test_spinner_is_on, &w,
                            THREAD_TEST_WAIT_MS);
}

static int
thread_test_migrate_running(void)
{
    struct thread_test_spinner s = { .seen_cpu = ~0U };
    unsigned int n = cpu_count();
    struct thread *t;
    int result = KTEST_PASS;

    KTEST_ASSERT_EQ(thread_create(&t, "spinner", thread_test_spinner_fn, &s,
                                  THREAD_CPUMASK(0)), 0);

    if (!thread_test_wait(&s.started) || !thread_test_spinner_on(&s, t, 0)) {
        ktest_diag("spinner not seen running on cpu0");
        result = KTEST_FAIL;
    }

    for (unsigned int round = 0; round < 2 && result == KTEST_PASS; round++) {
        for (unsigned int k = 0; k < n; k++) {
            unsigned int target = (k * 3 + round + 1) % n;

            if (thread_set_affinity(t, THREAD_CPUMASK(target)) != 0) {
                ktest_diag("set_affinity(cpu%u) failed", target);
                result = KTEST_FAIL;
                break;
            }

            if (!thread_test_spinner_on(&s, t, target)) {
                ktest_diag("spinner still on cpu%u (thread_cpu %u), "
                           "expected cpu%u", s.seen_cpu, thread_cpu(t),
                           target);
                result = KTEST_FAIL;
                break;
            }

            if (thread_get_affinity(t) != THREAD_CPUMASK(target)) {
                result = KTEST_FAIL;
                break;
            }

            /* And it stays there. */
            thread_msleep(3);

            if (s.seen_cpu != target || thread_cpu(t) != target) {
                ktest_diag("spinner left cpu%u", target);
                result = KTEST_FAIL;
                break;
            }
        }
    }

    s.stop = true;
    thread_join(t);
    KTEST_ASSERT_EQ(s.nr_inconsistent, 0);
    return result;
}

KTEST_DEFINE(thread, migrate_running_other, thread_test_migrate_running);

/* Sleep, wakeup, yield -------------------------------------------------- */

struct thread_test_sleeper {
    volatile bool waiting;
    volatile bool cond;
    volatile bool done;
    unsigned int nr_sleeps;
};

static void
thread_test_sleeper_fn(void *arg)
{
    struct thread_test_sleeper *s = arg;

    for (;;) {
        thread_sleep_prepare();

        if (s->cond) {
            thread_sleep_cancel();
            break;
        }

        s->waiting = true;
        s->nr_sleeps++;
        thread_sleep();
    }

    s->done = true;
}

static int
thread_test_sleep_wakeup(void)
{
    struct thread_test_sleeper s = { false, false, false, 0 };
    struct thread *t = NULL;
    bool done, done_early, finished;

    KTEST_CHECK_EQ(thread_create(&t, "sleeper", thread_test_sleeper_fn, &s,
                                 THREAD_CPUMASK_ALL), 0);
    KTEST_CHECK(thread_test_wait(&s.waiting));
    thread_msleep(20);
    done = s.done;

    /* A wakeup without the condition: it goes back to sleep. */
    thread_wakeup(t);
    thread_msleep(10);
    done_early = s.done;

    s.cond = true;
    thread_wakeup(t);
    finished = thread_test_wait(&s.done);

    if (!finished) {
        thread_wakeup(t);
    }

    thread_join(t);
    t = NULL;
    KTEST_CHECK(!done);
    KTEST_CHECK(!done_early);
    KTEST_CHECK(finished);
    KTEST_CHECK(s.nr_sleeps >= 2);

out:
    /* The condition holds: the next wakeup ends it. */
    if (t != NULL) {
        s.cond = true;
        thread_wakeup(t);
        thread_join(t);
    }

    return ktest_result();
}

KTEST_DEFINE(thread, sleep_wakeup, thread_test_sleep_wakeup);

/* A wakeup between thread_sleep_prepare() and thread_sleep() is not lost. */
struct thread_test_race {
    volatile bool prepared;
    volatile bool woken;
    volatile bool done;
};

static void
thread_test_race_fn(void *arg)
{
    struct thread_test_race *r = arg;

    thread_sleep_prepare();
    r->prepared = true;

    while (!r->woken) {
        cpu_pause();
    }

    thread_sleep();             /* must return at once */
    r->done = true;
}

static int
thread_test_no_lost_wakeup(void)
{
    struct thread_test_race r = { false, false, false };
    struct thread *t;
    bool finished;

    KTEST_ASSERT_EQ(thread_create(&t, "race", thread_test_race_fn, &r,
                                  THREAD_CPUMASK_ALL), 0);
    finished = thread_test_wait(&r.prepared);

    if (finished) {
        thread_wakeup(t);
        r.woken = true;
        finished = thread_test_wait(&r.done);
    }

    if (!finished) {
        r.woken = true;
        thread_wakeup(t);       /* unblock it, the test has failed anyway */
    }

    thread_join(t);
    KTEST_ASSERT(finished);
    return KTEST_PASS;
}

KTEST_DEFINE(thread, no_lost_wakeup, thread_test_no_lost_wakeup);

/* Waking a thread that runs is harmless. */
static int
thread_test_wakeup_running(void)
{
    struct thread_test_spinner s = { .seen_cpu = ~0U };
    struct thread *t;
    bool started;

    KTEST_ASSERT_EQ(thread_create(&t, "spinner", thread_test_spinner_fn, &s,
                                  THREAD_CPUMASK_ALL), 0);
    started = thread_test_wait(&s.started);

    for (unsigned int i = 0; i < 100; i++) {
        thread_wakeup(t);
    }

    thread_wakeup(thread_self());
    s.stop = true;
    thread_join(t);
    KTEST_ASSERT(started);
    return KTEST_PASS;
}

KTEST_DEFINE(thread, wakeup_running, thread_test_wakeup_running);

/*
 * Two threads on one CPU hand a token back and forth with thread_yield().
 * Relying on preemption alone would take a time slice per hand-over, far
 * beyond the bound.
 */
#define THREAD_TEST_PINGPONG    100

struct thread_test_pingpong {
    volatile unsigned int turn;
    unsigned int me;
    unsigned int nr_wrong_cpu;
    unsigned int cpu;
};

static struct thread_test_pingpong thread_test_pp[2];
static volatile unsigned int thread_test_pp_turn;
static volatile bool thread_test_pp_stop;      /* the partner is missing */

static void
thread_test_pingpong_fn(void *arg)
{
    struct thread_test_pingpong *p = arg;

    for (unsigned int i = 0; i < THREAD_TEST_PINGPONG; i++) {
        while (thread_test_pp_turn != p->me) {
            if (thread_test_pp_stop) {
                return;
            }

            thread_yield();
        }

        if (ktest_cpu_now() != p->cpu) {
            p->nr_wrong_cpu++;
        }

        thread_test_pp_turn = 1 - p->me;
    }
}

static int
thread_test_yield(void)
{
    unsigned int cpu = cpu_count() - 1, nr_threads = 0;
    struct thread *t[2];
    uint64_t start, elapsed, ticks;

    thread_test_pp_turn = 0;
    thread_test_pp_stop = false;
    start = clock_get_time();
    ticks = ktest_syscnt_read_cpu("clock_ticks", cpu);

    for (unsigned int i = 0; i < 2; i++) {
        thread_test_pp[i] = (struct thread_test_pingpong){ .me = i,
                                                           .cpu = cpu };
        KTEST_CHECK_EQ(thread_create(&t[i], "pingpong",
                                     thread_test_pingpong_fn,
                                     &thread_test_pp[i],
                                     THREAD_CPUMASK(cpu)), 0);
        nr_threads++;
    }

    thread_test_join_all(t, &nr_threads);
    elapsed = clock_get_time() - start;
    ticks = ktest_syscnt_read_cpu("clock_ticks", cpu) - ticks;
    KTEST_CHECK_EQ(thread_test_pp[0].nr_wrong_cpu, 0);
    KTEST_CHECK_EQ(thread_test_pp[1].nr_wrong_cpu, 0);
    ktest_diag("%u hand-overs on cpu%u: %lu ms, %llu ticks taken",
               2 * THREAD_TEST_PINGPONG, cpu, clock_ms_from_ticks(elapsed),
               (unsigned long long)ticks);

    /*
     * Slices end on the ticks the CPU takes: counted in those, the bound
     * holds however long the host leaves the CPU stalled.
     */
    KTEST_CHECK(ticks < THREAD_SLICE_TICKS * THREAD_TEST_PINGPONG);

out:
    /* Alone, the first one would wait for its turn forever. */
    thread_test_pp_stop = true;
    thread_test_join_all(t, &nr_threads);
    return ktest_result();
}

KTEST_DEFINE(thread, yield_hands_over, thread_test_yield);

/* thread_call ------------------------------------------------------------ */

struct thread_test_call {
    unsigned int nr_calls;
    bool running;
    unsigned int cpu;
    bool intr_enabled;
    struct thread *self;
};

static void
thread_test_call_fn(struct thread *thread, bool running, void *arg)
{
    struct thread_test_call *c = arg;

    (void)thread;
    c->nr_calls++;
    c->running = running;
    c->cpu = cpu_id();
    c->intr_enabled = cpu_intr_enabled();
    c->self = thread_self();
}

static int
thread_test_call_running(void)
{
    struct thread_test_spinner s = { .seen_cpu = ~0U };
    struct thread_test_call c;
    unsigned int n = cpu_count(), self_cpu, target, nr_running = 0;
    uint64_t saved;
    struct thread *t = NULL;
    int result = KTEST_PASS;

    if (n < 2) {
        ktest_skip_reason("needs 2 CPUs");
        return KTEST_SKIP;
    }

    saved = ktest_pin_self(&self_cpu);
    target = (self_cpu + 1) % n;
    KTEST_CHECK_EQ(thread_create(&t, "spinner", thread_test_spinner_fn, &s,
                                 THREAD_CPUMASK(target)), 0);

    if (!thread_test_wait(&s.started)
        || !thread_test_spinner_on(&s, t, target)) {
        result = KTEST_FAIL;
    }

    /*
     * The spinner may be briefly switched out (the timer thread of its
     * CPU): then running == false is right.  Check the contract of each
     * call, and that the running case happens.
     */
    for (unsigned int i = 0; i < 20 && result == KTEST_PASS; i++) {
        c = (struct thread_test_call){ .nr_calls = 0, .intr_enabled = true };
        thread_call(t, thread_test_call_fn, &c);

        if (c.nr_calls != 1 || c.intr_enabled) {
            ktest_diag("call %u: %u runs, interrupts %s", i, c.nr_calls,
                       c.intr_enabled ? "on" : "off");
            result = KTEST_FAIL;
        } else if (c.running) {
            nr_running++;

            if (c.cpu != target || c.self != t) {
                ktest_diag("running call on cpu%u (want %u), self %s",
                           c.cpu, target, c.self == t ? "ok" : "wrong");
                result = KTEST_FAIL;
            }
        } else if (c.cpu != self_cpu) {
            ktest_diag("stopped call on cpu%u, not the caller's", c.cpu);
            result = KTEST_FAIL;
        }
    }

    s.stop = true;
    thread_join(t);
    t = NULL;
    KTEST_CHECK(result == KTEST_PASS);
    KTEST_CHECK(nr_running > 0);

out:
    if (t != NULL) {
        s.stop = true;
        thread_join(t);
    }

    ktest_unpin_self(saved);
    return ktest_result();
}

KTEST_DEFINE(thread, call_running_remote, thread_test_call_running);

static int
thread_test_call_sleeping(void)
{
    struct thread_test_sleeper s = { false, false, false, 0 };
    struct thread_test_call c = { .nr_calls = 0, .intr_enabled = true };
    unsigned int self_cpu, n = cpu_count();
    uint64_t saved;
    struct thread *t;
    bool waiting;

    saved = ktest_pin_self(&self_cpu);
    KTEST_CHECK_EQ(thread_create(&t, "sleeper", thread_test_sleeper_fn, &s,
                                 THREAD_CPUMASK((self_cpu + 1) % n)), 0);
    waiting = thread_test_wait(&s.waiting);
    thread_msleep(20);          /* well off its CPU by now */
    thread_call(t, thread_test_call_fn, &c);

    s.cond = true;
    thread_wakeup(t);
    thread_join(t);

    KTEST_CHECK(waiting);
    KTEST_CHECK_EQ(c.nr_calls, 1);
    KTEST_CHECK(!c.running);
    KTEST_CHECK_EQ(c.cpu, self_cpu);
    KTEST_CHECK(!c.intr_enabled);
    KTEST_CHECK(c.self == thread_self());

out:
    ktest_unpin_self(saved);
    return ktest_result();
}

KTEST_DEFINE(thread, call_sleeping, thread_test_call_sleeping);

static int
thread_test_call_self(void)
{
    struct thread_test_call c = { .nr_calls = 0, .intr_enabled = true };
    unsigned int self_cpu;
    uint64_t saved;

    saved = ktest_pin_self(&self_cpu);
    thread_call(thread_self(), thread_test_call_fn, &c);
    ktest_unpin_self(saved);

    KTEST_ASSERT_EQ(c.nr_calls, 1);
    KTEST_ASSERT(c.running);
    KTEST_ASSERT_EQ(c.cpu, self_cpu);
    KTEST_ASSERT(!c.intr_enabled);
    KTEST_ASSERT(c.self == thread_self());
    KTEST_ASSERT(cpu_intr_enabled());
    return KTEST_PASS;
}

KTEST_DEFINE(thread, call_self, thread_test_call_self);

/* Stress: create, migrate, join, free ------------------------------------ */

#define THREAD_TEST_STRESS_THREADS  12
#define THREAD_TEST_STRESS_ROUNDS   4

static unsigned int thread_test_stress_done;       /* atomic */

static void
thread_test_stress_fn(void *arg)
{
    unsigned int seed = (unsigned int)(uintptr_t)arg, n = cpu_count();
    struct thread *self = thread_self();

    for (unsigned int i = 0; i < 6; i++) {
        seed = seed * 1103515245 + 12345;

        switch ((seed >> 16) % 4) {
        case 0:
            thread_set_affinity(self, THREAD_CPUMASK((seed >> 8) % n));
            break;
        case 1:
            thread_set_affinity(self, THREAD_CPUMASK_ALL);
            break;
        case 2:
            thread_yield();
            break;
        default:
            thread_msleep(1);
            break;
        }
    }

    __atomic_fetch_add(&thread_test_stress_done, 1, __ATOMIC_RELAXED);
}

/* One round; returns the number of threads that ran to the end. */
static unsigned int
thread_test_stress_round(unsigned int round, int *errorp)
{
    struct thread *t[THREAD_TEST_STRESS_THREADS];
    unsigned int n = cpu_count(), created = 0;

    __atomic_store_n(&thread_test_stress_done, 0, __ATOMIC_RELAXED);
    *errorp = 0;

    for (unsigned int i = 0; i < THREAD_TEST_STRESS_THREADS; i++) {
        uint64_t mask = i % 3 == 0 ? THREAD_CPUMASK_ALL
                                   : THREAD_CPUMASK((i + round) % n);
        int error = thread_create(&t[i], "stress", thread_test_stress_fn,
                                  (void *)(uintptr_t)(i * 7 + round), mask);

        if (error) {
            *errorp = error;
            break;
        }

        created++;
    }

    /* Move them while they run, sleep or wait in a queue. */
    for (unsigned int i = 0; i < created; i++) {
        thread_set_affinity(t[i], THREAD_CPUMASK((i * 5 + round) % n));
    }

    for (unsigned int i = 0; i < created; i += 2) {
        thread_set_affinity(t[i], THREAD_CPUMASK_ALL);
    }

    for (unsigned int i = 0; i < created; i++) {
        thread_join(t[i]);
    }

    return __atomic_load_n(&thread_test_stress_done, __ATOMIC_ACQUIRE);
}

static int
thread_test_stress_no_leak(void)
{
    struct kmem_stats base, now;
    size_t base_free, now_free;
    unsigned int done;
    int error;

    /* Warm-up: first-time allocations (slabs) are not leaks. */
    done = thread_test_stress_round(0, &error);
    KTEST_ASSERT_EQ(error, 0);
    KTEST_ASSERT_EQ(done, THREAD_TEST_STRESS_THREADS);
    thread_msleep(20);

    kmem_stats_get(&base);
    base_free = pmem_nr_free();

    for (unsigned int round = 1; round <= THREAD_TEST_STRESS_ROUNDS; round++) {
        done = thread_test_stress_round(round, &error);
        KTEST_ASSERT_EQ(error, 0);
        KTEST_ASSERT_EQ(done, THREAD_TEST_STRESS_THREADS);
    }

    /* Every thread was joined: nothing of theirs is left. */
    kmem_stats_get(&now);
    now_free = pmem_nr_free();
    KTEST_ASSERT_EQ(now.nr_allocs, base.nr_allocs);
    KTEST_ASSERT_EQ(now.bytes_in_use, base.bytes_in_use);
    KTEST_ASSERT_EQ(now.nr_pages, base.nr_pages);
    KTEST_ASSERT_EQ(now_free, base_free);
    return KTEST_PASS;
}

KTEST_DEFINE(thread, stress_no_leak, thread_test_stress_no_leak);
