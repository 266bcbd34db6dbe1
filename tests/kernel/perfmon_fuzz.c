/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The perfmon API fuzzer (perf_fuzzer's idea for Tally's kernel API), a
 * hidden in-kernel test: boot the test image with
 *
 *   test=perfmon.fuzz fuzz.seconds=S fuzz.seed=N
 *
 * (tools/guestfuzz does; without fuzz.seed a seed is drawn from the TSC).
 * It prints its seed first.  One worker thread per CPU, each starting
 * pinned to its CPU, calls the perfmon API at random with arguments that
 * are sometimes valid, on a few events of its own: init with random ids
 * and flags, set_dev (registered devices, none, one never registered),
 * attach to itself, to a victim thread of its own that runs, exits and
 * is replaced (so attaches land on running, exiting and exited threads),
 * or to a CPU (some not online), read (with times too), detach (twice
 * too), re-attach, enable and disable several at once, group membership,
 * flags that attach disabled, inherited (the victims inherit) or pinned,
 * overflow-callback register and unregister, counts of the test event
 * large enough to wrap narrow counters, migrations and yields between
 * calls.  Boot options choose the software PMU's width and overflow
 * mode; tools/guestfuzz varies them with the seed.
 *
 * Invariants checked as it goes: every call returns 0 or an errno its
 * contract in kern/perfmon.h lists, and the one the arguments call for
 * where the contract decides (a bad flag, an attached event, a CPU not
 * online, a detach of an event not attached); a count never goes
 * backwards; a detached event's count stays where it stopped; running
 * time never exceeds enabled time.  At the end, with every worker parked,
 * the counters in use have as many users (inherited children aside) as
 * the workers have attached events; then everything is given back and
 * the runner's leak check (heap, pages, counters) applies.
 *
 * A run is reproducible in its sequence of calls per worker, not in
 * their interleaving: the seed replays the same program, the scheduler
 * and the clock decide the rest.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/cmdline.h"
#include "kern/error.h"
#include "kern/ktest.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/string.h"
#include "kern/swevent.h"
#include "kern/thread.h"
#include "tests/kernel/ktest_util.h"

#define PF_SECONDS_DEFAULT  5
#define PF_SECONDS_MAX      3600
#define PF_EVENTS           6           /* per worker */
#define PF_MAX_FAILURES     8           /* reported; more are counted */
#define PF_PARK_WAIT_MS     30000

/* An event of a worker and what the worker knows of it. */
struct pf_event {
    struct perfmon_event ev;
    bool known;                 /* initialised, and nothing since undid it */
    bool attached;
    uint64_t last;              /* highest count read; the count if detached */
};

/* What the workers share; the test's frame holds it. */
struct pf_run {
    uint64_t deadline;
    unsigned int failures;              /* atomic */
    uint64_t calls;                     /* atomic */
    uint64_t callbacks;                 /* atomic: overflow callbacks run */
    unsigned int parked;                /* atomic: workers done calling */
    volatile bool release;              /* the end check is done */
};

struct pf_worker {
    struct pf_run *run;
    unsigned int index;
    uint64_t rng;
    struct pf_event events[PF_EVENTS];
    struct thread *victim;              /* own target, NULL when none */
    unsigned int victim_rounds;
    int intr_handle;                    /* -1: none registered */
};

/* A device nobody registered: set_dev must refuse it. */
static const struct perfmon_dev_ops pf_no_ops;
static struct perfmon_dev pf_unregistered = {
    .name = "pf-unregistered", .ops = &pf_no_ops, .width = 32, .nr_pmcs = 1,
};

static struct pf_worker pf_workers[CPU_MAX];

/* xorshift64*: each worker has its own stream, derived from the seed. */
static uint64_t
pf_rand(struct pf_worker *w)
{
    w->rng ^= w->rng >> 12;
    w->rng ^= w->rng << 25;
    w->rng ^= w->rng >> 27;
    return w->rng * 2685821657736338717ULL;
}

