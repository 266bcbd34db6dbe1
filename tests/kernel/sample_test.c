/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel tests of sampling, with the software PMU in NMI mode (its
 * default; they skip in softpmu.overflow=poll):
 *
 *   - a fixed period on the `test` event: a thread adding exactly K * N
 *     gets exactly K samples, all with its tid, and an exact count;
 *   - cpu-clock at 1000 Hz on a busy loop for about a second: one sample
 *     per millisecond the CPU spent in the loop (counted against the clock
 *     ticks that CPU took, which a host that preempts the vCPU delays
 *     alike), and at least 90% of them inside the loop's function;
 *   - call chains: the callers of the function that made the events, in
 *     order;
 *   - a tiny buffer at a high rate: lost samples counted, every kept one
 *     whole;
 *   - sampling on all CPUs while threads migrate: counts stay exact, no
 *     assertion, no deadlock;
 *   - a pathological period (a sample per clock cycle): throttled, and a
 *     sleeping thread still wakes in time.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/clock.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/ktest.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_ring.h"
#include "kern/printf.h"
#include "kern/string.h"
#include "kern/swevent.h"
#include "kern/symtab.h"
#include "kern/syscnt.h"
#include "kern/thread.h"

#define ST_FIELDS   (PERFMON_SF_IP | PERFMON_SF_TID | PERFMON_SF_TIME     \
                     | PERFMON_SF_CPU | PERFMON_SF_PERIOD)

/* One record at a time, drained into this (the tests run one by one). */
static uint64_t st_rec[PERFMON_RING_MAX_REC / sizeof(uint64_t)];

/* What a buffer held, for the CPUs in cpus (a mask). */
struct st_drained {
    unsigned int nr_samples;
    unsigned int nr_bad;                /* records that do not decode */
    unsigned int nr_other_tid;          /* samples of another thread */
    unsigned int nr_in_fn;              /* samples inside the function */
    unsigned int nr_throttles;
    uint64_t period_sum;
};

static struct perfmon_dev *
st_soft(void)
{
    return perfmon_dev_find("soft");
}

/* The soft PMU samples: it has its overflow interrupt. */
static bool
st_can_sample(void)
{
    struct perfmon_dev_info info;

    if (st_soft() == NULL || perfmon_dev_get_info(st_soft(), &info) != 0
        || !info.overflow_intr) {
        ktest_skip_reason("the soft PMU is polled (softpmu.overflow=poll)");
        return false;
    }

    return true;
}

static unsigned int
st_cpu_now(void)
{
    unsigned int cpu;

    thread_preempt_disable();
    cpu = cpu_id();
    thread_preempt_enable();
    return cpu;
}

/* Pin the caller where it runs; returns its old affinity. */
static uint64_t
st_pin(unsigned int *cpup)
{
    uint64_t saved = thread_get_affinity(thread_self());

    *cpup = st_cpu_now();
    thread_set_affinity(thread_self(), THREAD_CPUMASK(*cpup));
    *cpup = st_cpu_now();
    return saved;
}

static uint64_t
st_syscnt(const char *prefix, unsigned int cpu)
{
    char name[SYSCNT_NAME_SIZE];
    struct syscnt *s;

    ksnprintf(name, sizeof(name), "%s/%u", prefix, cpu);
    s = syscnt_lookup(name);
    return (s == NULL) ? 0 : syscnt_read(s);
}

/*
 * Drain every CPU's ring; tid: the thread samples should be of (0: any);
 * fn: the function whose samples are counted (NULL: none).
 */
static void
st_drain(struct perfmon_sbuf *sbuf, unsigned int tid, const char *fn,
         struct st_drained *d)
{
    memset(d, 0, sizeof(*d));

