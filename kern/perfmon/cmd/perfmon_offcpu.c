/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Switch records on the command side: see kern/perfmon/cmd/perfmon_offcpu.h.
 *
 * The time-ordered walk merges one cursor per CPU over the store: each
 * cursor steps through the records of its CPU only, and the cursor whose
 * record is oldest goes next.  The store keeps each CPU's records in the
 * order its ring had them, which is time order, so this costs no memory
 * beyond the cursors (the store is walked once per CPU).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/num.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_capture.h"
#include "kern/perfmon/cmd/perfmon_offcpu.h"
#include "kern/perfmon_switchrec.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/string.h"
#include "kern/symtab.h"

/* Threads and (thread, function) rows one view keeps. */
#define PERFMON_OFFCPU_MAX_THREADS  256
#define PERFMON_OFFCPU_MAX_ROWS     512

/* ---- the records in time order ------------------------------------------ */

/* A CPU's cursor: its next record, and that record's time (0: none). */
struct perfmon_offcpu_cursor {
    struct perfmon_capture_pos pos;
    const struct perfmon_rec_hdr *hdr;
    uint64_t time_ns;
};

/* The CPU a record belongs to and its time (0: it has none). */
static unsigned int
perfmon_offcpu_rec_cpu(const struct perfmon_rec_hdr *hdr, uint64_t *timep)
{
    struct perfmon_sample sample;
    struct perfmon_switch sw;

    *timep = 0;

    if (hdr->type == PERFMON_REC_SAMPLE
        && perfmon_sample_decode(hdr, hdr->size, &sample) == 0) {
        *timep = (sample.fields & PERFMON_SF_TIME) ? sample.time_ns : 0;
        return (sample.fields & PERFMON_SF_CPU) ? sample.cpu : 0;
    } else if (perfmon_switch_decode(hdr, &sw) == 0) {
        *timep = sw.time_ns;
        return sw.cpu;
    } else if (hdr->type == PERFMON_REC_LOST) {
        return hdr->misc;
    }

    return 0;
}

/* Move cursor c (of CPU cpu, of nr) to the next record that is its. */
static void
perfmon_offcpu_cursor_next(const struct perfmon_capture *cap,
                           struct perfmon_offcpu_cursor *c, unsigned int cpu,
                           unsigned int nr)
{
    while ((c->hdr = perfmon_capture_next(cap, &c->pos)) != NULL) {
        unsigned int rec_cpu = perfmon_offcpu_rec_cpu(c->hdr, &c->time_ns);

        /* A CPU out of range (a damaged record) is the first CPU's. */
        if (rec_cpu == cpu || (cpu == 0 && rec_cpu >= nr)) {
            return;
        }
    }
}

void
perfmon_offcpu_foreach_timed(const struct perfmon_capture *cap,
                             perfmon_capture_fn_t fn, void *arg)
{
    unsigned int nr = cpu_count();
    size_t size = nr * sizeof(struct perfmon_offcpu_cursor);
    struct perfmon_offcpu_cursor *cursors = kmem_zalloc(size);

    if (cursors == NULL) {
        perfmon_capture_foreach(cap, fn, arg);
        return;
    }

    for (unsigned int i = 0; i < nr; i++) {
        perfmon_offcpu_cursor_next(cap, &cursors[i], i, nr);
    }

    for (;;) {
        struct perfmon_offcpu_cursor *best = NULL;
        unsigned int best_cpu = 0;

        for (unsigned int i = 0; i < nr; i++) {
            if (cursors[i].hdr != NULL
                && (best == NULL || cursors[i].time_ns < best->time_ns)) {
                best = &cursors[i];
                best_cpu = i;
            }
        }

        if (best == NULL || !fn(best->hdr, arg)) {
            break;
        }

        perfmon_offcpu_cursor_next(cap, best, best_cpu, nr);
    }

    kmem_free(cursors, size);
}

/* ---- perfmon script ----------------------------------------------------- */

/* A thread's name as recorded, or perf's ":tid" for one without. */
static void
perfmon_offcpu_comm(const struct perfmon_capture *cap, unsigned int tid,
                    char *buf, size_t size)
{
    const char *comm = (cap != NULL) ? perfmon_capture_comm(cap, tid) : NULL;

    if (comm != NULL && comm[0] != '\0') {
        strlcpy(buf, comm, size);
    } else {
        ksnprintf(buf, size, ":%u", tid);
    }
}

