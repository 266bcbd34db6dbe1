/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of the AMD PMU driver (arch/x86/pmu_amd.c) against the
 * register-level model of tests/unit/msr_model.c: legacy counters, the
 * core performance counter extension and PerfMonV2, generic events per
 * family, the 12-bit event select, raw-code checks, mode bits, exact counts
 * across thousands of wraps through the overflow interrupt, spurious NMIs,
 * counter reuse, polled operation, and the machines without a working PMU.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/msr.h"
#include "arch/x86/pmu.h"
#include "arch/x86/pmu_evtab.h"
#include "fakes/fake_log.h"
#include "fakes/fake_perfmon_selftest.h"
#include "fakes/fake_smp.h"
#include "fakes/pmu_perfmon.h"
#include "kern/error.h"
#include "kern/perfmon.h"
#include "kern/perfmon_evtab.h"
#include "msr_model.h"
#include "pmu_test_common.h"

#define KERN    PERFMON_EF_KERN
#define USER    PERFMON_EF_USER
#define BOTH    (PERFMON_EF_KERN | PERFMON_EF_USER)

#define TOP     (1ULL << 47)

static const struct pmu_driver *drv = &pmu_amd_driver;
static struct pmu_caps caps;

/* The driver under test, booted on config. */
static struct perfmon_dev *
boot(const struct msr_model_config *config, bool use_nmi)
{
    return pmu_test_boot(drv, &caps, config, use_nmi);
}

static struct perfmon_dev *
boot_amd(unsigned int family, bool core_ext, bool v2)
{
    struct msr_model_config c = msr_model_amd(family, core_ext, v2);

    return boot(&c, true);
}

/*
 * Zen 3's lists (EPYC-Milan, family 19h model 01h): ordinary events count
 * on every core counter; a large-increment event (retired FLOPs, which
 * needs the Merge event on a counter pair) gets no lone counter: only
 * alloc's pairs (pmu_pair_test.c).  Without a table nothing is refused.
 */
static void
test_model_large_increment(void **state)
{
    const struct perfmon_evtab_model *m;
    uint64_t counters, prefer, flops;
    struct perfmon_dev *dev;

    (void)state;
    dev = boot_amd(0x19, true, true);
    pmu_evtab_setup(CPU_VENDOR_AMD, 0x19, 0x01, 1);
    m = perfmon_evtab_host();
    assert_string_equal(m->name, "amdzen3");
    flops = pmu_evtab_raw(m, perfmon_evtab_lookup(
        m, "fp_ret_sse_avx_ops.mac_flops"));
    assert_int_equal(dev->ops->counters(dev, flops, PERFMON_EF_KERN,
                                        &counters, &prefer), -ENOENT);
    assert_int_equal(dev->ops->counters(dev, pmu_evtab_raw(m,
                                        perfmon_evtab_lookup(m, "ex_ret_instr")),
                                        PERFMON_EF_KERN, &counters, &prefer),
                     0);
    assert_int_equal(counters, 0x3f);

    pmu_evtab_setup(CPU_VENDOR_UNKNOWN, 0, 0, 0);
    assert_int_equal(dev->ops->counters(dev, flops, PERFMON_EF_KERN,
                                        &counters, &prefer), 0);
    assert_int_equal(counters, 0x3f);
    pmu_test_assert_no_fault();
}

/* ---- probe -------------------------------------------------------------- */

static void
test_probe_legacy(void **state)
{
    struct perfmon_dev *dev;
    unsigned int hw;

    (void)state;
    dev = boot_amd(0x10, false, false);
    assert_true(caps.present);
    assert_string_equal(caps.driver, "amd");
    assert_int_equal(caps.family, 0x10);
    assert_int_equal(caps.version, 1);
    assert_false(caps.core_ext);
    assert_false(caps.global_ctrl);
    assert_int_equal(caps.nr_gp, 4);
    assert_int_equal(caps.gp_width, 48);
    /* Bit 47 is the overflow flag: the core sees 47 bits. */
    assert_int_equal(dev->width, 47);
    assert_int_equal(dev->nr_pmcs, 4);

    /* Legacy MSR block: four controls, then four counters. */
    assert_true(fake_perfmon_open(PERFMON_EV_BRANCH, KERN, &hw) >= 0);
    assert_true(fake_perfmon_open(PERFMON_EV_CYCLE, KERN, &hw) >= 0);
    assert_int_equal(hw, 1);
    assert_int_equal(pmu_test_peek(MSR_AMD_K7_PERFEVTSEL0 + 1),
                     0x76 | PMU_EVTSEL_OS | PMU_EVTSEL_EN | PMU_EVTSEL_INT);
    assert_true(pmu_test_peek(MSR_AMD_K7_PERFCTR0 + 1) - TOP
                <= msr_model_drifted());
    assert_false(msr_model_peek(MSR_AMD_F15H_PERF_CTL0, &(uint64_t){ 0 }));
    pmu_test_assert_no_fault();
}

