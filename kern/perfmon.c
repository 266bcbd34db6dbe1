/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: the device table, the global counter
 * allocator, the per-CPU and per-thread counter state, events, overflow
 * handling (interrupt or poll timer) and the overflow-interrupt callback
 * registry.
 *
 * Three levels of counter state:
 *
 *   - global (struct perfmon_pmc): one per counter slot, allocated to a raw
 *     event and reference counted by the events using it;
 *   - per CPU (struct perfmon_cpu_pmc): how many users need the counter
 *     running on this CPU, the last raw value read and a 64-bit value that
 *     only grows while the counter runs there;
 *   - per thread (struct perfmon_td_pmc, in kern/perfmon_types.h): the
 *     thread's accumulated count, plus a snapshot of the per-CPU value while
 *     loaded.
 *
 * An event remembers the thread or CPU value when it was attached; its
 * count is the difference.  So several events can share one counter, on
 * CPUs and threads at once.
 *
 * Lock order, outermost first:
 *
 *   event                  owned by its caller: no lock (see perfmon.h)
 *     thread perfmon state thread_call(): interrupts disabled on the CPU
 *                          running the thread, or its run queue locked
 *       run queue lock     kern/thread.c (the context switch hook)
 *         per-CPU PMU      interrupts disabled on that CPU; against the
 *                          NMI on the same CPU, the busy flag below
 *
 *   perfmon_lock           device table and counter allocator: taken alone,
 *                          in thread context, never held across an xcall,
 *                          thread_call or timer call
 *   perfmon_intr_lock      callback registry writers: taken alone, and
 *                          never by the interrupt path
 *
 * Nothing reached from an overflow interrupt (NMI) takes a lock.  Because
 * disabling interrupts does not hold an NMI off, code touching the per-CPU
 * PMU sets its busy flag first; an overflow NMI that finds it set only
 * records which counters overflowed in the pending mask, and the interrupted
 * code folds them when it clears the flag.
 *
 * Reads of a counter running on the caller's CPU (a CPU event of that CPU,
 * the calling thread's own event) take none of this: with preemption
 * disabled they compute the count from the per-CPU state and a raw read,
 * writing nothing, and retry when the state's generation changed under
 * them (struct perfmon_cpu).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/clock.h"
#include "kern/error.h"
#include "kern/init.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/spinlock.h"
#include "kern/string.h"
#include "kern/syscnt.h"
#include "kern/thread.h"
#include "kern/timer.h"
#include "kern/xcall.h"

/*
 * Poll interval of a device without overflow interrupt: the time the
 * counter takes to wrap at PERFMON_POLL_RATE events per CPU cycle (more than
 * any x86 event reaches), divided by PERFMON_POLL_MARGIN, kept within
 * PERFMON_POLL_MIN_MS..PERFMON_POLL_MAX_MS.  Before the TSC is calibrated,
 * PERFMON_POLL_FREQ_DEFAULT stands for the CPU frequency.
 */
#define PERFMON_POLL_RATE           16
#define PERFMON_POLL_MARGIN         4
#define PERFMON_POLL_MIN_MS         20
#define PERFMON_POLL_MAX_MS         10000
#define PERFMON_POLL_FREQ_DEFAULT   5000000000ULL

/* Local reads fold past 1/16 of a period (perfmon_cpu_pmc_peek). */
#define PERFMON_PEEK_SHIFT          4

#define PERFMON_DEV_SLOT_MASK       ((1ULL << PERFMON_DEV_MAX_PMCS) - 1)

/* Event states; anything else is an event never initialised. */
#define PERFMON_EVENT_IDLE          0x5e1d      /* initialised or detached */
#define PERFMON_EVENT_THREAD        0x5e1e
#define PERFMON_EVENT_CPU           0x5e1f

/* Callback registry entry states. */
#define PERFMON_INTR_FREE           0
#define PERFMON_INTR_ACTIVE         1
#define PERFMON_INTR_DRAINING       2   /* unpublished, waiting for CPUs */

/*
 * A counter slot, under perfmon_lock.  raw_event, flags and hw_id are
 * written before the slot is used on any CPU and stay fixed while nr_refs
 * is not zero, so interrupt code reads them without the lock.
 */
struct perfmon_pmc {
    unsigned int nr_refs;               /* events using the slot */
    unsigned int hw_id;
    uint64_t raw_event;
    unsigned int flags;                 /* PERFMON_EF_MODE bits */
    struct perfmon_event *users;        /* list through next_user */
};

/*
 * A counter slot on one CPU.  nr_refs counts the CPU events and loaded
 * threads needing the counter to run here.  value grows by the difference
 * between raw reads, taken modulo 2^width.  wrap_seen: a plain update saw
 * the raw value go backwards, so the overflow interrupt of that wrap must
 * not add a period again.
 */
struct perfmon_cpu_pmc {
    unsigned int nr_refs;
    unsigned int hw_id;
    uint64_t prev;
    uint64_t value;
    bool wrap_seen;
};

/*
 * Per-CPU PMU state, changed by its own CPU only, with interrupts disabled
 * (xcalls, thread_call, the context switch hook, the overflow interrupt).
 * active_mask (slots with nr_refs > 0) is also read by the poll timer on
 * other CPUs, as a hint.
 *
 * gen grows by one in every section that may change the state (see
 * perfmon_cpu_enter and the overflow interrupt).  It lets thread context
 * on the same CPU read the state without disabling interrupts: such a
 * section, when it interrupts the reader, completes before the reader
 * resumes, so an unchanged gen across the reads means nothing changed
 * under them (see perfmon_event_read_local).
 */
struct perfmon_cpu {
    bool busy;
    unsigned long gen;
    uint64_t pending;                   /* slots, set by the NMI while busy */
    uint64_t active_mask;
    struct syscnt nr_overflows;
    struct syscnt nr_intrs;
    struct syscnt nr_polls;
    struct perfmon_cpu_pmc pmcs[PERFMON_MAX_PMCS];
} __aligned(CACHE_LINE_SIZE);

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

/* Arguments and results of the thread_call() and xcall functions. */
struct perfmon_call {
    struct perfmon_event *event;
    uint64_t result;
};

