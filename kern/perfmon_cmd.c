/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The `perfmon` shell command, modelled on Linux `perf stat`: `perfmon
 * list` shows every event of every device, `perfmon info` the devices and
 * the counters in use, and `perfmon stat` runs a shell command in a new
 * thread and prints what it counted, per thread (following it across CPUs)
 * or per CPU (-a, -C), summed or per CPU (-A), once or repeated (-r), in
 * perf's default or CSV-like (-x) format.  Everything a run creates (the
 * thread, the events and their counters) is released before the command
 * returns, whatever happened.  Parsing and number formatting live in
 * kern/perfmon_parse.c.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/pmu.h"
#include "arch/x86/tsc.h"
#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_bench.h"
#include "kern/perfmon_parse.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/string.h"
#include "kern/thread.h"

#define PERFMON_CMD_MAX_RUNS    100
#define PERFMON_CMD_SEP_MAX     8       /* -x separator, characters */
#define PERFMON_CMD_LINE_SIZE   256
#define PERFMON_CMD_MAX_CANDS   128     /* names offered as suggestions */

/* What became of an event on the first run that tried it. */
#define PERFMON_CMD_EV_OK               0
#define PERFMON_CMD_EV_NOT_SUPPORTED    1   /* no device counts it */
#define PERFMON_CMD_EV_NOT_COUNTED      2   /* no free counter */

static const char perfmon_cmd_stat_usage[] =
    "usage: perfmon stat [-e EVENTS] [-a | -C CPUS] [-A] [-r N] [-x SEP] "
    "[--] COMMAND [ARGS...]\n";

/*
 * One requested event: how to initialise it (id, flags, dev: the device
 * of a device-named raw event, else NULL to let the core choose), its
 * generic id when it has one (for the derived metrics), and its fate.
 */
struct perfmon_cmd_ev {
    struct perfmon_parse_event parsed;
    uint64_t id;
    unsigned int flags;
    struct perfmon_dev *dev;
    int generic;                        /* PERFMON_EV_*, or -1 */
    unsigned int state;
    struct perfmon_dev *full_dev;       /* NOT_COUNTED: the device */
};

/*
 * A `perfmon stat` invocation, on the heap (too big for a thread stack).
 * pevs[e * nr_slots + s] is event e on slot s (the thread, or the s-th
 * selected CPU); values[(r * nr_events + e) * nr_slots + s] its count in
 * run r.  gate and abort hand the runner thread its start signal.
 */
struct perfmon_stat {
    struct perfmon_cmd_ev evs[PERFMON_PARSE_MAX_EVENTS];
    unsigned int nr_events;
    bool cpu_mode;                      /* -a or -C */
    bool all_cpus;                      /* -a */
    bool per_cpu;                       /* -A */
    const char *cpu_list;               /* -C argument */
    unsigned int cpus[PERFMON_PARSE_MAX_CPUS];
    unsigned int nr_slots;
    unsigned int repeat;
    char sep[PERFMON_CMD_SEP_MAX + 1];  /* empty: human-readable output */
    int cmd_argc;
    char **cmd_argv;

    struct perfmon_event *pevs;
    size_t pevs_size;
    uint64_t *values;
    size_t values_size;
    uint64_t elapsed_ns[PERFMON_CMD_MAX_RUNS];
    unsigned int runs_done;

    struct thread *runner;
    bool gate;                          /* atomic */
    int cmd_result;
};

/* ---- lines -------------------------------------------------------------- */

/* A line built in pieces, printed at once so that lines do not interleave. */
struct perfmon_cmd_line {
    char buf[PERFMON_CMD_LINE_SIZE];
    size_t len;
};

static void
perfmon_cmd_line_init(struct perfmon_cmd_line *line)
{
    line->buf[0] = '\0';
    line->len = 0;
}

static void __format_printf(2, 3)
perfmon_cmd_line_add(struct perfmon_cmd_line *line, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (line->len >= sizeof(line->buf) - 1) {
        return;
    }

    va_start(ap, fmt);
    n = kvsnprintf(&line->buf[line->len], sizeof(line->buf) - line->len, fmt,
                   ap);
    va_end(ap);

    if (n > 0) {
        line->len = MIN(line->len + (size_t)n, sizeof(line->buf) - 1);
    }
}

static void
perfmon_cmd_line_print(struct perfmon_cmd_line *line)
{
    /* perf pads its columns: trailing blanks help nobody. */
    while ((line->len > 0) && (line->buf[line->len - 1] == ' ')) {
        line->buf[--line->len] = '\0';
    }

    kprintf("%s\n", line->buf);
    perfmon_cmd_line_init(line);
}

/* ---- devices and names -------------------------------------------------- */

static int
perfmon_cmd_translate(const struct perfmon_dev *dev, unsigned int id,
                      uint64_t *rawp)
{
    return perfmon_dev_translate(dev, id, rawp);
}

/* The device that would count name (generic or device event), or NULL. */
static struct perfmon_dev *
perfmon_cmd_dev_for(const char *name)
{
    for (unsigned int i = 0; i < perfmon_nr_devs(); i++) {
        struct perfmon_dev *dev = perfmon_dev_get(i);
        unsigned int flags;
        uint64_t id;

        if (perfmon_lookup_event(dev, name, &id, &flags) == 0) {
            return dev;
        }
    }

    return NULL;
}

/* An alias is shown only if the core agrees that it names the same event. */
static bool
perfmon_cmd_name_valid(const struct perfmon_parse_name *name)
{
    unsigned int flags;
    uint64_t id;

    return (perfmon_lookup_event(NULL, name->name, &id, &flags) == 0)
           && (id == name->id);
}

static void
perfmon_cmd_aliases(unsigned int id, char *buf, size_t size)
{
    size_t len = 0;

    buf[0] = '\0';

    for (unsigned int i = 0; i < perfmon_parse_nr_names(); i++) {
        const struct perfmon_parse_name *name = perfmon_parse_name_get(i);

        if (!name->alias || (name->id != id)
            || !perfmon_cmd_name_valid(name)) {
            continue;
        }

        len += (size_t)ksnprintf(&buf[MIN(len, size - 1)],
                                 size - MIN(len, size - 1), "%s%s",
                                 (len == 0) ? "" : ",", name->name);
    }
}

