/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * What this machine can count, as the `perfmon` command shows it:
 * `perfmon list` (every event of every device and of the CPU model's
 * table, or those a filter names, as text or JSON).  `perfmon info` is in
 * perfmon_info.c.  Both only read the core's state through kern/perfmon.h.
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
#include "kern/perfmon/cmd/perfmon_metric.h"
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

const char *
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

/* ---- perfmon list: the model's own events ------------------------------ */

static char
perfmon_list_lower(char c)
{
    return ((c >= 'A') && (c <= 'Z')) ? (char)(c - 'A' + 'a') : c;
}

/* Whether needle is part of haystack, case aside (model names differ). */
static bool
perfmon_list_contains(const char *haystack, const char *needle)
{
    for (; *haystack != '\0'; haystack++) {
        size_t i = 0;

        while (needle[i] != '\0'
               && perfmon_list_lower(haystack[i])
                  == perfmon_list_lower(needle[i])) {
            i++;
        }

        if (needle[i] == '\0') {
            return true;
        }
    }

    return needle[0] == '\0';
}

/* An event's extra MSR and what else it says, for its line. */
static void
perfmon_list_model_notes(const struct perfmon_evtab_event *ev, char *buf,
                         size_t size)
{
    const struct perfmon_evtab_extra *extra = perfmon_evtab_extra(ev);

    ksnprintf(buf, size, "%s%s%s", (ev->flags & PERFMON_EVTAB_F_PRECISE)
                                   ? " precise" : "",
              (ev->flags & PERFMON_EVTAB_F_DEPRECATED) ? " deprecated" : "",
              (ev->flags & PERFMON_EVTAB_F_MERGE)
              ? " large-increment (needs a counter pair: not counted)" : "");

    if (extra != NULL && extra->nr_msrs != 0) {
        size_t len = strlen(buf);

        ksnprintf(&buf[len], size - len, " msr %#x%s=%#llx", extra->msr,
                  (extra->nr_msrs > 1) ? "+" : "",
                  (unsigned long long)extra->value);
    }
}

/*
 * A model's events that match filter (name or topic), under their
 * topics' headings as perf prints them; how many were listed.
 */
static unsigned int
perfmon_list_model(const struct perfmon_evtab_model *m, const char *filter,
                   const char *why)
{
    char topic[64], last[64] = "", enc[64], ctrs[32], notes[96];
    unsigned int n = 0;

    for (unsigned int i = 0; i < m->nr_events; i++) {
        const struct perfmon_evtab_event *ev = perfmon_evtab_event(m, i);
        const char *name = perfmon_evtab_name(ev);
        struct perfmon_cmd_line line;

        perfmon_evtab_topic(ev, topic, sizeof(topic));

        if (filter != NULL && !perfmon_list_contains(name, filter)
            && !perfmon_list_contains(topic, filter)) {
            continue;
        }

        if (n == 0) {
            kprintf("%s events (%s): %u%s%s\n", m->name,
                    perfmon_evtab_vendor_name(m->vendor), m->nr_events,
                    (why != NULL) ? ", " : "", (why != NULL) ? why : "");
            kprintf("  %-44s %-36s %-9s %s\n", "event", "encoding",
                    "counters", "notes");
        }

        if (strcmp(topic, last) != 0) {
            kprintf(" %s:\n", topic);
            strlcpy(last, topic, sizeof(last));
        }

        perfmon_evtab_format(ev, enc, sizeof(enc));
        perfmon_evtab_format_counters(ev, ctrs, sizeof(ctrs));
        perfmon_list_model_notes(ev, notes, sizeof(notes));
        perfmon_cmd_line_init(&line);
        perfmon_cmd_line_add(&line, "  %-44s %-36s %-9s%s", name, enc, ctrs,
                             notes);
        perfmon_cmd_line_print(&line);
        n++;
    }

    return n;
}

/* The driver that counts a model's events. */
static const char *
perfmon_list_model_driver(const struct perfmon_evtab_model *m)
{
    return (m->vendor == PERFMON_EVTAB_VENDOR_AMD) ? "amd" : "intel";
}

/* Why the host's model events cannot be counted here, or NULL. */
static const char *
perfmon_list_model_why(const struct perfmon_evtab_model *m)
{
    return (perfmon_dev_find(perfmon_list_model_driver(m)) == NULL)
           ? "<not supported> here: no hardware PMU" : NULL;
}

/*
 * `perfmon list metrics [FILTER]`: the generic metrics, then the boot CPU
 * model's, with their formulas; those whose name contains FILTER.
 */