static void
test_probe_core_ext(void **state)
{
    struct perfmon_dev *dev;
    unsigned int hw = 0;

    (void)state;
    dev = boot_amd(0x15, true, false);
    assert_true(caps.core_ext);
    assert_int_equal(caps.nr_gp, 6);
    assert_int_equal(dev->width, 47);

    for (unsigned int i = 0; i < 6; i++) {
        assert_true(fake_perfmon_open_raw(0x00c0, KERN, &hw) >= 0);
        assert_int_equal(hw, i);
        /* Extension MSRs: control and counter interleaved. */
        assert_int_equal(pmu_test_peek(MSR_AMD_F15H_PERF_CTL0 + 2 * i),
                         0xc0 | PMU_EVTSEL_OS | PMU_EVTSEL_EN | PMU_EVTSEL_INT);
        assert_true(pmu_test_peek(MSR_AMD_F15H_PERF_CTR0 + 2 * i) - TOP
                    <= msr_model_drifted());
    }

    assert_int_equal(fake_perfmon_open_raw(0x00c0, KERN, &hw), -EAGAIN);
    pmu_test_assert_no_fault();
}

static void
test_probe_perfmon_v2(void **state)
{
    struct perfmon_dev *dev;

    (void)state;
    dev = boot_amd(0x19, true, true);
    assert_int_equal(caps.version, 2);
    assert_true(caps.global_ctrl);
    assert_int_equal(caps.nr_gp, 6);
    /* Overflow status register: the full 48 bits. */
    assert_int_equal(dev->width, 48);
    assert_int_equal(pmu_test_peek(MSR_AMD_PERF_CNTR_GLOBAL_CTL), 0x3f);

    /* A PerfMonV2 CPU announcing 4 core counters. */
    {
        struct msr_model_config c = msr_model_amd(0x19, true, true);

        c.v2_nr = 4;
        dev = boot(&c, true);
        assert_int_equal(caps.nr_gp, 4);
        assert_int_equal(dev->nr_pmcs, 4);
        assert_int_equal(pmu_test_peek(MSR_AMD_PERF_CNTR_GLOBAL_CTL), 0xf);
    }

    pmu_test_assert_no_fault();
}

static void
check_declines(const struct msr_model_config *c, const char *reason)
{
    pmu_test_check_declines(drv, &caps, c, reason);
}

static void
test_decline_tcg(void **state)
{
    /* QEMU TCG's default CPUs: AuthenticAMD, family 0Fh, no counters. */
    struct msr_model_config c = msr_model_amd(0xf, false, false);

    (void)state;
    c.kind = MSR_MODEL_TCG;
    check_declines(&c, "counters do not hold values");
}

static void
test_decline_kvm_without_pmu(void **state)
{
    struct msr_model_config c = msr_model_amd(0x17, true, false);

    (void)state;
    c.kind = MSR_MODEL_KVM_NO_PMU;
    /* CPUID claims the extension, whose MSRs fault. */
    check_declines(&c, "PerfEvtSeln faults");
    assert_true(msr_model_nr_gp_safe() > 0);

    /* Without the extension the K7 MSRs read 0 and drop writes. */
    c = msr_model_amd(0x10, false, false);
    c.kind = MSR_MODEL_KVM_NO_PMU;
    check_declines(&c, "counters do not hold values");
}

/*
 * Counters that hold nothing, MSRs that fault, a CPU without counters or
 * not AMD's, and counters RDPMC cannot read: no device.
 */
static void
test_decline_broken_and_faulting(void **state)
{
    struct msr_model_config c = msr_model_amd(0x19, true, true);

    (void)state;
    c.kind = MSR_MODEL_BROKEN;
    check_declines(&c, "counters do not hold values");
    c.kind = MSR_MODEL_FAULTING;
    check_declines(&c, "PerfCntrGlobalCtl faults");
    c = msr_model_amd(5, false, false);
    check_declines(&c, "CPU family without counters");
    c = msr_model_intel(2);
    check_declines(&c, "not an AMD or Hygon CPU");
    c = msr_model_kvm_amd();
    c.no_rdpmc = true;
    check_declines(&c, "RDPMC does not read the counters");
}

/* ---- events ------------------------------------------------------------- */

struct event_case {
    unsigned int event_id;
    uint64_t raw_k8;
    uint64_t raw_zen;
    unsigned int model_event;
};

static const struct event_case amd_events[] = {
    { PERFMON_EV_CYCLE, 0x0076, 0x0076, MSR_MODEL_EV_CYCLES },
    { PERFMON_EV_INSTRUCTION, 0x00c0, 0x00c0, MSR_MODEL_EV_INSTRUCTIONS },
    { PERFMON_EV_CACHE_REF, 0x077d, 0xff60, MSR_MODEL_EV_LLC_REF },
    { PERFMON_EV_CACHE_MISS, 0x077e, 0x0964, MSR_MODEL_EV_LLC_MISS },
    { PERFMON_EV_BRANCH, 0x00c2, 0x00c2, MSR_MODEL_EV_BRANCH },
    { PERFMON_EV_BRANCH_MISS, 0x00c3, 0x00c3, MSR_MODEL_EV_BRANCH_MISS },
};