static const struct perfmon_parse_name *
perfmon_cmd_canonical(unsigned int id)
{
    for (unsigned int i = 0; i < perfmon_parse_nr_names(); i++) {
        const struct perfmon_parse_name *name = perfmon_parse_name_get(i);

        if (!name->alias && (name->id == id)) {
            return name;
        }
    }

    return NULL;
}

/* The name of a raw code on a device, for `perfmon info`, or NULL. */
static const char *
perfmon_cmd_raw_name(const struct perfmon_dev *dev, uint64_t raw)
{
    for (unsigned int i = 0; i < dev->nr_events; i++) {
        if (dev->events[i].raw_event == raw) {
            return dev->events[i].name;
        }
    }

    for (unsigned int id = 0; id < PERFMON_NR_EVENTS; id++) {
        uint64_t code;

        if ((perfmon_cmd_translate(dev, id, &code) == 0) && (code == raw)) {
            return perfmon_event_name(id);
        }
    }

    return NULL;
}

static const char *
perfmon_cmd_hw_reason(char *buf, size_t size)
{
    const struct pmu_caps *caps = pmu_get_caps();

    if (caps->present) {
        return "the hardware PMU cannot count it";
    }

    if (caps->reason == NULL) {
        return "no hardware PMU";
    }

    ksnprintf(buf, size, "no hardware PMU (%s)", caps->reason);
    return buf;
}

/* ---- perfmon list ------------------------------------------------------- */

static void
perfmon_cmd_list_event(const char *name, const char *aliases, uint64_t raw,
                       bool has_raw, const char *desc, const char *status)
{
    struct perfmon_cmd_line line;
    char raw_buf[24] = "";

    if (has_raw) {
        ksnprintf(raw_buf, sizeof(raw_buf), "r%llx", (unsigned long long)raw);
    }

    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "  %-20s %-22s %-8s %s%s%s", name, aliases,
                         raw_buf, (desc != NULL) ? desc : "",
                         (status != NULL) ? "  " : "",
                         (status != NULL) ? status : "");
    perfmon_cmd_line_print(&line);
}

static int
perfmon_cmd_list(void)
{
    bool counted[PERFMON_NR_EVENTS] = { false };
    bool any_missing = false;
    char aliases[64], reason[96];

    for (unsigned int d = 0; d < perfmon_nr_devs(); d++) {
        struct perfmon_dev *dev = perfmon_dev_get(d);
        struct perfmon_dev_info info;

        perfmon_dev_get_info(dev, &info);
        kprintf("%s: %u counters, %u bits\n", dev->name, info.nr_pmcs,
                info.width);
        kprintf("  %-20s %-22s %-8s %s\n", "event", "aliases", "raw",
                "description");

        for (unsigned int id = 0; id < PERFMON_NR_EVENTS; id++) {
            const struct perfmon_parse_name *name = perfmon_cmd_canonical(id);
            uint64_t raw;

            if ((name == NULL) || !perfmon_cmd_name_valid(name)
                || (perfmon_cmd_translate(dev, id, &raw) != 0)) {
                continue;
            }

            counted[id] = true;
            perfmon_cmd_aliases(id, aliases, sizeof(aliases));
            perfmon_cmd_list_event(name->name, aliases, raw, true, name->desc,
                                   NULL);
        }

        for (unsigned int i = 0; i < dev->nr_events; i++) {
            perfmon_cmd_list_event(dev->events[i].name, "",
                                   dev->events[i].raw_event, true,
                                   "device event", NULL);
        }
    }

    for (unsigned int id = 0; id < PERFMON_NR_EVENTS; id++) {
        const struct perfmon_parse_name *name = perfmon_cmd_canonical(id);

        if ((name == NULL) || counted[id] || !perfmon_cmd_name_valid(name)) {
            continue;
        }

        if (!any_missing) {
            kprintf("hardware events: <not available>: %s\n",
                    perfmon_cmd_hw_reason(reason, sizeof(reason)));
            any_missing = true;
        }

        perfmon_cmd_aliases(id, aliases, sizeof(aliases));
        perfmon_cmd_list_event(name->name, aliases, 0, false, name->desc,
                               "<not available>");
    }

    kprintf("raw events: rHEX names a raw code of the first device (%s); "
            "modifiers :u :k (default both)\n",
            (perfmon_nr_devs() > 0) ? perfmon_dev_get(0)->name : "none");
    return 0;
}

/* ---- perfmon info ------------------------------------------------------- */

/* A counter in use, copied out of the perfmon_pmc_foreach() callback. */
struct perfmon_cmd_pmc {
    struct perfmon_pmc_info info;
    unsigned int thread_ids[PERFMON_PMC_INFO_MAX_USERS];
    char thread_names[PERFMON_PMC_INFO_MAX_USERS][THREAD_NAME_SIZE];
};

struct perfmon_cmd_pmcs {
    struct perfmon_cmd_pmc *pmcs;
    unsigned int nr;
    unsigned int max;
    unsigned int dropped;
};

