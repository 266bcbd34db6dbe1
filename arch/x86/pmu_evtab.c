/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The x86 side of the model event tables.  See arch/x86/pmu_evtab.h.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/pmu.h"
#include "arch/x86/pmu_evtab.h"
#include "kern/macros.h"
#include "kern/perfmon_evtab.h"

uint64_t
pmu_evtab_raw(const struct perfmon_evtab_model *m,
              const struct perfmon_evtab_event *ev)
{
    uint64_t raw;

    if (m->vendor == PERFMON_EVTAB_VENDOR_AMD) {
        raw = PMU_AMD_RAW(ev->code, ev->umask);
    } else {
        raw = (ev->code & PMU_EVTSEL_EVENT) | ((uint64_t)ev->umask << 8);
    }

    raw |= (ev->flags & PERFMON_EVTAB_F_EDGE) ? PMU_EVTSEL_EDGE : 0;
    raw |= (ev->flags & PERFMON_EVTAB_F_INV) ? PMU_EVTSEL_INV : 0;
    raw |= (ev->flags & PERFMON_EVTAB_F_ANY) ? PMU_EVTSEL_ANY : 0;

    if (perfmon_evtab_extra(ev) != NULL && perfmon_evtab_extra(ev)->nr_msrs != 0) {
        raw |= (uint64_t)ev->extra << PMU_EVTAB_RAW_EXTRA_SHIFT;
    }

    return raw | ((uint64_t)ev->cmask << 24);
}

const struct perfmon_evtab_extra *
pmu_evtab_raw_extra(uint64_t raw_event, bool *validp)
{
    unsigned int i = (unsigned int)(raw_event >> PMU_EVTAB_RAW_EXTRA_SHIFT);
    const struct perfmon_evtab_extra *extra;

    *validp = (i == 0);

    if (i == 0 || i >= pmu_evtab_catalog.nr_extras) {
        return NULL;
    }

    extra = &pmu_evtab_catalog.extras[i];
    *validp = (extra->nr_msrs != 0);
    return *validp ? extra : NULL;
}

uint64_t
pmu_evtab_constraint(const struct perfmon_evtab_model *m, uint64_t raw_event)
{
    uint64_t counters = 0;
    bool found = false;

    for (unsigned int i = 0; m != NULL && i < m->nr_events; i++) {
        const struct perfmon_evtab_event *ev = perfmon_evtab_event(m, i);

        if (pmu_evtab_raw(m, ev) != raw_event) {
            continue;
        }

        /* A large-increment event counts nothing useful alone. */
        if (ev->flags & PERFMON_EVTAB_F_MERGE) {
            return ~PMU_EVTAB_GP_COUNTERS;
        }

        counters |= perfmon_evtab_counters(ev);
        found = true;
    }

    return found ? (counters | ~PMU_EVTAB_GP_COUNTERS) : UINT64_MAX;
}

bool
pmu_evtab_pairs(const struct perfmon_evtab_model *m, uint64_t raw_event)
{
    for (unsigned int i = 0; m != NULL && i < m->nr_events; i++) {
        const struct perfmon_evtab_event *ev = perfmon_evtab_event(m, i);

        if ((ev->flags & PERFMON_EVTAB_F_MERGE)
            && pmu_evtab_raw(m, ev) == raw_event) {
            return true;
        }
    }

    return false;
}

void
pmu_evtab_setup(unsigned int cpu_vendor, unsigned int family,
                unsigned int model, unsigned int stepping)
{
    const struct perfmon_evtab_model *m = NULL;

    perfmon_evtab_register(&pmu_evtab_catalog, pmu_evtab_raw);

    if (cpu_vendor == CPU_VENDOR_INTEL) {
        m = perfmon_evtab_find(PERFMON_EVTAB_VENDOR_INTEL, family, model,
                               stepping);
    } else if (cpu_vendor == CPU_VENDOR_AMD) {
        m = perfmon_evtab_find(PERFMON_EVTAB_VENDOR_AMD, family, model,
                               stepping);
    }

    perfmon_evtab_set_host(m);
}
