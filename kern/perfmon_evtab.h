/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Model-specific core events: every Intel and AMD processor model's events
 * by name, as the vendors publish them (Intel's perfmon lists, the AMD Zen
 * lists Linux's perf keeps), generated into perfmon_evtab_data.c by
 * tools/genevents.py.  For each event: its event code and unit mask, the
 * counter-mask, invert, edge and any-thread bits, the counters that may
 * count it (a fixed counter as hw id 32 + N, as the Intel driver numbers
 * them), the extra MSR it needs (OFFCORE_RSP, LD_LAT, FRONTEND) and its
 * value, and whether it can be sampled precisely.
 *
 * The tables are read-only data: any context may read them.  The model of
 * the boot CPU is chosen once at boot (perfmon_evtab_select(), before the
 * shell runs) and never changes.
 */

#ifndef ARCH_X86_PERFMON_EVTAB_H
#define ARCH_X86_PERFMON_EVTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Counters are hw ids: general-purpose counter N is N, fixed counter N
 * is PERFMON_EVTAB_FIXED_BASE + N (the x86 drivers' numbering).
 */
#define PERFMON_EVTAB_FIXED_BASE    32

/* Vendors, as the tables number them (perfmon_evtab_vendor_name()). */
#define PERFMON_EVTAB_VENDOR_INTEL      0
#define PERFMON_EVTAB_VENDOR_AMD        1
#define PERFMON_EVTAB_NR_VENDORS        2

/* Event flags. */
#define PERFMON_EVTAB_F_INV             0x01    /* invert the counter mask */
#define PERFMON_EVTAB_F_EDGE            0x02    /* count rising edges */
#define PERFMON_EVTAB_F_ANY             0x04    /* Intel AnyThread */
#define PERFMON_EVTAB_F_PRECISE         0x08    /* PEBS / precise-capable */
#define PERFMON_EVTAB_F_DEPRECATED      0x10    /* the list marks it so */
#define PERFMON_EVTAB_F_MERGE           0x20    /* AMD large increment:
                                                   needs a counter pair */

/*
 * One event.  name: offset in the catalogue's name pool; code: event
 * select (12 bits on AMD); extra: index in the extras table, 0 when the
 * event has nothing more than one code and unit mask; counters, topic:
 * indexes in those tables (topic 0: the lists give none, the name's
 * prefix before its first '.' serves).
 */
struct perfmon_evtab_event {
    uint32_t name;
    uint16_t code;
    uint16_t extra;
    uint8_t umask;
    uint8_t umask_ext;
    uint8_t cmask;
    uint8_t flags;
    uint8_t counters;
    uint8_t topic;
};

/*
 * What an event needs beyond one code and unit mask.  msr, nr_msrs: the
 * extra MSRs (consecutive: OFFCORE_RSP_0 and _1 at 1A6h-1A7h, say), one of
 * which must hold value; code2: a second event code, paired with the
 * second MSR (0: none); nr_umasks, umasks: the unit masks after the
 * event's own, paired with the MSRs in order.
 */
struct perfmon_evtab_extra {
    uint16_t msr;
    uint8_t nr_msrs;
    uint8_t code2;
    uint8_t nr_umasks;
    uint8_t umasks[3];
    uint64_t value;
};

/*
 * A metric: its name (offset in the name pool) and formula (offset in the
 * formula pool): numbers, the model's event names, + - * / and
 * parentheses, binary operators between blanks (kern/perfmon/cmd/
 * perfmon_metric.h evaluates them).  Only formulas whose events general
 * and fixed counters count are kept; where the list chooses by SMT, the
 * per-thread formula.
 */
struct perfmon_evtab_metric {
    uint32_t name;
    uint32_t formula;
};

/* A model's table: indexes of its events, by topic then name; metrics. */
struct perfmon_evtab_model {
    const char *name;
    uint8_t vendor;
    const uint16_t *events;
    uint16_t nr_events;
    const struct perfmon_evtab_metric *metrics;
    uint16_t nr_metrics;
};

/*
 * The models of a vendor and family: model and stepping ranges, inclusive,
 * as the vendors' map files give them; ranges do not overlap.
 */
struct perfmon_evtab_match {
    uint8_t vendor;
    uint8_t family;
    uint8_t model_lo;
    uint8_t model_hi;
    uint8_t step_lo;
    uint8_t step_hi;
    uint16_t model;
};

/* Every table (perfmon_evtab_data.c). */
struct perfmon_evtab_catalog {
    const char *names;
    size_t names_size;
    const char *formulas;
    const char *const *topics;
    unsigned int nr_topics;
    const uint64_t *counters;
    unsigned int nr_counters;
    const struct perfmon_evtab_extra *extras;
    unsigned int nr_extras;
    const struct perfmon_evtab_event *events;
    unsigned int nr_events;
    const struct perfmon_evtab_model *models;
    unsigned int nr_models;
    const struct perfmon_evtab_match *matches;
    unsigned int nr_matches;
};

/*
 * An event's raw code as the platform's drivers take it (their
 * translation of code, unit mask, flags and extra MSR).
 */
typedef uint64_t (*perfmon_evtab_encode_fn)(
    const struct perfmon_evtab_model *m, const struct perfmon_evtab_event *ev);

/*
 * Register the platform's catalogue and encoder, and the boot CPU's model
 * (NULL: no list covers it).  Once, at boot.
 */
void perfmon_evtab_register(const struct perfmon_evtab_catalog *cat,
                            perfmon_evtab_encode_fn encode);
void perfmon_evtab_set_host(const struct perfmon_evtab_model *m);

/* The boot CPU's model, or NULL. */
const struct perfmon_evtab_model *perfmon_evtab_host(void);

/* ev's raw code on its model's device (0 when nothing is registered). */
uint64_t perfmon_evtab_raw(const struct perfmon_evtab_model *m,
                           const struct perfmon_evtab_event *ev);

/* "GenuineIntel", "AuthenticAMD". */
const char *perfmon_evtab_vendor_name(unsigned int vendor);

/* The model of a vendor's family, model and stepping, or NULL. */
const struct perfmon_evtab_model *perfmon_evtab_find(unsigned int vendor,
                                             unsigned int family,
                                             unsigned int model,
                                             unsigned int stepping);

/*
 * The model that perf's CPUID string names: VENDOR-FAMILY-MODEL[-STEPPING]
 * (family decimal, model and stepping hex, as in "GenuineIntel-6-55-4",
 * "AuthenticAMD-25-1" with or without 0x), or a table's name
 * ("skylakex"), case-insensitive.  NULL when none matches.  Without a
 * stepping, stepping 0 decides.
 */
const struct perfmon_evtab_model *perfmon_evtab_find_id(const char *id);

/* The i-th event of a model (i < nr_events). */
const struct perfmon_evtab_event *perfmon_evtab_event(const struct perfmon_evtab_model *m,
                                              unsigned int i);

/* The event of model m named name, case-insensitive, or NULL. */
const struct perfmon_evtab_event *perfmon_evtab_lookup(const struct perfmon_evtab_model *m,
                                               const char *name);

const char *perfmon_evtab_name(const struct perfmon_evtab_event *ev);

/* A metric's name and formula; the metric of m named name, or NULL. */
const char *perfmon_evtab_metric_name(const struct perfmon_evtab_metric *metric);
const char *perfmon_evtab_metric_formula(const struct perfmon_evtab_metric *metric);
const struct perfmon_evtab_metric *
perfmon_evtab_metric_lookup(const struct perfmon_evtab_model *m, const char *name);

/*
 * The event's topic, as the lists group it: the list's own, or the name
 * up to its first '.' ("MEM_LOAD_RETIRED"), copied into buf (truncated);
 * returns buf.
 */
const char *perfmon_evtab_topic(const struct perfmon_evtab_event *ev, char *buf,
                            size_t size);

/* The counters (hw ids) that may count ev. */
uint64_t perfmon_evtab_counters(const struct perfmon_evtab_event *ev);

/* What ev needs beyond its code and unit mask, or NULL. */
const struct perfmon_evtab_extra *perfmon_evtab_extra(const struct perfmon_evtab_event *ev);

/*
 * The event's encoding as perf's terms write it, in buf:
 * "event=0xd1,umask=0x20[,cmask=N][,inv][,edge][,any]".
 */
void perfmon_evtab_format(const struct perfmon_evtab_event *ev, char *buf,
                      size_t size);

/* ev's counters as a list ("0-3", "0,1", "fixed 1"), in buf. */
void perfmon_evtab_format_counters(const struct perfmon_evtab_event *ev, char *buf,
                               size_t size);

#endif /* ARCH_X86_PERFMON_EVTAB_H */