static void
check_events_on(unsigned int family, bool core_ext, bool v2)
{
    bool zen = family >= 0x17;

    for (unsigned int i = 0; i < sizeof(amd_events) / sizeof(amd_events[0]);
         i++) {
        const struct event_case *ec = &amd_events[i];
        struct perfmon_dev *dev = boot_amd(family, core_ext, v2);
        uint64_t expect = zen ? ec->raw_zen : ec->raw_k8;
        uint32_t ctl;
        uint64_t raw;
        unsigned int hw;
        int h;

        assert_int_equal(dev->ops->translate(dev, &raw, ec->event_id), 0);
        assert_int_equal(raw, expect);
        h = fake_perfmon_open(ec->event_id, KERN, &hw);
        assert_true(h >= 0);
        ctl = core_ext ? MSR_AMD_F15H_PERF_CTL0 + 2 * hw
                       : MSR_AMD_K7_PERFEVTSEL0 + hw;
        assert_int_equal(pmu_test_peek(ctl),
                         expect | PMU_EVTSEL_OS | PMU_EVTSEL_EN
                         | PMU_EVTSEL_INT);

        for (unsigned int e = 0; e < MSR_MODEL_NR_EVENTS; e++) {
            msr_model_inject(e, 100 + e, false);
        }

        pmu_test_assert_count(fake_perfmon_value(h), 100 + ec->model_event);
        fake_perfmon_close(h);

        /* No reference-cycle event before Zen 4: refused at translate. */
        assert_int_equal(dev->ops->translate(dev, &raw, PERFMON_EV_REF_CYCLE),
                         -ENOENT);
        pmu_test_assert_no_fault();
    }
}

static void
test_generic_events_k10(void **state)
{
    (void)state;
    check_events_on(0x10, false, false);
}

static void
test_generic_events_f15h(void **state)
{
    (void)state;
    check_events_on(0x15, true, false);
}

static void
test_generic_events_zen(void **state)
{
    (void)state;
    check_events_on(0x17, true, false);
    check_events_on(0x19, true, true);
}

/*
 * Zen 4 and later count reference cycles (PMCx120: cycles not halted at
 * the P0 frequency, like MPERF; Linux's Zen 4 event map): family 19h
 * models 10h-1Fh and 60h-AFh, and family 1Ah on.  Zen 3 (family 19h model
 * 21h) has none.
 */
static void
test_ref_cycles_zen4(void **state)
{
    static const struct {
        unsigned int family, model;
        bool zen4;
    } cpus[] = {
        { 0x19, 0x21, false }, { 0x19, 0x11, true }, { 0x19, 0x61, true },
        { 0x19, 0xb0, false }, { 0x1a, 0x02, true },
        /* Each range at its ends, and the models just outside. */
        { 0x19, 0x0f, false }, { 0x19, 0x10, true }, { 0x19, 0x1f, true },
        { 0x19, 0x20, false }, { 0x19, 0x5f, false }, { 0x19, 0x60, true },
        { 0x19, 0xaf, true }, { 0x18, 0x61, false }, { 0x1a, 0x00, true },
    };

    (void)state;

    for (unsigned int i = 0; i < sizeof(cpus) / sizeof(cpus[0]); i++) {
        struct msr_model_config c = msr_model_amd(cpus[i].family, true, true);
        struct perfmon_dev *dev;
        uint64_t raw = 0;
        int h;

        c.model = cpus[i].model;
        dev = boot(&c, true);

        if (!cpus[i].zen4) {
            assert_int_equal(dev->ops->translate(dev, &raw,
                                                 PERFMON_EV_REF_CYCLE),
                             -ENOENT);
            continue;
        }

        assert_int_equal(dev->ops->translate(dev, &raw, PERFMON_EV_REF_CYCLE),
                         0);
        assert_int_equal(raw, PMU_AMD_RAW(0x120, 0));
        h = fake_perfmon_open(PERFMON_EV_REF_CYCLE, USER, NULL);
        assert_true(h >= 0);
        msr_model_inject(MSR_MODEL_EV_REF_CYCLES, 4321, true);
        msr_model_inject(MSR_MODEL_EV_CYCLES, 999, true);
        assert_int_equal(fake_perfmon_value(h), 4321);
        pmu_test_assert_no_fault();
    }
}

/*
 * Hygon's Dhyana (vendor HygonGenuine, family 18h) is a Zen: the AMD
 * driver with the Zen event codes (Linux runs amd_pmu_init for
 * X86_VENDOR_HYGON).  The kernel's CPU identification already sends it
 * to this driver.
 */
static void
test_hygon(void **state)
{
    struct msr_model_config c = msr_model_amd(0x18, true, false);
    struct perfmon_dev *dev;
    uint64_t raw;
    int h;

    (void)state;
    c.hygon = true;
    dev = boot(&c, true);
    assert_true(caps.present);
    assert_string_equal(caps.driver, "amd");
    assert_int_equal(caps.family, 0x18);
    assert_int_equal(caps.nr_gp, 6);
    assert_int_equal(dev->ops->translate(dev, &raw, PERFMON_EV_CACHE_REF), 0);
    assert_int_equal(raw, 0xff60);
    h = fake_perfmon_open(PERFMON_EV_CACHE_MISS, USER, NULL);
    msr_model_inject(MSR_MODEL_EV_LLC_MISS, 55, true);
    assert_int_equal(fake_perfmon_value(h), 55);
    pmu_test_assert_no_fault();
}