static struct spinlock perfmon_lock = SPINLOCK_INITIALIZER;

/* Attached thread events, under perfmon_lock (see perfmon_set_switch_hook). */
static unsigned int perfmon_nr_thread_events;
static struct perfmon_dev *perfmon_devs[PERFMON_MAX_DEVS];
static unsigned int perfmon_nr_devs_;   /* published with release */
static struct perfmon_pmc perfmon_pmcs[PERFMON_MAX_PMCS];
static unsigned int perfmon_dev_nr_used[PERFMON_MAX_DEVS];
static struct timer perfmon_poll_timers[PERFMON_MAX_DEVS];
static bool perfmon_poll_armed[PERFMON_MAX_DEVS];
static bool perfmon_ready;

static struct perfmon_cpu perfmon_cpus[CPU_MAX];

static struct spinlock perfmon_intr_lock = SPINLOCK_INITIALIZER;
static struct perfmon_intr_entry
    perfmon_intr_entries[PERFMON_MAX_INTR_CALLBACKS];
static unsigned int perfmon_intr_gen;

/* Generic event names; the first name of an id is its canonical one. */
static const struct {
    const char *name;
    unsigned int id;
} perfmon_event_names[] = {
    { "cycles", PERFMON_EV_CYCLE },
    { "cpu-cycles", PERFMON_EV_CYCLE },
    { "ref-cycles", PERFMON_EV_REF_CYCLE },
    { "instructions", PERFMON_EV_INSTRUCTION },
    { "cache-references", PERFMON_EV_CACHE_REF },
    { "cache-misses", PERFMON_EV_CACHE_MISS },
    { "branches", PERFMON_EV_BRANCH },
    { "branch-instructions", PERFMON_EV_BRANCH },
    { "branch-misses", PERFMON_EV_BRANCH_MISS },
    { "task-clock", PERFMON_EV_TASK_CLOCK },
    { "cpu-clock", PERFMON_EV_TASK_CLOCK },
    { "context-switches", PERFMON_EV_CONTEXT_SWITCH },
    { "cs", PERFMON_EV_CONTEXT_SWITCH },
    { "cpu-migrations", PERFMON_EV_MIGRATION },
    { "migrations", PERFMON_EV_MIGRATION },
    { "interrupts", PERFMON_EV_INTERRUPT },
    { "xcalls", PERFMON_EV_XCALL },
    { "nmis", PERFMON_EV_NMI },
    { "test", PERFMON_EV_TEST },
};

/* ---- helpers ------------------------------------------------------------ */

static uint64_t
perfmon_width_mask(unsigned int width)
{
    return (width >= 64) ? UINT64_MAX : (1ULL << width) - 1;
}

static uint64_t
perfmon_slot_bit(unsigned int slot)
{
    return 1ULL << slot;
}

static uint64_t
perfmon_dev_slots(const struct perfmon_dev *dev)
{
    return PERFMON_DEV_SLOT_MASK << (dev->index * PERFMON_DEV_MAX_PMCS);
}

static struct perfmon_dev *
perfmon_slot_dev(unsigned int slot)
{
    return perfmon_devs[slot / PERFMON_DEV_MAX_PMCS];
}

static unsigned int
perfmon_nr_devs_load(void)
{
    return __atomic_load_n(&perfmon_nr_devs_, __ATOMIC_ACQUIRE);
}

static bool
perfmon_dev_is_registered(const struct perfmon_dev *dev)
{
    unsigned int nr = perfmon_nr_devs_load();

    return dev != NULL && dev->index < nr && perfmon_devs[dev->index] == dev;
}

/* Inline: it sits on the read path, where a call shows in perfmon bench. */
static inline __attribute__((always_inline)) void
perfmon_assert_thread_context(void)
{
    assert(cpu_intr_enabled());
    assert(thread_preempt_enabled());
}

/*
 * The poll interval derived from a counter width and the CPU frequency
 * (see PERFMON_POLL_*).
 */
static unsigned int
perfmon_poll_ms_compute(unsigned int width, uint64_t freq)
{
    uint64_t per_ms, wrap_ms;

    if (width >= 64) {
        return PERFMON_POLL_MAX_MS;
    }

    if (freq == 0) {
        freq = PERFMON_POLL_FREQ_DEFAULT;
    }

    per_ms = MAX(freq / 1000, 1) * PERFMON_POLL_RATE;
    wrap_ms = (1ULL << width) / per_ms / PERFMON_POLL_MARGIN;
    return (unsigned int)MIN(MAX(wrap_ms, PERFMON_POLL_MIN_MS),
                             PERFMON_POLL_MAX_MS);
}

/* Register a per-CPU counter named prefix followed by the CPU number. */
static void
perfmon_register_syscnt(struct syscnt *syscnt, const char *prefix,
                        unsigned int cpu)
{
    char name[SYSCNT_NAME_SIZE], digits[12];
    size_t len = 0;
    int i = 0;

    do {
        digits[i++] = (char)('0' + cpu % 10);
        cpu /= 10;
    } while (cpu != 0);

    while (prefix[len] != '\0' && len + i < sizeof(name) - 1) {
        name[len] = prefix[len];
        len++;
    }

    while (i > 0) {
        name[len++] = digits[--i];
    }

    name[len] = '\0';
    syscnt_register(syscnt, name);
}

/* ---- per-CPU PMU (interrupts disabled) ---------------------------------- */

static struct perfmon_cpu *
perfmon_cpu_get(unsigned int cpu)
{
    assert(cpu < CPU_MAX);
    return &perfmon_cpus[cpu];
}

/*
 * Fold the counter of slot into its 64-bit value.  ovf: the device's
 * overflow interrupt says the counter wrapped since the last interrupt
 * for it.  That settles the one case a difference cannot see, a wrap after
 * which the counter already went past its previous value (interrupt
 * latency).
 *
 * An overflow NMI for the slot that lands in this section leaves its bit
 * in cpu->pending: taken before the read, it applies to this read; set
 * during the read, it makes us read again, so that a user taking the value
 * just after (a thread being switched out, say) does not lose the wrap.
 */
