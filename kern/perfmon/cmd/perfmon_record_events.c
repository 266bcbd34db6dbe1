/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The events of a `perfmon record` run: see
 * kern/perfmon/cmd/perfmon_record_events.h.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/assert.h"
#include "kern/error.h"
#include "kern/console.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_capture.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_parse.h"
#include "kern/perfmon/cmd/perfmon_record.h"
#include "kern/perfmon/cmd/perfmon_record_events.h"
#include "kern/perfmon/cmd/perfmon_resolve.h"
#include "kern/perfmon/cmd/perfmon_stream.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/string.h"

_Static_assert(PERFMON_RECORD_MAX_EVENTS <= PERFMON_STREAM_MAX_EVENTS,
               "the stream describes every event");

/* One line saying what is wrong, then the usage. */
#define perfmon_record_events_error(...) \
    perfmon_cmd_error("record", perfmon_record_usage, __VA_ARGS__)

/* Whether event i's samples read its group: a {...}:S group's leader. */
static bool
perfmon_record_events_reads(const struct perfmon_record_events *e,
                            unsigned int i)
{
    return e->evs[i].leader_sample && e->evs[i].group == (int)i;
}

/* Whether event i samples: all but the members of a {...}:S group. */
static bool
perfmon_record_events_samples(const struct perfmon_record_events *e,
                              unsigned int i)
{
    return !e->evs[i].leader_sample || e->evs[i].group == (int)i;
}

/* ---- the list ----------------------------------------------------------- */

/* One event of -e, resolved, with what its terms say of its sampling. */
static int
perfmon_record_events_add(struct perfmon_record_events *e,
                          const struct perfmon_parse_event *parsed)
{
    struct perfmon_record_ev *ev = &e->evs[e->nr_evs];
    int error;

    error = perfmon_resolve("record", parsed, &ev->event);

    if (error) {
        return error;
    }

    if (!ev->event.supported) {
        kprintf("perfmon: record: %s: no device here counts it (see "
                "'perfmon list')\n", parsed->spec);
        return SHELL_ERR_REPORTED;
    }

    if (parsed->period != 0 && parsed->freq != 0) {
        return perfmon_record_events_error("%s: period= and freq= exclude "
                                           "each other", parsed->spec);
    }

    if (parsed->freq > PERFMON_MAX_FREQ
        || parsed->period > PERFMON_MAX_PERIOD) {
        return perfmon_record_events_error("%s: %s= is above %llu",
                                           parsed->spec,
                                           (parsed->freq != 0) ? "freq"
                                                               : "period",
                                           (parsed->freq != 0)
                                           ? (unsigned long long)
                                             PERFMON_MAX_FREQ
                                           : (unsigned long long)
                                             PERFMON_MAX_PERIOD);
    }

    strlcpy(ev->name, parsed->spec, sizeof(ev->name));
    ev->dev = perfmon_resolve_event_dev(ev->event.dev, parsed->flags,
                                        parsed->name);
    ev->period = parsed->period;
    ev->freq = parsed->freq;
    ev->group = parsed->group;
    ev->leader_sample = parsed->leader_sample;
    e->nr_evs++;
    return 0;
}

int
perfmon_record_events_parse(struct perfmon_record_events *e,
                            const char *list)
{
    struct perfmon_parse_event parsed[PERFMON_RECORD_MAX_EVENTS];
    struct perfmon_parse_error err;
    int nr, error = 0;

    nr = perfmon_parse_events(list, parsed, ARRAY_SIZE(parsed), &err);

    if (nr == -E2BIG && strstr(err.reason, "too many") != NULL) {
        return perfmon_record_events_error("-e: at most %u events in one "
                                           "recording",
                                           PERFMON_RECORD_MAX_EVENTS);
    }

    if (nr < 0) {
        return perfmon_record_events_error("bad event: %s%s%s%s",
                                           err.reason,
                                           (err.item[0] != '\0') ? " ('"
                                                                 : "",
                                           err.item,
                                           (err.item[0] != '\0') ? "')"
                                                                 : "");
    }

    e->nr_evs = 0;

    for (int i = 0; error == 0 && i < nr; i++) {
        error = perfmon_record_events_add(e, &parsed[i]);
    }

    /* A group counts on one device, as perfmon_event_set_group() asks. */
    for (unsigned int i = 0; error == 0 && i < e->nr_evs; i++) {
        const struct perfmon_record_ev *ev = &e->evs[i];

        if (ev->group >= 0 && ev->dev != e->evs[ev->group].dev) {
            error = perfmon_record_events_error("a group's events are "
                                                "counted by one device: "
                                                "'%s' and '%s' are not",
                                                e->evs[ev->group].name,
                                                ev->name);
        }
    }

    return error;
}

