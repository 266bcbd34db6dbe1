/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: the decoding of switch records (see
 * kern/perfmon_switchrec.h), apart from their writing so that the readers
 * (the drain, the stream, the reports) need nothing else of the core.
 * Any context; the input may be damaged.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_ring.h"
#include "kern/perfmon_switchrec.h"
#include "kern/string.h"

int
perfmon_switch_decode(const struct perfmon_rec_hdr *hdr,
                      struct perfmon_switch *sw)
{
    struct perfmon_switch_rec rec;
    size_t chain;

    if (hdr == NULL || sw == NULL || hdr->type != PERFMON_REC_SWITCH
        || hdr->size < sizeof(rec)
        || (hdr->misc & ~(PERFMON_SWITCH_OUT | PERFMON_SWITCH_PREEMPT)) != 0
        || (hdr->misc == PERFMON_SWITCH_PREEMPT)) {
        return -EINVAL;
    }

    memcpy(&rec, hdr, sizeof(rec));
    chain = (size_t)rec.nr_ips * sizeof(uint64_t);

    if (rec.nr_ips > PERFMON_SWITCH_MAX_IPS
        || P2ROUND(sizeof(rec) + chain, PERFMON_RING_ALIGN) != hdr->size
        || (rec.nr_ips != 0 && !(hdr->misc & PERFMON_SWITCH_OUT))) {
        return -EINVAL;
    }

    sw->out = (hdr->misc & PERFMON_SWITCH_OUT) != 0;
    sw->preempt = (hdr->misc & PERFMON_SWITCH_PREEMPT) != 0;
    sw->tid = rec.tid;
    sw->other = rec.other;
    sw->time_ns = rec.time_ns;
    sw->cpu = rec.cpu;
    sw->nr_ips = rec.nr_ips;
    sw->ips = (const uint64_t *)((const char *)hdr + sizeof(rec));
    return 0;
}
