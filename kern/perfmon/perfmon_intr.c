/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: the overflow-interrupt callback registry
 * (perfmon_intr_register/unregister in kern/perfmon.h), for drivers that
 * must act on a PMU's overflow interrupt without owning it, and the branch
 * stack such a callback hands to the samples of the interrupt.
 *
 * The interrupt path takes no lock: it loads each entry's function pointer
 * once, with acquire ordering, and calls it if it is set.  Writers take
 * perfmon_intr_lock (alone, never from the interrupt path).  An entry goes
 * FREE -> ACTIVE (arg and handle written while fn is still NULL, then fn
 * published) -> DRAINING (fn cleared; waiting until no CPU can still be in
 * the callback) -> FREE.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/spinlock.h"
#include "kern/string.h"
#include "kern/thread.h"
#include "kern/xcall.h"

#define PERFMON_INTR_FREE           0
#define PERFMON_INTR_ACTIVE         1
#define PERFMON_INTR_DRAINING       2   /* unpublished, waiting for CPUs */

/*
 * A callback registration.  fn is published last with release ordering and
 * read once with acquire ordering by the interrupt path; arg and handle are
 * written only while fn is NULL and no CPU can be using the entry.
 */
struct perfmon_intr_entry {
    perfmon_intr_fn_t fn;
    void *arg;
    int handle;
    unsigned int state;                 /* under perfmon_intr_lock */
};

static struct spinlock perfmon_intr_lock = SPINLOCK_INITIALIZER;
static struct perfmon_intr_entry
    perfmon_intr_entries[PERFMON_MAX_INTR_CALLBACKS];

/* Makes handles of successive registrations of one entry differ. */
static unsigned int perfmon_intr_gen;   /* under perfmon_intr_lock */

/*
 * Entries not FREE, written under perfmon_intr_lock, read by the interrupt
 * path without it: while it is 0 the interrupt skips the table.  It grows
 * before an entry's fn is published and drops once the entry is FREE, so
 * a callback is never skipped while registered, only while its
 * registration or unregistration is under way.
 */
unsigned int perfmon_intr_nr_used;

/* A branch stack a callback handed over for one interrupt. */
struct perfmon_intr_branches {
    unsigned int nr;
    struct perfmon_branch entries[PERFMON_MAX_BRANCHES];
};

/*
 * The branch stacks of a CPU's overflow interrupts, one per nesting level
 * (struct perfmon_cpu's intr_depth), so that a nested interrupt's stack
 * does not replace the one of the interrupt it landed in.  Written and
 * read by that CPU's overflow interrupts only, each nested one done before
 * the one it interrupted resumes.  A level's stack is empty outside the
 * interrupts that run the callbacks, each emptying it at its end
 * (perfmon_intr_end_callbacks): one that finds no callback to run, and
 * so does not call here, finds it empty.
 */
static struct perfmon_intr_branches
    perfmon_intr_branches_cpu[CPU_MAX][PERFMON_INTR_MAX_DEPTH];

/* The calling CPU's current level's stack, in an overflow interrupt. */
static struct perfmon_intr_branches *
perfmon_intr_branches_level(unsigned int cpu)
{
    unsigned int depth = perfmon_cpu_get(cpu)->intr_depth;

    assert(depth != 0 && depth <= PERFMON_INTR_MAX_DEPTH);
    return &perfmon_intr_branches_cpu[cpu][depth - 1];
}

void
perfmon_intr_run_callbacks(struct perfmon_dev *dev, unsigned int cpu,
                           uint64_t ovf_mask, struct trap_frame *frame)
{
    assert(perfmon_intr_branches_level(cpu)->nr == 0);

    for (size_t i = 0; i < ARRAY_SIZE(perfmon_intr_entries); i++) {
        struct perfmon_intr_entry *entry = &perfmon_intr_entries[i];
        perfmon_intr_fn_t fn;

        /* One load: the pointer may be cleared at any time. */
        fn = __atomic_load_n(&entry->fn, __ATOMIC_ACQUIRE);

        if (fn != NULL) {
            fn(dev, cpu, ovf_mask, frame, entry->arg);
        }
    }
}

