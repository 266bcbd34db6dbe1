/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the code regions' core (kern/perfmon/perfmon_region.c,
 * perfmon_region_arm.c): arming and its errors (nothing left allocated or
 * attached), calls, sums, min, max and the largest calls, nesting and
 * self counts, CPUs apart, one call in N, reset, the marker's losses
 * (unmatched ends, abandoned frames, a stack too deep, reads that fail),
 * and markers that land inside a perfmon section, as an NMI's would.  The
 * fake devices' events happen when the test says (fdev_count()), so every
 * count is exact.  Every test runs three times, the device's counters read through
 * its op, from memory and by RDPMC: the markers' short path reads the
 * last two in place, the first takes the general path.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

/* This test's regions have real markers. */
#define PERFMON_REGION_HOST_MARKERS 1

#include "arch/x86/cpu.h"
#include "fakes/fake_kmem.h"
#include "fakes/fake_smp.h"
#include "fdev.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_region.h"

PERFMON_REGION_DEFINE(outer, "test-outer");
PERFMON_REGION_DEFINE(inner, "test-inner");
PERFMON_REGION_DEFINE_FLAGS(insec, "test-insec", true);

static struct fdev *fd;

static struct perfmon_region_event ev_insns;

static const char *bad;
static unsigned int bad_event;

/* How the device's counters are read in this run of the tests. */
static unsigned int read_how;

static int
region_setup(void **state)
{
    perfmon_region_test_reset();
    setup(state);
    fd = fdev_add(0, 48, 4, true);
    fd->read_how = read_how;
    ev_insns = (struct perfmon_region_event){
        .id = RAW_INSNS,
        .flags = PERFMON_EF_KERN | PERFMON_EF_RAW,
        .dev = &fd->dev,
    };
    bad = NULL;
    bad_event = ~0U;
    return 0;
}

static unsigned int
index_of(const struct perfmon_region *region)
{
    for (unsigned int i = 0; i < perfmon_region_count(); i++) {
        if (perfmon_region_get(i) == region) {
            return i;
        }
    }

    fail_msg("region %s not in the section", region->name);
    return 0;
}

/* Arm with one event on cpus, every; names NULL: all. */
static int
arm(uint64_t cpus, unsigned int every, const char *const *names,
    unsigned int nr_names)
{
    const struct perfmon_region_config config = {
        .events = &ev_insns,
        .nr_events = 1,
        .cpus = cpus,
        .every = every,
        .names = names,
        .nr_names = nr_names,
    };

    return perfmon_region_arm(&config, &bad, &bad_event);
}

/* The counts of region's event e on cpu, nr events armed. */
static struct perfmon_region_stats
stats_of_event(const struct perfmon_region *region, unsigned int cpu,
               unsigned int nr, unsigned int e,
               struct perfmon_region_losses *lossesp)
{
    struct perfmon_region_stats st[128];
    struct perfmon_region_losses losses;

    assert_true(perfmon_region_count() * nr <= 128);
    assert_int_equal(perfmon_region_snapshot(cpu, st, 128, &losses), 0);

    if (lossesp != NULL) {
        *lossesp = losses;
    }

    return st[index_of(region) * nr + e];
}

/* The counts of region on cpu (one event armed). */
static struct perfmon_region_stats
stats_of(const struct perfmon_region *region, unsigned int cpu,
         struct perfmon_region_losses *lossesp)
{
    return stats_of_event(region, cpu, 1, 0, lossesp);
}

/* A call of outer on the calling CPU that counts n events. */
static void
call_outer(unsigned int cpu, uint64_t n)
{
    PERFMON_REGION_BEGIN(outer);
    fdev_count(fd, cpu, RAW_INSNS, n);
    PERFMON_REGION_END(outer);
}

static void
test_regions_are_in_the_section(void **state)
{
    (void)state;

    assert_true(perfmon_region_count() >= 3);
    assert_ptr_equal(perfmon_region_find("test-outer"), &perfmon_region_outer);
    assert_ptr_equal(perfmon_region_find("test-insec"), &perfmon_region_insec);
    assert_null(perfmon_region_find("nope"));
    assert_null(perfmon_region_get(perfmon_region_count()));
    assert_false(perfmon_region_outer.in_section);
    assert_true(perfmon_region_insec.in_section);
}

