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
 *     order, and none past a frame that is no caller (the NMI stores the
 *     frames raw, the read cuts them there);
 *   - a tiny buffer at a high rate: lost samples counted, every kept one
 *     whole;
 *   - sampling on all CPUs while threads migrate: counts stay exact, no
 *     assertion, no deadlock;
 *   - a pathological period (a sample per clock cycle): throttled within
 *     three windows of the time its CPU ran, however little the host runs
 *     it, and a sleeping thread still wakes in time.
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
#include "kern/perfmon_control.h"
#include "kern/perfmon_ring.h"
#include "kern/printf.h"
#include "kern/string.h"
#include "kern/swevent.h"
#include "kern/symtab.h"
#include "kern/syscnt.h"
#include "kern/thread.h"
#include "tests/kernel/ktest_util.h"

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

/* Detach an event if it is attached (cleanup paths). */
static void
st_detach(struct perfmon_event *ev)
{
    if (perfmon_event_attached(ev)) {
        perfmon_event_detach(ev);
    }
}

/* ---- a fixed period ------------------------------------------------------- */

#define ST_PERIOD   1000
#define ST_ROUNDS   200

static int
st_fixed_period(void)
{
    struct perfmon_sampling s = { .period = ST_PERIOD, .fields = ST_FIELDS };
    struct perfmon_event ev = { .state = 0 };
    struct st_drained d;
    uint64_t total = 0;

    if (!st_can_sample()) {
        return KTEST_SKIP;
    }

    KTEST_ASSERT_EQ(perfmon_sbuf_create(&s.sbuf, 65536), 0);
    KTEST_CHECK_EQ(st_attach(&ev, PERFMON_EV_TEST, PERFMON_EF_KERN, &s,
                             thread_self(), 0), 0);

    /* Odd chunks, with yields: K * N in all, across switches. */
    for (unsigned int i = 0; total < ST_ROUNDS * ST_PERIOD; i++) {
        uint64_t n = MIN(1 + (i * 37) % 700, ST_ROUNDS * ST_PERIOD - total);

        swevent_add(SWEVENT_TEST, n);
        total += n;

        if (i % 50 == 0) {
            thread_yield();
        }
    }

    KTEST_CHECK(perfmon_event_read(&ev) == total);
    perfmon_event_detach(&ev);
    st_drain(s.sbuf, thread_id(thread_self()), NULL, &d);
    ktest_diag("%u samples, %u of another thread, %u bad", d.nr_samples,
               d.nr_other_tid, d.nr_bad);
    KTEST_CHECK_EQ(d.nr_samples, ST_ROUNDS);
    KTEST_CHECK_EQ(d.nr_other_tid, 0);
    KTEST_CHECK_EQ(d.nr_bad, 0);
    KTEST_CHECK(d.period_sum == ST_ROUNDS * ST_PERIOD);

out:
    st_detach(&ev);
    perfmon_sbuf_destroy(s.sbuf);
    return ktest_result();
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
    uint64_t saved, ticks, hz = cpu_tsc_freq();
    struct perfmon_event ev = { .state = 0 };
    struct st_drained d;
    unsigned int cpu;

    if (!st_can_sample()) {
        return KTEST_SKIP;
    }

    KTEST_ASSERT(hz != 0);
    s.period = hz / 1000;
    KTEST_ASSERT_EQ(perfmon_sbuf_create(&s.sbuf, 256 * 1024), 0);
    saved = ktest_pin_self(&cpu);
    KTEST_CHECK_EQ(st_attach(&ev, PERFMON_EV_TASK_CLOCK, PERFMON_EF_KERN,
                             &s, NULL, cpu), 0);
    ticks = ktest_syscnt_read_cpu("clock_ticks", cpu);
    st_busy_loop(cpu_rdtsc() + hz);
    ticks = ktest_syscnt_read_cpu("clock_ticks", cpu) - ticks;
    perfmon_event_detach(&ev);
    st_drain(s.sbuf, 0, "st_busy_loop", &d);
    ktest_diag("%u samples over %llu ticks, %u in the loop", d.nr_samples,
               (unsigned long long)ticks, d.nr_in_fn);

    /* A sample per tick the CPU took, within 10%. */
    KTEST_CHECK(d.nr_samples * 10 >= ticks * 9);
    KTEST_CHECK(d.nr_samples * 10 <= ticks * 11);
    KTEST_CHECK(d.nr_in_fn * 10 >= d.nr_samples * 9);
    KTEST_CHECK_EQ(d.nr_bad, 0);

out:
    st_detach(&ev);
    ktest_unpin_self(saved);
    perfmon_sbuf_destroy(s.sbuf);
    return ktest_result();
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

/* The number of calls st_chain_samples() samples, a sample each. */
#define ST_CHAIN_CALLS  20

/*
 * ST_CHAIN_CALLS calls of run sampled with their call chains on this CPU,
 * the test event's period 10 (one sample a call): the samples read in
 * *nrp, those ok accepts in *nr_okp.  KTEST_FAIL when the buffer cannot
 * be made; the checks' result otherwise.
 */
static int
st_chain_samples(void (*run)(void),
                 bool (*ok)(const struct perfmon_sample *),
                 unsigned int *nrp, unsigned int *nr_okp)
{
    struct perfmon_sampling s = {
        .period = 10, .fields = ST_FIELDS | PERFMON_SF_CALLCHAIN,
    };
    struct perfmon_event ev = { .state = 0 };
    unsigned int cpu;
    uint64_t saved;
    size_t size;

    *nrp = 0;
    *nr_okp = 0;
    KTEST_ASSERT_EQ(perfmon_sbuf_create(&s.sbuf, 65536), 0);
    saved = ktest_pin_self(&cpu);
    KTEST_CHECK_EQ(st_attach(&ev, PERFMON_EV_TEST, PERFMON_EF_KERN, &s,
                             thread_self(), 0), 0);

    for (unsigned int i = 0; i < ST_CHAIN_CALLS; i++) {
        run();
    }

    perfmon_event_detach(&ev);

    while ((size = perfmon_sbuf_read(s.sbuf, cpu, st_rec, sizeof(st_rec)))
           != 0) {
        struct perfmon_sample sample;

        if (perfmon_sample_decode(st_rec, size, &sample) == 0) {
            (*nrp)++;
            *nr_okp += ok(&sample);
        }
    }

out:
    st_detach(&ev);
    ktest_unpin_self(saved);
    perfmon_sbuf_destroy(s.sbuf);
    return ktest_result();
}

static int
st_callchain(void)
{
    unsigned int nr, nr_ordered;

    if (!st_can_sample()) {
        return KTEST_SKIP;
    }

    KTEST_ASSERT_EQ(st_chain_samples(st_chain_a, st_chain_in_order, &nr,
                                     &nr_ordered), KTEST_PASS);
    ktest_diag("%u samples, %u with a, b, c in order", nr, nr_ordered);
    KTEST_CHECK_EQ(nr, ST_CHAIN_CALLS);
    KTEST_CHECK_EQ(nr_ordered, ST_CHAIN_CALLS);

out:
    return ktest_result();
}

KTEST_DEFINE(sample, callchain, st_callchain);

/*
 * st_forged_call(fn): fn called under a forged frame, between fn's frame
 * and st_forged_call's own, whose return address follows no call (nops
 * before it) and whose saved frame pointer is st_forged_call's frame, a
 * real one higher on the stack.  The overflow NMI's raw walk goes on
 * through it, as memory allows; the chain read must end before it.
 */
void st_forged_call(void (*fn)(void));

__asm__(".pushsection .text\n"
        ".p2align 4\n"
        ".type st_forged_call, @function\n"
        "st_forged_call:\n"
        "    push %rbp\n"
        "    mov %rsp, %rbp\n"
        "    lea .Lst_forged_ret(%rip), %rax\n"
        "    push %rax\n"              /* the forged frame: its return, */
        "    push %rbp\n"              /* its caller's frame: this one */
        "    mov %rsp, %rbp\n"
        "    call *%rdi\n"
        "    leave\n"                  /* out of the forged frame, */
        "    leave\n"                  /* then out of this one */
        "    ret\n"
        "    .fill 8, 1, 0x90\n"
        ".Lst_forged_ret:\n"
        "    ud2\n"
        ".size st_forged_call, . - st_forged_call\n"
        ".popsection\n");

/* Not st_chain_c()'s code: gcc would make the two one function. */
static void __attribute__((noinline))
st_forged_target(void)
{
    swevent_add(SWEVENT_TEST, 10);
    st_depth += 2;
}

static bool
st_is(uint64_t ip, const char *want)
{
    uint64_t offset;
    const char *name = symtab_lookup(ip, &offset);

    return name != NULL && strcmp(name, want) == 0;
}

/*
 * A chain through a frame that is no caller: st_forged_target, then the
 * return into st_forged_call, and nothing after it (the raw frames the
 * NMI stored past it are cut as the record is read).
 */
/* The forged call, as st_chain_samples() runs it. */
static void
st_forged_run(void)
{
    st_forged_call(st_forged_target);
}

/* Whether the chain ends at the forged frame, nothing read past it. */
static bool
st_forged_cut(const struct perfmon_sample *s)
{
    unsigned int last = s->nr_ips - 1;

    return s->nr_ips >= 2 && st_is(s->ips[last], "st_forged_call")
           && st_is(s->ips[last - 1], "st_forged_target");
}

static int
st_callchain_cut(void)
{
    unsigned int nr, nr_cut;

    if (!st_can_sample()) {
        return KTEST_SKIP;
    }

    KTEST_ASSERT_EQ(st_chain_samples(st_forged_run, st_forged_cut, &nr,
                                     &nr_cut), KTEST_PASS);
    ktest_diag("%u samples, %u ending at the forged frame", nr, nr_cut);
    KTEST_CHECK_EQ(nr, ST_CHAIN_CALLS);
    KTEST_CHECK_EQ(nr_cut, ST_CHAIN_CALLS);

out:
    return ktest_result();
}

KTEST_DEFINE(sample, callchain_cut, st_callchain_cut);

/* ---- a tiny buffer --------------------------------------------------------- */

/*
 * Samples written into the smallest buffer, which keeps about 30 of them:
 * enough to lose most, few enough that their interrupts stay well under
 * the throttle's share of a window even on a loaded host (2,000 reached
 * it there now and then, and throttled samples are neither kept nor lost).
 * The soft PMU keeps a period of 1: a sample every event.
 */
#define ST_TINY_SAMPLES 300

static int
st_tiny_buffer(void)
{
    struct perfmon_sampling s = {
        .period = 1, .fields = ST_FIELDS | PERFMON_SF_CALLCHAIN,
    };
    struct perfmon_event ev = { .state = 0 };
    struct st_drained d;
    unsigned int cpu;
    uint64_t saved, lost;

    if (!st_can_sample()) {
        return KTEST_SKIP;
    }

    KTEST_ASSERT_EQ(perfmon_sbuf_create(&s.sbuf, PERFMON_SBUF_MIN), 0);
    saved = ktest_pin_self(&cpu);
    KTEST_CHECK_EQ(st_attach(&ev, PERFMON_EV_TEST, PERFMON_EF_KERN, &s,
                             thread_self(), 0), 0);

    for (unsigned int i = 0; i < ST_TINY_SAMPLES; i++) {
        swevent_add(SWEVENT_TEST, 1);
    }

    perfmon_event_detach(&ev);
    lost = perfmon_sbuf_lost(s.sbuf, cpu);
    st_drain(s.sbuf, 0, NULL, &d);
    ktest_diag("%u kept, %llu lost", d.nr_samples, (unsigned long long)lost);
    KTEST_CHECK(lost > 0);
    KTEST_CHECK(d.nr_samples > 0);
    KTEST_CHECK_EQ(d.nr_bad, 0);
    KTEST_CHECK(d.nr_samples + lost == ST_TINY_SAMPLES);

out:
    st_detach(&ev);
    ktest_unpin_self(saved);
    perfmon_sbuf_destroy(s.sbuf);
    return ktest_result();
}

KTEST_DEFINE(sample, tiny_buffer, st_tiny_buffer);

/* ---- all CPUs, threads migrating --------------------------------------------- */

#define ST_MOVERS       4

/*
 * The throttle test naps 100 ms at a time until the storm is throttled,
 * or its CPU took ST_THROTTLE_TICKS clock ticks (three of the throttle's
 * windows of 100 ticks: it must be throttled by then), or after
 * ST_THROTTLE_NAPS_MAX naps on a host that runs the CPU very little.
 */
#define ST_THROTTLE_TICKS       300
#define ST_THROTTLE_NAPS_MAX    300

/*
 * The share of the CPU the storm's sampling may take, in percent.  The
 * storm's own loop takes most of the time between its interrupts, the
 * more so the shorter the overflow path gets: at the default 25% it
 * passed the share only barely, or not.  At 2% the test does not depend
 * on how fast the handler is.
 */
#define ST_THROTTLE_SHARE       2

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
    unsigned int nr_cpus = cpu_count(), nr_threads = 0;
    uint64_t added = 0, counted = 0;
    struct st_drained d;

    if (!st_can_sample()) {
        return KTEST_SKIP;
    }

    memset(cpu_evs, 0, sizeof(cpu_evs));
    memset(movers, 0, sizeof(movers));
    KTEST_ASSERT_EQ(perfmon_sbuf_create(&s.sbuf, 65536), 0);

    /* Every add happens on some CPU: the CPU events count them all. */
    for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
        KTEST_CHECK_EQ(st_attach(&cpu_evs[cpu], PERFMON_EV_TEST,
                                 PERFMON_EF_KERN, &s, NULL, cpu), 0);
    }

    for (unsigned int i = 0; i < ST_MOVERS; i++) {
        KTEST_CHECK_EQ(thread_create(&threads[i], "sample-mover",
                                     st_mover_fn, &movers[i],
                                     THREAD_CPUMASK_ALL), 0);
        nr_threads++;
    }

    thread_msleep(2000);

    for (unsigned int i = 0; i < nr_threads; i++) {
        movers[i].stop = true;
        thread_join(threads[i]);
        added += movers[i].added;
    }

    nr_threads = 0;

    for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
        counted += perfmon_event_read(&cpu_evs[cpu]);
        perfmon_event_detach(&cpu_evs[cpu]);
    }

    st_drain(s.sbuf, 0, NULL, &d);
    ktest_diag("%llu added, %llu counted, %u samples",
               (unsigned long long)added, (unsigned long long)counted,
               d.nr_samples);
    KTEST_CHECK(counted == added);
    KTEST_CHECK(d.nr_samples > 0);
    KTEST_CHECK(d.nr_samples <= added / 97 + nr_cpus);
    KTEST_CHECK_EQ(d.nr_bad, 0);