void
perfmon_intr_end_callbacks(unsigned int cpu)
{
    perfmon_intr_branches_level(cpu)->nr = 0;
}

void
perfmon_intr_set_branches(const struct perfmon_branch *entries,
                          unsigned int nr)
{
    struct perfmon_intr_branches *b;

    assert(!cpu_intr_enabled());
    b = perfmon_intr_branches_level(cpu_id());
    nr = MIN(nr, (unsigned int)PERFMON_MAX_BRANCHES);
    memcpy(b->entries, entries, nr * sizeof(*entries));
    b->nr = nr;
}

const struct perfmon_branch *
perfmon_intr_branches(unsigned int *nrp)
{
    struct perfmon_intr_branches *b = perfmon_intr_branches_level(cpu_id());

    *nrp = b->nr;
    return b->entries;
}

int
perfmon_intr_register(perfmon_intr_fn_t fn, void *arg)
{
    struct perfmon_intr_entry *entry;
    int handle = -ENOSPC;

    if (fn == NULL) {
        return -EINVAL;
    }

    spinlock_lock(&perfmon_intr_lock);

    for (size_t i = 0; i < ARRAY_SIZE(perfmon_intr_entries); i++) {
        entry = &perfmon_intr_entries[i];

        if (entry->state != PERFMON_INTR_FREE) {
            continue;
        }

        perfmon_intr_gen = (perfmon_intr_gen + 1) & 0xffffff;
        handle = (int)(perfmon_intr_gen * PERFMON_MAX_INTR_CALLBACKS + i);
        entry->arg = arg;
        entry->handle = handle;
        entry->state = PERFMON_INTR_ACTIVE;
        __atomic_store_n(&perfmon_intr_nr_used, perfmon_intr_nr_used + 1,
                         __ATOMIC_RELEASE);
        __atomic_store_n(&entry->fn, fn, __ATOMIC_RELEASE);
        break;
    }

    spinlock_unlock(&perfmon_intr_lock);
    return handle;
}

static void
perfmon_intr_sync_xcall(void *arg)
{
    (void)arg;
}

int
perfmon_intr_unregister(int handle)
{
    struct perfmon_intr_entry *entry;
    unsigned int nr_cpus;

    assert(cpu_intr_enabled());
    assert(thread_preempt_enabled());

    if (handle < 0) {
        return -EINVAL;
    }

    entry = &perfmon_intr_entries[handle % PERFMON_MAX_INTR_CALLBACKS];
    spinlock_lock(&perfmon_intr_lock);

    if (entry->state != PERFMON_INTR_ACTIVE || entry->handle != handle) {
        spinlock_unlock(&perfmon_intr_lock);
        return -EINVAL;
    }

    entry->state = PERFMON_INTR_DRAINING;
    __atomic_store_n(&entry->fn, NULL, __ATOMIC_SEQ_CST);
    spinlock_unlock(&perfmon_intr_lock);

    /*
     * A CPU serves an xcall (a maskable interrupt) only outside any NMI
     * handler, so once every CPU has served one, none is still inside the
     * callback or between its load of the pointer and the call.  An NMI
     * coming later is ordered after our store by the xcall's own
     * release/acquire handshake, and sees NULL.
     */
    nr_cpus = cpu_count();

    for (unsigned int i = 0; i < nr_cpus; i++) {
        xcall_call(perfmon_intr_sync_xcall, NULL, i);
    }

    spinlock_lock(&perfmon_intr_lock);
    entry->state = PERFMON_INTR_FREE;
    __atomic_store_n(&perfmon_intr_nr_used, perfmon_intr_nr_used - 1,
                     __ATOMIC_RELEASE);
    spinlock_unlock(&perfmon_intr_lock);
    return 0;
}

#ifdef TALLY_HOST_TEST
void
perfmon_intr_reset(void)
{
    spinlock_init(&perfmon_intr_lock);
    memset(perfmon_intr_entries, 0, sizeof(perfmon_intr_entries));
    memset(perfmon_intr_branches_cpu, 0, sizeof(perfmon_intr_branches_cpu));
    perfmon_intr_gen = 0;
    perfmon_intr_nr_used = 0;
}
#endif /* TALLY_HOST_TEST */
