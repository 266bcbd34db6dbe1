/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The x86 drivers' MSR accesses per operation, counted on the
 * register-level model: under KVM each RDMSR, WRMSR and RDPMC of a PMU
 * register is a VM exit, the cost users feel.  Each driver (Intel
 * version 2, as KVM shows it, and version 5; AMD PerfMonV2, as KVM shows a
 * Zen 4, and AMD without it) is booted on the model and driven through the
 * real perfmon core, as the kernel drives it:
 *
 * - read: a CPU event's local read (one counting counter);
 * - switch-unshared: a context switch from a thread counting one event to
 *   a thread counting another (the core passes the counter on in place:
 *   the outgoing count read by RDPMC, the event select written);
 * - switch-shared: a context switch between two threads counting the same
 *   event (the counter kept);
 * - pmi-fold: the overflow NMI of one counting counter;
 * - pmi-sample: the overflow NMI of one sampling counter, re-armed.
 *
 * The counts must be those of the table below, so that a change that
 * costs an access more fails here.  Run with --lines, the program prints
 * instead one line per driver and operation, "msr: DRIVER OPERATION
 * rdmsr=N wrmsr=N rdpmc=N", each followed by its verdict against the
 * targets (`make bench` shows them after the guest's table).  The local
 * APIC's LVT is counted apart: the kernel unmasks it with an MMIO store
 * in xAPIC mode, the counts' assumption; in x2APIC mode each unmask is one
 * more WRMSR, which the verdict line says.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/cpu.h"
#include "arch/x86/pmu.h"
#include "arch/x86/trap.h"
#include "fakes/fake_smp.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "msr_model.h"
#include "pmu_core_boot.h"

/* The operations, in the order of the lines. */
#define OP_READ             0
#define OP_SWITCH_UNSHARED  1
#define OP_SWITCH_SHARED    2
#define OP_PMI_FOLD         3
#define OP_PMI_SAMPLE       4
#define NR_OPS              5

static const char *const op_names[NR_OPS] = {
    "read", "switch-unshared", "switch-shared", "pmi-fold", "pmi-sample",
};

/* What one operation cost: MSR accesses and LVT unmasks. */
struct cost {
    unsigned int rdmsr;
    unsigned int wrmsr;
    unsigned int rdpmc;
    unsigned int unmasks;
};

/*
 * A machine and its driver; global: it has global control and status
 * registers (the PMI targets apply); expected: what each operation costs
 * now (rdmsr, wrmsr, rdpmc).
 */
struct machine {
    const char *name;
    const struct pmu_driver *drv;
    struct msr_model_config (*config)(void);
    bool global;
    unsigned int expected[NR_OPS][3];
};

static struct msr_model_config
config_intel_v5(void)
{
    return msr_model_intel(5);
}

static struct msr_model_config
config_amd_legacy(void)
{
    return msr_model_amd(0x17, true, false);
}

static const struct machine machines[] = {
    { "intel-v2", &pmu_intel_driver, msr_model_kvm_intel, true,
      { { 0, 0, 1 }, { 0, 1, 1 }, { 0, 0, 1 }, { 1, 3, 1 }, { 1, 4, 1 } } },
    { "intel-v5", &pmu_intel_driver, config_intel_v5, true,
      { { 0, 0, 1 }, { 0, 1, 1 }, { 0, 0, 1 }, { 1, 3, 1 }, { 1, 4, 1 } } },
    { "amd-v2", &pmu_amd_driver, msr_model_kvm_amd, true,
      { { 0, 0, 1 }, { 0, 1, 1 }, { 0, 0, 1 }, { 1, 3, 1 }, { 1, 4, 1 } } },
    { "amd-legacy", &pmu_amd_driver, config_amd_legacy, false,
      { { 0, 0, 1 }, { 0, 1, 1 }, { 0, 0, 1 }, { 0, 1, 2 }, { 0, 2, 2 } } },
};

static struct trap_frame frame;

/* A one-CPU machine m through the real core (pmu_core_boot.h). */
static struct perfmon_dev *
boot(const struct machine *m)
{
    struct msr_model_config config = m->config();
    struct perfmon_dev *dev;
    struct pmu_caps caps;

    dev = pmu_core_boot(m->drv, &config, &caps);
    assert_true(caps.overflow_nmi);
    assert_int_equal(caps.global_ctrl, m->global);
    return dev;
}

static struct cost cost_start;

static void
cost_begin(void)
{
    struct msr_model_accesses a;

    msr_model_get_accesses(&a);
    cost_start = (struct cost){ a.rdmsr, a.wrmsr, a.rdpmc,
                                msr_model_nr_unmasks() };
}

static struct cost
cost_end(void)
{
    struct msr_model_accesses a;

    msr_model_get_accesses(&a);
    return (struct cost){ a.rdmsr - cost_start.rdmsr,
                          a.wrmsr - cost_start.wrmsr,
                          a.rdpmc - cost_start.rdpmc,
                          msr_model_nr_unmasks() - cost_start.unmasks };
}

static void
event_attach(struct perfmon_event *ev, unsigned int id, struct thread *t)
{
    assert_int_equal(perfmon_event_init(ev, id, PERFMON_EF_KERN), 0);
    assert_int_equal(t ? perfmon_event_attach(ev, t)
                       : perfmon_event_attach_cpu(ev, 0), 0);
}

static struct cost
measure_read(void)
{
    struct perfmon_event ev;
    struct cost cost;

    event_attach(&ev, PERFMON_EV_BRANCH, NULL);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 1000, false);
    cost_begin();
    assert_true(perfmon_event_read(&ev) >= 1000);
    cost = cost_end();
    perfmon_event_detach(&ev);
    return cost;
}

