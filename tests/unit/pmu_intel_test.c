/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of the Intel PMU driver (arch/x86/pmu_intel.c) against the
 * register-level model of tests/unit/msr_model.c: probing versions 1 to 5
 * and the machines without a working PMU, generic and raw events on the
 * right counters with the right encodings, mode bits, exact counts across
 * thousands of wraps through the overflow interrupt, acknowledgement and
 * LVT unmasking, spurious NMIs, counter reuse and polled operation.
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
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "msr_model.h"
#include "pmu_test_common.h"

#define KERN    PERFMON_EF_KERN
#define USER    PERFMON_EF_USER
#define BOTH    (PERFMON_EF_KERN | PERFMON_EF_USER)

static const struct pmu_driver *drv = &pmu_intel_driver;
static struct pmu_caps caps;

/* The driver under test, booted on config. */
static struct perfmon_dev *
boot(const struct msr_model_config *config, bool use_nmi)
{
    return pmu_test_boot(drv, &caps, config, use_nmi);
}

static struct perfmon_dev *
boot_version(unsigned int version)
{
    struct msr_model_config c = msr_model_intel(version);

    return boot(&c, true);
}

/* ---- probe -------------------------------------------------------------- */

static void
test_probe_v1(void **state)
{
    struct perfmon_dev *dev;

    (void)state;
    dev = boot_version(1);
    assert_true(caps.present);
    assert_string_equal(caps.driver, "intel");
    assert_int_equal(caps.version, 1);
    assert_int_equal(caps.nr_gp, 2);
    assert_int_equal(caps.gp_width, 40);
    assert_int_equal(caps.nr_fixed, 0);
    assert_false(caps.global_ctrl);
    assert_false(caps.full_width_write);
    assert_true(caps.overflow_nmi);
    /* No status register: the core sees the 31 bits below the armed ones. */
    assert_int_equal(dev->width, 31);
    assert_int_equal(dev->nr_pmcs, 2);
    assert_true(dev->overflow_intr);
    pmu_test_assert_no_fault();
}

static void
test_probe_v2_to_v5(void **state)
{
    static const struct {
        unsigned int version, nr_gp, nr_fixed;
        bool fw;
    } expect[] = {
        { 2, 4, 3, false },
        { 3, 4, 3, false },
        { 4, 8, 3, true },
        { 5, 8, 3, true },    /* fixed counter 3 (slots) is not used */
    };

    (void)state;

    for (unsigned int i = 0; i < 4; i++) {
        struct perfmon_dev *dev = boot_version(expect[i].version);

        assert_int_equal(caps.version, expect[i].version);
        assert_int_equal(caps.nr_gp, expect[i].nr_gp);
        assert_int_equal(caps.nr_fixed, expect[i].nr_fixed);
        assert_int_equal(caps.gp_width, 48);
        assert_int_equal(caps.fixed_width, 48);
        assert_true(caps.global_ctrl);
        assert_int_equal(caps.full_width_write, expect[i].fw);
        assert_int_equal(caps.arch_events, 0x7f);
        assert_int_equal(dev->width, 48);
        assert_int_equal(dev->nr_pmcs, expect[i].nr_gp + expect[i].nr_fixed);

        /* cpu_init opened the gate for exactly our counters. */
        assert_int_equal(pmu_test_peek(MSR_IA32_PERF_GLOBAL_CTRL),
                         ((1ULL << expect[i].nr_gp) - 1) | (7ULL << 32));
        pmu_test_assert_no_fault();
    }
}

static void
test_probe_v5_fixed_bitmap(void **state)
{
    struct msr_model_config c = msr_model_intel(5);
    struct perfmon_dev *dev;
    unsigned int hw;
    int h;

    (void)state;
    /* Fixed counters 0 and 2 only, announced through ECX alone. */
    c.nr_fixed = 0;
    c.fixed_bitmap = 0x5;
    dev = boot(&c, true);
    assert_int_equal(caps.nr_fixed, 2);
    assert_int_equal(dev->nr_pmcs, 10);

    h = fake_perfmon_open(PERFMON_EV_INSTRUCTION, KERN, &hw);
    assert_true(h >= 0);
    assert_int_equal(hw, 32);
    h = fake_perfmon_open(PERFMON_EV_REF_CYCLE, KERN, &hw);
    assert_true(h >= 0);
    assert_int_equal(hw, 34);
    /* No fixed counter 1: cycles on a general counter. */
    h = fake_perfmon_open(PERFMON_EV_CYCLE, KERN, &hw);
    assert_true(h >= 0);
    assert_int_equal(hw, 0);
    assert_int_equal(pmu_test_peek(MSR_IA32_PERFEVTSEL0),
                     0x3c | PMU_EVTSEL_OS | PMU_EVTSEL_EN | PMU_EVTSEL_INT);
    msr_model_inject(MSR_MODEL_EV_CYCLES, 1000, false);
    pmu_test_assert_count(fake_perfmon_value(h), 1000);
    pmu_test_assert_no_fault();
}

/*
 * Early version 2 parts report no fixed counters though they have three
 * (Linux's intel_pmu_init: "v2 perfmon does not report fixed-purpose
 * events, so assume at least 3 events, when not running in a
 * hypervisor", for versions 2 to 4).  On bare metal the driver assumes them and checks them
 * with the fault-safe accessors, at the general counters' width: used when
 * they hold values, dropped (not the whole PMU) when they fault.  Under a
 * hypervisor CPUID is believed.
 */
static void
test_v2_unreported_fixed_counters(void **state)
{
    struct msr_model_config c = msr_model_intel(2);
    unsigned int hw;
    int h;

    (void)state;
    c.nr_fixed = 0;
    c.fixed_width = 0;
    c.hidden_fixed = 3;
    boot(&c, true);
    assert_int_equal(caps.nr_fixed, 3);
    assert_int_equal(caps.fixed_width, 48);
    h = fake_perfmon_open(PERFMON_EV_INSTRUCTION, USER, &hw);
    assert_int_equal(hw, 32);
    msr_model_inject(MSR_MODEL_EV_INSTRUCTIONS, 31337, true);
    assert_int_equal(fake_perfmon_value(h), 31337);
    pmu_test_assert_no_fault();

    /* Not there after all: general counters only, and no fault. */
    c.hidden_fixed = 0;
    boot(&c, true);
    assert_true(caps.present);
    assert_int_equal(caps.nr_fixed, 0);
    assert_true(fake_perfmon_open(PERFMON_EV_INSTRUCTION, KERN, &hw) >= 0);
    assert_true(hw < 4);
    pmu_test_assert_no_fault();

    /* In a guest: CPUID says none, none are used. */
    c.hidden_fixed = 3;
    c.hypervisor = true;
    boot(&c, true);
    assert_int_equal(caps.nr_fixed, 0);
    assert_int_equal(msr_model_nr_gp_safe(), 0);

    /* Versions 2 to 4 alike; version 5's ECX bitmap is believed. */
    c = msr_model_intel(4);
    c.nr_fixed = 0;
    c.hidden_fixed = 3;
    boot(&c, true);
    assert_int_equal(caps.nr_fixed, 3);
    c = msr_model_intel(5);
    c.nr_fixed = 0;
    c.fixed_bitmap = 0;
    c.hidden_fixed = 3;
    boot(&c, true);
    assert_int_equal(caps.nr_fixed, 0);
    pmu_test_assert_no_fault();
}

/*
 * Fixed counter 3 (topdown slots, version 5) has no generic event here and
 * is left alone: never enabled, its field and global bit untouched, even
 * when the firmware runs it.
 */