static void
test_raw_events(void **state)
{
    static const uint64_t bad[] = {
        PMU_EVTSEL_USR, PMU_EVTSEL_OS, PMU_EVTSEL_PC, PMU_EVTSEL_INT,
        PMU_EVTSEL_ANY, PMU_EVTSEL_EN, 1ULL << 36, 1ULL << 39,
        PMU_EVTSEL_AMD_GUEST_ONLY, PMU_EVTSEL_AMD_HOST_ONLY, 1ULL << 63,
    };
    struct perfmon_dev *dev;
    unsigned int hw;
    uint64_t raw;
    int h;

    (void)state;
    dev = boot_amd(0x17, true, false);

    /* A 12-bit event select: bits 11:8 go to PerfEvtSel[35:32]. */
    raw = PMU_AMD_RAW(0x1c0, 0x01);
    assert_int_equal(raw, 0x1000001c0ULL | 0x100);
    h = fake_perfmon_open_raw(raw, BOTH, &hw);
    assert_true(h >= 0);
    assert_int_equal(pmu_test_peek(MSR_AMD_F15H_PERF_CTL0 + 2 * hw),
                     raw | PMU_EVTSEL_USR | PMU_EVTSEL_OS | PMU_EVTSEL_EN
                     | PMU_EVTSEL_INT);

    /* Edge, invert, counter mask: as given. */
    raw = 0x00c2 | PMU_EVTSEL_EDGE | PMU_EVTSEL_INV | (2ULL << 24);
    assert_true(fake_perfmon_open_raw(raw, KERN, &hw) >= 0);
    assert_int_equal(pmu_test_peek(MSR_AMD_F15H_PERF_CTL0 + 2 * hw),
                     raw | PMU_EVTSEL_OS | PMU_EVTSEL_EN | PMU_EVTSEL_INT);

    pmu_test_check_raw_refused(dev, 0x00c2, bad,
                               sizeof(bad) / sizeof(bad[0]));
    pmu_test_assert_no_fault();
}

static void
test_mode_bits(void **state)
{
    int hk, hu, hb;

    (void)state;
    boot_amd(0x19, true, true);
    hk = fake_perfmon_open(PERFMON_EV_INSTRUCTION, KERN, NULL);
    hu = fake_perfmon_open(PERFMON_EV_INSTRUCTION, USER, NULL);
    hb = fake_perfmon_open(PERFMON_EV_INSTRUCTION, BOTH, NULL);
    msr_model_inject(MSR_MODEL_EV_INSTRUCTIONS, 300, false);
    msr_model_inject(MSR_MODEL_EV_INSTRUCTIONS, 20, true);
    pmu_test_assert_count(fake_perfmon_value(hk), 300);
    assert_int_equal(fake_perfmon_value(hu), 20);
    pmu_test_assert_count(fake_perfmon_value(hb), 320);
    pmu_test_assert_no_fault();
}

static void
test_free_and_reuse(void **state)
{
    int h[4], h2;
    unsigned int hw[4], hw2;

    (void)state;
    boot_amd(0x10, false, false);

    for (unsigned int i = 0; i < 4; i++) {
        h[i] = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, &hw[i]);
        assert_int_equal(hw[i], i);
    }

    assert_int_equal(fake_perfmon_open(PERFMON_EV_CYCLE, KERN, &hw2), -EAGAIN);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 33, false);
    pmu_test_assert_count(fake_perfmon_close(h[1]), 33);
    assert_int_equal(pmu_test_peek(MSR_AMD_K7_PERFEVTSEL0 + 1), 0);
    h2 = fake_perfmon_open(PERFMON_EV_CYCLE, KERN, &hw2);
    assert_int_equal(hw2, 1);
    msr_model_inject(MSR_MODEL_EV_CYCLES, 7, false);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 1, false);
    pmu_test_assert_count(fake_perfmon_value(h2), 7);
    pmu_test_assert_count(fake_perfmon_value(h[0]), 34);
    pmu_test_assert_no_fault();
}

/* What family 15h's counters operation gives raw (0: -ENOENT). */
static void
check_f15h_counters(uint64_t raw, uint64_t expected)
{
    struct perfmon_dev *dev = drv->dev;
    uint64_t counters = 0, prefer = 0;
    int error = dev->ops->counters(dev, raw, KERN, &counters, &prefer);

    if (expected == 0) {
        assert_int_equal(error, -ENOENT);
        return;
    }

    if (error != 0 || counters != expected) {
        fail_msg("raw %#llx: counters %#llx (error %d), expected %#llx",
                 (unsigned long long)raw, (unsigned long long)counters,
                 error, (unsigned long long)expected);
    }
}

/*
 * Family 15h counts some events only on some counters (BKDG for family
 * 15h; Linux's amd_get_event_constraints_f15h): cycles and the L2/cache
 * events on counters 0-2, FP events on 3-5 (some on 3 alone).  An event
 * put on a counter that cannot count it counts nothing, silently: alloc
 * must honour the constraints, and say -EAGAIN when the counters that can
 * count it are taken even if others are free.
 */
