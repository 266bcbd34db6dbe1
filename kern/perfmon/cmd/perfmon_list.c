/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * What this machine can count, as the `perfmon` command shows it:
 * `perfmon list` (every event of every device, or those a filter names)
 * and `perfmon info` (the devices, the hardware PMU and branch records
 * found at boot, and the counters in use with their users).  Both only
 * read the core's state through kern/perfmon.h.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
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

/* The aliases of a generic event, comma-separated. */
static void
perfmon_list_aliases(const struct perfmon_event_desc *desc, char *buf,
                     size_t size)
{
    size_t len = 0;

    buf[0] = '\0';

    for (size_t i = 0; i < ARRAY_SIZE(desc->aliases); i++) {
        if (desc->aliases[i] == NULL) {
            break;
        }

        len += (size_t)ksnprintf(&buf[MIN(len, size - 1)],
                                 size - MIN(len, size - 1), "%s%s",
                                 (len == 0) ? "" : ",", desc->aliases[i]);
    }
}

/* The name of a raw code on a device, for `perfmon info`, or NULL. */
static const char *
perfmon_list_raw_name(struct perfmon_dev *dev, uint64_t raw)
{
    for (unsigned int i = 0; i < dev->nr_events; i++) {
        if (dev->events[i].raw_event == raw) {
            return dev->events[i].name;
        }
    }

    for (unsigned int id = 0; id < PERFMON_NR_EVENTS; id++) {
        uint64_t code;

        if ((perfmon_dev_translate(dev, id, &code) == 0) && (code == raw)) {
            return perfmon_event_desc(id)->name;
        }
    }

    return NULL;
}

/* ---- perfmon list ------------------------------------------------------- */

/* The modes an event tells apart, as `perfmon list` shows them. */
static const char *
perfmon_list_modes(unsigned int modes)
{
    switch (modes & PERFMON_EF_MODE) {
    case PERFMON_EF_MODE:
        return "u,k";
    case PERFMON_EF_KERN:
        return "k";
    case PERFMON_EF_USER:
        return "u";
    default:
        return "any";
    }
}

/* Whether filter (NULL: none) is part of any of the texts. */
static bool
perfmon_list_matches(const char *filter, const char *name,
                     const char *aliases, const char *desc)
{
    return filter == NULL || strstr(name, filter) != NULL
           || strstr(aliases, filter) != NULL
           || (desc != NULL && strstr(desc, filter) != NULL);
}

static void
perfmon_list_event(const char *name, const char *aliases, uint64_t raw,
                   bool has_raw, unsigned int modes, const char *desc,
                   const char *status)
{
    struct perfmon_cmd_line line;
    char raw_buf[24] = "";

    if (has_raw) {
        ksnprintf(raw_buf, sizeof(raw_buf), "r%llx", (unsigned long long)raw);
    }

    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "  %-20s %-22s %-12s %-5s %s%s%s", name,
                         aliases, raw_buf, perfmon_list_modes(modes),
                         (desc != NULL) ? desc : "",
                         (status != NULL) ? "  " : "",
                         (status != NULL) ? status : "");
    perfmon_cmd_line_print(&line);
}

/* A device's heading, before its first event listed. */
static void
perfmon_list_heading(struct perfmon_dev *dev, unsigned int n)
{
    struct perfmon_dev_info info;

    if (n != 0) {
        return;
    }

    perfmon_dev_get_info(dev, &info);
    kprintf("%s: %u counters, %u bits%s%s%s\n", dev->name, info.nr_pmcs,
            info.width, dev->named_only ? ", counts only events named " : "",
            dev->named_only ? dev->name : "",
            dev->named_only ? "/EVENT/" : "");
    kprintf("  %-20s %-22s %-12s %-5s %s\n", "event", "aliases", "raw",
            "modes", "description");
}

/* One device's events that match filter; how many were listed. */
static unsigned int
perfmon_list_dev(struct perfmon_dev *dev, const char *filter,
                 bool counted[PERFMON_NR_EVENTS])
{
    unsigned int n = 0;
    char aliases[64];

    for (unsigned int id = 0; id < PERFMON_NR_EVENTS; id++) {
        const struct perfmon_event_desc *desc = perfmon_event_desc(id);
        uint64_t raw;

        if (perfmon_dev_translate(dev, id, &raw) != 0) {
            continue;
        }

        counted[id] |= !dev->named_only;
        perfmon_list_aliases(desc, aliases, sizeof(aliases));

        if (perfmon_list_matches(filter, desc->name, aliases,
                                 desc->desc)) {
            const char *why = perfmon_dev_why_not(dev, raw);

            perfmon_list_heading(dev, n);
            perfmon_list_event(desc->name, aliases, raw, true,
                               desc->modes, desc->desc,
                               (why != NULL) ? "<cannot count now>"
                                             : NULL);

            if (why != NULL) {
                kprintf("    (%s)\n", why);
            }

            n++;
        }
    }

    for (unsigned int i = 0; i < dev->nr_events; i++) {
        if (perfmon_list_matches(filter, dev->events[i].name, "",
                                 "device event")) {
            perfmon_list_heading(dev, n);
            perfmon_list_event(dev->events[i].name, "",
                               dev->events[i].raw_event, true,
                               PERFMON_EF_MODE, "device event", NULL);
            n++;
        }
    }

    return n;
}