static void
test_fixed_counter3_left_alone(void **state)
{
    struct msr_model_config c = msr_model_intel(5);

    (void)state;
    c.fw_running = 1ULL << (MSR_MODEL_FIXED_BIT + 3);
    msr_model_init(&c);
    pmu_test_boot_cpus(drv, &caps, 1, true);
    assert_int_equal(caps.nr_fixed, 3);
    assert_int_equal(caps.fw_busy, 0);
    assert_int_equal(pmu_test_peek(MSR_IA32_FIXED_CTR_CTRL) >> 12,
                     PMU_FIXED_CTRL_OS | PMU_FIXED_CTRL_USR);
    assert_true(pmu_test_peek(MSR_IA32_PERF_GLOBAL_CTRL) & (1ULL << 35));
    assert_true(pmu_test_peek(MSR_IA32_FIXED_CTR0 + 3) >= MSR_MODEL_FW_VALUE);
    pmu_test_assert_no_fault();
}

static void
test_probe_fixed_width_differs(void **state)
{
    struct msr_model_config c = msr_model_intel(3);
    unsigned int hw;

    (void)state;
    c.fixed_width = 40;
    boot(&c, true);
    assert_int_equal(caps.nr_fixed, 0);
    assert_int_equal(drv->dev->nr_pmcs, 4);
    assert_true(fake_perfmon_open(PERFMON_EV_INSTRUCTION, KERN, &hw) >= 0);
    assert_true(hw < 4);
    assert_int_equal(fake_perfmon_open(PERFMON_EV_REF_CYCLE, KERN, &hw),
                     -ENOENT);
    pmu_test_assert_no_fault();
}

static void
check_declines(const struct msr_model_config *c, const char *reason)
{
    pmu_test_check_declines(drv, &caps, c, reason);
}

static void
test_decline_kvm_without_pmu(void **state)
{
    struct msr_model_config c = msr_model_intel(2);

    (void)state;
    c.kind = MSR_MODEL_KVM_NO_PMU;
    check_declines(&c, "CPUID leaf 0AH reports no counters");
    /* Detected from CPUID: not a single MSR touched. */
    assert_int_equal(msr_model_nr_writes(), 0);
    assert_int_equal(msr_model_nr_gp_safe(), 0);
}

static void
test_decline_tcg(void **state)
{
    struct msr_model_config c = msr_model_intel(2);

    (void)state;
    c.kind = MSR_MODEL_TCG;
    check_declines(&c, "CPUID leaf 0AH reports no counters");
    assert_int_equal(msr_model_nr_writes(), 0);
}

static void
test_decline_broken_counters(void **state)
{
    struct msr_model_config c = msr_model_intel(2);

    (void)state;
    c.kind = MSR_MODEL_BROKEN;
    check_declines(&c, "counters do not hold values");
}

static void
test_decline_faulting_msrs(void **state)
{
    struct msr_model_config c = msr_model_intel(2);

    (void)state;
    c.kind = MSR_MODEL_FAULTING;
    check_declines(&c, "IA32_PERF_GLOBAL_CTRL faults");
    assert_true(msr_model_nr_gp_safe() > 0);

    c = msr_model_intel(1);
    c.kind = MSR_MODEL_FAULTING;
    check_declines(&c, "IA32_PERFEVTSELx faults");
}

/*
 * The counters answer but RDPMC, which reads them on every path, faults:
 * no device.
 */
static void
test_decline_without_rdpmc(void **state)
{
    struct msr_model_config c = msr_model_kvm_intel();

    (void)state;
    c.no_rdpmc = true;
    check_declines(&c, "RDPMC does not read the counters");
    assert_true(msr_model_nr_gp_safe() > 0);
}

static void
test_decline_bad_cpuid(void **state)
{
    struct msr_model_config c = msr_model_intel(2);

    (void)state;
    c.gp_width = 8;
    check_declines(&c, "CPUID leaf 0AH reports a bad width");
    c = msr_model_intel(2);
    c.nr_gp = 0;
    check_declines(&c, "CPUID leaf 0AH reports no counters");
    c = msr_model_amd(0x17, true, false);
    check_declines(&c, "not an Intel CPU");
}

/* ---- events ------------------------------------------------------------- */

struct event_case {
    unsigned int event_id;
    uint64_t raw;
    unsigned int model_event;
    unsigned int fixed_hw;      /* hw id when fixed counters exist, or 0 */
};

static const struct event_case intel_events[] = {
    { PERFMON_EV_INSTRUCTION, 0x00c0, MSR_MODEL_EV_INSTRUCTIONS, 32 },
    { PERFMON_EV_CYCLE, 0x003c, MSR_MODEL_EV_CYCLES, 33 },
    { PERFMON_EV_REF_CYCLE, 0x0300, MSR_MODEL_EV_REF_CYCLES, 34 },
    { PERFMON_EV_CACHE_REF, 0x4f2e, MSR_MODEL_EV_LLC_REF, 0 },
    { PERFMON_EV_CACHE_MISS, 0x412e, MSR_MODEL_EV_LLC_MISS, 0 },
    { PERFMON_EV_BRANCH, 0x00c4, MSR_MODEL_EV_BRANCH, 0 },
    { PERFMON_EV_BRANCH_MISS, 0x00c5, MSR_MODEL_EV_BRANCH_MISS, 0 },
};

/*
 * Each generic event alone: translated to its architectural code, put on
 * its fixed counter or a general one programmed with that code, counting
 * only its own injected event.
 */
static void
check_events_on_config(const struct msr_model_config *config)
{
    for (unsigned int i = 0; i < sizeof(intel_events) / sizeof(intel_events[0]);
         i++) {
        const struct event_case *ec = &intel_events[i];
        struct perfmon_dev *dev = boot(config, true);
        bool fixed = caps.nr_fixed != 0 && ec->fixed_hw != 0;
        uint64_t raw = 0;
        unsigned int hw;
        int h;

        if (ec->event_id == PERFMON_EV_REF_CYCLE && !fixed) {
            assert_int_equal(dev->ops->translate(dev, &raw, ec->event_id), -ENOENT);
            continue;
        }

        assert_int_equal(dev->ops->translate(dev, &raw, ec->event_id), 0);
        assert_int_equal(raw, ec->raw);
        h = fake_perfmon_open(ec->event_id, KERN, &hw);
        assert_true(h >= 0);

        if (fixed) {
            unsigned int f = ec->fixed_hw - 32;

            assert_int_equal(hw, ec->fixed_hw);
            assert_int_equal((pmu_test_peek(MSR_IA32_FIXED_CTR_CTRL)
                              >> (4 * f)) & 0xf,
                             PMU_FIXED_CTRL_OS | PMU_FIXED_CTRL_PMI);
        } else {
            assert_true(hw < caps.nr_gp);
            assert_int_equal(pmu_test_peek(MSR_IA32_PERFEVTSEL0 + hw),
                             ec->raw | PMU_EVTSEL_OS | PMU_EVTSEL_EN
                             | PMU_EVTSEL_INT);
        }

        for (unsigned int e = 0; e < MSR_MODEL_NR_EVENTS; e++) {
            msr_model_inject(e, 100 + e, false);
        }

        pmu_test_assert_count(fake_perfmon_value(h), 100 + ec->model_event);
        fake_perfmon_close(h);
        pmu_test_assert_no_fault();
    }
}

static void
check_events_on(unsigned int version)
{
    struct msr_model_config c = msr_model_intel(version);

    check_events_on_config(&c);
}

static void
test_generic_events_v1(void **state)
{
    (void)state;
    check_events_on(1);
}