__hot_path static void
perfmon_cpu_pmc_update(struct perfmon_cpu *cpu, unsigned int slot, bool ovf)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    const struct perfmon_dev *dev = perfmon_slot_dev(slot);
    uint64_t mask = perfmon_width_mask(dev->width);
    uint64_t bit = perfmon_slot_bit(slot);
    uint64_t raw, delta;
    bool wrapped;

    do {
        if (READ_ONCE(cpu->pending) & bit) {
            __atomic_fetch_and(&cpu->pending, ~bit, __ATOMIC_RELAXED);
            ovf = true;
        }

        barrier();
        raw = dev->ops->read(pmc->hw_id) & mask;
        barrier();
        delta = (raw - pmc->prev) & mask;
        wrapped = raw < pmc->prev;

        if (ovf) {
            if (!wrapped && !pmc->wrap_seen) {
                delta += mask + 1;      /* 0 at width 64: a no-op mod 2^64 */
                wrapped = true;
            }

            pmc->wrap_seen = false;
        } else if (wrapped) {
            pmc->wrap_seen = true;
        }

        if (wrapped) {
            syscnt_inc(&cpu->nr_overflows);
        }

        pmc->value += delta;
        pmc->prev = raw;
        ovf = false;
    } while (READ_ONCE(cpu->pending) & bit);
}

__hot_path static void
perfmon_cpu_fold(struct perfmon_cpu *cpu, uint64_t slots, bool ovf)
{
    slots &= cpu->active_mask;

    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        slots &= slots - 1;
        perfmon_cpu_pmc_update(cpu, slot, ovf);
    }
}

/*
 * Enter and leave a section touching the local CPU's PMU state.  See the
 * top of the file for the busy flag; the NMI runs on this CPU, so compiler
 * barriers order the flag against the state.
 */
__hot_path static struct perfmon_cpu *
perfmon_cpu_enter(void)
{
    struct perfmon_cpu *cpu;

    assert(!cpu_intr_enabled());
    cpu = perfmon_cpu_get(cpu_id());
    assert(!cpu->busy);
    WRITE_ONCE(cpu->busy, true);
    WRITE_ONCE(cpu->gen, cpu->gen + 1);
    barrier();
    return cpu;
}

__hot_path static void
perfmon_cpu_leave(struct perfmon_cpu *cpu)
{
    barrier();
    WRITE_ONCE(cpu->busy, false);
    barrier();

    while (READ_ONCE(cpu->pending) != 0) {
        uint64_t pending;

        WRITE_ONCE(cpu->busy, true);
        barrier();
        pending = __atomic_exchange_n(&cpu->pending, 0, __ATOMIC_RELAXED);
        perfmon_cpu_fold(cpu, pending, true);
        barrier();
        WRITE_ONCE(cpu->busy, false);
        barrier();
    }
}

/* Start counting slot on this CPU for one more user. */
__hot_path static void
perfmon_cpu_pmc_ref(struct perfmon_cpu *cpu, unsigned int slot)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    const struct perfmon_pmc *gpmc = &perfmon_pmcs[slot];
    const struct perfmon_dev *dev;

    if (pmc->nr_refs++ != 0) {
        perfmon_cpu_pmc_update(cpu, slot, false);
        return;
    }

    assert(gpmc->nr_refs != 0);
    dev = perfmon_slot_dev(slot);
    pmc->hw_id = gpmc->hw_id;
    dev->ops->start(gpmc->hw_id, gpmc->raw_event, gpmc->flags);
    pmc->prev = dev->ops->read(gpmc->hw_id) & perfmon_width_mask(dev->width);
    pmc->wrap_seen = false;
    WRITE_ONCE(cpu->active_mask, cpu->active_mask | perfmon_slot_bit(slot));
}

/* Drop a user of slot on this CPU; the caller updated the value first. */
__hot_path static void
perfmon_cpu_pmc_unref(struct perfmon_cpu *cpu, unsigned int slot)
{
    struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];

    assert(pmc->nr_refs != 0);

    if (--pmc->nr_refs == 0) {
        WRITE_ONCE(cpu->active_mask,
                   cpu->active_mask & ~perfmon_slot_bit(slot));
        perfmon_slot_dev(slot)->ops->stop(pmc->hw_id);
    }
}

/* ---- per-thread state --------------------------------------------------- */

void
perfmon_td_init(struct perfmon_td *td)
{
    memset(td, 0, sizeof(*td));
}

/* Load slot of a thread running on this CPU (entered). */
__hot_path static void
perfmon_td_pmc_load(struct perfmon_td *td, struct perfmon_cpu *cpu,
                    unsigned int slot)
{
    perfmon_cpu_pmc_ref(cpu, slot);
    td->pmcs[slot].cpu_snapshot = cpu->pmcs[slot].value;
    td->loaded_mask |= perfmon_slot_bit(slot);
}

/* Fold what a loaded slot counted since the last fold into the thread. */
__hot_path static void
perfmon_td_pmc_sync(struct perfmon_td *td, struct perfmon_cpu *cpu,
                    unsigned int slot)
{
    struct perfmon_td_pmc *tpmc = &td->pmcs[slot];
    uint64_t value;

    perfmon_cpu_pmc_update(cpu, slot, false);
    value = cpu->pmcs[slot].value;
    tpmc->value += value - tpmc->cpu_snapshot;
    tpmc->cpu_snapshot = value;
}

/*
 * A context switch from prev to next on this CPU, in one section.  A slot
 * both threads count keeps running: its CPU reference passes from prev to
 * next, so the counter is read once and neither stopped nor restarted.
 */
