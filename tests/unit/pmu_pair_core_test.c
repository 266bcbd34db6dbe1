/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The AMD driver's counter pairs driven through the real perfmon core, on
 * the register-level model of a Zen 3 (one CPU, no drift, so that every
 * count is exact): the core reserves both counters of a pinned pair event,
 * keeps flexible events off both, and gives both back when the pair goes.
 *
 * - A flexible event running on counter 1 when a pinned pair event takes
 *   counters 0-1 moves to a free counter; both count exactly.
 * - A flexible event set up before the pair, first placed after it, is
 *   never placed on the pair's odd counter.
 * - Freed, the pair gives back both counters: six flexible events then
 *   all run on the six counters at once.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/cpu.h"
#include "arch/x86/msr.h"
#include "arch/x86/pmu.h"
#include "arch/x86/pmu_evtab.h"
#include "fakes/fake_smp.h"
#include "kern/error.h"
#include "kern/perfmon.h"
#include "kern/perfmon_evtab.h"
#include "msr_model.h"
#include "pmu_core_boot.h"

#define KERN            PERFMON_EF_KERN
#define NR_COUNTERS     6
#define MERGE_SEL       (PMU_AMD_RAW(0xfff, 0) | PMU_EVTSEL_EN)
#define EVENT_UMASK     (PMU_AMD_RAW(0xfff, 0xff))

/* Generic events each flexible, with the model event that drives it. */
static const struct {
    unsigned int id;
    unsigned int model_ev;
} flex[NR_COUNTERS] = {
    { PERFMON_EV_INSTRUCTION, MSR_MODEL_EV_INSTRUCTIONS },
    { PERFMON_EV_BRANCH, MSR_MODEL_EV_BRANCH },
    { PERFMON_EV_CYCLE, MSR_MODEL_EV_CYCLES },
    { PERFMON_EV_BRANCH_MISS, MSR_MODEL_EV_BRANCH_MISS },
    { PERFMON_EV_CACHE_REF, MSR_MODEL_EV_LLC_REF },
    { PERFMON_EV_CACHE_MISS, MSR_MODEL_EV_LLC_MISS },
};

/*
 * A one-CPU Zen 3 with PerfMonV2 and its event table, the core fresh, the
 * driver registered as the boot glue does it; its FLOPs code in *flopsp.
 */
static struct perfmon_dev *
boot_zen3(uint64_t *flopsp)
{
    struct msr_model_config config = msr_model_amd(0x19, true, true);
    const struct perfmon_evtab_model *m;
    struct perfmon_dev *dev;
    struct pmu_caps caps;

    dev = pmu_core_boot(&pmu_amd_driver, &config, &caps);
    msr_model_set_drift(0);
    pmu_evtab_setup(CPU_VENDOR_AMD, 0x19, 0x01, 1);
    m = perfmon_evtab_host();
    *flopsp = pmu_evtab_raw(m, perfmon_evtab_lookup(m,
                                                    "fp_ret_sse_avx_ops.all"));
    assert_int_equal(*flopsp,
                     msr_model_event_code(&config, MSR_MODEL_EV_FP_OPS));
    return dev;
}

/* The event select of counter hw_id. */
static uint64_t
ctl(unsigned int hw_id)
{
    uint64_t value;

    assert_true(msr_model_peek(MSR_AMD_F15H_PERF_CTL0 + 2 * hw_id, &value));
    return value;
}

/* The counter whose select counts raw_event, enabled; NR_COUNTERS: none. */
static unsigned int
counter_of(uint64_t raw_event)
{
    for (unsigned int i = 0; i < NR_COUNTERS; i++) {
        uint64_t sel = ctl(i);

        if ((sel & PMU_EVTSEL_EN)
            && (sel & EVENT_UMASK) == (raw_event & EVENT_UMASK)) {
            return i;
        }
    }

    return NR_COUNTERS;
}

/* A multiplexing turn on the CPU: time passes, then the clock ticks. */
static void
turn(void)
{
    struct fake_ctx saved;

    fake_cpu_advance_tsc(30000);
    fake_ctx_enter(&saved, 0);

    for (unsigned int i = 0; i < PERFMON_MUX_MS_DEFAULT; i++) {
        perfmon_tick(0);
    }

    fake_ctx_exit(&saved);
}

static void
flex_init(struct perfmon_event *ev, unsigned int i)
{
    assert_int_equal(perfmon_event_init(ev, flex[i].id, KERN), 0);
}

static void
pair_init(struct perfmon_event *ev, uint64_t flops)
{
    assert_int_equal(perfmon_event_init(ev, flops, KERN | PERFMON_EF_RAW
                                                   | PERFMON_EF_PINNED), 0);
}