static void
test_generic_events_v2(void **state)
{
    (void)state;
    check_events_on(2);
}

static void
test_generic_events_v5(void **state)
{
    (void)state;
    check_events_on(5);
}

static void
test_unavailable_events(void **state)
{
    struct msr_model_config c = msr_model_intel(2);
    struct perfmon_dev *dev;
    uint64_t raw;
    unsigned int hw;
    int h;

    (void)state;
    /* Branch misses and core cycles marked unavailable; LLC events past a
       vector of length 3. */
    c.ebx_len = 7;
    c.ebx_unavail = (1U << 6) | (1U << 0);
    dev = boot(&c, true);
    assert_int_equal(dev->ops->translate(dev, &raw, PERFMON_EV_BRANCH_MISS), -ENOENT);
    assert_int_equal(fake_perfmon_open_raw(0x00c5, KERN, &hw), -ENOENT);
    assert_int_equal(dev->ops->translate(dev, &raw, PERFMON_EV_BRANCH), 0);

    /* Cycles still come from fixed counter 1, but not from a GP. */
    h = fake_perfmon_open(PERFMON_EV_CYCLE, KERN, &hw);
    assert_true(h >= 0);
    assert_int_equal(hw, 33);
    assert_int_equal(fake_perfmon_open(PERFMON_EV_CYCLE, KERN, &hw), -EAGAIN);
    fake_perfmon_close(h);

    c.ebx_unavail = 0;
    c.ebx_len = 3;
    dev = boot(&c, true);
    assert_int_equal(dev->ops->translate(dev, &raw, PERFMON_EV_CACHE_REF), -ENOENT);
    assert_int_equal(dev->ops->translate(dev, &raw, PERFMON_EV_BRANCH), -ENOENT);
    assert_int_equal(dev->ops->translate(dev, &raw, PERFMON_EV_INSTRUCTION), 0);

    /* Software events are not the hardware's. */
    assert_int_equal(dev->ops->translate(dev, &raw, PERFMON_EV_CONTEXT_SWITCH),
                     -ENOENT);
    assert_int_equal(dev->ops->translate(dev, &raw, PERFMON_NR_EVENTS + 5), -ENOENT);
    pmu_test_assert_no_fault();
}

static void
test_raw_events(void **state)
{
    /* Bits the driver owns or the hardware does not define. */
    static const uint64_t bad[] = {
        PMU_EVTSEL_USR, PMU_EVTSEL_OS, PMU_EVTSEL_PC, PMU_EVTSEL_INT,
        PMU_EVTSEL_ANY, PMU_EVTSEL_EN, 1ULL << 32, 1ULL << 33, 1ULL << 63,
    };
    struct perfmon_dev *dev;
    unsigned int hw;
    uint64_t raw;

    (void)state;
    dev = boot_version(3);

    /* Edge, invert and counter mask are programmed exactly as given. */
    raw = 0x00c4 | PMU_EVTSEL_EDGE | PMU_EVTSEL_INV | (3ULL << 24) | 0x1200;
    assert_true(fake_perfmon_open_raw(raw, USER, &hw) >= 0);
    assert_true(hw < 4);
    assert_int_equal(pmu_test_peek(MSR_IA32_PERFEVTSEL0 + hw),
                     raw | PMU_EVTSEL_USR | PMU_EVTSEL_EN | PMU_EVTSEL_INT);

    /* A raw code with edge on the instructions event is not fixed 0's. */
    assert_true(fake_perfmon_open_raw(0x00c0 | PMU_EVTSEL_EDGE, KERN, &hw) >= 0);
    assert_true(hw < 4);

    pmu_test_check_raw_refused(dev, 0x00c4, bad,
                               sizeof(bad) / sizeof(bad[0]));
    assert_int_equal(dev->ops->alloc(dev, NULL, 0x00c4, KERN), -EINVAL);
    pmu_test_assert_no_fault();
}

/*
 * The model's lists constrain its events' counters: on Skylake-SP
 * INST_RETIRED.PREC_DIST (C0H umask 01H) counts on counter 1 only, and
 * INST_RETIRED.TOTAL_CYCLES_PS (cmask 10, inv) on 0, 2 and 3; codes the
 * list does not name keep every counter.  Pinned events get only those,
 * and wait (-EAGAIN) when they are taken.
 */
static void
test_model_constraints(void **state)
{
    uint64_t counters, prefer;
    struct perfmon_dev *dev;
    unsigned int hw, hw2;

    (void)state;
    dev = boot_version(4);
    pmu_evtab_setup(CPU_VENDOR_INTEL, 6, 0x55, 4);

    assert_int_equal(dev->ops->counters(dev, 0x01c0, KERN, &counters,
                                        &prefer), 0);
    assert_int_equal(counters, 1ULL << 1);
    assert_int_equal(dev->ops->counters(dev, 0x01c0 | PMU_EVTSEL_INV
                                        | (10ULL << 24), KERN, &counters,
                                        &prefer), 0);
    assert_int_equal(counters, 0xd);
    assert_int_equal(dev->ops->counters(dev, 0x1234, KERN, &counters,
                                        &prefer), 0);
    assert_int_equal(counters & 0xf, 0xf);

    assert_int_equal(dev->ops->alloc(dev, &hw, 0x01c0, KERN), 0);
    assert_int_equal(hw, 1);
    assert_int_equal(dev->ops->alloc(dev, &hw2, 0x01c0, KERN), -EAGAIN);
    dev->ops->free(dev, hw);

    /* Another model (or none) has no such constraint. */
    pmu_evtab_setup(CPU_VENDOR_UNKNOWN, 0, 0, 0);
    assert_int_equal(dev->ops->counters(dev, 0x01c0, KERN, &counters,
                                        &prefer), 0);
    assert_int_equal(counters & 0xf, 0xf);
    pmu_test_assert_no_fault();
}

/*
 * Hold raw (again) and start it: its event select has code (with the
 * unit mask) and msr holds the value its extra asks for.  The handle.
 */
static int
open_extra(struct perfmon_dev *dev, uint64_t raw, uint64_t code,
           uint32_t msr, unsigned int *hwp)
{
    bool valid;
    int h;

    assert_int_equal(dev->ops->hold(dev, raw), 0);
    h = fake_perfmon_open_raw(raw, KERN, hwp);
    assert_true(h >= 0);
    assert_int_equal(pmu_test_peek(MSR_IA32_PERFEVTSEL0 + *hwp) & 0xffff,
                     code);
    assert_int_equal(pmu_test_peek(msr),
                     pmu_evtab_raw_extra(raw, &valid)->value);
    return h;
}

/*
 * Extra MSRs as shared resources, on Skylake-SP: an offcore response
 * event gets MSR_OFFCORE_RSP_0 (1A6H) with its value and code B7H; a
 * second slot asking the same value shares it; another value takes
 * OFFCORE_RSP_1 (1A7H) with code BBH; a third value finds both taken and
 * is refused (-EAGAIN) until one is released.  Load latency goes to
 * MSR_PEBS_LD_LAT (3F6H).  Where the MSRs #GP (KVM emulates none of
 * them) the probe's fault-safe read says so: -ENOENT, no unsafe access.
 */
