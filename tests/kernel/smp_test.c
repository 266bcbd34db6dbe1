/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel tests of SMP bring-up: every CPU the firmware lists (MADT,
 * acpi_info) came online, with a sane per-CPU area, and each one takes
 * interrupts: an NMI IPI sent to each CPU, the caller's own included, is
 * delivered there and counted exactly.
 */

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/acpi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/trap.h"
#include "kern/clock.h"
#include "kern/ktest.h"
#include "kern/param.h"
#include "kern/thread.h"

#define SMP_TEST_NMI_ROUNDS     8
#define SMP_TEST_NMI_WAIT_MS    1000

static int
smp_test_cpus_online(void)
{
    unsigned int n = cpu_count(), expected;

    expected = acpi_info.valid ? acpi_info.nr_cpus : 1;
    KTEST_ASSERT_EQ(n, expected);
    KTEST_ASSERT(n >= 1 && n <= CPU_MAX);

    for (unsigned int i = 0; i < n; i++) {
        KTEST_ASSERT(cpu_table[i].online);
        KTEST_ASSERT_EQ(cpu_table[i].id, i);
        KTEST_ASSERT(cpu_table[i].self == &cpu_table[i]);

        /* APIC ids are distinct and are those the MADT lists. */
        bool listed = !acpi_info.valid;

        for (unsigned int j = 0; j < acpi_info.nr_cpus; j++) {
            listed |= acpi_info.cpu_apic_ids[j] == cpu_table[i].apic_id;
        }

        KTEST_ASSERT(listed);

        for (unsigned int j = 0; j < i; j++) {
            KTEST_ASSERT(cpu_table[j].apic_id != cpu_table[i].apic_id);
        }
    }

    for (unsigned int i = n; i < CPU_MAX; i++) {
        KTEST_ASSERT(!cpu_table[i].online);
    }

    /* This CPU's own view of itself. */
    thread_preempt_disable();
    unsigned int self = cpu_id();
    bool ok = self < n && cpu_self() == &cpu_table[self];
    thread_preempt_enable();
    KTEST_ASSERT(ok);
    return KTEST_PASS;
}

KTEST_DEFINE(smp, cpus_online, smp_test_cpus_online);

/* NMI test state, per target CPU: written by the sender, the NMI handler. */
static volatile bool smp_test_nmi_expected[CPU_MAX];
static unsigned int smp_test_nmi_count[CPU_MAX];        /* atomic */
static unsigned int smp_test_nmi_intr_on[CPU_MAX];        /* atomic */
static bool smp_test_nmi_registered;

/* Claims the NMI only when this CPU expects one from the test. */
static bool
smp_test_nmi(struct trap_frame *frame)
{
    unsigned int cpu = cpu_id();

    (void)frame;

    if (!smp_test_nmi_expected[cpu]) {
        return false;
    }

    /* Interrupts stay masked in NMI context. */
    if (cpu_intr_enabled()) {
        __atomic_fetch_add(&smp_test_nmi_intr_on[cpu], 1, __ATOMIC_RELAXED);
    }

    __atomic_fetch_add(&smp_test_nmi_count[cpu], 1, __ATOMIC_RELEASE);
    return true;
}

static bool
smp_test_nmi_wait(unsigned int cpu, unsigned int count)
{
    uint64_t deadline = clock_get_time()
                        + clock_ticks_from_ms(SMP_TEST_NMI_WAIT_MS);

    while (__atomic_load_n(&smp_test_nmi_count[cpu], __ATOMIC_ACQUIRE)
           < count) {
        if (clock_get_time() > deadline) {
            return false;
        }

        cpu_pause();
    }

    return true;
}

static int
smp_test_nmi_ipi(void)
{
    unsigned int n = cpu_count();
    uint64_t unclaimed;

    if (!smp_test_nmi_registered) {
        smp_test_nmi_registered = true;
        trap_nmi_register(smp_test_nmi);
    }

    for (unsigned int cpu = 0; cpu < n; cpu++) {
        __atomic_store_n(&smp_test_nmi_count[cpu], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&smp_test_nmi_intr_on[cpu], 0, __ATOMIC_RELAXED);
    }

    unclaimed = trap_nr_unclaimed_nmis();

    for (unsigned int cpu = 0; cpu < n; cpu++) {
        smp_test_nmi_expected[cpu] = true;
        __atomic_thread_fence(__ATOMIC_SEQ_CST);

        for (unsigned int i = 1; i <= SMP_TEST_NMI_ROUNDS; i++) {
            lapic_ipi_nmi(cpu_table[cpu].apic_id);

            if (!smp_test_nmi_wait(cpu, i)) {
                smp_test_nmi_expected[cpu] = false;
                ktest_diag("cpu%u: NMI %u of %u not delivered", cpu, i,
                           SMP_TEST_NMI_ROUNDS);
                return KTEST_FAIL;
            }
        }

        /* A little time for a duplicate to show up before counting. */
        thread_msleep(2);
        smp_test_nmi_expected[cpu] = false;
    }

    for (unsigned int cpu = 0; cpu < n; cpu++) {
        KTEST_ASSERT_EQ(__atomic_load_n(&smp_test_nmi_count[cpu],
                                        __ATOMIC_ACQUIRE),
                        SMP_TEST_NMI_ROUNDS);
        KTEST_ASSERT_EQ(smp_test_nmi_intr_on[cpu], 0);
    }

    /* Each NMI was claimed, by our handler on the CPU it was sent to. */
    KTEST_ASSERT_EQ(trap_nr_unclaimed_nmis(), unclaimed);
    return KTEST_PASS;
}

KTEST_DEFINE(smp, nmi_ipi_each_cpu, smp_test_nmi_ipi);
