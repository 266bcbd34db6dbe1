/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Application processor start-up, the NMI that stops the other CPUs on
 * panic, and the `cpus` shell command.
 */

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/acpi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/machine.h"
#include "arch/x86/pmap.h"
#include "arch/x86/smp.h"
#include "arch/x86/trap.h"
#include "arch/x86/tsc.h"
#include "kern/assert.h"
#include "kern/clock.h"
#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/init.h"
#include "kern/kmem.h"
#include "kern/log.h"
#include "kern/mem.h"
#include "kern/panic.h"
#include "kern/pmem.h"
#include "kern/shell.h"
#include "kern/string.h"
#include "kern/thread.h"
#include "kern/timer.h"
#include "kern/xcall.h"

extern const char trampoline_start[], trampoline_end[];
extern uint32_t tramp_cr3, tramp_apic_id, tramp_parked;
extern uint64_t tramp_stack, tramp_cpu, tramp_entry;


/*
 * tramp_apic_id when no CPU may claim the trampoline (TRAMP_NOBODY in
 * trampoline.asm): an AP that has claimed it, or one the boot CPU gave up
 * on, finds this value there.
 */
#define SMP_TRAMP_NOBODY        0xffffffffU

/* How long a CPU that claimed the trampoline gets to come online. */
#define SMP_AP_ONLINE_MS        10000

/* The trampoline's parameter block, in its copy below 1 MiB. */
static void *
smp_tramp_param(const void *symbol)
{
    return (char *)pmem_va(SMP_TRAMPOLINE_PA)
           + ((const char *)symbol - trampoline_start);
}

static void __attribute__((noreturn))
smp_ap_main(struct cpu *cpu)
{
    cpu_load(cpu);
    clock_start_cpu();                      /* sets the local APIC up */
    assert(lapic_id() == cpu->apic_id);     /* the trampoline's claim */
    thread_setup_ap();
    xcall_setup_cpu();
    __atomic_store_n(&cpu->online, true, __ATOMIC_RELEASE);
    thread_run_idle();
}

static bool
smp_wait_online(struct cpu *cpu, uint64_t ms)
{
    uint64_t end = tsc_ns() + ms * 1000000UL;

    while (tsc_ns() < end) {
        if (__atomic_load_n(&cpu->online, __ATOMIC_ACQUIRE)) {
            return true;
        }

        cpu_pause();
    }

    return false;
}

/*
 * How long an AP gets to come online before the boot CPU tries to leave it
 * out: SMP_AP_TIMEOUT_MS, or the boot option smp.timeout_ms (0 makes every
 * start race the give-up, which tests use).
 */
static uint64_t
smp_ap_timeout_ms(void)
{
    uint64_t ms;

    if (cmdline_get_u64("smp.timeout_ms", &ms) != 0 || ms > SMP_AP_ONLINE_MS) {
        return SMP_AP_TIMEOUT_MS;
    }

    return ms;
}

