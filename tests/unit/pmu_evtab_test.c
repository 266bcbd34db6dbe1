/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of arch/x86/pmu_evtab.c on the generated tables: the model of a
 * CPUID (stepping ranges included, the models QEMU's named CPUs report),
 * perf's CPUID strings and table names, case-insensitive names, and the
 * encodings, counters and extra MSRs the lists give for a few events
 * anyone can check in the SDM or a PPR.
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
#include "arch/x86/pmu_evtab.h"
#include "kern/perfmon_evtab.h"

static const char *
model_name(const struct perfmon_evtab_model *m)
{
    return (m == NULL) ? "(none)" : m->name;
}

static void
test_find_by_cpuid(void **state)
{
    (void)state;
    /* QEMU's Skylake-Server is 6-55-4, Cascadelake-Server 6-55-6+. */
    assert_string_equal(model_name(perfmon_evtab_find(PERFMON_EVTAB_VENDOR_INTEL,
                                                  6, 0x55, 4)), "skylakex");
    assert_string_equal(model_name(perfmon_evtab_find(PERFMON_EVTAB_VENDOR_INTEL,
                                                  6, 0x55, 7)),
                        "cascadelakex");
    assert_string_equal(model_name(perfmon_evtab_find(PERFMON_EVTAB_VENDOR_INTEL,
                                                  6, 0x6a, 0)), "icelakex");
    /* Hybrid parts: the big cores' list. */
    assert_string_equal(model_name(perfmon_evtab_find(PERFMON_EVTAB_VENDOR_INTEL,
                                                  6, 0x97, 2)),
                        "alderlake_goldencove");
    /* EPYC-Milan: 19h model 1; Genoa 19h model 11h; Zen 1 17h model 1. */
    assert_string_equal(model_name(perfmon_evtab_find(PERFMON_EVTAB_VENDOR_AMD,
                                                  0x19, 0x01, 1)), "amdzen3");
    assert_string_equal(model_name(perfmon_evtab_find(PERFMON_EVTAB_VENDOR_AMD,
                                                  0x19, 0x11, 1)), "amdzen4");
    assert_string_equal(model_name(perfmon_evtab_find(PERFMON_EVTAB_VENDOR_AMD,
                                                  0x17, 0x01, 1)), "amdzen1");
    assert_string_equal(model_name(perfmon_evtab_find(PERFMON_EVTAB_VENDOR_AMD,
                                                  0x17, 0x31, 0)), "amdzen2");
    assert_null(perfmon_evtab_find(PERFMON_EVTAB_VENDOR_INTEL, 6, 0x01, 0));
    assert_null(perfmon_evtab_find(PERFMON_EVTAB_VENDOR_AMD, 0x15, 0x01, 0));
}

static void
test_find_by_id(void **state)
{
    (void)state;
    assert_string_equal(model_name(perfmon_evtab_find_id("GenuineIntel-6-55-4")),
                        "skylakex");
    assert_string_equal(model_name(perfmon_evtab_find_id("GenuineIntel-6-55-A")),
                        "cascadelakex");
    assert_string_equal(model_name(perfmon_evtab_find_id("genuineintel-6-0x6A")),
                        "icelakex");
    assert_string_equal(model_name(perfmon_evtab_find_id("AuthenticAMD-25-1")),
                        "amdzen3");
    assert_string_equal(model_name(perfmon_evtab_find_id("AMDZEN4")), "amdzen4");
    assert_string_equal(model_name(perfmon_evtab_find_id("skylake")), "skylake");
    assert_null(perfmon_evtab_find_id(""));
    assert_null(perfmon_evtab_find_id("GenuineIntel"));
    assert_null(perfmon_evtab_find_id("GenuineIntel-6"));
    assert_null(perfmon_evtab_find_id("GenuineIntel-6-"));
    assert_null(perfmon_evtab_find_id("GenuineIntel-6-55-"));
    assert_null(perfmon_evtab_find_id("GenuineIntel-6-55-10"));
    assert_null(perfmon_evtab_find_id("GenuineIntel-6-555"));
    assert_null(perfmon_evtab_find_id("GenuineIntel-6-55x"));
    assert_null(perfmon_evtab_find_id("GenuineIntel-999-1"));
    assert_null(perfmon_evtab_find_id("CyrixInstead-6-55"));
    assert_null(perfmon_evtab_find_id("skylakexx"));
}

static void
test_select_host(void **state)
{
    (void)state;
    pmu_evtab_setup(CPU_VENDOR_AMD, 0x19, 0x01, 1);
    assert_string_equal(model_name(perfmon_evtab_host()), "amdzen3");
    pmu_evtab_setup(CPU_VENDOR_UNKNOWN, 6, 0x55, 4);
    assert_null(perfmon_evtab_host());
    pmu_evtab_setup(CPU_VENDOR_INTEL, 6, 0x55, 4);
    assert_string_equal(model_name(perfmon_evtab_host()), "skylakex");
}

static void
test_intel_events(void **state)
{
    const struct perfmon_evtab_model *m = perfmon_evtab_find_id("skylakex");
    const struct perfmon_evtab_event *ev;
    const struct perfmon_evtab_extra *extra;
    char buf[64];

    (void)state;
    /* MEM_LOAD_RETIRED.L3_MISS: D1H umask 20H, counters 0-3, PEBS. */
    ev = perfmon_evtab_lookup(m, "mem_load_retired.l3_miss");
    assert_non_null(ev);
    assert_string_equal(perfmon_evtab_name(ev), "MEM_LOAD_RETIRED.L3_MISS");
    assert_int_equal(pmu_evtab_raw(m, ev), 0x20d1);
    assert_true(ev->flags & PERFMON_EVTAB_F_PRECISE);
    assert_null(perfmon_evtab_extra(ev));
    perfmon_evtab_format_counters(ev, buf, sizeof(buf));
    assert_string_equal(buf, "0-3");
    perfmon_evtab_format(ev, buf, sizeof(buf));
    assert_string_equal(buf, "event=0xd1,umask=0x20");
    assert_string_equal(perfmon_evtab_topic(ev, buf, sizeof(buf)),
                        "MEM_LOAD_RETIRED");

    /* INST_RETIRED.ANY: fixed counter 0 only. */
    ev = perfmon_evtab_lookup(m, "INST_RETIRED.ANY");
    assert_int_equal(perfmon_evtab_counters(ev), 1ULL << PERFMON_EVTAB_FIXED_BASE);
    perfmon_evtab_format_counters(ev, buf, sizeof(buf));
    assert_string_equal(buf, "fixed 0");

    /* A counter mask with invert: cycles with no uop executed. */
    ev = perfmon_evtab_lookup(m, "UOPS_EXECUTED.STALL_CYCLES");
    assert_non_null(ev);
    assert_int_equal(pmu_evtab_raw(m, ev),
                     0xb1 | (0x01 << 8) | PMU_EVTSEL_INV | (1ULL << 24));
    perfmon_evtab_format(ev, buf, sizeof(buf));
    assert_string_equal(buf, "event=0xb1,umask=0x1,cmask=1,inv");

    /* Offcore responses: B7H/BBH with OFFCORE_RSP_0/1 (1A6H, 1A7H). */
    ev = perfmon_evtab_lookup(m, "OFFCORE_RESPONSE.ALL_DATA_RD.L3_MISS.ANY_SNOOP");
    assert_non_null(ev);
    extra = perfmon_evtab_extra(ev);
    assert_non_null(extra);
    assert_int_equal(ev->code, 0xb7);
    assert_int_equal(extra->code2, 0xbb);
    assert_int_equal(extra->msr, 0x1a6);
    assert_int_equal(extra->nr_msrs, 2);
    assert_int_not_equal(extra->value, 0);

    /* Load latency: LD_LAT at 3F6H. */
    ev = perfmon_evtab_lookup(m, "MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4");
    assert_non_null(ev);
    assert_int_equal(perfmon_evtab_extra(ev)->msr, 0x3f6);
    assert_int_equal(perfmon_evtab_extra(ev)->value, 4);

    assert_null(perfmon_evtab_lookup(m, "MEM_LOAD_RETIRED.L3_MIS"));
    assert_null(perfmon_evtab_lookup(m, "MEM_LOAD_RETIRED.L3_MISSS"));
    assert_null(perfmon_evtab_lookup(m, ""));
}

static void
test_amd_events(void **state)
{
    const struct perfmon_evtab_model *m = perfmon_evtab_find_id("amdzen3");
    const struct perfmon_evtab_event *ev;
    char buf[64];

    (void)state;
    /* PMCx0C0 retired instructions, every core counter. */
    ev = perfmon_evtab_lookup(m, "EX_RET_INSTR");
    assert_non_null(ev);
    assert_int_equal(pmu_evtab_raw(m, ev), 0xc0);
    perfmon_evtab_format_counters(ev, buf, sizeof(buf));
    assert_string_equal(buf, "0-5");
    memset(buf, 0, sizeof(buf));
    perfmon_evtab_topic(ev, buf, sizeof(buf));
    assert_string_equal(buf, "core");

    /* A 12-bit event select: PMCx1xx goes to bits 35:32. */
    m = perfmon_evtab_find_id("amdzen4");

    for (unsigned int i = 0; i < m->nr_events; i++) {
        ev = perfmon_evtab_event(m, i);

        if (ev->code > 0xff) {
            assert_int_equal(pmu_evtab_raw(m, ev),
                             PMU_AMD_RAW(ev->code, ev->umask)
                             | ((uint64_t)ev->cmask << 24)
                             | ((ev->flags & PERFMON_EVTAB_F_INV)
                                ? PMU_EVTSEL_INV : 0));
            assert_int_equal(pmu_evtab_raw(m, ev) >> 32, ev->code >> 8);
            return;
        }
    }

    fail_msg("no Zen 4 event above PMCxFF");
}

/* The catalogue registered as at boot, on a CPU no list covers. */
static int
setup(void **state)
{
    (void)state;
    pmu_evtab_setup(CPU_VENDOR_UNKNOWN, 0, 0, 0);
    return 0;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_by_cpuid),
        cmocka_unit_test(test_find_by_id),
        cmocka_unit_test(test_select_host),
        cmocka_unit_test(test_intel_events),
        cmocka_unit_test(test_amd_events),
    };

    return cmocka_run_group_tests(tests, setup, NULL);
}
