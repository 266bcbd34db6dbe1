/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Code regions (kern/perfmon_region.h): arming, and the markers' path
 * when armed.
 *
 * An arming is one struct perfmon_region_set, published through
 * perfmon_region_set, with a struct perfmon_region_cpu for each CPU it
 * measures, found through perfmon_region_cpus[]: that CPU's events, its
 * stack of open regions, its counts.  A CPU's part is written by that CPU
 * only, with interrupts disabled (markers, and the xcalls that reset and
 * copy it), so the marker path needs no lock; the one context that can
 * still land in the middle of such a change is an NMI.
 *
 * The common call (one event, every call measured, the region on top of
 * the stack, nothing nested in it, a count inside the range its
 * statistics already cover)
 * takes the short path: a begin pushes a frame and stores the counter
 * record's value, read in place as a local read does; an end reads it
 * again and adds the difference to the region's calls and sum on that
 * CPU, and to its parent frame's children.  Min, max, self and the
 * largest calls cannot change for such a call, so they are left alone:
 * the short path is taken only while the count lies between hot->lo and
 * hot->hi, which the general path sets from those statistics.  Every
 * other call takes the general path, out of line: several events, one
 * call in N, a frame not on top, a counter to fold or read through the
 * device's op, a marker inside a perfmon section, a count that moves min,
 * max or the largest, a region with children (self).  An end that read
 * its count passes it on: a call counts the same whichever path its end
 * then takes.
 *
 * NMIs: the stack is pushed by growing top before the frame is written
 * and popped by shrinking it after the frame was read, so an NMI's frames
 * always go above.  The short path's updates are single instructions
 * (perfmon_region_add), which an NMI cannot split.  The general path and
 * the copy xcall change several fields of a count: they set busy, and
 * first close the short path of the counts they change (hot->lo above
 * hot->hi), so that an NMI's end of those regions takes the general path,
 * sees busy and drops its call.
 *
 * Disarming clears the regions' flags, the CPUs' pointers and the set
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
#include "kern/perfmon/perfmon_event.h"
#include "kern/perfmon_region.h"
#include "kern/string.h"
#include "kern/xcall.h"

/* The linker section of the regions (linker.ld): an array. */
extern struct perfmon_region __start_perfmon_regions[];
extern struct perfmon_region __stop_perfmon_regions[];

/*
 * How a frame's call is measured: the low bits of its key, beside the
 * region's address (regions are 16-byte aligned).  A key with any of them
 * set matches no region on the short path.
 */
#define PERFMON_REGION_SKIPPED      0x1 /* --every: not this call */
#define PERFMON_REGION_UNREAD       0x2 /* a begin read failed */
#define PERFMON_REGION_GENERAL      0x4 /* several events: the general end */
#define PERFMON_REGION_KEY_STATE    0xf

_Static_assert(__alignof__(struct perfmon_region) > PERFMON_REGION_KEY_STATE,
               "a region's address leaves the key's state bits clear");

/*
 * An open region on a CPU's stack: key (the region, and how it is
 * measured), its counts at the begin, and what the regions that opened
 * and closed inside it counted (child).
 */
struct perfmon_region_frame {
    uintptr_t key;
    uint64_t start[PERFMON_REGION_MAX_EVENTS];
    uint64_t child[PERFMON_REGION_MAX_EVENTS];
};

/*
 * A region's counts of one event on one CPU, the part the short path
 * changes: calls measured and their sum, and the range of counts it may
 * take (lo..hi: those that leave the other statistics as they are; lo
 * above hi closes it).  Two regions' stride, so that the short path finds
 * a region's from its address in one multiply by 2 (hot_bias).
 */
struct perfmon_region_hot {
    uint64_t calls;
    uint64_t sum;
    uint64_t lo;
    uint64_t hi;
};

_Static_assert(sizeof(struct perfmon_region_hot)
               == 2 * sizeof(struct perfmon_region),
               "hot counts are found at twice a region's offset");

/*
 * The rest of them, changed by the general path only: calls seen and not
 * measured (skipped, unread), min, max, self min and max, what the calls'
 * children took off their self sum, and the largest calls.
 */
struct perfmon_region_cold {
    uint64_t unmeasured;
    uint64_t min;
    uint64_t max;
    uint64_t self_min;
    uint64_t self_max;
    uint64_t child_sum;
    uint64_t worst[PERFMON_REGION_NR_WORST];
};

