/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Event names resolved for the `perfmon` subcommands
 * (kern/perfmon/cmd/perfmon_resolve.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/console.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_evtab.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_parse.h"
#include "kern/perfmon/cmd/perfmon_resolve.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/string.h"

#define PERFMON_RESOLVE_MAX_CANDS   128     /* names offered as suggestions */

struct perfmon_dev *
perfmon_resolve_dev_for(const char *name)
{
    for (unsigned int i = 0; i < perfmon_nr_devs(); i++) {
        struct perfmon_dev *dev = perfmon_dev_get(i);
        unsigned int flags;
        uint64_t id;

        if (!dev->named_only
            && perfmon_lookup_event(dev, name, &id, &flags) == 0) {
            return dev;
        }
    }

    return NULL;
}

struct perfmon_dev *
perfmon_resolve_event_dev(struct perfmon_dev *dev, unsigned int flags,
                          const char *name)
{
    if (dev != NULL) {
        return dev;
    }

    return (flags & PERFMON_EF_RAW) ? perfmon_dev_get(0)
                                    : perfmon_resolve_dev_for(name);
}

/*
 * The closest names among cands and the boot CPU model's events: those
 * of the model at a smaller distance replace cands' (in chunks, so that
 * no array of every name is built).
 */
static unsigned int
perfmon_resolve_suggest(const char *name, const char **cands,
                        unsigned int nr, const char **out,
                        unsigned int max_out)
{
    const struct perfmon_evtab_model *m = perfmon_evtab_host();
    unsigned int nr_out = perfmon_parse_suggest(name, cands, nr, out,
                                                max_out);
    unsigned int best = (nr_out == 0) ? UINT32_MAX
                                      : perfmon_parse_distance(name, out[0]);

    for (unsigned int i = 0; m != NULL && i < m->nr_events;
         i += PERFMON_RESOLVE_MAX_CANDS) {
        const char *chunk[PERFMON_RESOLVE_MAX_CANDS], *found[3];
        unsigned int n = MIN(m->nr_events - i, PERFMON_RESOLVE_MAX_CANDS), nf;

        for (unsigned int j = 0; j < n; j++) {
            chunk[j] = perfmon_evtab_name(perfmon_evtab_event(m, i + j));
        }

        nf = perfmon_parse_suggest(name, chunk, n, found,
                                   MIN(max_out, ARRAY_SIZE(found)));

        if (nf == 0 || perfmon_parse_distance(name, found[0]) > best) {
            continue;
        }

        if (perfmon_parse_distance(name, found[0]) < best) {
            best = perfmon_parse_distance(name, found[0]);
            nr_out = 0;
        }

        for (unsigned int j = 0; j < nf && nr_out < max_out; j++) {
            out[nr_out++] = found[j];
        }
    }

    return nr_out;
}

static int
perfmon_resolve_unknown(const char *who, const char *name)
{
    const char *cands[PERFMON_RESOLVE_MAX_CANDS], *out[3];
    struct perfmon_cmd_line line;
    unsigned int nr = 0, nr_out;

    for (unsigned int id = 0; id < PERFMON_NR_EVENTS; id++) {
        const struct perfmon_event_desc *desc = perfmon_event_desc(id);

        if (nr < ARRAY_SIZE(cands)) {
            cands[nr++] = desc->name;
        }

        for (unsigned int i = 0; (i < ARRAY_SIZE(desc->aliases))
                                 && (desc->aliases[i] != NULL)
                                 && (nr < ARRAY_SIZE(cands)); i++) {
            cands[nr++] = desc->aliases[i];
        }
    }

    for (unsigned int d = 0; d < perfmon_nr_devs(); d++) {
        const struct perfmon_dev *dev = perfmon_dev_get(d);

        for (unsigned int i = 0; (i < dev->nr_events)
                                 && (nr < ARRAY_SIZE(cands)); i++) {
            cands[nr++] = dev->events[i].name;
        }
    }

    nr_out = perfmon_resolve_suggest(name, cands, nr, out, ARRAY_SIZE(out));
    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "perfmon: %s: unknown event '%s'", who,
                         name);

    for (unsigned int i = 0; i < nr_out; i++) {
        perfmon_cmd_line_add(&line, "%s'%s'",
                             (i == 0) ? "; did you mean "
                             : (i + 1 == nr_out) ? " or " : ", ", out[i]);
    }

    perfmon_cmd_line_add(&line, "%s (see 'perfmon list')",
                         (nr_out > 0) ? "?" : "");
    perfmon_cmd_line_print(&line);
    return SHELL_ERR_REPORTED;
}