static void
pf_fail(struct pf_worker *w, const char *what, long long a, long long b)
{
    if (__atomic_fetch_add(&w->run->failures, 1, __ATOMIC_RELAXED)
        < PF_MAX_FAILURES) {
        ktest_diag("fuzz: worker %u: %s (%lld, %lld)", w->index, what, a, b);
    }
}

/* An errno perfmon_event_attach() may return (kern/perfmon.h). */
static bool
pf_attach_errno(int error)
{
    return error == -ENODEV || error == -ENOENT || error == -EINVAL
           || error == -EAGAIN || error == -EBUSY || error == -ENOMEM
           || error == -ENOSPC;
}

/* ---- the calls ------------------------------------------------------------ */

static void
pf_init(struct pf_worker *w, struct pf_event *e)
{
    uint64_t r = pf_rand(w), id;
    unsigned int flags = (unsigned int)(r % 128);
    int expected, error;

    if (e->attached) {
        return;                 /* misuse the contract does not define */
    }

    if (flags & PERFMON_EF_RAW) {
        id = (r >> 8) % (SWEVENT_NR + 4);
    } else {
        id = (r >> 8) % (PERFMON_NR_EVENTS + 3);
    }

    expected = ((flags & ~PERFMON_EF_MASK) || !(flags & PERFMON_EF_MODE)
                || (!(flags & PERFMON_EF_RAW) && id >= PERFMON_NR_EVENTS))
               ? -EINVAL : 0;
    error = perfmon_event_init(&e->ev, id, flags);

    if (error != expected) {
        pf_fail(w, "init: errno", error, expected);
    }

    e->known = (error == 0);
    e->last = 0;

    if (e->known && perfmon_event_read(&e->ev) != 0) {
        pf_fail(w, "init: count not 0", 0, 0);
    }
}

static void
pf_set_dev(struct pf_worker *w, struct pf_event *e)
{
    uint64_t r = pf_rand(w);
    struct perfmon_dev *dev;
    int expected, error;

    if (!e->known) {
        return;
    }

    if (r % 5 == 0) {
        dev = &pf_unregistered;
    } else {
        dev = perfmon_dev_get((unsigned int)(r >> 8)
                              % (perfmon_nr_devs() + 1));
    }

    expected = e->attached ? -EINVAL : (dev == &pf_unregistered) ? -ENODEV
                                                                  : 0;
    error = perfmon_event_set_dev(&e->ev, dev);

    if (error != expected) {
        pf_fail(w, "set_dev: errno", error, expected);
    }
}

static void
pf_attach(struct pf_worker *w, struct pf_event *e)
{
    uint64_t r = pf_rand(w);
    unsigned int cpu = (unsigned int)(r >> 8) % (cpu_count() + 2);
    int error;

    if (!e->known) {
        return;
    }

    if (r % 3 == 0) {
        error = perfmon_event_attach_cpu(&e->ev, cpu);

        if (!e->attached && cpu >= cpu_count() && error != -EINVAL) {
            pf_fail(w, "attach to CPU not online", error, cpu);
        }

        if (!e->attached && (e->ev.flags & PERFMON_EF_INHERIT)
            && error != -EINVAL) {
            pf_fail(w, "inherited event attached to a CPU", error, cpu);
        }
    } else {
        struct thread *t = (r % 3 == 1 && w->victim != NULL) ? w->victim
                                                            : thread_self();
        error = perfmon_event_attach(&e->ev, t);
    }

    if (e->attached) {
        if (error != -EINVAL) {
            pf_fail(w, "attach of an attached event", error, 0);
        }

        return;
    }

    if (error != 0 && !pf_attach_errno(error)) {
        pf_fail(w, "attach: errno", error, 0);
    }

    e->attached = (error == 0);
}

static void
pf_read(struct pf_worker *w, struct pf_event *e)
{
    uint64_t value;

    if (!e->known) {
        return;
    }

    value = perfmon_event_read(&e->ev);

    if (e->attached ? value < e->last : value != e->last) {
        pf_fail(w, e->attached ? "count went back" : "detached count moved",
                (long long)e->last, (long long)value);
    }

    e->last = MAX(e->last, value);
}

