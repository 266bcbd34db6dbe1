/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Code regions (kern/perfmon_region.h): arming, and the markers' path
 * when armed.
 *
 * An arming is one struct perfmon_region_set, published through
 * perfmon_region_set, with a struct perfmon_region_cpu for each CPU it
 * measures: that CPU's events, its stack of open regions, its counts.  A
 * CPU's part is written by that CPU only, with interrupts disabled
 * (markers, and the xcalls that reset and copy it), so the marker path
 * needs no lock; the one context that can still land in the middle of
 * such a change, an NMI, sees busy set and drops its call.  The stack is
 * pushed by growing depth before the frame is written and popped by
 * shrinking it after the frame was read: an NMI's frames always go above.
 *
 * Disarming clears the regions' flags and the set pointer, then makes an
 * xcall to every CPU online: a marker runs with interrupts disabled, so
 * once each CPU took the call none is still using the old set, which is
 * then freed.  Arming, disarming and resetting are serialised by a flag
 * (perfmon_region_busy): a second caller meanwhile gets -EBUSY.
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
#include "kern/perfmon_region.h"
#include "kern/string.h"
#include "kern/xcall.h"

/* The linker section of the regions (linker.ld): an array. */
extern struct perfmon_region __start_perfmon_regions[];
extern struct perfmon_region __stop_perfmon_regions[];

/* How a frame's call is measured. */
#define PERFMON_REGION_MEASURED     0
#define PERFMON_REGION_SKIPPED      1   /* --every: not this call */
#define PERFMON_REGION_UNREAD       2   /* a begin read failed */

/*
 * An open region on a CPU's stack: its counts at the begin, and what the
 * regions that opened and closed inside it counted (child).
 */
struct perfmon_region_frame {
    const struct perfmon_region *region;
    unsigned int state;
    uint64_t start[PERFMON_REGION_MAX_EVENTS];
    uint64_t child[PERFMON_REGION_MAX_EVENTS];
};

/*
 * One CPU's part of an arming, written by that CPU only with interrupts
 * disabled.  depth: frames in use, stack[0..depth).  busy: stats, losses
 * or every_left being changed or copied (an NMI marker then drops its
 * call).  stats[region * nr_events + event]; every_left[region]: calls to
 * skip before the next measured one.
 */
struct perfmon_region_cpu {
    unsigned int depth;
    bool busy;
    struct perfmon_region_losses losses;
    struct perfmon_event events[PERFMON_REGION_MAX_EVENTS];
    struct perfmon_region_frame stack[PERFMON_REGION_MAX_DEPTH];
    struct perfmon_region_stats *stats;
    unsigned int *every_left;
    size_t size;                        /* of the allocation */
};

/*
 * An arming.  Fixed once published; freed only after disarming has made
 * sure no marker still uses it.
 */
struct perfmon_region_set {
    struct perfmon_region_config config;    /* names: none kept */
    struct perfmon_region_event events[PERFMON_REGION_MAX_EVENTS];
    unsigned int nr_regions;
    bool fast;                          /* one event, every call */
    struct perfmon_region_cpu *cpus[CPU_MAX];
};

/* The arming, or NULL: stored with release, loaded with acquire. */
static struct perfmon_region_set *perfmon_region_set;

/* Held (atomic) by the arming, disarming or resetting thread. */
static bool perfmon_region_busy;

unsigned int
perfmon_region_count(void)
{
    return (unsigned int)(__stop_perfmon_regions - __start_perfmon_regions);
}

const struct perfmon_region *
perfmon_region_get(unsigned int index)
{
    return (index < perfmon_region_count()) ? &__start_perfmon_regions[index]
                                             : NULL;
}

const struct perfmon_region *
perfmon_region_find(const char *name)
{
    for (unsigned int i = 0; i < perfmon_region_count(); i++) {
        if (strcmp(__start_perfmon_regions[i].name, name) == 0) {
            return &__start_perfmon_regions[i];
        }
    }

    return NULL;
}

static unsigned int
perfmon_region_index(const struct perfmon_region *region)
{
    return (unsigned int)(region - __start_perfmon_regions);
}

/* The calling CPU's part of the arming, or NULL.  Interrupts disabled. */
static struct perfmon_region_cpu *
perfmon_region_cpu_local(const struct perfmon_region_set **setp)
{
    const struct perfmon_region_set *set =
        __atomic_load_n(&perfmon_region_set, __ATOMIC_ACQUIRE);

    *setp = set;
    return (set == NULL) ? NULL : set->cpus[cpu_id()];
}

