/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel tests of code regions (kern/perfmon_region.h), counted with
 * the software PMU's `test` event, which counts exactly what the test
 * adds (kern/swevent.h) on the CPU that adds it:
 *
 *   - nesting: a region's counts include its children's, its self counts
 *     do not;
 *   - per-CPU sums: calls made on every CPU, from thread context and from
 *     an xcall's handler (interrupts disabled), each counted on its CPU,
 *     and nothing on the others;
 *   - reset: counts back to zero, the regions still armed;
 *   - in an NMI: the overflow interrupt's region (pmi) and the sample's
 *     write inside it, counted with the clock, for overflows of the
 *     software PMU's self-NMI, and nothing lost;
 *   - with the step PMU (perfmon.step=on; skipped without it): a region
 *     around spin's loop counts 4 instructions an iteration plus one
 *     constant, the same for several lengths and on every repeat.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/error.h"
#include "kern/ktest.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_region.h"
#include "kern/perfmon_ring.h"
#include "kern/swevent.h"
#include "kern/workload.h"
#include "kern/xcall.h"
#include "tests/kernel/ktest_util.h"

#define RT_MAX_STATS    64

PERFMON_REGION_DEFINE(rt_outer, "ktest-outer");
PERFMON_REGION_DEFINE(rt_inner, "ktest-inner");

static const char *const rt_names[] = { "ktest-outer", "ktest-inner" };

/* Arm the test's regions with one event on every CPU online. */
static int
rt_arm(const struct perfmon_region_event *event, const char *const *names,
       unsigned int nr_names)
{
    const struct perfmon_region_config config = {
        .events = event,
        .nr_events = 1,
        .cpus = (cpu_count() < 64) ? (1ULL << cpu_count()) - 1 : UINT64_MAX,
        .every = 1,
        .names = names,
        .nr_names = nr_names,
    };
    const char *bad = NULL;
    unsigned int bad_event = 0;

    return perfmon_region_arm(&config, &bad, &bad_event);
}

static int
rt_arm_test(void)
{
    const struct perfmon_region_event event = {
        .id = PERFMON_EV_TEST,
        .flags = PERFMON_EF_KERN,
        .dev = perfmon_dev_find("soft"),
    };

    return rt_arm(&event, rt_names, ARRAY_SIZE(rt_names));
}

/* The counts of a region on cpu. */
static int
rt_stats(const struct perfmon_region *region, unsigned int cpu,
         struct perfmon_region_stats *st)
{
    static struct perfmon_region_stats stats[RT_MAX_STATS];
    struct perfmon_region_losses losses;
    int error;

    if (perfmon_region_count() > RT_MAX_STATS) {
        return -E2BIG;
    }

    error = perfmon_region_snapshot(cpu, stats, RT_MAX_STATS, &losses);

    for (unsigned int i = 0; i < perfmon_region_count() && !error; i++) {
        if (perfmon_region_get(i) == region) {
            *st = stats[i];
            return 0;
        }
    }

    return error ? error : -ENOENT;
}

static void
rt_call_outer(uint64_t n)
{
    PERFMON_REGION_BEGIN(rt_outer);
    swevent_add(SWEVENT_TEST, n);
    PERFMON_REGION_END(rt_outer);
}

static int
rt_nesting(void)
{
    struct perfmon_region_stats outer, inner;
    uint64_t affinity;
    unsigned int cpu;

    affinity = ktest_pin_self(&cpu);
    KTEST_CHECK_EQ(rt_arm_test(), 0);
    PERFMON_REGION_BEGIN(rt_outer);
    swevent_add(SWEVENT_TEST, 10);
    PERFMON_REGION_BEGIN(rt_inner);
    swevent_add(SWEVENT_TEST, 5);
    PERFMON_REGION_END(rt_inner);
    swevent_add(SWEVENT_TEST, 3);
    PERFMON_REGION_END(rt_outer);

    KTEST_CHECK_EQ(rt_stats(&perfmon_region_rt_outer, cpu, &outer), 0);
    KTEST_CHECK_EQ(rt_stats(&perfmon_region_rt_inner, cpu, &inner), 0);
    KTEST_CHECK_EQ(outer.calls, 1);
    KTEST_CHECK_EQ(outer.sum, 18);
    KTEST_CHECK_EQ(outer.self_sum, 13);
    KTEST_CHECK_EQ(inner.calls, 1);
    KTEST_CHECK_EQ(inner.sum, 5);
    KTEST_CHECK_EQ(inner.self_sum, 5);

out:
    perfmon_region_disarm();
    ktest_unpin_self(affinity);
    return ktest_result();
}