static void
test_idle_markers_do_nothing(void **state)
{
    struct perfmon_region_stats st[64];
    struct perfmon_region_losses losses;

    (void)state;

    call_outer(0, 10);
    assert_null(perfmon_region_armed());
    assert_int_equal(perfmon_region_snapshot(0, st, 64, &losses), -ENOENT);
    assert_int_equal(perfmon_region_reset(), -ENOENT);
    assert_int_equal(perfmon_region_disarm(), -ENOENT);
    assert_int_equal(perfmon_region_event_times(0, 0, NULL, NULL), -ENOENT);
    assert_int_equal(perfmon_region_outer.armed, 0);

    /* The slow paths with nothing armed (a flag read before a disarm). */
    perfmon_region_begin_slow(&perfmon_region_outer);
    perfmon_region_end_slow(&perfmon_region_outer);
    assert_int_equal(fake_kmem_live(), 0);
}

static void
test_calls_sum_min_max_largest(void **state)
{
    struct perfmon_region_stats st;
    const struct perfmon_region_config *config;

    (void)state;

    assert_int_equal(arm(0x3, 1, NULL, 0), 0);
    config = perfmon_region_armed();
    assert_non_null(config);
    assert_int_equal(config->nr_events, 1);
    assert_int_equal(config->cpus, 0x3);
    assert_int_equal(perfmon_region_outer.armed, 1);

    /* Events outside the region are not its. */
    fdev_count(fd, 0, RAW_INSNS, 1000);
    call_outer(0, 100);
    fdev_count(fd, 0, RAW_INSNS, 1000);
    call_outer(0, 50);
    call_outer(0, 70);
    call_outer(0, 60);

    st = stats_of(&perfmon_region_outer, 0, NULL);
    assert_int_equal(st.calls, 4);
    assert_int_equal(st.seen, 4);
    assert_int_equal(st.sum, 280);
    assert_int_equal(st.min, 50);
    assert_int_equal(st.max, 100);
    assert_int_equal(st.self_sum, 280);
    assert_int_equal(st.worst[0], 100);
    assert_int_equal(st.worst[1], 70);
    assert_int_equal(st.worst[2], 60);

    /* Not called: nothing. */
    st = stats_of(&perfmon_region_inner, 0, NULL);
    assert_int_equal(st.calls, 0);
    assert_int_equal(st.min, UINT64_MAX);

    assert_int_equal(perfmon_region_disarm(), 0);
    assert_int_equal(perfmon_region_outer.armed, 0);
    assert_null(perfmon_region_armed());
    assert_int_equal(fake_kmem_live(), 0);
    fdev_assert_idle(fd);
}

/*
 * Calls that move nothing but calls and sum take the markers' short path
 * (in the runs that read in place): a count below min, above the
 * smallest of the largest calls, or a call with children leaves it, and
 * every statistic stays what the calls make it.
 */