/*
 * Enable or disable some of the worker's events at once: -EINVAL, and
 * nothing done, when one of them is not attached.
 */
static void
pf_enable(struct pf_worker *w)
{
    uint64_t r = pf_rand(w);
    struct perfmon_event *set[PF_EVENTS];
    unsigned int nr = 0;
    bool all_attached = true;
    int error;

    for (unsigned int i = 0; i < PF_EVENTS; i++) {
        struct pf_event *e = &w->events[i];

        if (e->known && (r & (1ULL << (8 + i)))) {
            set[nr++] = &e->ev;
            all_attached &= e->attached;
        }
    }

    error = (r & 1) ? perfmon_events_enable(set, nr)
                    : perfmon_events_disable(set, nr);

    if (error != (all_attached ? 0 : -EINVAL)) {
        pf_fail(w, "enable/disable: errno", error, all_attached);
    }

    for (unsigned int i = 0; i < nr && error == 0; i++) {
        if (perfmon_event_enabled(set[i]) != (r & 1)) {
            pf_fail(w, "enable/disable: state", r & 1, i);
        }
    }
}

/*
 * Put an event in a group led by one of the worker's events: refused for
 * an attached event, or a leader that leads no group.
 */
static void
pf_group(struct pf_worker *w, struct pf_event *e)
{
    uint64_t r = pf_rand(w);
    struct pf_event *l = &w->events[(r >> 8) % PF_EVENTS];
    struct perfmon_event *leader = (r % 4 == 0) ? NULL : &l->ev;
    int expected, error;

    if (!e->known || (leader != NULL && !l->known)) {
        return;
    }

    expected = (e->attached || (leader != NULL && leader != &e->ev
                                && leader->group != leader)) ? -EINVAL : 0;
    error = perfmon_event_set_group(&e->ev, leader);

    if (error != expected) {
        pf_fail(w, "set_group: errno", error, expected);
    }
}

/* A count with its times: running never above enabled. */
static void
pf_times(struct pf_worker *w, struct pf_event *e)
{
    uint64_t enabled, running, value;

    if (!e->known) {
        return;
    }

    value = perfmon_event_read_times(&e->ev, &enabled, &running);

    if (running > enabled) {
        pf_fail(w, "running above enabled", (long long)running,
                (long long)enabled);
    }

    if (e->attached ? value < e->last : value != e->last) {
        pf_fail(w, "times: count went back or moved", (long long)e->last,
                (long long)value);
    }

    e->last = MAX(e->last, value);
}

static void
pf_detach(struct pf_worker *w, struct pf_event *e)
{
    int error;

    if (!e->known) {
        return;
    }

    error = perfmon_event_detach(&e->ev);

    if (error != (e->attached ? 0 : -EINVAL)) {
        pf_fail(w, "detach: errno", error, e->attached);
    }

    if (error == 0) {
        e->attached = false;
        e->last = MAX(e->last, perfmon_event_read(&e->ev));
    }
}

/* NMI context: no lock, an atomic add. */
static void
pf_intr_fn(struct perfmon_dev *dev, unsigned int cpu, uint64_t ovf_mask,
           struct trap_frame *frame, void *arg)
{
    struct pf_run *run = arg;

    (void)dev;
    (void)cpu;
    (void)ovf_mask;
    (void)frame;
    __atomic_fetch_add(&run->callbacks, 1, __ATOMIC_RELAXED);
}

static void
pf_intr(struct pf_worker *w)
{
    int error;

    if (w->intr_handle >= 0) {
        error = perfmon_intr_unregister(w->intr_handle);

        if (error != 0) {
            pf_fail(w, "intr_unregister", error, w->intr_handle);
        }

        w->intr_handle = -1;
        error = perfmon_intr_unregister(PERFMON_MAX_INTR_CALLBACKS + 3);

        if (error != -EINVAL) {
            pf_fail(w, "intr_unregister of no handle", error, 0);
        }

        return;
    }

    error = perfmon_intr_register(pf_intr_fn, w->run);

    if (error < 0 && error != -ENOSPC) {
        pf_fail(w, "intr_register", error, 0);
    }

    w->intr_handle = (error >= 0) ? error : -1;
}

