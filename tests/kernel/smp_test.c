/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel tests of SMP bring-up: every CPU the firmware lists (MADT,
 * acpi_info) came online, up to the `smp=N` boot option, with a sane
 * per-CPU area, and each one takes interrupts: an NMI IPI sent to each CPU,
 * the caller's own included, is delivered there and counted exactly.  A CPU
 * answering a start late parks in the trampoline.  Caches are on everywhere.
 */

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/acpi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/smp.h"
#include "arch/x86/trap.h"
#include "kern/cmdline.h"
#include "kern/ktest.h"
#include "kern/param.h"
#include "kern/thread.h"
#include "kern/xcall.h"
#include "tests/kernel/ktest_util.h"

#define SMP_TEST_NMI_ROUNDS     8
#define SMP_TEST_NMI_WAIT_MS    1000
#define SMP_TEST_LATE_WAIT_MS   300

/* The CPUs bring-up was asked to start: those listed, up to `smp=N`. */
static unsigned int
smp_test_cpus_expected(void)
{
    unsigned int expected = acpi_info.valid ? acpi_info.nr_cpus : 1;
    uint64_t max;

    if (cmdline_get_u64("smp", &max) == 0 && max >= 1 && max < expected) {
        expected = max;
    }

    return expected;
}

static int
smp_test_cpus_online(void)
{
    unsigned int n = cpu_count();

    KTEST_ASSERT_EQ(n, smp_test_cpus_expected());
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

/* A CPU the firmware lists that is not online (left out by smp=N). */
static bool
smp_test_find_offline(uint32_t *apic_idp)
{
    for (unsigned int i = 0; acpi_info.valid && i < acpi_info.nr_cpus; i++) {
        bool online = false;

        for (unsigned int j = 0; j < cpu_count(); j++) {
            online |= cpu_table[j].apic_id == acpi_info.cpu_apic_ids[i];
        }

        if (!online) {
            *apic_idp = acpi_info.cpu_apic_ids[i];
            return true;
        }
    }

    return false;
}

static void
smp_test_nop(void *arg)
{
    (void)arg;
}

/*
 * Start a CPU now, long after bring-up ended, as a CPU slow to answer its
 * start would run: it must find the trampoline claimed and park there.
 * Running on, it would use the last AP's stack and struct cpu, or fault
 * on the identity map that is gone, and reset the machine.
 */
static int
smp_test_late_answer_parks(void)
{
    unsigned int n = cpu_count(), parked = smp_nr_parked(), nr_parked;
    uint32_t apic_id;

    if (!smp_test_find_offline(&apic_id)) {
        ktest_skip_reason("every listed CPU is online (boot with smp=N)");
        return KTEST_SKIP;
    }

    lapic_ipi_init(apic_id);
    thread_msleep(10);
    lapic_ipi_startup(apic_id, SMP_TRAMPOLINE_PA >> 12);
    thread_msleep(1);
    lapic_ipi_startup(apic_id, SMP_TRAMPOLINE_PA >> 12);

    for (unsigned int ms = 0; ms < SMP_TEST_LATE_WAIT_MS; ms++) {
        if (smp_nr_parked() != parked) {
            break;
        }

        thread_msleep(1);
    }

    /*
     * It ran, parked, and is put back to wait for a STARTUP; the same if
     * it did not park, so that it cannot run on after the test.
     */
    nr_parked = smp_nr_parked();
    lapic_ipi_init(apic_id);
    KTEST_ASSERT_EQ(nr_parked, parked + 1);

    /* Still here, with the same CPUs, all answering. */
    KTEST_ASSERT_EQ(cpu_count(), n);

    for (unsigned int cpu = 0; cpu < n; cpu++) {
        KTEST_ASSERT_EQ(xcall_call(smp_test_nop, NULL, cpu), 0);
    }

    return KTEST_PASS;
}

KTEST_DEFINE(smp, late_answer_parks, smp_test_late_answer_parks);

static void
smp_test_read_cr0(void *arg)
{
    uint64_t *cr0s = arg;

    cr0s[cpu_id()] = cpu_get_cr0();
}

/*
 * Every CPU runs with CR0.CD and NW clear.  Both keep their value through
 * INIT, which is set at power-on unless firmware cleared them (QEMU's TCG
 * sets them at INIT, so there this fails with a trampoline that keeps
 * them); firmware may leave them set on the boot CPU too.
 */
static int
smp_test_caches_enabled(void)
{
    static uint64_t cr0s[CPU_MAX];

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        KTEST_ASSERT_EQ(xcall_call(smp_test_read_cr0, cr0s, cpu), 0);
        KTEST_ASSERT((cr0s[cpu] & (CPU_CR0_CD | CPU_CR0_NW)) == 0);
        KTEST_ASSERT(cr0s[cpu] & CPU_CR0_PG);
    }

    return KTEST_PASS;
}

KTEST_DEFINE(smp, caches_enabled, smp_test_caches_enabled);

/* NMI test state, per target CPU: written by the sender, the NMI handler. */
static volatile bool smp_test_nmi_expected[CPU_MAX];
static unsigned int smp_test_nmi_count[CPU_MAX];        /* atomic */
static unsigned int smp_test_nmi_intr_on[CPU_MAX];        /* atomic */
static bool smp_test_nmi_registered;

/* Claims the NMI only when this CPU expects one from the test. */
static bool
smp_test_nmi(void *arg, struct trap_frame *frame)
{
    unsigned int cpu = cpu_id();

    (void)arg;
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
    uint64_t deadline = ktest_deadline(SMP_TEST_NMI_WAIT_MS);

    while (__atomic_load_n(&smp_test_nmi_count[cpu], __ATOMIC_ACQUIRE)
           < count) {
        if (ktest_expired(deadline)) {
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
        trap_nmi_register(smp_test_nmi, NULL);
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