/*
 * Resolve an event on the device it names (`PMU/EVENT/`): its raw code or
 * one of its names, or one line saying why not.
 */
static int
perfmon_resolve_on(const char *who, const struct perfmon_parse_event *parsed,
                   struct perfmon_resolved *out)
{
    struct perfmon_dev *dev = perfmon_dev_find(parsed->pmu);
    unsigned int flags;
    uint64_t id;

    if (dev == NULL) {
        kprintf("perfmon: %s: no PMU named '%s' (see 'perfmon list')\n", who,
                parsed->pmu);
        return SHELL_ERR_REPORTED;
    }

    out->dev = dev;

    if (parsed->flags & PERFMON_EF_RAW) {
        out->id = parsed->raw_code;
        out->flags = parsed->flags;
        return 0;
    }

    if (perfmon_lookup_event(dev, parsed->name, &id, &flags) != 0) {
        kprintf("perfmon: %s: PMU '%s' does not count '%s' (see 'perfmon "
                "list')\n", who, dev->name, parsed->name);
        return SHELL_ERR_REPORTED;
    }

    out->id = id;
    out->flags = (parsed->flags & PERFMON_EF_MODE) | flags;
    out->generic = (flags & PERFMON_EF_RAW) ? -1 : (int)id;
    return 0;
}

/* ---- the CPU model's own events ----------------------------------------- */

/* The hardware device that counts model m's events, or NULL: none here. */
static struct perfmon_dev *
perfmon_resolve_model_dev(const struct perfmon_evtab_model *m)
{
    return perfmon_dev_find((m->vendor == PERFMON_EVTAB_VENDOR_AMD) ? "amd"
                                                                    : "intel");
}

/*
 * The generic events the fixed counters count exactly (Intel's fixed
 * counters 0-2): a model event that only a fixed counter counts is
 * counted as that generic event, by whatever counter the device picks.
 */
static const int perfmon_resolve_fixed_generic[] = {
    PERFMON_EV_INSTRUCTION, PERFMON_EV_CYCLE, PERFMON_EV_REF_CYCLE,
};

/*
 * An event the boot CPU's list names (case aside): counted on the model's
 * hardware device as its raw code (with the extra MSR it needs, which the
 * driver shares out), or known but not supported where that device is
 * missing.  Returns 0, -ENOENT when the list has no such name,
 * or SHELL_ERR_REPORTED after saying why it cannot be counted.
 */
static int
perfmon_resolve_model(const char *who,
                      const struct perfmon_parse_event *parsed,
                      struct perfmon_resolved *out)
{
    const struct perfmon_evtab_model *m = perfmon_evtab_host();
    const struct perfmon_evtab_event *ev;
    uint64_t counters;

    ev = (m == NULL) ? NULL : perfmon_evtab_lookup(m, parsed->name);

    if (ev == NULL) {
        return -ENOENT;
    }

    counters = perfmon_evtab_counters(ev);
    out->dev = perfmon_resolve_model_dev(m);
    out->flags = (parsed->flags & (PERFMON_EF_MODE | PERFMON_EF_PINNED))
                 | PERFMON_EF_RAW;
    out->id = perfmon_evtab_raw(m, ev);
    out->supported = (out->dev != NULL);

    if (!out->supported) {
        return 0;
    }