/*
 * From a thread counting branches to one counting id_b (branches: the
 * counter kept; cache misses: another counter, passed on in place), each
 * thread's count exact: b's counter counts its event only, from the
 * switch on.
 */
static struct cost
measure_switch(unsigned int id_b)
{
    struct thread *a = fake_thread_create("a"), *b = fake_thread_create("b");
    bool shared = (id_b == PERFMON_EV_BRANCH);
    struct perfmon_event ea, eb;
    struct cost cost;

    msr_model_set_drift(0);             /* exact counts */
    event_attach(&ea, PERFMON_EV_BRANCH, a);
    event_attach(&eb, id_b, b);
    fake_thread_switch(0, a);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 1000, false);
    msr_model_inject(MSR_MODEL_EV_LLC_MISS, 200, false);
    cost_begin();
    fake_thread_switch(0, b);
    cost = cost_end();
    msr_model_inject(shared ? MSR_MODEL_EV_BRANCH : MSR_MODEL_EV_LLC_MISS,
                     500, false);
    msr_model_inject(shared ? MSR_MODEL_EV_LLC_MISS : MSR_MODEL_EV_BRANCH,
                     300, false);
    fake_thread_switch(0, a);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 10, false);
    msr_model_inject(MSR_MODEL_EV_LLC_MISS, 20, false);
    assert_int_equal(perfmon_event_read(&ea), 1010);
    assert_int_equal(perfmon_event_read(&eb), 500);
    perfmon_event_detach(&ea);
    perfmon_event_detach(&eb);
    return cost;
}

/* The NMI of dev's counter, which just overflowed. */
static struct cost
measure_nmi(struct perfmon_dev *dev)
{
    struct fake_ctx saved;
    struct cost cost;

    assert_int_equal(msr_model_nmis_pending(), 1);
    fake_ctx_enter(&saved, 0);
    cost_begin();
    assert_true(msr_model_take_nmi());
    assert_true(perfmon_overflow_intr(dev, &frame));
    cost = cost_end();
    fake_ctx_exit(&saved);
    assert_false(msr_model_lvt_masked());
    return cost;
}

/* A counting CPU event's counter wraps: half its range twice. */
static struct cost
measure_pmi_fold(struct perfmon_dev *dev)
{
    uint64_t half = 1ULL << (dev->width - 1);
    struct perfmon_event ev;
    struct cost cost;

    event_attach(&ev, PERFMON_EV_BRANCH, NULL);
    msr_model_inject(MSR_MODEL_EV_BRANCH, half, false);
    msr_model_inject(MSR_MODEL_EV_BRANCH, half, false);
    cost = measure_nmi(dev);
    assert_true(perfmon_event_read(&ev) >= 2 * half);
    perfmon_event_detach(&ev);
    return cost;
}

/* A sampling CPU event's period runs out: one sample, re-armed. */
static struct cost
measure_pmi_sample(struct perfmon_dev *dev)
{
    struct perfmon_sbuf *sbuf;
    struct perfmon_sampling s;
    struct perfmon_event ev;
    struct cost cost;

    assert_int_equal(perfmon_sbuf_create(&sbuf, 4096), 0);
    s = (struct perfmon_sampling){
        .period = 1000, .fields = PERFMON_SF_PERIOD, .id = 1, .sbuf = sbuf,
    };
    assert_int_equal(perfmon_event_init(&ev, PERFMON_EV_BRANCH,
                                        PERFMON_EF_KERN), 0);
    assert_int_equal(perfmon_event_set_sampling(&ev, &s), 0);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 0), 0);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 1000, false);
    cost = measure_nmi(dev);
    perfmon_event_detach(&ev);
    perfmon_sbuf_destroy(sbuf);
    return cost;
}

static struct cost
measure(const struct machine *m, unsigned int op)
{
    struct perfmon_dev *dev = boot(m);

    switch (op) {
    case OP_READ:
        return measure_read();
    case OP_SWITCH_UNSHARED:
        return measure_switch(PERFMON_EV_CACHE_MISS);
    case OP_SWITCH_SHARED:
        return measure_switch(PERFMON_EV_BRANCH);
    case OP_PMI_FOLD:
        return measure_pmi_fold(dev);
    default:
        return measure_pmi_sample(dev);
    }
}