static void
test_steady_calls(void **state)
{
    struct perfmon_region_stats st;

    (void)state;

    assert_int_equal(arm(0x1, 1, NULL, 0), 0);

    for (unsigned int i = 0; i < 10; i++) {
        call_outer(0, 50);
    }

    st = stats_of(&perfmon_region_outer, 0, NULL);
    assert_int_equal(st.calls, 10);
    assert_int_equal(st.seen, 10);
    assert_int_equal(st.sum, 500);
    assert_int_equal(st.min, 50);
    assert_int_equal(st.max, 50);
    assert_int_equal(st.worst[2], 50);
    assert_int_equal(st.self_sum, 500);

    call_outer(0, 40);      /* below min */
    call_outer(0, 70);      /* above max */
    call_outer(0, 60);      /* among the largest */
    call_outer(0, 55);      /* above the smallest of them */
    call_outer(0, 52);      /* inside: calls and sum only */
    call_outer(0, 40);
    st = stats_of(&perfmon_region_outer, 0, NULL);
    assert_int_equal(st.calls, 16);
    assert_int_equal(st.sum, 500 + 40 + 70 + 60 + 55 + 52 + 40);
    assert_int_equal(st.min, 40);
    assert_int_equal(st.max, 70);
    assert_int_equal(st.worst[0], 70);
    assert_int_equal(st.worst[1], 60);
    assert_int_equal(st.worst[2], 55);
    assert_int_equal(st.self_min, 40);
    assert_int_equal(st.self_max, 70);

    /* Children: its self (5) below self_min, its count (45) inside. */
    PERFMON_REGION_BEGIN(outer);
    fdev_count(fd, 0, RAW_INSNS, 5);
    PERFMON_REGION_BEGIN(inner);
    fdev_count(fd, 0, RAW_INSNS, 40);
    PERFMON_REGION_END(inner);
    PERFMON_REGION_END(outer);
    call_outer(0, 45);
    st = stats_of(&perfmon_region_outer, 0, NULL);
    assert_int_equal(st.calls, 18);
    assert_int_equal(st.sum, 817 + 45 + 45);
    assert_int_equal(st.self_sum, 817 + 5 + 45);
    assert_int_equal(st.self_min, 5);
    assert_int_equal(st.min, 40);
    assert_int_equal(st.worst[2], 55);
    st = stats_of(&perfmon_region_inner, 0, NULL);
    assert_int_equal(st.calls, 1);
    assert_int_equal(st.sum, 40);
    assert_int_equal(perfmon_region_disarm(), 0);
}

static void
test_nesting_and_self(void **state)
{
    struct perfmon_region_stats outer, inner;

    (void)state;

    assert_int_equal(arm(0x1, 1, NULL, 0), 0);
    PERFMON_REGION_BEGIN(outer);
    fdev_count(fd, 0, RAW_INSNS, 10);
    PERFMON_REGION_BEGIN(inner);
    fdev_count(fd, 0, RAW_INSNS, 5);
    PERFMON_REGION_END(inner);
    fdev_count(fd, 0, RAW_INSNS, 20);
    PERFMON_REGION_BEGIN(inner);
    fdev_count(fd, 0, RAW_INSNS, 7);
    PERFMON_REGION_END(inner);
    PERFMON_REGION_END(outer);

    outer = stats_of(&perfmon_region_outer, 0, NULL);
    inner = stats_of(&perfmon_region_inner, 0, NULL);
    assert_int_equal(outer.calls, 1);
    assert_int_equal(outer.sum, 42);
    assert_int_equal(outer.self_sum, 30);
    assert_int_equal(outer.self_min, 30);
    assert_int_equal(outer.self_max, 30);
    assert_int_equal(inner.calls, 2);
    assert_int_equal(inner.sum, 12);
    assert_int_equal(inner.self_sum, 12);
    assert_int_equal(inner.min, 5);
    assert_int_equal(inner.max, 7);
    assert_int_equal(perfmon_region_disarm(), 0);
}

/* Each CPU counts its own calls; a CPU not armed counts none. */
static void
test_cpus_apart(void **state)
{
    struct perfmon_region_stats st[64];
    struct perfmon_region_losses losses;
    uint64_t enabled, running;

    (void)state;

    assert_int_equal(arm(0x6, 1, NULL, 0), 0);
    fake_cpu_set_id(1);
    call_outer(1, 11);
    /* Events on another CPU during the call are not this CPU's. */
    PERFMON_REGION_BEGIN(outer);
    fdev_count(fd, 2, RAW_INSNS, 500);
    fdev_count(fd, 1, RAW_INSNS, 3);
    PERFMON_REGION_END(outer);
    fake_cpu_set_id(2);
    call_outer(2, 22);
    fake_cpu_set_id(0);
    call_outer(0, 33);

    assert_int_equal(stats_of(&perfmon_region_outer, 1, NULL).sum, 14);
    assert_int_equal(stats_of(&perfmon_region_outer, 1, NULL).calls, 2);
    assert_int_equal(stats_of(&perfmon_region_outer, 2, NULL).sum, 22);
    assert_int_equal(perfmon_region_snapshot(0, st, 64, &losses), -EINVAL);
    assert_int_equal(perfmon_region_snapshot(CPU_MAX, st, 64, &losses),
                     -EINVAL);
    assert_int_equal(perfmon_region_snapshot(1, st, 0, &losses), -EINVAL);
    assert_int_equal(perfmon_region_snapshot(1, NULL, 64, &losses), -EINVAL);
    assert_int_equal(perfmon_region_snapshot(1, st, 64, NULL), -EINVAL);

    fake_cpu_advance_tsc(3000);
    assert_int_equal(perfmon_region_event_times(1, 0, &enabled, &running), 0);
    assert_true(enabled > 0);
    assert_int_equal(enabled, running);
    assert_int_equal(perfmon_region_event_times(0, 0, NULL, NULL), -EINVAL);
    assert_int_equal(perfmon_region_event_times(1, 1, NULL, NULL), -EINVAL);
    assert_int_equal(perfmon_region_disarm(), 0);
    assert_int_equal(fake_kmem_live(), 0);
}

