/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The x86 side of the model event tables (kern/perfmon_evtab.h): the
 * generated catalogue (pmu_evtab_data.c), how the drivers encode its
 * events (PERFEVTSEL layout, extra MSRs), and the counter constraints the
 * drivers' counters operations take from it.
 */

#ifndef ARCH_X86_PMU_EVTAB_H
#define ARCH_X86_PMU_EVTAB_H

#include <stdbool.h>
#include <stdint.h>

#include "kern/perfmon_evtab.h"

/* Every table (pmu_evtab_data.c). */
extern const struct perfmon_evtab_catalog pmu_evtab_catalog;

/*
 * Register the catalogue and choose the boot CPU's table (CPU_VENDOR_*,
 * family, model, stepping of cpu_info); once, at boot, before the shell.
 */
void pmu_evtab_setup(unsigned int cpu_vendor, unsigned int family,
                     unsigned int model, unsigned int stepping);

/*
 * The event's raw code in the PERFEVTSEL layout the drivers take
 * (arch/x86/pmu.h): event select, unit mask, edge, invert, counter mask,
 * AnyThread, on AMD event select bits 11:8 at 35:32, and the extra MSR
 * it needs (PMU_EVTAB_RAW_EXTRA_SHIFT).
 */
uint64_t pmu_evtab_raw(const struct perfmon_evtab_model *m,
                       const struct perfmon_evtab_event *ev);

/*
 * An event that needs an extra MSR carries its extras-table index in bits
 * 63:48 of its raw code (above every PERFEVTSEL bit a driver programs),
 * so that the driver finds the MSR and value it asks for.
 */
#define PMU_EVTAB_RAW_EXTRA_SHIFT   48
#define PMU_EVTAB_RAW_EXTRA_MASK    (0xffffULL << PMU_EVTAB_RAW_EXTRA_SHIFT)

/*
 * The extra MSR a raw code asks for (bits 63:48), or NULL when none; NULL
 * too for an index that names no MSR (*validp false then).
 */
const struct perfmon_evtab_extra *pmu_evtab_raw_extra(uint64_t raw_event,
                                                  bool *validp);

/* The general-purpose counters' hw ids (fixed ones are 32 + N). */
#define PMU_EVTAB_GP_COUNTERS       0xffffffffULL

/*
 * The counters model m lets raw_event use, for a driver's counters
 * operation: the general-purpose ones the lists give for the events of
 * that encoding (all of them when the list has none; none for an AMD
 * large-increment event, which counts only on the counter pair the
 * driver's alloc takes for it), every other bit set (the fixed counters
 * are the driver's business).  A scan of the model's events: for the
 * core's counter setup, not for a hot path.
 */
uint64_t pmu_evtab_constraint(const struct perfmon_evtab_model *m,
                              uint64_t raw_event);

/*
 * Whether model m's lists mark raw_event as a large-increment event
 * (PERFMON_EVTAB_F_MERGE: counted on a pair with the Merge event); a
 * scan, as above.
 */
bool pmu_evtab_pairs(const struct perfmon_evtab_model *m, uint64_t raw_event);

#endif /* ARCH_X86_PMU_EVTAB_H */
