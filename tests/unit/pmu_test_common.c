/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Helpers shared by the host tests of the PMU drivers: see
 * tests/unit/pmu_test_common.h.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/lapic.h"
#include "arch/x86/pmu.h"
#include "fakes/fake_log.h"
#include "fakes/fake_perfmon_selftest.h"
#include "fakes/fake_smp.h"
#include "fakes/pmu_perfmon.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_selftest.h"
#include "msr_model.h"
#include "pmu_test_common.h"

uint64_t pmu_test_rng_state;

/* The boot glue's view of the driver booted last (for the self-test). */
static const struct pmu_driver *pmu_test_driver;
static const struct pmu_caps *pmu_test_caps;

const struct pmu_driver *
pmu_get_driver(void)
{
    return pmu_test_driver;
}

const struct pmu_caps *
pmu_get_caps(void)
{
    return pmu_test_caps;
}

int
pmu_test_run_on(void (*fn)(void *arg), void *arg, unsigned int cpu)
{
    unsigned int self = cpu_id();

    fake_cpu_set_id(cpu);
    fake_cpu_set_intr(false);
    fn(arg);
    fake_cpu_set_intr(true);
    fake_cpu_set_id(self);
    return 0;
}

int
pmu_test_probe_cpus(const struct pmu_driver *drv, struct pmu_caps *caps,
                    unsigned int nr_cpus, bool use_nmi)
{
    fake_cpu_reset(nr_cpus);
    fake_perfmon_reset();
    fake_log_reset();
    return pmu_probe_cpus(drv, caps, use_nmi, pmu_test_run_on);
}

struct perfmon_dev *
pmu_test_boot_cpus(const struct pmu_driver *drv, struct pmu_caps *caps,
                   unsigned int nr_cpus, bool use_nmi)
{
    assert_int_equal(pmu_test_probe_cpus(drv, caps, nr_cpus, use_nmi), 0);

    for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
        fake_cpu_set_id(cpu);
        drv->cpu_init();

        if (caps->overflow_nmi) {
            lapic_pmc_setup();
        }
    }

    fake_cpu_set_id(0);
    assert_int_equal(perfmon_register(drv->dev), 0);
    pmu_test_driver = drv;
    pmu_test_caps = caps;
    return drv->dev;
}

struct perfmon_dev *
pmu_test_boot(const struct pmu_driver *drv, struct pmu_caps *caps,
              const struct msr_model_config *config, bool use_nmi)
{
    msr_model_init(config);
    return pmu_test_boot_cpus(drv, caps, 1, use_nmi);
}

void
pmu_test_check_declines(const struct pmu_driver *drv, struct pmu_caps *caps,
                        const struct msr_model_config *config,
                        const char *reason)
{
    msr_model_init(config);
    assert_int_equal(pmu_test_probe_cpus(drv, caps, 1, true), -ENODEV);
    assert_false(caps->present);
    assert_non_null(caps->reason);
    assert_string_equal(caps->reason, reason);
    pmu_test_assert_no_fault();
    /* No device: an NMI is not the driver's. */
    assert_false(perfmon_overflow_intr(drv->dev, NULL));
}

void
pmu_test_check_polled(int h, uint64_t seed)
{
    uint64_t total = 0;

    pmu_test_rng_state = seed;

    for (unsigned int i = 0; i < 2000; i++) {
        uint64_t n = pmu_test_rng_next() % (1ULL << 47);

        msr_model_inject(MSR_MODEL_EV_BRANCH, n, false);
        total += n;
        pmu_test_assert_count(fake_perfmon_value(h), total);
    }

    assert_int_equal(msr_model_nmis_pending(), 0);
}

void
pmu_test_check_count(uint64_t value, uint64_t injected, const char *file,
                     int line)
{
    uint64_t slack = msr_model_drifted();

    if (value < injected || value - injected > slack) {
        fail_msg("%s:%d: count %llu, expected %llu + at most %llu of drift",
                 file, line, (unsigned long long)value,
                 (unsigned long long)injected, (unsigned long long)slack);
    }
}

void
pmu_test_deliver_nmis(struct perfmon_dev *dev)
{
    while (msr_model_take_nmi()) {
        assert_true(perfmon_overflow_intr(dev, NULL));
        assert_false(msr_model_lvt_masked());
    }
}

/*
 * Sampling re-arms counters from the PMI: the core reads, then writes.
 * With a global control register (ctrl_msr) the handler freezes the
 * counters before it reads the status and the core reads the counters,
 * and opens the gate again only at the end, so that no event falls
 * between that read and write; the gate comes back as it was.
 */
