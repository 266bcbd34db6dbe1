/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel tests of multiplexing with the software PMU limited to 2
 * counters (boot with softpmu.counters=2; they skip otherwise): six
 * events on the test event stream, which count each event twice between
 * them, and whose estimates are each within 5% of the true total over
 * the time the host ran the CPU; two events of a group always with equal
 * running times; a pinned event exact while four others take turns; and
 * threads attaching, reading, detaching and migrating while their events
 * take turns, with counts that never go back.
 *
 * Six events counting the same event need six counter slots: each leads
 * a group of its own, and slots are never shared across groups.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/error.h"
#include "kern/ktest.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/swevent.h"
#include "kern/thread.h"
#include "tests/kernel/ktest_util.h"

#define MT_COUNTERS     2
/* To add events for, per test: 250 turns at the default perfmon.mux_ms. */
#define MT_RUN_MS       1000
#define MT_BATCH        10              /* events added at a time */
#define MT_TORTURE_MS   1500
#define MT_THREADS      4

static struct perfmon_dev *
mt_soft(void)
{
    return perfmon_dev_find("soft");
}

/* Whether the software PMU was booted with MT_COUNTERS counters. */
static bool
mt_ready(void)
{
    struct perfmon_dev_info info;

    if (perfmon_dev_get_info(mt_soft(), &info) != 0
        || info.nr_pmcs != MT_COUNTERS) {
        ktest_skip_reason("needs softpmu.counters=2");
        return false;
    }

    return true;
}

/*
 * A test event of its own slot: flags, leading its own group, or in
 * leader's (NULL: its own).
 */
static int
mt_init(struct perfmon_event *ev, unsigned int flags,
        struct perfmon_event *leader)
{
    int error = perfmon_event_init(ev, PERFMON_EV_TEST,
                                   flags | PERFMON_EF_DISABLED);

    if (error == 0) {
        error = perfmon_event_set_dev(ev, mt_soft());
    }

    if (error == 0) {
        error = perfmon_event_set_group(ev, (leader != NULL) ? leader : ev);
    }

    return error;
}

/* mt_init(), then attached to cpu. */
static int
mt_attach_cpu(struct perfmon_event *ev, unsigned int flags,
              struct perfmon_event *leader, unsigned int cpu)
{
    int error = mt_init(ev, flags, leader);

    if (error == 0) {
        error = perfmon_event_attach_cpu(ev, cpu);
    }

    return error;
}

/*
 * The nr events of evs, each counting the kernel in a slot of its own,
 * attached to cpu and added to the set at set[*np].
 */
static int
mt_attach_set(struct perfmon_event *evs, unsigned int nr, unsigned int cpu,
              struct perfmon_event **set, unsigned int *np)
{
    for (unsigned int i = 0; i < nr; i++) {
        int error = mt_attach_cpu(&evs[i], PERFMON_EF_KERN, NULL, cpu);

        if (error) {
            return error;
        }

        set[(*np)++] = &evs[i];
    }

    return 0;
}

/* Add test events at a steady rate for ms; the number added. */
static uint64_t
mt_add_steadily(unsigned int ms)
{
    uint64_t deadline = ktest_deadline(ms), added = 0;

    while (!ktest_expired(deadline)) {
        swevent_add(SWEVENT_TEST, MT_BATCH);
        added += MT_BATCH;

        for (volatile unsigned int i = 0; i < 200; i++) {
            continue;
        }
    }

    return added;
}

/*
 * Enable the n events of set, add test events for MT_RUN_MS, then disable
 * them: the number added in *addedp.
 */
static int
mt_run(struct perfmon_event **set, unsigned int n, uint64_t *addedp)
{
    int error = perfmon_events_enable(set, n);

    if (error) {
        return error;
    }

    *addedp = mt_add_steadily(MT_RUN_MS);
    return perfmon_events_disable(set, n);
}

static void
mt_detach(struct perfmon_event *evs, unsigned int nr)
{
    for (unsigned int i = 0; i < nr; i++) {
        if (perfmon_event_attached(&evs[i])) {
            perfmon_event_detach(&evs[i]);
        }
    }
}

