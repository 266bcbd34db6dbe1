/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Code regions (kern/perfmon_region.h): arming, disarming, resetting,
 * and the copies `perfmon regions show` prints, over the per-CPU state
 * of perfmon_region.h.
 *
 * Arming builds each CPU's part, attaches its events, then publishes the
 * set (perfmon_region_set), each CPU's part (perfmon_region_cpus[]) and
 * last the regions' flags.  Disarming clears the regions' flags, the CPUs' pointers and the set
 * pointer, then makes an xcall to every CPU online: a marker runs with
 * interrupts disabled, so once each CPU took the call none is still using
 * the old set, which is then freed.  Arming, disarming and resetting are
 * serialised by a flag (perfmon_region_busy): a second caller meanwhile
 * gets -EBUSY.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon/perfmon_region.h"
#include "kern/perfmon_region.h"
#include "kern/string.h"
#include "kern/xcall.h"

/* The arming, or NULL: stored with release, loaded with acquire. */
static struct perfmon_region_set *perfmon_region_set;

/* Held (atomic) by the arming, disarming or resetting thread. */
static bool perfmon_region_busy;

static bool
perfmon_region_lock(void)
{
    return !__atomic_exchange_n(&perfmon_region_busy, true, __ATOMIC_ACQUIRE);
}

static void
perfmon_region_unlock(void)
{
    __atomic_store_n(&perfmon_region_busy, false, __ATOMIC_RELEASE);
}

/* A CPU's counts back to their start.  That CPU, interrupts disabled. */
static void
perfmon_region_cpu_clear(struct perfmon_region_cpu *pc, unsigned int nr)
{
    memset(&pc->losses, 0, sizeof(pc->losses));
    memset(pc->cold, 0, nr * sizeof(*pc->cold));

    /* The ranges stay closed (the caller closed them, or none is open). */
    for (unsigned int i = 0; i < nr; i++) {
        pc->hot[i].calls = 0;
        pc->hot[i].sum = 0;
        pc->cold[i].min = UINT64_MAX;
        pc->cold[i].self_min = UINT64_MAX;
        perfmon_region_hot_open(&pc->hot[i], &pc->cold[i]);
    }
}

static void
perfmon_region_cpu_destroy(struct perfmon_region_cpu *pc, unsigned int nr)
{
    for (unsigned int e = 0; e < nr; e++) {
        if (perfmon_event_attached(&pc->events[e])) {
            perfmon_event_detach(&pc->events[e]);
        }
    }

    kmem_free(pc, pc->size);
}

static void
perfmon_region_set_destroy(struct perfmon_region_set *set)
{
    for (unsigned int cpu = 0; cpu < CPU_MAX; cpu++) {
        if (set->cpus[cpu] != NULL) {
            perfmon_region_cpu_destroy(set->cpus[cpu],
                                       set->config.nr_events);
        }
    }

    kmem_free(set, sizeof(*set));
}

/*
 * A CPU's part: its counts after it in one allocation, its events
 * attached.  0, -ENOMEM, or an attach error with *bad_eventp.
 */
static int
perfmon_region_cpu_create(struct perfmon_region_set *set, unsigned int cpu,
                          unsigned int *bad_eventp)
{
    unsigned int nr_stats = set->nr_regions * set->config.nr_events;
    size_t size = sizeof(struct perfmon_region_cpu)
                  + nr_stats * (sizeof(struct perfmon_region_hot)
                                + sizeof(struct perfmon_region_cold))
                  + set->nr_regions * sizeof(unsigned int);
    struct perfmon_region_cpu *pc = kmem_zalloc(size);
    bool fast = (set->config.nr_events == 1 && set->config.every == 1);
    int error = 0;

    if (pc == NULL) {
        return -ENOMEM;
    }

    pc->size = size;
    pc->set = set;
    pc->top = &pc->stack[1];
    pc->limit = fast ? &pc->stack[ARRAY_SIZE(pc->stack)] : &pc->stack[0];
    pc->cpu = perfmon_cpu_get(cpu);
    pc->hot = (struct perfmon_region_hot *)(pc + 1);
    pc->cold = (struct perfmon_region_cold *)(pc->hot + nr_stats);
    pc->every_left = (unsigned int *)(pc->cold + nr_stats);
    pc->hot_bias = (uintptr_t)pc->hot
                   - 2 * (uintptr_t)__start_perfmon_regions;

    for (unsigned int i = 0; i < nr_stats; i++) {
        perfmon_region_hot_close(&pc->hot[i]);
    }

    perfmon_region_cpu_clear(pc, nr_stats);
    set->cpus[cpu] = pc;

    for (unsigned int e = 0; e < set->config.nr_events && !error; e++) {
        const struct perfmon_region_event *ev = &set->events[e];

        error = perfmon_event_init(&pc->events[e], ev->id, ev->flags);

        if (!error && ev->dev != NULL) {
            error = perfmon_event_set_dev(&pc->events[e], ev->dev);
        }

        if (!error) {
            error = perfmon_event_attach_cpu(&pc->events[e], cpu);
        }

        if (error) {
            *bad_eventp = e;
        }
    }

    pc->record_offset = pc->events[0].record_offset;
    return error;
}