static void
test_extra_msrs(void **state)
{
    const struct perfmon_evtab_model *m = perfmon_evtab_find_id("skylakex");
    struct msr_model_config c = msr_model_intel(4);
    uint64_t a, b, d, lat, value;
    struct perfmon_dev *dev;
    unsigned int hw_a, hw_b;
    int ha, hb;
    bool valid;

    (void)state;
    c.extra_msrs = true;
    dev = boot(&c, true);
    pmu_evtab_setup(CPU_VENDOR_INTEL, 6, 0x55, 4);
    a = pmu_evtab_raw(m, perfmon_evtab_lookup(
        m, "OFFCORE_RESPONSE.ALL_DATA_RD.L3_MISS.ANY_SNOOP"));
    b = pmu_evtab_raw(m, perfmon_evtab_lookup(
        m, "OFFCORE_RESPONSE.ALL_RFO.L3_MISS.ANY_SNOOP"));
    d = pmu_evtab_raw(m, perfmon_evtab_lookup(
        m, "OFFCORE_RESPONSE.ALL_PF_DATA_RD.L3_MISS.ANY_SNOOP"));
    lat = pmu_evtab_raw(m, perfmon_evtab_lookup(
        m, "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4"));
    assert_true(pmu_evtab_raw_extra(a, &valid)->value
                != pmu_evtab_raw_extra(b, &valid)->value);

    assert_int_equal(dev->ops->hold(dev, a), 0);
    ha = open_extra(dev, a, 0x01b7, 0x1a6, &hw_a);

    hb = open_extra(dev, b, 0x01bb, 0x1a7, &hw_b);
    /* The extras' index bits never reach PERFEVTSEL. */
    assert_int_equal(pmu_test_peek(MSR_IA32_PERFEVTSEL0 + hw_b)
                     & PMU_EVTAB_RAW_EXTRA_MASK, 0);

    /* Both taken: refused until a value's last slot goes. */
    assert_int_equal(dev->ops->hold(dev, d), -EAGAIN);
    fake_perfmon_close(hb);
    dev->ops->release(dev, b);
    assert_int_equal(dev->ops->hold(dev, d), 0);
    dev->ops->release(dev, d);
    assert_int_equal(dev->ops->hold(dev, b), 0);
    dev->ops->release(dev, a);
    assert_int_equal(dev->ops->hold(dev, d), -EAGAIN);
    fake_perfmon_close(ha);
    dev->ops->release(dev, a);
    assert_int_equal(dev->ops->hold(dev, d), 0);
    dev->ops->release(dev, d);
    dev->ops->release(dev, b);

    assert_int_equal(dev->ops->hold(dev, lat), 0);
    hb = fake_perfmon_open_raw(lat, KERN, &hw_b);
    assert_true(hb >= 0);
    assert_true(msr_model_peek(0x3f6, &value));
    assert_int_equal(value, 4);
    fake_perfmon_close(hb);
    dev->ops->release(dev, lat);
    pmu_test_assert_no_fault();

    /* An index that names no extra MSR is a bad raw code. */
    assert_int_equal(dev->ops->alloc(dev, &hw_a, 0x01b7
                                     | PMU_EVTAB_RAW_EXTRA_MASK, KERN),
                     -EINVAL);

    /* KVM: the extra MSRs #GP; the fault-safe probe finds out. */
    c.extra_msrs = false;
    dev = boot(&c, true);
    assert_int_equal(dev->ops->hold(dev, a), -ENOENT);
    assert_int_equal(dev->ops->hold(dev, lat), -ENOENT);
    assert_int_equal(msr_model_nr_gp_unsafe(), 0);
    pmu_evtab_setup(CPU_VENDOR_UNKNOWN, 0, 0, 0);
}

static void
test_mode_bits(void **state)
{
    int hk, hu, hb, fk, fu;

    (void)state;
    boot_version(2);
    hk = fake_perfmon_open_raw(0x00c4, KERN, NULL);
    hu = fake_perfmon_open_raw(0x00c4, USER, NULL);
    hb = fake_perfmon_open_raw(0x00c4, BOTH, NULL);
    fk = fake_perfmon_open(PERFMON_EV_INSTRUCTION, KERN, NULL);
    fu = fake_perfmon_open(PERFMON_EV_CYCLE, USER, NULL);
    assert_true(hk >= 0 && hu >= 0 && hb >= 0 && fk >= 0 && fu >= 0);

    msr_model_inject(MSR_MODEL_EV_BRANCH, 10, false);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 7, true);
    msr_model_inject(MSR_MODEL_EV_INSTRUCTIONS, 50, false);
    msr_model_inject(MSR_MODEL_EV_INSTRUCTIONS, 5, true);
    msr_model_inject(MSR_MODEL_EV_CYCLES, 30, false);
    msr_model_inject(MSR_MODEL_EV_CYCLES, 3, true);

    /* The driver's own instructions count in kernel mode only. */
    pmu_test_assert_count(fake_perfmon_value(hk), 10);
    assert_int_equal(fake_perfmon_value(hu), 7);
    pmu_test_assert_count(fake_perfmon_value(hb), 17);
    pmu_test_assert_count(fake_perfmon_value(fk), 50);
    assert_int_equal(fake_perfmon_value(fu), 3);
    assert_int_equal((pmu_test_peek(MSR_IA32_FIXED_CTR_CTRL) >> 4) & 0xf,
                     PMU_FIXED_CTRL_USR | PMU_FIXED_CTRL_PMI);
    pmu_test_assert_no_fault();
}

static void
test_free_and_reuse(void **state)
{
    int h[4], h2;
    unsigned int hw[4], hw2;
    uint64_t stopped;

    (void)state;
    boot_version(2);

    for (unsigned int i = 0; i < 4; i++) {
        h[i] = fake_perfmon_open_raw(0x00c4, KERN, &hw[i]);
        assert_true(h[i] >= 0);
        assert_int_equal(hw[i], i);
    }

    assert_int_equal(fake_perfmon_open_raw(0x00c5, KERN, &hw2), -EAGAIN);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 40, false);
    pmu_test_assert_count(fake_perfmon_close(h[2]), 40);
    assert_int_equal(pmu_test_peek(MSR_IA32_PERFEVTSEL0 + 2), 0);

    /* A stopped counter counts nothing. */
    stopped = pmu_test_peek(MSR_IA32_PMC0 + 2);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 5, false);
    assert_int_equal(pmu_test_peek(MSR_IA32_PMC0 + 2), stopped);

    /* Reused from zero (and what it counted since), with its new event. */
    h2 = fake_perfmon_open_raw(0x00c5, KERN, &hw2);
    assert_true(h2 >= 0);
    assert_int_equal(hw2, 2);
    assert_true(pmu_test_peek(MSR_IA32_PMC0 + 2) <= msr_model_drifted());
    msr_model_inject(MSR_MODEL_EV_BRANCH_MISS, 9, false);
    pmu_test_assert_count(fake_perfmon_value(h2), 9);
    pmu_test_assert_count(fake_perfmon_value(h[0]), 45);

    /* Fixed counters free and reuse the same way. */
    h[2] = fake_perfmon_open(PERFMON_EV_INSTRUCTION, KERN, &hw[2]);
    assert_int_equal(hw[2], 32);
    fake_perfmon_close(h[2]);
    h[2] = fake_perfmon_open(PERFMON_EV_INSTRUCTION, USER, &hw[2]);
    assert_int_equal(hw[2], 32);
    assert_int_equal(pmu_test_peek(MSR_IA32_FIXED_CTR_CTRL) & 0xf,
                     PMU_FIXED_CTRL_USR | PMU_FIXED_CTRL_PMI);
    pmu_test_assert_no_fault();
}

/* ---- overflow ----------------------------------------------------------- */

static void
test_wraps_v2(void **state)
{
    (void)state;
    /* 48-bit counters, chunks up to 2^47: about one wrap in four rounds
       per counter. */
    pmu_test_check_wraps(boot_version(2), 8000, 1ULL << 47, 3000);
}

