/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon report` and `perfmon script`, modelled on `perf report --stdio`
 * and `perf script`, over the last recording (kern/perfmon/cmd/perfmon_capture.h), and the
 * profile tables `perfmon top` shares with them (kern/perfmon/cmd/perfmon_report.h).
 *
 * A profile adds up the samples' periods by key (thread name and symbol by
 * default, or CPU, ...) in a hash table of rows, and, for call chains and
 * folded stacks, by whole stack (the symbols of the chain, root first) in
 * a second table.  Symbols come from the kernel's embedded symbol table,
 * whose name strings are unique: a symbol is compared as a pointer.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/num.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_capture.h"
#include "kern/perfmon/cmd/perfmon_offcpu.h"
#include "kern/perfmon/cmd/perfmon_record.h"
#include "kern/perfmon/cmd/perfmon_report.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/string.h"
#include "kern/symtab.h"

#define PERFMON_REPORT_MAX_ROWS     4096    /* a power of two */
#define PERFMON_REPORT_MAX_STACKS   8192    /* a power of two */
#define PERFMON_REPORT_CHAINS       8       /* shown per row with -g */

const char perfmon_report_usage[] =
    "usage: perfmon report [--sort KEYS] [-g] [--folded] "
    "[--percent-limit P]\n"
    "       perfmon report --branch [--percent-limit P]\n"
    "       KEYS: comm,sym (default), sym, comm, cpu, cpu,sym, event, "
    "event,sym\n"
    "       (several events: a section each, or --sort event)\n"
    "       offcpu: time switched out (record --switch-events)\n";

static const char perfmon_unknown_sym[] = "[unknown]";

/* ---- profiles ------------------------------------------------------------------ */

struct perfmon_profile_row {
    bool used;
    const char *comm;                   /* NULL when not a key */
    unsigned int tid;                   /* for a thread without a name */
    const char *sym;                    /* NULL when not a key */
    int cpu;                            /* -1 when not a key */
    int event;                          /* the capture's id */
    uint64_t weight;
    uint64_t nr_samples;
};

struct perfmon_profile_stack {
    uint64_t hash;
    unsigned int row;                   /* its row */
    unsigned int nr;
    uint64_t weight;
    const char **syms;                  /* root first */
};

struct perfmon_profile {
    unsigned int keys;                  /* PERFMON_PROFILE_KEY_* */
    bool stacks;
    const struct perfmon_capture *cap;
    struct perfmon_profile_row *rows;
    unsigned int nr_rows;
    struct perfmon_profile_stack *stack_table;
    unsigned int nr_stacks;
    uint64_t total;
    uint64_t nr_samples;
    uint64_t nr_dropped;                /* tables full */
    uint64_t ev_total[PERFMON_CAPTURE_MAX_EVENTS];      /* by event */
    uint64_t ev_samples[PERFMON_CAPTURE_MAX_EVENTS];
    struct perfmon_reads reads;
};

static uint64_t
perfmon_profile_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
}

/* The function holding addr, as a unique name pointer. */
static const char *
perfmon_profile_sym(uint64_t addr)
{
    uint64_t offset;
    const char *name = symtab_lookup(addr, &offset);

    return (name != NULL) ? name : perfmon_unknown_sym;
}

int
perfmon_profile_create(struct perfmon_profile **profilep, unsigned int keys,
                       bool stacks)
{
    struct perfmon_profile *p = kmem_zalloc(sizeof(*p));

    if (p == NULL) {
        return -ENOMEM;
    }

    p->keys = keys;
    p->stacks = stacks;
    p->rows = kmem_zalloc(PERFMON_REPORT_MAX_ROWS * sizeof(*p->rows));

    if (stacks) {
        p->stack_table = kmem_zalloc(PERFMON_REPORT_MAX_STACKS
                                     * sizeof(*p->stack_table));
    }

    if (p->rows == NULL || (stacks && p->stack_table == NULL)) {
        perfmon_profile_destroy(p);
        return -ENOMEM;
    }

    *profilep = p;
    return 0;
}

void
perfmon_profile_destroy(struct perfmon_profile *p)
{
    if (p == NULL) {
        return;
    }

    if (p->stack_table != NULL) {
        for (unsigned int i = 0; i < PERFMON_REPORT_MAX_STACKS; i++) {
            struct perfmon_profile_stack *s = &p->stack_table[i];

            kmem_free(s->syms, s->nr * sizeof(*s->syms));
        }

        kmem_free(p->stack_table,
                  PERFMON_REPORT_MAX_STACKS * sizeof(*p->stack_table));
    }

    kmem_free(p->rows, PERFMON_REPORT_MAX_ROWS * sizeof(*p->rows));
    kmem_free(p, sizeof(*p));
}

/* The row of a sample's key, created if needed; NULL when the table is full. */
static struct perfmon_profile_row *
perfmon_profile_row(struct perfmon_profile *p, const char *comm,
                    unsigned int tid, const char *sym, int cpu, int event)
{
    uint64_t h = 0;

    if (!(p->keys & PERFMON_PROFILE_KEY_COMM)) {
        comm = NULL;
        tid = 0;
    } else if (comm != NULL && comm[0] != '\0') {
        tid = 0;
    }

    if (!(p->keys & PERFMON_PROFILE_KEY_SYM)) {
        sym = NULL;
    }

    if (!(p->keys & PERFMON_PROFILE_KEY_CPU)) {
        cpu = -1;
    }

    h = perfmon_profile_mix(h, (uint64_t)event);
    h = perfmon_profile_mix(h, (uintptr_t)comm);
    h = perfmon_profile_mix(h, tid);
    h = perfmon_profile_mix(h, (uintptr_t)sym);
    h = perfmon_profile_mix(h, (uint64_t)(int64_t)cpu);

    for (unsigned int i = 0; i < PERFMON_REPORT_MAX_ROWS; i++) {
        struct perfmon_profile_row *row;

        row = &p->rows[(h + i) & (PERFMON_REPORT_MAX_ROWS - 1)];

        if (!row->used) {
            if (p->nr_rows == PERFMON_REPORT_MAX_ROWS - 1) {
                return NULL;
            }

            row->used = true;
            row->comm = comm;
            row->tid = tid;
            row->sym = sym;
            row->cpu = cpu;
            row->event = event;
            p->nr_rows++;
            return row;
        }

        if (row->comm == comm && row->tid == tid && row->sym == sym
            && row->cpu == cpu && row->event == event) {
            return row;
        }
    }

    return NULL;
}

static void
perfmon_profile_add_stack(struct perfmon_profile *p, unsigned int row,
                          const struct perfmon_sample *sample, uint64_t weight)
{
    const char *syms[PERFMON_MAX_CALLCHAIN];
    unsigned int nr = (sample->nr_ips != 0) ? sample->nr_ips : 1;
    uint64_t h = row;

    /* Root first: the chain is stored leaf (the ip) first. */
    for (unsigned int i = 0; i < nr; i++) {
        uint64_t ip = (sample->nr_ips != 0) ? sample->ips[nr - 1 - i]
                                            : sample->ip;

        syms[i] = perfmon_profile_sym(ip);
        h = perfmon_profile_mix(h, (uintptr_t)syms[i]);
    }

    for (unsigned int i = 0; i < PERFMON_REPORT_MAX_STACKS; i++) {
        struct perfmon_profile_stack *s;

        s = &p->stack_table[(h + i) & (PERFMON_REPORT_MAX_STACKS - 1)];

        if (s->syms == NULL) {
            if (p->nr_stacks == PERFMON_REPORT_MAX_STACKS - 1) {
                break;
            }

            s->syms = kmem_alloc(nr * sizeof(*s->syms));

            if (s->syms == NULL) {
                break;
            }

            memcpy(s->syms, syms, nr * sizeof(*s->syms));
            s->hash = h;
            s->row = row;
            s->nr = nr;
            p->nr_stacks++;
        } else if (s->hash != h || s->row != row || s->nr != nr
                   || memcmp(s->syms, syms, nr * sizeof(*syms)) != 0) {
            continue;
        }

        s->weight += weight;
        return;
    }

    p->nr_dropped++;
}

/* Weight for event at sample's place (every event is a key: sections). */
static void
perfmon_profile_add_event(struct perfmon_profile *p,
                          const struct perfmon_sample *sample,
                          uint32_t event, uint64_t weight)
{
    const char *comm = perfmon_capture_comm(p->cap, sample->tid);
    struct perfmon_profile_row *row;

    row = perfmon_profile_row(p, comm, sample->tid,
                              perfmon_profile_sym(sample->ip),
                              (int)sample->cpu, (int)event);

    if (row == NULL) {
        p->nr_dropped++;
        return;
    }

    row->weight += weight;
    row->nr_samples++;
    p->total += weight;
    p->nr_samples++;
    p->ev_total[event] += weight;
    p->ev_samples[event]++;

    if (p->stacks) {
        perfmon_profile_add_stack(p, (unsigned int)(row - p->rows), sample,
                                  weight);
    }
}

void
perfmon_profile_add(struct perfmon_profile *p, const struct perfmon_capture *cap,
                    const struct perfmon_sample *sample)
{
    uint64_t weight = (sample->fields & PERFMON_SF_PERIOD) ? sample->period
                                                            : 1;
    uint64_t delta;
    uint32_t event;

    p->cap = cap;

    if (sample->nr_reads == 0) {
        if (perfmon_capture_event(cap, sample->id) != NULL) {
            perfmon_profile_add_event(p, sample, sample->id, weight);
        }

        return;
    }

    /* A leader's sample stands for what each event read counted since. */
    for (unsigned int i = 0; i < sample->nr_reads; i++) {
        if (perfmon_capture_read_delta(cap, sample, &p->reads, i, &event,
                                      &delta)) {
            perfmon_profile_add_event(p, sample, event, delta);
        }
    }
}

static bool
perfmon_profile_add_rec(const struct perfmon_rec_hdr *hdr, void *arg)
{
    struct perfmon_profile *p = arg;
    struct perfmon_sample sample;

    if (hdr->type == PERFMON_REC_SAMPLE
        && perfmon_sample_decode(hdr, hdr->size, &sample) == 0) {
        perfmon_profile_add(p, p->cap, &sample);
    }

    return true;
}

void
perfmon_profile_add_all(struct perfmon_profile *p,
                        const struct perfmon_capture *cap)
{
    p->cap = cap;
    perfmon_capture_foreach(cap, perfmon_profile_add_rec, p);
}

/* ---- printing -------------------------------------------------------------------- */

/*
 * What a row's overhead is a share of: its weight, but across events
 * (--sort event), whose counts do not add up, its number of samples.
 */
static uint64_t
perfmon_profile_share(const struct perfmon_profile *p,
                      const struct perfmon_profile_row *row)
{
    return (p->keys & PERFMON_PROFILE_KEY_EVENT) ? row->nr_samples
                                                 : row->weight;
}

/* Rows by share, heaviest first (a selection sort over an index). */
static unsigned int
perfmon_profile_sorted(const struct perfmon_profile *p, unsigned int *order,
                       unsigned int max)
{
    unsigned int n = 0;

    for (unsigned int i = 0; i < PERFMON_REPORT_MAX_ROWS && n < max; i++) {
        if (p->rows[i].used) {
            order[n++] = i;
        }
    }

    for (unsigned int i = 0; i < n; i++) {
        unsigned int best = i;

        for (unsigned int j = i + 1; j < n; j++) {
            if (perfmon_profile_share(p, &p->rows[order[j]])
                > perfmon_profile_share(p, &p->rows[order[best]])) {
                best = j;
            }
        }

        unsigned int tmp = order[i];

        order[i] = order[best];
        order[best] = tmp;
    }

    return n;
}

static void
perfmon_profile_comm(const struct perfmon_profile_row *row, char *buf,
                     size_t size)
{
    if (row->comm != NULL && row->comm[0] != '\0') {
        strlcpy(buf, row->comm, size);
    } else {
        ksnprintf(buf, size, ":%u", row->tid);
    }
}

/* The chains under a row, heaviest first, callers from the root down. */
static void
perfmon_profile_print_chains(const struct perfmon_profile *p,
                             unsigned int row_index)
{
    const struct perfmon_profile_row *row = &p->rows[row_index];
    const struct perfmon_profile_stack *shown[PERFMON_REPORT_CHAINS];
    unsigned int nr = 0;

    for (unsigned int k = 0; k < PERFMON_REPORT_CHAINS; k++) {
        const struct perfmon_profile_stack *best = NULL;

        for (unsigned int i = 0; i < PERFMON_REPORT_MAX_STACKS; i++) {
            const struct perfmon_profile_stack *s = &p->stack_table[i];
            bool seen = false;

            if (s->syms == NULL || s->row != row_index) {
                continue;
            }

            for (unsigned int j = 0; j < nr; j++) {
                seen |= (shown[j] == s);
            }

            if (!seen && (best == NULL || s->weight > best->weight)) {
                best = s;
            }
        }

        if (best == NULL) {
            break;
        }

        shown[nr++] = best;
    }

    kprintf("            |\n");

    for (unsigned int k = 0; k < nr; k++) {
        char pct[16];

        num_fmt_percent(pct, sizeof(pct), shown[k]->weight, row->weight,
                        false);

        for (unsigned int i = 0; i < shown[k]->nr; i++) {
            if (i == 0) {
                kprintf("            |--%s%%--%s\n", pct, shown[k]->syms[i]);
            } else {
                kprintf("            |%*s%s\n", (int)strlen(pct) + 5, "",
                        shown[k]->syms[i]);
            }
        }

        kprintf("            |\n");
    }
}

/* The name of a row's event, as the capture says it. */
static const char *
perfmon_profile_event_name(const struct perfmon_profile *p, int event)
{
    const struct perfmon_capture_event *ev;

    ev = (p->cap == NULL) ? NULL : perfmon_capture_event(p->cap,
                                                         (uint32_t)event);
    return (ev == NULL) ? "?" : ev->name;
}

/*
 * The rows of event (-1: every event), as perf prints one event's section:
 * the percentages of that event's total.
 */
static void
perfmon_profile_print_section(const struct perfmon_profile *p, int event,
                              const char *name, unsigned int limit_bp,
                              unsigned int max_rows, bool chains)
{
    uint64_t nr_samples = (event < 0) ? p->nr_samples
                                      : p->ev_samples[event];
    uint64_t total = (event >= 0) ? p->ev_total[event]
                     : (p->keys & PERFMON_PROFILE_KEY_EVENT) ? nr_samples
                                                             : p->total;
    unsigned int *order, n, shown = 0;
    size_t size = PERFMON_REPORT_MAX_ROWS * sizeof(*order);

    order = kmem_alloc(size);

    if (order == NULL) {
        kprintf("perfmon: report: out of memory\n");
        return;
    }

    n = perfmon_profile_sorted(p, order, PERFMON_REPORT_MAX_ROWS);
    kprintf("# Samples: %llu of event '%s'\n", (unsigned long long)nr_samples,
            name);

    /* Across events (--sort event) the counts do not add up. */
    if (event >= 0 || !(p->keys & PERFMON_PROFILE_KEY_EVENT)) {
        kprintf("# Event count (approx.): %llu\n", (unsigned long long)total);
    }

    kprintf("#\n");
    kprintf("# Overhead  %s%s%s%s\n# ........  %s%s%s%s\n#\n",
            (p->keys & PERFMON_PROFILE_KEY_EVENT)
            ? "Samples  Event                " : "",
            (p->keys & PERFMON_PROFILE_KEY_COMM) ? "Command          " : "",
            (p->keys & PERFMON_PROFILE_KEY_CPU) ? "CPU  " : "",
            (p->keys & PERFMON_PROFILE_KEY_SYM) ? "Symbol" : "",
            (p->keys & PERFMON_PROFILE_KEY_EVENT)
            ? ".......  ...................  " : "",
            (p->keys & PERFMON_PROFILE_KEY_COMM) ? "...............  " : "",
            (p->keys & PERFMON_PROFILE_KEY_CPU) ? "...  " : "",
            (p->keys & PERFMON_PROFILE_KEY_SYM) ? "......................"
                                                : "");

    for (unsigned int i = 0; i < n && shown < max_rows; i++) {
        const struct perfmon_profile_row *row = &p->rows[order[i]];
        struct perfmon_cmd_line line;
        char pct[16], comm[PERFMON_REC_NAME_SIZE];

        if (event >= 0 && row->event != event) {
            continue;
        }

        if (num_muldiv(perfmon_profile_share(p, row), 10000, total)
            < limit_bp) {
            break;
        }

        shown++;
        num_fmt_percent(pct, sizeof(pct), perfmon_profile_share(p, row),
                        total, false);
        perfmon_cmd_line_init(&line);
        perfmon_cmd_line_add(&line, "%8s%%  ", pct);

        if (p->keys & PERFMON_PROFILE_KEY_EVENT) {
            perfmon_cmd_line_add(&line, "%7llu  %-19s  ",
                                 (unsigned long long)row->nr_samples,
                                 perfmon_profile_event_name(p, row->event));
        }

        if (p->keys & PERFMON_PROFILE_KEY_COMM) {
            perfmon_profile_comm(row, comm, sizeof(comm));
            perfmon_cmd_line_add(&line, "%-15s  ", comm);
        }

        if (p->keys & PERFMON_PROFILE_KEY_CPU) {
            perfmon_cmd_line_add(&line, "%03d  ", row->cpu);
        }

        if (p->keys & PERFMON_PROFILE_KEY_SYM) {
            perfmon_cmd_line_add(&line, "[k] %s", row->sym);
        }

        perfmon_cmd_line_print(&line);

        if (chains && p->stacks) {
            perfmon_profile_print_chains(p, order[i]);
        }
    }

    if (p->nr_dropped != 0) {
        kprintf("# %llu samples not shown: too many distinct rows or "
                "stacks\n", (unsigned long long)p->nr_dropped);
    }

    kmem_free(order, size);
}

void
perfmon_profile_print(const struct perfmon_profile *p, const char *event,
                      unsigned int limit_bp, unsigned int max_rows,
                      bool chains)
{
    perfmon_profile_print_section(p, -1, event, limit_bp, max_rows, chains);
}

/*
 * The report of a capture of several events, as perf's: a section per
 * event that has samples, or one table with --sort event.
 */
static void
perfmon_profile_print_events(const struct perfmon_profile *p,
                             const struct perfmon_capture *cap,
                             unsigned int limit_bp, bool chains)
{
    unsigned int nr = perfmon_capture_nr_events(cap);

    if (nr == 1 || (p->keys & PERFMON_PROFILE_KEY_EVENT)) {
        perfmon_profile_print_section(p, -1, (nr == 1)
                                      ? perfmon_capture_event(cap, 0)->name
                                      : "each, by samples", limit_bp,
                                      UINT32_MAX, chains);
        return;
    }

    for (unsigned int i = 0; i < nr; i++) {
        kprintf("%s", (i == 0) ? "" : "\n");
        perfmon_profile_print_section(p, (int)i,
                                      perfmon_capture_event(cap, i)->name,
                                      limit_bp, UINT32_MAX, chains);
    }
}

/* Folded stacks, "comm;root;...;leaf weight", one line per stack. */
static void
perfmon_profile_print_folded(const struct perfmon_profile *p)
{
    for (unsigned int i = 0; i < PERFMON_REPORT_MAX_STACKS; i++) {
        const struct perfmon_profile_stack *s = &p->stack_table[i];
        struct perfmon_cmd_line line;
        char comm[PERFMON_REC_NAME_SIZE];

        if (s->syms == NULL) {
            continue;
        }

        perfmon_cmd_line_init(&line);
        perfmon_profile_comm(&p->rows[s->row], comm, sizeof(comm));
        perfmon_cmd_line_add(&line, "%s", comm);

        for (unsigned int j = 0; j < s->nr; j++) {
            perfmon_cmd_line_add(&line, ";%s", s->syms[j]);
        }

        perfmon_cmd_line_add(&line, " %llu", (unsigned long long)s->weight);
        perfmon_cmd_line_print(&line);
    }
}

/* ---- perfmon report ------------------------------------------------------------- */

/* One line saying what is wrong, then the usage. */
#define perfmon_report_error(...) \
    perfmon_cmd_error("report", perfmon_report_usage, __VA_ARGS__)



static int
perfmon_report_parse_sort(const char *val, unsigned int *keysp)
{
    static const struct {
        const char *name;
        unsigned int keys;
    } sorts[] = {
        { "comm,sym", PERFMON_PROFILE_KEY_COMM | PERFMON_PROFILE_KEY_SYM },
        { "sym", PERFMON_PROFILE_KEY_SYM },
        { "comm", PERFMON_PROFILE_KEY_COMM },
        { "cpu", PERFMON_PROFILE_KEY_CPU },
        { "cpu,sym", PERFMON_PROFILE_KEY_CPU | PERFMON_PROFILE_KEY_SYM },
        { "event", PERFMON_PROFILE_KEY_EVENT },
        { "event,sym", PERFMON_PROFILE_KEY_EVENT | PERFMON_PROFILE_KEY_SYM },
    };

    for (size_t i = 0; i < ARRAY_SIZE(sorts); i++) {
        if (strcmp(sorts[i].name, val) == 0) {
            *keysp = sorts[i].keys;
            return 0;
        }
    }

    return -EINVAL;
}

/* P as a percentage with up to two decimals, in hundredths. */
static int
perfmon_report_parse_percent(const char *val, unsigned int *bpp)
{
    uint64_t whole = 0, frac = 0, scale = 10;
    const char *p = val;

    if (*p == '\0') {
        return -EINVAL;
    }

    for (; *p >= '0' && *p <= '9'; p++) {
        whole = whole * 10 + (uint64_t)(*p - '0');

        if (whole > 100) {
            return -EINVAL;
        }
    }

    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9' && scale != 0; p++, scale /= 10) {
            frac += (uint64_t)(*p - '0') * scale;
        }
    }

    if (*p != '\0' || whole * 100 + frac > 10000) {
        return -EINVAL;
    }

    *bpp = (unsigned int)(whole * 100 + frac);
    return 0;
}

const struct perfmon_capture *
perfmon_report_last(const char *who)
{
    const struct perfmon_capture *cap = perfmon_capture_last();

    if (cap == NULL) {
        kprintf("perfmon: %s: no recording (run 'perfmon record' first)\n",
                who);
    }

    return cap;
}

/* What `perfmon report`'s options ask for. */
struct perfmon_report_opts {
    unsigned int keys;                  /* PERFMON_PROFILE_KEY_* */
    unsigned int limit_bp;              /* --percent-limit, hundredths */
    bool chains, folded, branches, sorted;
    bool offcpu;                        /* --sort offcpu */
};

static int
perfmon_report_option(void *ctx, int letter, const char *val)
{
    struct perfmon_report_opts *o = ctx;

    switch (letter) {
    case 'g':
        o->chains = true;
        break;
    case 'f':
        o->folded = true;
        break;
    case 'b':
        o->branches = true;
        break;
    case 's':
        o->sorted = true;
        o->offcpu = (strcmp(val, "offcpu") == 0);

        if (!o->offcpu && perfmon_report_parse_sort(val, &o->keys) != 0) {
            return perfmon_report_error("--sort: unknown keys '%s'", val);
        }

        break;
    case 'p':
        if (perfmon_report_parse_percent(val, &o->limit_bp) != 0) {
            return perfmon_report_error("--percent-limit: '%s' is not a "
                                        "percentage from 0 to 100", val);
        }

        break;
    }

    return 0;
}

int
perfmon_report_main(int argc, char **argv)
{
    static const struct perfmon_cmd_longopt longopts[] = {
        { "sort", 's', true },
        { "folded", 'f', false },
        { "percent-limit", 'p', true },
        { "branch", 'b', false },
        { "branch-stack", 'b', false },
        { NULL, 0, false },
    };
    struct perfmon_report_opts o = {
        .keys = PERFMON_PROFILE_KEY_COMM | PERFMON_PROFILE_KEY_SYM,
    };
    const struct perfmon_capture *cap;
    struct perfmon_profile *p;
    struct perfmon_capture_info info;
    struct perfmon_cmd_opts opts;
    int error;

    perfmon_cmd_opts_init(&opts, argc, argv, 2, "gb", longopts);
    error = perfmon_cmd_options(&opts, "report", perfmon_report_usage,
                                perfmon_report_option, &o);

    if (error) {
        return error;
    }

    if (opts.index < argc) {
        return perfmon_report_error("unexpected argument '%s'",
                                    argv[opts.index]);
    }

    if (o.branches && (o.chains || o.folded || o.sorted)) {
        return perfmon_report_error("--branch goes with --percent-limit "
                                    "alone");
    }

    cap = perfmon_report_last("report");

    if (cap == NULL) {
        return SHELL_ERR_REPORTED;
    }

    if (o.branches) {
        return perfmon_report_branches(cap, o.limit_bp);
    }

    if (o.offcpu) {
        return (o.chains || o.folded)
               ? perfmon_report_error("--sort offcpu goes with "
                                      "--percent-limit alone")
               : perfmon_offcpu_report(cap, o.limit_bp);
    }

    error = perfmon_profile_create(&p, o.keys, o.chains || o.folded);

    if (error) {
        kprintf("perfmon: report: out of memory\n");
        return SHELL_ERR_REPORTED;
    }

    perfmon_profile_add_all(p, cap);
    perfmon_capture_get_info(cap, &info);

    if (o.folded) {
        perfmon_profile_print_folded(p);
    } else {
        kprintf("# perfmon report of '%s', %llu lost\n", info.command,
                (unsigned long long)info.nr_lost);
        perfmon_profile_print_events(p, cap, o.limit_bp, o.chains);
    }

    perfmon_profile_destroy(p);
    return 0;
}
