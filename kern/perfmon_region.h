/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Code regions: what a stretch of kernel code costs, counted by perfmon
 * events on the CPU that runs it.
 *
 * A module declares a region at file scope, and marks where it begins and
 * ends:
 *
 *   PERFMON_REGION_DEFINE(xcall, "xcall");
 *   ...
 *   PERFMON_REGION_BEGIN(xcall);
 *   ... the code measured ...
 *   PERFMON_REGION_END(xcall);
 *
 * or, in a function with several returns, PERFMON_REGION_SCOPE(xcall) at
 * the point where the region begins: it ends when the enclosing block is
 * left.  Each definition places one struct perfmon_region in the linker
 * section "perfmon_regions", as shell commands and init operations are
 * declared: no registration call.  Nothing is measured until the regions
 * are armed (perfmon_region_arm(), `perfmon regions`); until then a
 * marker is one test of one word, its region's armed flag.
 *
 * Armed, a begin reads the events of the CPU it runs on, an end reads them
 * again and adds the difference to that region's statistics for that CPU:
 * calls, sum, min, max and the largest calls.  With one event, a call
 * that changes only calls and sum costs about two local reads of a CPU
 * event (`perfmon bench`, row 2n).  Regions nest: each CPU
 * keeps a stack of the regions open on it, a region's counts include its
 * children's, and their share is kept apart so that its own cost can be
 * shown (self).  Events are CPU events: they count everything the CPU
 * runs between the two reads, an interrupt's handler too when the event
 * counts those (the step PMU's instructions count no handler).
 *
 * Markers may be used in any context: thread context with preemption
 * enabled or not, with interrupts disabled, in interrupt and NMI handlers.
 * The marker path takes no lock; it disables interrupts around its own
 * reads and updates, and an NMI whose marker lands while its CPU's
 * statistics are being changed drops its call (counted as dropped).  A
 * thread that moves to another CPU between begin and end leaves an
 * unmatched frame on the first CPU, dropped when its stack is next popped
 * past it, and an end the second CPU cannot match (both counted).
 */

#ifndef KERN_PERFMON_REGION_H
#define KERN_PERFMON_REGION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/macros.h"

/*
 * A region.  name is unique among regions; armed, the one word a marker
 * tests, is nonzero while the region is measured (written by the arming
 * thread, read by markers in any context).  The structure has the
 * section's stride: the section is an array of them.  in_section: the
 * region runs inside perfmon's own overflow section, after its fold (a
 * sample's write), where the per-CPU counter state is the section's and
 * stable: its reads are allowed there.
 */
struct perfmon_region {
    const char *name;
    unsigned int armed;
    bool in_section;
} __aligned(16);

#define PERFMON_REGION_DEFINE_FLAGS(ident, name_, in_section_)              \
    static struct perfmon_region perfmon_region_##ident                     \
        __used __section("perfmon_regions") __aligned(16) = {               \
        .name = (name_),                                                    \
        .in_section = (in_section_),                                        \
    }

#define PERFMON_REGION_DEFINE(ident, name_)                                 \
    PERFMON_REGION_DEFINE_FLAGS(ident, name_, false)

void perfmon_region_begin_slow(struct perfmon_region *region);
void perfmon_region_end_slow(struct perfmon_region *region);

/*
 * Host builds of the modules that carry markers have no region core:
 * there the markers are nothing, except in the tests of the core itself,
 * which define PERFMON_REGION_HOST_MARKERS.
 */
#if defined(TALLY_HOST_TEST) && !defined(PERFMON_REGION_HOST_MARKERS)
#define PERFMON_REGION_BEGIN(ident)     ((void)0)
#define PERFMON_REGION_END(ident)       ((void)0)
#define PERFMON_REGION_SCOPE(ident)     ((void)0)
#else
/*
 * The test is one compare with the flag's address in the instruction and
 * a branch: a load would take a register and a test more, and a pointer
 * held in a register for the call a register more.  Host tests (position
 * independent) read the flag in C.
 */
#ifdef TALLY_HOST_TEST
#define PERFMON_REGION_TEST(region, label)                                  \
    if (__atomic_load_n(&(region)->armed, __ATOMIC_RELAXED)) {              \
        goto label;                                                         \
    }
#else
#define PERFMON_REGION_TEST(region, label)                                  \
    __asm__ goto("cmpl $0, %c0(%%rip)\n\t"                                 \
                 "jne %l[" #label "]"                                       \
                 : : "i"(&(region)->armed) : "cc" : label)
#endif

static inline __attribute__((always_inline)) void
perfmon_region_begin(struct perfmon_region *region)
{
    PERFMON_REGION_TEST(region, slow);
    return;
slow:
    perfmon_region_begin_slow(region);
}

static inline __attribute__((always_inline)) void
perfmon_region_end(struct perfmon_region *region)
{
    PERFMON_REGION_TEST(region, slow);
    return;
slow:
    perfmon_region_end_slow(region);
}

static inline __attribute__((always_inline)) void
perfmon_region_scope_end(struct perfmon_region **regionp)
{
    perfmon_region_end(*regionp);
}

#define PERFMON_REGION_BEGIN(ident)                                         \
    perfmon_region_begin(&perfmon_region_##ident)
#define PERFMON_REGION_END(ident)                                           \
    perfmon_region_end(&perfmon_region_##ident)
#define PERFMON_REGION_SCOPE(ident)                                         \
    struct perfmon_region *perfmon_region_scope_##ident                     \
        __attribute__((cleanup(perfmon_region_scope_end))) =                \
        &perfmon_region_##ident;                                            \
    perfmon_region_begin(perfmon_region_scope_##ident)
#endif

/*
 * Arming, for `perfmon regions` and the tests.  Thread context, one user
 * at a time (the caller serialises: the shell runs one command).
 */
#define PERFMON_REGION_MAX_EVENTS   8   /* events per arming */
#define PERFMON_REGION_MAX_DEPTH    16  /* regions open at once on a CPU */
#define PERFMON_REGION_NR_WORST     3   /* largest calls kept */
#define PERFMON_REGION_EVERY_MAX    1000000

/* An event to count: as perfmon_event_init() and _set_dev() take it. */
struct perfmon_region_event {
    uint64_t id;
    unsigned int flags;
    struct perfmon_dev *dev;            /* NULL: the core chooses */
};

/*
 * What to arm: the events, the CPUs (a mask of online CPUs), one call in
 * every (1: each call), and the regions (names[0..nr_names); none: all).
 */
struct perfmon_region_config {
    const struct perfmon_region_event *events;
    unsigned int nr_events;
    uint64_t cpus;
    unsigned int every;
    const char *const *names;
    unsigned int nr_names;
};

/*
 * Arm the regions.  Returns 0, or -EBUSY (already armed), -EINVAL (no
 * event or more than PERFMON_REGION_MAX_EVENTS, no CPU, a CPU not online,
 * every outside 1..PERFMON_REGION_EVERY_MAX, a NULL name), -ENOENT (a name
 * no region has: *badp names it), -ENOMEM, or an event's attach error
 * (*bad_eventp says which); nothing stays armed or allocated on error.
 * perfmon_region_disarm(): stop measuring and free everything (0, or
 * -ENOENT when nothing was armed).  perfmon_region_reset(): every count
 * back to 0, the regions staying armed (-ENOENT when none are).
 */
int perfmon_region_arm(const struct perfmon_region_config *config,
                       const char **badp, unsigned int *bad_eventp);
int perfmon_region_disarm(void);
int perfmon_region_reset(void);

/* Whether the regions are armed, and with what (NULL when not). */
const struct perfmon_region_config *perfmon_region_armed(void);

/* The regions defined in this kernel, 0..perfmon_region_count() - 1. */
unsigned int perfmon_region_count(void);
const struct perfmon_region *perfmon_region_get(unsigned int index);
const struct perfmon_region *perfmon_region_find(const char *name);

/*
 * One region's counts of one event on one CPU.  calls: the calls
 * measured; seen: the calls that ended there (with every > 1, all of
 * them); sum, min, max over the measured calls (min UINT64_MAX before the
 * first), the self_ fields the same of each call less what the regions
 * nested in it counted; worst: the largest calls, largest first (0: fewer
 * calls).
 */
struct perfmon_region_stats {
    uint64_t calls;
    uint64_t seen;
    uint64_t sum;
    uint64_t min;
    uint64_t max;
    uint64_t self_sum;
    uint64_t self_min;
    uint64_t self_max;
    uint64_t worst[PERFMON_REGION_NR_WORST];
};

/*
 * What went wrong on one CPU: calls an NMI dropped (the statistics were
 * being changed under it), calls whose reads failed (the counter needed a
 * fold, or the marker landed in a perfmon section), frames beyond
 * PERFMON_REGION_MAX_DEPTH, ends that matched no open region, and frames
 * left open by a begin whose end never came (a thread that moved).
 */
struct perfmon_region_losses {
    uint64_t dropped;
    uint64_t unread;
    uint64_t too_deep;
    uint64_t unmatched;
    uint64_t abandoned;
};

/*
 * A snapshot of one armed CPU's counts, taken on that CPU (an xcall), so
 * that its fields agree: stats[region index * nr_events + event].  Returns
 * 0, -ENOENT when nothing is armed, -EINVAL for a CPU not armed or a stats
 * array of fewer than perfmon_region_count() * nr_events entries.
 */
int perfmon_region_snapshot(unsigned int cpu,
                            struct perfmon_region_stats *stats, size_t nr,
                            struct perfmon_region_losses *losses);

/*
 * Event e of the arming on cpu: its times enabled and running, in ns, as
 * perfmon_event_read_times() gives them.  0, or -ENOENT / -EINVAL.
 */
int perfmon_region_event_times(unsigned int cpu, unsigned int e,
                               uint64_t *enabled_nsp, uint64_t *running_nsp);

#ifdef TALLY_HOST_TEST
/* Disarm whatever a test left armed. */
void perfmon_region_test_reset(void);
#endif

#endif /* KERN_PERFMON_REGION_H */