/* Called with the core's allocator lock held: copy, nothing else. */
static void
perfmon_cmd_pmc_collect(const struct perfmon_pmc_info *info, void *arg)
{
    struct perfmon_cmd_pmcs *pmcs = arg;
    struct perfmon_cmd_pmc *pmc;

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

static void
perfmon_cmd_info_hw(void)
{
    const struct pmu_caps *caps = pmu_get_caps();

    kprintf("cpu: %s family %#x model %#x\n", cpu_info.vendor_str,
            caps->family, caps->model);

    if (!caps->present) {
        kprintf("hardware PMU: none (%s)\n",
                (caps->reason != NULL) ? caps->reason : "unknown reason");
        return;
    }

    kprintf("hardware PMU: driver %s, version %u, %u general-purpose "
            "counters x %u bits, %u fixed x %u bits, overflow %s\n",
            caps->driver, caps->version, caps->nr_gp, caps->gp_width,
            caps->nr_fixed, caps->fixed_width,
            caps->overflow_nmi ? "NMI" : "polled");
}

static void
perfmon_cmd_info_pmc(const struct perfmon_cmd_pmc *pmc)
{
    const struct perfmon_pmc_info *info = &pmc->info;
    const char *name = perfmon_cmd_raw_name(info->dev, info->raw_event);
    struct perfmon_cmd_line line;

    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "  %s counter %u (hw %u): r%llx %s:%s%s, "
                         "%u user%s:", info->dev->name, info->index,
                         info->hw_id, (unsigned long long)info->raw_event,
                         (name != NULL) ? name : "",
                         (info->flags & PERFMON_EF_USER) ? "u" : "",
                         (info->flags & PERFMON_EF_KERN) ? "k" : "",
                         info->nr_users, (info->nr_users == 1) ? "" : "s");

    for (unsigned int i = 0; i < MIN(info->nr_users,
                                     PERFMON_PMC_INFO_MAX_USERS); i++) {
        if (info->users[i].thread != NULL) {
            perfmon_cmd_line_add(&line, " thread %u (%s)", pmc->thread_ids[i],
                                 pmc->thread_names[i]);
        } else {
            perfmon_cmd_line_add(&line, " cpu %u", info->users[i].cpu);
        }
    }

    if (info->nr_users > PERFMON_PMC_INFO_MAX_USERS) {
        perfmon_cmd_line_add(&line, " ...");
    }

    perfmon_cmd_line_print(&line);
}

static int
perfmon_cmd_info(void)
{
    struct perfmon_cmd_pmcs pmcs = { .max = PERFMON_MAX_PMCS };
    size_t size = sizeof(*pmcs.pmcs) * PERFMON_MAX_PMCS;

    perfmon_cmd_info_hw();

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
                "%u of %u\n", info.name, info.nr_pmcs, info.width, overflow,
                info.nr_pmcs_used, info.nr_pmcs);
    }

    if (perfmon_nr_devs() == 0) {
        kprintf("no perfmon device registered\n");
    }

    pmcs.pmcs = kmem_alloc(size);

    if (pmcs.pmcs == NULL) {
        kprintf("perfmon: info: out of memory\n");
        return SHELL_ERR_REPORTED;
    }

    perfmon_pmc_foreach(perfmon_cmd_pmc_collect, &pmcs);

    if (pmcs.nr == 0) {
        kprintf("counters in use: none\n");
    } else {
        kprintf("counters in use: %u\n", pmcs.nr + pmcs.dropped);

        for (unsigned int i = 0; i < pmcs.nr; i++) {
            perfmon_cmd_info_pmc(&pmcs.pmcs[i]);
        }
    }

    kmem_free(pmcs.pmcs, size);
    return 0;
}

/* ---- perfmon stat: options ---------------------------------------------- */

/* One line saying what is wrong, then the usage. */
static int __format_printf(1, 2)
perfmon_stat_error(const char *fmt, ...)
{
    struct perfmon_cmd_line line;
    va_list ap;

    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "perfmon: stat: ");
    va_start(ap, fmt);
    kvsnprintf(&line.buf[line.len], sizeof(line.buf) - line.len, fmt, ap);
    va_end(ap);
    line.len = strlen(line.buf);
    perfmon_cmd_line_print(&line);
    kprintf("%s", perfmon_cmd_stat_usage);
    return SHELL_ERR_REPORTED;
}

static int
perfmon_stat_unknown_event(const char *name)
{
    const char *cands[PERFMON_CMD_MAX_CANDS], *out[3];
    struct perfmon_cmd_line line;
    unsigned int nr = 0, nr_out;

    for (unsigned int i = 0; i < perfmon_parse_nr_names(); i++) {
        const struct perfmon_parse_name *n = perfmon_parse_name_get(i);

        if ((nr < ARRAY_SIZE(cands)) && perfmon_cmd_name_valid(n)) {
            cands[nr++] = n->name;
        }
    }

    for (unsigned int d = 0; d < perfmon_nr_devs(); d++) {
        const struct perfmon_dev *dev = perfmon_dev_get(d);

        for (unsigned int i = 0; (i < dev->nr_events)
                                 && (nr < ARRAY_SIZE(cands)); i++) {
            cands[nr++] = dev->events[i].name;
        }
    }

    nr_out = perfmon_parse_suggest(name, cands, nr, out, ARRAY_SIZE(out));
    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "perfmon: stat: unknown event '%s'", name);

    for (unsigned int i = 0; i < nr_out; i++) {
        perfmon_cmd_line_add(&line, "%s'%s'",
                             (i == 0) ? "; did you mean "
                             : (i + 1 == nr_out) ? " or " : ", ", out[i]);
    }

    perfmon_cmd_line_add(&line, "%s (see 'perfmon list')",
                         (nr_out > 0) ? "?" : "");
    perfmon_cmd_line_print(&line);
    return SHELL_ERR_REPORTED;
}

/* Find how to count a parsed event; print why not for an unknown name. */
static int
perfmon_stat_resolve(struct perfmon_cmd_ev *ev)
{
    unsigned int flags;
    uint64_t id;

    ev->dev = NULL;
    ev->generic = -1;
    ev->state = PERFMON_CMD_EV_OK;
    ev->full_dev = NULL;

    if (ev->parsed.flags & PERFMON_EF_RAW) {
        ev->id = ev->parsed.raw_code;
        ev->flags = ev->parsed.flags;
        return 0;
    }

    for (unsigned int d = 0; d < perfmon_nr_devs(); d++) {
        struct perfmon_dev *dev = perfmon_dev_get(d);

        if (perfmon_lookup_event(dev, ev->parsed.name, &id, &flags) != 0) {
            continue;
        }

        ev->id = id;
        ev->flags = (ev->parsed.flags & PERFMON_EF_MODE) | flags;

        if (flags & PERFMON_EF_RAW) {
            ev->dev = dev;
        } else {
            ev->generic = (int)id;
        }

        return 0;
    }

    if (perfmon_lookup_event(NULL, ev->parsed.name, &id, &flags) == 0) {
        /* A known event that no device here can count. */
        ev->id = id;
        ev->flags = ev->parsed.flags & PERFMON_EF_MODE;
        ev->generic = (int)id;
        ev->state = PERFMON_CMD_EV_NOT_SUPPORTED;
        return 0;
    }

    return perfmon_stat_unknown_event(ev->parsed.name);
}