    for (unsigned int cpu = 0; cpu < perfmon_sbuf_nr_cpus(sbuf); cpu++) {
        size_t size;

        while ((size = perfmon_sbuf_read(sbuf, cpu, st_rec, sizeof(st_rec)))
               != 0) {
            const struct perfmon_rec_hdr *hdr = (const void *)st_rec;
            struct perfmon_sample s;
            uint64_t offset;
            const char *name;

            if (hdr->type == PERFMON_REC_THROTTLE) {
                d->nr_throttles++;
                continue;
            }

            if (perfmon_sample_decode(st_rec, size, &s) != 0) {
                d->nr_bad++;
                continue;
            }

            d->nr_samples++;
            d->period_sum += s.period;
            d->nr_other_tid += (tid != 0 && s.tid != tid);
            name = symtab_lookup(s.ip, &offset);
            d->nr_in_fn += (fn != NULL && name != NULL
                            && strcmp(name, fn) == 0);
        }
    }
}

static int
st_attach(struct perfmon_event *ev, unsigned int id, unsigned int flags,
          const struct perfmon_sampling *sampling, struct thread *thread,
          unsigned int cpu)
{
    int error = perfmon_event_init(ev, id, flags);

    if (error == 0) {
        error = perfmon_event_set_dev(ev, st_soft());
    }

    if (error == 0) {
        error = perfmon_event_set_sampling(ev, sampling);
    }

    if (error == 0) {
        error = (thread != NULL) ? perfmon_event_attach(ev, thread)
                                 : perfmon_event_attach_cpu(ev, cpu);
    }

    return error;
}

/* ---- a fixed period ------------------------------------------------------- */

#define ST_PERIOD   1000
#define ST_ROUNDS   200

static int
st_fixed_period(void)
{
    struct perfmon_sampling s = { .period = ST_PERIOD, .fields = ST_FIELDS };
    struct perfmon_event ev;
    struct st_drained d;
    uint64_t total = 0;
    int result = KTEST_PASS;

    if (!st_can_sample()) {
        return KTEST_SKIP;
    }

    KTEST_ASSERT_EQ(perfmon_sbuf_create(&s.sbuf, 65536), 0);

    if (st_attach(&ev, PERFMON_EV_TEST, PERFMON_EF_KERN, &s, thread_self(),
                  0) != 0) {
        perfmon_sbuf_destroy(s.sbuf);
        KTEST_ASSERT(false);
    }

    /* Odd chunks, with yields: K * N in all, across switches. */
    for (unsigned int i = 0; total < ST_ROUNDS * ST_PERIOD; i++) {
        uint64_t n = MIN(1 + (i * 37) % 700, ST_ROUNDS * ST_PERIOD - total);

        swevent_add(SWEVENT_TEST, n);
        total += n;

        if (i % 50 == 0) {
            thread_yield();
        }
    }

    if (perfmon_event_read(&ev) != total) {
        ktest_diag("count %llu, expected %llu",
                   (unsigned long long)perfmon_event_read(&ev),
                   (unsigned long long)total);
        result = KTEST_FAIL;
    }

    perfmon_event_detach(&ev);
    st_drain(s.sbuf, thread_id(thread_self()), NULL, &d);
    perfmon_sbuf_destroy(s.sbuf);
    ktest_diag("%u samples, %u of another thread, %u bad", d.nr_samples,
               d.nr_other_tid, d.nr_bad);
    KTEST_ASSERT_EQ(d.nr_samples, ST_ROUNDS);
    KTEST_ASSERT_EQ(d.nr_other_tid, 0);
    KTEST_ASSERT_EQ(d.nr_bad, 0);
    KTEST_ASSERT(d.period_sum == ST_ROUNDS * ST_PERIOD);
    return result;
}

KTEST_DEFINE(sample, fixed_period, st_fixed_period);

/* ---- cpu-clock on a busy loop ----------------------------------------------- */

static void __attribute__((noinline))
st_busy_loop(uint64_t until)
{
    while (cpu_rdtsc() < until) {
        cpu_pause();
    }
}