static const struct perfmon_cmd_longopt perfmon_list_longopts[] = {
    { "json", 'j', false },
    { NULL, 0, false },
};

static int
perfmon_list_option(void *arg, int opt, const char *val)
{
    bool *jsonp = arg;

    (void)val;
    *jsonp |= (opt == 'j');
    return 0;
}

/*
 * The options of list and info (-j, --json), through the shared parser:
 * the index of the first word after them, or -1 after saying what is
 * wrong.
 */
static int
perfmon_list_options(int argc, char **argv, const char *who,
                     const char *usage, bool *jsonp)
{
    struct perfmon_cmd_opts opts;

    perfmon_cmd_opts_init(&opts, argc, argv, 2, "j", perfmon_list_longopts);

    if (perfmon_cmd_options(&opts, who, usage, perfmon_list_option,
                            jsonp) != 0) {
        return -1;
    }

    return opts.index;
}

struct perfmon_list_pmcs;

static int perfmon_list_json(const char *filter);
static int perfmon_info_json(const struct perfmon_list_pmcs *pmcs);

const char perfmon_list_usage[] = "usage: perfmon list [-j] [FILTER]\n";
const char perfmon_info_usage[] = "usage: perfmon info [-j]\n";

/*
 * `perfmon list [-j] [FILTER]`: every event of every device, or those
 * whose name, alias or description contains FILTER (perf list's filter);
 * -j: as JSON (perfmon_list_json()).
 */
int
perfmon_list_main(int argc, char **argv)
{
    bool counted[PERFMON_NR_EVENTS] = { false };
    bool any_missing = false, hw_present, json = false;
    const char *hw_status = perfmon_hw_status(&hw_present);
    const char *filter;
    unsigned int n = 0;
    char aliases[64];
    int index;

    index = perfmon_list_options(argc, argv, "list", perfmon_list_usage,
                                 &json);

    if (index < 0) {
        return SHELL_ERR_REPORTED;
    }

    filter = (index < argc) ? argv[index] : NULL;

    if (index + 1 < argc) {
        return perfmon_cmd_error("list", perfmon_list_usage,
                                 "one filter at most ('%s' is extra)",
                                 argv[index + 1]);
    }

    if (json) {
        return perfmon_list_json(filter);
    }

    for (unsigned int d = 0; d < perfmon_nr_devs(); d++) {
        n += perfmon_list_dev(perfmon_dev_get(d), filter, counted);
    }

    for (unsigned int id = 0; id < PERFMON_NR_EVENTS; id++) {
        const struct perfmon_event_desc *desc = perfmon_event_desc(id);

        perfmon_list_aliases(desc, aliases, sizeof(aliases));

        if (counted[id]
            || !perfmon_list_matches(filter, desc->name, aliases,
                                     desc->desc)) {
            continue;
        }

        if (!any_missing) {
            kprintf("hardware events: <not available>: %s%s\n",
                    hw_present ? "the hardware PMU cannot count them"
                               : "hardware PMU: ",
                    hw_present ? "" : hw_status);
            any_missing = true;
        }

        perfmon_list_event(desc->name, aliases, 0, false, desc->modes,
                           desc->desc, "<not available>");
        n++;
    }

    if (filter != NULL && n == 0) {
        kprintf("perfmon: list: no event matches '%s'\n", filter);
        return SHELL_ERR_REPORTED;
    }

    kprintf("raw events: rHEX names a raw code of the first device (%s); "
            "modifiers :u :k (default both); modes: what :u and :k tell "
            "apart (k: :u counts 0; any: both count)\n",
            (perfmon_nr_devs() > 0) ? perfmon_dev_get(0)->name : "none");
    return 0;
}

/* ---- perfmon info ------------------------------------------------------- */

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
    kprintf("cpu: %s family %#x model %#x\n", cpu_info.vendor_str,
            cpu_info.family, cpu_info.model);
    kprintf("hardware PMU: %s\n", perfmon_hw_status(NULL));
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

/*
 * One event of `perfmon list -j`, in the field names of perf list's JSON
 * (Unit: the device; EventName, EventAlias, Encoding, BriefDescription),
 * plus the modes it tells apart and why it cannot count now (Status);
 * last says whether a comma follows.
 */