static int
perfmon_stat_add_events(struct perfmon_stat *stat, const char *list)
{
    struct perfmon_parse_event parsed[PERFMON_PARSE_MAX_EVENTS];
    struct perfmon_parse_error err;
    unsigned int first = stat->nr_events;
    int nr;

    nr = perfmon_parse_events(list, parsed, PERFMON_PARSE_MAX_EVENTS - first,
                              &err);

    if (nr < 0) {
        kprintf("perfmon: stat: bad event list: %s%s%s%s\n%s", err.reason,
                (err.item[0] != '\0') ? " ('" : "", err.item,
                (err.item[0] != '\0') ? "')" : "", perfmon_cmd_stat_usage);
        return SHELL_ERR_REPORTED;
    }

    for (unsigned int i = 0; i < (unsigned int)nr; i++) {
        struct perfmon_cmd_ev *ev = &stat->evs[first + i];
        int error;

        memset(ev, 0, sizeof(*ev));
        ev->parsed = parsed[i];
        error = perfmon_stat_resolve(ev);

        if (error) {
            return error;
        }
    }

    stat->nr_events += (unsigned int)nr;
    return 0;
}

static int
perfmon_stat_default_events(struct perfmon_stat *stat)
{
    static const char *const hw_events[] = {
        "cycles", "instructions", "branches", "branch-misses",
    };
    char list[PERFMON_PARSE_LIST_MAX + 1];
    size_t len;

    /* perf shows cpu-clock for CPUs, task-clock for a task. */
    len = strlcpy(list, stat->cpu_mode ? "cpu-clock" : "task-clock",
                  sizeof(list));
    len += strlcpy(&list[len], ",context-switches,cpu-migrations",
                   sizeof(list) - len);

    for (size_t i = 0; i < ARRAY_SIZE(hw_events); i++) {
        if (perfmon_cmd_dev_for(hw_events[i]) != NULL) {
            len += (size_t)ksnprintf(&list[len], sizeof(list) - len, ",%s",
                                     hw_events[i]);
        }
    }

    return perfmon_stat_add_events(stat, list);
}

/* The value of an option: the rest of its word, or the next word. */
static const char *
perfmon_stat_optarg(int argc, char **argv, int *ip, const char *rest)
{
    if (*rest != '\0') {
        return rest;
    }

    if (*ip + 1 >= argc) {
        return NULL;
    }

    (*ip)++;
    return argv[*ip];
}

static int
perfmon_stat_option(struct perfmon_stat *stat, int argc, char **argv, int *ip)
{
    const char *word = argv[*ip];
    char opt_buf[3] = "-?";

    for (const char *p = word + 1; *p != '\0'; p++) {
        const char *val;
        uint64_t n;
        int error;

        opt_buf[1] = *p;

        switch (*p) {
        case 'a':
            stat->all_cpus = true;
            continue;
        case 'A':
            stat->per_cpu = true;
            continue;
        case 'e':
        case 'C':
        case 'r':
        case 'x':
            break;
        default:
            return perfmon_stat_error("unknown option '%s'", opt_buf);
        }

        val = perfmon_stat_optarg(argc, argv, ip, p + 1);

        if (val == NULL) {
            return perfmon_stat_error("option %s needs an argument",
                                      opt_buf);
        }

        switch (*p) {
        case 'e':
            error = perfmon_stat_add_events(stat, val);

            if (error) {
                return error;
            }

            break;
        case 'C':
            stat->cpu_list = val;
            break;
        case 'r':
            if ((cmdline_parse_u64(val, &n) != 0) || (n < 1)
                || (n > PERFMON_CMD_MAX_RUNS)) {
                return perfmon_stat_error("-r: '%s' is not a number from 1 "
                                          "to " STRINGIFY(PERFMON_CMD_MAX_RUNS),
                                          val);
            }

            stat->repeat = (unsigned int)n;
            break;
        case 'x':
            if ((*val == '\0') || (strlen(val) > PERFMON_CMD_SEP_MAX)) {
                return perfmon_stat_error("-x: the separator '%s' must have "
                                          "1 to " STRINGIFY(PERFMON_CMD_SEP_MAX)
                                          " characters", val);
            }

            strlcpy(stat->sep, val, sizeof(stat->sep));
            break;
        }

        /* The value took the rest of the word. */
        return 0;
    }

    return 0;
}

static int
perfmon_stat_select_cpus(struct perfmon_stat *stat)
{
    unsigned int nr_cpus = cpu_count();
    uint64_t mask;
    int error;

    if (stat->all_cpus && (stat->cpu_list != NULL)) {
        return perfmon_stat_error("-a and -C %s exclude each other",
                                  stat->cpu_list);
    }

    stat->cpu_mode = stat->all_cpus || (stat->cpu_list != NULL);

    if (stat->per_cpu && !stat->cpu_mode) {
        return perfmon_stat_error("-A needs -a or -C");
    }

    if (!stat->cpu_mode) {
        stat->nr_slots = 1;
        return 0;
    }

    if (stat->all_cpus) {
        mask = (nr_cpus >= 64) ? UINT64_MAX : (1ULL << nr_cpus) - 1;
    } else {
        error = perfmon_parse_cpulist(stat->cpu_list, nr_cpus, &mask);

        if (error == -ERANGE) {
            kprintf("perfmon: stat: -C %s: this machine has CPUs 0 to %u\n%s",
                    stat->cpu_list, nr_cpus - 1, perfmon_cmd_stat_usage);
            return SHELL_ERR_REPORTED;
        } else if (error) {
            return perfmon_stat_error("-C %s: bad CPU list (expected e.g. "
                                      "0,2-3)", stat->cpu_list);
        }
    }

    stat->nr_slots = 0;

    for (unsigned int cpu = 0; cpu < PERFMON_PARSE_MAX_CPUS; cpu++) {
        if (mask & (1ULL << cpu)) {
            stat->cpus[stat->nr_slots++] = cpu;
        }
    }

    return 0;
}