static int
st_clock_rate(void)
{
    struct perfmon_sampling s = { .freq = 1000, .fields = ST_FIELDS };
    uint64_t saved, ticks = 0, hz = cpu_tsc_freq();
    struct perfmon_event ev;
    struct st_drained d;
    unsigned int cpu;
    int error;

    if (!st_can_sample()) {
        return KTEST_SKIP;
    }

    KTEST_ASSERT(hz != 0);
    s.period = hz / 1000;
    KTEST_ASSERT_EQ(perfmon_sbuf_create(&s.sbuf, 256 * 1024), 0);
    saved = st_pin(&cpu);
    error = st_attach(&ev, PERFMON_EV_TASK_CLOCK, PERFMON_EF_KERN, &s, NULL,
                      cpu);

    if (error == 0) {
        ticks = st_syscnt("clock_ticks", cpu);
        st_busy_loop(cpu_rdtsc() + hz);
        ticks = st_syscnt("clock_ticks", cpu) - ticks;
        perfmon_event_detach(&ev);
    }

    thread_set_affinity(thread_self(), saved);
    st_drain(s.sbuf, 0, "st_busy_loop", &d);
    perfmon_sbuf_destroy(s.sbuf);
    KTEST_ASSERT_EQ(error, 0);
    ktest_diag("%u samples over %llu ticks, %u in the loop", d.nr_samples,
               (unsigned long long)ticks, d.nr_in_fn);

    /* A sample per tick the CPU took, within 10%. */
    KTEST_ASSERT(d.nr_samples * 10 >= ticks * 9);
    KTEST_ASSERT(d.nr_samples * 10 <= ticks * 11);
    KTEST_ASSERT(d.nr_in_fn * 10 >= d.nr_samples * 9);
    KTEST_ASSERT_EQ(d.nr_bad, 0);
    return KTEST_PASS;
}

KTEST_DEFINE(sample, clock_rate, st_clock_rate);

/* ---- call chains ------------------------------------------------------------ */

static volatile unsigned int st_depth;

static void __attribute__((noinline))
st_chain_c(void)
{
    swevent_add(SWEVENT_TEST, 10);
    st_depth++;
}

static void __attribute__((noinline))
st_chain_b(void)
{
    st_chain_c();
    st_depth++;
}

static void __attribute__((noinline))
st_chain_a(void)
{
    st_chain_b();
    st_depth++;
}

/* The positions of a, b and c in the chain, callees first: c < b < a. */
static bool
st_chain_in_order(const struct perfmon_sample *s)
{
    static const char *const names[] = { "st_chain_c", "st_chain_b",
                                         "st_chain_a" };
    unsigned int next = 0;

    for (unsigned int i = 0; i < s->nr_ips && next < ARRAY_SIZE(names);
         i++) {
        uint64_t offset;
        const char *name = symtab_lookup(s->ips[i], &offset);

        if (name != NULL && strcmp(name, names[next]) == 0) {
            next++;
        }
    }

    return next == ARRAY_SIZE(names);
}

static int
st_callchain(void)
{
    struct perfmon_sampling s = {
        .period = 10, .fields = ST_FIELDS | PERFMON_SF_CALLCHAIN,
    };
    unsigned int nr = 0, nr_ordered = 0, cpu;
    struct perfmon_event ev;
    uint64_t saved;
    size_t size;

    if (!st_can_sample()) {
        return KTEST_SKIP;
    }

    KTEST_ASSERT_EQ(perfmon_sbuf_create(&s.sbuf, 65536), 0);
    saved = st_pin(&cpu);

    if (st_attach(&ev, PERFMON_EV_TEST, PERFMON_EF_KERN, &s, thread_self(),
                  0) == 0) {
        for (unsigned int i = 0; i < 20; i++) {
            st_chain_a();
        }

        perfmon_event_detach(&ev);
    }

    thread_set_affinity(thread_self(), saved);

    while ((size = perfmon_sbuf_read(s.sbuf, cpu, st_rec, sizeof(st_rec)))
           != 0) {
        struct perfmon_sample sample;

        if (perfmon_sample_decode(st_rec, size, &sample) == 0) {
            nr++;
            nr_ordered += st_chain_in_order(&sample);
        }
    }

    perfmon_sbuf_destroy(s.sbuf);
    ktest_diag("%u samples, %u with a, b, c in order", nr, nr_ordered);
    KTEST_ASSERT_EQ(nr, 20);
    KTEST_ASSERT_EQ(nr_ordered, 20);
    return KTEST_PASS;
}