static int
smp_start_ap(unsigned int index, uint32_t apic_id)
{
    struct cpu *cpu = &cpu_table[index];
    void *stack;
    int error;

    memset(cpu, 0, sizeof(*cpu));
    cpu->id = index;
    cpu->apic_id = apic_id;
    error = cpu_alloc_stacks(cpu);
    stack = kmem_alloc_aligned(THREAD_STACK_SIZE, 16);

    if (error || stack == NULL) {
        return -ENOMEM;     /* small leak on a boot-time failure: acceptable */
    }

    /* The parameters first, then the id that lets this CPU claim them. */
    *(uint64_t *)smp_tramp_param(&tramp_stack) = (uint64_t)stack
                                                 + THREAD_STACK_SIZE;
    *(uint64_t *)smp_tramp_param(&tramp_cpu) = (uint64_t)cpu;
    __atomic_store_n((uint32_t *)smp_tramp_param(&tramp_apic_id), apic_id,
                     __ATOMIC_RELEASE);

    /* INIT, then two STARTUPs (SDM 9.4.4.1). */
    lapic_ipi_init(apic_id);
    tsc_delay_us(10000);
    lapic_ipi_startup(apic_id, SMP_TRAMPOLINE_PA >> 12);
    tsc_delay_us(200);
    lapic_ipi_startup(apic_id, SMP_TRAMPOLINE_PA >> 12);

    if (smp_wait_online(cpu, smp_ap_timeout_ms())) {
        return 0;
    }

    /*
     * Take the claim back.  If that fails, the CPU has claimed the
     * trampoline (it is merely slow, as under a loaded emulator) and uses
     * the stack and struct cpu given to it: wait for it, since neither
     * can be given to another CPU now.
     */
    if (__atomic_compare_exchange_n((uint32_t *)smp_tramp_param(&tramp_apic_id),
                                    &apic_id, SMP_TRAMP_NOBODY, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        /* Back to waiting for a STARTUP, where nothing wakes it. */
        lapic_ipi_init(apic_id);
        return -ETIMEDOUT;
    }

    if (!smp_wait_online(cpu, SMP_AP_ONLINE_MS)) {
        panic("smp: cpu%u (APIC id %u) started but never came online",
              index, cpu->apic_id);
    }

    return 0;
}

unsigned int
smp_nr_parked(void)
{
    return __atomic_load_n((uint32_t *)smp_tramp_param(&tramp_parked),
                           __ATOMIC_ACQUIRE);
}

static void
smp_copy_trampoline(void)
{
    memcpy(pmem_va(SMP_TRAMPOLINE_PA), trampoline_start,
           trampoline_end - trampoline_start);
    *(uint32_t *)smp_tramp_param(&tramp_cr3) = pmap_kernel_cr3();
    *(uint64_t *)smp_tramp_param(&tramp_entry) = (uint64_t)smp_ap_main;
}

static unsigned int
smp_max_cpus(void)
{
    uint64_t max;

    if (cmdline_get_u64("smp", &max) != 0 || max == 0 || max > CPU_MAX) {
        return CPU_MAX;
    }

    return max;
}

static int
smp_setup(void)
{
    unsigned int next = 1, max = smp_max_cpus();
    uint32_t self = lapic_id();

    smp_copy_trampoline();

    for (unsigned int i = 0; i < acpi_info.nr_cpus && next < max; i++) {
        uint32_t apic_id = acpi_info.cpu_apic_ids[i];
        int error;

        if (apic_id == self) {
            continue;
        }

        error = smp_start_ap(next, apic_id);

        if (error) {
            log_error("smp: cpu with APIC id %u did not start (%s), left out",
                      apic_id, error_str(error));
            continue;
        }

        cpu_set_count(++next);
    }

    pmap_drop_identity();
    log_info("smp: %u CPU%s online", cpu_count(), cpu_count() > 1 ? "s" : "");
    return 0;
}

INIT_OP_DEFINE(smp_setup, INIT_OP_DEP(acpi_setup, true),
               INIT_OP_DEP(lapic_setup, true), INIT_OP_DEP(clock_setup, true),
               INIT_OP_DEP(thread_setup, true), INIT_OP_DEP(xcall_setup, true),
               INIT_OP_DEP(mem_setup, true));

void
machine_stop_others(void)
{
    unsigned int self = cpu_id();

    trap_nmi_halt_all();

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        if (cpu != self) {
            lapic_ipi_nmi(cpu_table[cpu].apic_id);
        }
    }
}

static int
smp_cmd_cpus(int argc, char **argv)
{
    (void)argv;

    if (argc != 1) {
        kprintf("usage: cpus\n");
        return SHELL_ERR_REPORTED;
    }

    kprintf("%3s %7s %-6s %10s %-5s\n", "CPU", "APIC ID", "STATE", "TSC MHz",
            "ACTIVITY");

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        const struct cpu *c = &cpu_table[cpu];

        kprintf("%3u %7u %-6s %10lu %-5s\n", cpu, c->apic_id,
                c->online ? "online" : "off", cpu_tsc_freq() / 1000000,
                c->idle ? "idle" : "busy");
    }

    return 0;
}

SHELL_COMMAND(cpus, "cpus", "", "list the CPUs", smp_cmd_cpus);