static int
perfmon_list_metrics(int argc, char **argv)
{
    const struct perfmon_evtab_model *m = perfmon_evtab_host();
    const char *filter = (argc > 3) ? argv[3] : NULL, *name, *formula;
    bool heading = false;
    unsigned int n = 0;

    if (argc > 4) {
        return perfmon_cmd_error("list", perfmon_list_usage, "one filter at "
                                 "most ('%s' is extra)", argv[4]);
    }

    for (unsigned int i = 0; perfmon_metric_builtin(i, &name, &formula);
         i++) {
        if (filter == NULL || perfmon_list_contains(name, filter)) {
            kprintf("%s%-44s %s\n", (n++ == 0) ? "metrics (generic "
                    "events):\n  " : "  ", name, formula);
        }
    }

    for (unsigned int i = 0; m != NULL && i < m->nr_metrics; i++) {
        name = perfmon_evtab_metric_name(&m->metrics[i]);

        if (filter == NULL || perfmon_list_contains(name, filter)) {
            struct perfmon_cmd_line line;

            if (!heading) {
                kprintf("%s metrics (%s)%s:\n", m->name,
                        perfmon_evtab_vendor_name(m->vendor),
                        (perfmon_list_model_why(m) != NULL)
                        ? ", <not supported> here: no hardware PMU" : "");
            }

            heading = true;
            n++;
            perfmon_cmd_line_init(&line);
            perfmon_cmd_line_add(&line, "  %-44s %s", name,
                                 perfmon_evtab_metric_formula(&m->metrics[i]));
            perfmon_cmd_line_print(&line);
        }
    }

    if (n == 0) {
        kprintf("perfmon: list: no metric matches '%s'\n",
                (filter != NULL) ? filter : "");
        return SHELL_ERR_REPORTED;
    }

    kprintf("metrics: perfmon stat -M NAME[,NAME] counts a metric's events "
            "as one group\n");
    return 0;
}

/* `perfmon list --model ID [FILTER]`: another model's table. */
static int
perfmon_list_other_model(int argc, char **argv)
{
    const struct perfmon_evtab_model *m;
    const char *filter = (argc > 4) ? argv[4] : NULL;

    if (argc < 4 || argc > 5) {
        return perfmon_cmd_error("list", perfmon_list_usage, "--model takes "
                                 "a model and one filter at most");
    }

    m = perfmon_evtab_find_id(argv[3]);

    if (m == NULL) {
        return perfmon_cmd_error("list", perfmon_list_usage, "no event list "
                                 "for '%s' (a CPUID such as "
                                 "GenuineIntel-6-55-4 or AuthenticAMD-25-1, "
                                 "or a table name such as skylakex)",
                                 argv[3]);
    }

    if (perfmon_list_model(m, filter, "shown without its hardware") == 0) {
        kprintf("perfmon: list: no %s event matches '%s'\n", m->name,
                filter);
        return SHELL_ERR_REPORTED;
    }

    return 0;
}

/*
 * `perfmon list [FILTER]`: every event of every device, or those whose
 * name, alias or description contains FILTER (perf list's filter), then
 * the boot CPU model's own events (name or topic, case aside).
 */
const char perfmon_list_usage[] =
    "usage: perfmon list [-j] [FILTER] | --model "
    "VENDOR-FAMILY-MODEL[-STEPPING] [FILTER] | metrics [FILTER]\n"
    "  FILTER     events whose name, alias, description or topic contains "
    "it\n"
    "  -j         as JSON: an array of the devices' and the model's events, "
    "one a line\n"
    "  --model    another CPU model's events, without its hardware "
    "(GenuineIntel-6-55-4,\n"
    "             AuthenticAMD-25-1, or a table name such as skylakex)\n"
    "  metrics    the metrics 'perfmon stat -M' counts, with their "
    "formulas\n";

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

int
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

