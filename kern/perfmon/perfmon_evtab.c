/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Lookups in the model-specific event tables (kern/perfmon_evtab.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/assert.h"
#include "kern/macros.h"
#include "kern/perfmon_evtab.h"
#include "kern/printf.h"
#include "kern/string.h"

/*
 * The platform's catalogue, its encoder and the boot CPU's table: written
 * once at boot, before any reader runs; read from any context.  Without
 * a catalogue every lookup finds nothing.
 */
static const struct perfmon_evtab_catalog perfmon_evtab_none;
static const struct perfmon_evtab_catalog *perfmon_evtab_cat
    = &perfmon_evtab_none;
static perfmon_evtab_encode_fn perfmon_evtab_encode;
static const struct perfmon_evtab_model *perfmon_evtab_host_model;

void
perfmon_evtab_register(const struct perfmon_evtab_catalog *cat,
                       perfmon_evtab_encode_fn encode)
{
    perfmon_evtab_cat = (cat != NULL) ? cat : &perfmon_evtab_none;
    perfmon_evtab_encode = encode;
    perfmon_evtab_host_model = NULL;
}

void
perfmon_evtab_set_host(const struct perfmon_evtab_model *m)
{
    perfmon_evtab_host_model = m;
}

const struct perfmon_evtab_model *
perfmon_evtab_host(void)
{
    return perfmon_evtab_host_model;
}

uint64_t
perfmon_evtab_raw(const struct perfmon_evtab_model *m,
                  const struct perfmon_evtab_event *ev)
{
    return (perfmon_evtab_encode == NULL) ? 0 : perfmon_evtab_encode(m, ev);
}

static const char *const perfmon_evtab_vendors[PERFMON_EVTAB_NR_VENDORS] = {
    [PERFMON_EVTAB_VENDOR_INTEL] = "GenuineIntel",
    [PERFMON_EVTAB_VENDOR_AMD] = "AuthenticAMD",
};

const char *
perfmon_evtab_vendor_name(unsigned int vendor)
{
    return (vendor < ARRAY_SIZE(perfmon_evtab_vendors))
           ? perfmon_evtab_vendors[vendor] : "unknown";
}

const struct perfmon_evtab_model *
perfmon_evtab_find(unsigned int vendor, unsigned int family, unsigned int model,
               unsigned int stepping)
{
    const struct perfmon_evtab_catalog *cat = perfmon_evtab_cat;

    for (unsigned int i = 0; i < cat->nr_matches; i++) {
        const struct perfmon_evtab_match *m = &cat->matches[i];

        if (m->vendor == vendor && m->family == family
            && model >= m->model_lo && model <= m->model_hi
            && stepping >= m->step_lo && stepping <= m->step_hi) {
            return &cat->models[m->model];
        }
    }

    return NULL;
}

static char
perfmon_evtab_lower(char c)
{
    return ((c >= 'A') && (c <= 'Z')) ? (char)(c - 'A' + 'a') : c;
}

/* Whether a and b are equal but for case (b may end at len). */
static bool
perfmon_evtab_equal(const char *a, const char *b, size_t len)
{
    size_t i;

    for (i = 0; i < len && a[i] != '\0' && b[i] != '\0'; i++) {
        if (perfmon_evtab_lower(a[i]) != perfmon_evtab_lower(b[i])) {
            return false;
        }
    }

    return (i == len) ? (a[i] == '\0') : (a[i] == b[i]);
}

/*
 * A number of CPUID string: decimal or hex as base says, "0x" allowed in
 * hex; the length parsed, 0 when none.
 */
static size_t
perfmon_evtab_number(const char *s, unsigned int base, unsigned int *valuep)
{
    unsigned int value = 0;
    size_t i = 0;

    if (base == 16 && s[0] == '0' && perfmon_evtab_lower(s[1]) == 'x') {
        i = 2;
    }

    for (size_t start = i;; i++) {
        char c = perfmon_evtab_lower(s[i]);
        unsigned int digit;

        if (c >= '0' && c <= '9') {
            digit = (unsigned int)(c - '0');
        } else if (base == 16 && c >= 'a' && c <= 'f') {
            digit = (unsigned int)(c - 'a' + 10);
        } else {
            return (i == start || value > 0xff) ? 0 : i;
        }

        value = value * base + digit;

        if (value > 0xff) {
            return 0;
        }

        *valuep = value;
    }
}

const struct perfmon_evtab_model *
perfmon_evtab_find_id(const char *id)
{
    const struct perfmon_evtab_catalog *cat = perfmon_evtab_cat;
    unsigned int vendor, family, model, stepping = 0;
    size_t len;

    for (unsigned int i = 0; i < cat->nr_models; i++) {
        if (perfmon_evtab_equal(cat->models[i].name, id, strlen(id))) {
            return &cat->models[i];
        }
    }

    for (vendor = 0; vendor < PERFMON_EVTAB_NR_VENDORS; vendor++) {
        len = strlen(perfmon_evtab_vendors[vendor]);

        if (perfmon_evtab_equal(perfmon_evtab_vendors[vendor], id, len)
            && id[len] == '-') {
            break;
        }
    }

    if (vendor == PERFMON_EVTAB_NR_VENDORS) {
        return NULL;
    }

    id += len + 1;
    len = perfmon_evtab_number(id, 10, &family);

    if (len == 0 || id[len] != '-') {
        return NULL;
    }

    id += len + 1;
    len = perfmon_evtab_number(id, 16, &model);

    if (len == 0) {
        return NULL;
    }

    id += len;

    if (id[0] == '-') {
        len = perfmon_evtab_number(id + 1, 16, &stepping);

        if (len == 0 || id[1 + len] != '\0' || stepping > 0xf) {
            return NULL;
        }
    } else if (id[0] != '\0') {
        return NULL;
    }

    return perfmon_evtab_find(vendor, family, model, stepping);
}

const struct perfmon_evtab_event *
perfmon_evtab_event(const struct perfmon_evtab_model *m, unsigned int i)
{
    assert(i < m->nr_events);
    return &perfmon_evtab_cat->events[m->events[i]];
}

const char *
perfmon_evtab_name(const struct perfmon_evtab_event *ev)
{
    return &perfmon_evtab_cat->names[ev->name];
}

const char *
perfmon_evtab_metric_name(const struct perfmon_evtab_metric *metric)
{
    return &perfmon_evtab_cat->names[metric->name];
}

const char *
perfmon_evtab_metric_formula(const struct perfmon_evtab_metric *metric)
{
    return &perfmon_evtab_cat->formulas[metric->formula];
}

const struct perfmon_evtab_metric *
perfmon_evtab_metric_lookup(const struct perfmon_evtab_model *m, const char *name)
{
    size_t len = strlen(name);

    for (unsigned int i = 0; m != NULL && i < m->nr_metrics; i++) {
        if (perfmon_evtab_equal(perfmon_evtab_metric_name(&m->metrics[i]), name,
                            len)) {
            return &m->metrics[i];
        }
    }

    return NULL;
}

const struct perfmon_evtab_event *
perfmon_evtab_lookup(const struct perfmon_evtab_model *m, const char *name)
{
    size_t len = strlen(name);

    for (unsigned int i = 0; i < m->nr_events; i++) {
        const struct perfmon_evtab_event *ev = perfmon_evtab_event(m, i);

        if (perfmon_evtab_equal(perfmon_evtab_name(ev), name, len)) {
            return ev;
        }
    }

    return NULL;
}

const char *
perfmon_evtab_topic(const struct perfmon_evtab_event *ev, char *buf, size_t size)
{
    const char *name = perfmon_evtab_name(ev), *dot;
    size_t len;

    if (ev->topic != 0) {
        name = perfmon_evtab_cat->topics[ev->topic];
        len = strlen(name);
    } else {
        dot = strchr(name, '.');
        len = (dot == NULL) ? strlen(name) : (size_t)(dot - name);
    }

    len = MIN(len, size - 1);
    memcpy(buf, name, len);
    buf[len] = '\0';
    return buf;
}

uint64_t
perfmon_evtab_counters(const struct perfmon_evtab_event *ev)
{
    return perfmon_evtab_cat->counters[ev->counters];
}

const struct perfmon_evtab_extra *
perfmon_evtab_extra(const struct perfmon_evtab_event *ev)
{
    return (ev->extra == 0) ? NULL : &perfmon_evtab_cat->extras[ev->extra];
}


void
perfmon_evtab_format(const struct perfmon_evtab_event *ev, char *buf, size_t size)
{
    char cmask[16] = "";

    if (ev->cmask != 0) {
        ksnprintf(cmask, sizeof(cmask), ",cmask=%u", ev->cmask);
    }

    ksnprintf(buf, size, "event=%#x,umask=%#x%s%s%s%s", ev->code, ev->umask,
              cmask, (ev->flags & PERFMON_EVTAB_F_INV) ? ",inv" : "",
              (ev->flags & PERFMON_EVTAB_F_EDGE) ? ",edge" : "",
              (ev->flags & PERFMON_EVTAB_F_ANY) ? ",any" : "");
}

void
perfmon_evtab_format_counters(const struct perfmon_evtab_event *ev, char *buf,
                          size_t size)
{
    uint64_t mask = perfmon_evtab_counters(ev);
    size_t len = 0;

    buf[0] = '\0';

    for (unsigned int i = 0; i < 64 && len < size; i++) {
        unsigned int j = i;

        if (!(mask & (1ULL << i))) {
            continue;
        }

        while (j + 1 < 64 && j + 1 != PERFMON_EVTAB_FIXED_BASE
               && (mask & (1ULL << (j + 1)))) {
            j++;
        }

        len += (size_t)ksnprintf(&buf[len], size - len, "%s%s%u",
                                 (len == 0) ? "" : ",",
                                 (i >= PERFMON_EVTAB_FIXED_BASE) ? "fixed " : "",
                                 i % PERFMON_EVTAB_FIXED_BASE);

        if (j > i + 1 && len < size) {
            len += (size_t)ksnprintf(&buf[len], size - len, "-%u",
                                     j % PERFMON_EVTAB_FIXED_BASE);
            i = j;
        }
    }
}