/* The estimate of what an event counted for running ns of enabled ns. */
static uint64_t
mt_estimate(uint64_t count, uint64_t enabled, uint64_t running)
{
    return (running == 0) ? 0 : count * (enabled / 1000)
                                / MAX(running / 1000, 1);
}

/*
 * What the six events of mt_six_estimates counted, ran and were enabled
 * for, summed over the steps the host ran this CPU through.  A step adds
 * test events for the TSC time since the last (MT_RATE_PER_US a
 * microsecond: a stream as steady as the time the events run by, however
 * fast the host runs the CPU), then reads the six.  A step that took
 * longer than MT_STALL_US is left out, with the step after it (whose
 * reads began in it): the host held the virtual CPU, nothing was added
 * while the events in their turn ran, and their estimates would fall
 * short however right the kernel is.
 */
struct mt_six {
    uint64_t count[6], enabled[6], running[6];
    uint64_t last_count[6], last_enabled[6], last_running[6];
    uint64_t added;                     /* in the steps kept */
    unsigned int nr_steps, nr_left_out;
};

#define MT_RATE_PER_US  2

/* Far longer than a step when the CPU runs (a few us under TCG). */
#define MT_STALL_US     20

/* Read the six events. */
static void
mt_six_read(struct perfmon_event *evs, uint64_t count[6], uint64_t enabled[6],
            uint64_t running[6])
{
    for (unsigned int i = 0; i < 6; i++) {
        count[i] = perfmon_event_read_times(&evs[i], &enabled[i], &running[i]);
    }
}

/* The step read into count, enabled and running, adding n: kept or not. */
static void
mt_six_step(struct mt_six *six, const uint64_t count[6],
            const uint64_t enabled[6], const uint64_t running[6], uint64_t n,
            bool keep)
{
    for (unsigned int i = 0; i < 6; i++) {
        if (keep) {
            six->count[i] += count[i] - six->last_count[i];
            six->enabled[i] += enabled[i] - six->last_enabled[i];
            six->running[i] += running[i] - six->last_running[i];
        }

        six->last_count[i] = count[i];
        six->last_enabled[i] = enabled[i];
        six->last_running[i] = running[i];
    }

    six->added += keep ? n : 0;
    six->nr_left_out += !keep;
    six->nr_steps++;
}

/* Add test events a step at a time for MT_RUN_MS; the number added. */
static uint64_t
mt_six_add(struct perfmon_event *evs, struct mt_six *six)
{
    uint64_t deadline = ktest_deadline(MT_RUN_MS), added = 0;
    uint64_t stall = cpu_tsc_freq() / 1000000 * MT_STALL_US;
    uint64_t unit = MAX(cpu_tsc_freq() / 1000000 / MT_RATE_PER_US, 1);
    uint64_t count[6], enabled[6], running[6], last, now, end, owed = 0;

    mt_six_read(evs, six->last_count, six->last_enabled, six->last_running);
    last = cpu_rdtsc();

    while (!ktest_expired(deadline)) {
        uint64_t n;

        /* The events for the time since the last step, if it ran. */
        now = cpu_rdtsc();
        owed += (now - last <= stall) ? now - last : 0;
        n = owed / unit;
        owed %= unit;
        swevent_add(SWEVENT_TEST, n);
        added += n;
        mt_six_read(evs, count, enabled, running);

        /* The reads span this step and the last: both ran, or left out. */
        end = cpu_rdtsc();
        mt_six_step(six, count, enabled, running, n,
                    end - last <= 2 * stall);
        last = now;
    }

    return added;
}

/*
 * Six events over two counters.  Exactly two count at any time: together
 * they counted each event added twice, and ran twice as long as they
 * were enabled.  Each estimates the total within 5% over the steps the
 * host let run steadily.
 */
