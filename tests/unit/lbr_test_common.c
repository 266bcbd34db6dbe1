/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Helpers shared by the host tests of the branch-record back ends: see
 * tests/unit/lbr_test_common.h.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/lbr.h"
#include "arch/x86/pmu.h"
#include "fakes/fake_smp.h"
#include "fakes/pmu_perfmon.h"
#include "kern/error.h"
#include "kern/perfmon.h"
#include "kern/xcall.h"
#include "lbr_test_common.h"
#include "msr_model.h"
#include "pmu_test_common.h"

/* Headroom of the armed counter: events before it overflows. */
#define LBR_TEST_HEADROOM   500

static struct perfmon_dev *lbr_test_pmu_dev;

/* The driver's xcalls run at once "on" their CPU. */
int
xcall_call(xcall_fn_t fn, void *arg, unsigned int cpu)
{
    assert_true(cpu < cpu_count());
    return pmu_test_run_on(fn, arg, cpu);
}

int
lbr_test_probe(const struct msr_model_config *config, unsigned int nr_cpus,
               const char **reasonp)
{
    return lbr_test_probe_odd(config, nr_cpus, NULL, reasonp);
}

int
lbr_test_probe_odd(const struct msr_model_config *config,
                   unsigned int nr_cpus, const struct msr_model_config *odd,
                   const char **reasonp)
{
    struct pmu_caps caps;
    int error;

    msr_model_init(config);

    if (odd != NULL) {
        msr_model_set_cpu(nr_cpus - 1, odd);
    }

    lbr_test_pmu_dev = pmu_test_boot_cpus(lbr_test_pmu, &caps, nr_cpus,
                                          true);
    lbr_reset();
    error = lbr_probe(lbr_test_pmu_dev, pmu_test_run_on);

    if (reasonp != NULL) {
        *reasonp = (error == 0) ? NULL : fake_perfmon_branch_absent();
    }

    assert_int_equal(error == 0, fake_perfmon_branch_driver() != NULL);
    pmu_test_assert_no_fault();
    return error;
}

int
lbr_test_probe_without_pmu(const struct msr_model_config *config,
                           const char **reasonp)
{
    int error;

    msr_model_init(config);
    fake_cpu_reset(1);
    fake_perfmon_reset();
    lbr_reset();
    error = lbr_probe(NULL, pmu_test_run_on);
    *reasonp = (error == 0) ? NULL : fake_perfmon_branch_absent();
    pmu_test_assert_no_fault();
    return error;
}

const struct perfmon_branch_driver *
lbr_test_boot(const struct msr_model_config *config, unsigned int nr_cpus)
{
    const char *reason;

    if (lbr_test_probe(config, nr_cpus, &reason) != 0) {
        fail_msg("the probe declined: %s", reason);
    }

    return fake_perfmon_branch_driver();
}

const struct perfmon_branch_driver *
lbr_test_boot_start(const struct msr_model_config *config)
{
    const struct perfmon_branch_driver *drv = lbr_test_boot(config, 1);

    lbr_test_start(LBR_TEST_ANY);
    return drv;
}

struct perfmon_dev *
lbr_test_dev(void)
{
    return lbr_test_pmu_dev;
}

void
lbr_test_start(unsigned int filter)
{
    const struct perfmon_branch_driver *drv = fake_perfmon_branch_driver();

    assert_non_null(drv);
    assert_null(drv->ops->check(lbr_test_pmu_dev, filter));
    assert_int_equal(drv->ops->start(filter), 0);
    assert_int_equal(fake_perfmon_nr_callbacks(), 1);
}

void
lbr_test_stop(void)
{
    fake_perfmon_branch_driver()->ops->stop();
    assert_int_equal(fake_perfmon_nr_callbacks(), 0);
    pmu_test_assert_no_fault();
}

unsigned int
lbr_test_branches(unsigned int first, unsigned int nr, unsigned int kind,
                  bool user)
{
    unsigned int kept = 0;

    for (unsigned int i = first; i < first + nr; i++) {
        struct msr_model_branch br = {
            .from = LBR_TEST_IP + (uint64_t)i * LBR_TEST_STEP,
            .to = LBR_TEST_IP + (uint64_t)i * LBR_TEST_STEP + 0x40,
            .kind = kind,
            .mispred = (i & 1) != 0,
            .user = user,
            .cycles = i + 1,
        };

        kept += msr_model_branch(&br);
    }

    return kept;
}

int
lbr_test_arm(void)
{
    uint64_t mask = (1ULL << lbr_test_pmu_dev->width) - 1;
    int h = fake_perfmon_open(PERFMON_EV_CYCLE, PERFMON_EF_KERN, NULL);

    assert_true(h >= 0);
    fake_perfmon_set_rearm(h, mask + 1 - LBR_TEST_HEADROOM);
    return h;
}