__hot_path void
perfmon_td_switch_slow(struct perfmon_td *prev, struct perfmon_td *next)
{
    struct perfmon_cpu *cpu;
    uint64_t kept, slots;

    assert(!thread_preempt_enabled());
    assert(next->loaded_mask == 0);
    cpu = perfmon_cpu_enter();
    assert(prev->loaded_mask == 0 || prev->cpu == cpu_id());
    kept = prev->loaded_mask & next->active_mask;
    slots = prev->loaded_mask;

    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        slots &= slots - 1;
        perfmon_td_pmc_sync(prev, cpu, slot);

        if (!(kept & perfmon_slot_bit(slot))) {
            perfmon_cpu_pmc_unref(cpu, slot);
        }
    }

    prev->loaded_mask = 0;
    next->cpu = cpu_id();
    slots = next->active_mask;

    while (slots != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(slots);

        slots &= slots - 1;

        if (kept & perfmon_slot_bit(slot)) {
            next->pmcs[slot].cpu_snapshot = cpu->pmcs[slot].value;
            next->loaded_mask |= perfmon_slot_bit(slot);
        } else {
            perfmon_td_pmc_load(next, cpu, slot);
        }
    }

    perfmon_cpu_leave(cpu);
}

/*
 * The thread's count on slot, up to date.  When running, the caller runs on
 * the thread's CPU with the PMU entered (cpu not NULL), and then every
 * active slot of the thread is loaded here.
 */
static uint64_t
perfmon_td_pmc_read(struct perfmon_td *td, struct perfmon_cpu *cpu,
                    unsigned int slot)
{
    if (cpu != NULL) {
        assert(td->loaded_mask == td->active_mask);
        assert(td->cpu == cpu_id());
        perfmon_td_pmc_sync(td, cpu, slot);
    } else {
        assert(td->loaded_mask == 0);
    }

    return td->pmcs[slot].value;
}

/* thread_call() functions. */

static void
perfmon_td_attach_fn(struct thread *thread, bool running, void *arg)
{
    struct perfmon_call *call = arg;
    struct perfmon_td *td = thread_get_perfmon_td(thread);
    unsigned int slot = call->event->slot;
    struct perfmon_td_pmc *tpmc = &td->pmcs[slot];
    struct perfmon_cpu *cpu = running ? perfmon_cpu_enter() : NULL;

    if (tpmc->nr_refs++ == 0) {
        td->active_mask |= perfmon_slot_bit(slot);

        if (running) {
            /* A thread without events was not loaded at its switch in. */
            if (td->loaded_mask == 0) {
                td->cpu = cpu_id();
            }

            perfmon_td_pmc_load(td, cpu, slot);
        }
    }

    call->event->start = perfmon_td_pmc_read(td, cpu, slot);

    if (cpu != NULL) {
        perfmon_cpu_leave(cpu);
    }
}

static void
perfmon_td_read_fn(struct thread *thread, bool running, void *arg)
{
    struct perfmon_call *call = arg;
    struct perfmon_td *td = thread_get_perfmon_td(thread);
    struct perfmon_cpu *cpu = running ? perfmon_cpu_enter() : NULL;

    call->result = perfmon_td_pmc_read(td, cpu, call->event->slot);

    if (cpu != NULL) {
        perfmon_cpu_leave(cpu);
    }
}

static void
perfmon_td_detach_fn(struct thread *thread, bool running, void *arg)
{
    struct perfmon_call *call = arg;
    struct perfmon_td *td = thread_get_perfmon_td(thread);
    unsigned int slot = call->event->slot;
    struct perfmon_td_pmc *tpmc = &td->pmcs[slot];
    struct perfmon_cpu *cpu = running ? perfmon_cpu_enter() : NULL;

    call->result = perfmon_td_pmc_read(td, cpu, slot);
    assert(tpmc->nr_refs != 0);

    if (--tpmc->nr_refs == 0) {
        if (running) {
            perfmon_cpu_pmc_unref(cpu, slot);
            td->loaded_mask &= ~perfmon_slot_bit(slot);
        }

        td->active_mask &= ~perfmon_slot_bit(slot);
    }

    if (cpu != NULL) {
        perfmon_cpu_leave(cpu);
    }
}

/* xcall functions for CPU events, on the event's CPU. */

static void
perfmon_cpu_attach_xcall(void *arg)
{
    struct perfmon_call *call = arg;
    struct perfmon_cpu *cpu = perfmon_cpu_enter();
    unsigned int slot = call->event->slot;

    perfmon_cpu_pmc_ref(cpu, slot);
    call->event->start = cpu->pmcs[slot].value;
    perfmon_cpu_leave(cpu);
}

static void
perfmon_cpu_read_xcall(void *arg)
{
    struct perfmon_call *call = arg;
    struct perfmon_cpu *cpu = perfmon_cpu_enter();
    unsigned int slot = call->event->slot;

    perfmon_cpu_pmc_update(cpu, slot, false);
    call->result = cpu->pmcs[slot].value;
    perfmon_cpu_leave(cpu);
}

static void
perfmon_cpu_detach_xcall(void *arg)
{
    struct perfmon_call *call = arg;
    struct perfmon_cpu *cpu = perfmon_cpu_enter();
    unsigned int slot = call->event->slot;

    perfmon_cpu_pmc_update(cpu, slot, false);
    call->result = cpu->pmcs[slot].value;
    perfmon_cpu_pmc_unref(cpu, slot);
    perfmon_cpu_leave(cpu);
}

/* ---- poll timer --------------------------------------------------------- */

static void
perfmon_poll_xcall(void *arg)
{
    const struct perfmon_dev *dev = arg;
    struct perfmon_cpu *cpu = perfmon_cpu_enter();

    perfmon_cpu_fold(cpu, perfmon_dev_slots(dev), false);
    syscnt_inc(&cpu->nr_polls);
    perfmon_cpu_leave(cpu);
}

static void
perfmon_poll_schedule(struct perfmon_dev *dev)
{
    timer_schedule(&perfmon_poll_timers[dev->index],
                   clock_get_time()
                   + clock_ticks_from_ms(dev->poll_interval_ms));
}

/*
 * Read every active counter of the device on every CPU, then come back
 * while the device has counters allocated.  Thread context (timer thread).
 */
