/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Cross-CPU calls.
 *
 * Each (destination, source) pair of CPUs has its own mailbox slot, so
 * calls from many CPUs to one never contend on a lock: the source fills its
 * slot in the destination's row, sets its bit in the destination's pending
 * mask (release), sends the xcall IPI and spins until the destination
 * clears the slot's pending flag (acquire).  The destination's IPI handler
 * takes the whole mask at once and runs only the slots it names, so its
 * cost does not grow with the number of CPUs.  The source spins with
 * interrupts enabled, so it keeps serving calls made to it meanwhile.
 *
 * A bit set after the handler took the mask comes with an IPI that the
 * handler's early EOI lets through: it runs again.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/trap.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "kern/init.h"
#include "kern/macros.h"
#include "kern/perfmon_region.h"
#include "kern/printf.h"
#include "kern/swevent.h"
#include "kern/syscnt.h"
#include "kern/thread.h"
#include "kern/xcall.h"

struct xcall_slot {
    xcall_fn_t fn;
    void *arg;
    bool pending;                   /* set by the source, cleared by dst */
} __aligned(CACHE_LINE_SIZE);

/* Statistics of one CPU. */
struct xcall_cpu {
    struct syscnt sc_sent;
    struct syscnt sc_received;
} __aligned(CACHE_LINE_SIZE);

/* Sources with a call published to one destination: bit src. */
struct xcall_pending {
    uint64_t srcs;
} __aligned(CACHE_LINE_SIZE);

/* xcall_slots[dst][src]. */
static struct xcall_slot xcall_slots[CPU_MAX][CPU_MAX];
static struct xcall_pending xcall_pending[CPU_MAX];
static struct xcall_cpu xcall_cpus[CPU_MAX];

_Static_assert(CPU_MAX <= 64, "xcall_pending holds one bit per CPU");

static void
xcall_run_local(xcall_fn_t fn, void *arg)
{
    unsigned long flags = cpu_intr_save();

    fn(arg);
    cpu_intr_restore(flags);
}

/* Publish a call in cpu's slot for this CPU and send the IPI. */
static void
xcall_post(xcall_fn_t fn, void *arg, unsigned int self, unsigned int cpu)
{
    struct xcall_slot *slot = &xcall_slots[cpu][self];

    assert(!slot->pending);
    slot->fn = fn;
    slot->arg = arg;
    __atomic_store_n(&slot->pending, true, __ATOMIC_RELAXED);
    __atomic_fetch_or(&xcall_pending[cpu].srcs, 1ULL << self,
                      __ATOMIC_RELEASE);
    syscnt_inc(&xcall_cpus[self].sc_sent);
    swevent_add(SWEVENT_XCALL_SENT, 1);
    lapic_ipi_send(cpu_table[cpu].apic_id, TRAP_VEC_XCALL);
}

static void
xcall_wait(unsigned int self, unsigned int cpu)
{
    while (__atomic_load_n(&xcall_slots[cpu][self].pending,
                           __ATOMIC_ACQUIRE)) {
        cpu_pause();
    }
}

/* The sender's side of a call, from its posting to the last answer. */
PERFMON_REGION_DEFINE(xcall, "xcall");

int
xcall_call_many(xcall_fn_t fn, void *arg, uint64_t cpus)
{
    unsigned int self;
    uint64_t left;

    /*
     * Interrupts on: a CPU waiting for its call keeps serving calls made to
     * it.  No spinlock held (preemption enabled): the target could be
     * spinning on that lock with interrupts off, never answering.
     */
    assert(cpu_intr_enabled());
    assert(thread_preempt_enabled());

    if (cpus == 0
        || (cpu_count() < 64 && (cpus >> cpu_count()) != 0)) {
        return -EINVAL;
    }

    thread_preempt_disable();
    self = cpu_id();
    PERFMON_REGION_BEGIN(xcall);

    for (left = cpus & ~(1ULL << self); left != 0; left &= left - 1) {
        xcall_post(fn, arg, self, (unsigned int)__builtin_ctzll(left));
    }

    if (cpus & (1ULL << self)) {
        xcall_run_local(fn, arg);
    }

    for (left = cpus & ~(1ULL << self); left != 0; left &= left - 1) {
        xcall_wait(self, (unsigned int)__builtin_ctzll(left));
    }

    PERFMON_REGION_END(xcall);
    thread_preempt_enable();
    return 0;
}

int
xcall_call(xcall_fn_t fn, void *arg, unsigned int cpu)
{
    if (cpu >= cpu_count()) {
        return -EINVAL;
    }

    return xcall_call_many(fn, arg, 1ULL << cpu);
}

static void
xcall_intr(struct trap_frame *frame)
{
    unsigned int self = cpu_id();
    uint64_t srcs;

    (void)frame;
    lapic_eoi();
    srcs = __atomic_exchange_n(&xcall_pending[self].srcs, 0,
                               __ATOMIC_ACQUIRE);

    while (srcs != 0) {
        unsigned int src = (unsigned int)__builtin_ctzll(srcs);
        struct xcall_slot *slot = &xcall_slots[self][src];

        srcs &= srcs - 1;
        assert(slot->pending);
        slot->fn(slot->arg);
        syscnt_inc(&xcall_cpus[self].sc_received);
        swevent_add(SWEVENT_XCALL, 1);
        __atomic_store_n(&slot->pending, false, __ATOMIC_RELEASE);
    }
}

/* Per-CPU counters, registered by each CPU as it comes online. */

void
xcall_setup_cpu(void)
{
    unsigned int cpu = cpu_id();

    syscnt_register_cpu(&xcall_cpus[cpu].sc_sent, "xcall_sent", cpu);
    syscnt_register_cpu(&xcall_cpus[cpu].sc_received, "xcall_received", cpu);
}

static int
xcall_setup(void)
{
    trap_register(TRAP_VEC_XCALL, xcall_intr);
    xcall_setup_cpu();
    return 0;
}

INIT_OP_DEFINE(xcall_setup, INIT_OP_DEP(lapic_setup, true),
               INIT_OP_DEP(syscnt_setup, true));