void
lbr_test_overflow(int handle)
{
    (void)handle;
    assert_int_equal(msr_model_nmis_pending(), 0);
    msr_model_inject(MSR_MODEL_EV_CYCLES, LBR_TEST_HEADROOM, false);
    assert_int_equal(msr_model_nmis_pending(), 1);
}

const struct perfmon_branch *
lbr_test_deliver(unsigned int *nrp)
{
    unsigned int runs = fake_perfmon_nr_callback_runs();

    pmu_test_deliver_nmis(lbr_test_pmu_dev);
    assert_true(fake_perfmon_nr_callback_runs() > runs);
    pmu_test_assert_no_fault();
    return fake_perfmon_branches(nrp);
}

const struct perfmon_branch *
lbr_test_sample(unsigned int *nrp)
{
    const struct perfmon_branch *entries;
    int h;

    /* Arming is the test's doing, not the driver's: no branches of it. */
    msr_model_set_branch_drift(0);
    h = lbr_test_arm();
    msr_model_set_branch_drift(MSR_MODEL_DEFAULT_BRANCH_DRIFT);

    lbr_test_overflow(h);
    entries = lbr_test_deliver(nrp);
    fake_perfmon_close(h);
    return entries;
}

void
lbr_test_assert_stack(const struct perfmon_branch *entries,
                      unsigned int nr_entries, unsigned int newest,
                      unsigned int nr, bool mispreds, bool cycles)
{
    if (nr_entries < nr) {
        fail_msg("%u entries, expected at least %u", nr_entries, nr);
    }

    for (unsigned int k = 0; k < nr; k++) {
        unsigned int i = newest - k;
        uint64_t from = LBR_TEST_IP + (uint64_t)i * LBR_TEST_STEP;
        uint64_t flags = 0;

        if (mispreds) {
            flags |= (i & 1) ? PERFMON_BR_MISPRED : PERFMON_BR_PREDICTED;
        }

        if (cycles) {
            flags |= (uint64_t)(i + 1) << PERFMON_BR_CYCLES_SHIFT;
        }

        if (entries[k].from != from || entries[k].to != from + 0x40
            || (entries[k].flags & ~PERFMON_BR_TYPE_MASK) != flags) {
            fail_msg("entry %u: %#llx -> %#llx flags %#llx, expected branch "
                     "%u: %#llx -> %#llx flags %#llx", k,
                     (unsigned long long)entries[k].from,
                     (unsigned long long)entries[k].to,
                     (unsigned long long)entries[k].flags, i,
                     (unsigned long long)from,
                     (unsigned long long)(from + 0x40),
                     (unsigned long long)flags);
        }
    }
}

void
lbr_test_assert_no_drift(const struct perfmon_branch *entries,
                         unsigned int nr)
{
    for (unsigned int k = 0; k < nr; k++) {
        if (msr_model_is_drift_ip(entries[k].from)) {
            fail_msg("entry %u (%#llx) is the driver's own branch: it read "
                     "the records while they ran", k,
                     (unsigned long long)entries[k].from);
        }
    }
}

unsigned int
lbr_test_nr_own(const struct perfmon_branch *entries, unsigned int nr)
{
    unsigned int own = 0;

    while (own < nr && msr_model_is_drift_ip(entries[own].from)) {
        own++;
    }

    return own;
}

void
lbr_test_assert_drift_from(const struct perfmon_branch *entries,
                           unsigned int nr, unsigned int first)
{
    for (unsigned int k = first; k < nr; k++) {
        if (!msr_model_is_drift_ip(entries[k].from)) {
            fail_msg("entry %u (%#llx) is not the driver's own branch",
                     k, (unsigned long long)entries[k].from);
        }
    }
}

void
lbr_test_assert_declines(const struct msr_model_config *config,
                         const char *reason)
{
    const char *why;

    assert_int_equal(lbr_test_probe(config, 1, &why), -ENODEV);

    if (strstr(why, reason) == NULL) {
        fail_msg("declined for '%s', expected '%s'", why, reason);
    }

    assert_int_equal(strncmp(why, "no LBR: ", 8), 0);
    assert_false(msr_model_lbr_recording());
}

void
lbr_test_assert_filter_values(uint32_t msr,
                              const struct lbr_test_filter_value *cases,
                              size_t nr_cases)
{
    for (size_t i = 0; i < nr_cases; i++) {
        lbr_test_start(cases[i].filter);

        if (pmu_test_peek(msr) != cases[i].value) {
            fail_msg("filter %#x: MSR %#x is %#llx, expected %#llx",
                     cases[i].filter, msr,
                     (unsigned long long)pmu_test_peek(msr),
                     (unsigned long long)cases[i].value);
        }

        lbr_test_stop();
    }
}