KTEST_DEFINE(sample, callchain, st_callchain);

/* ---- a tiny buffer --------------------------------------------------------- */

static int
st_tiny_buffer(void)
{
    struct perfmon_sampling s = {
        .period = 1, .fields = ST_FIELDS | PERFMON_SF_CALLCHAIN,
    };
    struct perfmon_event ev;
    struct st_drained d;
    uint64_t lost = 0;
    unsigned int cpu;
    uint64_t saved;

    if (!st_can_sample()) {
        return KTEST_SKIP;
    }

    KTEST_ASSERT_EQ(perfmon_sbuf_create(&s.sbuf, PERFMON_SBUF_MIN), 0);
    saved = st_pin(&cpu);

    if (st_attach(&ev, PERFMON_EV_TEST, PERFMON_EF_KERN, &s, thread_self(),
                  0) == 0) {
        for (unsigned int i = 0; i < 2000; i++) {
            swevent_add(SWEVENT_TEST, 1);
        }

        perfmon_event_detach(&ev);
    }

    thread_set_affinity(thread_self(), saved);
    lost = perfmon_sbuf_lost(s.sbuf, cpu);
    st_drain(s.sbuf, 0, NULL, &d);
    perfmon_sbuf_destroy(s.sbuf);
    ktest_diag("%u kept, %llu lost", d.nr_samples, (unsigned long long)lost);
    KTEST_ASSERT(lost > 0);
    KTEST_ASSERT(d.nr_samples > 0);
    KTEST_ASSERT_EQ(d.nr_bad, 0);
    KTEST_ASSERT(d.nr_samples + lost == 2000);
    return KTEST_PASS;
}

KTEST_DEFINE(sample, tiny_buffer, st_tiny_buffer);

/* ---- all CPUs, threads migrating --------------------------------------------- */

#define ST_MOVERS       4

struct st_mover {
    volatile bool stop;
    volatile bool done;
    uint64_t added;
};

static void
st_mover_fn(void *arg)
{
    struct st_mover *m = arg;
    unsigned int n = cpu_count();

    for (unsigned int i = 0; !m->stop; i++) {
        uint64_t amount = 1 + (i * 7919) % 500;

        thread_set_affinity(thread_self(), THREAD_CPUMASK(i % n));
        swevent_add(SWEVENT_TEST, amount);
        m->added += amount;
    }

    m->done = true;
}

static int
st_migrating(void)
{
    struct perfmon_sampling s = { .period = 97, .fields = ST_FIELDS };
    struct perfmon_event cpu_evs[CPU_MAX];
    struct st_mover movers[ST_MOVERS];
    struct thread *threads[ST_MOVERS];
    unsigned int nr_cpus = cpu_count(), nr_threads = 0, nr_attached = 0;
    uint64_t added = 0, counted;
    struct st_drained d;
    int error = 0;

    if (!st_can_sample()) {
        return KTEST_SKIP;
    }

    KTEST_ASSERT_EQ(perfmon_sbuf_create(&s.sbuf, 65536), 0);
    memset(movers, 0, sizeof(movers));

    /* Every add happens on some CPU: the CPU events count them all. */
    for (unsigned int cpu = 0; cpu < nr_cpus && error == 0; cpu++) {
        error = st_attach(&cpu_evs[cpu], PERFMON_EV_TEST, PERFMON_EF_KERN,
                          &s, NULL, cpu);
        nr_attached += (error == 0);
    }

    for (unsigned int i = 0; i < ST_MOVERS && error == 0; i++) {
        error = thread_create(&threads[i], "sample-mover", st_mover_fn,
                              &movers[i], THREAD_CPUMASK_ALL);
        nr_threads += (error == 0);
    }

    thread_msleep(2000);

    for (unsigned int i = 0; i < nr_threads; i++) {
        movers[i].stop = true;
        thread_join(threads[i]);
        added += movers[i].added;
    }

    counted = 0;

    for (unsigned int cpu = 0; cpu < nr_attached; cpu++) {
        counted += perfmon_event_read(&cpu_evs[cpu]);
        perfmon_event_detach(&cpu_evs[cpu]);
    }

    st_drain(s.sbuf, 0, NULL, &d);
    perfmon_sbuf_destroy(s.sbuf);
    KTEST_ASSERT_EQ(error, 0);
    ktest_diag("%llu added, %llu counted, %u samples",
               (unsigned long long)added, (unsigned long long)counted,
               d.nr_samples);
    KTEST_ASSERT(counted == added);
    KTEST_ASSERT(d.nr_samples > 0);
    KTEST_ASSERT(d.nr_samples <= added / 97 + nr_cpus);
    KTEST_ASSERT_EQ(d.nr_bad, 0);
    return KTEST_PASS;
}