static int
perfmon_region_check(const struct perfmon_region_config *config,
                     const char **badp)
{
    if (config->nr_events == 0
        || config->nr_events > PERFMON_REGION_MAX_EVENTS
        || config->every == 0 || config->every > PERFMON_REGION_EVERY_MAX
        || config->cpus == 0
        || (cpu_count() < 64 && (config->cpus >> cpu_count()) != 0)) {
        return -EINVAL;
    }

    for (unsigned int i = 0; i < config->nr_names; i++) {
        if (config->names[i] == NULL) {
            return -EINVAL;
        }

        if (perfmon_region_find(config->names[i]) == NULL) {
            *badp = config->names[i];
            return -ENOENT;
        }
    }

    return 0;
}

/* Set the flag of every region armed by config (all when it names none). */
static void
perfmon_region_set_flags(const struct perfmon_region_config *config)
{
    for (unsigned int i = 0; i < perfmon_region_count(); i++) {
        struct perfmon_region *region = &__start_perfmon_regions[i];
        bool armed = (config->nr_names == 0);

        for (unsigned int n = 0; n < config->nr_names && !armed; n++) {
            armed = (strcmp(config->names[n], region->name) == 0);
        }

        if (armed) {
            __atomic_store_n(&region->armed, 1, __ATOMIC_RELAXED);
        }
    }
}

int
perfmon_region_arm(const struct perfmon_region_config *config,
                   const char **badp, unsigned int *bad_eventp)
{
    struct perfmon_region_set *set;
    int error;

    if (config == NULL || badp == NULL || bad_eventp == NULL) {
        return -EINVAL;
    }

    if (!perfmon_region_lock()) {
        return -EBUSY;
    }

    error = (perfmon_region_set != NULL) ? -EBUSY
                                         : perfmon_region_check(config, badp);

    if (error) {
        goto out;
    }

    set = kmem_zalloc(sizeof(*set));

    if (set == NULL) {
        error = -ENOMEM;
        goto out;
    }

    set->config = *config;
    set->config.events = set->events;
    set->config.names = NULL;
    set->config.nr_names = 0;
    set->nr_regions = perfmon_region_count();
    memcpy(set->events, config->events,
           config->nr_events * sizeof(*config->events));

    for (uint64_t left = config->cpus; left != 0 && !error;
         left &= left - 1) {
        error = perfmon_region_cpu_create(
            set, (unsigned int)__builtin_ctzll(left), bad_eventp);
    }

    if (error) {
        perfmon_region_set_destroy(set);
        goto out;
    }

    __atomic_store_n(&perfmon_region_set, set, __ATOMIC_RELEASE);

    for (unsigned int cpu = 0; cpu < CPU_MAX; cpu++) {
        if (set->cpus[cpu] != NULL) {
            __atomic_store_n(&perfmon_region_cpus[cpu], set->cpus[cpu],
                             __ATOMIC_RELEASE);
        }
    }

    perfmon_region_set_flags(config);

out:
    perfmon_region_unlock();
    return error;
}

static void
perfmon_region_sync_xcall(void *arg)
{
    (void)arg;
}

int
perfmon_region_disarm(void)
{
    struct perfmon_region_set *set;
    int error;

    if (!perfmon_region_lock()) {
        return -EBUSY;
    }

    set = perfmon_region_set;

    if (set == NULL) {
        perfmon_region_unlock();
        return -ENOENT;
    }

    for (unsigned int i = 0; i < perfmon_region_count(); i++) {
        __atomic_store_n(&__start_perfmon_regions[i].armed, 0,
                         __ATOMIC_RELAXED);
    }

    for (unsigned int cpu = 0; cpu < CPU_MAX; cpu++) {
        __atomic_store_n(&perfmon_region_cpus[cpu], &perfmon_region_cpu_none,
                         __ATOMIC_RELEASE);
    }

    __atomic_store_n(&perfmon_region_set, NULL, __ATOMIC_RELEASE);
    error = xcall_call_many(perfmon_region_sync_xcall, NULL,
                            (cpu_count() < 64) ? (1ULL << cpu_count()) - 1
                                               : UINT64_MAX);
    assert(error == 0);
    perfmon_region_set_destroy(set);
    perfmon_region_unlock();
    return 0;
}

/* A CPU's counts copied or cleared, on that CPU. */
struct perfmon_region_copy {
    const struct perfmon_region_set *set;
    struct perfmon_region_cpu *pc;
    struct perfmon_region_stats *stats;     /* NULL: clear them */
    struct perfmon_region_losses *losses;
};

