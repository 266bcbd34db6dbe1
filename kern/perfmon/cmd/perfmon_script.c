/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon script`: every record of the last recording, one line each as
 * `perf script` prints them (samples, with their call chains and branch
 * stacks; switch records; lost samples), in time order across the CPUs.
 * `perfmon report` is in perfmon_report.c.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/console.h"
#include "kern/kmem.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_capture.h"
#include "kern/perfmon/cmd/perfmon_offcpu.h"
#include "kern/perfmon/cmd/perfmon_record.h"
#include "kern/perfmon/cmd/perfmon_report.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/symtab.h"

const char perfmon_script_usage[] = "usage: perfmon script\n";

static void
perfmon_script_sym(struct perfmon_cmd_line *line, uint64_t addr)
{
    uint64_t offset;
    const char *name = symtab_lookup(addr, &offset);

    if (name != NULL) {
        perfmon_cmd_line_add(line, "%016llx %s+0x%llx ([kernel.kallsyms])",
                             (unsigned long long)addr, name,
                             (unsigned long long)offset);
    } else {
        perfmon_cmd_line_add(line, "%016llx [unknown] ([kernel.kallsyms])",
                             (unsigned long long)addr);
    }
}

struct perfmon_script {
    const struct perfmon_capture *cap;
    struct perfmon_reads reads;
};

/*
 * A branch of a sample's stack, newest first, one line each, as perf
 * script's brstacksym shows them: from and to, and what the hardware said
 * (mispredicted or predicted, the cycles since the branch before).
 */
static void
perfmon_script_branch(const struct perfmon_branch *b)
{
    uint64_t cycles = (b->flags >> PERFMON_BR_CYCLES_SHIFT)
                      & PERFMON_BR_CYCLES_MAX;
    struct perfmon_cmd_line line;
    char from[64], to[64];

    perfmon_report_addr(from, sizeof(from), b->from);
    perfmon_report_addr(to, sizeof(to), b->to);
    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "\tbranch %016llx %s -> %016llx %s",
                         (unsigned long long)b->from, from,
                         (unsigned long long)b->to, to);

    if (b->flags & PERFMON_BR_MISPRED) {
        perfmon_cmd_line_add(&line, " mispredicted");
    } else if (b->flags & PERFMON_BR_PREDICTED) {
        perfmon_cmd_line_add(&line, " predicted");
    }

    if (cycles != 0) {
        perfmon_cmd_line_add(&line, " %llu cycles",
                             (unsigned long long)cycles);
    }

    perfmon_cmd_line_print(&line);
}

/* A sample's first line, for event with period. */
static void
perfmon_script_head(const struct perfmon_script *script,
                    const struct perfmon_sample *s, const char *comm,
                    uint32_t event, uint64_t period)
{
    const struct perfmon_capture_event *ev;
    struct perfmon_cmd_line line;

    ev = perfmon_capture_event(script->cap, event);
    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "%16s %6u [%03u] %6llu.%06llu: %10llu %s: ",
                         comm, s->tid, s->cpu,
                         (unsigned long long)(s->time_ns / 1000000000),
                         (unsigned long long)(s->time_ns / 1000 % 1000000),
                         (unsigned long long)period,
                         (ev != NULL) ? ev->name : "?");
    perfmon_script_sym(&line, s->ip);
    perfmon_cmd_line_print(&line);
}

static bool
perfmon_script_rec(const struct perfmon_rec_hdr *hdr, void *arg)
{
    struct perfmon_script *script = arg;
    struct perfmon_sample s;
    struct perfmon_cmd_line line;
    const char *comm;
    char name[PERFMON_REC_NAME_SIZE];
    uint64_t delta;
    uint32_t event;

    if (shell_interrupted()) {
        return false;
    }

    if (hdr->type == PERFMON_REC_LOST) {
        kprintf("LOST %llu samples on CPU %u\n\n",
                (unsigned long long)*(const uint64_t *)(hdr + 1), hdr->misc);
        return true;
    }

    if (hdr->type == PERFMON_REC_SWITCH) {
        perfmon_offcpu_script(script->cap, hdr);
        return true;
    }

    if (hdr->type != PERFMON_REC_SAMPLE
        || perfmon_sample_decode(hdr, hdr->size, &s) != 0) {
        return true;
    }

    comm = perfmon_capture_comm(script->cap, s.tid);

    if (comm == NULL || comm[0] == '\0') {
        ksnprintf(name, sizeof(name), ":%u", s.tid);
        comm = name;
    }

    /* A sample reading its group: a line per event that counted, as perf. */
    if (s.nr_reads == 0) {
        perfmon_script_head(script, &s, comm, s.id, s.period);
    }

    for (unsigned int i = 0; i < s.nr_reads; i++) {
        if (perfmon_capture_read_delta(script->cap, &s, &script->reads, i,
                                      &event, &delta)) {
            perfmon_script_head(script, &s, comm, event, delta);
        }
    }

    for (unsigned int i = 0; i < s.nr_ips; i++) {
        perfmon_cmd_line_init(&line);
        perfmon_cmd_line_add(&line, "\t");
        perfmon_script_sym(&line, s.ips[i]);
        perfmon_cmd_line_print(&line);
    }

    for (unsigned int i = 0; i < s.nr_branches; i++) {
        perfmon_script_branch(&s.branches[i]);
    }

    if (s.nr_ips != 0 || s.nr_branches != 0) {
        kprintf("\n");
    }

    return true;
}

int
perfmon_script_main(int argc, char **argv)
{
    struct perfmon_script *script;
    const struct perfmon_capture *cap;

    if (argc > 2) {
        return perfmon_cmd_error("script", perfmon_script_usage,
                                 "unexpected argument '%s'",
                                    argv[2]);
    }

    cap = perfmon_report_last("script");

    if (cap == NULL) {
        return SHELL_ERR_REPORTED;
    }

    script = kmem_zalloc(sizeof(*script));

    if (script == NULL) {
        kprintf("perfmon: script: out of memory\n");
        return SHELL_ERR_REPORTED;
    }

    /* In time order across the CPUs, each CPU's records in their order. */
    script->cap = cap;
    perfmon_offcpu_foreach_timed(cap, perfmon_script_rec, script);
    kmem_free(script, sizeof(*script));
    return 0;
}
