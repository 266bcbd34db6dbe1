/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon report --branch`: the branch stacks of the last recording's
 * samples (perfmon record -b or -j) added up by from -> to pair, hottest
 * first, each with the share of its branches that were mispredicted, as
 * `perf report --branch-stack --sort from,to` groups them.  A pair is two
 * addresses: a loop's backward branch is one row however many samples
 * caught it.  Each branch of a stack counts once; the mispredicted share
 * is over the branches whose hardware said (a dash where none did).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/console.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/num.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_capture.h"
#include "kern/perfmon/cmd/perfmon_report.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/string.h"
#include "kern/symtab.h"

#define PERFMON_BRREP_MAX_ROWS  4096    /* a power of two */

/*
 * One from -> to pair: how often the stacks held it, and of those how
 * many said mispredicted and how many said anything.
 */
struct perfmon_report_branch_row {
    bool used;
    uint64_t from;
    uint64_t to;
    uint64_t count;
    uint64_t nr_mispred;
    uint64_t nr_known;
};

/* The pairs (an open-addressing table) and the totals. */
struct perfmon_report_branch {
    struct perfmon_report_branch_row *rows;
    unsigned int nr_rows;
    uint64_t nr_branches;
    uint64_t nr_samples;                /* with a branch stack field */
    uint64_t nr_dropped;                /* branches of pairs past the table */
};

static uint64_t
perfmon_report_branch_hash(uint64_t from, uint64_t to)
{
    uint64_t h = from * 0x9e3779b97f4a7c15ULL;

    return (h ^ (h >> 29) ^ to) * 0xbf58476d1ce4e5b9ULL;
}

static struct perfmon_report_branch_row *
perfmon_report_branch_row(struct perfmon_report_branch *r, uint64_t from,
                          uint64_t to)
{
    uint64_t h = perfmon_report_branch_hash(from, to);

    for (unsigned int i = 0; i < PERFMON_BRREP_MAX_ROWS; i++) {
        struct perfmon_report_branch_row *row;

        row = &r->rows[(h + i) & (PERFMON_BRREP_MAX_ROWS - 1)];

        if (!row->used) {
            if (r->nr_rows == PERFMON_BRREP_MAX_ROWS - 1) {
                return NULL;
            }

            *row = (struct perfmon_report_branch_row){true, from, to, 0, 0, 0};
            r->nr_rows++;
            return row;
        }

        if (row->from == from && row->to == to) {
            return row;
        }
    }

    return NULL;
}

static bool
perfmon_report_branch_add(const struct perfmon_rec_hdr *hdr, void *arg)
{
    struct perfmon_report_branch *r = arg;
    struct perfmon_sample s;

    if (hdr->type != PERFMON_REC_SAMPLE
        || perfmon_sample_decode(hdr, hdr->size, &s) != 0
        || !(s.fields & PERFMON_SF_BRANCH)) {
        return true;
    }

    r->nr_samples++;

    for (unsigned int i = 0; i < s.nr_branches; i++) {
        const struct perfmon_branch *b = &s.branches[i];
        struct perfmon_report_branch_row *row =
            perfmon_report_branch_row(r, b->from, b->to);

        r->nr_branches++;

        if (row == NULL) {
            r->nr_dropped++;
            continue;
        }

        row->count++;
        row->nr_mispred += (b->flags & PERFMON_BR_MISPRED) != 0;
        row->nr_known += (b->flags & (PERFMON_BR_MISPRED
                                      | PERFMON_BR_PREDICTED)) != 0;
    }

    return true;
}

/* The used rows, hottest first (a shell sort over their indices). */
static unsigned int
perfmon_report_branch_sorted(const struct perfmon_report_branch *r,
                             unsigned int *order)
{
    static const unsigned int gaps[] = { 701, 301, 132, 57, 23, 10, 4, 1 };
    unsigned int n = 0;

    for (unsigned int i = 0; i < PERFMON_BRREP_MAX_ROWS; i++) {
        if (r->rows[i].used) {
            order[n++] = i;
        }
    }

    for (size_t g = 0; g < ARRAY_SIZE(gaps); g++) {
        for (unsigned int i = gaps[g]; i < n; i++) {
            unsigned int idx = order[i], j = i;

            while (j >= gaps[g] && r->rows[order[j - gaps[g]]].count
                                   < r->rows[idx].count) {
                order[j] = order[j - gaps[g]];
                j -= gaps[g];
            }

            order[j] = idx;
        }
    }

    return n;
}

/* An address as perf names it: symbol+offset, or the bare address. */
void
perfmon_report_addr(char *buf, size_t size, uint64_t addr)
{
    uint64_t offset;
    const char *name = symtab_lookup(addr, &offset);

    if (name != NULL) {
        ksnprintf(buf, size, "%s+0x%llx", name, (unsigned long long)offset);
    } else {
        ksnprintf(buf, size, "0x%llx", (unsigned long long)addr);
    }
}

static void
perfmon_report_branch_print_row(const struct perfmon_report_branch *r,
                        const struct perfmon_report_branch_row *row)
{
    char pct[16], mis[16], from[64], to[64];
    struct perfmon_cmd_line line;

    if (row->nr_known != 0) {
        num_fmt_percent(pct, sizeof(pct), row->nr_mispred, row->nr_known,
                        false);
        ksnprintf(mis, sizeof(mis), "%s%%", pct);
    } else {
        strlcpy(mis, "-", sizeof(mis));
    }

    num_fmt_percent(pct, sizeof(pct), row->count, r->nr_branches, false);

    perfmon_report_addr(from, sizeof(from), row->from);
    perfmon_report_addr(to, sizeof(to), row->to);
    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "%8s%%  %7s  %-34s  %s", pct, mis, from, to);
    perfmon_cmd_line_print(&line);
}

static void
perfmon_report_branch_print(const struct perfmon_report_branch *r,
                            const struct perfmon_capture_info *info,
                            unsigned int *order, unsigned int limit_bp)
{
    unsigned int n = perfmon_report_branch_sorted(r, order);

    kprintf("# perfmon report --branch of '%s', %llu lost\n", info->command,
            (unsigned long long)info->nr_lost);
    kprintf("# Branches: %llu in %llu samples of event '%s'\n#\n",
            (unsigned long long)r->nr_branches,
            (unsigned long long)r->nr_samples, info->event);
    kprintf("# Overhead  Mispred  %-34s  Target\n", "Source");
    kprintf("# ........  .......  %-34s  ..................................\n"
            "#\n", "..................................");

    for (unsigned int i = 0; i < n; i++) {
        const struct perfmon_report_branch_row *row = &r->rows[order[i]];

        if (num_muldiv(row->count, 10000, r->nr_branches) < limit_bp) {
            break;
        }

        perfmon_report_branch_print_row(r, row);
    }

    if (r->nr_dropped != 0) {
        kprintf("# %llu branches not shown: too many distinct pairs\n",
                (unsigned long long)r->nr_dropped);
    }
}

int
perfmon_report_branches(const struct perfmon_capture *cap,
                        unsigned int limit_bp)
{
    struct perfmon_report_branch r = { 0 };
    size_t rows_size = PERFMON_BRREP_MAX_ROWS * sizeof(*r.rows);
    size_t order_size = PERFMON_BRREP_MAX_ROWS * sizeof(unsigned int);
    struct perfmon_capture_info info;
    unsigned int *order;
    int error = 0;

    r.rows = kmem_zalloc(rows_size);
    order = kmem_alloc(order_size);

    if (r.rows == NULL || order == NULL) {
        kprintf("perfmon: report: out of memory\n");
        error = SHELL_ERR_REPORTED;
        goto out;
    }

    perfmon_capture_foreach(cap, perfmon_report_branch_add, &r);
    perfmon_capture_get_info(cap, &info);

    if (r.nr_samples == 0) {
        kprintf("perfmon: report: --branch: the last recording has no "
                "branch stacks (record with -b or -j)\n");
        error = SHELL_ERR_REPORTED;
        goto out;
    }

    perfmon_report_branch_print(&r, &info, order, limit_bp);

out:
    kmem_free(order, order_size);
    kmem_free(r.rows, rows_size);
    return error;
}