static void
test_f15h_constraints(void **state)
{
    int hc[3], hf, hf3;
    unsigned int hw;

    (void)state;
    boot_amd(0x15, true, false);

    for (unsigned int i = 0; i < 3; i++) {
        hc[i] = fake_perfmon_open(PERFMON_EV_CYCLE, KERN, &hw);
        assert_true(hc[i] >= 0);
        assert_int_equal(hw, i);
    }

    assert_int_equal(fake_perfmon_open(PERFMON_EV_CYCLE, KERN, &hw), -EAGAIN);
    assert_int_equal(fake_perfmon_open(PERFMON_EV_CACHE_REF, KERN, &hw),
                     -EAGAIN);

    /* Retired SSE/AVX operations: counter 3 alone. */
    hf3 = fake_perfmon_open_raw(PMU_AMD_RAW(0x003, 0), USER, &hw);
    assert_true(hf3 >= 0);
    assert_int_equal(hw, 3);
    assert_int_equal(fake_perfmon_open_raw(PMU_AMD_RAW(0x003, 0x01), USER,
                                           &hw), -EAGAIN);

    /* Another FP event: counters 3-5. */
    hf = fake_perfmon_open_raw(PMU_AMD_RAW(0x001, 0), KERN, &hw);
    assert_true(hf >= 0);
    assert_int_equal(hw, 4);

    /* Instructions anywhere: the last one. */
    assert_true(fake_perfmon_open(PERFMON_EV_INSTRUCTION, KERN, &hw) >= 0);
    assert_int_equal(hw, 5);

    msr_model_inject(MSR_MODEL_EV_CYCLES, 1000, false);
    msr_model_inject(MSR_MODEL_EV_FP_OPS, 77, true);

    for (unsigned int i = 0; i < 3; i++) {
        pmu_test_assert_count(fake_perfmon_value(hc[i]), 1000);
    }

    assert_int_equal(fake_perfmon_value(hf3), 77);

    /*
     * Event selects with bits 11:8 set have rows of their own, not their
     * low byte's unit's (0x1c0 is not 0x0c0, 0x187 not 0x087); the
     * single-unit-mask rule of event 0x31 takes no unit mask at all.
     */
    check_f15h_counters(PMU_AMD_RAW(0x1c0, 0), 0x38);
    check_f15h_counters(PMU_AMD_RAW(0x187, 0), 0x01);
    check_f15h_counters(PMU_AMD_RAW(0x188, 0x01), 0x01);
    check_f15h_counters(PMU_AMD_RAW(0x1d6, 0), 0x3f);
    check_f15h_counters(PMU_AMD_RAW(0x0c0, 0), 0x3f);
    check_f15h_counters(PMU_AMD_RAW(0x087, 0), 0x07);
    check_f15h_counters(PMU_AMD_RAW(0x031, 0), 0x07);
    check_f15h_counters(PMU_AMD_RAW(0x031, 0x04), 0x07);
    check_f15h_counters(PMU_AMD_RAW(0x031, 0x05), 0);

    /* Northbridge events are not the core counters' on family 15h. */
    assert_int_equal(fake_perfmon_open_raw(PMU_AMD_RAW(0x0e0, 0x07), KERN,
                                           &hw), -ENOENT);

    /* Other families: cycles on any counter. */
    boot_amd(0x17, true, false);

    for (unsigned int i = 0; i < 6; i++) {
        assert_true(fake_perfmon_open(PERFMON_EV_CYCLE, KERN, &hw) >= 0);
        assert_int_equal(hw, i);
    }

    pmu_test_assert_no_fault();
}

/* ---- overflow ----------------------------------------------------------- */

static void
test_wraps_legacy(void **state)
{
    (void)state;
    /* 47 visible bits, chunks up to 2^46. */
    pmu_test_check_wraps(boot_amd(0x10, false, false), 8000, 1ULL << 46, 3000);
}

static void
test_wraps_core_ext(void **state)
{
    (void)state;
    pmu_test_check_wraps(boot_amd(0x17, true, false), 4000, 1ULL << 46, 1500);
}

static void
test_wraps_perfmon_v2(void **state)
{
    (void)state;
    pmu_test_check_wraps(boot_amd(0x19, true, true), 8000, 1ULL << 47, 3000);
}

static void
test_rearm_loses_nothing_perfmon_v2(void **state)
{
    (void)state;
    pmu_test_check_rearm(boot_amd(0x19, true, true),
                         MSR_AMD_PERF_CNTR_GLOBAL_CTL);
}

/*
 * The -cpu host guest of KVM with PerfMonV2: six counters and the global
 * registers; wraps, re-arm and the self-test as on the machine; with the
 * counters taken by the host, the self-test fails their checks instead of
 * passing them.
 */
static void
test_kvm_guest(void **state)
{
    struct msr_model_config c = msr_model_kvm_amd();
    struct perfmon_dev *dev;

    (void)state;
    dev = boot(&c, true);
    assert_int_equal(caps.nr_gp, 6);
    assert_int_equal(caps.version, 2);
    pmu_test_check_wraps(dev, 4000, 1ULL << 47, 1500);
    pmu_test_check_rearm(boot(&c, true), MSR_AMD_PERF_CNTR_GLOBAL_CTL);
    assert_int_equal(pmu_test_selftest(boot(&c, true), false), 0);
    dev = boot(&c, true);
    msr_model_set_host_owned(0x3f);
    assert_true(pmu_test_selftest(dev, false) >= 6);
    pmu_test_assert_selftest_line("FAIL  counter 0: instructions per "
                                  "spin iteration", "0.000");
    pmu_test_assert_no_fault();
}

/*
 * A counter stopped after its overflow and started for a new user before
 * the NMI: with PerfMonV2 the status bit the previous user left must not
 * reach the new one (+2^48); without it the start re-arms bit 47.
 */
