/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Code regions (kern/perfmon_region.h): the regions defined, and the
 * markers' path when armed (the arming: perfmon_region_arm.c).
 *
 * An arming is one struct perfmon_region_set, with a struct
 * perfmon_region_cpu for each CPU it measures, found through
 * perfmon_region_cpus[]: that CPU's events, its stack of open regions,
 * its counts (perfmon_region.h).  A CPU's part is written by that CPU
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
 * the copy xcall (perfmon_region_arm.c) change several fields of a count:
 * they set busy, and first close the short path of the counts they
 * change (hot->lo above hot->hi), so that an NMI's end of those regions
 * takes the general path, sees busy and drops its call.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon/perfmon_event.h"
#include "kern/perfmon/perfmon_region.h"
#include "kern/perfmon_region.h"
#include "kern/string.h"

/* Both documented in perfmon_region.h. */
struct perfmon_region_cpu perfmon_region_cpu_none = {
    .top = &perfmon_region_cpu_none.stack[1],
    .limit = &perfmon_region_cpu_none.stack[0],
};

struct perfmon_region_cpu *perfmon_region_cpus[CPU_MAX] = {
    [0 ... CPU_MAX - 1] = &perfmon_region_cpu_none,
};

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