KTEST_DEFINE(region, nesting, rt_nesting);

/* In an xcall's handler: interrupt context, on the target CPU. */
static void
rt_call_xcall(void *arg)
{
    rt_call_outer(*(const uint64_t *)arg);
}

static int
rt_per_cpu_sums(void)
{
    uint64_t affinity = 0, total = 0, expected = 0;
    struct perfmon_region_stats st;
    unsigned int nr = cpu_count(), cpu;
    bool pinned = false;

    KTEST_CHECK_EQ(rt_arm_test(), 0);
    affinity = ktest_pin_self(&cpu);
    pinned = true;

    for (unsigned int c = 0; c < nr; c++) {
        uint64_t n = 100 * (c + 1);

        KTEST_CHECK_EQ(xcall_call(rt_call_xcall, &n, c), 0);
        expected += n;
    }

    /* And from this thread on its own CPU. */
    rt_call_outer(7);
    expected += 7;

    for (unsigned int c = 0; c < nr; c++) {
        uint64_t mine = 100 * (c + 1) + (c == cpu ? 7 : 0);

        KTEST_CHECK_EQ(rt_stats(&perfmon_region_rt_outer, c, &st), 0);
        KTEST_CHECK_EQ(st.calls, (c == cpu) ? 2 : 1);
        KTEST_CHECK_EQ(st.sum, mine);
        KTEST_CHECK_EQ(st.max, 100 * (c + 1));
        KTEST_CHECK_EQ(rt_stats(&perfmon_region_rt_inner, c, &st), 0);
        KTEST_CHECK_EQ(st.calls, 0);
        total += mine;
    }

    KTEST_CHECK_EQ(total, expected);

out:
    perfmon_region_disarm();

    if (pinned) {
        ktest_unpin_self(affinity);
    }

    return ktest_result();
}

KTEST_DEFINE(region, per_cpu_sums, rt_per_cpu_sums);

static int
rt_reset(void)
{
    struct perfmon_region_stats st;
    uint64_t affinity;
    unsigned int cpu;

    affinity = ktest_pin_self(&cpu);
    KTEST_CHECK_EQ(rt_arm_test(), 0);
    rt_call_outer(40);
    rt_call_outer(2);
    KTEST_CHECK_EQ(rt_stats(&perfmon_region_rt_outer, cpu, &st), 0);
    KTEST_CHECK_EQ(st.calls, 2);
    KTEST_CHECK_EQ(st.sum, 42);
    KTEST_CHECK_EQ(perfmon_region_reset(), 0);
    KTEST_CHECK_EQ(rt_stats(&perfmon_region_rt_outer, cpu, &st), 0);
    KTEST_CHECK_EQ(st.calls, 0);
    KTEST_CHECK_EQ(st.sum, 0);
    KTEST_CHECK(perfmon_region_armed() != NULL);
    rt_call_outer(9);
    KTEST_CHECK_EQ(rt_stats(&perfmon_region_rt_outer, cpu, &st), 0);
    KTEST_CHECK_EQ(st.calls, 1);
    KTEST_CHECK_EQ(st.sum, 9);
    KTEST_CHECK_EQ(st.min, 9);

out:
    perfmon_region_disarm();
    ktest_unpin_self(affinity);
    return ktest_result();
}

KTEST_DEFINE(region, reset, rt_reset);

/*
 * A region around spin's loop under the step PMU: 4n plus one constant
 * for every n, on every call.  The smallest of a few calls is kept per n
 * (a switch in the middle only adds), and the calls must mostly agree.
 */
static void
rt_spin(uint64_t n)
{
    PERFMON_REGION_BEGIN(rt_outer);
    workload_spin_loop(n);
    PERFMON_REGION_END(rt_outer);
}