static void
test_wraps_v4_full_width(void **state)
{
    struct msr_model_config c = msr_model_intel(4);

    (void)state;
    c.gp_width = c.fixed_width = 40;
    pmu_test_check_wraps(boot(&c, true), 4000, 1ULL << 39, 1500);
}

static void
test_wraps_v1_no_global_ctrl(void **state)
{
    struct perfmon_dev *dev;
    uint64_t total = 0, total2 = 0;
    int h, h2;

    (void)state;
    dev = boot_version(1);
    h = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, NULL);
    h2 = fake_perfmon_open(PERFMON_EV_INSTRUCTION, KERN, NULL);
    assert_true(h >= 0 && h2 >= 0);
    /* Armed: the bits above the 31 the core sees are set. */
    assert_int_equal(pmu_test_peek(MSR_IA32_PMC0) & ~0xffffULL,
                     0xff80000000ULL);
    pmu_test_rng_state = 12345;

    for (unsigned int i = 0; i < 6000; i++) {
        uint64_t n = pmu_test_rng_next() % (1ULL << 30);

        msr_model_inject(MSR_MODEL_EV_BRANCH, n, false);
        msr_model_inject(MSR_MODEL_EV_INSTRUCTIONS, n / 3, false);
        total += n;
        total2 += n / 3;
        pmu_test_deliver_nmis(dev);
    }

    pmu_test_assert_count(fake_perfmon_value(h), total);
    pmu_test_assert_count(fake_perfmon_value(h2), total2);
    assert_true(fake_perfmon_nr_intrs() > 1000);
    assert_int_equal(msr_model_pmis_lost(), 0);
    /* Never a global register on version 1. */
    assert_false(msr_model_peek(MSR_IA32_PERF_GLOBAL_CTRL, &(uint64_t){ 0 }));
    pmu_test_assert_no_fault();
}

static void
test_wraps_v1_full_width(void **state)
{
    struct msr_model_config c = msr_model_intel(1);
    struct perfmon_dev *dev;

    (void)state;
    c.nr_gp = 4;
    c.pdcm = true;
    c.fw_write = true;
    dev = boot(&c, true);
    assert_true(caps.full_width_write);
    assert_int_equal(dev->width, 39);
    pmu_test_check_wraps(dev, 3000, 1ULL << 38, 500);
}

static void
test_spurious_nmi(void **state)
{
    struct perfmon_dev *dev;
    int h;

    (void)state;
    dev = boot_version(2);
    h = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, NULL);
    assert_true(h >= 0);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 1000, false);

    /* No overflow: not claimed, nothing acknowledged. */
    assert_false(perfmon_overflow_intr(dev, NULL));
    assert_int_equal(fake_perfmon_nr_intrs(), 0);
    assert_int_equal(pmu_nr_pmis(), 0);

    /*
     * Status bits that are not counters of ours (counter 5 on a 4-counter
     * CPU, fixed counter 3, OvfBuffer, CondChgd): ignored, left set, never
     * written to the reset register (which would fault).
     */
    msr_model_set_status((1ULL << 5) | (1ULL << 35) | (1ULL << 62)
                         | (1ULL << 63));
    assert_false(perfmon_overflow_intr(dev, NULL));
    assert_int_equal(pmu_test_peek(MSR_IA32_PERF_GLOBAL_STATUS),
                     (1ULL << 5) | (1ULL << 35) | (1ULL << 62) | (1ULL << 63));

    /* Mixed with a real overflow: only our bit is taken and cleared. */
    msr_model_set_status(1ULL << 1);
    assert_true(perfmon_overflow_intr(dev, NULL));
    assert_int_equal(fake_perfmon_last_mask(), 1ULL << 1);
    assert_int_equal(pmu_test_peek(MSR_IA32_PERF_GLOBAL_STATUS) & 0xf, 0);
    pmu_test_assert_count(fake_perfmon_value(h), 1000);
    pmu_test_assert_no_fault();
}

static void
test_spurious_nmi_v1(void **state)
{
    struct perfmon_dev *dev;

    (void)state;
    dev = boot_version(1);
    /* Nothing active: nothing to claim. */
    assert_false(perfmon_overflow_intr(dev, NULL));
    assert_true(fake_perfmon_open(PERFMON_EV_BRANCH, KERN, NULL) >= 0);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 12345, false);
    assert_false(perfmon_overflow_intr(dev, NULL));
    assert_int_equal(msr_model_nmis_pending(), 0);
    pmu_test_assert_no_fault();
}

/*
 * A PMI that is not ours (no status bit) still masked the LVT on its way
 * in: the handler must unmask it, or every later overflow on this CPU is
 * lost.
 */
static void
test_spurious_pmi_unmasks(void **state)
{
    struct perfmon_dev *dev;
    unsigned int hw;
    int h;

    (void)state;
    dev = boot_version(2);
    h = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, &hw);
    assert_true(h >= 0);
    msr_model_spurious_pmi();
    assert_true(msr_model_lvt_masked());
    assert_true(msr_model_take_nmi());
    assert_false(perfmon_overflow_intr(dev, NULL));
    assert_false(msr_model_lvt_masked());

    /* The next overflow raises its PMI. */
    dev->ops->write(dev, hw, (1ULL << 48) - 100);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 1000, false);
    assert_int_equal(msr_model_pmis_lost(), 0);
    assert_int_equal(msr_model_nmis_pending(), 1);
    pmu_test_deliver_nmis(dev);
    pmu_test_assert_no_fault();
}

/*
 * Version 1: a counter that overflowed and was stopped before its NMI
 * arrived leaves nothing for the handler to find, and no counter active;
 * the LVT the PMI masked must still be unmasked for the next counter.
 */
static void
test_late_pmi_of_stopped_counter_v1(void **state)
{
    struct perfmon_dev *dev;
    unsigned int hw;
    int h;

    (void)state;
    dev = boot_version(1);
    h = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, &hw);
    fake_perfmon_write(h, (1ULL << 31) - 100);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 1000, false);
    assert_int_equal(msr_model_nmis_pending(), 1);
    fake_perfmon_close(h);

    assert_true(msr_model_take_nmi());
    assert_false(perfmon_overflow_intr(dev, NULL));
    assert_false(msr_model_lvt_masked());

    h = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, &hw);
    fake_perfmon_write(h, (1ULL << 31) - 100);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 1000, false);
    assert_int_equal(msr_model_pmis_lost(), 0);
    assert_int_equal(msr_model_nmis_pending(), 1);
    pmu_test_deliver_nmis(dev);
    pmu_test_assert_count(fake_perfmon_value(h), 1000);
    pmu_test_assert_no_fault();
}

/*
 * A counter stopped after its overflow and started for a new user before
 * the NMI: from version 2 the overflow-status bit the previous user left
 * must not reach the new one (+2^48); version 1 finds overflows by the top
 * bit, which the start re-arms.
 */
static void
test_restart_drops_overflow(void **state)
{
    static const unsigned int versions[] = { 1, 2, 4, 5 };

    (void)state;

    for (size_t i = 0; i < ARRAY_SIZE(versions); i++) {
        pmu_test_check_restart_drops_overflow(boot_version(versions[i]));
    }
}

/*
 * A counter that wraps between the handler's re-enabling the counters
 * and its unmasking of the LVT (which the PMI masked) would raise a PMI
 * the LAPIC drops, and never interrupt again: every version.
 */
static void
test_unmask_window(void **state)
{
    static const unsigned int versions[] = { 1, 2, 4, 5 };

    (void)state;

    for (size_t i = 0; i < ARRAY_SIZE(versions); i++) {
        pmu_test_check_unmask_window(boot_version(versions[i]));
    }
}