void
pmu_test_check_rearm(struct perfmon_dev *dev, uint32_t ctrl_msr)
{
    uint64_t mask = (1ULL << dev->width) - 1;
    uint64_t max_period = (dev->max_period != 0) ? dev->max_period : mask;
    uint64_t total_br = 0, total_in = 0, ctrl, lost;
    int hb, hi;

    hb = fake_perfmon_open(PERFMON_EV_BRANCH, PERFMON_EF_KERN, NULL);
    hi = fake_perfmon_open(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN, NULL);
    assert_true(hb >= 0 && hi >= 0);
    fake_perfmon_set_rearm(hb, mask + 1 - MIN(max_period, 100000));
    fake_perfmon_set_rearm(hi, mask + 1 - MIN(max_period, 77777));
    ctrl = pmu_test_peek(ctrl_msr);
    /* Arming them, outside an interrupt, may lose what they counted. */
    lost = msr_model_lost_events();
    pmu_test_rng_state = 4242;

    for (unsigned int i = 0; i < 3000; i++) {
        uint64_t b = pmu_test_rng_next() % 60000;
        uint64_t n = pmu_test_rng_next() % 60000;

        msr_model_inject(MSR_MODEL_EV_BRANCH, b, false);
        msr_model_inject(MSR_MODEL_EV_INSTRUCTIONS, n, false);
        total_br += b;
        total_in += n;
        pmu_test_deliver_nmis(dev);
        assert_int_equal(pmu_test_peek(ctrl_msr), ctrl);
    }

    assert_true(fake_perfmon_nr_ovf_folds() > 1000);
    assert_int_equal(msr_model_lost_events(), lost);
    pmu_test_assert_count(fake_perfmon_value(hb), total_br);
    pmu_test_assert_count(fake_perfmon_value(hi), total_in);
    assert_int_equal(msr_model_pmis_lost(), 0);
    pmu_test_assert_no_fault();
}

/* One event's turn of pmu_test_check_restart_drops_overflow. */
static void
pmu_test_check_restart_one(struct perfmon_dev *dev, unsigned int event_id,
                           unsigned int model_event)
{
    const struct pmu_driver *drv = pmu_get_driver();
    bool global = pmu_get_caps()->global_ctrl;
    unsigned int hw, hw2, folds = fake_perfmon_nr_ovf_folds();
    uint64_t stale;
    int h, h2;

    h = fake_perfmon_open(event_id, PERFMON_EF_KERN, &hw);
    assert_true(h >= 0);
    fake_perfmon_write(h, (1ULL << dev->width) - 100);
    msr_model_inject(model_event, 1000, false);
    assert_int_equal(msr_model_nmis_pending(), 1);

    if (global) {
        assert_true(pmu_test_peek(drv->global_status_msr) & (1ULL << hw));
    }

    /* The previous user goes, the next one comes, the NMI still waits. */
    fake_perfmon_close(h);
    h2 = fake_perfmon_open(event_id, PERFMON_EF_USER, &hw2);
    assert_int_equal(hw2, hw);
    stale = global ? pmu_test_peek(drv->global_status_msr) & (1ULL << hw) : 0;
    msr_model_inject(model_event, 500, true);
    pmu_test_deliver_any_nmis(dev);
    assert_int_equal(fake_perfmon_value(h2), 500);
    assert_int_equal(fake_perfmon_nr_ovf_folds(), folds);
    /* Dropped by the start itself, not by the handler afterwards. */
    assert_int_equal(stale, 0);
    fake_perfmon_close(h2);
}

void
pmu_test_check_restart_drops_overflow(struct perfmon_dev *dev)
{
    /* A general-purpose counter, and on Intel fixed counter 0. */
    pmu_test_check_restart_one(dev, PERFMON_EV_BRANCH, MSR_MODEL_EV_BRANCH);
    pmu_test_check_restart_one(dev, PERFMON_EV_INSTRUCTION,
                               MSR_MODEL_EV_INSTRUCTIONS);
    assert_int_equal(msr_model_pmis_lost(), 0);
    pmu_test_assert_no_fault();
}