static int
perfmon_stat_parse(struct perfmon_stat *stat, int argc, char **argv)
{
    int i, error;

    stat->repeat = 1;

    for (i = 2; i < argc; i++) {
        const char *word = argv[i];

        if (strcmp(word, "--") == 0) {
            i++;
            break;
        }

        if ((word[0] != '-') || (word[1] == '\0')) {
            break;
        }

        error = perfmon_stat_option(stat, argc, argv, &i);

        if (error) {
            return error;
        }
    }

    if (i >= argc) {
        return perfmon_stat_error("missing command");
    }

    if (shell_cmd_lookup(argv[i]) == NULL) {
        return perfmon_stat_error("unknown command '%s' (type 'help')",
                                  argv[i]);
    }

    stat->cmd_argc = argc - i;
    stat->cmd_argv = &argv[i];

    error = perfmon_stat_select_cpus(stat);

    if (error) {
        return error;
    }

    if (stat->nr_events == 0) {
        error = perfmon_stat_default_events(stat);
    }

    return error;
}

/* ---- perfmon stat: counting --------------------------------------------- */

static struct perfmon_event *
perfmon_stat_pev(struct perfmon_stat *stat, unsigned int ev, unsigned int slot)
{
    return &stat->pevs[ev * stat->nr_slots + slot];
}

static uint64_t *
perfmon_stat_value(struct perfmon_stat *stat, unsigned int run,
                   unsigned int ev, unsigned int slot)
{
    return &stat->values[((size_t)run * stat->nr_events + ev) * stat->nr_slots
                         + slot];
}

static void
perfmon_stat_runner(void *arg)
{
    struct perfmon_stat *stat = arg;

    /*
     * The start gate: sleep until the events are attached, so that the
     * command is counted from its first instruction and nothing before.
     */
    for (;;) {
        thread_sleep_prepare();

        if (__atomic_load_n(&stat->gate, __ATOMIC_ACQUIRE)) {
            thread_sleep_cancel();
            break;
        }

        thread_sleep();
    }

    stat->cmd_result = shell_exec_argv(stat->cmd_argc, stat->cmd_argv);
}

static void
perfmon_stat_detach_event(struct perfmon_stat *stat, unsigned int ev)
{
    for (unsigned int s = 0; s < stat->nr_slots; s++) {
        struct perfmon_event *pev = perfmon_stat_pev(stat, ev, s);

        if (perfmon_event_attached(pev)) {
            perfmon_event_detach(pev);
        }
    }
}

/*
 * Attach event ev to every slot, or to none: an event counted on some of
 * its CPUs only would print a misleading sum.
 */
static void
perfmon_stat_attach_event(struct perfmon_stat *stat, unsigned int ev)
{
    struct perfmon_cmd_ev *cev = &stat->evs[ev];
    int error = 0;

    if (cev->state != PERFMON_CMD_EV_OK) {
        return;
    }

    for (unsigned int s = 0; (s < stat->nr_slots) && (error == 0); s++) {
        struct perfmon_event *pev = perfmon_stat_pev(stat, ev, s);

        error = perfmon_event_init(pev, cev->id, cev->flags);

        if ((error == 0) && (cev->dev != NULL)) {
            error = perfmon_event_set_dev(pev, cev->dev);
        }

        if (error == 0) {
            error = stat->cpu_mode
                    ? perfmon_event_attach_cpu(pev, stat->cpus[s])
                    : perfmon_event_attach(pev, stat->runner);
        }
    }

    if (error == 0) {
        return;
    }

    perfmon_stat_detach_event(stat, ev);

    if (error == -EAGAIN) {
        cev->state = PERFMON_CMD_EV_NOT_COUNTED;
        cev->full_dev = (cev->dev != NULL) ? cev->dev
                        : (cev->flags & PERFMON_EF_RAW) ? perfmon_dev_get(0)
                        : perfmon_cmd_dev_for(cev->parsed.name);
    } else {
        cev->state = PERFMON_CMD_EV_NOT_SUPPORTED;
    }
}

/* One run: thread, events, gate, wait, counts, and everything released. */
static int
perfmon_stat_run(struct perfmon_stat *stat, unsigned int run)
{
    uint64_t start;
    int error;

    __atomic_store_n(&stat->gate, false, __ATOMIC_RELAXED);
    error = thread_create(&stat->runner, "perfmon-stat", perfmon_stat_runner,
                          stat, THREAD_CPUMASK_ALL);

    if (error) {
        kprintf("perfmon: stat: cannot create a thread: %s\n",
                error_str(error));
        return SHELL_ERR_REPORTED;
    }

    for (unsigned int e = 0; e < stat->nr_events; e++) {
        perfmon_stat_attach_event(stat, e);
    }

    start = cpu_rdtsc();
    __atomic_store_n(&stat->gate, true, __ATOMIC_RELEASE);
    thread_wakeup(stat->runner);
    thread_join(stat->runner);
    stat->runner = NULL;
    stat->elapsed_ns[run] = tsc_cycles_to_ns(cpu_rdtsc() - start);

    /* Stop every counter first, then read the final counts. */
    for (unsigned int e = 0; e < stat->nr_events; e++) {
        perfmon_stat_detach_event(stat, e);
    }

    for (unsigned int e = 0; e < stat->nr_events; e++) {
        for (unsigned int s = 0; s < stat->nr_slots; s++) {
            *perfmon_stat_value(stat, run, e, s)
                = (stat->evs[e].state == PERFMON_CMD_EV_OK)
                  ? perfmon_event_read(perfmon_stat_pev(stat, e, s)) : 0;
        }
    }

    stat->runs_done = run + 1;
    return 0;
}