static void
test_rearm_loses_nothing_v2(void **state)
{
    struct perfmon_dev *dev;

    (void)state;
    dev = boot_version(2);
    assert_int_equal(dev->max_period, (1ULL << 31) - 1);
    pmu_test_check_rearm(dev, MSR_IA32_PERF_GLOBAL_CTRL);
}

static void
test_rearm_loses_nothing_v4(void **state)
{
    struct perfmon_dev *dev;

    (void)state;
    dev = boot_version(4);
    pmu_test_check_rearm(dev, MSR_IA32_PERF_GLOBAL_CTRL);
}

/*
 * Skid: the PMI comes some events after the wrap, so a read may see the
 * wrap before the interrupt reports it: still counted once.
 */
static void
test_skid(void **state)
{
    static const unsigned int versions[] = { 1, 2 };

    (void)state;

    for (unsigned int i = 0; i < 2; i++) {
        struct perfmon_dev *dev = boot_version(versions[i]);
        int h = fake_perfmon_open(PERFMON_EV_BRANCH, KERN, NULL);

        assert_true(h >= 0);
        msr_model_set_skid(dev->width > 32 ? (1ULL << 40) : (1ULL << 27));
        pmu_test_rng_state = 2718;
        assert_int_equal(pmu_test_check_branches(dev, h, 3000,
                                                 1ULL << (dev->width - 3)),
                         0);
        assert_true(fake_perfmon_nr_ovf_folds() > 100);
    }
}

static void
test_pmi_acknowledged_and_unmasked(void **state)
{
    struct perfmon_dev *dev;
    int h;
    unsigned int hw;

    (void)state;
    dev = boot_version(3);
    h = fake_perfmon_open(PERFMON_EV_INSTRUCTION, KERN, &hw);
    assert_int_equal(hw, 32);
    drv->dev->ops->write(drv->dev, hw, (1ULL << 48) - 10);
    msr_model_inject(MSR_MODEL_EV_INSTRUCTIONS, 25, false);

    /* The overflow set fixed 0's status bit and masked the LVT. */
    assert_int_equal(pmu_test_peek(MSR_IA32_PERF_GLOBAL_STATUS), 1ULL << 32);
    assert_true(msr_model_lvt_masked());
    assert_int_equal(msr_model_nmis_pending(), 1);

    /* Another overflow while masked would be lost: the handler runs. */
    assert_true(msr_model_take_nmi());
    assert_true(perfmon_overflow_intr(dev, NULL));
    assert_int_equal(fake_perfmon_last_mask(), 1ULL << 32);
    assert_int_equal(pmu_test_peek(MSR_IA32_PERF_GLOBAL_STATUS), 0);
    assert_false(msr_model_lvt_masked());
    assert_true(pmu_test_peek(MSR_IA32_FIXED_CTR0) >= 15);
    assert_true(pmu_test_peek(MSR_IA32_FIXED_CTR0) <= 15 + msr_model_drifted());
    /* The core's value: what it saw before the write, plus the wrap. */
    assert_true((fake_perfmon_value(h) & ((1ULL << 48) - 1))
                <= 15 + msr_model_drifted());
    pmu_test_assert_no_fault();
}

static void
test_write(void **state)
{
    struct msr_model_config c = msr_model_intel(2);
    struct perfmon_dev *dev;
    unsigned int hw;

    (void)state;
    dev = boot(&c, true);
    assert_true(fake_perfmon_open_raw(0x00c4, KERN, &hw) >= 0);

    /* Legacy writes: only values the sign extension can produce, which
       are those the core writes (within max_period of the wrap). */
    dev->ops->write(dev, hw, 0x12345678);
    assert_int_equal(pmu_test_peek(MSR_IA32_PMC0 + hw), 0x12345678);
    dev->ops->write(dev, hw, (1ULL << 48) - dev->max_period);
    assert_int_equal(pmu_test_peek(MSR_IA32_PMC0 + hw),
                     (1ULL << 48) - dev->max_period);
    expect_assert_failure(dev->ops->write(dev, hw, 1ULL << 40));
    expect_assert_failure(dev->ops->write(dev, hw, 1ULL << 48));
    expect_assert_failure(dev->ops->write(dev, 20, 0));
    expect_assert_failure(dev->ops->write(dev, 64, 0));

    /* Full-width writes go through IA32_A_PMCx. */
    c = msr_model_intel(4);
    dev = boot(&c, true);
    assert_int_equal(dev->max_period, 0);
    assert_true(fake_perfmon_open_raw(0x00c4, KERN, &hw) >= 0);
    dev->ops->write(dev, hw, 1ULL << 40);
    assert_int_equal(pmu_test_peek(MSR_IA32_PMC0 + hw), 1ULL << 40);
    pmu_test_assert_no_fault();
}

static void
test_cpu_init_clears_stale_state(void **state)
{
    struct msr_model_config c = msr_model_intel(2);

    (void)state;
    msr_model_init(&c);
    assert_int_equal(pmu_test_probe_cpus(drv, &caps, 1, true), 0);

    /* Firmware left a counter running and overflow bits set. */
    msr_write_safe(MSR_IA32_PERFEVTSEL0 + 1, 0x00c4 | PMU_EVTSEL_EN);
    msr_write_safe(MSR_IA32_PMC0 + 1, 77);
    msr_model_set_status((1ULL << 0) | (1ULL << 33) | (1ULL << 62));
    fake_cpu_set_intr(false);
    drv->cpu_init();
    fake_cpu_set_intr(true);
    assert_int_equal(pmu_test_peek(MSR_IA32_PERFEVTSEL0 + 1), 0);
    assert_int_equal(pmu_test_peek(MSR_IA32_PMC0 + 1), 0);
    /* Ours cleared, the foreign bit left alone. */
    assert_int_equal(pmu_test_peek(MSR_IA32_PERF_GLOBAL_STATUS), 1ULL << 62);
    assert_int_equal(pmu_test_peek(MSR_IA32_PERF_GLOBAL_CTRL),
                     0xfULL | (7ULL << 32));
    pmu_test_assert_no_fault();
}

static void
test_polled(void **state)
{
    struct msr_model_config c = msr_model_intel(2);
    struct perfmon_dev *dev;
    unsigned int hw;
    int h;

    (void)state;
    dev = boot(&c, false);
    assert_false(caps.overflow_nmi);
    assert_false(dev->overflow_intr);
    h = fake_perfmon_open_raw(0x00c4, KERN, &hw);
    assert_int_equal(pmu_test_peek(MSR_IA32_PERFEVTSEL0 + hw),
                     0x00c4 | PMU_EVTSEL_OS | PMU_EVTSEL_EN);
    assert_true(fake_perfmon_open(PERFMON_EV_INSTRUCTION, KERN, NULL) >= 0);
    assert_int_equal(pmu_test_peek(MSR_IA32_FIXED_CTR_CTRL) & 0xf,
                     PMU_FIXED_CTRL_OS);

    /* Polled often enough, the core keeps exact counts across wraps. */
    pmu_test_check_polled(h, 777);
    assert_false(perfmon_overflow_intr(dev, NULL));

    /* Version 1 polled: full width, no arming. */
    c = msr_model_intel(1);
    dev = boot(&c, false);
    assert_int_equal(dev->width, 40);
    assert_true(fake_perfmon_open_raw(0x00c4, KERN, &hw) >= 0);
    assert_true(pmu_test_peek(MSR_IA32_PMC0 + hw) <= msr_model_drifted());
    pmu_test_assert_no_fault();
}