static void
test_every_n(void **state)
{
    struct perfmon_region_stats st;

    (void)state;

    assert_int_equal(arm(0x1, 3, NULL, 0), 0);

    for (uint64_t i = 1; i <= 7; i++) {
        call_outer(0, i);
    }

    /* The first call, then one in three: 1, 4, 7. */
    st = stats_of(&perfmon_region_outer, 0, NULL);
    assert_int_equal(st.seen, 7);
    assert_int_equal(st.calls, 3);
    assert_int_equal(st.sum, 12);
    assert_int_equal(st.min, 1);
    assert_int_equal(st.max, 7);
    assert_int_equal(perfmon_region_disarm(), 0);
}

static void
test_named_regions_only(void **state)
{
    static const char *const names[] = { "test-inner" };
    struct perfmon_region_stats st;

    (void)state;

    assert_int_equal(arm(0x1, 1, names, 1), 0);
    assert_int_equal(perfmon_region_outer.armed, 0);
    assert_int_equal(perfmon_region_inner.armed, 1);
    call_outer(0, 10);
    st = stats_of(&perfmon_region_outer, 0, NULL);
    assert_int_equal(st.seen, 0);
    assert_int_equal(perfmon_region_disarm(), 0);
}

static void
test_reset_keeps_armed(void **state)
{
    struct perfmon_region_losses losses;
    struct perfmon_region_stats st;

    (void)state;

    assert_int_equal(arm(0x3, 1, NULL, 0), 0);
    call_outer(0, 10);
    PERFMON_REGION_END(inner);      /* unmatched */
    fake_cpu_set_id(1);
    call_outer(1, 10);
    fake_cpu_set_id(0);
    assert_int_equal(perfmon_region_reset(), 0);

    st = stats_of(&perfmon_region_outer, 0, &losses);
    assert_int_equal(st.calls, 0);
    assert_int_equal(st.sum, 0);
    assert_int_equal(st.min, UINT64_MAX);
    assert_int_equal(losses.unmatched, 0);
    assert_int_equal(stats_of(&perfmon_region_outer, 1, NULL).calls, 0);

    call_outer(0, 4);
    st = stats_of(&perfmon_region_outer, 0, NULL);
    assert_int_equal(st.calls, 1);
    assert_int_equal(st.sum, 4);
    assert_int_equal(perfmon_region_disarm(), 0);
}