static void
perfmon_poll_timer_fn(struct timer *timer)
{
    struct perfmon_dev *dev = timer->arg;
    uint64_t slots = perfmon_dev_slots(dev);
    unsigned int nr_cpus = cpu_count();
    bool again;

    for (unsigned int i = 0; i < nr_cpus; i++) {
        if (READ_ONCE(perfmon_cpu_get(i)->active_mask) & slots) {
            xcall_call(perfmon_poll_xcall, dev, i);
        }
    }

    spinlock_lock(&perfmon_lock);
    again = perfmon_dev_nr_used[dev->index] != 0;

    if (!again) {
        perfmon_poll_armed[dev->index] = false;
    }

    spinlock_unlock(&perfmon_lock);

    if (again) {
        perfmon_poll_schedule(dev);
    }
}

/* ---- global allocator (perfmon_lock) ------------------------------------ */

/*
 * Choose the device and raw event of an event.  perfmon_lock held (the
 * device's translate is serialised by it).
 */
static int
perfmon_event_resolve(const struct perfmon_event *event,
                      struct perfmon_dev **devp, uint64_t *rawp)
{
    unsigned int nr = perfmon_nr_devs_load();

    if (nr == 0) {
        return -ENODEV;
    }

    if (event->flags & PERFMON_EF_RAW) {
        *devp = (event->dev != NULL) ? event->dev : perfmon_devs[0];
        *rawp = event->id;
        return 0;
    }

    for (unsigned int i = 0; i < nr; i++) {
        struct perfmon_dev *dev = perfmon_devs[i];

        if (event->dev != NULL && event->dev != dev) {
            continue;
        }

        if (dev->ops->translate(rawp, (unsigned int)event->id) == 0) {
            *devp = dev;
            return 0;
        }
    }

    return -ENOENT;
}

/*
 * Find or allocate the counter slot of an event and add the event to its
 * users.  Sets *armp when the poll timer of the device must be started.
 */
static int
perfmon_pmc_get(struct perfmon_event *event, bool *armp)
{
    unsigned int mode = event->flags & PERFMON_EF_MODE;
    unsigned int base, free_slot = PERFMON_MAX_PMCS, hw_id;
    struct perfmon_dev *dev;
    struct perfmon_pmc *pmc;
    uint64_t raw;
    int error;

    error = perfmon_event_resolve(event, &dev, &raw);

    if (error) {
        return error;
    }

    base = dev->index * PERFMON_DEV_MAX_PMCS;

    for (unsigned int i = base; i < base + dev->nr_pmcs; i++) {
        pmc = &perfmon_pmcs[i];

        if (pmc->nr_refs == 0) {
            free_slot = MIN(free_slot, i);
        } else if (pmc->raw_event == raw && pmc->flags == mode) {
            goto found;
        }
    }

    if (free_slot == PERFMON_MAX_PMCS) {
        return -EAGAIN;
    }

    error = dev->ops->alloc(&hw_id, raw, mode);

    /*
     * -EAGAIN (counters taken) and -EINVAL (a raw code with bits the device
     * does not define) mean something to the user; anything else is "this
     * device cannot count that".
     */
    if (error) {
        return (error == -EAGAIN || error == -EINVAL) ? error : -ENOENT;
    }

    assert(hw_id < 64);
    pmc = &perfmon_pmcs[free_slot];
    pmc->hw_id = hw_id;
    pmc->raw_event = raw;
    pmc->flags = mode;
    pmc->users = NULL;
    perfmon_dev_nr_used[dev->index]++;

    if (dev->poll_interval_ms != 0 && !perfmon_poll_armed[dev->index]) {
        perfmon_poll_armed[dev->index] = true;
        *armp = true;
    }

found:
    pmc->nr_refs++;
    event->next_user = pmc->users;
    pmc->users = event;
    event->dev = dev;
    event->slot = (unsigned int)(pmc - perfmon_pmcs);
    return 0;
}

static void
perfmon_pmc_put(struct perfmon_event *event)
{
    struct perfmon_pmc *pmc = &perfmon_pmcs[event->slot];
    struct perfmon_event **prevp = &pmc->users;

    while (*prevp != event) {
        assert(*prevp != NULL);
        prevp = &(*prevp)->next_user;
    }

    *prevp = event->next_user;
    event->next_user = NULL;
    assert(pmc->nr_refs != 0);

    if (--pmc->nr_refs == 0) {
        event->dev->ops->free(pmc->hw_id);
        perfmon_dev_nr_used[event->dev->index]--;
    }
}

/* Allocate, then start the poll timer outside the lock when needed. */
static int
perfmon_event_get_pmc(struct perfmon_event *event)
{
    struct perfmon_dev *chosen = event->dev;
    bool arm = false;
    int error;

    spinlock_lock(&perfmon_lock);

    /*
     * Thread events need the context-switch hook: refuse them while it is
     * off, and count them so that it cannot be switched off under them.
     */
    if (event->thread != NULL && !thread_perfmon_hook_enabled()) {
        error = -EBUSY;
    } else {
        error = perfmon_pmc_get(event, &arm);
    }

    if (!error && event->thread != NULL) {
        perfmon_nr_thread_events++;
    }

    spinlock_unlock(&perfmon_lock);

    if (error) {
        event->dev = chosen;
        return error;
    }

    if (arm) {
        perfmon_poll_schedule(event->dev);
    }

    return 0;
}

static void
perfmon_event_put_pmc(struct perfmon_event *event)
{
    spinlock_lock(&perfmon_lock);
    perfmon_pmc_put(event);

    if (event->thread != NULL) {
        assert(perfmon_nr_thread_events != 0);
        perfmon_nr_thread_events--;
    }

    spinlock_unlock(&perfmon_lock);
}

int
perfmon_set_switch_hook(bool enabled)
{
    int error = 0;

    spinlock_lock(&perfmon_lock);

    if (!enabled && perfmon_nr_thread_events != 0) {
        error = -EBUSY;
    } else {
        thread_set_perfmon_hook(enabled);
    }

    spinlock_unlock(&perfmon_lock);
    return error;
}

/* ---- devices ------------------------------------------------------------ */

