/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The register model's counter pairs (PPR for AMD family 19h, "Large
 * Increment per Cycle Events"; the PPRs of family 17h likewise): from
 * family 17h on, a counter's increment holds at most 15 events a cycle,
 * so an event that counts more (retired SSE/AVX FLOPs, up to 64 a cycle)
 * undercounts on one counter.  Programmed on an even counter whose odd
 * neighbour is enabled with the Merge event (0FFFh), it counts exactly:
 * the two are one 64-bit counter, the even one holding bits 47:0 and the
 * odd one's bits 15:0 bits 63:48.  The pair overflows when the 64 bits
 * wrap, with the even counter's status bit and interrupt; the odd counter
 * raises none of its own.
 */

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/pmu.h"
#include "msr_model_i.h"

/* The Merge event, enabled, as the odd counter's event select holds it. */
#define MODEL_MERGE_SEL     (PMU_AMD_RAW(0xfff, 0) | PMU_EVTSEL_EN)
#define MODEL_MERGE_MASK    (PMU_EVTSEL_EVENT | PMU_EVTSEL_UMASK          \
                             | PMU_EVTSEL_AMD_EVENT_HI | PMU_EVTSEL_EN)

/* The most one counter adds in a cycle, from family 17h on. */
#define MODEL_MAX_INCREMENT 15

#define MODEL_PAIR_HIGH     0xffffULL
#define MODEL_PAIR_SHIFT    48

static bool
model_zen(const struct msr_model_config *c)
{
    return c->vendor == CPU_VENDOR_AMD && c->family >= 0x17;
}

/* Whether counter i (even) and its odd neighbour are merged. */
static bool
model_merged(const struct model_cpu *mc, unsigned int i)
{
    return model_zen(&mc->cfg) && (i % 2) == 0
           && i + 1 < model_nr_gp(&mc->cfg)
           && (mc->evtsel[i + 1] & MODEL_MERGE_MASK) == MODEL_MERGE_SEL;
}

/* Whether counter i counts a large-increment event (the model's FLOPs). */
static bool
model_large_increment(const struct model_cpu *mc, unsigned int i)
{
    uint64_t flops = msr_model_event_code(&mc->cfg, MSR_MODEL_EV_FP_OPS);

    return model_zen(&mc->cfg) && flops != UINT64_MAX
           && (mc->evtsel[i] & (PMU_EVTSEL_EVENT | PMU_EVTSEL_UMASK
                                | PMU_EVTSEL_AMD_EVENT_HI)) == flops;
}

void
model_merge_count(struct model_cpu *mc, unsigned int i, uint64_t count,
                  uint64_t cycles, bool intr)
{
    uint64_t pair;

    if (!model_merged(mc, i)) {
        if (model_large_increment(mc, i)
            && count / MODEL_MAX_INCREMENT >= cycles) {
            count = MODEL_MAX_INCREMENT * cycles;
        }

        model_count(mc, &mc->pmc[i], i, model_gp_mask(&mc->cfg), count, i,
                    intr);
        return;
    }

    pair = ((mc->pmc[i + 1] & MODEL_PAIR_HIGH) << MODEL_PAIR_SHIFT)
           | mc->pmc[i];
    model_count(mc, &pair, i, UINT64_MAX, count, i, intr);
    mc->pmc[i] = pair & model_gp_mask(&mc->cfg);
    mc->pmc[i + 1] = (mc->pmc[i + 1] & ~MODEL_PAIR_HIGH)
                     | (pair >> MODEL_PAIR_SHIFT);
}