void
perfmon_offcpu_script(const struct perfmon_capture *cap,
                      const struct perfmon_rec_hdr *hdr)
{
    char comm[PERFMON_REC_NAME_SIZE];
    struct perfmon_switch sw;

    if (perfmon_switch_decode(hdr, &sw) != 0) {
        return;
    }

    perfmon_offcpu_comm(cap, sw.tid, comm, sizeof(comm));

    /* perf script --show-switch-events: a thread is its own process. */
    kprintf("%16s %6u [%03u] %6llu.%06llu: PERF_RECORD_SWITCH_CPU_WIDE %s  "
            "%s pid/tid: %5u/%-5u\n", comm, sw.tid, sw.cpu,
            (unsigned long long)(sw.time_ns / 1000000000),
            (unsigned long long)(sw.time_ns / 1000 % 1000000),
            !sw.out ? "IN         " : !sw.preempt ? "OUT        "
                                                  : "OUT preempt",
            sw.out ? "next" : "prev", sw.other, sw.other);
}

/* ---- the off-CPU view --------------------------------------------------- */

/* A thread seen: out since when, in which function. */
struct perfmon_offcpu_thread {
    unsigned int tid;
    bool out;
    uint64_t since_ns;
    uint64_t func;
};

struct perfmon_offcpu {
    struct perfmon_offcpu_thread threads[PERFMON_OFFCPU_MAX_THREADS];
    unsigned int nr_threads;
    struct perfmon_offcpu_row rows[PERFMON_OFFCPU_MAX_ROWS];
    unsigned int nr_rows;
    uint64_t total_ns;
    uint64_t nr_dropped;                /* spans with no room for a row */
};

int
perfmon_offcpu_create(struct perfmon_offcpu **offcpup)
{
    *offcpup = kmem_zalloc(sizeof(**offcpup));
    return (*offcpup == NULL) ? -ENOMEM : 0;
}

void
perfmon_offcpu_destroy(struct perfmon_offcpu *offcpu)
{
    if (offcpu != NULL) {
        kmem_free(offcpu, sizeof(*offcpu));
    }
}

/* The scheduler's functions, and the switch records' own. */
static bool
perfmon_offcpu_is_sched(const char *name)
{
    static const char *const prefixes[] = { "thread_", "perfmon_switchrec_" };

    for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) {
            return true;
        }
    }

    return false;
}

/*
 * The function a thread switched out in: the first of the chain outside
 * the scheduler, else the outermost one known (a thread that only ever
 * schedules, like an idle loop), else 0.
 */
static uint64_t
perfmon_offcpu_func(const struct perfmon_switch *sw)
{
    uint64_t last = 0, offset;

    for (unsigned int i = 0; i < sw->nr_ips; i++) {
        const char *name = symtab_lookup(sw->ips[i], &offset);

        if (name == NULL) {
            continue;
        }

        last = sw->ips[i] - offset;

        if (!perfmon_offcpu_is_sched(name)) {
            break;
        }
    }

    return last;
}

static struct perfmon_offcpu_thread *
perfmon_offcpu_thread(struct perfmon_offcpu *o, unsigned int tid)
{
    for (unsigned int i = 0; i < o->nr_threads; i++) {
        if (o->threads[i].tid == tid) {
            return &o->threads[i];
        }
    }

    if (o->nr_threads == PERFMON_OFFCPU_MAX_THREADS) {
        return NULL;
    }

    o->threads[o->nr_threads] = (struct perfmon_offcpu_thread){ .tid = tid };
    return &o->threads[o->nr_threads++];
}

static void
perfmon_offcpu_charge(struct perfmon_offcpu *o, unsigned int tid,
                      uint64_t func, uint64_t ns)
{
    struct perfmon_offcpu_row *row = NULL;

    for (unsigned int i = 0; i < o->nr_rows && row == NULL; i++) {
        if (o->rows[i].tid == tid && o->rows[i].func == func) {
            row = &o->rows[i];
        }
    }

    if (row == NULL && o->nr_rows == PERFMON_OFFCPU_MAX_ROWS) {
        o->nr_dropped++;
        return;
    }

    if (row == NULL) {
        row = &o->rows[o->nr_rows++];
        *row = (struct perfmon_offcpu_row){ .tid = tid, .func = func };
    }

    row->ns += ns;
    row->nr_spans++;
    o->total_ns += ns;
}

void
perfmon_offcpu_add(struct perfmon_offcpu *o, const struct perfmon_switch *sw)
{
    struct perfmon_offcpu_thread *t = perfmon_offcpu_thread(o, sw->tid);

    if (t == NULL) {
        o->nr_dropped++;
        return;
    }

    if (sw->out) {
        t->out = true;
        t->since_ns = sw->time_ns;
        t->func = perfmon_offcpu_func(sw);
    } else if (t->out) {
        t->out = false;
        perfmon_offcpu_charge(o, sw->tid, t->func,
                              (sw->time_ns > t->since_ns)
                              ? sw->time_ns - t->since_ns : 0);
    }
}