/* ---- perfmon stat: output ----------------------------------------------- */

/* Means (and relative deviations) of every event on one output row. */
struct perfmon_stat_row {
    int slot;                           /* -1: the sum over the slots */
    uint64_t mean[PERFMON_PARSE_MAX_EVENTS];
    uint64_t rsd[PERFMON_PARSE_MAX_EVENTS];
    uint64_t elapsed_ns;
};

static void
perfmon_stat_row_compute(struct perfmon_stat *stat,
                         struct perfmon_stat_row *row, int slot,
                         uint64_t *scratch)
{
    uint64_t rsd;

    row->slot = slot;

    for (unsigned int e = 0; e < stat->nr_events; e++) {
        for (unsigned int r = 0; r < stat->runs_done; r++) {
            uint64_t v = 0;

            for (unsigned int s = 0; s < stat->nr_slots; s++) {
                if ((slot < 0) || ((unsigned int)slot == s)) {
                    v += *perfmon_stat_value(stat, r, e, s);
                }
            }

            scratch[r] = v;
        }

        perfmon_stats(scratch, stat->runs_done, &row->mean[e], &row->rsd[e]);
    }

    perfmon_stats(stat->elapsed_ns, stat->runs_done, &row->elapsed_ns, &rsd);
}

/* The first counted event of generic id, or -1. */
static int
perfmon_stat_find(const struct perfmon_stat *stat, unsigned int id)
{
    for (unsigned int e = 0; e < stat->nr_events; e++) {
        if ((stat->evs[e].generic == (int)id)
            && (stat->evs[e].state == PERFMON_CMD_EV_OK)) {
            return (int)e;
        }
    }

    return -1;
}

/*
 * A derived metric: value (text) and unit, as perf shows after '#'.
 * Empty value when there is none.
 */
struct perfmon_stat_metric {
    char value[40];
    const char *unit;
};

static void
perfmon_stat_rate(struct perfmon_stat_metric *m, uint64_t count,
                  uint64_t time_ns, bool group)
{
    /* Events per second, times 1000 for three decimals. */
    uint64_t rate = perfmon_muldiv(count, 1000000000000ULL, time_ns);

    if (rate >= 1000000000ULL) {
        perfmon_fmt_ratio(m->value, sizeof(m->value), rate, 1000000000ULL, 3,
                          group);
        m->unit = "M/sec";
    } else if (rate >= 1000000ULL) {
        perfmon_fmt_ratio(m->value, sizeof(m->value), rate, 1000000ULL, 3,
                          group);
        m->unit = "K/sec";
    } else {
        perfmon_fmt_ratio(m->value, sizeof(m->value), rate, 1000, 3, group);
        m->unit = "/sec";
    }
}

static void
perfmon_stat_percent(struct perfmon_stat_metric *m, uint64_t part,
                     uint64_t whole, const char *unit, bool group)
{
    perfmon_fmt_ratio(m->value, sizeof(m->value),
                      perfmon_muldiv(part, 10000, whole), 100, 2, group);
    m->unit = unit;
}

static void
perfmon_stat_metric(struct perfmon_stat *stat,
                    const struct perfmon_stat_row *row, unsigned int e,
                    struct perfmon_stat_metric *m)
{
    int clock = perfmon_stat_find(stat, PERFMON_EV_TASK_CLOCK);
    int cycles = perfmon_stat_find(stat, PERFMON_EV_CYCLE);
    int branches = perfmon_stat_find(stat, PERFMON_EV_BRANCH);
    int refs = perfmon_stat_find(stat, PERFMON_EV_CACHE_REF);
    bool group = (stat->sep[0] == '\0');
    uint64_t v = row->mean[e], clock_ns = 0;

    m->value[0] = '\0';
    m->unit = "";

    if (clock >= 0) {
        clock_ns = tsc_cycles_to_ns(row->mean[clock]);
    }

    switch (stat->evs[e].generic) {
    case PERFMON_EV_TASK_CLOCK:
        perfmon_fmt_ratio(m->value, sizeof(m->value), tsc_cycles_to_ns(v),
                          row->elapsed_ns, 3, group);
        m->unit = "CPUs utilized";
        break;
    case PERFMON_EV_CYCLE:
        if (clock_ns != 0) {
            perfmon_fmt_ratio(m->value, sizeof(m->value), v, clock_ns, 3,
                              group);
            m->unit = "GHz";
        }

        break;
    case PERFMON_EV_INSTRUCTION:
        if ((cycles >= 0) && (row->mean[cycles] != 0)) {
            perfmon_fmt_ratio(m->value, sizeof(m->value), v,
                              row->mean[cycles], 2, group);
            m->unit = "insn per cycle";
        }

        break;
    case PERFMON_EV_BRANCH_MISS:
        if ((branches >= 0) && (row->mean[branches] != 0)) {
            perfmon_stat_percent(m, v, row->mean[branches],
                                 "of all branches", group);
        }

        break;
    case PERFMON_EV_CACHE_MISS:
        if ((refs >= 0) && (row->mean[refs] != 0)) {
            perfmon_stat_percent(m, v, row->mean[refs], "of all cache refs",
                                 group);
        }

        break;
    default:
        if (clock_ns != 0) {
            perfmon_stat_rate(m, v, clock_ns, group);
        }

        break;
    }
}

/* The count column: msec for the clock, grouped counts otherwise. */
static void
perfmon_stat_fmt_value(const struct perfmon_stat *stat, unsigned int e,
                       uint64_t v, char *buf, size_t size, const char **unitp)
{
    bool group = (stat->sep[0] == '\0');

    if (stat->evs[e].generic == PERFMON_EV_TASK_CLOCK) {
        perfmon_fmt_ratio(buf, size, tsc_cycles_to_ns(v), 1000000, 2, group);
        *unitp = "msec";
    } else {
        ksnprintf(buf, size, group ? "%'llu" : "%llu", (unsigned long long)v);
        *unitp = "";
    }
}

