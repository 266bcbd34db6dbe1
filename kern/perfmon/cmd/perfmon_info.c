/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon info`, as the `perfmon` command shows it: the CPU, the
 * hardware PMU and branch records found at boot, each device, and the
 * counters in use with their users, as text or JSON (-j).  It only reads
 * the core's state through kern/perfmon.h.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/perfmon_evtab.h"
#include "kern/console.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_json.h"
#include "kern/perfmon/cmd/perfmon_list.h"
#include "kern/perfmon/cmd/perfmon_parse.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/string.h"
#include "kern/thread.h"

const char perfmon_info_usage[] = "usage: perfmon info [-j]\n";


/* A counter in use, copied out of the perfmon_pmc_foreach() callback. */
struct perfmon_list_pmc {
    struct perfmon_pmc_info info;
    unsigned int thread_ids[PERFMON_PMC_INFO_MAX_USERS];
    char thread_names[PERFMON_PMC_INFO_MAX_USERS][THREAD_NAME_SIZE];
};

struct perfmon_list_pmcs {
    struct perfmon_list_pmc *pmcs;
    unsigned int nr;
    unsigned int max;
    unsigned int dropped;
};

/* Called with the core's allocator lock held: copy, nothing else. */
static void
perfmon_list_pmc_collect(const struct perfmon_pmc_info *info, void *arg)
{
    struct perfmon_list_pmcs *pmcs = arg;
    struct perfmon_list_pmc *pmc;

    if (pmcs->nr == pmcs->max) {
        pmcs->dropped++;
        return;
    }

    pmc = &pmcs->pmcs[pmcs->nr++];
    pmc->info = *info;

    for (unsigned int i = 0; i < MIN(info->nr_users,
                                     PERFMON_PMC_INFO_MAX_USERS); i++) {
        const struct thread *thread = info->users[i].thread;

        if (thread != NULL) {
            pmc->thread_ids[i] = thread_id(thread);
            strlcpy(pmc->thread_names[i], thread_name(thread),
                    sizeof(pmc->thread_names[i]));
        }
    }
}

/* The branch-record driver: what it can do and who uses it, or why none. */
static void
perfmon_list_info_branches(void)
{
    struct perfmon_branch_info info;
    char filters[96], in_use[96];

    perfmon_branch_get_info(&info);

    if (!info.present) {
        kprintf("branch records: %s\n", info.text);
        return;
    }

    perfmon_parse_branch_fmt(filters, sizeof(filters), info.filters);
    perfmon_parse_branch_fmt(in_use, sizeof(in_use), info.filter);
    kprintf("branch records: %s; %u entries; filters %s; in use: ",
            info.text, info.depth, filters);

    if (info.nr_users == 0) {
        kprintf("no\n");
    } else {
        kprintf("%u event%s, filter %s\n", info.nr_users,
                (info.nr_users == 1) ? "" : "s", in_use);
    }
}

static void
perfmon_list_info_hw(void)
{
    const struct perfmon_evtab_model *m = perfmon_evtab_host();

    kprintf("cpu: %s family %#x model %#x stepping %#x\n",
            cpu_info.vendor_str, cpu_info.family, cpu_info.model,
            cpu_info.stepping);
    kprintf("hardware PMU: %s\n", perfmon_hw_status(NULL));

    if (m != NULL) {
        kprintf("model events: %s, %u events, %u metrics (perfmon list, "
                "perfmon list metrics)\n", m->name, m->nr_events,
                m->nr_metrics);
    } else {
        kprintf("model events: none (no list covers this CPU)\n");
    }

    perfmon_list_info_branches();
}

static void
perfmon_list_info_pmc(const struct perfmon_list_pmc *pmc)
{
    const struct perfmon_pmc_info *info = &pmc->info;
    const char *name = perfmon_list_raw_name(info->dev, info->raw_event);
    struct perfmon_cmd_line line;

    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "  %s counter %u (", info->dev->name,
                         info->index);

    if (info->pinned) {
        perfmon_cmd_line_add(&line, "pinned: hw %u", info->hw_id);
    } else {
        perfmon_cmd_line_add(&line, "a free one on each CPU");
    }

    perfmon_cmd_line_add(&line, "%s): r%llx %s:%s%s, %u user%s:",
                         info->grouped ? ", in a group" : "",
                         (unsigned long long)info->raw_event,
                         (name != NULL) ? name : "",
                         (info->flags & PERFMON_EF_USER) ? "u" : "",
                         (info->flags & PERFMON_EF_KERN) ? "k" : "",
                         info->nr_users, (info->nr_users == 1) ? "" : "s");

    for (unsigned int i = 0; i < MIN(info->nr_users,
                                     PERFMON_PMC_INFO_MAX_USERS); i++) {
        if (info->users[i].thread != NULL) {
            perfmon_cmd_line_add(&line, " thread %u (%s%s)",
                                 pmc->thread_ids[i], pmc->thread_names[i],
                                 info->users[i].inherited ? ", inherited"
                                                          : "");
        } else {
            perfmon_cmd_line_add(&line, " cpu %u", info->users[i].cpu);
        }
    }

    if (info->nr_users > PERFMON_PMC_INFO_MAX_USERS) {
        perfmon_cmd_line_add(&line, " ...");
    }

    if (info->sampling && info->freq != 0) {
        perfmon_cmd_line_add(&line, "; sampling at %u Hz, %zu KiB buffer per "
                             "CPU", info->freq, info->buffer_size / 1024);
    } else if (info->sampling) {
        perfmon_cmd_line_add(&line, "; sampling every %llu events, %zu KiB "
                             "buffer per CPU",
                             (unsigned long long)info->period,
                             info->buffer_size / 1024);
    }

    perfmon_cmd_line_print(&line);
}

/* The counters in use, into pmcs (on the heap); false: out of memory. */
static bool
perfmon_list_pmcs_get(struct perfmon_list_pmcs *pmcs)
{
    pmcs->max = PERFMON_MAX_PMCS;
    pmcs->pmcs = kmem_alloc(sizeof(*pmcs->pmcs) * PERFMON_MAX_PMCS);

    if (pmcs->pmcs == NULL) {
        kprintf("perfmon: info: out of memory\n");
        return false;
    }

    perfmon_pmc_foreach(perfmon_list_pmc_collect, pmcs);
    return true;
}

static int perfmon_info_json(const struct perfmon_list_pmcs *pmcs);

int
perfmon_info_main(int argc, char **argv)
{
    struct perfmon_list_pmcs pmcs = { .max = PERFMON_MAX_PMCS };
    size_t size = sizeof(*pmcs.pmcs) * PERFMON_MAX_PMCS;
    bool json = false;
    int index, error;

    index = perfmon_list_options(argc, argv, "info", perfmon_info_usage,
                                 &json);

    if (index < 0) {
        return SHELL_ERR_REPORTED;
    }

    if (index < argc) {
        return perfmon_cmd_error("info", perfmon_info_usage,
                                 "no arguments expected, not '%s'",
                                 argv[index]);
    }

    if (json) {
        if (!perfmon_list_pmcs_get(&pmcs)) {
            return SHELL_ERR_REPORTED;
        }

        error = perfmon_info_json(&pmcs);
        kmem_free(pmcs.pmcs, size);
        return error;
    }

    perfmon_list_info_hw();

    for (unsigned int d = 0; d < perfmon_nr_devs(); d++) {
        struct perfmon_dev *dev = perfmon_dev_get(d);
        struct perfmon_dev_info info;
        char overflow[48];

        perfmon_dev_get_info(dev, &info);

        if (info.poll_ms != 0) {
            ksnprintf(overflow, sizeof(overflow), "%spolled every %u ms",
                      info.overflow_intr ? "interrupt, and " : "",
                      info.poll_ms);
        } else {
            ksnprintf(overflow, sizeof(overflow), "%s",
                      info.overflow_intr ? "interrupt" : "none");
        }

        kprintf("device %s: %u counters x %u bits, overflow: %s, in use: "
                "%u of %u%s\n", info.name, info.nr_pmcs, info.width, overflow,
                info.nr_pmcs_used, info.nr_pmcs,
                (info.nr_pmcs_used > info.nr_pmcs)
                ? " (more events than counters: they take turns)" : "");
    }

    if (perfmon_nr_devs() == 0) {
        kprintf("no perfmon device registered\n");
    }

    if (!perfmon_list_pmcs_get(&pmcs)) {
        return SHELL_ERR_REPORTED;
    }

    if (pmcs.nr == 0) {
        kprintf("counters in use: none\n");
    } else {
        kprintf("counters in use: %u\n", pmcs.nr + pmcs.dropped);

        for (unsigned int i = 0; i < pmcs.nr; i++) {
            perfmon_list_info_pmc(&pmcs.pmcs[i]);
        }
    }

    kmem_free(pmcs.pmcs, size);
    return 0;
}

/* ---- -j ----------------------------------------------------------------- */

/* One counter in use, as an object of "counters-in-use". */
static void
perfmon_info_json_pmc(const struct perfmon_list_pmc *pmc, bool last)
{
    const struct perfmon_pmc_info *info = &pmc->info;
    const char *name = perfmon_list_raw_name(info->dev, info->raw_event);
    struct perfmon_cmd_line line;
    unsigned int nr = MIN(info->nr_users, PERFMON_PMC_INFO_MAX_USERS);

    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "  {\"device\" : ");
    perfmon_json_add_string(&line, info->dev->name);
    perfmon_cmd_line_add(&line, ", \"counter\" : %u, \"pinned\" : %s, "
                         "\"grouped\" : %s, \"raw\" : \"r%llx\", "
                         "\"event\" : ", info->index,
                         info->pinned ? "true" : "false",
                         info->grouped ? "true" : "false",
                         (unsigned long long)info->raw_event);
    perfmon_json_add_string(&line, (name != NULL) ? name : "");
    perfmon_cmd_line_add(&line, ", \"sampling\" : %s, \"users\" : %u, "
                         "\"threads\" : [",
                         info->sampling ? "true" : "false", info->nr_users);

    for (unsigned int i = 0, n = 0; i < nr; i++) {
        if (info->users[i].thread != NULL) {
            perfmon_cmd_line_add(&line, "%s%u", (n++ == 0) ? "" : ", ",
                                 pmc->thread_ids[i]);
        }
    }

    perfmon_cmd_line_add(&line, "], \"cpus\" : [");

    for (unsigned int i = 0, n = 0; i < nr; i++) {
        if (info->users[i].thread == NULL) {
            perfmon_cmd_line_add(&line, "%s%u", (n++ == 0) ? "" : ", ",
                                 info->users[i].cpu);
        }
    }

    perfmon_cmd_line_add(&line, "]}%s", last ? "" : ",");
    perfmon_cmd_line_print(&line);
}

/*
 * `perfmon info -j`: one JSON document, an object per line inside it:
 * the CPU, the hardware PMU and branch records as the text says them,
 * each device, and each counter in use (none: an empty array, as the text
 * says "counters in use: none").
 */
static int
perfmon_info_json(const struct perfmon_list_pmcs *pmcs)
{
    struct perfmon_branch_info branch;
    struct perfmon_cmd_line line;

    perfmon_branch_get_info(&branch);
    kprintf("{\n");
    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "\"cpu\" : {\"vendor\" : ");
    perfmon_json_add_string(&line, cpu_info.vendor_str);
    perfmon_cmd_line_add(&line, ", \"family\" : %u, \"model\" : %u},",
                         cpu_info.family, cpu_info.model);
    perfmon_cmd_line_print(&line);
    perfmon_cmd_line_add(&line, "\"hardware-pmu\" : ");
    perfmon_json_add_string(&line, perfmon_hw_status(NULL));
    perfmon_cmd_line_add(&line, ",");
    perfmon_cmd_line_print(&line);
    perfmon_cmd_line_add(&line, "\"branch-records\" : {\"present\" : %s, "
                         "\"text\" : ", branch.present ? "true" : "false");
    perfmon_json_add_string(&line, branch.text);
    perfmon_cmd_line_add(&line, ", \"users\" : %u},",
                         branch.present ? branch.nr_users : 0);
    perfmon_cmd_line_print(&line);
    kprintf("\"devices\" : [\n");

    for (unsigned int d = 0; d < perfmon_nr_devs(); d++) {
        struct perfmon_dev_info info;

        perfmon_dev_get_info(perfmon_dev_get(d), &info);
        perfmon_cmd_line_add(&line, "  {\"name\" : ");
        perfmon_json_add_string(&line, info.name);
        perfmon_cmd_line_add(&line, ", \"counters\" : %u, \"width\" : %u, "
                             "\"overflow-interrupt\" : %s, \"poll-ms\" : "
                             "%u, \"in-use\" : %u}%s", info.nr_pmcs,
                             info.width, info.overflow_intr ? "true"
                                                            : "false",
                             info.poll_ms, info.nr_pmcs_used,
                             (d + 1 < perfmon_nr_devs()) ? "," : "");
        perfmon_cmd_line_print(&line);
    }

    kprintf("],\n\"counters-in-use\" : [\n");

    for (unsigned int i = 0; i < pmcs->nr; i++) {
        perfmon_info_json_pmc(&pmcs->pmcs[i], i + 1 == pmcs->nr);
    }

    kprintf("],\n\"counters-not-shown\" : %u\n}\n", pmcs->dropped);
    return 0;
}