/* The victim: counts, yields and migrates for a while, then exits. */
static void
pf_victim_fn(void *arg)
{
    struct pf_worker *w = arg;
    unsigned int rounds = w->victim_rounds;

    for (unsigned int i = 0; i < rounds; i++) {
        swevent_add(SWEVENT_TEST, 1 + i % 7);

        if (i % 16 == 15) {
            thread_set_affinity(thread_self(),
                                THREAD_CPUMASK(i / 16 % cpu_count()));
        }

        thread_yield();
    }
}

static void
pf_victim(struct pf_worker *w)
{
    uint64_t r = pf_rand(w);
    int error;

    if (w->victim != NULL) {
        if (r % 2 == 0) {
            thread_join(w->victim);     /* its events keep their reference */
            w->victim = NULL;
        }

        return;
    }

    w->victim_rounds = (unsigned int)(r >> 8) % 300;
    error = thread_create(&w->victim, "pf-victim", pf_victim_fn, w,
                          THREAD_CPUMASK((r >> 20) % cpu_count()));

    if (error != 0 && error != -ENOMEM) {
        pf_fail(w, "thread_create", error, 0);
    }

    if (error != 0) {
        w->victim = NULL;
    }
}

static void
pf_move(struct pf_worker *w)
{
    uint64_t r = pf_rand(w);

    if (r % 4 == 0) {
        thread_set_affinity(thread_self(), THREAD_CPUMASK_ALL);
    } else {
        thread_set_affinity(thread_self(),
                            THREAD_CPUMASK((r >> 8) % cpu_count()));
    }

    thread_yield();
}

/* Events of the test event, up to 2^24 at once: narrow counters wrap. */
static void
pf_count(struct pf_worker *w)
{
    uint64_t r = pf_rand(w);

    swevent_add(SWEVENT_TEST, 1 + ((r >> 8) & ((1ULL << (r % 25)) - 1)));

    if (r & 0x10000) {
        thread_yield();
    }
}

static void
pf_call(struct pf_worker *w)
{
    uint64_t r = pf_rand(w);
    struct pf_event *e = &w->events[(r >> 8) % PF_EVENTS];

    switch (r % 15) {
    case 0:
        pf_init(w, e);
        break;
    case 12:
        pf_enable(w);
        break;
    case 13:
        pf_group(w, e);
        break;
    case 14:
        pf_times(w, e);
        break;
    case 1:
        pf_set_dev(w, e);
        break;
    case 2:
    case 3:
        pf_attach(w, e);
        break;
    case 4:
    case 5:
        pf_read(w, e);
        break;
    case 6:
    case 7:
        pf_detach(w, e);
        break;
    case 8:
        pf_intr(w);
        break;
    case 9:
        pf_victim(w);
        break;
    case 10:
        pf_move(w);
        break;
    default:
        pf_count(w);
        break;
    }
}

/* ---- workers -------------------------------------------------------------- */

/* Give back what a worker holds: events, its callback, its victim. */
static void
pf_worker_release(struct pf_worker *w)
{
    for (unsigned int i = 0; i < PF_EVENTS; i++) {
        if (w->events[i].attached) {
            pf_detach(w, &w->events[i]);
        }
    }

    if (w->intr_handle >= 0) {
        perfmon_intr_unregister(w->intr_handle);
        w->intr_handle = -1;
    }

    if (w->victim != NULL) {
        thread_join(w->victim);
        w->victim = NULL;
    }
}

static void
pf_worker_fn(void *arg)
{
    struct pf_worker *w = arg;
    struct pf_run *run = w->run;
    uint64_t calls = 0;

    while (!ktest_expired(run->deadline)) {
        pf_call(w);
        calls++;
    }

    __atomic_fetch_add(&run->calls, calls, __ATOMIC_RELAXED);
    __atomic_fetch_add(&run->parked, 1, __ATOMIC_RELEASE);

    while (!run->release) {
        thread_msleep(1);
    }

    pf_worker_release(w);
}