static void
test_restart_drops_overflow(void **state)
{
    (void)state;
    pmu_test_check_restart_drops_overflow(boot_amd(0x10, false, false));
    pmu_test_check_restart_drops_overflow(boot_amd(0x17, true, false));
    pmu_test_check_restart_drops_overflow(boot_amd(0x19, true, true));
}

/*
 * A counter that wraps while the handler ends: its PMI must be taken (AMD
 * leaves the LVT unmasked, but the driver must not depend on it).
 */
static void
test_unmask_window(void **state)
{
    (void)state;
    pmu_test_check_unmask_window(boot_amd(0x10, false, false));
    pmu_test_check_unmask_window(boot_amd(0x17, true, false));
    pmu_test_check_unmask_window(boot_amd(0x19, true, true));
}

/*
 * AMD signals an overflow's NMI again after the handler took it: the
 * duplicate finds nothing (bit 47 set again, or no status bit), is not
 * claimed, and never counts a wrap twice.
 */
static void
check_late_nmis(struct perfmon_dev *dev)
{
    int h = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, NULL);

    assert_true(h >= 0);
    msr_model_set_late_nmis(true);
    pmu_test_rng_state = 31337;
    /* About one wrap in eight rounds, each followed by a late NMI. */
    assert_true(pmu_test_check_branches(dev, h, 3000, 1ULL << 46) > 200);
    assert_true(fake_perfmon_nr_ovf_folds() > 200);
}

static void
test_late_nmis(void **state)
{
    (void)state;
    check_late_nmis(boot_amd(0x10, false, false));
    check_late_nmis(boot_amd(0x19, true, true));
}

/*
 * Skid: the PMI comes some events after the wrap, so a read may see the
 * wrap before the interrupt reports it: still counted once.
 */
static void
check_skid(struct perfmon_dev *dev)
{
    int h = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, NULL);

    assert_true(h >= 0);
    msr_model_set_skid(1ULL << 40);
    pmu_test_rng_state = 2718;
    assert_int_equal(pmu_test_check_branches(dev, h, 3000, 1ULL << 45), 0);
    assert_true(fake_perfmon_nr_ovf_folds() > 100);
}

static void
test_skid(void **state)
{
    (void)state;
    check_skid(boot_amd(0x10, false, false));
    check_skid(boot_amd(0x19, true, true));
}

static void
test_spurious_nmi(void **state)
{
    struct perfmon_dev *dev;
    int h;

    (void)state;
    /* Legacy: every active counter still has bit 47 set. */
    dev = boot_amd(0x15, true, false);
    assert_false(perfmon_overflow_intr(dev, NULL));
    h = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, NULL);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 5000, false);
    assert_false(perfmon_overflow_intr(dev, NULL));
    pmu_test_assert_count(fake_perfmon_value(h), 5000);
    assert_int_equal(pmu_nr_pmis(), 0);

    /* A stopped counter whose bit 47 is clear is none of our business. */
    fake_perfmon_close(h);
    msr_write_safe(MSR_AMD_F15H_PERF_CTR0, 5);
    assert_false(perfmon_overflow_intr(dev, NULL));

    /* PerfMonV2: bits of counters that do not exist are ignored. */
    {
        struct msr_model_config c = msr_model_amd(0x19, true, true);

        c.v2_nr = 4;
        dev = boot(&c, true);
        assert_false(perfmon_overflow_intr(dev, NULL));
        h = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, NULL);
        assert_true(h >= 0);
        /* The model's StatusSet accepts only existing counters: set the
           foreign bits behind its back. */
        msr_model_set_status((1ULL << 5) | (1ULL << 58));
        assert_false(perfmon_overflow_intr(dev, NULL));
        assert_int_equal(pmu_test_peek(MSR_AMD_PERF_CNTR_GLOBAL_STATUS),
                         (1ULL << 5) | (1ULL << 58));
        msr_model_set_status(1ULL << 0);
        assert_true(perfmon_overflow_intr(dev, NULL));
        assert_int_equal(fake_perfmon_last_mask(), 1);
        assert_int_equal(pmu_test_peek(MSR_AMD_PERF_CNTR_GLOBAL_STATUS),
                         (1ULL << 5) | (1ULL << 58));
    }

    pmu_test_assert_no_fault();
}

static void
test_write_and_wrap(void **state)
{
    struct perfmon_dev *dev;
    unsigned int hw;
    int h;

    (void)state;
    dev = boot_amd(0x10, false, false);
    h = fake_perfmon_open(PERFMON_EV_INSTRUCTION, KERN, &hw);
    dev->ops->write(dev, hw, TOP - 100);
    /* The flag bit stays set: the counter is still armed. */
    assert_int_equal(pmu_test_peek(MSR_AMD_K7_PERFCTR0 + hw),
                     TOP | (TOP - 100));
    expect_assert_failure(dev->ops->write(dev, hw, TOP));
    expect_assert_failure(dev->ops->write(dev, 9, 0));
    msr_model_inject(MSR_MODEL_EV_INSTRUCTIONS, 150, false);
    assert_int_equal(msr_model_nmis_pending(), 1);
    pmu_test_deliver_nmis(dev);
    assert_int_equal(fake_perfmon_last_mask(), 1ULL << hw);
    /* Re-armed without losing the 50 counted past the wrap (the re-arm
       reads, then writes: only the driver's own drift in between is
       lost, as on hardware). */
    assert_true(pmu_test_peek(MSR_AMD_K7_PERFCTR0 + hw) >= (TOP | 50));
    assert_true(pmu_test_peek(MSR_AMD_K7_PERFCTR0 + hw)
                <= (TOP | 50) + msr_model_drifted());
    assert_true((fake_perfmon_value(h) & (TOP - 1))
                <= 50 + msr_model_drifted());
    pmu_test_assert_no_fault();
}

