/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: switch records (see kern/perfmon_switchrec.h).
 *
 * The watches sit in a small table that thread context changes under
 * perfmon_switchrec_lock and the switch hook reads without a lock: an
 * entry is published complete (release) before the switch test can see
 * it, and a stop removes it, then waits, with an xcall to every CPU, for
 * the hooks that may still hold it: the hook runs with interrupts
 * disabled, so a CPU that served the xcall has left it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "arch/x86/unwind.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/perfmon_ring.h"
#include "kern/perfmon_switchrec.h"
#include "kern/spinlock.h"
#include "kern/string.h"
#include "kern/swevent.h"
#include "kern/symtab.h"
#include "kern/thread.h"
#include "kern/xcall.h"

/*
 * The watches started.  Written under perfmon_switchrec_lock (thread
 * context); read by the switch hook on any CPU without it.
 */
static struct spinlock perfmon_switchrec_lock = SPINLOCK_INITIALIZER;
static struct perfmon_switchrec *perfmon_switchrecs[PERFMON_SWITCHREC_MAX];

_Static_assert(sizeof(struct perfmon_switch_rec) == 32,
               "a switch record is four words before its chain");

/* ---- starting and stopping ---------------------------------------------- */

/* The CPUs or slots of the events; false when they do not make a watch. */
static bool
perfmon_switchrec_targets(struct perfmon_switchrec *sr,
                          const struct perfmon_sbuf *sbuf,
                          struct perfmon_event *const *events,
                          unsigned int nr)
{
    bool cpus = false, threads = false;

    sr->cpus = 0;
    sr->slots = 0;

    for (unsigned int i = 0; i < nr; i++) {
        const struct perfmon_event *ev = events[i];

        if (ev == NULL || !perfmon_event_attached(ev)
            || ev->sampling == NULL || ev->sampling->sbuf != sbuf) {
            return false;
        }

        if (ev->thread != NULL) {
            threads = true;
            sr->slots |= perfmon_slot_bit(ev->slot);
        } else {
            cpus = true;
            sr->cpus |= 1ULL << ev->cpu;
        }
    }

    return nr != 0 && cpus != threads;
}

int
perfmon_switchrec_start(struct perfmon_switchrec *sr,
                        struct perfmon_sbuf *sbuf,
                        struct perfmon_event *const *events, unsigned int nr)
{
    int error = -EBUSY;

    perfmon_assert_thread_context();

    if (sr == NULL || sbuf == NULL
        || !perfmon_switchrec_targets(sr, sbuf, events, nr)) {
        return -EINVAL;
    }

    sr->sbuf = sbuf;
    sr->started = false;
    spinlock_lock(&perfmon_switchrec_lock);

    for (unsigned int i = 0; i < ARRAY_SIZE(perfmon_switchrecs); i++) {
        if (perfmon_switchrecs[i] == NULL) {
            __atomic_store_n(&perfmon_switchrecs[i], sr,
                             __ATOMIC_RELEASE);
            sr->started = true;
            error = 0;
            break;
        }
    }

    spinlock_unlock(&perfmon_switchrec_lock);

    /* From here on every switch takes the slow path and finds it. */
    if (error == 0) {
        swevent_activate(SWEVENT_CONTEXT_SWITCH);
    }

    return error;
}

static void
perfmon_switchrec_quiesce_xcall(void *arg)
{
    (void)arg;
}

void
perfmon_switchrec_stop(struct perfmon_switchrec *sr)
{
    unsigned int nr_cpus = cpu_count();

    perfmon_assert_thread_context();

    if (sr == NULL || !sr->started) {
        return;
    }

    spinlock_lock(&perfmon_switchrec_lock);

    for (unsigned int i = 0; i < ARRAY_SIZE(perfmon_switchrecs); i++) {
        if (perfmon_switchrecs[i] == sr) {
            __atomic_store_n(&perfmon_switchrecs[i], NULL,
                             __ATOMIC_RELEASE);
        }
    }

    spinlock_unlock(&perfmon_switchrec_lock);
    swevent_deactivate(SWEVENT_CONTEXT_SWITCH);
    sr->started = false;

    /* No hook on any CPU still holds sr once each has served a call. */
    xcall_call_many(perfmon_switchrec_quiesce_xcall, NULL,
                    (nr_cpus >= 64) ? UINT64_MAX : (1ULL << nr_cpus) - 1);
}