static int
mt_six_estimates(void)
{
    struct perfmon_event evs[6] = { 0 };
    struct perfmon_event *set[6];
    struct mt_six six = { .added = 0 };
    uint64_t saved, added, enabled, running, counted = 0, ran = 0;
    unsigned int cpu, n = 0;

    if (!mt_ready()) {
        return KTEST_SKIP;
    }

    saved = ktest_pin_self(&cpu);
    KTEST_CHECK_EQ(mt_attach_set(evs, 6, cpu, set, &n), 0);
    KTEST_CHECK_EQ(perfmon_events_enable(set, n), 0);
    added = mt_six_add(evs, &six);
    KTEST_CHECK_EQ(perfmon_events_disable(set, n), 0);
    ktest_diag("%u steps, %u left out for a stall of the CPU",
               six.nr_steps, six.nr_left_out);

    for (unsigned int i = 0; i < 6; i++) {
        uint64_t count = perfmon_event_read_times(&evs[i], &enabled,
                                                  &running);
        uint64_t steady = mt_estimate(six.count[i], six.enabled[i],
                                      six.running[i]);

        ktest_diag("event %u: %llu of %llu added, ran %llu%% of its time; "
                   "steadily: %llu of %llu", i,
                   (unsigned long long)mt_estimate(count, enabled, running),
                   (unsigned long long)added,
                   (unsigned long long)(running * 100 / MAX(enabled, 1)),
                   (unsigned long long)steady,
                   (unsigned long long)six.added);
        KTEST_CHECK(running < enabled);
        KTEST_CHECK(steady * 20 >= six.added * 19
                    && steady * 20 <= six.added * 21);
        counted += count;
        ran += running;
    }

    KTEST_CHECK_EQ(counted, MT_COUNTERS * added);
    KTEST_CHECK(ran <= MT_COUNTERS * enabled + 6);
    KTEST_CHECK(ran + 6 >= MT_COUNTERS * enabled * 99 / 100);
    KTEST_CHECK(six.added * 2 >= added);

out:
    mt_detach(evs, 6);
    ktest_unpin_self(saved);
    return ktest_result();
}

KTEST_DEFINE(mux, six_estimates, mt_six_estimates);

/*
 * A group of two slots (test:k and test:uk) and two others take turns on
 * two counters: the group's members always ran for exactly as long, and
 * counted the same; a pinned event beside four flexible ones is exact.
 */
static int
mt_group_and_pinned(void)
{
    struct perfmon_event g[2] = { 0 }, others[4] = { 0 }, pin = { 0 };
    struct perfmon_event *set[7];
    uint64_t saved, added, e0, r0, e1, r1, c0, c1;
    unsigned int cpu, n = 0;

    if (!mt_ready()) {
        return KTEST_SKIP;
    }

    saved = ktest_pin_self(&cpu);
    KTEST_CHECK_EQ(mt_attach_cpu(&g[0], PERFMON_EF_KERN, NULL, cpu), 0);
    KTEST_CHECK_EQ(mt_attach_cpu(&g[1], PERFMON_EF_MODE, &g[0], cpu), 0);
    set[n++] = &g[0];
    set[n++] = &g[1];
    KTEST_CHECK_EQ(mt_attach_set(others, 2, cpu, set, &n), 0);
    KTEST_CHECK_EQ(mt_run(set, n, &added), 0);
    c0 = perfmon_event_read_times(&g[0], &e0, &r0);
    c1 = perfmon_event_read_times(&g[1], &e1, &r1);
    ktest_diag("group: %llu and %llu counted in %llu and %llu ns of %llu",
               (unsigned long long)c0, (unsigned long long)c1,
               (unsigned long long)r0, (unsigned long long)r1,
               (unsigned long long)e0);
    KTEST_CHECK_EQ(r0, r1);
    KTEST_CHECK_EQ(c0, c1);
    KTEST_CHECK(r0 > 0 && r0 < e0);
    mt_detach(g, 2);
    mt_detach(others, 2);

    /* A pinned event, and four that share the counter left. */
    n = 0;
    KTEST_CHECK_EQ(mt_attach_cpu(&pin, PERFMON_EF_KERN | PERFMON_EF_PINNED,
                                 NULL, cpu), 0);
    set[n++] = &pin;
    KTEST_CHECK_EQ(mt_attach_set(others, 4, cpu, set, &n), 0);
    KTEST_CHECK_EQ(mt_run(set, n, &added), 0);
    KTEST_CHECK_EQ(perfmon_event_read_times(&pin, &e0, &r0), added);
    KTEST_CHECK_EQ(r0, e0);

out:
    mt_detach(g, 2);
    mt_detach(others, 4);
    mt_detach(&pin, 1);
    ktest_unpin_self(saved);
    return ktest_result();
}