static void
test_no_apic_polls(void **state)
{
    struct msr_model_config c = msr_model_intel(3);

    (void)state;
    c.apic = false;
    boot(&c, true);
    assert_false(caps.overflow_nmi);
    assert_false(drv->dev->overflow_intr);
}

static void
test_reference_cycles_fixed_only(void **state)
{
    struct perfmon_dev *dev;
    unsigned int hw;
    int h;

    (void)state;
    dev = boot_version(2);
    h = fake_perfmon_open(PERFMON_EV_REF_CYCLE, KERN, &hw);
    assert_int_equal(hw, 34);
    /* Fixed 2 taken: no general counter may stand in. */
    assert_int_equal(fake_perfmon_open(PERFMON_EV_REF_CYCLE, KERN, &hw),
                     -EAGAIN);
    msr_model_inject(MSR_MODEL_EV_REF_CYCLES, 500, false);
    pmu_test_assert_count(fake_perfmon_value(h), 500);

    /* A second instructions counter lands on a general one. */
    assert_true(fake_perfmon_open(PERFMON_EV_INSTRUCTION, KERN, &hw) >= 0);
    assert_int_equal(hw, 32);
    assert_true(fake_perfmon_open(PERFMON_EV_INSTRUCTION, KERN, &hw) >= 0);
    assert_true(hw < 4);
    assert_int_equal(pmu_test_peek(MSR_IA32_PERFEVTSEL0 + hw) & 0xffff,
                     0x00c0);
    (void)dev;
    pmu_test_assert_no_fault();
}

/* ---- what the firmware left, and the other CPUs ------------------------ */

/*
 * Counters the firmware left counting (general-purpose 1, fixed 1) are
 * left alone on every CPU, never handed out, and the boot log says so; the
 * others work.
 */
static void
test_firmware_counters_left_alone(void **state)
{
    struct msr_model_config c = msr_model_intel(2);
    uint64_t fw_gp, fw_fixed, drifted;
    struct perfmon_dev *dev;
    unsigned int hw;
    int h[3];

    (void)state;
    c.fw_running = (1ULL << 1) | (1ULL << (MSR_MODEL_FIXED_BIT + 1));
    msr_model_init(&c);
    dev = pmu_test_boot_cpus(drv, &caps, 2, true);
    assert_int_equal(caps.nr_gp, 3);
    assert_int_equal(caps.nr_fixed, 2);
    assert_int_equal(dev->nr_pmcs, 5);
    assert_int_equal(caps.fw_busy, c.fw_running);
    assert_non_null(strstr(fake_log_last(), "firmware"));
    assert_non_null(strstr(fake_log_last(), "1, fixed 1"));

    for (unsigned int cpu = 0; cpu < 2; cpu++) {
        fake_cpu_set_id(cpu);
        assert_true(pmu_test_peek(MSR_IA32_PERFEVTSEL0 + 1) & PMU_EVTSEL_EN);
        assert_true(pmu_test_peek(MSR_IA32_PMC0 + 1) >= MSR_MODEL_FW_VALUE);
        assert_int_equal((pmu_test_peek(MSR_IA32_FIXED_CTR_CTRL) >> 4) & 0xf,
                         PMU_FIXED_CTRL_OS | PMU_FIXED_CTRL_USR);
        assert_true(pmu_test_peek(MSR_IA32_FIXED_CTR0 + 1)
                    >= MSR_MODEL_FW_VALUE);
        /* Their global enables too. */
        assert_int_equal(pmu_test_peek(MSR_IA32_PERF_GLOBAL_CTRL),
                         0xfULL | (7ULL << 32));
    }

    fake_cpu_set_id(0);

    /* Cycles cannot have fixed counter 1: a general one, not 1 either. */
    h[0] = fake_perfmon_open(PERFMON_EV_CYCLE, KERN, &hw);
    assert_true(h[0] >= 0);
    assert_int_equal(hw, 0);
    h[1] = fake_perfmon_open_raw(0x00c4, KERN, &hw);
    assert_int_equal(hw, 2);
    h[2] = fake_perfmon_open_raw(0x00c5, KERN, &hw);
    assert_int_equal(hw, 3);
    assert_int_equal(fake_perfmon_open_raw(0x00c4, USER, &hw), -EAGAIN);
    msr_model_inject(MSR_MODEL_EV_CYCLES, 1000, true);
    pmu_test_assert_count(fake_perfmon_value(h[0]), 0);
    msr_model_inject(MSR_MODEL_EV_CYCLES, 1000, false);
    pmu_test_assert_count(fake_perfmon_value(h[0]), 1000);

    /*
     * The PMI path freezes and restores ours only: the firmware's count
     * every cycle the handler runs (the model's drift), ours none.
     */
    dev->ops->write(dev, 0, (1ULL << 48) - 10);
    msr_model_inject(MSR_MODEL_EV_CYCLES, 100, false);
    fw_gp = pmu_test_peek(MSR_IA32_PMC0 + 1);
    fw_fixed = pmu_test_peek(MSR_IA32_FIXED_CTR0 + 1);
    drifted = msr_model_drifted();
    pmu_test_deliver_nmis(dev);
    assert_int_equal(pmu_test_peek(MSR_IA32_PERF_GLOBAL_CTRL),
                     0xfULL | (7ULL << 32));
    assert_int_equal(pmu_test_peek(MSR_IA32_PMC0 + 1) - fw_gp,
                     msr_model_drifted() - drifted);
    assert_int_equal(pmu_test_peek(MSR_IA32_FIXED_CTR0 + 1) - fw_fixed,
                     msr_model_drifted() - drifted);
    assert_true(msr_model_drifted() > drifted);
    pmu_test_assert_no_fault();
}

/*
 * Counter 0 busy: the check that counters hold values must use another
 * one; with every general-purpose counter busy there is nothing to check
 * (nor to use), and the probe declines.
 */
static void
test_firmware_counter0_busy(void **state)
{
    struct msr_model_config c = msr_model_intel(3);

    (void)state;
    c.fw_running = 1;
    msr_model_init(&c);
    pmu_test_boot_cpus(drv, &caps, 1, true);
    assert_int_equal(caps.nr_gp, 3);
    assert_true(pmu_test_peek(MSR_IA32_PERFEVTSEL0) & PMU_EVTSEL_EN);
    assert_true(pmu_test_peek(MSR_IA32_PMC0) >= MSR_MODEL_FW_VALUE);

    c.fw_running = 0xf;
    msr_model_init(&c);
    assert_int_equal(pmu_test_probe_cpus(drv, &caps, 1, true), -ENODEV);
    assert_string_equal(caps.reason,
                        "the firmware uses every general-purpose counter");
    assert_int_equal(pmu_test_peek(MSR_IA32_PERFEVTSEL0 + 3),
                     0x3c | PMU_EVTSEL_USR | PMU_EVTSEL_OS | PMU_EVTSEL_EN);
    pmu_test_assert_no_fault();
}

/*
 * An application processor with fewer counters than the boot CPU (a hybrid
 * part's small core): every CPU is probed, with the fault-safe accessors,
 * the mismatch is reported and the device has what all CPUs have.
 */
