/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel test of what a stepped NMI counts, with the boot option
 * perfmon.step=on (it skips without it): exactly the instructions its
 * handlers run, the pass of the handler chain around them a fixed number
 * (the stepping's own instructions are not counted: arch/x86/step.h).
 * An armed handler runs a loop of known length; n loops more count 2n
 * instructions more.  Each count is the smallest of a few: anything that
 * disturbs one only adds.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/step.h"
#include "arch/x86/trap.h"
#include "kern/ktest.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/thread.h"
#include "tests/kernel/ktest_util.h"

#define SNT_TRIES       3
#define SNT_WAIT        1000000

/* snt_loop(n): 2n + 2 instructions (n >= 1), its ret included. */
void snt_loop(uint64_t n);

__asm__(".pushsection .text\n"
        ".type snt_loop, @function\n"
        "snt_loop:\n\t"
        "movq %rdi, %rcx\n"
        "1:\n\t"
        "decq %rcx\n\t"
        "jnz 1b\n\t"
        "ret\n"
        ".popsection");

/* Armed: the next NMI runs snt_loop(snt_loops) in its handler. */
static bool snt_armed;                  /* atomic */
static uint64_t snt_loops;

static bool
snt_nmi_handler(void *arg, struct trap_frame *frame)
{
    (void)arg;
    (void)frame;

    if (!__atomic_exchange_n(&snt_armed, false, __ATOMIC_RELAXED)) {
        return false;
    }

    snt_loop(snt_loops);
    return true;
}

/* Step this CPU, NMI handlers too (preemption disabled by the caller). */
static void
snt_cpu_step(bool on)
{
    unsigned long flags = cpu_intr_save();

    if (on) {
        step_cpu_start(true);
    } else {
        step_cpu_stop(true);
    }

    cpu_intr_restore(flags);
}

/* The NMI instructions counted on cpu for one armed NMI of n loops. */
static uint64_t
snt_count(unsigned int cpu, uint64_t n)
{
    uint64_t best = UINT64_MAX, nmis, before, after;

    snt_loops = n;

    for (unsigned int i = 0; i < SNT_TRIES; i++) {
        nmis = ktest_syscnt_read_cpu("nmi", cpu);
        thread_preempt_disable();
        snt_cpu_step(true);
        before = step_cpu_read(true) - step_cpu_read(false);
        __atomic_store_n(&snt_armed, true, __ATOMIC_RELAXED);
        lapic_send_self_nmi();

        for (unsigned int j = 0;
             j < SNT_WAIT && ktest_syscnt_read_cpu("nmi", cpu) == nmis; j++) {
            cpu_pause();
        }

        after = step_cpu_read(true) - step_cpu_read(false);
        snt_cpu_step(false);
        thread_preempt_enable();
        best = MIN(best, after - before);
    }

    return best;
}

static int
snt_nmi_pass(void)
{
    static bool registered;
    uint64_t affinity, one, many;
    unsigned int cpu;

    if (!step_available() || perfmon_dev_find("step") == NULL) {
        ktest_skip_reason("no step device (boot with perfmon.step=on)");
        return KTEST_SKIP;
    }

    /* NMI handlers cannot be unregistered: the first run adds it. */
    if (!registered) {
        trap_nmi_register(snt_nmi_handler, NULL);
        registered = true;
    }

    affinity = ktest_pin_self(&cpu);
    one = snt_count(cpu, 1);
    many = snt_count(cpu, 1000);
    ktest_diag("one NMI: %llu instructions with 1 loop, %llu with 1000",
               (unsigned long long)one, (unsigned long long)many);
    KTEST_CHECK_EQ(many - one, 2 * 999);

out:
    __atomic_store_n(&snt_armed, false, __ATOMIC_RELAXED);
    ktest_unpin_self(affinity);
    return ktest_result();
}

KTEST_DEFINE(step, db_nmi_pass, snt_nmi_pass);