static uint64_t
raw_of(struct perfmon_dev *dev, unsigned int i)
{
    uint64_t raw;

    assert_int_equal(dev->ops->translate(dev, &raw, flex[i].id), 0);
    return raw;
}

/* The pair's 64 FLOPs a cycle and 1000 branches: both counted exactly. */
static void
check_pair_and_branches(struct perfmon_event *pair,
                        struct perfmon_event *branches)
{
    uint64_t pair_before = perfmon_event_read(pair);
    uint64_t branch_before = perfmon_event_read(branches);

    msr_model_inject_spread(MSR_MODEL_EV_FP_OPS, 6400, 100, false);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 1000, false);
    assert_int_equal(perfmon_event_read(pair) - pair_before, 6400);
    assert_int_equal(perfmon_event_read(branches) - branch_before, 1000);
}

/*
 * Branches run on counter 1 (instructions took 0 and left); a pinned pair
 * event then takes 0-1: the branches move to a free counter, off the
 * pair's odd one, and both count exactly.
 */
static void
test_pair_evicts_odd(void **state)
{
    struct perfmon_event insns, branches, pair;
    struct perfmon_dev *dev;
    uint64_t flops;

    (void)state;
    dev = boot_zen3(&flops);
    flex_init(&insns, 0);
    flex_init(&branches, 1);
    assert_int_equal(perfmon_event_attach_cpu(&insns, 0), 0);
    assert_int_equal(perfmon_event_attach_cpu(&branches, 0), 0);
    assert_int_equal(counter_of(raw_of(dev, 1)), 1);
    perfmon_event_detach(&insns);

    pair_init(&pair, flops);
    assert_int_equal(perfmon_event_attach_cpu(&pair, 0), 0);
    check_pair_and_branches(&pair, &branches);
    assert_int_equal(ctl(1), MERGE_SEL);
    assert_int_equal(counter_of(raw_of(dev, 1)), 2);

    perfmon_event_detach(&pair);
    perfmon_event_detach(&branches);
    assert_int_equal(msr_model_nr_gp_unsafe(), 0);
}

/*
 * A thread's branches set up before the pair (which could then count on
 * counter 1), first placed when the thread runs after the pair took 0-1:
 * on counter 2, never the pair's odd counter, however often it switches.
 */
static void
test_pair_odd_never_placed(void **state)
{
    struct perfmon_event branches, pair;
    struct thread *self, *t;
    struct perfmon_dev *dev;
    uint64_t flops;

    (void)state;
    dev = boot_zen3(&flops);
    self = fake_thread_current(0);
    t = fake_thread_create("t");
    flex_init(&branches, 1);
    assert_int_equal(perfmon_event_attach(&branches, t), 0);
    pair_init(&pair, flops);
    assert_int_equal(perfmon_event_attach_cpu(&pair, 0), 0);

    for (unsigned int i = 0; i < 3; i++) {
        fake_thread_switch(0, t);
        check_pair_and_branches(&pair, &branches);
        assert_int_equal(ctl(1), MERGE_SEL);
        assert_int_equal(counter_of(raw_of(dev, 1)), 2);
        fake_thread_switch(0, self);
    }

    perfmon_event_detach(&pair);
    perfmon_event_detach(&branches);
    assert_int_equal(msr_model_nr_gp_unsafe(), 0);
}

/*
 * Six flexible events take turns on the four counters a pair leaves; the
 * pair freed, both its counters come back: from the next turn all six
 * run at once and count every event.
 */
static void
test_pair_free_unreserves_both(void **state)
{
    struct perfmon_event evs[NR_COUNTERS], pair;
    uint64_t before[NR_COUNTERS];
    uint64_t flops;

    (void)state;
    boot_zen3(&flops);
    pair_init(&pair, flops);
    assert_int_equal(perfmon_event_attach_cpu(&pair, 0), 0);

    for (unsigned int i = 0; i < NR_COUNTERS; i++) {
        flex_init(&evs[i], i);
        assert_int_equal(perfmon_event_attach_cpu(&evs[i], 0), 0);
    }

    perfmon_event_detach(&pair);
    turn();

    for (unsigned int i = 0; i < NR_COUNTERS; i++) {
        before[i] = perfmon_event_read(&evs[i]);
        msr_model_inject(flex[i].model_ev, 1000, false);
    }

    for (unsigned int i = 0; i < NR_COUNTERS; i++) {
        assert_int_equal(perfmon_event_read(&evs[i]) - before[i], 1000);
        perfmon_event_detach(&evs[i]);
    }

    assert_int_equal(msr_model_nr_gp_unsafe(), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pair_evicts_odd),
        cmocka_unit_test(test_pair_odd_never_placed),
        cmocka_unit_test(test_pair_free_unreserves_both),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