static int
perfmon_dev_check(const struct perfmon_dev *dev)
{
    const struct perfmon_dev_ops *ops;

    if (dev == NULL || dev->name == NULL || dev->ops == NULL) {
        return -EINVAL;
    }

    ops = dev->ops;

    if (ops->translate == NULL || ops->alloc == NULL || ops->free == NULL
        || ops->start == NULL || ops->stop == NULL || ops->read == NULL) {
        return -EINVAL;
    }

    if (dev->width == 0 || dev->width > 64) {
        return -EINVAL;
    }

    if (dev->nr_pmcs == 0 || dev->nr_pmcs > PERFMON_DEV_MAX_PMCS) {
        return -EINVAL;
    }

    if (dev->nr_events != 0 && dev->events == NULL) {
        return -EINVAL;
    }

    return 0;
}

int
perfmon_register(struct perfmon_dev *dev)
{
    unsigned int nr, poll_ms;
    int error;

    assert(perfmon_ready);
    error = perfmon_dev_check(dev);

    if (error) {
        return error;
    }

    if (dev->poll_ms != 0) {
        poll_ms = dev->poll_ms;
    } else if (dev->ops->handle_overflow_intr == NULL) {
        poll_ms = perfmon_poll_ms_compute(dev->width, cpu_tsc_freq());
    } else {
        poll_ms = 0;
    }

    spinlock_lock(&perfmon_lock);
    nr = perfmon_nr_devs_;

    for (unsigned int i = 0; i < nr; i++) {
        if (perfmon_devs[i] == dev || strcmp(perfmon_devs[i]->name,
                                             dev->name) == 0) {
            spinlock_unlock(&perfmon_lock);
            return -EEXIST;
        }
    }

    if (nr == PERFMON_MAX_DEVS) {
        spinlock_unlock(&perfmon_lock);
        return -ENOSPC;
    }

    dev->index = nr;
    dev->poll_interval_ms = poll_ms;
    dev->registered = true;
    perfmon_poll_timers[nr].arg = dev;
    perfmon_devs[nr] = dev;
    __atomic_store_n(&perfmon_nr_devs_, nr + 1, __ATOMIC_RELEASE);
    spinlock_unlock(&perfmon_lock);
    return 0;
}

unsigned int
perfmon_nr_devs(void)
{
    return perfmon_nr_devs_load();
}

struct perfmon_dev *
perfmon_dev_get(unsigned int index)
{
    return (index < perfmon_nr_devs_load()) ? perfmon_devs[index] : NULL;
}

struct perfmon_dev *
perfmon_dev_find(const char *name)
{
    unsigned int nr = perfmon_nr_devs_load();

    if (name == NULL) {
        return NULL;
    }

    for (unsigned int i = 0; i < nr; i++) {
        if (strcmp(perfmon_devs[i]->name, name) == 0) {
            return perfmon_devs[i];
        }
    }

    return NULL;
}

int
perfmon_dev_get_info(const struct perfmon_dev *dev,
                     struct perfmon_dev_info *info)
{
    if (info == NULL || !perfmon_dev_is_registered(dev)) {
        return -EINVAL;
    }

    info->name = dev->name;
    info->width = dev->width;
    info->nr_pmcs = dev->nr_pmcs;
    info->nr_pmcs_used = READ_ONCE(perfmon_dev_nr_used[dev->index]);
    info->overflow_intr = dev->ops->handle_overflow_intr != NULL;
    info->poll_ms = dev->poll_interval_ms;
    return 0;
}

const char *
perfmon_event_name(unsigned int id)
{
    for (size_t i = 0; i < ARRAY_SIZE(perfmon_event_names); i++) {
        if (perfmon_event_names[i].id == id) {
            return perfmon_event_names[i].name;
        }
    }

    return NULL;
}

int
perfmon_dev_translate(const struct perfmon_dev *dev, unsigned int event_id,
                      uint64_t *raw_eventp)
{
    int error;

    if (dev == NULL || raw_eventp == NULL || event_id >= PERFMON_NR_EVENTS
        || !perfmon_dev_is_registered(dev)) {
        return -EINVAL;
    }

    spinlock_lock(&perfmon_lock);
    error = dev->ops->translate(raw_eventp, event_id);
    spinlock_unlock(&perfmon_lock);
    return error == 0 ? 0 : -ENOENT;
}

int
perfmon_lookup_event(const struct perfmon_dev *dev, const char *name,
                     uint64_t *idp, unsigned int *flagsp)
{
    if (name == NULL || idp == NULL || flagsp == NULL) {
        return -EINVAL;
    }

    if (dev != NULL) {
        if (!perfmon_dev_is_registered(dev)) {
            return -EINVAL;
        }

        for (unsigned int i = 0; i < dev->nr_events; i++) {
            if (strcmp(dev->events[i].name, name) == 0) {
                *idp = dev->events[i].raw_event;
                *flagsp = PERFMON_EF_RAW;
                return 0;
            }
        }
    }

    for (size_t i = 0; i < ARRAY_SIZE(perfmon_event_names); i++) {
        unsigned int id = perfmon_event_names[i].id;
        uint64_t raw;
        int error;

        if (strcmp(perfmon_event_names[i].name, name) != 0) {
            continue;
        }

        if (dev != NULL) {
            spinlock_lock(&perfmon_lock);
            error = dev->ops->translate(&raw, id);
            spinlock_unlock(&perfmon_lock);

            if (error) {
                return -ENOENT;
            }
        }

        *idp = id;
        *flagsp = 0;
        return 0;
    }

    return -ENOENT;
}

void
perfmon_pmc_foreach(perfmon_pmc_fn_t fn, void *arg)
{
    struct perfmon_pmc_info info;

    if (fn == NULL) {
        return;
    }

    spinlock_lock(&perfmon_lock);

    for (unsigned int slot = 0; slot < PERFMON_MAX_PMCS; slot++) {
        const struct perfmon_pmc *pmc = &perfmon_pmcs[slot];
        unsigned int n = 0;

        if (pmc->nr_refs == 0) {
            continue;
        }

        info.dev = perfmon_slot_dev(slot);
        info.index = slot % PERFMON_DEV_MAX_PMCS;
        info.hw_id = pmc->hw_id;
        info.raw_event = pmc->raw_event;
        info.flags = pmc->flags;
        info.nr_users = pmc->nr_refs;

        for (const struct perfmon_event *e = pmc->users;
             e != NULL && n < PERFMON_PMC_INFO_MAX_USERS; e = e->next_user) {
            info.users[n].thread = e->thread;
            info.users[n].cpu = e->cpu;
            n++;
        }

        for (; n < PERFMON_PMC_INFO_MAX_USERS; n++) {
            info.users[n].thread = NULL;
            info.users[n].cpu = 0;
        }

        fn(&info, arg);
    }

    spinlock_unlock(&perfmon_lock);
}