static void
test_losses(void **state)
{
    struct perfmon_region_losses losses;
    struct perfmon_region_stats st;

    (void)state;

    assert_int_equal(arm(0x3, 1, NULL, 0), 0);

    /* An end with no begin. */
    PERFMON_REGION_END(outer);
    stats_of(&perfmon_region_outer, 0, &losses);
    assert_int_equal(losses.unmatched, 1);

    /* A begin whose end never came, under another region. */
    PERFMON_REGION_BEGIN(outer);
    PERFMON_REGION_BEGIN(inner);
    fdev_count(fd, 0, RAW_INSNS, 9);
    PERFMON_REGION_END(outer);
    st = stats_of(&perfmon_region_outer, 0, &losses);
    assert_int_equal(losses.abandoned, 1);
    assert_int_equal(st.calls, 1);
    assert_int_equal(st.sum, 9);

    /* A thread that moved: begin on CPU 0, end on CPU 1. */
    PERFMON_REGION_BEGIN(inner);
    fake_cpu_set_id(1);
    PERFMON_REGION_END(inner);
    stats_of(&perfmon_region_outer, 1, &losses);
    assert_int_equal(losses.unmatched, 1);
    fake_cpu_set_id(0);
    PERFMON_REGION_END(inner);      /* the frame left on CPU 0 */

    /* Deeper than the stack. */
    for (unsigned int i = 0; i <= PERFMON_REGION_MAX_DEPTH; i++) {
        PERFMON_REGION_BEGIN(inner);
    }

    stats_of(&perfmon_region_outer, 0, &losses);
    assert_int_equal(losses.too_deep, 1);

    for (unsigned int i = 0; i < PERFMON_REGION_MAX_DEPTH; i++) {
        PERFMON_REGION_END(inner);
    }

    st = stats_of(&perfmon_region_inner, 0, &losses);
    assert_int_equal(st.calls, PERFMON_REGION_MAX_DEPTH + 1);
    assert_int_equal(losses.unread, 0);
    assert_int_equal(perfmon_region_disarm(), 0);
}

/*
 * A counter far past its last fold: the local read cannot take it, the
 * marker's read folds it on the spot, and the count stays exact.
 */
static void
test_fold_in_place(void **state)
{
    struct perfmon_region_losses losses;
    struct perfmon_region_stats st;

    (void)state;

    assert_int_equal(arm(0x1, 1, NULL, 0), 0);
    call_outer(0, 1ULL << 46);
    fdev_count(fd, 0, RAW_INSNS, 1ULL << 46);
    call_outer(0, 3);
    st = stats_of(&perfmon_region_outer, 0, &losses);
    assert_int_equal(st.calls, 2);
    assert_int_equal(st.sum, (1ULL << 46) + 3);
    assert_int_equal(st.max, 1ULL << 46);
    assert_int_equal(losses.unread, 0);
    assert_int_equal(perfmon_region_disarm(), 0);
}

/*
 * Markers inside a perfmon section, as an NMI landing there runs them:
 * a plain region's reads are refused (the section may be half done), a
 * region that runs in the overflow section itself reads.
 */
static unsigned int hook_calls;

static void
markers_in_section(struct fdev *dev, enum fdev_step step, unsigned int hw_id)
{
    (void)dev;
    (void)hw_id;

    if (step != FDEV_STEP_READ || hook_calls++ != 0) {
        return;
    }

    PERFMON_REGION_BEGIN(outer);
    PERFMON_REGION_END(outer);
    PERFMON_REGION_BEGIN(insec);
    PERFMON_REGION_END(insec);
}

/* Once with one event (the markers' common path), once with two. */
static void
markers_inside_a_section(unsigned int nr_events)
{
    const struct perfmon_region_event evs[2] = { ev_insns, ev_insns };
    const struct perfmon_region_config config = {
        .events = evs, .nr_events = nr_events, .cpus = 1, .every = 1,
    };
    struct perfmon_region_losses losses;
    struct perfmon_event other;

    /* The hook runs in the device's read op: counters read through it. */
    fd->read_how = PERFMON_READ_OP;
    assert_int_equal(perfmon_region_arm(&config, &bad, &bad_event), 0);
    hook_calls = 0;
    fd->step_hook = markers_in_section;

    /* A thread event's switch in reads the CPU's counters in a section. */
    init_ok(&other, RAW_INSNS, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_set_dev(&other, &fd->dev), 0);
    assert_int_equal(perfmon_event_attach(&other, self), 0);
    fake_thread_switch(0, NULL);
    fake_thread_switch(0, self);
    fd->step_hook = NULL;
    assert_true(hook_calls > 0);

    for (unsigned int e = 0; e < nr_events; e++) {
        assert_int_equal(stats_of_event(&perfmon_region_outer, 0, nr_events,
                                        e, &losses).calls, 0);
        assert_int_equal(losses.unread, 1);
        assert_int_equal(stats_of_event(&perfmon_region_insec, 0, nr_events,
                                        e, NULL).calls, 1);
    }

    assert_int_equal(perfmon_event_detach(&other), 0);
    assert_int_equal(perfmon_region_disarm(), 0);
}

