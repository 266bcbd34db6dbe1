/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Event names the user typed, resolved for the `perfmon` subcommands
 * (stat, record, top, regions): a parsed event (perf's -e syntax) to the
 * id, flags and device the core counts it with, or one line saying why
 * not, with the closest names of the generic events, the devices' and
 * the boot CPU model's.  Thread context.
 */

#ifndef KERN_PERFMON_CMD_PERFMON_RESOLVE_H
#define KERN_PERFMON_CMD_PERFMON_RESOLVE_H

#include <stdbool.h>
#include <stdint.h>

#include "kern/perfmon.h"

/*
 * How to count an event the user named (perf's -e syntax, parsed): the id
 * and flags for perfmon_event_init(), the device of a device-named raw
 * event or of a `PMU/EVENT/` item (else NULL: the core chooses), the
 * generic id when it is one (-1 otherwise), and whether any device here
 * counts it.
 */
struct perfmon_resolved {
    uint64_t id;
    unsigned int flags;
    struct perfmon_dev *dev;
    int generic;
    bool supported;
};

/*
 * Resolve a parsed event.  Returns 0, or SHELL_ERR_REPORTED after one line
 * saying why not: "perfmon: WHO: unknown event 'NAME'" with the closest
 * names, an unknown PMU or an event it does not count, an event only a
 * named_only device counts (and how to name it).
 */
struct perfmon_parse_event;

int perfmon_resolve(const char *who, const struct perfmon_parse_event *parsed,
                    struct perfmon_resolved *out);

/*
 * The first device that counts the event named name without being named
 * (named_only devices left out), or NULL.
 */
struct perfmon_dev *perfmon_resolve_dev_for(const char *name);

/*
 * The device an event is counted by, as the core chooses it: dev when the
 * user named one, the first device for a raw code (flags has
 * PERFMON_EF_RAW), else perfmon_resolve_dev_for(name).  NULL: none here.
 */
struct perfmon_dev *perfmon_resolve_event_dev(struct perfmon_dev *dev,
                                              unsigned int flags,
                                              const char *name);

#endif /* KERN_PERFMON_CMD_PERFMON_RESOLVE_H */
