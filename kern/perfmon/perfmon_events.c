/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The one table of generic events: the names users type and see, their
 * descriptions and the modes they tell apart (kern/perfmon.h).  Its own
 * file so that code linking a stand-in for the rest of the core (the
 * software PMU's host test) reads the same table.
 */

#include <stdbool.h>
#include <stddef.h>

#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/string.h"

/*
 * Every generic event, indexed by PERFMON_EV_*: the names users type and
 * see, in `perfmon list`, the event parser and the suggestions.
 */
static const struct perfmon_event_desc perfmon_events[PERFMON_NR_EVENTS] = {
    [PERFMON_EV_CYCLE] = {
        "cycles", { "cpu-cycles" }, "CPU core cycles", PERFMON_EF_MODE,
    },
    [PERFMON_EV_REF_CYCLE] = {
        "ref-cycles", { NULL }, "reference cycles, at a constant rate",
        PERFMON_EF_MODE,
    },
    [PERFMON_EV_INSTRUCTION] = {
        "instructions", { NULL }, "instructions retired", PERFMON_EF_MODE,
    },
    [PERFMON_EV_CACHE_REF] = {
        "cache-references", { NULL }, "last-level cache references",
        PERFMON_EF_MODE,
    },
    [PERFMON_EV_CACHE_MISS] = {
        "cache-misses", { NULL }, "last-level cache misses", PERFMON_EF_MODE,
    },
    [PERFMON_EV_BRANCH] = {
        "branches", { "branch-instructions" }, "branch instructions retired",
        PERFMON_EF_MODE,
    },
    [PERFMON_EV_BRANCH_MISS] = {
        "branch-misses", { NULL }, "mispredicted branches retired",
        PERFMON_EF_MODE,
    },
    [PERFMON_EV_TASK_CLOCK] = {
        "task-clock", { "cpu-clock" },
        "TSC cycles while counting (shown in msec)", 0,
    },
    [PERFMON_EV_CONTEXT_SWITCH] = {
        "context-switches", { "cs" }, "context switches", PERFMON_EF_KERN,
    },
    [PERFMON_EV_MIGRATION] = {
        "cpu-migrations", { "migrations" }, "moves of a thread to another CPU",
        PERFMON_EF_KERN,
    },
    [PERFMON_EV_INTERRUPT] = {
        "interrupts", { NULL }, "interrupts taken", PERFMON_EF_KERN,
    },
    [PERFMON_EV_XCALL] = {
        "xcalls", { "xcalls-served" }, "cross-CPU calls run here",
        PERFMON_EF_KERN,
    },
    [PERFMON_EV_NMI] = {
        "nmis", { NULL }, "non-maskable interrupts", PERFMON_EF_KERN,
    },
    [PERFMON_EV_TEST] = {
        "test", { NULL }, "software test event (softpmu)", PERFMON_EF_KERN,
    },
    [PERFMON_EV_XCALL_SENT] = {
        "xcalls-sent", { NULL }, "cross-CPU calls sent from here",
        PERFMON_EF_KERN,
    },
};

/* ---- generic events ------------------------------------------------------ */

const struct perfmon_event_desc *
perfmon_event_desc(unsigned int id)
{
    return (id < ARRAY_SIZE(perfmon_events)) ? &perfmon_events[id] : NULL;
}

/* Whether name is generic event id's name or one of its aliases. */
static bool
perfmon_event_desc_matches(const struct perfmon_event_desc *desc,
                           const char *name)
{
    if (strcmp(desc->name, name) == 0) {
        return true;
    }

    for (size_t i = 0; i < ARRAY_SIZE(desc->aliases); i++) {
        if (desc->aliases[i] == NULL) {
            break;
        }

        if (strcmp(desc->aliases[i], name) == 0) {
            return true;
        }
    }

    return false;
}

/* The generic id named name, or -1. */
int
perfmon_event_find(const char *name)
{
    for (unsigned int id = 0; id < ARRAY_SIZE(perfmon_events); id++) {
        if (perfmon_event_desc_matches(&perfmon_events[id], name)) {
            return (int)id;
        }
    }

    return -1;
}