static void
test_markers_inside_a_section(void **state)
{
    (void)state;

    markers_inside_a_section(1);
    markers_inside_a_section(2);
}

/* Arming, disarming or resetting while another one runs: -EBUSY. */
static int busy_results[3];

static void
arm_again(struct fdev *dev, enum fdev_step step, unsigned int hw_id)
{
    (void)dev;
    (void)hw_id;

    if (step == FDEV_STEP_START) {
        busy_results[0] = arm(0x1, 1, NULL, 0);
        busy_results[1] = perfmon_region_disarm();
        busy_results[2] = perfmon_region_reset();
    }
}

static void
test_one_arming_at_a_time(void **state)
{
    (void)state;

    fd->step_hook = arm_again;
    assert_int_equal(arm(0x1, 1, NULL, 0), 0);
    fd->step_hook = NULL;
    assert_int_equal(busy_results[0], -EBUSY);
    assert_int_equal(busy_results[1], -EBUSY);
    assert_int_equal(busy_results[2], -EBUSY);

    /* Armed already. */
    assert_int_equal(arm(0x1, 1, NULL, 0), -EBUSY);
    assert_int_equal(perfmon_region_disarm(), 0);
}

static void
test_arm_errors_leave_nothing(void **state)
{
    static const char *const unknown[] = { "test-outer", "nope" };
    static const char *const null_name[] = { NULL };
    struct perfmon_region_event evs[PERFMON_REGION_MAX_EVENTS + 1];
    struct perfmon_region_config config = {
        .events = evs, .nr_events = 1, .cpus = 1, .every = 1,
    };

    (void)state;

    for (unsigned int i = 0; i < ARRAY_SIZE(evs); i++) {
        evs[i] = ev_insns;
    }

    assert_int_equal(perfmon_region_arm(NULL, &bad, &bad_event), -EINVAL);
    assert_int_equal(perfmon_region_arm(&config, NULL, &bad_event), -EINVAL);
    assert_int_equal(perfmon_region_arm(&config, &bad, NULL), -EINVAL);
    config.nr_events = 0;
    assert_int_equal(perfmon_region_arm(&config, &bad, &bad_event), -EINVAL);
    config.nr_events = PERFMON_REGION_MAX_EVENTS + 1;
    assert_int_equal(perfmon_region_arm(&config, &bad, &bad_event), -EINVAL);
    config.nr_events = 1;
    assert_int_equal(arm(0x1, 0, NULL, 0), -EINVAL);
    assert_int_equal(arm(0x1, PERFMON_REGION_EVERY_MAX + 1, NULL, 0),
                     -EINVAL);
    assert_int_equal(arm(0, 1, NULL, 0), -EINVAL);
    assert_int_equal(arm(1ULL << NR_CPUS, 1, NULL, 0), -EINVAL);
    assert_int_equal(arm(0x1, 1, null_name, 1), -EINVAL);
    assert_int_equal(arm(0x1, 1, unknown, 2), -ENOENT);
    assert_string_equal(bad, "nope");

    /* An event the device refuses: the second, on the first CPU. */
    evs[1].id = RAW_REFUSED;
    config.nr_events = 2;
    config.cpus = 0x3;
    assert_int_equal(perfmon_region_arm(&config, &bad, &bad_event), -EINVAL);
    assert_int_equal(bad_event, 1);

    /* No memory for the set, then for a CPU's part. */
    evs[1] = ev_insns;
    fake_kmem_fail_after_n(0);
    assert_int_equal(perfmon_region_arm(&config, &bad, &bad_event), -ENOMEM);
    fake_kmem_fail_after_n(2);
    assert_int_equal(perfmon_region_arm(&config, &bad, &bad_event), -ENOMEM);
    fake_kmem_fail_after_n(FAKE_KMEM_NEVER);

    assert_null(perfmon_region_armed());
    assert_int_equal(perfmon_region_outer.armed, 0);
    assert_int_equal(fake_kmem_live(), 0);
    fdev_assert_idle(fd);

    /* And it arms after all that. */
    assert_int_equal(perfmon_region_arm(&config, &bad, &bad_event), 0);
    call_outer(0, 5);
    assert_int_equal(stats_of(&perfmon_region_outer, 0, NULL).calls, 1);
    assert_int_equal(perfmon_region_disarm(), 0);
    assert_int_equal(fake_kmem_live(), 0);
    fdev_assert_idle(fd);
}