void
lbr_test_check_broken(const struct msr_model_config *config,
                      const char *faults, const char *dead)
{
    struct msr_model_config c = *config;

    c.lbr_kind = MSR_MODEL_LBRK_FAULTING;
    lbr_test_assert_declines(&c, faults);
    c.lbr_kind = MSR_MODEL_LBRK_DEAD;
    lbr_test_assert_declines(&c, dead);
    c.lbr_kind = MSR_MODEL_LBRK_NO_DEBUGCTL;
    lbr_test_assert_declines(&c, "IA32_DEBUGCTL faults on the LBR bits");
}

void
lbr_test_check_addresses(const struct msr_model_config *config)
{
    static const struct msr_model_branch branches[] = {
        { 0xffff800000001000ULL, 0xffff800000001040ULL, MSR_MODEL_BR_COND,
          false, false, 1 },
        { 0xffff8000fffff000ULL, 0xffff800100000000ULL, MSR_MODEL_BR_REL_JMP,
          false, false, 1 },
        { 0xffffffffffffe000ULL, 0xffffffff80200000ULL, MSR_MODEL_BR_COND,
          false, false, 1 },
        { 0x00007fffffffe000ULL, 0x00007fff80000000ULL, MSR_MODEL_BR_COND,
          false, true, 1 },
        { 0x0000000000401000ULL, 0x00007ffffffff000ULL, MSR_MODEL_BR_COND,
          false, true, 1 },
    };
    const size_t nr_branches = sizeof(branches) / sizeof(branches[0]);
    const struct perfmon_branch *stack;
    unsigned int nr;

    lbr_test_boot_start(config);

    for (size_t i = 0; i < nr_branches; i++) {
        assert_true(msr_model_branch(&branches[i]));
    }

    stack = lbr_test_sample(&nr);
    assert_true(nr >= nr_branches);

    for (size_t k = 0; k < nr_branches; k++) {
        const struct msr_model_branch *br = &branches[nr_branches - 1 - k];

        if (stack[k].from != br->from || stack[k].to != br->to) {
            fail_msg("entry %zu: %#llx -> %#llx, taken %#llx -> %#llx", k,
                     (unsigned long long)stack[k].from,
                     (unsigned long long)stack[k].to,
                     (unsigned long long)br->from,
                     (unsigned long long)br->to);
        }
    }

    lbr_test_stop();
}

void
lbr_test_check_stale_freeze(const struct msr_model_config *config,
                            bool mispreds, bool cycles)
{
    const struct perfmon_branch *stack;
    unsigned int nr;
    bool recording;

    lbr_test_boot(config, 1);
    /* Frozen by an interrupt nobody captured. */
    msr_model_set_status(LBR_STATUS_FROZEN);
    assert_true(msr_model_lbr_frozen());
    lbr_test_start(LBR_TEST_ANY);
    recording = msr_model_lbr_recording();
    lbr_test_branches(0, 6, MSR_MODEL_BR_COND, false);
    stack = lbr_test_sample(&nr);
    lbr_test_assert_stack(stack, nr, 5, 6, mispreds, cycles);
    assert_true(recording);
    lbr_test_stop();
}

void
lbr_test_check_freeze(const struct msr_model_config *config,
                      unsigned int depth, bool mispreds, bool cycles)
{
    const struct perfmon_branch *stack;
    unsigned int nr, recorded;
    int h;

    lbr_test_boot_start(config);
    h = lbr_test_arm();
    lbr_test_branches(0, 40, MSR_MODEL_BR_COND, false);
    lbr_test_overflow(h);
    assert_true(msr_model_lbr_frozen());
    assert_false(msr_model_lbr_recording());
    recorded = msr_model_lbr_recorded();

    stack = lbr_test_deliver(&nr);
    assert_int_equal(nr, depth);
    lbr_test_assert_stack(stack, nr, 39, depth, mispreds, cycles);
    lbr_test_assert_no_drift(stack, nr);

    /* Unfrozen at the end, not before: and recording again. */
    assert_false(msr_model_lbr_frozen());
    assert_true(msr_model_lbr_recording());
    assert_true(msr_model_lbr_recorded() > recorded);
    fake_perfmon_close(h);
    lbr_test_stop();
}

void
lbr_test_check_sched_in(const struct msr_model_config *config, bool mispreds,
                        bool cycles)
{
    const struct perfmon_branch_driver *drv = lbr_test_boot_start(config);
    const struct perfmon_branch *stack;
    unsigned int nr;

    lbr_test_branches(0, 20, MSR_MODEL_BR_COND, false);
    fake_cpu_set_intr(false);
    drv->ops->sched_in();
    fake_cpu_set_intr(true);
    assert_true(msr_model_lbr_recording());
    lbr_test_branches(50, 3, MSR_MODEL_BR_COND, false);
    stack = lbr_test_sample(&nr);
    lbr_test_assert_stack(stack, nr, 52, 3, mispreds, cycles);

    /* Older than those: only the driver's own branches since the reset. */
    lbr_test_assert_drift_from(stack, nr, 3);
    lbr_test_stop();
}