static void
perfmon_region_lose(uint64_t *counter)
{
    __atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* The marker path ----------------------------------------------------------
 */

/*
 * A frame's opening beyond the common case (one event, every call):
 * every N, several events.
 */
static void __attribute__((noinline))
perfmon_region_open(const struct perfmon_region_set *set,
                    struct perfmon_region_cpu *pc,
                    struct perfmon_region_frame *frame)
{
    const struct perfmon_region *region = frame->region;
    unsigned int *left;

    frame->state = PERFMON_REGION_MEASURED;

    /* A lost update from an NMI only moves which call is measured. */
    if (set->config.every != 1) {
        left = &pc->every_left[perfmon_region_index(region)];

        if (*left > 1) {
            (*left)--;
            frame->state = PERFMON_REGION_SKIPPED;
            return;
        }

        *left = set->config.every;
    }

    /* The reads last: what comes before them is not counted. */
    for (unsigned int e = 0; e < set->config.nr_events; e++) {
        frame->child[e] = 0;

        if (!perfmon_event_read_here(&pc->events[e], region->in_section,
                                     &frame->start[e])) {
            frame->state = PERFMON_REGION_UNREAD;
        }
    }
}

void
perfmon_region_begin_slow(struct perfmon_region *region)
{
    const struct perfmon_region_set *set;
    struct perfmon_region_frame *frame;
    struct perfmon_region_cpu *pc;
    unsigned long flags = cpu_intr_save();
    unsigned int depth;

    pc = perfmon_region_cpu_local(&set);

    if (pc == NULL) {
        goto out;
    }

    depth = pc->depth;

    if (unlikely(depth == PERFMON_REGION_MAX_DEPTH)) {
        perfmon_region_lose(&pc->losses.too_deep);
        goto out;
    }

    WRITE_ONCE(pc->depth, depth + 1);
    barrier();
    frame = &pc->stack[depth];
    frame->region = region;

    if (unlikely(set->fast == 0)) {
        perfmon_region_open(set, pc, frame);
        goto out;
    }

    frame->child[0] = 0;
    frame->state = perfmon_event_read_here(&pc->events[0], region->in_section,
                                           &frame->start[0])
                   ? PERFMON_REGION_MEASURED : PERFMON_REGION_UNREAD;

out:
    cpu_intr_restore(flags);
}

/* Keep count among the largest calls, largest first. */
static void
perfmon_region_worst_add(uint64_t *worst, uint64_t count)
{
    if (count <= worst[PERFMON_REGION_NR_WORST - 1]) {
        return;
    }

    for (unsigned int i = 0; i < PERFMON_REGION_NR_WORST; i++) {
        if (count > worst[i]) {
            uint64_t tmp = worst[i];

            worst[i] = count;
            count = tmp;
        }
    }
}

static inline __attribute__((always_inline)) void
perfmon_region_stats_add(struct perfmon_region_stats *st, uint64_t count,
                         uint64_t self)
{
    st->calls++;
    st->sum += count;
    st->min = MIN(st->min, count);
    st->max = MAX(st->max, count);
    st->self_sum += self;
    st->self_min = MIN(st->self_min, self);
    st->self_max = MAX(st->self_max, self);
    perfmon_region_worst_add(st->worst, count);
}

/*
 * Close frame, stack[index], of nr events, with the counts now (valid
 * unless the end's reads failed: read false), under the busy flag.
 */
static inline __attribute__((always_inline)) void
perfmon_region_close(struct perfmon_region_cpu *pc, unsigned int nr,
                     unsigned int index, const uint64_t *now, bool read)
{
    const struct perfmon_region_frame *frame = &pc->stack[index];
    uint64_t *parent = (index > 0) ? pc->stack[index - 1].child : NULL;
    struct perfmon_region_stats *st;
    bool measured;

    if (READ_ONCE(pc->busy)) {
        perfmon_region_lose(&pc->losses.dropped);
        return;
    }

    WRITE_ONCE(pc->busy, true);
    barrier();
    measured = (frame->state == PERFMON_REGION_MEASURED) && read;

    if (!measured && frame->state != PERFMON_REGION_SKIPPED) {
        pc->losses.unread++;
    }

    st = &pc->stats[perfmon_region_index(frame->region) * nr];

    for (unsigned int e = 0; e < nr; e++, st++) {
        uint64_t count = now[e] - frame->start[e], child = frame->child[e];

        st->seen++;

        if (!measured) {
            continue;
        }

        perfmon_region_stats_add(st, count, (count > child) ? count - child
                                                            : 0);

        if (parent != NULL) {
            parent[e] += count;
        }
    }

    barrier();
    WRITE_ONCE(pc->busy, false);
}

/* The open frame of region, under stack[depth - 1]: 0 when there is none. */
static unsigned int __attribute__((noinline))
perfmon_region_find_frame(struct perfmon_region_cpu *pc,
                          const struct perfmon_region *region)
{
    unsigned int depth = pc->depth, i;

    for (i = depth; i > 0 && pc->stack[i - 1].region != region; i--) {
        continue;
    }

    if (i == 0) {
        perfmon_region_lose(&pc->losses.unmatched);
        return 0;
    }

    /* Frames above it were opened by begins whose end never came here. */
    for (unsigned int k = i; k < depth; k++) {
        perfmon_region_lose(&pc->losses.abandoned);
    }

    return i;
}

/* An end beyond the common case: searched, several events, not read. */
static void __attribute__((noinline))
perfmon_region_end_general(const struct perfmon_region_set *set,
                           struct perfmon_region_cpu *pc,
                           const struct perfmon_region *region)
{
    uint64_t now[PERFMON_REGION_MAX_EVENTS];
    unsigned int depth = pc->depth;
    bool read = true;

    if (depth == 0 || pc->stack[depth - 1].region != region) {
        depth = perfmon_region_find_frame(pc, region);

        if (depth == 0) {
            return;
        }
    }

    /* The reads first: what comes after them is not counted. */
    if (pc->stack[depth - 1].state == PERFMON_REGION_MEASURED) {
        for (unsigned int e = 0; e < set->config.nr_events; e++) {
            read &= perfmon_event_read_here(&pc->events[e],
                                            region->in_section, &now[e]);
        }
    }

    perfmon_region_close(pc, set->config.nr_events, depth - 1, now, read);
    barrier();
    WRITE_ONCE(pc->depth, depth - 1);
}

void
perfmon_region_end_slow(struct perfmon_region *region)
{
    const struct perfmon_region_set *set;
    struct perfmon_region_cpu *pc;
    unsigned long flags = cpu_intr_save();
    unsigned int depth;
    uint64_t now;
    bool read;

    pc = perfmon_region_cpu_local(&set);

    if (pc == NULL) {
        goto out;
    }

    /* The common case: one event, the region on top, its begin read. */
    depth = pc->depth;

    if (unlikely(set->fast == 0 || depth == 0
                 || pc->stack[depth - 1].region != region
                 || pc->stack[depth - 1].state != PERFMON_REGION_MEASURED)) {
        perfmon_region_end_general(set, pc, region);
        goto out;
    }

    /* The read first: what comes after it is not counted. */
    read = perfmon_event_read_here(&pc->events[0], region->in_section, &now);
    perfmon_region_close(pc, 1, depth - 1, &now, read);
    barrier();
    WRITE_ONCE(pc->depth, depth - 1);

out:
    cpu_intr_restore(flags);
}

/* Arming ------------------------------------------------------------------
 */

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
    memset(pc->stats, 0, nr * sizeof(*pc->stats));

    for (unsigned int i = 0; i < nr; i++) {
        pc->stats[i].min = UINT64_MAX;
        pc->stats[i].self_min = UINT64_MAX;
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
                  + nr_stats * sizeof(struct perfmon_region_stats)
                  + set->nr_regions * sizeof(unsigned int);
    struct perfmon_region_cpu *pc = kmem_zalloc(size);
    int error = 0;

    if (pc == NULL) {
        return -ENOMEM;
    }

    pc->size = size;
    pc->stats = (struct perfmon_region_stats *)(pc + 1);
    pc->every_left = (unsigned int *)(pc->stats + nr_stats);
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
    set->fast = (config->nr_events == 1 && config->every == 1);
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

static void
perfmon_region_copy_xcall(void *arg)
{
    struct perfmon_region_copy *copy = arg;
    struct perfmon_region_cpu *pc = copy->pc;
    unsigned int nr = copy->set->nr_regions * copy->set->config.nr_events;

    WRITE_ONCE(pc->busy, true);
    barrier();

    if (copy->stats == NULL) {
        perfmon_region_cpu_clear(pc, nr);
        memset(pc->every_left, 0,
               copy->set->nr_regions * sizeof(*pc->every_left));
    } else {
        memcpy(copy->stats, pc->stats, nr * sizeof(*pc->stats));
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