static void
perfmon_list_json_event(const char *dev, const char *name,
                        const char *aliases, const char *encoding,
                        unsigned int modes, const char *desc,
                        const char *status, bool last)
{
    struct perfmon_cmd_line line;

    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "{\"Unit\" : ");
    perfmon_json_add_string(&line, dev);
    perfmon_cmd_line_add(&line, ", \"EventName\" : ");
    perfmon_json_add_string(&line, name);
    perfmon_cmd_line_add(&line, ", \"EventAlias\" : ");
    perfmon_json_add_string(&line, aliases);
    perfmon_cmd_line_add(&line, ", \"Encoding\" : ");
    perfmon_json_add_string(&line, encoding);
    perfmon_cmd_line_add(&line, ", \"Modes\" : \"%s\", "
                         "\"BriefDescription\" : ",
                         perfmon_list_modes(modes));
    perfmon_json_add_string(&line, desc);

    if (status != NULL) {
        perfmon_cmd_line_add(&line, ", \"Status\" : ");
        perfmon_json_add_string(&line, status);
    }

    perfmon_cmd_line_add(&line, "}%s", last ? "" : ",");
    perfmon_cmd_line_print(&line);
}

/*
 * Which events of `perfmon list -j` match: each generic event each device
 * counts, each device event, and the generic events no device counts
 * (Unit null-like "", Status "not available").  The array is printed in
 * one pass that holds back each object until the next is known, so that
 * the last has no comma.
 */
struct perfmon_list_json_item {
    const char *dev;
    const char *name;
    char aliases[64];
    char encoding[24];
    unsigned int modes;
    const char *desc;
    const char *status;
};

struct perfmon_list_json_out {
    struct perfmon_list_json_item held;
    bool holding;
    unsigned int n;
};

static void
perfmon_list_json_emit(struct perfmon_list_json_out *out,
                       const struct perfmon_list_json_item *item)
{
    if (out->holding) {
        const struct perfmon_list_json_item *h = &out->held;

        perfmon_list_json_event(h->dev, h->name, h->aliases, h->encoding,
                                h->modes, h->desc, h->status, item == NULL);
    }

    out->holding = (item != NULL);

    if (item != NULL) {
        out->held = *item;
        out->n++;
    }
}

static int
perfmon_list_json(const char *filter)
{
    bool counted[PERFMON_NR_EVENTS] = { false };
    struct perfmon_list_json_out out = { .holding = false, .n = 0 };
    struct perfmon_list_json_item item;

    kprintf("[\n");

    for (unsigned int d = 0; d < perfmon_nr_devs(); d++) {
        struct perfmon_dev *dev = perfmon_dev_get(d);

        for (unsigned int id = 0; id < PERFMON_NR_EVENTS; id++) {
            const struct perfmon_event_desc *desc = perfmon_event_desc(id);
            uint64_t raw;

            if (perfmon_dev_translate(dev, id, &raw) != 0) {
                continue;
            }

            counted[id] |= !dev->named_only;
            perfmon_list_aliases(desc, item.aliases, sizeof(item.aliases));

            if (!perfmon_list_matches(filter, desc->name, item.aliases,
                                      desc->desc)) {
                continue;
            }

            item.dev = dev->name;
            item.name = desc->name;
            ksnprintf(item.encoding, sizeof(item.encoding), "r%llx",
                      (unsigned long long)raw);
            item.modes = desc->modes;
            item.desc = desc->desc;
            item.status = perfmon_dev_why_not(dev, raw);
            perfmon_list_json_emit(&out, &item);
        }

        for (unsigned int i = 0; i < dev->nr_events; i++) {
            if (!perfmon_list_matches(filter, dev->events[i].name, "",
                                      "device event")) {
                continue;
            }

            item.dev = dev->name;
            item.name = dev->events[i].name;
            item.aliases[0] = '\0';
            ksnprintf(item.encoding, sizeof(item.encoding), "r%llx",
                      (unsigned long long)dev->events[i].raw_event);
            item.modes = PERFMON_EF_MODE;
            item.desc = "device event";
            item.status = NULL;
            perfmon_list_json_emit(&out, &item);
        }
    }

    for (unsigned int id = 0; id < PERFMON_NR_EVENTS; id++) {
        const struct perfmon_event_desc *desc = perfmon_event_desc(id);

        perfmon_list_aliases(desc, item.aliases, sizeof(item.aliases));

        if (counted[id] || !perfmon_list_matches(filter, desc->name,
                                                 item.aliases, desc->desc)) {
            continue;
        }

        item.dev = "";
        item.name = desc->name;
        item.encoding[0] = '\0';
        item.modes = desc->modes;
        item.desc = desc->desc;
        item.status = "not available";
        perfmon_list_json_emit(&out, &item);
    }

    perfmon_list_json_emit(&out, NULL);
    kprintf("]\n");

    if (filter != NULL && out.n == 0) {
        kprintf("perfmon: list: no event matches '%s'\n", filter);
        return SHELL_ERR_REPORTED;
    }

    return 0;
}

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