/* ---- the targets -------------------------------------------------------- */

#define NO_LIMIT    (~0U)

/*
 * The most each operation may cost: RDMSR, WRMSR, RDPMC, and all of them
 * together; the PMI's only where there are global registers (freeze,
 * status, acknowledgement, restore, and the counter's read), the sample's
 * one WRMSR more than the fold's (the re-arm).
 */
static const unsigned int targets[NR_OPS][4] = {
    [OP_READ] = { 0, 0, 1, NO_LIMIT },
    [OP_SWITCH_UNSHARED] = { NO_LIMIT, 2, 1, NO_LIMIT },
    [OP_SWITCH_SHARED] = { 0, 0, 1, NO_LIMIT },
    [OP_PMI_FOLD] = { NO_LIMIT, NO_LIMIT, NO_LIMIT, 5 },
    [OP_PMI_SAMPLE] = { NO_LIMIT, NO_LIMIT, NO_LIMIT, 6 },
};

static const char *const target_texts[NR_OPS] = {
    "0 RDMSR, 1 RDPMC", "at most 2 WRMSR, 1 RDPMC", "0 WRMSR, 1 RDPMC",
    "at most 5 accesses", "at most 6 accesses (the fold's and a WRMSR)",
};

static bool
within(unsigned int value, unsigned int limit)
{
    return limit == NO_LIMIT || value <= limit;
}

static bool
cost_met(const struct cost *c, unsigned int op)
{
    return within(c->rdmsr, targets[op][0]) && within(c->wrmsr, targets[op][1])
           && within(c->rdpmc, targets[op][2])
           && within(c->rdmsr + c->wrmsr + c->rdpmc, targets[op][3]);
}

/*
 * Without global registers only the sample's own target applies: what
 * the fold costs, and one WRMSR more at most.
 */
static bool
sample_met(const struct cost *c, const struct cost *fold)
{
    return c->rdmsr <= fold->rdmsr && c->rdpmc <= fold->rdpmc
           && c->wrmsr <= fold->wrmsr + 1;
}

static void
print_lines(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(machines); i++) {
        const struct machine *m = &machines[i];
        struct cost fold = { 0 };

        for (unsigned int op = 0; op < NR_OPS; op++) {
            struct cost c = measure(m, op);

            printf("msr: %s %s rdmsr=%u wrmsr=%u rdpmc=%u\n", m->name,
                   op_names[op], c.rdmsr, c.wrmsr, c.rdpmc);

            if (op == OP_PMI_FOLD && !m->global) {
                printf("     - (no target without global registers)");
            } else if (op == OP_PMI_SAMPLE && !m->global) {
                printf("     %s (target: the fold's and a WRMSR at most)",
                       sample_met(&c, &fold) ? "MET" : "MISSED");
            } else {
                printf("     %s (target: %s)", cost_met(&c, op) ? "MET"
                                                               : "MISSED",
                       target_texts[op]);
            }

            if (op == OP_PMI_FOLD) {
                fold = c;
            }

            if (c.unmasks != 0) {
                printf("; LVT unmasks=%u (xAPIC MMIO; x2APIC: a WRMSR each)",
                       c.unmasks);
            }

            printf("\n");
        }
    }
}

/* ---- the tests ---------------------------------------------------------- */

static void
check_machine(const struct machine *m)
{
    for (unsigned int op = 0; op < NR_OPS; op++) {
        struct cost c = measure(m, op);
        const unsigned int *e = m->expected[op];

        if (c.rdmsr != e[0] || c.wrmsr != e[1] || c.rdpmc != e[2]) {
            fail_msg("%s %s: rdmsr=%u wrmsr=%u rdpmc=%u, expected "
                     "rdmsr=%u wrmsr=%u rdpmc=%u", m->name, op_names[op],
                     c.rdmsr, c.wrmsr, c.rdpmc, e[0], e[1], e[2]);
        }
    }
}

static void
test_intel_v2(void **state)
{
    (void)state;
    check_machine(&machines[0]);
}

static void
test_intel_v5(void **state)
{
    (void)state;
    check_machine(&machines[1]);
}

static void
test_amd_v2(void **state)
{
    (void)state;
    check_machine(&machines[2]);
}

static void
test_amd_legacy(void **state)
{
    (void)state;
    check_machine(&machines[3]);
}

int
main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intel_v2),
        cmocka_unit_test(test_intel_v5),
        cmocka_unit_test(test_amd_v2),
        cmocka_unit_test(test_amd_legacy),
    };

    if (argc == 2 && strcmp(argv[1], "--lines") == 0) {
        print_lines();
        return 0;
    }

    return cmocka_run_group_tests(tests, NULL, NULL);
}
