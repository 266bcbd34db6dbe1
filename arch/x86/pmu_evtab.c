/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Lookups in the model-specific event tables (arch/x86/pmu_evtab.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/pmu.h"
#include "arch/x86/pmu_evtab.h"
#include "kern/assert.h"
#include "kern/macros.h"
#include "kern/printf.h"
#include "kern/string.h"

/*
 * The boot CPU's table: written once by pmu_evtab_select() at boot,
 * before any reader runs; read from any context.
 */
static const struct pmu_evtab_model *pmu_evtab_host_model;

static const char *const pmu_evtab_vendors[PMU_EVTAB_NR_VENDORS] = {
    [PMU_EVTAB_VENDOR_INTEL] = "GenuineIntel",
    [PMU_EVTAB_VENDOR_AMD] = "AuthenticAMD",
};

const char *
pmu_evtab_vendor_name(unsigned int vendor)
{
    return (vendor < ARRAY_SIZE(pmu_evtab_vendors))
           ? pmu_evtab_vendors[vendor] : "unknown";
}

const struct pmu_evtab_model *
pmu_evtab_find(unsigned int vendor, unsigned int family, unsigned int model,
               unsigned int stepping)
{
    const struct pmu_evtab_catalog *cat = &pmu_evtab_catalog;

    for (unsigned int i = 0; i < cat->nr_matches; i++) {
        const struct pmu_evtab_match *m = &cat->matches[i];

        if (m->vendor == vendor && m->family == family
            && model >= m->model_lo && model <= m->model_hi
            && stepping >= m->step_lo && stepping <= m->step_hi) {
            return &cat->models[m->model];
        }
    }

    return NULL;
}

static char
pmu_evtab_lower(char c)
{
    return ((c >= 'A') && (c <= 'Z')) ? (char)(c - 'A' + 'a') : c;
}

/* Whether a and b are equal but for case (b may end at len). */
static bool
pmu_evtab_equal(const char *a, const char *b, size_t len)
{
    size_t i;

    for (i = 0; i < len && a[i] != '\0' && b[i] != '\0'; i++) {
        if (pmu_evtab_lower(a[i]) != pmu_evtab_lower(b[i])) {
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
pmu_evtab_number(const char *s, unsigned int base, unsigned int *valuep)
{
    unsigned int value = 0;
    size_t i = 0;

    if (base == 16 && s[0] == '0' && pmu_evtab_lower(s[1]) == 'x') {
        i = 2;
    }

    for (size_t start = i;; i++) {
        char c = pmu_evtab_lower(s[i]);
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

const struct pmu_evtab_model *
pmu_evtab_find_id(const char *id)
{
    const struct pmu_evtab_catalog *cat = &pmu_evtab_catalog;
    unsigned int vendor, family, model, stepping = 0;
    size_t len;

    for (unsigned int i = 0; i < cat->nr_models; i++) {
        if (pmu_evtab_equal(cat->models[i].name, id, strlen(id))) {
            return &cat->models[i];
        }
    }

    for (vendor = 0; vendor < PMU_EVTAB_NR_VENDORS; vendor++) {
        len = strlen(pmu_evtab_vendors[vendor]);

        if (pmu_evtab_equal(pmu_evtab_vendors[vendor], id, len)
            && id[len] == '-') {
            break;
        }
    }

    if (vendor == PMU_EVTAB_NR_VENDORS) {
        return NULL;
    }

    id += len + 1;
    len = pmu_evtab_number(id, 10, &family);

    if (len == 0 || id[len] != '-') {
        return NULL;
    }

    id += len + 1;
    len = pmu_evtab_number(id, 16, &model);

    if (len == 0) {
        return NULL;
    }

    id += len;

    if (id[0] == '-') {
        len = pmu_evtab_number(id + 1, 16, &stepping);

        if (len == 0 || id[1 + len] != '\0' || stepping > 0xf) {
            return NULL;
        }
    } else if (id[0] != '\0') {
        return NULL;
    }

    return pmu_evtab_find(vendor, family, model, stepping);
}

void
pmu_evtab_select(unsigned int cpu_vendor, unsigned int family,
                 unsigned int model, unsigned int stepping)
{
    unsigned int vendor;

    if (cpu_vendor == CPU_VENDOR_INTEL) {
        vendor = PMU_EVTAB_VENDOR_INTEL;
    } else if (cpu_vendor == CPU_VENDOR_AMD) {
        vendor = PMU_EVTAB_VENDOR_AMD;
    } else {
        pmu_evtab_host_model = NULL;
        return;
    }

    pmu_evtab_host_model = pmu_evtab_find(vendor, family, model, stepping);
}

const struct pmu_evtab_model *
pmu_evtab_host(void)
{
    return pmu_evtab_host_model;
}

const struct pmu_evtab_event *
pmu_evtab_event(const struct pmu_evtab_model *m, unsigned int i)
{
    assert(i < m->nr_events);
    return &pmu_evtab_catalog.events[m->events[i]];
}

const char *
pmu_evtab_name(const struct pmu_evtab_event *ev)
{
    return &pmu_evtab_catalog.names[ev->name];
}

const char *
pmu_evtab_metric_name(const struct pmu_evtab_metric *metric)
{
    return &pmu_evtab_catalog.names[metric->name];
}

const char *
pmu_evtab_metric_formula(const struct pmu_evtab_metric *metric)
{
    return &pmu_evtab_catalog.formulas[metric->formula];
}

const struct pmu_evtab_metric *
pmu_evtab_metric_lookup(const struct pmu_evtab_model *m, const char *name)
{
    size_t len = strlen(name);

    for (unsigned int i = 0; m != NULL && i < m->nr_metrics; i++) {
        if (pmu_evtab_equal(pmu_evtab_metric_name(&m->metrics[i]), name,
                            len)) {
            return &m->metrics[i];
        }
    }

    return NULL;
}

const struct pmu_evtab_event *
pmu_evtab_lookup(const struct pmu_evtab_model *m, const char *name)
{
    size_t len = strlen(name);

    for (unsigned int i = 0; i < m->nr_events; i++) {
        const struct pmu_evtab_event *ev = pmu_evtab_event(m, i);

        if (pmu_evtab_equal(pmu_evtab_name(ev), name, len)) {
            return ev;
        }
    }

    return NULL;
}

const char *
pmu_evtab_topic(const struct pmu_evtab_event *ev, char *buf, size_t size)
{
    const char *name = pmu_evtab_name(ev), *dot;
    size_t len;

    if (ev->topic != 0) {
        name = pmu_evtab_catalog.topics[ev->topic];
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
pmu_evtab_counters(const struct pmu_evtab_event *ev)
{
    return pmu_evtab_catalog.counters[ev->counters];
}

const struct pmu_evtab_extra *
pmu_evtab_extra(const struct pmu_evtab_event *ev)
{
    return (ev->extra == 0) ? NULL : &pmu_evtab_catalog.extras[ev->extra];
}

uint64_t
pmu_evtab_raw(const struct pmu_evtab_model *m,
              const struct pmu_evtab_event *ev)
{
    uint64_t raw;

    if (m->vendor == PMU_EVTAB_VENDOR_AMD) {
        raw = PMU_AMD_RAW(ev->code, ev->umask);
    } else {
        raw = (ev->code & PMU_EVTSEL_EVENT) | ((uint64_t)ev->umask << 8);
    }

    raw |= (ev->flags & PMU_EVTAB_F_EDGE) ? PMU_EVTSEL_EDGE : 0;
    raw |= (ev->flags & PMU_EVTAB_F_INV) ? PMU_EVTSEL_INV : 0;
    raw |= (ev->flags & PMU_EVTAB_F_ANY) ? PMU_EVTSEL_ANY : 0;

    if (pmu_evtab_extra(ev) != NULL && pmu_evtab_extra(ev)->nr_msrs != 0) {
        raw |= (uint64_t)ev->extra << PMU_EVTAB_RAW_EXTRA_SHIFT;
    }

    return raw | ((uint64_t)ev->cmask << 24);
}

const struct pmu_evtab_extra *
pmu_evtab_raw_extra(uint64_t raw_event, bool *validp)
{
    unsigned int i = (unsigned int)(raw_event >> PMU_EVTAB_RAW_EXTRA_SHIFT);
    const struct pmu_evtab_extra *extra;

    *validp = (i == 0);

    if (i == 0 || i >= pmu_evtab_catalog.nr_extras) {
        return NULL;
    }

    extra = &pmu_evtab_catalog.extras[i];
    *validp = (extra->nr_msrs != 0);
    return *validp ? extra : NULL;
}

void
pmu_evtab_format(const struct pmu_evtab_event *ev, char *buf, size_t size)
{
    char cmask[16] = "";

    if (ev->cmask != 0) {
        ksnprintf(cmask, sizeof(cmask), ",cmask=%u", ev->cmask);
    }

    ksnprintf(buf, size, "event=%#x,umask=%#x%s%s%s%s", ev->code, ev->umask,
              cmask, (ev->flags & PMU_EVTAB_F_INV) ? ",inv" : "",
              (ev->flags & PMU_EVTAB_F_EDGE) ? ",edge" : "",
              (ev->flags & PMU_EVTAB_F_ANY) ? ",any" : "");
}

void
pmu_evtab_format_counters(const struct pmu_evtab_event *ev, char *buf,
                          size_t size)
{
    uint64_t mask = pmu_evtab_counters(ev);
    size_t len = 0;

    buf[0] = '\0';

    for (unsigned int i = 0; i < 64 && len < size; i++) {
        unsigned int j = i;

        if (!(mask & (1ULL << i))) {
            continue;
        }

        while (j + 1 < 64 && j + 1 != PMU_INTEL_FIXED_BASE
               && (mask & (1ULL << (j + 1)))) {
            j++;
        }

        len += (size_t)ksnprintf(&buf[len], size - len, "%s%s%u",
                                 (len == 0) ? "" : ",",
                                 (i >= PMU_INTEL_FIXED_BASE) ? "fixed " : "",
                                 i % PMU_INTEL_FIXED_BASE);

        if (j > i + 1 && len < size) {
            len += (size_t)ksnprintf(&buf[len], size - len, "-%u",
                                     j % PMU_INTEL_FIXED_BASE);
            i = j;
        }
    }
}

uint64_t
pmu_evtab_constraint(const struct pmu_evtab_model *m, uint64_t raw_event)
{
    uint64_t counters = 0;
    bool found = false;

    for (unsigned int i = 0; m != NULL && i < m->nr_events; i++) {
        const struct pmu_evtab_event *ev = pmu_evtab_event(m, i);

        if (pmu_evtab_raw(m, ev) == raw_event) {
            counters |= pmu_evtab_counters(ev);
            found = true;
        }
    }

    return found ? (counters | ~PMU_EVTAB_GP_COUNTERS) : UINT64_MAX;
}