static void
perfmon_stat_print_csv(struct perfmon_stat *stat,
                       const struct perfmon_stat_row *row, unsigned int e)
{
    const struct perfmon_cmd_ev *cev = &stat->evs[e];
    struct perfmon_stat_metric m = { .value = "", .unit = "" };
    const char *sep = stat->sep, *unit = "";
    struct perfmon_cmd_line line;
    char value[40], rsd[16];
    bool counted = (cev->state == PERFMON_CMD_EV_OK);

    perfmon_cmd_line_init(&line);

    if (row->slot >= 0) {
        perfmon_cmd_line_add(&line, "CPU%u%s", stat->cpus[row->slot], sep);
    }

    if (counted) {
        perfmon_stat_fmt_value(stat, e, row->mean[e], value, sizeof(value),
                               &unit);
        perfmon_stat_metric(stat, row, e, &m);
    } else {
        strlcpy(value, (cev->state == PERFMON_CMD_EV_NOT_SUPPORTED)
                       ? "<not supported>" : "<not counted>", sizeof(value));
    }

    perfmon_cmd_line_add(&line, "%s%s%s%s%s", value, sep, unit, sep,
                         cev->parsed.spec);

    if (stat->repeat > 1) {
        perfmon_fmt_ratio(rsd, sizeof(rsd), row->rsd[e], 100, 2, false);
        perfmon_cmd_line_add(&line, "%s%s%%", sep, counted ? rsd : "");
    }

    perfmon_cmd_line_add(&line, "%s%llu%s%s%s%s%s%s", sep,
                         counted ? (unsigned long long)row->elapsed_ns : 0ULL,
                         sep, counted ? "100.00" : "0.00", sep, m.value, sep,
                         m.unit);
    perfmon_cmd_line_print(&line);
}

static void
perfmon_stat_print_human(struct perfmon_stat *stat,
                         const struct perfmon_stat_row *row, unsigned int e)
{
    const struct perfmon_cmd_ev *cev = &stat->evs[e];
    struct perfmon_cmd_line line;
    struct perfmon_stat_metric m;
    char value[40], rsd[16];
    const char *unit;

    perfmon_cmd_line_init(&line);

    if (row->slot >= 0) {
        perfmon_cmd_line_add(&line, "CPU%-4u", stat->cpus[row->slot]);
    }

    if (cev->state == PERFMON_CMD_EV_NOT_SUPPORTED) {
        perfmon_cmd_line_add(&line, "%18s      %s", "<not supported>",
                             cev->parsed.spec);
        perfmon_cmd_line_print(&line);
        return;
    }

    if (cev->state == PERFMON_CMD_EV_NOT_COUNTED) {
        struct perfmon_dev_info info = { .nr_pmcs = 0 };

        if (cev->full_dev != NULL) {
            perfmon_dev_get_info(cev->full_dev, &info);
        }

        perfmon_cmd_line_add(&line, "%18s      %-25s (all %u counters of %s "
                             "are in use)", "<not counted>", cev->parsed.spec,
                             info.nr_pmcs,
                             (cev->full_dev != NULL) ? cev->full_dev->name
                                                     : "the device");
        perfmon_cmd_line_print(&line);
        return;
    }

    perfmon_stat_fmt_value(stat, e, row->mean[e], value, sizeof(value), &unit);
    perfmon_stat_metric(stat, row, e, &m);
    perfmon_cmd_line_add(&line, "%18s %-4s %-25s", value, unit,
                         cev->parsed.spec);

    if (m.value[0] != '\0') {
        perfmon_cmd_line_add(&line, " #  %8s %-18s", m.value, m.unit);
    } else if (stat->repeat > 1) {
        perfmon_cmd_line_add(&line, "    %8s %-18s", "", "");
    }

    if (stat->repeat > 1) {
        perfmon_fmt_ratio(rsd, sizeof(rsd), row->rsd[e], 100, 2, true);
        perfmon_cmd_line_add(&line, " ( +- %5s%% )", rsd);
    }

    perfmon_cmd_line_print(&line);
}

static void
perfmon_stat_print_header(struct perfmon_stat *stat)
{
    struct perfmon_cmd_line line;

    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, " Performance counter stats for '");

    for (int i = 0; i < stat->cmd_argc; i++) {
        perfmon_cmd_line_add(&line, "%s%s", (i == 0) ? "" : " ",
                             stat->cmd_argv[i]);
    }

    perfmon_cmd_line_add(&line, "'");

    if (stat->all_cpus) {
        perfmon_cmd_line_add(&line, " (system wide, %u CPUs)",
                             stat->nr_slots);
    } else if (stat->cpu_mode) {
        perfmon_cmd_line_add(&line, " (CPUs %s)", stat->cpu_list);
    }

    if (stat->repeat > 1) {
        perfmon_cmd_line_add(&line, " (%u runs)", stat->runs_done);
    }

    perfmon_cmd_line_add(&line, ":");
    kprintf("\n");
    perfmon_cmd_line_print(&line);
    kprintf("\n");
}

static void
perfmon_stat_print_footer(struct perfmon_stat *stat)
{
    struct perfmon_cmd_line line;
    uint64_t mean, rsd;
    char secs[40], rsd_buf[16];

    perfmon_stats(stat->elapsed_ns, stat->runs_done, &mean, &rsd);
    perfmon_fmt_ratio(secs, sizeof(secs), mean, 1000000000ULL, 9, true);
    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "%18s seconds time elapsed", secs);

    if (stat->repeat > 1) {
        perfmon_fmt_ratio(rsd_buf, sizeof(rsd_buf), rsd, 100, 2, true);
        perfmon_cmd_line_add(&line, "    ( +- %5s%% )", rsd_buf);
    }

    kprintf("\n");
    perfmon_cmd_line_print(&line);
    kprintf("\n");
}