unsigned int
perfmon_offcpu_nr_rows(const struct perfmon_offcpu *offcpu)
{
    return offcpu->nr_rows;
}

uint64_t
perfmon_offcpu_total_ns(const struct perfmon_offcpu *offcpu)
{
    return offcpu->total_ns;
}

unsigned int
perfmon_offcpu_sorted(const struct perfmon_offcpu *o,
                      struct perfmon_offcpu_row *rows, unsigned int max)
{
    unsigned int n = MIN(max, o->nr_rows);
    bool taken[PERFMON_OFFCPU_MAX_ROWS] = { false };

    /* A selection of the heaviest left, n times (ties: the first seen). */
    for (unsigned int k = 0; k < n; k++) {
        unsigned int best = UINT32_MAX;

        for (unsigned int i = 0; i < o->nr_rows; i++) {
            if (!taken[i]
                && (best == UINT32_MAX || o->rows[i].ns > o->rows[best].ns)) {
                best = i;
            }
        }

        taken[best] = true;
        rows[k] = o->rows[best];
    }

    return n;
}

/* The report's walk: the switch records, fed in time order. */
static bool
perfmon_offcpu_add_rec(const struct perfmon_rec_hdr *hdr, void *arg)
{
    struct perfmon_switch sw;

    if (perfmon_switch_decode(hdr, &sw) == 0) {
        perfmon_offcpu_add(arg, &sw);
    }

    return true;
}

/* One row, in one call: lines of other CPUs do not come between. */
static void
perfmon_offcpu_print_row(const struct perfmon_capture *cap,
                         const struct perfmon_offcpu_row *row,
                         uint64_t total_ns)
{
    char pct[16], comm[PERFMON_REC_NAME_SIZE];
    uint64_t offset;
    const char *name = symtab_lookup(row->func, &offset);

    num_fmt_percent(pct, sizeof(pct), row->ns, total_ns, false);
    perfmon_offcpu_comm(cap, row->tid, comm, sizeof(comm));
    kprintf("%8s%%  %8llu.%03llu  %8llu  %-15s  %6u  [k] %s\n", pct,
            (unsigned long long)(row->ns / 1000000),
            (unsigned long long)(row->ns / 1000 % 1000),
            (unsigned long long)row->nr_spans, comm, row->tid,
            (name != NULL) ? name : "[unknown]");
}

int
perfmon_offcpu_report(const struct perfmon_capture *cap, unsigned int limit_bp)
{
    size_t size = PERFMON_OFFCPU_MAX_ROWS * sizeof(struct perfmon_offcpu_row);
    struct perfmon_capture_info info;
    struct perfmon_offcpu_row *rows;
    struct perfmon_offcpu *o;
    unsigned int n;

    rows = kmem_alloc(size);

    if (rows == NULL || perfmon_offcpu_create(&o) != 0) {
        if (rows != NULL) {
            kmem_free(rows, size);
        }

        kprintf("perfmon: report: out of memory\n");
        return SHELL_ERR_REPORTED;
    }

    perfmon_offcpu_foreach_timed(cap, perfmon_offcpu_add_rec, o);
    perfmon_capture_get_info(cap, &info);

    if (o->nr_rows == 0) {
        kprintf("perfmon: report: --sort offcpu: no thread was seen "
                "switching out and back in (record with --switch-events)\n");
    } else {
        kprintf("# perfmon report of '%s': time switched out, by thread and "
                "the function it left the CPU in\n"
                "# Off-CPU total: %llu.%03llu ms over %u threads\n#\n",
                info.command,
                (unsigned long long)(o->total_ns / 1000000),
                (unsigned long long)(o->total_ns / 1000 % 1000),
                o->nr_threads);
        kprintf("# Overhead  Off-CPU (ms)  Switches  Command          "
                "   Tid  Symbol\n# ........  ............  ........  "
                "...............  ......  ......................\n#\n");
        n = perfmon_offcpu_sorted(o, rows, PERFMON_OFFCPU_MAX_ROWS);

        for (unsigned int i = 0; i < n; i++) {
            if (o->total_ns != 0
                && num_muldiv(rows[i].ns, 10000, o->total_ns) < limit_bp) {
                break;
            }

            perfmon_offcpu_print_row(cap, &rows[i], o->total_ns);
        }

        if (o->nr_dropped != 0) {
            kprintf("# %llu switches not counted: too many threads or "
                    "rows\n", (unsigned long long)o->nr_dropped);
        }
    }

    n = o->nr_rows;
    perfmon_offcpu_destroy(o);
    kmem_free(rows, size);
    return (n == 0) ? SHELL_ERR_REPORTED : 0;
}
