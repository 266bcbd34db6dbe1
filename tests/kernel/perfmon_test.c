/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel tests of perfmon with the software PMU: exact thread counts
 * across migrations and the matching per-CPU counts, context switches of a
 * yielding thread, exact counts of millions of events through thousands of
 * wraps at the configured softpmu.width in the configured overflow mode,
 * counter sharing, counter exhaustion, a torture run of threads attaching,
 * reading, detaching and migrating on all CPUs (the overflow-callback
 * registry's test is perfmon_intr_test.c).
 *
 * The wrap test is meant to run at softpmu.width=16 in both
 * softpmu.overflow=poll and softpmu.overflow=nmi; at other widths it still
 * checks exact counts.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/trap.h"
#include "kern/error.h"
#include "kern/ktest.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/string.h"
#include "kern/swevent.h"
#include "kern/thread.h"
#include "tests/kernel/ktest_util.h"

#define PT_WAIT_MS              5000

/* ---- helpers ------------------------------------------------------------ */

/* The software PMU, as the core names it. */
static struct perfmon_dev *
pt_soft(void)
{
    return perfmon_dev_find("soft");
}

/* Whether its wraps raise NMIs (softpmu.overflow=nmi). */
static bool
pt_soft_nmi(void)
{
    struct perfmon_dev_info info;

    return perfmon_dev_get_info(pt_soft(), &info) == 0 && info.overflow_intr;
}

static int
pt_event_init(struct perfmon_event *ev, unsigned int id, unsigned int flags)
{
    int error = perfmon_event_init(ev, id, flags);

    if (error == 0) {
        error = perfmon_event_set_dev(ev, pt_soft());
    }

    return error;
}

/* Detach those of the events still attached (cleanup paths). */
static void
pt_events_detach(struct perfmon_event *events, unsigned int nr_events)
{
    for (unsigned int i = 0; i < nr_events; i++) {
        if (perfmon_event_attached(&events[i])) {
            perfmon_event_detach(&events[i]);
        }
    }
}

static uint64_t
pt_overflows(unsigned int cpu)
{
    return ktest_syscnt_read_cpu("perfmon_nr_overflows", cpu);
}

static unsigned int
pt_rand(uint32_t *state)
{
    *state = *state * 1103515245 + 12345;
    return *state >> 8;
}

/* ---- a thread migrated while it counts ---------------------------------- */

struct pt_mover {
    volatile bool go;
    volatile bool done;
    unsigned int rounds;
    uint64_t total;             /* added by the thread */
};

static void
pt_mover_fn(void *arg)
{
    struct pt_mover *m = arg;
    unsigned int n = cpu_count();

    ktest_wait_flag(&m->go, PT_WAIT_MS);

    for (unsigned int i = 0; i < m->rounds; i++) {
        uint64_t amount = 1 + (i * 7919) % 1000;

        thread_set_affinity(thread_self(), THREAD_CPUMASK(i % n));
        swevent_add(SWEVENT_TEST, amount);
        m->total += amount;

        if (i % 16 == 0) {
            thread_yield();
        }
    }

    m->done = true;
}

static int
pt_thread_migrating_exact(void)
{
    struct perfmon_event thr = { 0 }, cpus[CPU_MAX] = { 0 };
    struct pt_mover m = { .rounds = 2000 };
    unsigned int n = cpu_count();
    uint64_t sum = 0, last = 0, value;
    struct thread *t = NULL;
    bool finished;

    KTEST_ASSERT(pt_soft() != NULL);

    for (unsigned int cpu = 0; cpu < n; cpu++) {
        KTEST_CHECK_EQ(pt_event_init(&cpus[cpu], PERFMON_EV_TEST,
                                     PERFMON_EF_KERN), 0);
        KTEST_CHECK_EQ(perfmon_event_attach_cpu(&cpus[cpu], cpu), 0);
    }

    KTEST_CHECK_EQ(thread_create(&t, "pt_mover", pt_mover_fn, &m,
                                 THREAD_CPUMASK_ALL), 0);
    KTEST_CHECK_EQ(pt_event_init(&thr, PERFMON_EV_TEST, PERFMON_EF_KERN), 0);
    KTEST_CHECK_EQ(perfmon_event_attach(&thr, t), 0);
    m.go = true;

    /* Reads while it runs and moves never go backwards. */
    while (!m.done) {
        value = perfmon_event_read(&thr);

        if (value < last) {
            ktest_diag("read went back from %llu to %llu",
                       (unsigned long long)last, (unsigned long long)value);
            m.rounds = 0;
        }

        last = value;
        thread_msleep(2);
    }

    finished = m.rounds != 0;
    thread_join(t);
    t = NULL;

    /* The thread exited: its event still reads, then detaches. */
    value = perfmon_event_read(&thr);
    KTEST_CHECK_EQ(perfmon_event_detach(&thr), 0);
    KTEST_CHECK_EQ(perfmon_event_read(&thr), value);

    for (unsigned int cpu = 0; cpu < n; cpu++) {
        sum += perfmon_event_read(&cpus[cpu]);
        KTEST_CHECK_EQ(perfmon_event_detach(&cpus[cpu]), 0);
    }

    KTEST_CHECK(finished);
    KTEST_CHECK_EQ(value, m.total);
    KTEST_CHECK_EQ(sum, m.total);

out:
    /* A mover that has not started yet runs no round, and ends. */
    if (t != NULL) {
        m.rounds = 0;
        m.go = true;
        thread_join(t);
    }

    pt_events_detach(&thr, 1);
    pt_events_detach(cpus, n);
    return ktest_result();
}

KTEST_DEFINE(perfmon, thread_migrating_exact, pt_thread_migrating_exact);

/* ---- context switches --------------------------------------------------- */

struct pt_yielder {
    volatile bool go;
    volatile bool stop;
    unsigned int yields;
};

static void
pt_yielder_fn(void *arg)
{
    struct pt_yielder *y = arg;

    ktest_wait_flag(&y->go, PT_WAIT_MS);

    for (unsigned int i = 0; i < y->yields; i++) {
        thread_yield();
    }
}

static void
pt_spinner_fn(void *arg)
{
    struct pt_yielder *y = arg;

    while (!y->stop) {
        thread_yield();
    }
}

static int
pt_context_switches(void)
{
    struct pt_yielder y = { .yields = 200 };
    unsigned int cpu = (ktest_cpu_now() + 1) % cpu_count();
    struct perfmon_event ev = { 0 };
    struct thread *t = NULL, *spinner = NULL;
    uint64_t value;

    /* A companion on the same CPU, so that each yield switches. */
    KTEST_CHECK_EQ(thread_create(&spinner, "pt_spinner", pt_spinner_fn, &y,
                                 THREAD_CPUMASK(cpu)), 0);
    KTEST_CHECK_EQ(thread_create(&t, "pt_yielder", pt_yielder_fn, &y,
                                 THREAD_CPUMASK(cpu)), 0);
    KTEST_CHECK_EQ(pt_event_init(&ev, PERFMON_EV_CONTEXT_SWITCH,
                                 PERFMON_EF_KERN), 0);
    KTEST_CHECK_EQ(perfmon_event_attach(&ev, t), 0);
    y.go = true;
    thread_join(t);
    t = NULL;
    y.stop = true;
    thread_join(spinner);
    spinner = NULL;

    value = perfmon_event_read(&ev);
    KTEST_CHECK_EQ(perfmon_event_detach(&ev), 0);
    ktest_diag("%u yields, %llu context switches", y.yields,
               (unsigned long long)value);
    KTEST_CHECK(value >= y.yields);

out:
    /* The yielder ends after its yields, then the spinner when told. */
    y.go = true;

    if (t != NULL) {
        thread_join(t);
    }

    y.stop = true;

    if (spinner != NULL) {
        thread_join(spinner);
    }

    pt_events_detach(&ev, 1);
    return ktest_result();
}

KTEST_DEFINE(perfmon, context_switches_yield, pt_context_switches);

/*
 * Two threads on one CPU count the test event in two modes (two slots,
 * one counter each): every switch between them passes the outgoing
 * thread's counter on to the incoming one's slot in place.  Each thread
 * adds its own amounts between yields; each event counts exactly its
 * thread's.  The threads take turns (one adds only when the other did),
 * so that every add is followed by a switch: a polled 16-bit counter
 * wraps after some 60 adds, and only a switch or a poll folds it.
 */
#define PT_PASS_ROUNDS          200

struct pt_passer {
    volatile bool *go;
    volatile unsigned int *turn;        /* whose add is next, 2: anyone's */
    unsigned int self;
    uint64_t step;
    uint64_t added;
};

static void
pt_passer_fn(void *arg)
{
    struct pt_passer *p = arg;

    ktest_wait_flag(p->go, PT_WAIT_MS);

    for (unsigned int i = 0; i < PT_PASS_ROUNDS; i++) {
        while (*p->turn != p->self && *p->turn != 2) {
            thread_yield();
        }

        swevent_add(SWEVENT_TEST, p->step + i);
        p->added += p->step + i;

        if (*p->turn != 2) {
            *p->turn = !p->self;
        }

        thread_yield();
    }
}

/*
 * The end of a passing test: the threads still running (after a failure)
 * are let go, a thread left alone taking every turn, and joined; the two
 * events are detached.
 */
static void
pt_passers_end(struct thread **ts, volatile unsigned int *turn,
               volatile bool *go, struct perfmon_event *evs)
{
    *turn = 2;
    *go = true;

    for (unsigned int i = 0; i < 2; i++) {
        if (ts[i] != NULL) {
            thread_join(ts[i]);
        }
    }

    pt_events_detach(evs, 2);
}

static int
pt_switch_passes_counter(void)
{
    static const unsigned int flags[2] = {
        PERFMON_EF_KERN, PERFMON_EF_KERN | PERFMON_EF_USER,
    };
    unsigned int cpu = (ktest_cpu_now() + 1) % cpu_count();
    struct perfmon_event evs[2] = { 0 };
    struct thread *ts[2] = { NULL, NULL };
    struct pt_passer ps[2];
    volatile bool go = false;
    volatile unsigned int turn = 0;

    KTEST_ASSERT(pt_soft() != NULL);

    for (unsigned int i = 0; i < 2; i++) {
        ps[i] = (struct pt_passer){ .go = &go, .turn = &turn, .self = i,
                                    .step = 1000 * (i + 1) };
        KTEST_CHECK_EQ(thread_create(&ts[i], "pt_passer", pt_passer_fn,
                                     &ps[i], THREAD_CPUMASK(cpu)), 0);
        KTEST_CHECK_EQ(pt_event_init(&evs[i], PERFMON_EV_TEST, flags[i]), 0);
        KTEST_CHECK_EQ(perfmon_event_attach(&evs[i], ts[i]), 0);
    }

    go = true;

    for (unsigned int i = 0; i < 2; i++) {
        thread_join(ts[i]);
        ts[i] = NULL;
        KTEST_CHECK_EQ(perfmon_event_read(&evs[i]), ps[i].added);
    }

out:
    pt_passers_end(ts, &turn, &go, evs);
    return ktest_result();
}

KTEST_DEFINE(perfmon, switch_passes_counter, pt_switch_passes_counter);

/*
 * The same passing between two different events: one thread counts the
 * clock, the other the test event.  The counter passes from the clock to
 * the test event at every switch; what the clock ran up after its last
 * fold must not reach the test event, whose count stays exactly its adds
 * (a TSC's worth of cycles is thousands of test events).
 */
static int
pt_switch_passes_clock(void)
{
    static const unsigned int ids[2] = {
        PERFMON_EV_TASK_CLOCK, PERFMON_EV_TEST,
    };
    unsigned int cpu = (ktest_cpu_now() + 1) % cpu_count();
    struct perfmon_event evs[2] = { 0 };
    struct thread *ts[2] = { NULL, NULL };
    struct pt_passer ps[2];
    volatile bool go = false;
    volatile unsigned int turn = 0;
    uint64_t clock;
    bool skip = false;

    KTEST_ASSERT(pt_soft() != NULL);

    for (unsigned int i = 0; i < 2; i++) {
        int error;

        /* The clock's thread adds too: test events it does not count. */
        ps[i] = (struct pt_passer){ .go = &go, .turn = &turn, .self = i,
                                    .step = 7 * (i + 1) };
        KTEST_CHECK_EQ(thread_create(&ts[i], "pt_passer", pt_passer_fn,
                                     &ps[i], THREAD_CPUMASK(cpu)), 0);
        KTEST_CHECK_EQ(pt_event_init(&evs[i], ids[i], PERFMON_EF_KERN), 0);
        error = perfmon_event_attach(&evs[i], ts[i]);

        /* The soft PMU refuses the clock on counters too narrow for it. */
        if (i == 0 && error == -ENOENT) {
            skip = true;
            goto out;
        }

        KTEST_CHECK_EQ(error, 0);
    }

    go = true;

    for (unsigned int i = 0; i < 2; i++) {
        thread_join(ts[i]);
        ts[i] = NULL;
    }

    clock = perfmon_event_read(&evs[0]);
    ktest_diag("clock %llu ns", (unsigned long long)clock);
    KTEST_CHECK(clock > 0);
    KTEST_CHECK_EQ(perfmon_event_read(&evs[1]), ps[1].added);

out:
    pt_passers_end(ts, &turn, &go, evs);

    if (skip) {
        ktest_skip_reason("no task-clock on this soft PMU");
        return KTEST_SKIP;
    }

    return ktest_result();
}

KTEST_DEFINE(perfmon, switch_passes_clock, pt_switch_passes_clock);

/* ---- exact counts through many wraps ------------------------------------ */

#define PT_WRAP_TOTAL   3000000ULL

struct pt_polls {
    unsigned int cpu;
    uint64_t start;
};

static uint64_t
pt_nr_polls(unsigned int cpu)
{
    return ktest_syscnt_read_cpu("perfmon_nr_polls", cpu);
}

static bool
pt_polled_twice(void *arg)
{
    const struct pt_polls *p = arg;

    return pt_nr_polls(p->cpu) - p->start >= 2;
}

/*
 * Wait until the poll timer has folded the counters of cpu since what was
 * counted there last; false after ms.  Poll mode promises exact counts
 * only while a counter moves less than a period between two polls, and
 * the timer can be late on a loaded host: a fixed sleep once let two adds
 * in between, and lost two wraps.  Two polls, so that one ran entirely
 * after the add, whether a poll counts itself before or after it folds.
 */
static bool
pt_wait_polls(unsigned int cpu, unsigned int ms)
{
    struct pt_polls p = { cpu, pt_nr_polls(cpu) };

    return ktest_wait_until(pt_polled_twice, &p, ms);
}

static int
pt_wrap_exact(void)
{
    struct perfmon_event thr = { 0 }, cpu_ev = { 0 };
    struct perfmon_dev_info info;
    unsigned int cpu;
    uint64_t saved, chunk, total = 0, before, wraps;
    bool nmi = pt_soft_nmi();

    KTEST_ASSERT(pt_soft() != NULL);
    KTEST_ASSERT_EQ(perfmon_dev_get_info(pt_soft(), &info), 0);
    saved = ktest_pin_self(&cpu);

    /*
     * Two modes, two counters: the CPU event is folded only by overflow
     * NMIs or the poll timer (the thread event's counter is also folded
     * at each switch of this thread).
     */
    KTEST_CHECK_EQ(pt_event_init(&thr, PERFMON_EV_TEST, PERFMON_EF_KERN), 0);
    KTEST_CHECK_EQ(pt_event_init(&cpu_ev, PERFMON_EV_TEST,
                                 PERFMON_EF_KERN | PERFMON_EF_USER), 0);
    KTEST_CHECK_EQ(perfmon_event_attach_cpu(&cpu_ev, cpu), 0);
    KTEST_CHECK_EQ(perfmon_event_attach(&thr, thread_self()), 0);
    before = pt_overflows(cpu);

    /*
     * NMI mode: large adds, split at every wrap by the PMU.  Poll mode:
     * below one period between two polls.
     */
    chunk = nmi ? 1000003 : MIN(60000ULL << (info.width - 16), 1000003ULL);

    while (total < PT_WRAP_TOTAL) {
        swevent_add(SWEVENT_TEST, chunk);
        total += chunk;

        if (!nmi) {
            KTEST_CHECK(pt_wait_polls(cpu, 2 * info.poll_ms + PT_WAIT_MS));
        }
    }

    KTEST_CHECK_EQ(perfmon_event_read(&cpu_ev), total);
    KTEST_CHECK_EQ(perfmon_event_read(&thr), total);
    KTEST_CHECK_EQ(perfmon_event_detach(&thr), 0);
    KTEST_CHECK_EQ(perfmon_event_detach(&cpu_ev), 0);

    wraps = (info.width < 64) ? total >> info.width : 0;
    ktest_diag("width %u, %s mode: %llu events, %llu overflows seen",
               info.width, nmi ? "nmi" : "poll", (unsigned long long)total,
               (unsigned long long)(pt_overflows(cpu) - before));
    /*
     * The CPU event's counter ran all along and wrapped that many times
     * (the thread's restarts from 0 each time the thread comes back).
     */
    KTEST_CHECK(pt_overflows(cpu) - before >= wraps);

out:
    pt_events_detach(&thr, 1);
    pt_events_detach(&cpu_ev, 1);
    ktest_unpin_self(saved);
    return ktest_result();
}

KTEST_DEFINE(perfmon, wrap_exact, pt_wrap_exact);

/* ---- sharing and exhaustion --------------------------------------------- */

struct pt_foreach {
    const struct perfmon_dev *dev;
    unsigned int counters;
    unsigned int users;
};

static void
pt_foreach_fn(const struct perfmon_pmc_info *info, void *arg)
{
    struct pt_foreach *f = arg;

    if (info->dev == f->dev && info->raw_event == SWEVENT_TEST) {
        f->counters++;
        f->users += info->nr_users;
    }
}

static int
pt_shared_counter(void)
{
    struct perfmon_event a = { 0 }, b = { 0 };
    struct pt_foreach f = { .dev = pt_soft() };
    unsigned int cpu;
    uint64_t saved;

    KTEST_ASSERT(f.dev != NULL);
    saved = ktest_pin_self(&cpu);

    KTEST_CHECK_EQ(pt_event_init(&a, PERFMON_EV_TEST, PERFMON_EF_KERN), 0);
    KTEST_CHECK_EQ(perfmon_event_init(&b, SWEVENT_TEST,
                                      PERFMON_EF_KERN | PERFMON_EF_RAW), 0);
    KTEST_CHECK_EQ(perfmon_event_set_dev(&b, pt_soft()), 0);
    KTEST_CHECK_EQ(perfmon_event_attach(&a, thread_self()), 0);
    swevent_add(SWEVENT_TEST, 5);
    KTEST_CHECK_EQ(perfmon_event_attach_cpu(&b, cpu), 0);
    swevent_add(SWEVENT_TEST, 1000);

    perfmon_pmc_foreach(pt_foreach_fn, &f);
    KTEST_CHECK_EQ(perfmon_event_read(&a), 1005);
    KTEST_CHECK_EQ(perfmon_event_read(&b), 1000);
    KTEST_CHECK_EQ(perfmon_event_detach(&a), 0);
    swevent_add(SWEVENT_TEST, 1);
    KTEST_CHECK_EQ(perfmon_event_read(&b), 1001);
    KTEST_CHECK_EQ(perfmon_event_detach(&b), 0);

    KTEST_CHECK_EQ(f.counters, 1);
    KTEST_CHECK_EQ(f.users, 2);

out:
    pt_events_detach(&a, 1);
    pt_events_detach(&b, 1);
    ktest_unpin_self(saved);
    return ktest_result();
}

KTEST_DEFINE(perfmon, shared_counter, pt_shared_counter);

static int
pt_exhaustion(void)
{
    static const unsigned int ids[] = {
        PERFMON_EV_TASK_CLOCK, PERFMON_EV_CONTEXT_SWITCH,
        PERFMON_EV_MIGRATION, PERFMON_EV_INTERRUPT, PERFMON_EV_XCALL,
        PERFMON_EV_NMI, PERFMON_EV_TEST,
    };
    struct perfmon_event evs[2 * ARRAY_SIZE(ids)] = { 0 }, extra = { 0 };
    struct perfmon_dev_info info;
    unsigned int nr = 0, used;
    int error = 0;

    KTEST_ASSERT_EQ(perfmon_dev_get_info(pt_soft(), &info), 0);
    used = info.nr_pmcs_used;

    /* Initialised, so that only the CPU number is wrong. */
    KTEST_CHECK_EQ(pt_event_init(&extra, PERFMON_EV_TEST, PERFMON_EF_KERN), 0);
    KTEST_CHECK_EQ(perfmon_event_attach_cpu(&extra, cpu_count()), -EINVAL);

    /*
     * Distinct pinned (event, mode) pairs until the device has no counter
     * left to reserve (flexible events would take turns instead).
     */
    for (unsigned int i = 0; i < ARRAY_SIZE(evs); i++) {
        unsigned int flags = PERFMON_EF_PINNED
                             | ((i < ARRAY_SIZE(ids)) ? PERFMON_EF_KERN
                                : PERFMON_EF_KERN | PERFMON_EF_USER);

        KTEST_CHECK_EQ(pt_event_init(&evs[nr], ids[i % ARRAY_SIZE(ids)],
                                     flags), 0);
        error = perfmon_event_attach_cpu(&evs[nr], 0);

        /* task-clock is refused at widths where polls miss its wraps. */
        if (error == -ENOENT
            && ids[i % ARRAY_SIZE(ids)] == PERFMON_EV_TASK_CLOCK) {
            continue;
        }

        if (error) {
            break;
        }

        nr++;
    }

    KTEST_CHECK_EQ(error, -EAGAIN);
    KTEST_CHECK_EQ(nr, info.nr_pmcs - used);
    KTEST_CHECK_EQ(perfmon_event_detach(&evs[0]), 0);
    KTEST_CHECK_EQ(perfmon_event_attach_cpu(&evs[nr], 0), 0);
    KTEST_CHECK_EQ(perfmon_event_detach(&evs[nr]), 0);

    for (unsigned int i = 1; i < nr; i++) {
        KTEST_CHECK_EQ(perfmon_event_detach(&evs[i]), 0);
    }

    KTEST_CHECK_EQ(perfmon_event_detach(&evs[0]), -EINVAL);
    KTEST_CHECK_EQ(perfmon_dev_get_info(pt_soft(), &info), 0);
    KTEST_CHECK_EQ(info.nr_pmcs_used, used);

out:
    pt_events_detach(evs, ARRAY_SIZE(evs));
    pt_events_detach(&extra, 1);
    return ktest_result();
}

KTEST_DEFINE(perfmon, exhaustion_eagain, pt_exhaustion);

/* ---- torture ------------------------------------------------------------ */

#define PT_TORTURE_THREADS  6
#define PT_TORTURE_MS       2500

struct pt_torture {
    volatile bool stop;
    struct thread *victim;              /* everybody's target */
    unsigned int failures;              /* atomic */
    unsigned int rounds;                /* atomic */
};

struct pt_torturer {
    struct pt_torture *t;
    uint32_t seed;
    volatile bool done;
};

static void
pt_torture_fail(struct pt_torture *t, const char *what, uint64_t a,
                uint64_t b)
{
    if (__atomic_fetch_add(&t->failures, 1, __ATOMIC_RELAXED) < 5) {
        ktest_diag("torture: %s (%llu, %llu)", what, (unsigned long long)a,
                   (unsigned long long)b);
    }
}

static void
pt_torturer_fn(void *arg)
{
    static const unsigned int ids[] = {
        PERFMON_EV_TEST, PERFMON_EV_CONTEXT_SWITCH, PERFMON_EV_XCALL,
        PERFMON_EV_INTERRUPT, PERFMON_EV_TASK_CLOCK,
    };
    struct pt_torturer *me = arg;
    struct pt_torture *t = me->t;
    unsigned int n = cpu_count();

    while (!t->stop) {
        unsigned int r = pt_rand(&me->seed);
        unsigned int flags = (r & 1) ? PERFMON_EF_KERN
                             : PERFMON_EF_KERN | PERFMON_EF_USER;
        unsigned int id = ids[(r >> 1) % ARRAY_SIZE(ids)];
        struct perfmon_event ev;
        uint64_t last = 0, value;
        int error;


        if (pt_event_init(&ev, id, flags)) {
            pt_torture_fail(t, "init", r, 0);
            break;
        }

        switch ((r >> 4) % 3) {
        case 0:
            error = perfmon_event_attach(&ev, thread_self());
            break;
        case 1:
            error = perfmon_event_attach(&ev, t->victim);
            break;
        default:
            error = perfmon_event_attach_cpu(&ev, (r >> 6) % n);
            break;
        }

        /* task-clock is refused at widths where polls miss its wraps. */
        if (error == -EAGAIN
            || (error == -ENOENT && id == PERFMON_EV_TASK_CLOCK)) {
            thread_yield();
            continue;
        } else if (error) {
            pt_torture_fail(t, "attach", (uint64_t)-error, r);
            break;
        }

        for (unsigned int i = 0; i < 1 + (r >> 8) % 8; i++) {
            swevent_add(SWEVENT_TEST, 1 + (r >> 12) % 100);
            value = perfmon_event_read(&ev);

            if (value < last) {
                pt_torture_fail(t, "read went back", last, value);
            }

            last = value;

            if ((r >> (13 + i)) & 1) {
                thread_set_affinity(thread_self(),
                                    THREAD_CPUMASK((r >> 20) % n));
            }
        }

        if (perfmon_event_detach(&ev) != 0) {
            pt_torture_fail(t, "detach", r, 0);
            break;
        }

        if (perfmon_event_read(&ev) < last) {
            pt_torture_fail(t, "final read went back", last, 0);
        }

        __atomic_fetch_add(&t->rounds, 1, __ATOMIC_RELAXED);
        thread_set_affinity(thread_self(), THREAD_CPUMASK_ALL);
    }

    me->done = true;
}

static void
pt_victim_fn(void *arg)
{
    struct pt_torture *t = arg;
    unsigned int i = 0;

    while (!t->stop) {
        swevent_add(SWEVENT_TEST, 3);

        if (++i % 64 == 0) {
            thread_set_affinity(thread_self(),
                                THREAD_CPUMASK(i / 64 % cpu_count()));
            thread_msleep(1);
        }
    }
}

/*
 * Stop the torture and join the nr threads started, the victim last (the
 * others attach events to it); idempotent.
 */
static void
pt_torture_stop(struct pt_torture *t, struct thread **threads,
                unsigned int *nr)
{
    t->stop = true;

    while (*nr > 0) {
        thread_join(threads[--*nr]);
    }

    if (t->victim != NULL) {
        thread_join(t->victim);
        t->victim = NULL;
    }
}

static int
pt_torture(void)
{
    struct pt_torturer ts[PT_TORTURE_THREADS];
    struct thread *threads[PT_TORTURE_THREADS];
    struct pt_torture t = { 0 };
    struct perfmon_dev_info info;
    unsigned int used, nr_threads = 0;

    KTEST_ASSERT_EQ(perfmon_dev_get_info(pt_soft(), &info), 0);
    used = info.nr_pmcs_used;
    KTEST_CHECK_EQ(thread_create(&t.victim, "pt_victim", pt_victim_fn, &t,
                                 THREAD_CPUMASK_ALL), 0);

    for (unsigned int i = 0; i < PT_TORTURE_THREADS; i++) {
        ts[i] = (struct pt_torturer){ .t = &t, .seed = 0x9e3779b9u * (i + 1) };
        KTEST_CHECK_EQ(thread_create(&threads[i], "pt_torture",
                                     pt_torturer_fn, &ts[i],
                                     THREAD_CPUMASK_ALL), 0);
        nr_threads++;
    }

    thread_msleep(PT_TORTURE_MS);
    pt_torture_stop(&t, threads, &nr_threads);
    KTEST_CHECK_EQ(perfmon_dev_get_info(pt_soft(), &info), 0);
    ktest_diag("torture: %u rounds by %u threads", t.rounds,
               PT_TORTURE_THREADS);
    KTEST_CHECK_EQ(t.failures, 0);
    KTEST_CHECK(t.rounds > PT_TORTURE_THREADS);
    KTEST_CHECK_EQ(info.nr_pmcs_used, used);

out:
    pt_torture_stop(&t, threads, &nr_threads);
    return ktest_result();
}

KTEST_DEFINE(perfmon, torture, pt_torture);
