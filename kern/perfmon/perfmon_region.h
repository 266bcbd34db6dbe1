/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Code regions' per-CPU state (perfmon_region.c), private to the core:
 * what the markers use, for the arming above them (perfmon_region_arm.c;
 * see perfmon_i.h for the order).
 */

#ifndef KERN_PERFMON_PERFMON_REGION_H
#define KERN_PERFMON_PERFMON_REGION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon_region.h"

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

/*
 * The part of a CPU not armed: no set, a begin past its limit, an empty
 * stack.  Markers read it and take the general path, which writes nothing
 * there.
 */
extern struct perfmon_region_cpu perfmon_region_cpu_none;

/*
 * Each CPU's part of the arming, perfmon_region_cpu_none when it has
 * none: stored with release by the arming thread, read by markers on
 * their own CPU (interrupts disabled).
 */
extern struct perfmon_region_cpu *perfmon_region_cpus[CPU_MAX];

static inline unsigned int
perfmon_region_index(const struct perfmon_region *region)
{
    return (unsigned int)(region - __start_perfmon_regions);
}

/* Close the short path of a count, before the general path changes it. */
static inline void
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
static inline void
perfmon_region_hot_open(struct perfmon_region_hot *hot,
                        const struct perfmon_region_cold *cold)
{
    barrier();
    WRITE_ONCE(hot->hi, MIN(cold->worst[PERFMON_REGION_NR_WORST - 1],
                            cold->self_max));
    WRITE_ONCE(hot->lo, MAX(cold->min, cold->self_min));
}

#endif /* KERN_PERFMON_PERFMON_REGION_H */
