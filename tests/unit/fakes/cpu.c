/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fake of the processor functions host-built modules use (cpu_id(),
 * cpu_count(), the interrupt flag, the TSC and its frequency): plain
 * variables a test sets through fake_smp.h.
 */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "arch/x86/cpu.h"
#include "arch/x86/msr.h"
#include "fakes/fake_smp.h"
#include "kern/assert.h"
#include "kern/clock.h"
#include "kern/param.h"

struct cpu_info cpu_info = {
    .vendor_str = "FakeVendor", .family = 6, .model = 0x55,
};

static unsigned int fake_cpu_id;
static unsigned int fake_cpu_nr = 1;
static bool fake_cpu_intr = true;
static uint64_t fake_cpu_tsc_freq = 3000000000ULL;
static uint64_t fake_cpu_tsc;
static uint64_t fake_cpu_stalled;       /* of fake_cpu_tsc, the host's */
static uint64_t fake_cpu_ticks;         /* clock_cpu_ticks(), every CPU's */

/* The ticks follow the TSC the CPU ran (see clock_cpu_ticks() below). */
static void
fake_cpu_ticks_update(void)
{
    fake_cpu_ticks = (fake_cpu_tsc_freq == 0) ? 0
                     : fake_cpu_run_tsc() / (fake_cpu_tsc_freq / CLOCK_HZ);
}

static struct cpu fake_cpus[CPU_MAX];
static void (*fake_cpu_pause_hook)(void);

void
fake_cpu_reset(unsigned int nr_cpus)
{
    assert(nr_cpus >= 1 && nr_cpus <= CPU_MAX);
    fake_cpu_nr = nr_cpus;
    fake_cpu_id = 0;
    fake_cpu_intr = true;
    fake_cpu_tsc_freq = 3000000000ULL;
    fake_cpu_tsc = 0;
    fake_cpu_stalled = 0;
    fake_cpu_ticks_update();
    memset(fake_cpus, 0, sizeof(fake_cpus));
    fake_cpu_pause_hook = NULL;
}

void
fake_cpu_set_id(unsigned int cpu)
{
    assert(cpu < fake_cpu_nr);
    fake_cpu_id = cpu;
}

void
fake_cpu_set_intr(bool enabled)
{
    fake_cpu_intr = enabled;
}

void
fake_cpu_set_tsc_freq(uint64_t hz)
{
    fake_cpu_tsc_freq = hz;
    fake_cpu_ticks_update();
}

void
fake_cpu_advance_tsc(uint64_t cycles)
{
    fake_cpu_tsc += cycles;
    fake_cpu_ticks_update();
}

void
fake_cpu_stall(uint64_t cycles)
{
    fake_cpu_tsc += cycles;
    fake_cpu_stalled += cycles;
    fake_cpu_ticks_update();
}

uint64_t
fake_cpu_run_tsc(void)
{
    return fake_cpu_tsc - fake_cpu_stalled;
}

/*
 * kern/clock.h's per-CPU ticks: one each 1/CLOCK_HZ s of the TSC that
 * the CPU ran (not stalled), so they follow the TSC the tests move.
 */
uint64_t
clock_cpu_ticks(void)
{
    return fake_cpu_ticks;
}

const uint64_t *
clock_cpu_ticks_word(unsigned int cpu)
{
    (void)cpu;
    return &fake_cpu_ticks;
}

/* The TSC stands still unless a test moves it. */
uint64_t
cpu_rdtsc(void)
{
    return fake_cpu_tsc;
}

unsigned int
cpu_id(void)
{
    return fake_cpu_id;
}

unsigned int
cpu_count(void)
{
    return fake_cpu_nr;
}

bool
cpu_intr_enabled(void)
{
    return fake_cpu_intr;
}

/* The saved state is the "interrupts enabled" flag itself. */
unsigned long
cpu_intr_save(void)
{
    unsigned long flags = fake_cpu_intr;

    fake_cpu_intr = false;
    return flags;
}

void
cpu_intr_restore(unsigned long flags)
{
    fake_cpu_intr = flags != 0;
}

uint64_t
cpu_tsc_freq(void)
{
    return fake_cpu_tsc_freq;
}

void
cpu_pause(void)
{
    if (fake_cpu_pause_hook != NULL) {
        fake_cpu_pause_hook();
    }
}

void
fake_cpu_set_pause_hook(void (*fn)(void))
{
    fake_cpu_pause_hook = fn;
}

/* Only the fields host-built code reads are kept up to date (nmi_nesting). */
struct cpu *
cpu_self(void)
{
    return &fake_cpus[fake_cpu_id];
}

void
cpu_set_perfmon(unsigned int cpu, void *perfmon)
{
    assert(cpu < CPU_MAX);
    fake_cpus[cpu].perfmon = perfmon;
}

/*
 * RDPMC: a program that reads counters by index links its own (the
 * register model, the fake devices); this one, for the others, says the
 * core used a method no device of theirs gave.
 */
__attribute__((weak)) uint64_t
msr_rdpmc(uint32_t index)
{
    (void)index;
    assert(!"RDPMC without a device that reads by it");
    return 0;
}