static void
test_ap_with_fewer_counters(void **state)
{
    struct msr_model_config big = msr_model_intel(5);
    struct msr_model_config small = msr_model_intel(5);
    struct perfmon_dev *dev;
    unsigned int hw;
    int h;

    (void)state;
    small.nr_gp = 6;
    small.nr_fixed = 3;
    small.fixed_bitmap = 0x7;
    msr_model_init(&big);
    msr_model_set_cpu(2, &small);
    dev = pmu_test_boot_cpus(drv, &caps, 3, true);
    assert_int_equal(caps.nr_gp, 6);
    assert_int_equal(caps.nr_fixed, 3);
    assert_int_equal(dev->nr_pmcs, 9);
    assert_non_null(strstr(fake_log_last(), "cpu2"));
    pmu_test_assert_no_fault();

    /* Counters 0-5 count on the small CPU. */
    fake_cpu_set_id(2);

    for (unsigned int i = 0; i < 6; i++) {
        h = fake_perfmon_open_raw(0x00c4, USER, &hw);
        assert_true(h >= 0);
        assert_int_equal(hw, i);
    }

    assert_int_equal(fake_perfmon_open_raw(0x00c5, KERN, &hw), -EAGAIN);
    msr_model_inject(MSR_MODEL_EV_BRANCH, 100, true);
    assert_int_equal(fake_perfmon_value(h), 100);
    pmu_test_assert_no_fault();
    fake_cpu_set_id(0);
}

/* ---- a KVM guest --------------------------------------------------------- */

/*
 * The -cpu host guest KVM gives: version 2 with full-width writes, so
 * periods reach the counter's width; events, wraps and sampling's re-arm
 * exact; the self-test passes.
 */
static void
test_kvm_guest(void **state)
{
    struct msr_model_config c = msr_model_kvm_intel();
    struct perfmon_dev *dev;

    (void)state;
    check_events_on_config(&c);
    dev = boot(&c, true);
    assert_int_equal(caps.version, 2);
    assert_int_equal(caps.nr_fixed, 3);
    assert_true(caps.full_width_write);
    assert_int_equal(dev->max_period, 0);
    pmu_test_check_wraps(dev, 4000, 1ULL << 47, 1500);
    pmu_test_check_rearm(boot(&c, true), MSR_IA32_PERF_GLOBAL_CTRL);
    assert_int_equal(pmu_test_selftest(boot(&c, true), false), 0);
    pmu_test_assert_no_fault();
}

/*
 * The host took the counters (its NMI watchdog, host perf): they stop
 * with no sign in any register.  The self-test must not pass them: each
 * counting check fails, saying what it measured.
 */
static void
test_selftest_host_took_counters(void **state)
{
    struct msr_model_config c = msr_model_kvm_intel();
    struct perfmon_dev *dev;
    unsigned int fails;

    (void)state;
    dev = boot(&c, true);
    msr_model_set_host_owned(0xfULL | 0x7ULL << MSR_MODEL_FIXED_BIT);
    fails = pmu_test_selftest(dev, false);
    pmu_test_assert_selftest_line("FAIL  counter 0: instructions per "
                                  "spin iteration", "0.000");
    assert_true(fails >= 7);
}

/* ---- the self-test ----------------------------------------------------- */

/*
 * `perfmon selftest`'s hardware checks pass on a healthy PMU of every
 * version, the model's drift included, and leave the PMU as they found it.
 */
static void
test_selftest_passes(void **state)
{
    (void)state;

    for (unsigned int version = 1; version <= 5; version++) {
        struct perfmon_dev *dev = boot_version(version);

        assert_int_equal(pmu_test_selftest(dev, false), 0);
    }

    /* What a user would read (shown in the test's output). */
    pmu_test_selftest(boot_version(4), true);
}

/*
 * And it catches what it claims to: an LVT that stays masked loses the
 * second PMI, legacy writes that do not sign-extend load the wrong value,
 * global enables that do not gate let a counter count: one FAIL line each.
 */
static void
test_selftest_catches_faults(void **state)
{
    static const struct {
        unsigned int quirk;
        const char *check;
        const char *measured;
        unsigned int nr_fails;
    } cases[] = {
        /* Once masked, no PMI ever again: every wrap after the first, and
           the status bits no handler cleared. */
        { MSR_MODEL_QUIRK_LVT_STUCK, "FAIL  fixed 0: PMIs of the next wrap",
          NULL, 14 },
        /* The driver's own loads near the wrap go wrong too: the four
           general-purpose counters' PMIs (2 each) and the PMI-less wrap's
           status bit. */
        { MSR_MODEL_QUIRK_NO_SIGN_EXTEND,
          "FAIL  counter 0: legacy write of 0x80000000", "0x80000000", 10 },
        { MSR_MODEL_QUIRK_NO_GATE,
          "FAIL  fixed 0: instructions, global enable clear", NULL, 1 },
    };

    (void)state;

    for (unsigned int i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct perfmon_dev *dev = boot_version(2);
        unsigned int fails;

        msr_model_set_quirks(cases[i].quirk);
        fails = pmu_test_selftest(dev, false);
        pmu_test_assert_selftest_line(cases[i].check, cases[i].measured);

        if (fails != cases[i].nr_fails) {
            pmu_test_selftest(dev, true);
        }

        assert_int_equal(fails, cases[i].nr_fails);
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_v1),
        cmocka_unit_test(test_probe_v2_to_v5),
        cmocka_unit_test(test_probe_v5_fixed_bitmap),
        cmocka_unit_test(test_v2_unreported_fixed_counters),
        cmocka_unit_test(test_fixed_counter3_left_alone),
        cmocka_unit_test(test_probe_fixed_width_differs),
        cmocka_unit_test(test_decline_kvm_without_pmu),
        cmocka_unit_test(test_decline_tcg),
        cmocka_unit_test(test_decline_broken_counters),
        cmocka_unit_test(test_decline_faulting_msrs),
        cmocka_unit_test(test_decline_without_rdpmc),
        cmocka_unit_test(test_decline_bad_cpuid),
        cmocka_unit_test(test_generic_events_v1),
        cmocka_unit_test(test_generic_events_v2),
        cmocka_unit_test(test_generic_events_v5),
        cmocka_unit_test(test_unavailable_events),
        cmocka_unit_test(test_model_constraints),
        cmocka_unit_test(test_extra_msrs),
        cmocka_unit_test(test_raw_events),
        cmocka_unit_test(test_mode_bits),
        cmocka_unit_test(test_free_and_reuse),
        cmocka_unit_test(test_wraps_v2),
        cmocka_unit_test(test_wraps_v4_full_width),
        cmocka_unit_test(test_wraps_v1_no_global_ctrl),
        cmocka_unit_test(test_wraps_v1_full_width),
        cmocka_unit_test(test_spurious_nmi),
        cmocka_unit_test(test_spurious_nmi_v1),
        cmocka_unit_test(test_spurious_pmi_unmasks),
        cmocka_unit_test(test_late_pmi_of_stopped_counter_v1),
        cmocka_unit_test(test_restart_drops_overflow),
        cmocka_unit_test(test_unmask_window),
        cmocka_unit_test(test_rearm_loses_nothing_v2),
        cmocka_unit_test(test_rearm_loses_nothing_v4),
        cmocka_unit_test(test_skid),
        cmocka_unit_test(test_pmi_acknowledged_and_unmasked),
        cmocka_unit_test(test_write),
        cmocka_unit_test(test_cpu_init_clears_stale_state),
        cmocka_unit_test(test_polled),
        cmocka_unit_test(test_no_apic_polls),
        cmocka_unit_test(test_reference_cycles_fixed_only),
        cmocka_unit_test(test_firmware_counters_left_alone),
        cmocka_unit_test(test_firmware_counter0_busy),
        cmocka_unit_test(test_ap_with_fewer_counters),
        cmocka_unit_test(test_kvm_guest),
        cmocka_unit_test(test_selftest_host_took_counters),
        cmocka_unit_test(test_selftest_passes),
        cmocka_unit_test(test_selftest_catches_faults),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