/* ---- the test ------------------------------------------------------------- */

/* The counters' users, not counting inherited children (of victims). */
static void
pf_count_users(const struct perfmon_pmc_info *info, void *arg)
{
    *(unsigned int *)arg += info->nr_users - info->nr_inherited;
}

static unsigned int
pf_users(void)
{
    unsigned int users = 0;

    perfmon_pmc_foreach(pf_count_users, &users);
    return users;
}

static unsigned int
pf_attached(unsigned int nr_workers)
{
    unsigned int n = 0;

    for (unsigned int i = 0; i < nr_workers; i++) {
        for (unsigned int j = 0; j < PF_EVENTS; j++) {
            n += pf_workers[i].events[j].attached;
        }
    }

    return n;
}

static bool
pf_all_parked(void *arg)
{
    struct pf_run *run = arg;

    return __atomic_load_n(&run->parked, __ATOMIC_ACQUIRE) == cpu_count();
}

/* The seed and the time: boot options, or a seed from the TSC. */
static void
pf_options(uint64_t *seedp, uint64_t *secondsp)
{
    if (cmdline_get_u64("fuzz.seed", seedp) != 0) {
        *seedp = cpu_rdtsc() % 1000000007;
    }

    if (cmdline_get_u64("fuzz.seconds", secondsp) != 0 || *secondsp == 0
        || *secondsp > PF_SECONDS_MAX) {
        *secondsp = PF_SECONDS_DEFAULT;
    }
}

static int
pf_fuzz(void)
{
    struct thread *threads[CPU_MAX];
    unsigned int nr_threads = 0, nr_cpus = cpu_count(), users_before;
    struct pf_run run = { 0 };
    struct perfmon_dev_info info;
    uint64_t seed, seconds;

    pf_options(&seed, &seconds);
    KTEST_ASSERT_EQ(perfmon_dev_get_info(perfmon_dev_find("soft"), &info), 0);
    ktest_diag("perfmon fuzz: seed %llu, %llu s, %u threads, soft PMU %u "
               "bits, overflow by %s (replay: fuzz.seed=%llu)",
               (unsigned long long)seed, (unsigned long long)seconds, nr_cpus,
               info.width, info.overflow_intr ? "nmi" : "poll",
               (unsigned long long)seed);
    users_before = pf_users();
    run.deadline = ktest_deadline((unsigned int)seconds * 1000);

    for (unsigned int i = 0; i < nr_cpus; i++) {
        pf_workers[i] = (struct pf_worker){
            .run = &run, .index = i, .intr_handle = -1,
            .rng = (seed + 1) * 0x9e3779b97f4a7c15ULL + i * 0xbf58476d1ce4e5b9ULL,
        };
        KTEST_CHECK_EQ(thread_create(&threads[i], "pf-worker", pf_worker_fn,
                                     &pf_workers[i], THREAD_CPUMASK(i)), 0);
        nr_threads++;
    }

    KTEST_CHECK(ktest_wait_until(pf_all_parked, &run,
                                 (unsigned int)seconds * 1000
                                 + PF_PARK_WAIT_MS));

    /* Quiescent: every counter user is an event a worker holds. */
    KTEST_CHECK_EQ(pf_users() - users_before, pf_attached(nr_cpus));

out:
    run.release = true;

    while (nr_threads > 0) {
        thread_join(threads[--nr_threads]);
    }

    ktest_diag("perfmon fuzz: %llu calls, %llu overflow callbacks, %u "
               "failures", (unsigned long long)run.calls,
               (unsigned long long)run.callbacks, run.failures);

    /* Past the cleanup: these return instead of jumping back to it. */
    KTEST_ASSERT_EQ(run.failures, 0);
    KTEST_ASSERT_EQ(pf_users(), users_before);
    return ktest_result();
}

KTEST_DEFINE_HIDDEN(perfmon, fuzz, pf_fuzz);