/* ---- writing (the switch hook) ------------------------------------------ */

/*
 * The callers of the thread leaving, from this function's frame (it is
 * never inlined, so its frame is its own): the hook, the scheduler, and
 * what called into it.
 */
static unsigned int __attribute__((noinline))
perfmon_switchrec_callchain(struct thread *prev, uint64_t *ips,
                            unsigned int max)
{
    struct unwind_stack stack;
    struct unwind_env env = {
        .stacks = &stack,
        .nr_stacks = 1,
    };

    if (!thread_stack_bounds(prev, &stack.lo, &stack.hi)) {
        return 0;
    }

    symtab_unwind_env(&env);
    return unwind_fp(&env, (uint64_t)(uintptr_t)__builtin_frame_address(0),
                     (uint64_t)(uintptr_t)perfmon_switchrec_callchain, ips,
                     max);
}

/*
 * One record into the ring of this CPU in sr's buffer; the time is taken
 * once the room is reserved, so that a sample an NMI writes meanwhile
 * comes after it in the ring and in time.
 */
static void
perfmon_switchrec_put(const struct perfmon_switchrec *sr, unsigned int cpu,
                      uint32_t misc, struct thread *self,
                      struct thread *other, const uint64_t *ips,
                      unsigned int nr_ips)
{
    struct perfmon_ring *ring = perfmon_sbuf_ring(sr->sbuf, cpu);
    struct perfmon_switch_rec rec;
    struct perfmon_ring_txn txn;

    if (ring == NULL
        || !perfmon_ring_begin(ring, PERFMON_REC_SWITCH, misc,
                               sizeof(rec) - sizeof(rec.hdr)
                               + nr_ips * sizeof(*ips), &txn)) {
        return;
    }

    rec.tid = thread_id(self);
    rec.other = thread_id(other);
    rec.time_ns = tsc_cycles_to_ns(cpu_rdtsc());
    rec.cpu = cpu;
    rec.nr_ips = nr_ips;
    perfmon_ring_put(ring, &txn, &rec.tid, sizeof(rec) - sizeof(rec.hdr));

    /* An IN record has no chain (and no array to copy from). */
    if (nr_ips != 0) {
        perfmon_ring_put(ring, &txn, ips, nr_ips * sizeof(*ips));
    }

    perfmon_ring_commit(ring, &txn);
}

void
perfmon_switchrec_write(struct thread *prev, struct thread *next,
                        bool preempted)
{
    uint64_t prev_mask = thread_get_perfmon_td(prev)->active_mask;
    uint64_t next_mask = thread_get_perfmon_td(next)->active_mask;
    uint32_t out = PERFMON_SWITCH_OUT | (preempted ? PERFMON_SWITCH_PREEMPT
                                                   : 0);
    unsigned int cpu = cpu_id(), nr_ips = 0;
    uint64_t ips[PERFMON_SWITCH_MAX_IPS];
    bool chained = false;

    assert(!cpu_intr_enabled());
    assert(!thread_preempt_enabled());

    for (unsigned int i = 0; i < ARRAY_SIZE(perfmon_switchrecs); i++) {
        const struct perfmon_switchrec *sr =
            __atomic_load_n(&perfmon_switchrecs[i], __ATOMIC_ACQUIRE);
        bool all;

        if (sr == NULL) {
            continue;
        }

        all = (sr->cpus & (1ULL << cpu)) != 0;

        if (all || (prev_mask & sr->slots)) {
            if (!chained) {
                nr_ips = perfmon_switchrec_callchain(prev, ips,
                                                     ARRAY_SIZE(ips));
                chained = true;
            }

            perfmon_switchrec_put(sr, cpu, out, prev, next, ips, nr_ips);
        }

        if (all || (next_mask & sr->slots)) {
            perfmon_switchrec_put(sr, cpu, 0, next, prev, NULL, 0);
        }
    }
}

#ifdef TALLY_HOST_TEST
void
perfmon_switchrec_reset(void)
{
    for (unsigned int i = 0; i < ARRAY_SIZE(perfmon_switchrecs); i++) {
        if (perfmon_switchrecs[i] != NULL) {
            perfmon_switchrecs[i] = NULL;
            swevent_deactivate(SWEVENT_CONTEXT_SWITCH);
        }
    }
}
#endif