/*
 * One CPU's part of an arming, written by that CPU only with interrupts
 * disabled.  The short path's fields come first.  top: the next free
 * frame, above stack[0], a frame no region's key matches (the first
 * frame's parent: its children sum is never read).  limit: a begin at or
 * past it takes the general path (the end of the stack, or its start
 * when the arming has more than one event or skips calls).  cpu and
 * record_offset: the perfmon state of this CPU and where the first
 * event's counter record lies in it.  hot_bias: the hot counts of the
 * region at address r are at hot_bias + 2 * r (one event).  busy: counts
 * being changed or copied by the general path (an NMI's then drops its
 * call).  hot and cold[region * nr_events + event]; every_left[region]:
 * calls to skip before the next measured one.
 */
struct perfmon_region_cpu {
    struct perfmon_region_frame *top;
    struct perfmon_region_frame *limit;
    const struct perfmon_cpu *cpu;
    unsigned long record_offset;
    uintptr_t hot_bias;
    bool busy;
    const struct perfmon_region_set *set;
    struct perfmon_region_losses losses;
    struct perfmon_event events[PERFMON_REGION_MAX_EVENTS];
    struct perfmon_region_frame stack[PERFMON_REGION_MAX_DEPTH + 1];
    struct perfmon_region_hot *hot;
    struct perfmon_region_cold *cold;
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
    struct perfmon_region_cpu *cpus[CPU_MAX];
};

/* The arming, or NULL: stored with release, loaded with acquire. */
static struct perfmon_region_set *perfmon_region_set;

/*
 * The part of a CPU not armed: no set, a begin past its limit, an empty
 * stack.  Markers read it and take the general path, which writes nothing
 * here.
 */
static struct perfmon_region_cpu perfmon_region_cpu_none = {
    .top = &perfmon_region_cpu_none.stack[1],
    .limit = &perfmon_region_cpu_none.stack[0],
};

/*
 * Each CPU's part of the arming, perfmon_region_cpu_none when it has
 * none: stored with release by the arming thread, read by markers on
 * their own CPU (interrupts disabled).
 */
static struct perfmon_region_cpu *perfmon_region_cpus[CPU_MAX] = {
    [0 ... CPU_MAX - 1] = &perfmon_region_cpu_none,
};

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

/*
 * The calling CPU's index, for an array: its 32-bit load clears the upper
 * half, where cpu_id()'s unsigned int takes a move more to widen.
 */
static inline __attribute__((always_inline)) unsigned long
perfmon_region_cpu_index(void)
{
#ifdef TALLY_HOST_TEST
    return cpu_id();
#else
    unsigned long id;

    __asm__ __volatile__("movl %%gs:%c1, %k0" : "=r"(id)
                         : "i"(offsetof(struct cpu, id)));
    return id;
#endif
}

/* The calling CPU's part of the arming.  Interrupts disabled. */
static inline __attribute__((always_inline)) struct perfmon_region_cpu *
perfmon_region_cpu_local(void)
{
    return __atomic_load_n(&perfmon_region_cpus[perfmon_region_cpu_index()],
                           __ATOMIC_ACQUIRE);
}

/*
 * Add to a count of this CPU's in one instruction, which an NMI landing
 * on this CPU cannot split (no lock: no other CPU writes it).
 */
static inline __attribute__((always_inline)) void
perfmon_region_add(uint64_t *count, uint64_t delta)
{
#ifdef TALLY_HOST_TEST
    *count += delta;
#else
    __asm__("addq %1, %0" : "+m"(*count) : "er"(delta));
#endif
}

/* The hot counts of region, one event armed. */
static inline __attribute__((always_inline)) struct perfmon_region_hot *
perfmon_region_hot_of(const struct perfmon_region_cpu *pc,
                      const struct perfmon_region *region)
{
    return (struct perfmon_region_hot *)(pc->hot_bias
                                         + 2 * (uintptr_t)region);
}

/* Close the short path of a count, before the general path changes it. */
static void
perfmon_region_hot_close(struct perfmon_region_hot *hot)
{
    WRITE_ONCE(hot->lo, UINT64_MAX);
    WRITE_ONCE(hot->hi, 0);
    barrier();
}

/*
 * Open it to the counts that leave cold as it is: of a call with no
 * children (its self is its count), min <= count <= the smallest of the
 * largest calls, self_min <= count <= self_max.  Closed (lo above hi)
 * until there are as many calls as largest ones kept.  lo last: it
 * closes the range until then.
 */