/* One count of a CPU's, as perfmon_region_snapshot() gives it. */
static void
perfmon_region_stats_get(const struct perfmon_region_hot *hot,
                         const struct perfmon_region_cold *cold,
                         struct perfmon_region_stats *st)
{
    st->calls = hot->calls;
    st->seen = hot->calls + cold->unmeasured;
    st->sum = hot->sum;
    st->min = cold->min;
    st->max = cold->max;
    st->self_sum = hot->sum - cold->child_sum;
    st->self_min = cold->self_min;
    st->self_max = cold->self_max;
    memcpy(st->worst, cold->worst, sizeof(st->worst));
}

/* Its short path closed, an NMI's end drops its call (busy). */
static void
perfmon_region_copy_xcall(void *arg)
{
    struct perfmon_region_copy *copy = arg;
    struct perfmon_region_cpu *pc = copy->pc;
    unsigned int nr = copy->set->nr_regions * copy->set->config.nr_events;

    WRITE_ONCE(pc->busy, true);
    barrier();

    for (unsigned int i = 0; i < nr; i++) {
        perfmon_region_hot_close(&pc->hot[i]);
    }

    if (copy->stats == NULL) {
        perfmon_region_cpu_clear(pc, nr);
        memset(pc->every_left, 0,
               copy->set->nr_regions * sizeof(*pc->every_left));
    } else {
        for (unsigned int i = 0; i < nr; i++) {
            perfmon_region_stats_get(&pc->hot[i], &pc->cold[i],
                                     &copy->stats[i]);
            perfmon_region_hot_open(&pc->hot[i], &pc->cold[i]);
        }

        *copy->losses = pc->losses;
    }

    barrier();
    WRITE_ONCE(pc->busy, false);
}

int
perfmon_region_reset(void)
{
    struct perfmon_region_copy copy = { .stats = NULL };
    int error = 0;

    if (!perfmon_region_lock()) {
        return -EBUSY;
    }

    copy.set = perfmon_region_set;

    if (copy.set == NULL) {
        error = -ENOENT;
    }

    for (uint64_t left = (copy.set != NULL) ? copy.set->config.cpus : 0;
         left != 0; left &= left - 1) {
        unsigned int cpu = (unsigned int)__builtin_ctzll(left);

        copy.pc = copy.set->cpus[cpu];
        error = xcall_call(perfmon_region_copy_xcall, &copy, cpu);
        assert(error == 0);
    }

    perfmon_region_unlock();
    return error;
}

const struct perfmon_region_config *
perfmon_region_armed(void)
{
    const struct perfmon_region_set *set =
        __atomic_load_n(&perfmon_region_set, __ATOMIC_ACQUIRE);

    return (set == NULL) ? NULL : &set->config;
}

/* The armed CPU cpu's part, or NULL with *errorp. */
static struct perfmon_region_cpu *
perfmon_region_cpu_get(unsigned int cpu, const struct perfmon_region_set **setp,
                       int *errorp)
{
    const struct perfmon_region_set *set = perfmon_region_set;

    *setp = set;

    if (set == NULL) {
        *errorp = -ENOENT;
        return NULL;
    }

    if (cpu >= CPU_MAX || set->cpus[cpu] == NULL) {
        *errorp = -EINVAL;
        return NULL;
    }

    return set->cpus[cpu];
}

int
perfmon_region_snapshot(unsigned int cpu, struct perfmon_region_stats *stats,
                        size_t nr, struct perfmon_region_losses *losses)
{
    struct perfmon_region_copy copy = { .stats = stats, .losses = losses };
    int error = 0;

    copy.pc = perfmon_region_cpu_get(cpu, &copy.set, &error);

    if (copy.pc == NULL) {
        return error;
    }

    if (stats == NULL || losses == NULL
        || nr < (size_t)copy.set->nr_regions * copy.set->config.nr_events) {
        return -EINVAL;
    }

    error = xcall_call(perfmon_region_copy_xcall, &copy, cpu);
    assert(error == 0);
    return 0;
}

int
perfmon_region_event_times(unsigned int cpu, unsigned int e,
                           uint64_t *enabled_nsp, uint64_t *running_nsp)
{
    const struct perfmon_region_set *set;
    struct perfmon_region_cpu *pc;
    int error = 0;

    pc = perfmon_region_cpu_get(cpu, &set, &error);

    if (pc == NULL) {
        return error;
    }

    if (e >= set->config.nr_events) {
        return -EINVAL;
    }

    perfmon_event_read_times(&pc->events[e], enabled_nsp, running_nsp);
    return 0;
}

#ifdef TALLY_HOST_TEST
void
perfmon_region_test_reset(void)
{
    if (perfmon_region_set != NULL) {
        perfmon_region_disarm();
    }

    perfmon_region_busy = false;
}
#endif