void
pmu_test_check_unmask_window(struct perfmon_dev *dev)
{
    uint64_t total = 0;
    int h;

    h = fake_perfmon_open(PERFMON_EV_BRANCH, PERFMON_EF_KERN, NULL);
    assert_true(h >= 0);
    /* Fewer events left than one access's drift. */
    fake_perfmon_set_rearm(h, (1ULL << dev->width) - 3);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 10, false);
    total += 10;

    for (unsigned int i = 0; i < 50; i++) {
        if (msr_model_nmis_pending() != 1) {
            fail_msg("round %u: no PMI pending (%u lost)", i,
                     msr_model_pmis_lost());
        }

        /* One NMI a round: a re-arm may raise the next one at once. */
        assert_true(msr_model_take_nmi());
        perfmon_overflow_intr(dev, NULL);
        assert_false(msr_model_lvt_masked());
        msr_model_inject(MSR_MODEL_EV_BRANCH, 10, false);
        total += 10;
    }

    assert_int_equal(msr_model_pmis_lost(), 0);
    assert_true(fake_perfmon_nr_intrs() >= 50);
    fake_perfmon_set_rearm(h, 0);
    pmu_test_deliver_any_nmis(dev);
    pmu_test_assert_count(fake_perfmon_value(h), total);
    pmu_test_assert_no_fault();
}

void
pmu_test_check_wraps(struct perfmon_dev *dev, unsigned int nr_rounds,
                     uint64_t max_chunk, unsigned int min_wraps)
{
    uint32_t status_msr = pmu_get_driver()->global_status_msr;
    bool global = pmu_get_caps()->global_ctrl;
    uint64_t total_br = 0, total_in = 0, total_cy = 0;
    int hb, hi, hc;

    pmu_test_rng_state = 0x9e3779b97f4a7c15ULL;
    hb = fake_perfmon_open(PERFMON_EV_BRANCH, PERFMON_EF_KERN, NULL);
    hi = fake_perfmon_open(PERFMON_EV_INSTRUCTION,
                           PERFMON_EF_KERN | PERFMON_EF_USER, NULL);
    hc = fake_perfmon_open(PERFMON_EV_CYCLE, PERFMON_EF_KERN, NULL);
    assert_true(hb >= 0 && hi >= 0 && hc >= 0);

    for (unsigned int i = 0; i < nr_rounds; i++) {
        uint64_t b = pmu_test_rng_next() % max_chunk;
        uint64_t n = pmu_test_rng_next() % max_chunk;
        uint64_t c = pmu_test_rng_next() % max_chunk;

        msr_model_inject(MSR_MODEL_EV_BRANCH, b, false);
        msr_model_inject(MSR_MODEL_EV_INSTRUCTIONS, n, (i & 1) != 0);
        msr_model_inject(MSR_MODEL_EV_CYCLES, c, false);
        total_br += b;
        total_in += n;
        total_cy += c;
        pmu_test_deliver_nmis(dev);

        if (global) {
            assert_int_equal(pmu_test_peek(status_msr), 0);
        }

        /* Read now and then, as the core does between interrupts. */
        if (i % 97 == 0) {
            pmu_test_assert_count(fake_perfmon_value(hb), total_br);
        }
    }

    pmu_test_assert_count(fake_perfmon_value(hb), total_br);
    pmu_test_assert_count(fake_perfmon_value(hi), total_in);
    pmu_test_assert_count(fake_perfmon_value(hc), total_cy);
    assert_true(fake_perfmon_nr_ovf_folds() >= min_wraps);
    assert_int_equal(msr_model_pmis_lost(), 0);
    assert_true(msr_model_pmis_merged() > 0);
    assert_int_equal(msr_model_nr_unmasks(), fake_perfmon_nr_intrs());
    assert_int_equal(pmu_nr_pmis(), fake_perfmon_nr_intrs());
    pmu_test_assert_no_fault();
}

void
pmu_test_check_raw_refused(struct perfmon_dev *dev, uint64_t code,
                           const uint64_t *bad, size_t nr_bad)
{
    unsigned int hw;

    for (size_t i = 0; i < nr_bad; i++) {
        if (dev->ops->alloc(dev, &hw, code | bad[i], PERFMON_EF_KERN)
            != -EINVAL) {
            fail_msg("raw code %#llx with bits %#llx was not refused",
                     (unsigned long long)code, (unsigned long long)bad[i]);
        }
    }

    /* No mode, and the core's raw flag, which is not a mode. */
    assert_int_equal(dev->ops->alloc(dev, &hw, code, 0), -EINVAL);
    assert_int_equal(dev->ops->alloc(dev, &hw, code,
                                     PERFMON_EF_RAW | PERFMON_EF_KERN),
                     -EINVAL);
}