int
perfmon_record_events_finish(struct perfmon_record_events *e,
                             uint64_t period, uint64_t freq)
{
    for (unsigned int i = 0; i < e->nr_evs; i++) {
        struct perfmon_record_ev *ev = &e->evs[i];

        if (ev->period == 0 && ev->freq == 0) {
            ev->period = period;
            ev->freq = freq;
        }
    }

    for (unsigned int l = 0; l < e->nr_evs; l++) {
        unsigned int nr = 0;

        for (unsigned int i = l; perfmon_record_events_reads(e, l)
                                 && i < e->nr_evs; i++) {
            nr += (e->evs[i].group == (int)l);
        }

        if (nr > PERFMON_MAX_READS) {
            return perfmon_record_events_error("the group of '%s' has %u "
                                               "events: its samples read at "
                                               "most %u", e->evs[l].name, nr,
                                               PERFMON_MAX_READS);
        }
    }

    return 0;
}

/* ---- the slots ---------------------------------------------------------- */

void
perfmon_record_events_free(struct perfmon_record_events *e)
{
    for (unsigned int i = 0; i < e->nr_evs; i++) {
        struct perfmon_record_ev *ev = &e->evs[i];

        kmem_free(ev->events, e->nr_slots * sizeof(*ev->events));
        kmem_free(ev->slot_sampling,
                  e->nr_slots * sizeof(*ev->slot_sampling));
        kmem_free(ev->slot_reads, e->nr_slots * sizeof(*ev->slot_reads));
        ev->events = NULL;
        ev->slot_sampling = NULL;
        ev->slot_reads = NULL;
    }

    kmem_free(e->set, e->nr_slots * e->nr_evs * sizeof(*e->set));
    e->set = NULL;
    e->nr_set = 0;
}

int
perfmon_record_events_alloc(struct perfmon_record_events *e,
                            unsigned int nr_slots)
{
    bool ok;

    e->nr_slots = nr_slots;
    e->nr_set = 0;
    e->set = kmem_zalloc(nr_slots * e->nr_evs * sizeof(*e->set));
    ok = (e->set != NULL);

    for (unsigned int i = 0; ok && i < e->nr_evs; i++) {
        struct perfmon_record_ev *ev = &e->evs[i];

        ev->events = kmem_zalloc(nr_slots * sizeof(*ev->events));
        ok = (ev->events != NULL);

        if (ok && perfmon_record_events_reads(e, i)) {
            ev->slot_sampling = kmem_zalloc(nr_slots
                                            * sizeof(*ev->slot_sampling));
            ev->slot_reads = kmem_zalloc(nr_slots * sizeof(*ev->slot_reads));
            ok = (ev->slot_sampling != NULL && ev->slot_reads != NULL);
        }
    }

    if (!ok) {
        perfmon_record_events_free(e);
        kprintf("perfmon: record: out of memory\n");
        return SHELL_ERR_REPORTED;
    }

    return 0;
}

void
perfmon_record_events_set_samplings(struct perfmon_record_events *e,
                                    struct perfmon_capture *cap,
                                    unsigned int fields,
                                    unsigned int branch_filter)
{
    for (unsigned int i = 0; i < e->nr_evs; i++) {
        struct perfmon_record_ev *ev = &e->evs[i];
        struct perfmon_capture_event cev = { .nr_reads = 0 };
        int error;

        ev->sampling = (struct perfmon_sampling){
            .period = (ev->period != 0) ? ev->period
                      : perfmon_cmd_first_period(ev->event.generic, ev->freq),
            .freq = (unsigned int)ev->freq,
            .fields = fields,
            .id = i,
            .sbuf = perfmon_capture_sbuf(cap),
            .branch_filter = branch_filter,
        };

        /* The leader first: it comes first in the list. */
        for (unsigned int m = i; perfmon_record_events_reads(e, i)
                                 && m < e->nr_evs; m++) {
            if (e->evs[m].group == (int)i) {
                cev.reads[cev.nr_reads++] = m;
            }
        }

        if (cev.nr_reads != 0) {
            ev->sampling.fields |= PERFMON_SF_READ;
            ev->sampling.nr_reads = cev.nr_reads;
        }

        strlcpy(cev.name, ev->name, sizeof(cev.name));
        error = perfmon_capture_add_event(cap, &cev);
        assert(error == 0);
    }
}