KTEST_DEFINE(mux, group_and_pinned, mt_group_and_pinned);

/* ---- torture -------------------------------------------------------------- */

struct mt_worker {
    struct thread *thread;
    unsigned int index;
    volatile bool failed;
    unsigned int rounds;
};

static volatile bool mt_stop;

/*
 * Attach three events of their own slots to itself, add, read (counts
 * never go back), hop to another CPU, detach, again; three workers and
 * the slots of each other's events keep every CPU's two counters busy.
 */
static void
mt_worker_main(void *arg)
{
    struct mt_worker *w = arg;
    unsigned int nr_cpus = cpu_count();

    for (unsigned int round = 0; !mt_stop; round++) {
        struct perfmon_event evs[3];
        uint64_t last[3] = { 0 };

        for (unsigned int i = 0; i < 3; i++) {
            if (mt_init(&evs[i], PERFMON_EF_KERN, NULL) != 0
                || perfmon_event_enable(&evs[i]) != -EINVAL
                || perfmon_event_attach(&evs[i], thread_self()) != 0
                || perfmon_event_enable(&evs[i]) != 0) {
                w->failed = true;
            }
        }

        for (unsigned int step = 0; step < 20; step++) {
            swevent_add(SWEVENT_TEST, 1);

            for (unsigned int i = 0; i < 3; i++) {
                uint64_t v = perfmon_event_read(&evs[i]);

                if (v < last[i]) {
                    w->failed = true;
                }

                last[i] = v;
            }

            if (step % 5 == 0) {
                thread_set_affinity(thread_self(),
                                    1ULL << ((w->index + round + step)
                                             % nr_cpus));
            }
        }

        for (unsigned int i = 0; i < 3; i++) {
            if (perfmon_event_detach(&evs[i]) != 0
                || perfmon_event_read(&evs[i]) < last[i]) {
                w->failed = true;
            }
        }

        w->rounds++;
    }

    thread_set_affinity(thread_self(), THREAD_CPUMASK_ALL);
}

static int
mt_torture(void)
{
    struct mt_worker workers[MT_THREADS] = { 0 };
    struct perfmon_event cpu_evs[CPU_MAX] = { 0 };
    unsigned int nr_cpus = cpu_count(), started = 0;

    if (!mt_ready()) {
        return KTEST_SKIP;
    }

    /* A CPU event on each CPU, so that they all have turns to take. */
    for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
        KTEST_CHECK_EQ(mt_attach_cpu(&cpu_evs[cpu], PERFMON_EF_MODE, NULL,
                                     cpu), 0);
        KTEST_CHECK_EQ(perfmon_event_enable(&cpu_evs[cpu]), 0);
    }

    mt_stop = false;

    for (unsigned int i = 0; i < MT_THREADS; i++) {
        workers[i].index = i;
        KTEST_CHECK_EQ(thread_create(&workers[i].thread, "mux-torture",
                                     mt_worker_main, &workers[i],
                                     THREAD_CPUMASK_ALL), 0);
        started++;
    }

    thread_msleep(MT_TORTURE_MS);

out:
    mt_stop = true;

    for (unsigned int i = 0; i < started; i++) {
        thread_join(workers[i].thread);
        ktest_diag("worker %u: %u rounds%s", i, workers[i].rounds,
                   workers[i].failed ? ", FAILED" : "");

        if (workers[i].failed || workers[i].rounds == 0) {
            ktest_fail();
        }
    }

    mt_detach(cpu_evs, nr_cpus);
    return ktest_result();
}

KTEST_DEFINE(mux, torture, mt_torture);