static int
rt_step_spin(void)
{
    static const uint64_t lengths[] = { 100, 1000, 3000 };
    struct perfmon_dev *step = perfmon_dev_find("step");
    const struct perfmon_region_event event = {
        .id = PERFMON_EV_INSTRUCTION,
        .flags = PERFMON_EF_KERN,
        .dev = step,
    };
    struct perfmon_region_stats st;
    uint64_t affinity, constant = 0;
    unsigned int cpu;

    if (step == NULL) {
        ktest_skip_reason("no step PMU (boot with perfmon.step=on)");
        return KTEST_SKIP;
    }

    affinity = ktest_pin_self(&cpu);
    KTEST_CHECK_EQ(rt_arm(&event, rt_names, 1), 0);

    for (unsigned int i = 0; i < ARRAY_SIZE(lengths); i++) {
        KTEST_CHECK_EQ(perfmon_region_reset(), 0);

        for (unsigned int k = 0; k < 3; k++) {
            rt_spin(lengths[i]);
        }

        KTEST_CHECK_EQ(rt_stats(&perfmon_region_rt_outer, cpu, &st), 0);
        KTEST_CHECK_EQ(st.calls, 3);
        KTEST_CHECK(st.min > 4 * lengths[i]);

        if (i == 0) {
            constant = st.min - 4 * lengths[i];
        }

        KTEST_CHECK_EQ(st.min - 4 * lengths[i], constant);
        /* At least two of the three calls agree exactly. */
        KTEST_CHECK(st.sum - st.max == 2 * st.min);
    }

out:
    perfmon_region_disarm();
    ktest_unpin_self(affinity);
    return ktest_result();
}

KTEST_DEFINE(region, step_spin, rt_step_spin);

/*
 * The kernel's own regions in an NMI: a `test` event sampling on this
 * CPU wraps on every add of its period, and the software PMU's self-NMI
 * runs the overflow interrupt (pmi) and writes a sample (sample) inside
 * it.  Counted with task-clock: each call takes some time.
 */
#define RT_NMI_CALLS    10
#define RT_NMI_PERIOD   100

static int
rt_nmi(void)
{
    static const char *const names[] = { "pmi", "sample" };
    struct perfmon_sampling s = {
        .period = RT_NMI_PERIOD, .fields = PERFMON_SF_IP,
    };
    const struct perfmon_region_event event = {
        .id = PERFMON_EV_TASK_CLOCK,
        .flags = PERFMON_EF_KERN,
    };
    struct perfmon_dev *soft = perfmon_dev_find("soft");
    struct perfmon_region_stats pmi, sample;
    struct perfmon_dev_info info;
    struct perfmon_event ev = { .state = 0 };
    uint64_t affinity;
    unsigned int cpu;

    if (soft == NULL || perfmon_dev_get_info(soft, &info) != 0
        || !info.overflow_intr) {
        ktest_skip_reason("the soft PMU is polled (softpmu.overflow=poll)");
        return KTEST_SKIP;
    }

    affinity = ktest_pin_self(&cpu);
    s.sbuf = NULL;
    KTEST_CHECK_EQ(perfmon_sbuf_create(&s.sbuf, PERFMON_SBUF_MIN), 0);
    KTEST_CHECK_EQ(perfmon_event_init(&ev, PERFMON_EV_TEST, PERFMON_EF_KERN),
                   0);
    KTEST_CHECK_EQ(perfmon_event_set_sampling(&ev, &s), 0);
    KTEST_CHECK_EQ(perfmon_event_attach_cpu(&ev, cpu), 0);
    KTEST_CHECK_EQ(rt_arm(&event, names, ARRAY_SIZE(names)), 0);

    for (unsigned int i = 0; i < RT_NMI_CALLS; i++) {
        swevent_add(SWEVENT_TEST, RT_NMI_PERIOD);
    }

    KTEST_CHECK_EQ(rt_stats(perfmon_region_find("pmi"), cpu, &pmi), 0);
    KTEST_CHECK_EQ(rt_stats(perfmon_region_find("sample"), cpu, &sample), 0);
    KTEST_CHECK(pmi.calls >= RT_NMI_CALLS);
    KTEST_CHECK(sample.calls >= RT_NMI_CALLS);
    KTEST_CHECK(pmi.min > 0);
    /* A sample's write is inside its interrupt: pmi's self is less. */
    KTEST_CHECK(pmi.self_sum < pmi.sum);
    KTEST_CHECK(pmi.sum >= sample.sum);
    /* Every call that began was measured: no read refused in the NMI. */
    KTEST_CHECK_EQ(pmi.seen, pmi.calls);
    KTEST_CHECK_EQ(sample.seen, sample.calls);

out:
    perfmon_region_disarm();

    if (perfmon_event_attached(&ev)) {
        perfmon_event_detach(&ev);
    }

    if (s.sbuf != NULL) {
        perfmon_sbuf_destroy(s.sbuf);
    }

    ktest_unpin_self(affinity);
    return ktest_result();
}

KTEST_DEFINE(region, nmi, rt_nmi);