static void
test_polled(void **state)
{
    struct msr_model_config c = msr_model_amd(0x17, true, false);
    struct perfmon_dev *dev;
    unsigned int hw;
    int h;

    (void)state;
    dev = boot(&c, false);
    assert_false(caps.overflow_nmi);
    assert_false(dev->overflow_intr);
    assert_int_equal(dev->width, 48);
    h = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, &hw);
    assert_int_equal(pmu_test_peek(MSR_AMD_F15H_PERF_CTL0 + 2 * hw),
                     0xc2 | PMU_EVTSEL_OS | PMU_EVTSEL_EN);
    assert_true(pmu_test_peek(MSR_AMD_F15H_PERF_CTR0 + 2 * hw)
                <= msr_model_drifted());
    pmu_test_check_polled(h, 99);

    c.apic = false;
    boot(&c, true);
    assert_false(caps.overflow_nmi);
    pmu_test_assert_no_fault();
}

/*
 * PerfMonV2: a CPU that comes up with overflow bits set (a previous
 * kernel's, the firmware's) has ours cleared at init, each only if set,
 * the others left; our counters stopped and zeroed, their global enables
 * on.
 */
static void
test_cpu_init_clears_stale_state(void **state)
{
    struct msr_model_config c = msr_model_amd(0x19, true, true);

    (void)state;
    c.v2_nr = 4;
    msr_model_init(&c);
    assert_int_equal(pmu_test_probe_cpus(drv, &caps, 1, true), 0);
    msr_write_safe(MSR_AMD_F15H_PERF_CTL0 + 2, 0x00c2 | PMU_EVTSEL_EN);
    msr_write_safe(MSR_AMD_F15H_PERF_CTR0 + 2, 77);
    msr_model_set_status((1ULL << 0) | (1ULL << 3) | (1ULL << 5)
                         | (1ULL << 58));
    fake_cpu_set_intr(false);
    drv->cpu_init();
    fake_cpu_set_intr(true);
    assert_int_equal(pmu_test_peek(MSR_AMD_F15H_PERF_CTL0 + 2), 0);
    assert_int_equal(pmu_test_peek(MSR_AMD_F15H_PERF_CTR0 + 2), 0);
    assert_int_equal(pmu_test_peek(MSR_AMD_PERF_CNTR_GLOBAL_STATUS),
                     (1ULL << 5) | (1ULL << 58));
    assert_int_equal(pmu_test_peek(MSR_AMD_PERF_CNTR_GLOBAL_CTL), 0xf);
    pmu_test_assert_no_fault();
}

/* ---- what the firmware left, and the other CPUs ------------------------ */

/* A counter the firmware left counting is left alone on every CPU. */
static void
test_firmware_counter_left_alone(void **state)
{
    struct msr_model_config c = msr_model_amd(0x19, true, true);
    uint64_t fw, drifted;
    struct perfmon_dev *dev;
    unsigned int hw;

    (void)state;
    c.fw_running = 1ULL << 0;
    msr_model_init(&c);
    dev = pmu_test_boot_cpus(drv, &caps, 2, true);
    assert_int_equal(caps.nr_gp, 5);
    assert_int_equal(dev->nr_pmcs, 5);
    assert_int_equal(caps.fw_busy, 1);
    assert_non_null(strstr(fake_log_last(), "firmware left counters 0"));

    for (unsigned int cpu = 0; cpu < 2; cpu++) {
        fake_cpu_set_id(cpu);
        assert_true(pmu_test_peek(MSR_AMD_F15H_PERF_CTL0) & PMU_EVTSEL_EN);
        assert_true(pmu_test_peek(MSR_AMD_F15H_PERF_CTR0)
                    >= MSR_MODEL_FW_VALUE);
        assert_int_equal(pmu_test_peek(MSR_AMD_PERF_CNTR_GLOBAL_CTL), 0x3f);
    }

    fake_cpu_set_id(0);

    for (unsigned int i = 1; i < 6; i++) {
        assert_true(fake_perfmon_open(PERFMON_EV_BRANCH, KERN, &hw) >= 0);
        assert_int_equal(hw, i);
    }

    assert_int_equal(fake_perfmon_open(PERFMON_EV_BRANCH, KERN, &hw), -EAGAIN);
    /*
     * The PMI path freezes ours only: the firmware's counts every cycle
     * the handler runs (the model's drift).
     */
    dev->ops->write(dev, 1, (1ULL << 48) - 10);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 100, false);
    fw = pmu_test_peek(MSR_AMD_F15H_PERF_CTR0);
    drifted = msr_model_drifted();
    pmu_test_deliver_nmis(dev);
    assert_int_equal(pmu_test_peek(MSR_AMD_PERF_CNTR_GLOBAL_CTL), 0x3f);
    assert_true(msr_model_drifted() > drifted);
    assert_int_equal(pmu_test_peek(MSR_AMD_F15H_PERF_CTR0) - fw,
                     msr_model_drifted() - drifted);
    pmu_test_assert_no_fault();

    /* Every counter the firmware's: nothing to check, nothing to use. */
    c.fw_running = 0x3f;
    msr_model_init(&c);
    assert_int_equal(pmu_test_probe_cpus(drv, &caps, 1, true), -ENODEV);
    assert_string_equal(caps.reason, "the firmware uses every counter");
    pmu_test_assert_no_fault();
}