/* The scoped form ends the region on every way out of the block. */
static uint64_t
scoped(uint64_t n)
{
    PERFMON_REGION_SCOPE(outer);

    fdev_count(fd, 0, RAW_INSNS, n);

    if (n > 10) {
        return n;
    }

    fdev_count(fd, 0, RAW_INSNS, 1);
    return 0;
}

static void
test_scope(void **state)
{
    struct perfmon_region_stats st;

    (void)state;

    assert_int_equal(arm(0x1, 1, NULL, 0), 0);
    scoped(20);
    scoped(3);
    st = stats_of(&perfmon_region_outer, 0, NULL);
    assert_int_equal(st.calls, 2);
    assert_int_equal(st.sum, 24);
    assert_int_equal(perfmon_region_disarm(), 0);
}

/* The event must be enabled and this CPU's: read_here says no otherwise. */
static void
test_read_here(void **state)
{
    struct perfmon_event ev;
    uint64_t value = 7;

    (void)state;

    init_ok(&ev, RAW_INSNS, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_set_dev(&ev, &fd->dev), 0);
    assert_false(perfmon_event_read_here(&ev, false, &value));
    assert_int_equal(perfmon_event_attach_cpu(&ev, 1), 0);
    assert_false(perfmon_event_read_here(&ev, false, &value));
    fdev_count(fd, 1, RAW_INSNS, 5);
    fake_cpu_set_id(1);
    assert_true(perfmon_event_read_here(&ev, false, &value));
    assert_int_equal(value, 5);
    fake_cpu_set_id(0);
    assert_int_equal(perfmon_event_disable(&ev), 0);
    fake_cpu_set_id(1);
    assert_false(perfmon_event_read_here(&ev, false, &value));
    fake_cpu_set_id(0);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(value, 5);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_regions_are_in_the_section, region_setup),
        cmocka_unit_test_setup(test_idle_markers_do_nothing, region_setup),
        cmocka_unit_test_setup(test_calls_sum_min_max_largest, region_setup),
        cmocka_unit_test_setup(test_steady_calls, region_setup),
        cmocka_unit_test_setup(test_nesting_and_self, region_setup),
        cmocka_unit_test_setup(test_cpus_apart, region_setup),
        cmocka_unit_test_setup(test_every_n, region_setup),
        cmocka_unit_test_setup(test_named_regions_only, region_setup),
        cmocka_unit_test_setup(test_reset_keeps_armed, region_setup),
        cmocka_unit_test_setup(test_losses, region_setup),
        cmocka_unit_test_setup(test_fold_in_place, region_setup),
        cmocka_unit_test_setup(test_markers_inside_a_section, region_setup),
        cmocka_unit_test_setup(test_one_arming_at_a_time, region_setup),
        cmocka_unit_test_setup(test_arm_errors_leave_nothing, region_setup),
        cmocka_unit_test_setup(test_scope, region_setup),
        cmocka_unit_test_setup(test_read_here, region_setup),
    };

    static const unsigned int hows[] = {
        PERFMON_READ_OP, PERFMON_READ_MEM, PERFMON_READ_RDPMC,
    };
    static const char *const names[] = { "op", "mem", "rdpmc" };
    int failed = 0;

    for (unsigned int i = 0; i < ARRAY_SIZE(hows); i++) {
        read_how = hows[i];
        failed += cmocka_run_group_tests_name(names[i], tests, NULL, NULL);
    }

    return failed;
}
