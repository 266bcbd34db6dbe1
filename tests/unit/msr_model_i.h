/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * What the two files of the register-level model share: the per-CPU
 * state (msr_model.c: CPUID, the PMU, the local APIC; msr_model_lbr.c:
 * the branch records), and the hooks through which the PMU part hands
 * the branch records their MSRs, its PMIs and its drift.  Nothing else
 * includes it.
 */

#ifndef TESTS_UNIT_MSR_MODEL_I_H
#define TESTS_UNIT_MSR_MODEL_I_H

#include <stdbool.h>
#include <stdint.h>

#include "msr_model.h"

#define MODEL_MAX_GP        16
#define MODEL_MAX_FIXED     4
#define MODEL_NR_CTRS       (MODEL_MAX_GP + MODEL_MAX_FIXED)

/* The deepest branch record stack modelled (Arch LBR's 64). */
#define MODEL_LBR_MAX       64

/*
 * A CPU's branch records, as the back end in its configuration has them.
 * Legacy: the ring from[], to[], info[] (depth entries, tos the newest),
 * select, debugctl.  Arch: entry 0 the newest, depth entries (what
 * IA32_LBR_DEPTH holds), ctl.  AMD: entry 0 the newest, cfg
 * (DBG_EXTN_CFG), select.  recorded: branches recorded so far, the
 * driver's own (drift) included.
 */
struct model_lbr {
    uint64_t debugctl;
    uint64_t select;
    unsigned int tos;
    uint64_t from[MODEL_LBR_MAX];
    uint64_t to[MODEL_LBR_MAX];
    uint64_t info[MODEL_LBR_MAX];
    uint64_t ctl;
    unsigned int depth;
    uint64_t cfg;
    unsigned int recorded;
    uint64_t drift_seq;
};

/*
 * One CPU: its configuration (an application processor of a hybrid part
 * may differ from the boot CPU) and its registers.  Counters are indexed
 * 0..MODEL_MAX_GP-1 (general purpose) then MODEL_MAX_GP + i (fixed i) in
 * since_read.
 */
/* The extra MSRs the model keeps when config.extra_msrs is set. */
#define MODEL_NR_EXTRA  4

struct model_cpu {
    struct msr_model_config cfg;
    uint64_t evtsel[MODEL_MAX_GP];
    uint64_t pmc[MODEL_MAX_GP];
    uint64_t fixed[MODEL_MAX_FIXED];
    uint64_t fixed_ctrl;
    uint64_t extra[MODEL_NR_EXTRA];      /* 1A6H, 1A7H, 3F6H, 3F7H */
    uint64_t global_ctrl;
    uint64_t global_status;
    uint64_t since_read[MODEL_NR_CTRS];  /* counted since last read */
    bool edge_state[MODEL_MAX_GP];       /* last cycle met the cmask */
    uint64_t lost;                       /* discarded by writes */
    uint64_t drifted[MSR_MODEL_NR_EVENTS]; /* drift events, per kind */
    uint64_t host_owned;                 /* counters the host took */
    bool skid_pending;                   /* a PMI waits for skid_left */
    uint64_t skid_left;
    bool lvt_masked;
    unsigned int nmis;                   /* pending: 0 or 1 */
    bool nmi_is_pmi;                     /* the pending one came from a PMI */
    unsigned int pmis;
    unsigned int lost_pmis;
    unsigned int merged;
    unsigned int unmasks;
    struct model_lbr lbr;
};

/* This CPU's state (msr_model.c). */
struct model_cpu *model_cpu(void);

/* The general-purpose counters of c: their width, and how many. */
uint64_t model_gp_mask(const struct msr_model_config *c);
unsigned int model_nr_gp(const struct msr_model_config *c);

/*
 * Add count to counter ctr (index idx in since_read; mask: its width) and
 * on a wrap set status bit bit and raise the PMI when intr (msr_model.c).
 */
void model_count(struct model_cpu *mc, uint64_t *ctr, unsigned int idx,
                 uint64_t mask, uint64_t count, unsigned int bit, bool intr);

/*
 * General-purpose counter i counts count events that came over cycles
 * cycles, raising its interrupt when intr: as a lone counter, or as the
 * low half of a pair the Merge event made (msr_model_merge.c).
 */
void model_merge_count(struct model_cpu *mc, unsigned int i, uint64_t count,
                       uint64_t cycles, bool intr);

/*
 * msr_model_lbr.c, for msr_model.c.
 *
 * model_lbr_init: the records' defaults (msr_model_init()).
 * model_lbr_reset: mc's records out of reset (its cfg set).
 * model_lbr_read/write: an access to msr: MODEL_LBR_NOT_MINE when msr is
 *   none of the records' (the PMU part decodes it), 0, or -EIO (#GP).
 * model_lbr_status_bits: the status bits the records add to the global
 *   overflow status (the frozen bit), writable through its reset/clear
 *   and set registers.
 * model_lbr_pmi: a counter overflow requested a PMI on mc: freeze.
 * model_lbr_drift: the driver runs between two accesses: record the
 *   branches it takes, when recording.
 * model_lbr_perf_cap: the LBR format bits of IA32_PERF_CAPABILITIES.
 * model_lbr_cpuid: fill the LBR leaves (7's EDX bit, 1CH, 8000_0022h's
 *   LBR fields) into regs.
 */
#define MODEL_LBR_NOT_MINE  1

void model_lbr_init(void);
void model_lbr_reset(struct model_cpu *mc);
int model_lbr_read(struct model_cpu *mc, uint32_t msr, uint64_t *valuep);
int model_lbr_write(struct model_cpu *mc, uint32_t msr, uint64_t value);
uint64_t model_lbr_status_bits(const struct msr_model_config *c);
void model_lbr_pmi(struct model_cpu *mc);
void model_lbr_drift(struct model_cpu *mc);
uint64_t model_lbr_perf_cap(const struct msr_model_config *c);
void model_lbr_cpuid(const struct msr_model_config *c, uint32_t leaf,
                     uint32_t regs[4]);

#endif /* TESTS_UNIT_MSR_MODEL_I_H */