/*
 * Event i in slot.  A {...}:S leader's sampling of the slot reads the
 * slot's events of its group.
 */
static int
perfmon_record_events_attach_one(struct perfmon_record_events *e,
                                 unsigned int i, unsigned int slot,
                                 unsigned int flags, unsigned int cpu,
                                 struct thread *thread)
{
    struct perfmon_record_ev *ev = &e->evs[i];
    struct perfmon_event *pev = &ev->events[slot];
    const struct perfmon_sampling *sampling = &ev->sampling;
    unsigned int nr_reads = 0;
    int error;

    if (perfmon_record_events_reads(e, i)) {
        struct perfmon_sampling *own = &ev->slot_sampling[slot];

        for (unsigned int m = i; m < e->nr_evs; m++) {
            if (e->evs[m].group == (int)i) {
                ev->slot_reads[slot][nr_reads++] = &e->evs[m].events[slot];
            }
        }

        *own = ev->sampling;
        own->reads = ev->slot_reads[slot];
        sampling = own;
    }

    error = perfmon_event_init(pev, ev->event.id,
                               ev->event.flags | PERFMON_EF_DISABLED | flags);

    if (error == 0 && ev->event.dev != NULL) {
        error = perfmon_event_set_dev(pev, ev->event.dev);
    }

    if (error == 0 && perfmon_record_events_samples(e, i)) {
        error = perfmon_event_set_sampling(pev, sampling);
    }

    if (error == 0 && ev->group >= 0) {
        error = perfmon_event_set_group(pev, &e->evs[ev->group].events[slot]);
    }

    if (error == 0) {
        error = (thread == NULL) ? perfmon_event_attach_cpu(pev, cpu)
                                 : perfmon_event_attach(pev, thread);
    }

    if (error == 0) {
        e->set[e->nr_set++] = pev;
    }

    return error;
}

int
perfmon_record_events_attach(struct perfmon_record_events *e,
                             unsigned int slot, unsigned int flags,
                             unsigned int cpu, struct thread *thread,
                             const struct perfmon_record_ev **failedp)
{
    assert(slot < e->nr_slots);

    for (unsigned int i = 0; i < e->nr_evs; i++) {
        int error = perfmon_record_events_attach_one(e, i, slot, flags, cpu,
                                                     thread);

        if (error) {
            *failedp = &e->evs[i];
            return error;
        }
    }

    return 0;
}

void
perfmon_record_events_detach(struct perfmon_record_events *e)
{
    /* Members before their leaders: the last attached first. */
    for (unsigned int i = e->nr_set; i-- > 0;) {
        if (perfmon_event_attached(e->set[i])) {
            perfmon_event_detach(e->set[i]);
        }
    }
}

void
perfmon_record_events_describe(const struct perfmon_record_events *e,
                               const struct perfmon_capture *cap,
                               int argc, char **argv,
                               struct perfmon_stream_desc *descs)
{
    for (unsigned int i = 0; i < e->nr_evs; i++) {
        const struct perfmon_record_ev *ev = &e->evs[i];
        const struct perfmon_capture_event *cev;

        cev = perfmon_capture_event(cap, i);
        descs[i] = (struct perfmon_stream_desc){
            .event = ev->name,
            .generic = ev->event.generic,
            .raw_code = ev->event.id,
            .flags = ev->event.flags & PERFMON_EF_MODE,
            .period = ev->sampling.period,
            .freq = ev->sampling.freq,
            .fields = ev->sampling.fields,
            .branch_filter = ev->sampling.branch_filter,
            .argc = argc,
            .argv = argv,
            .next = (i + 1 < e->nr_evs) ? &descs[i + 1] : NULL,
            .nr_reads = cev->nr_reads,
            .reads = cev->reads,
        };
    }
}