/* ---- events ------------------------------------------------------------- */

int
perfmon_event_init(struct perfmon_event *event, uint64_t id,
                   unsigned int flags)
{
    if (event == NULL || (flags & ~PERFMON_EF_MASK) != 0
        || (flags & PERFMON_EF_MODE) == 0) {
        return -EINVAL;
    }

    if (!(flags & PERFMON_EF_RAW) && id >= PERFMON_NR_EVENTS) {
        return -EINVAL;
    }

    memset(event, 0, sizeof(*event));
    event->id = id;
    event->flags = flags;
    event->state = PERFMON_EVENT_IDLE;
    return 0;
}

int
perfmon_event_set_dev(struct perfmon_event *event, struct perfmon_dev *dev)
{
    if (event == NULL || event->state != PERFMON_EVENT_IDLE) {
        return -EINVAL;
    }

    if (dev != NULL && !perfmon_dev_is_registered(dev)) {
        return -ENODEV;
    }

    event->dev = dev;
    return 0;
}

bool
perfmon_event_attached(const struct perfmon_event *event)
{
    return event != NULL && (event->state == PERFMON_EVENT_THREAD
                             || event->state == PERFMON_EVENT_CPU);
}

int
perfmon_event_attach(struct perfmon_event *event, struct thread *thread)
{
    struct perfmon_call call = { .event = event };
    int error;

    perfmon_assert_thread_context();

    if (event == NULL || thread == NULL
        || event->state != PERFMON_EVENT_IDLE) {
        return -EINVAL;
    }

    /* Referenced while on the counter's user list (perfmon_pmc_foreach). */
    thread_ref(thread);
    event->thread = thread;
    event->cpu = 0;
    error = perfmon_event_get_pmc(event);

    if (error) {
        event->thread = NULL;
        thread_unref(thread);
        return error;
    }

    event->state = PERFMON_EVENT_THREAD;
    thread_call(thread, perfmon_td_attach_fn, &call);
    return 0;
}

int
perfmon_event_attach_cpu(struct perfmon_event *event, unsigned int cpu)
{
    struct perfmon_call call = { .event = event };
    int error;

    perfmon_assert_thread_context();

    if (event == NULL || event->state != PERFMON_EVENT_IDLE
        || cpu >= cpu_count()) {
        return -EINVAL;
    }

    event->thread = NULL;
    event->cpu = cpu;
    error = perfmon_event_get_pmc(event);

    if (error) {
        return error;
    }

    event->state = PERFMON_EVENT_CPU;
    error = xcall_call(perfmon_cpu_attach_xcall, &call, cpu);
    assert(error == 0);                 /* CPUs never go offline */
    return 0;
}

int
perfmon_event_detach(struct perfmon_event *event)
{
    struct perfmon_call call = { .event = event };
    int error;

    perfmon_assert_thread_context();

    if (!perfmon_event_attached(event)) {
        return -EINVAL;
    }

    if (event->state == PERFMON_EVENT_THREAD) {
        thread_call(event->thread, perfmon_td_detach_fn, &call);
    } else {
        error = xcall_call(perfmon_cpu_detach_xcall, &call, event->cpu);
        assert(error == 0);
    }

    event->value += call.result - event->start;
    event->state = PERFMON_EVENT_IDLE;
    perfmon_event_put_pmc(event);

    if (event->thread != NULL) {
        thread_unref(event->thread);
        event->thread = NULL;
    }

    return 0;
}

/*
 * The 64-bit value slot would have on this CPU if it were folded now,
 * computed without changing anything; correct while the counter has not
 * advanced a full period since its last fold.  Returns false once it is
 * more than 1/16 of a period (PERFMON_PEEK_SHIFT) past that fold: the
 * caller then folds instead.  A peek leaves prev where it was, so two
 * peeks in a row are only known to be in order when they are less than
 * 15/16 of a period apart (the folding read allowed a full period); the
 * poll interval and the overflow interrupt fold far more often than that.
 */
static bool
perfmon_cpu_pmc_peek(const struct perfmon_cpu *cpu, unsigned int slot,
                     uint64_t *valuep)
{
    const struct perfmon_cpu_pmc *pmc = &cpu->pmcs[slot];
    const struct perfmon_dev *dev = perfmon_slot_dev(slot);
    uint64_t mask = perfmon_width_mask(dev->width);
    uint64_t value = pmc->value, prev = pmc->prev, delta;

    barrier();
    delta = (dev->ops->read(pmc->hw_id) - prev) & mask;

    if (delta > (mask >> PERFMON_PEEK_SHIFT)) {
        return false;
    }

    *valuep = value + delta;
    return true;
}

/*
 * The current count behind an event whose counter runs on this CPU: a CPU
 * event of this CPU, or an event of the calling thread.  Preemption
 * disabled, interrupts enabled: nothing is written, and the reads are
 * retried when an interrupt or NMI section changed the per-CPU state
 * meanwhile (cpu->gen).  Returns false when the event is a CPU event of
 * another CPU, or its counter needs a fold; the caller then takes the
 * general path.
 */
static bool
perfmon_event_read_local(const struct perfmon_event *event,
                         uint64_t *resultp)
{
    const struct perfmon_cpu *cpu = perfmon_cpu_get(cpu_id());
    unsigned int slot = event->slot;
    const struct perfmon_td *td = NULL;
    unsigned long gen;
    uint64_t result;

    if (event->state == PERFMON_EVENT_THREAD) {
        td = thread_get_perfmon_td(event->thread);
    } else if (event->cpu != cpu_id()) {
        return false;
    }

    do {
        gen = READ_ONCE(cpu->gen);
        barrier();

        /* Thread events need the switch hook, which loads them. */
        assert(td == NULL || (td->loaded_mask & perfmon_slot_bit(slot)));

        if (!perfmon_cpu_pmc_peek(cpu, slot, &result)) {
            return false;
        }

        if (td != NULL) {
            result = td->pmcs[slot].value
                     + (result - td->pmcs[slot].cpu_snapshot);
        }

        barrier();
    } while (READ_ONCE(cpu->gen) != gen);

    *resultp = result;
    return true;
}