out:
    for (unsigned int i = 0; i < nr_threads; i++) {
        movers[i].stop = true;
        thread_join(threads[i]);
    }

    for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
        st_detach(&cpu_evs[cpu]);
    }

    perfmon_sbuf_destroy(s.sbuf);
    return ktest_result();
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
    uint64_t saved, throttles, ticks, taken, start, slept_ms;
    struct st_mover storm = { .stop = false };
    unsigned int naps, share = 0;
    struct perfmon_event ev = { .state = 0 };
    struct thread *thread = NULL;
    struct st_drained d;
    unsigned int cpu;

    if (!st_can_sample()) {
        return KTEST_SKIP;
    }

    KTEST_ASSERT_EQ(perfmon_sbuf_create(&s.sbuf, 65536), 0);
    saved = ktest_pin_self(&cpu);
    share = perfmon_set_max_sample_share(ST_THROTTLE_SHARE);
    throttles = ktest_syscnt_read_cpu("perfmon_nr_throttles", cpu);
    taken = ktest_syscnt_read_cpu("clock_ticks", cpu);
    KTEST_CHECK_EQ(thread_create(&thread, "sample-storm", st_storm_fn,
                                 &storm, THREAD_CPUMASK(cpu)), 0);
    KTEST_CHECK_EQ(st_attach(&ev, PERFMON_EV_TEST, PERFMON_EF_KERN, &s,
                             thread, 0), 0);
    start = clock_get_time();

    /*
     * The caller shares the CPU with the storm, and sleeps, until the
     * storm was throttled.  The throttle's window is counted in the ticks
     * the CPU took (the time it ran), so a loaded host that runs it a
     * tenth of the time takes ten times as many naps, no more windows.
     */
    for (naps = 0; naps < ST_THROTTLE_NAPS_MAX; naps++) {
        thread_msleep(100);
        ticks = ktest_syscnt_read_cpu("clock_ticks", cpu) - taken;

        if ((naps >= 9 && ktest_syscnt_read_cpu("perfmon_nr_throttles", cpu)
                          != throttles)
            || ticks >= ST_THROTTLE_TICKS) {
            naps++;
            break;
        }
    }

    slept_ms = clock_ms_from_ticks(clock_get_time() - start);
    taken = ktest_syscnt_read_cpu("clock_ticks", cpu) - taken;
    storm.stop = true;
    thread_join(thread);
    thread = NULL;
    perfmon_event_detach(&ev);
    throttles = ktest_syscnt_read_cpu("perfmon_nr_throttles", cpu)
                - throttles;
    st_drain(s.sbuf, 0, NULL, &d);
    ktest_diag("slept %u x 100 ms in %llu ms, %llu ticks taken, %llu "
               "throttles, %llu events, %u samples kept", naps,
               (unsigned long long)slept_ms, (unsigned long long)taken,
               (unsigned long long)throttles,
               (unsigned long long)storm.added, d.nr_samples);

    /*
     * Sleeps of 100 ms took less than 200 ms of the time the CPU ran
     * (its ticks): the CPU stayed usable.
     */
    KTEST_CHECK(taken < clock_ticks_from_ms(200) * naps);
    KTEST_CHECK(throttles > 0 || taken < ST_THROTTLE_TICKS);
    KTEST_CHECK(d.nr_samples < storm.added);
    KTEST_CHECK_EQ(d.nr_bad, 0);

    if (throttles == 0) {
        ktest_diag("the host ran this CPU for under %u ticks in %u naps: "
                   "throttling unchecked", ST_THROTTLE_TICKS, naps);
    }

out:
    if (thread != NULL) {
        storm.stop = true;
        thread_join(thread);
    }

    st_detach(&ev);

    if (share != 0) {
        perfmon_set_max_sample_share(share);
    }

    ktest_unpin_self(saved);
    perfmon_sbuf_destroy(s.sbuf);
    return ktest_result();
}

KTEST_DEFINE(sample, throttle, st_throttle);