static int perfmon_list_json(const char *filter);

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
    const struct perfmon_evtab_model *model = perfmon_evtab_host();
    const char *filter;
    unsigned int n = 0;
    char aliases[64];
    int index;

    if (argc > 2 && strcmp(argv[2], "--model") == 0) {
        return perfmon_list_other_model(argc, argv);
    }

    if (argc > 2 && strcmp(argv[2], "metrics") == 0) {
        return perfmon_list_metrics(argc, argv);
    }

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

    if (model != NULL) {
        n += perfmon_list_model(model, filter, perfmon_list_model_why(model));
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

/* ---- -j ----------------------------------------------------------------- */

/*
 * An event of `perfmon list -j`: each generic event each device counts,
 * each device event, the generic events no device counts (Unit "",
 * Status "not available"), and the CPU model's events (their topic,
 * counters and notes as `perfmon list` shows them; empty for the
 * others).
 */
struct perfmon_list_json_item {
    const char *dev;
    const char *name;
    char aliases[64];
    char encoding[64];
    unsigned int modes;
    const char *desc;
    const char *status;
    char topic[64];
    char counters[32];
    char notes[96];
};

/*
 * One event, in the field names of perf list's JSON (Unit: the device;
 * Topic, EventName, EventAlias, Encoding, BriefDescription), plus the
 * modes it tells apart, a model event's counters and notes, and why it
 * cannot count now (Status); last says whether a comma follows.
 */
static void
perfmon_list_json_event(const struct perfmon_list_json_item *item,
                        bool last)
{
    struct perfmon_cmd_line line;

    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "{\"Unit\" : ");
    perfmon_json_add_string(&line, item->dev);

    if (item->topic[0] != '\0') {
        perfmon_cmd_line_add(&line, ", \"Topic\" : ");
        perfmon_json_add_string(&line, item->topic);
    }

    perfmon_cmd_line_add(&line, ", \"EventName\" : ");
    perfmon_json_add_string(&line, item->name);
    perfmon_cmd_line_add(&line, ", \"EventAlias\" : ");
    perfmon_json_add_string(&line, item->aliases);
    perfmon_cmd_line_add(&line, ", \"Encoding\" : ");
    perfmon_json_add_string(&line, item->encoding);
    perfmon_cmd_line_add(&line, ", \"Modes\" : \"%s\", "
                         "\"BriefDescription\" : ",
                         perfmon_list_modes(item->modes));
    perfmon_json_add_string(&line, item->desc);

    if (item->counters[0] != '\0') {
        perfmon_cmd_line_add(&line, ", \"Counters\" : ");
        perfmon_json_add_string(&line, item->counters);
        perfmon_cmd_line_add(&line, ", \"Notes\" : ");
        perfmon_json_add_string(&line, (item->notes[0] == ' ')
                                       ? &item->notes[1] : item->notes);
    }

    if (item->status != NULL) {
        perfmon_cmd_line_add(&line, ", \"Status\" : ");
        perfmon_json_add_string(&line, item->status);
    }

    perfmon_cmd_line_add(&line, "}%s", last ? "" : ",");
    perfmon_cmd_line_print(&line);
}

/*
 * The array is printed in one pass that holds back each object until the
 * next is known, so that the last has no comma.
 */
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
        perfmon_list_json_event(&out->held, item == NULL);
    }

    out->holding = (item != NULL);

    if (item != NULL) {
        out->held = *item;
        out->n++;
    }
}

/* The model's events that match filter (name or topic, case aside). */
static void
perfmon_list_json_model(const struct perfmon_evtab_model *m,
                        const char *filter, struct perfmon_list_json_out *out)
{
    struct perfmon_list_json_item item = {
        .dev = perfmon_list_model_driver(m), .aliases = "",
        .modes = PERFMON_EF_MODE, .desc = m->name,
        .status = (perfmon_list_model_why(m) != NULL)
                  ? "not supported: no hardware PMU" : NULL,
    };

    for (unsigned int i = 0; i < m->nr_events; i++) {
        const struct perfmon_evtab_event *ev = perfmon_evtab_event(m, i);

        item.name = perfmon_evtab_name(ev);
        perfmon_evtab_topic(ev, item.topic, sizeof(item.topic));

        if (filter != NULL && !perfmon_list_contains(item.name, filter)
            && !perfmon_list_contains(item.topic, filter)) {
            continue;
        }

        perfmon_evtab_format(ev, item.encoding, sizeof(item.encoding));
        perfmon_evtab_format_counters(ev, item.counters,
                                      sizeof(item.counters));
        perfmon_list_model_notes(ev, item.notes, sizeof(item.notes));
        perfmon_list_json_emit(out, &item);
    }
}

static int
perfmon_list_json(const char *filter)
{
    bool counted[PERFMON_NR_EVENTS] = { false };
    struct perfmon_list_json_out out = { .holding = false, .n = 0 };
    struct perfmon_list_json_item item = { .topic = "", .counters = "" };

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

    if (perfmon_evtab_host() != NULL) {
        perfmon_list_json_model(perfmon_evtab_host(), filter, &out);
    }

    perfmon_list_json_emit(&out, NULL);
    kprintf("]\n");

    if (filter != NULL && out.n == 0) {
        kprintf("perfmon: list: no event matches '%s'\n", filter);
        return SHELL_ERR_REPORTED;
    }

    return 0;
}