__hot_path uint64_t
perfmon_event_read(struct perfmon_event *event)
{
    struct perfmon_call call = { .event = event };
    bool local;
    int error;

    if (event == NULL) {
        return 0;
    }

    if (event->state != PERFMON_EVENT_THREAD
        && event->state != PERFMON_EVENT_CPU) {
        return event->value;
    }

    perfmon_assert_thread_context();

    /* The calling thread, or the CPU it runs on: no cross-CPU call. */
    if (event->state == PERFMON_EVENT_CPU || event->thread == thread_self()) {
        thread_preempt_disable();
        local = perfmon_event_read_local(event, &call.result);
        thread_preempt_enable();

        if (local) {
            return event->value + (call.result - event->start);
        }
    }

    if (event->state == PERFMON_EVENT_THREAD) {
        thread_call(event->thread, perfmon_td_read_fn, &call);
    } else {
        error = xcall_call(perfmon_cpu_read_xcall, &call, event->cpu);
        assert(error == 0);
    }

    return event->value + (call.result - event->start);
}

/* ---- overflow interrupt and callbacks ----------------------------------- */

static void
perfmon_intr_run_callbacks(struct perfmon_dev *dev, unsigned int cpu,
                           uint64_t mask, struct trap_frame *frame)
{
    for (size_t i = 0; i < ARRAY_SIZE(perfmon_intr_entries); i++) {
        struct perfmon_intr_entry *entry = &perfmon_intr_entries[i];
        perfmon_intr_fn_t fn;

        /* One load: the pointer may be cleared at any time. */
        fn = __atomic_load_n(&entry->fn, __ATOMIC_ACQUIRE);

        if (fn != NULL) {
            fn(dev, cpu, mask, frame, entry->arg);
        }
    }
}

bool
perfmon_overflow_intr(struct perfmon_dev *dev, struct trap_frame *frame)
{
    struct perfmon_cpu *cpu;
    unsigned int cpu_index;
    uint64_t mask, slots, active;

    assert(!cpu_intr_enabled());

    if (!perfmon_dev_is_registered(dev)
        || dev->ops->handle_overflow_intr == NULL) {
        return false;
    }

    mask = dev->ops->handle_overflow_intr();

    if (mask == 0) {
        return false;
    }

    cpu_index = cpu_id();
    cpu = perfmon_cpu_get(cpu_index);
    syscnt_inc(&cpu->nr_intrs);

    /* The slots of the device running here whose counter overflowed. */
    active = READ_ONCE(cpu->active_mask) & perfmon_dev_slots(dev);
    slots = 0;

    while (active != 0) {
        unsigned int slot = (unsigned int)__builtin_ctzll(active);

        active &= active - 1;

        if (mask & (1ULL << cpu->pmcs[slot].hw_id)) {
            slots |= perfmon_slot_bit(slot);
        }
    }

    if (READ_ONCE(cpu->busy)) {
        __atomic_fetch_or(&cpu->pending, slots, __ATOMIC_RELAXED);
    } else {
        WRITE_ONCE(cpu->busy, true);
        WRITE_ONCE(cpu->gen, cpu->gen + 1);
        barrier();
        perfmon_cpu_fold(cpu, slots, true);

        /* Also folds what an NMI left pending, when this is not one. */
        perfmon_cpu_leave(cpu);
    }

    perfmon_intr_run_callbacks(dev, cpu_index, mask, frame);
    return true;
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

    perfmon_assert_thread_context();

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
    spinlock_unlock(&perfmon_intr_lock);
    return 0;
}

/* ---- setup -------------------------------------------------------------- */

static int
perfmon_setup(void)
{
    unsigned int nr_cpus = cpu_count();

    for (unsigned int i = 0; i < nr_cpus; i++) {
        struct perfmon_cpu *cpu = perfmon_cpu_get(i);

        perfmon_register_syscnt(&cpu->nr_overflows, "perfmon_nr_overflows/", i);
        perfmon_register_syscnt(&cpu->nr_intrs, "perfmon_nr_intrs/", i);
        perfmon_register_syscnt(&cpu->nr_polls, "perfmon_nr_polls/", i);
    }

    for (unsigned int i = 0; i < PERFMON_MAX_DEVS; i++) {
        timer_init(&perfmon_poll_timers[i], perfmon_poll_timer_fn, 0);
    }

    perfmon_ready = true;
    return 0;
}

INIT_OP_DEFINE(perfmon_setup, INIT_OP_DEP(xcall_setup),
               INIT_OP_DEP(timer_setup), INIT_OP_DEP(thread_setup));

#ifdef TALLY_HOST_TEST
void
perfmon_reset(void)
{
    spinlock_init(&perfmon_lock);
    spinlock_init(&perfmon_intr_lock);

    for (unsigned int i = 0; i < PERFMON_MAX_DEVS; i++) {
        if (perfmon_devs[i] != NULL) {
            perfmon_devs[i]->registered = false;
        }
    }

    memset(perfmon_devs, 0, sizeof(perfmon_devs));
    perfmon_nr_devs_ = 0;
    memset(perfmon_pmcs, 0, sizeof(perfmon_pmcs));
    memset(perfmon_dev_nr_used, 0, sizeof(perfmon_dev_nr_used));
    memset(perfmon_poll_timers, 0, sizeof(perfmon_poll_timers));
    memset(perfmon_poll_armed, 0, sizeof(perfmon_poll_armed));
    memset(perfmon_cpus, 0, sizeof(perfmon_cpus));
    memset(perfmon_intr_entries, 0, sizeof(perfmon_intr_entries));
    perfmon_intr_gen = 0;
    perfmon_nr_thread_events = 0;
    perfmon_ready = false;
    perfmon_setup();
}
#endif /* TALLY_HOST_TEST */