/*
 * An application processor announcing fewer PerfMonV2 counters: probed
 * with the fault-safe accessors, reported, the common subset used.
 */
static void
test_ap_with_fewer_counters(void **state)
{
    struct msr_model_config big = msr_model_amd(0x19, true, true);
    struct msr_model_config small = msr_model_amd(0x19, true, true);
    struct perfmon_dev *dev;
    unsigned int hw;

    (void)state;
    small.v2_nr = 4;
    msr_model_init(&big);
    msr_model_set_cpu(1, &small);
    dev = pmu_test_boot_cpus(drv, &caps, 2, true);
    assert_int_equal(caps.nr_gp, 4);
    assert_int_equal(dev->nr_pmcs, 4);
    assert_non_null(strstr(fake_log_last(), "cpu1 has counters 0-3"));
    fake_cpu_set_id(1);
    assert_int_equal(pmu_test_peek(MSR_AMD_PERF_CNTR_GLOBAL_CTL), 0xf);

    for (unsigned int i = 0; i < 4; i++) {
        assert_true(fake_perfmon_open(PERFMON_EV_BRANCH, KERN, &hw) >= 0);
    }

    assert_int_equal(fake_perfmon_open(PERFMON_EV_BRANCH, KERN, &hw), -EAGAIN);
    fake_cpu_set_id(0);
    pmu_test_assert_no_fault();
}

/* ---- the self-test ----------------------------------------------------- */

/*
 * `perfmon selftest`'s hardware checks pass on every AMD PMU generation:
 * family 15h's constraints keep cycles on counters 0-2, Zen 4 counts
 * reference cycles on every counter.
 */
static void
test_selftest_passes(void **state)
{
    static const struct {
        unsigned int family, model;
        bool core_ext, v2;
    } cpus[] = {
        { 0x10, 1, false, false }, { 0x15, 1, true, false },
        { 0x17, 1, true, false }, { 0x19, 0x21, true, true },
        { 0x19, 0x61, true, true },
    };

    (void)state;

    for (unsigned int i = 0; i < sizeof(cpus) / sizeof(cpus[0]); i++) {
        struct msr_model_config c = msr_model_amd(cpus[i].family,
                                                  cpus[i].core_ext,
                                                  cpus[i].v2);
        struct perfmon_dev *dev;
        unsigned int fails;

        c.model = cpus[i].model;
        dev = boot(&c, true);
        fails = pmu_test_selftest(dev, false);

        if (fails != 0) {
            pmu_test_selftest(dev, true);
        }

        assert_int_equal(fails, 0);

        if (cpus[i].family == 0x15) {
            assert_non_null(fake_perfmon_selftest_find(
                "PASS  counter 2: cycles per TSC cycle"));
            assert_null(fake_perfmon_selftest_find(
                "counter 3: cycles per TSC cycle"));
        }

        if (cpus[i].model == 0x61) {
            pmu_test_assert_selftest_line(
                "PASS  counter 5: ref-cycles per TSC cycle", "1.000");
        }
    }

    pmu_test_selftest(drv->dev, true);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_legacy),
        cmocka_unit_test(test_model_large_increment),
        cmocka_unit_test(test_probe_core_ext),
        cmocka_unit_test(test_probe_perfmon_v2),
        cmocka_unit_test(test_decline_tcg),
        cmocka_unit_test(test_decline_kvm_without_pmu),
        cmocka_unit_test(test_decline_broken_and_faulting),
        cmocka_unit_test(test_generic_events_k10),
        cmocka_unit_test(test_generic_events_f15h),
        cmocka_unit_test(test_generic_events_zen),
        cmocka_unit_test(test_ref_cycles_zen4),
        cmocka_unit_test(test_hygon),
        cmocka_unit_test(test_raw_events),
        cmocka_unit_test(test_mode_bits),
        cmocka_unit_test(test_free_and_reuse),
        cmocka_unit_test(test_f15h_constraints),
        cmocka_unit_test(test_wraps_legacy),
        cmocka_unit_test(test_wraps_core_ext),
        cmocka_unit_test(test_wraps_perfmon_v2),
        cmocka_unit_test(test_rearm_loses_nothing_perfmon_v2),
        cmocka_unit_test(test_restart_drops_overflow),
        cmocka_unit_test(test_unmask_window),
        cmocka_unit_test(test_kvm_guest),
        cmocka_unit_test(test_late_nmis),
        cmocka_unit_test(test_skid),
        cmocka_unit_test(test_spurious_nmi),
        cmocka_unit_test(test_write_and_wrap),
        cmocka_unit_test(test_polled),
        cmocka_unit_test(test_cpu_init_clears_stale_state),
        cmocka_unit_test(test_firmware_counter_left_alone),
        cmocka_unit_test(test_ap_with_fewer_counters),
        cmocka_unit_test(test_selftest_passes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