static void
perfmon_region_hot_open(struct perfmon_region_hot *hot,
                        const struct perfmon_region_cold *cold)
{
    barrier();
    WRITE_ONCE(hot->hi, MIN(cold->worst[PERFMON_REGION_NR_WORST - 1],
                            cold->self_max));
    WRITE_ONCE(hot->lo, MAX(cold->min, cold->self_min));
}

/* The marker path ----------------------------------------------------------
 */

/*
 * The value of event e's counter record on this CPU (in the same terms as
 * the short path's), in *valuep; false when it cannot be read here: a
 * marker in a perfmon section other than the overflow section's own (its
 * region not in_section), a fold needed there.  Read in place by any
 * method, the device's op included, again while a section (an NMI's)
 * changed the record meanwhile; a counter due for a fold is read by
 * perfmon_event_read_here(), whose count is the record's value plus what
 * the event counted before its start, a constant while the event stays
 * enabled, as a region's events do.
 */
static bool
perfmon_region_read(struct perfmon_region_cpu *pc, unsigned int e,
                    bool in_section, uint64_t *valuep)
{
    struct perfmon_event *event = &pc->events[e];
    const struct perfmon_cpu *cpu = pc->cpu;
    const struct perfmon_cpu_pmc *pmc =
        (const void *)((const char *)cpu + event->record_offset);
    unsigned long gen;
    uint64_t value;

    if (in_section || !READ_ONCE(cpu->busy)) {
        do {
            gen = READ_ONCE(cpu->gen);
            barrier();

            if (!perfmon_cpu_pmc_peek(pmc, valuep)) {
                goto fold;
            }

            barrier();
        } while (READ_ONCE(cpu->gen) != gen);

        return true;
    }

fold:
    if (!perfmon_event_read_here(event, in_section, &value)) {
        return false;
    }

    *valuep = value - event->total.value + event->start.value;
    return true;
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

/* One measured call of count, self of it its own, into hot and cold. */
static void
perfmon_region_stats_add(struct perfmon_region_hot *hot,
                         struct perfmon_region_cold *cold, uint64_t count,
                         uint64_t self)
{
    perfmon_region_hot_close(hot);
    hot->calls++;
    hot->sum += count;
    cold->min = MIN(cold->min, count);
    cold->max = MAX(cold->max, count);
    cold->self_min = MIN(cold->self_min, self);
    cold->self_max = MAX(cold->self_max, self);
    cold->child_sum += count - self;
    perfmon_region_worst_add(cold->worst, count);
    perfmon_region_hot_open(hot, cold);
}

/*
 * Close frame, of nr events, with the counts now (valid unless the end's
 * reads failed: read false), under the busy flag; the caller pops it.
 */
static void
perfmon_region_close(struct perfmon_region_cpu *pc,
                     struct perfmon_region_frame *frame, unsigned int nr,
                     const uint64_t *now, bool read)
{
    const struct perfmon_region *region =
        (const void *)(frame->key & ~(uintptr_t)PERFMON_REGION_KEY_STATE);
    bool skipped = frame->key & PERFMON_REGION_SKIPPED;
    bool measured = read && !skipped
                    && !(frame->key & PERFMON_REGION_UNREAD);
    unsigned int base;

    if (READ_ONCE(pc->busy)) {
        perfmon_region_add(&pc->losses.dropped, 1);
        return;
    }

    WRITE_ONCE(pc->busy, true);
    barrier();

    if (!measured && !skipped) {
        pc->losses.unread++;
    }

    base = perfmon_region_index(region) * nr;

    for (unsigned int e = 0; e < nr; e++) {
        uint64_t count = now[e] - frame->start[e], child = frame->child[e];

        if (!measured) {
            pc->cold[base + e].unmeasured++;
            continue;
        }

        perfmon_region_stats_add(&pc->hot[base + e], &pc->cold[base + e],
                                 count, (count > child) ? count - child : 0);

        /* Below frame: no NMI's end writes it. */
        frame[-1].child[e] += count;
    }

    barrier();
    WRITE_ONCE(pc->busy, false);
}

/*
 * A begin beyond the short path: no arming here, a stack full, several
 * events, one call in N, a marker inside a perfmon section, a counter to
 * fold or read through its op.
 */
static void __attribute__((noinline))
perfmon_region_begin_general(struct perfmon_region *region)
{
    unsigned long flags = cpu_intr_save();
    struct perfmon_region_cpu *pc = perfmon_region_cpu_local();
    const struct perfmon_region_set *set = pc->set;
    struct perfmon_region_frame *frame = pc->top;
    uintptr_t key = (uintptr_t)region;
    unsigned int *left;

    if (set == NULL) {
        goto out;
    }

    if (unlikely(frame == &pc->stack[ARRAY_SIZE(pc->stack)])) {
        perfmon_region_add(&pc->losses.too_deep, 1);
        goto out;
    }

    WRITE_ONCE(pc->top, frame + 1);
    barrier();

    if (set->config.nr_events > 1) {
        key |= PERFMON_REGION_GENERAL;
    }

    frame->key = key;

    /* A lost update from an NMI only moves which call is measured. */
    if (set->config.every != 1) {
        left = &pc->every_left[perfmon_region_index(region)];

        if (*left > 1) {
            (*left)--;
            frame->key = key | PERFMON_REGION_SKIPPED;
            goto out;
        }

        *left = set->config.every;
    }

    /* The reads last: what comes before them is not counted. */
    for (unsigned int e = 0; e < set->config.nr_events; e++) {
        frame->child[e] = 0;

        if (!perfmon_region_read(pc, e, region->in_section,
                                 &frame->start[e])) {
            frame->key = key | PERFMON_REGION_UNREAD;
        }
    }

out:
    cpu_intr_restore(flags);
}

/*
 * A begin the short path leaves, with interrupts disabled (flags: as they
 * were).  frame NULL: not its case, for the general path.  Otherwise the
 * frame it pushed, not read in place (a counter read through the device's
 * op, or due for a fold): read here, marked unread when that fails.  One
 * function, so that the short path has one call to make, whose frame only
 * the calls that make it set up.
 */
static void __attribute__((noinline))
perfmon_region_begin_other(struct perfmon_region *region,
                           struct perfmon_region_frame *frame,
                           unsigned long flags)
{
    if (frame == NULL) {
        cpu_intr_restore(flags);
        perfmon_region_begin_general(region);
        return;
    }

    if (!perfmon_region_read(perfmon_region_cpu_local(), 0, false,
                             &frame->start[0])) {
        frame->key |= PERFMON_REGION_UNREAD;
    }

    cpu_intr_restore(flags);
}

/*
 * The short path of a begin (see the top): one event, every call, room on
 * the stack, the counter read in place.  Anything else is left as it was
 * for the general path.
 */
void
perfmon_region_begin_slow(struct perfmon_region *region)
{
    unsigned long flags = cpu_intr_save();
    struct perfmon_region_cpu *pc = perfmon_region_cpu_local();
    struct perfmon_region_frame *frame = pc->top;
    const struct perfmon_cpu *cpu = pc->cpu;
    unsigned long offset = pc->record_offset;
    uint64_t value;

    /* A plain load of busy: one compare; no other CPU writes it. */
    if (likely(frame < pc->limit) && likely(!cpu->busy)) {
        WRITE_ONCE(pc->top, frame + 1);
        barrier();
        frame->key = (uintptr_t)region;
        frame->child[0] = 0;

        /*
         * The read last: what comes before it is not counted.  Neither pc
         * nor region is kept across it (registers): the frame has region.
         */
        if (likely(perfmon_cpu_pmc_read_fast(cpu, offset, NULL, &value))) {
            frame->start[0] = value;
            cpu_intr_restore(flags);
            return;
        }
    } else {
        frame = NULL;
    }

    perfmon_region_begin_other(region, frame, flags);
}

/* The open frame of region, searched from the top: NULL when none is. */
static struct perfmon_region_frame *
perfmon_region_find_frame(struct perfmon_region_cpu *pc,
                          const struct perfmon_region *region)
{
    struct perfmon_region_frame *top = pc->top, *frame = top - 1;

    while (frame > pc->stack
           && (frame->key & ~(uintptr_t)PERFMON_REGION_KEY_STATE)
              != (uintptr_t)region) {
        frame--;
    }

    if (frame == pc->stack) {
        perfmon_region_add(&pc->losses.unmatched, 1);
        return NULL;
    }

    /* Frames above it were opened by begins whose end never came here. */
    perfmon_region_add(&pc->losses.abandoned, (uint64_t)(top - frame - 1));
    return frame;
}

/*
 * An end beyond the short path, not read yet: no arming here, a region
 * not on top, several events, a call skipped or unread, a marker inside a
 * perfmon section, a counter to fold or read through its op.
 */
static void __attribute__((noinline))
perfmon_region_end_general(struct perfmon_region *region)
{
    uint64_t now[PERFMON_REGION_MAX_EVENTS];
    unsigned long flags = cpu_intr_save();
    struct perfmon_region_cpu *pc = perfmon_region_cpu_local();
    const struct perfmon_region_set *set = pc->set;
    struct perfmon_region_frame *frame = pc->top - 1;
    bool read = true;

    if (set == NULL) {
        goto out;
    }

    if ((frame->key & ~(uintptr_t)PERFMON_REGION_KEY_STATE)
        != (uintptr_t)region) {
        frame = perfmon_region_find_frame(pc, region);

        if (frame == NULL) {
            goto out;
        }
    }

    /* The reads first: what comes after them is not counted. */
    if (!(frame->key & (PERFMON_REGION_SKIPPED | PERFMON_REGION_UNREAD))) {
        for (unsigned int e = 0; e < set->config.nr_events; e++) {
            read &= perfmon_region_read(pc, e, region->in_section, &now[e]);
        }
    }

    perfmon_region_close(pc, frame, set->config.nr_events, now, read);
    barrier();
    WRITE_ONCE(pc->top, frame);

out:
    cpu_intr_restore(flags);
}

/*
 * An end the short path leaves, with interrupts disabled (flags: as they
 * were).  frame: the region's, on top, read (count: the call's), whose
 * count changes more than calls and sum or which has children: counted
 * from that read.  frame NULL: one the short path did not read;
 * read here when the region is on top and its counter could not be read
 * in place (read through the device's op, or due for a fold), otherwise
 * for the general path.  One function, so that the short path has one
 * call to make, whose frame only the calls that make it set up.
 */
static void __attribute__((noinline))
perfmon_region_end_other(struct perfmon_region *region,
                         struct perfmon_region_cpu *pc,
                         struct perfmon_region_frame *frame, uint64_t count,
                         unsigned long flags)
{
    bool read = true;
    uint64_t now;

    if (frame != NULL) {
        now = frame->start[0] + count;
    } else {
        frame = pc->top - 1;

        if (frame->key != (uintptr_t)region || READ_ONCE(pc->cpu->busy)) {
            cpu_intr_restore(flags);
            perfmon_region_end_general(region);
            return;
        }

        read = perfmon_region_read(pc, 0, false, &now);
    }

    perfmon_region_close(pc, frame, 1, &now, read);
    barrier();
    WRITE_ONCE(pc->top, frame);
    cpu_intr_restore(flags);
}

/*
 * The short path of an end (see the top): one event, the region on top,
 * its begin read, the counter read in place, a count within the hot
 * range, no children.
 */
void
perfmon_region_end_slow(struct perfmon_region *region)
{
    unsigned long flags = cpu_intr_save();
    struct perfmon_region_cpu *pc = perfmon_region_cpu_local();
    struct perfmon_region_frame *frame = pc->top - 1;
    const struct perfmon_cpu *cpu = pc->cpu;
    struct perfmon_region_hot *hot;
    uint64_t count = 0;

    /*
     * The read first: what comes after it is not counted.  Neither frame
     * nor region is kept across it (registers): pc->top has the one, the
     * frame's key the other.
     */
    if (likely(frame->key == (uintptr_t)region) && likely(!cpu->busy)
        && likely(perfmon_cpu_pmc_read_fast(cpu, pc->record_offset, NULL,
                                            &count))) {
        frame = pc->top - 1;
        count -= frame->start[0];
        hot = perfmon_region_hot_of(pc, (const void *)frame->key);

        if (likely(frame->child[0] == 0) && likely(count >= hot->lo)
            && likely(count <= hot->hi)) {
            perfmon_region_add(&hot->calls, 1);
            perfmon_region_add(&hot->sum, count);
            perfmon_region_add(&frame[-1].child[0], count);
            barrier();
            WRITE_ONCE(pc->top, frame);
            cpu_intr_restore(flags);
            return;
        }
    } else {
        frame = NULL;
    }

    perfmon_region_end_other(region, pc, frame, count, flags);
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