    if ((counters & 0xffffffffULL) == 0) {
        unsigned int fixed = (unsigned int)__builtin_ctzll(counters) - 32;

        if (fixed >= ARRAY_SIZE(perfmon_resolve_fixed_generic)) {
            kprintf("perfmon: %s: '%s' counts on fixed counter %u only, "
                    "which is not driven\n", who, perfmon_evtab_name(ev),
                    fixed);
            return SHELL_ERR_REPORTED;
        }

        out->flags &= ~PERFMON_EF_RAW;
        out->id = (uint64_t)perfmon_resolve_fixed_generic[fixed];
        out->generic = perfmon_resolve_fixed_generic[fixed];
        out->dev = NULL;
    }

    return 0;
}

/* `cpu/.../`: perf's name for the hardware PMU, whichever it is here. */
static int
perfmon_resolve_cpu(const char *who, const struct perfmon_parse_event *parsed,
                    struct perfmon_resolved *out)
{
    struct perfmon_dev *dev = perfmon_dev_find("intel");

    dev = (dev != NULL) ? dev : perfmon_dev_find("amd");

    /* cpu/NAME/ is NAME. */
    if (!(parsed->flags & PERFMON_EF_RAW)) {
        struct perfmon_parse_event plain = *parsed;

        plain.pmu[0] = '\0';
        return perfmon_resolve(who, &plain, out);
    }

    out->dev = dev;
    out->id = parsed->raw_code;
    out->flags = parsed->flags;
    out->supported = (dev != NULL);
    return 0;
}

/* A named_only device that counts name, to tell the user to name it. */
static struct perfmon_dev *
perfmon_resolve_named_only_dev_for(const char *name)
{
    for (unsigned int d = 0; d < perfmon_nr_devs(); d++) {
        struct perfmon_dev *dev = perfmon_dev_get(d);
        unsigned int flags;
        uint64_t id;

        if (dev->named_only
            && perfmon_lookup_event(dev, name, &id, &flags) == 0) {
            return dev;
        }
    }

    return NULL;
}

int
perfmon_resolve(const char *who, const struct perfmon_parse_event *parsed,
                struct perfmon_resolved *out)
{
    struct perfmon_dev *named_only;
    unsigned int flags;
    uint64_t id;
    int error;

    out->dev = NULL;
    out->generic = -1;
    out->supported = true;

    if (strcmp(parsed->pmu, "cpu") == 0 && perfmon_dev_find("cpu") == NULL) {
        return perfmon_resolve_cpu(who, parsed, out);
    }

    if (parsed->pmu[0] != '\0') {
        return perfmon_resolve_on(who, parsed, out);
    }

    if (parsed->flags & PERFMON_EF_RAW) {
        out->id = parsed->raw_code;
        out->flags = parsed->flags;
        return 0;
    }

    for (unsigned int d = 0; d < perfmon_nr_devs(); d++) {
        struct perfmon_dev *dev = perfmon_dev_get(d);

        if (dev->named_only
            || perfmon_lookup_event(dev, parsed->name, &id, &flags) != 0) {
            continue;
        }

        out->id = id;
        out->flags = (parsed->flags & (PERFMON_EF_MODE | PERFMON_EF_PINNED))
                     | flags;

        if (flags & PERFMON_EF_RAW) {
            out->dev = dev;
        } else {
            out->generic = (int)id;
        }

        return 0;
    }

    if (perfmon_lookup_event(NULL, parsed->name, &id, &flags) == 0) {
        /* A known event that no device here counts by default. */
        out->id = id;
        out->flags = parsed->flags & (PERFMON_EF_MODE | PERFMON_EF_PINNED);
        out->generic = (int)id;
        out->supported = false;
        return 0;
    }

    error = perfmon_resolve_model(who, parsed, out);

    if (error != -ENOENT) {
        return error;
    }

    named_only = perfmon_resolve_named_only_dev_for(parsed->name);

    if (named_only != NULL) {
        kprintf("perfmon: %s: '%s' is counted by PMU '%s' only, when named: "
                "%s/%s/\n", who, parsed->name, named_only->name,
                named_only->name, parsed->name);
        return SHELL_ERR_REPORTED;
    }

    return perfmon_resolve_unknown(who, parsed->name);
}