unsigned int
pmu_test_deliver_any_nmis(struct perfmon_dev *dev)
{
    unsigned int unclaimed = 0;

    while (msr_model_take_nmi()) {
        unclaimed += !perfmon_overflow_intr(dev, NULL);
        assert_false(msr_model_lvt_masked());
    }

    return unclaimed;
}

unsigned int
pmu_test_check_branches(struct perfmon_dev *dev, int h, unsigned int nr_rounds,
                        uint64_t max_chunk)
{
    unsigned int unclaimed = 0;
    uint64_t total = 0;

    for (unsigned int i = 0; i < nr_rounds; i++) {
        uint64_t n = pmu_test_rng_next() % max_chunk;

        msr_model_inject(MSR_MODEL_EV_BRANCH, n, false);
        total += n;

        /*
         * A read may come between a wrap and its interrupt (and then
         * cannot tell how far the counter went): the count is checked
         * once the interrupts are in.
         */
        if (i % 3 == 0) {
            fake_perfmon_value(h);
        }

        unclaimed += pmu_test_deliver_any_nmis(dev);

        if (i % 7 == 0) {
            pmu_test_assert_count(fake_perfmon_value(h), total);
        }
    }

    pmu_test_assert_count(fake_perfmon_value(h), total);
    assert_int_equal(msr_model_pmis_lost(), 0);
    pmu_test_assert_no_fault();
    return unclaimed;
}

unsigned int
pmu_test_selftest(struct perfmon_dev *dev, bool verbose)
{
    struct perfmon_selftest st = { .print = fake_perfmon_selftest_print };
    const struct pmu_driver *drv = pmu_get_driver();
    uint64_t ctrl = 0, after = 0, raw;
    bool global = pmu_get_caps()->global_ctrl;
    unsigned int hws[PERFMON_DEV_MAX_PMCS], nr = 0;

    if (global) {
        ctrl = pmu_test_peek(drv->global_ctrl_msr);
    }

    fake_perfmon_selftest_reset();
    pmu_selftest(dev, &st);

    if (verbose) {
        for (unsigned int i = 0; i < fake_perfmon_selftest_nr_lines(); i++) {
            print_message("# %s\n", fake_perfmon_selftest_line(i));
        }
    }

    assert_int_equal(st.nr_pass + st.nr_fail + st.nr_skip,
                     fake_perfmon_selftest_nr_lines());

    if (global) {
        after = pmu_test_peek(drv->global_ctrl_msr);
        assert_int_equal(after, ctrl);
    }

    /* Every general-purpose counter free again (branches go anywhere). */
    assert_int_equal(dev->ops->translate(dev, &raw, PERFMON_EV_BRANCH), 0);

    while (dev->ops->alloc(dev, &hws[nr], raw, PERFMON_EF_KERN) == 0) {
        nr++;
    }

    assert_int_equal(nr, pmu_get_caps()->nr_gp);

    for (unsigned int i = 0; i < nr; i++) {
        dev->ops->free(dev, hws[i]);
    }
    pmu_test_assert_no_fault();
    return st.nr_fail;
}

void
pmu_test_assert_selftest_line(const char *check, const char *measured)
{
    const char *line = fake_perfmon_selftest_find(check);
    const char *value;
    size_t len;

    if (line == NULL) {
        fail_msg("no self-test line '%s'", check);
    }

    if (measured == NULL) {
        return;
    }

    /* The name is padded: the value is the next word after the spaces. */
    value = strstr(line, check) + strlen(check);
    value += strspn(value, " ");
    len = strlen(measured);

    if (strncmp(value, measured, len) != 0
        || (value[len] != '\0' && value[len] != ' ')) {
        fail_msg("'%s': the line shows '%s', expected '%s'", check, value,
                 measured);
    }
}

uint64_t
pmu_test_peek(uint32_t msr)
{
    uint64_t value = 0;

    assert_true(msr_model_peek(msr, &value));
    return value;
}

void
pmu_test_assert_no_fault(void)
{
    assert_int_equal(msr_model_nr_gp_unsafe(), 0);
}

uint64_t
pmu_test_rng_next(void)
{
    pmu_test_rng_state ^= pmu_test_rng_state << 13;
    pmu_test_rng_state ^= pmu_test_rng_state >> 7;
    pmu_test_rng_state ^= pmu_test_rng_state << 17;
    return pmu_test_rng_state;
}