KTEST_DEFINE(sample, migrating, st_migrating);

/* ---- a pathological period ----------------------------------------------------- */

/*
 * A thread adding to the `test` event as fast as it can, with a sample for
 * every event: each add raises an NMI that writes a sample, so nearly all
 * the CPU's time goes to sampling, far more than the share allowed.
 */
static void
st_storm_fn(void *arg)
{
    struct st_mover *m = arg;

    while (!m->stop) {
        swevent_add(SWEVENT_TEST, 1);
        m->added++;
    }

    m->done = true;
}

static int
st_throttle(void)
{
    struct perfmon_sampling s = { .period = 1, .fields = ST_FIELDS };
    uint64_t saved, throttles, start, slept_ms = 0;
    struct st_mover storm = { .stop = false };
    struct perfmon_event ev;
    struct thread *thread;
    struct st_drained d;
    unsigned int cpu;
    int error;

    if (!st_can_sample()) {
        return KTEST_SKIP;
    }

    KTEST_ASSERT_EQ(perfmon_sbuf_create(&s.sbuf, 65536), 0);
    saved = st_pin(&cpu);
    throttles = st_syscnt("perfmon_nr_throttles", cpu);
    error = thread_create(&thread, "sample-storm", st_storm_fn, &storm,
                          THREAD_CPUMASK(cpu));

    if (error == 0) {
        error = st_attach(&ev, PERFMON_EV_TEST, PERFMON_EF_KERN, &s, thread,
                          0);
        start = clock_get_time();

        /* The caller shares the CPU with the storm, and sleeps. */
        for (unsigned int i = 0; i < 10; i++) {
            thread_msleep(100);
        }

        slept_ms = clock_ms_from_ticks(clock_get_time() - start);
        storm.stop = true;
        thread_join(thread);

        if (error == 0) {
            perfmon_event_detach(&ev);
        }
    }

    throttles = st_syscnt("perfmon_nr_throttles", cpu) - throttles;
    thread_set_affinity(thread_self(), saved);
    st_drain(s.sbuf, 0, NULL, &d);
    perfmon_sbuf_destroy(s.sbuf);
    KTEST_ASSERT_EQ(error, 0);
    ktest_diag("slept 10 x 100 ms in %llu ms, %llu throttles, %llu events, "
               "%u samples, last period %llu",
               (unsigned long long)slept_ms, (unsigned long long)throttles,
               (unsigned long long)storm.added, d.nr_samples,
               (unsigned long long)(d.nr_samples ? d.period_sum / d.nr_samples
                                                 : 0));

    /* Ten sleeps of 100 ms took less than 2 s: the CPU stayed usable. */
    KTEST_ASSERT(slept_ms < 2000);
    KTEST_ASSERT(throttles > 0);
    KTEST_ASSERT(d.nr_samples < storm.added);
    KTEST_ASSERT_EQ(d.nr_bad, 0);
    return KTEST_PASS;
}

KTEST_DEFINE(sample, throttle, st_throttle);