static int
perfmon_stat_print(struct perfmon_stat *stat, bool interrupted)
{
    size_t scratch_size = sizeof(uint64_t) * PERFMON_CMD_MAX_RUNS;
    struct perfmon_stat_row *row;
    unsigned int nr_rows;
    uint64_t *scratch;
    bool csv = (stat->sep[0] != '\0');

    row = kmem_alloc(sizeof(*row));
    scratch = kmem_alloc(scratch_size);

    if ((row == NULL) || (scratch == NULL)) {
        kmem_free(row, sizeof(*row));
        kmem_free(scratch, scratch_size);
        kprintf("perfmon: stat: out of memory\n");
        return SHELL_ERR_REPORTED;
    }

    if (!csv) {
        perfmon_stat_print_header(stat);
    }

    nr_rows = stat->per_cpu ? stat->nr_slots : 1;

    for (unsigned int e = 0; e < stat->nr_events; e++) {
        for (unsigned int r = 0; r < nr_rows; r++) {
            perfmon_stat_row_compute(stat, row, stat->per_cpu ? (int)r : -1,
                                     scratch);

            if (csv) {
                perfmon_stat_print_csv(stat, row, e);
            } else {
                perfmon_stat_print_human(stat, row, e);
            }
        }
    }

    if (!csv) {
        perfmon_stat_print_footer(stat);
    }

    if (interrupted) {
        kprintf("perfmon: stat: interrupted%s\n",
                (stat->repeat > 1) ? " (counts of the runs done)" : "");
    }

    kmem_free(row, sizeof(*row));
    kmem_free(scratch, scratch_size);
    return 0;
}

/* ---- perfmon stat ------------------------------------------------------- */

static void
perfmon_stat_free(struct perfmon_stat *stat)
{
    if (stat->pevs != NULL) {
        kmem_free(stat->pevs, stat->pevs_size);
    }

    if (stat->values != NULL) {
        kmem_free(stat->values, stat->values_size);
    }

    kmem_free(stat, sizeof(*stat));
}

static int
perfmon_cmd_stat(int argc, char **argv)
{
    struct perfmon_stat *stat;
    bool interrupted = false;
    int error;

    stat = kmem_zalloc(sizeof(*stat));

    if (stat == NULL) {
        kprintf("perfmon: stat: out of memory\n");
        return SHELL_ERR_REPORTED;
    }

    error = perfmon_stat_parse(stat, argc, argv);

    if (error) {
        perfmon_stat_free(stat);
        return error;
    }

    stat->pevs_size = sizeof(*stat->pevs) * stat->nr_events * stat->nr_slots;
    stat->values_size = sizeof(*stat->values) * stat->repeat
                        * stat->nr_events * stat->nr_slots;
    stat->pevs = kmem_zalloc(stat->pevs_size);
    stat->values = kmem_zalloc(stat->values_size);

    if ((stat->pevs == NULL) || (stat->values == NULL)) {
        kprintf("perfmon: stat: out of memory\n");
        perfmon_stat_free(stat);
        return SHELL_ERR_REPORTED;
    }

    for (unsigned int run = 0; run < stat->repeat; run++) {
        error = perfmon_stat_run(stat, run);

        if (error) {
            break;
        }

        /* The flag latches until the next command starts: still set here. */
        if (shell_interrupted()) {
            interrupted = true;
            break;
        }

        if ((stat->cmd_result != 0) && (stat->repeat > 1)) {
            break;
        }
    }

    if (stat->runs_done > 0) {
        perfmon_stat_print(stat, interrupted);
    }

    if ((error == 0) && (interrupted || (stat->cmd_result != 0))) {
        error = SHELL_ERR_REPORTED;
    }

    perfmon_stat_free(stat);
    return error;
}

/* ---- perfmon ------------------------------------------------------------ */

static void
perfmon_cmd_usage(void)
{
    kprintf("usage: perfmon [help]     this text\n"
            "       perfmon list       every event of every device\n"
            "       perfmon info       devices, capabilities, counters in "
            "use\n"
            "       perfmon stat [-e EVENTS] [-a | -C CPUS] [-A] [-r N] "
            "[-x SEP] [--] COMMAND [ARGS...]\n"
            "                          run COMMAND in a new thread and count "
            "what it does\n"
            "  -e EVENTS  comma-separated names or aliases from 'perfmon "
            "list', raw codes rHEX,\n"
            "             each with an optional :u or :k (default both); "
            "-e may repeat\n"
            "  -a         count on all CPUs instead of the thread\n"
            "  -C CPUS    count on these CPUs, e.g. 0,2-3\n"
            "  -A         one row per CPU instead of the sum (with -a or "
            "-C)\n"
            "  -r N       run N times (1 to %u): mean and relative "
            "deviation\n"
            "  -x SEP     machine-readable: [CPU,]value,unit,event,[dev%%,]"
            "time ns,percent,metric,metric unit\n"
            "       perfmon bench [-n SAMPLES] [all|quick|remote]\n"
            "                          microbenchmarks of the perfmon layer, "
            "in TSC cycles\n"
            "workloads: spin N, memwalk SIZE STRIDE [PASSES], branchy N, "
            "yield N, hop N, xcall N, sleep MS\n", PERFMON_CMD_MAX_RUNS);
}

static int
perfmon_cmd(int argc, char **argv)
{
    if ((argc < 2) || (strcmp(argv[1], "help") == 0)) {
        perfmon_cmd_usage();
        return 0;
    }

    if (strcmp(argv[1], "list") == 0) {
        return perfmon_cmd_list();
    } else if (strcmp(argv[1], "info") == 0) {
        return perfmon_cmd_info();
    } else if (strcmp(argv[1], "stat") == 0) {
        return perfmon_cmd_stat(argc, argv);
    } else if (strcmp(argv[1], "bench") == 0) {
        return perfmon_bench_main(argc - 1, argv + 1);
    }

    kprintf("perfmon: unknown subcommand '%s'\n", argv[1]);
    perfmon_cmd_usage();
    return SHELL_ERR_REPORTED;
}

SHELL_COMMAND(perfmon, "perfmon", "[list | info | stat ... | bench]",
              "performance counters: list events, count a command",
              perfmon_cmd);
