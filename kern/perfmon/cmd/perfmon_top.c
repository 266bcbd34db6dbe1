/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon top`, modelled on `perf top`: sample the whole machine and show
 * the hottest symbols of the last interval, redrawn in place (ANSI codes)
 * every -d seconds until Ctrl-C, or printed again and again with --stdio
 * (-n stops after that many intervals).  It drains its recording itself,
 * without a drain thread, so that an interval's profile is made from a
 * store nothing else writes.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_parse.h"
#include "kern/perfmon/cmd/perfmon_capture.h"
#include "kern/perfmon/cmd/perfmon_record.h"
#include "kern/perfmon/cmd/perfmon_report.h"
#include "kern/perfmon/cmd/perfmon_resolve.h"
#include "kern/shell.h"
#include "kern/string.h"
#include "kern/thread.h"

#define PERFMON_TOP_FREQ_DEFAULT    1000
#define PERFMON_TOP_DELAY_DEFAULT   2       /* seconds */
#define PERFMON_TOP_DELAY_MAX       3600
#define PERFMON_TOP_ROWS            20
#define PERFMON_TOP_RING_SIZE       (256 * 1024)
#define PERFMON_TOP_STORE_SIZE      (8 * 1024 * 1024)
#define PERFMON_TOP_DRAIN_MS        20

const char perfmon_top_usage[] =
    "usage: perfmon top [-e EVENT] [-F HZ] [-d SECS] [-n COUNT] [--stdio]\n";

/* ANSI: cursor home, clear the screen. */
static const char perfmon_top_clear[] = "\033[H\033[2J";

struct perfmon_top {
    const char *spec;                   /* -e, or NULL */
    char event_name[PERFMON_PARSE_NAME_SIZE];
    struct perfmon_resolved event;
    uint64_t freq;
    uint64_t delay_s;
    uint64_t count;                     /* 0: until Ctrl-C */
    bool stdio;
    struct perfmon_capture *cap;
    struct perfmon_sampling sampling;
    struct perfmon_event events[CPU_MAX];
    unsigned int nr_events;
};

/* One line saying what is wrong, then the usage. */
#define perfmon_top_error(...) \
    perfmon_cmd_error("top", perfmon_top_usage, __VA_ARGS__)

static int
perfmon_top_set_event(struct perfmon_top *t, const char *spec)
{
    struct perfmon_parse_event parsed;
    struct perfmon_parse_error err;
    int error;

    if (perfmon_parse_events(spec, &parsed, 1, &err) != 1) {
        return perfmon_top_error("bad event '%s' (one event)", spec);
    }

    error = perfmon_resolve("top", &parsed, &t->event);

    if (error) {
        return error;
    }

    if (!t->event.supported) {
        return perfmon_top_error("%s: no device here counts it", spec);
    }

    strlcpy(t->event_name, parsed.spec, sizeof(t->event_name));
    return 0;
}

static int
perfmon_top_number(const char *val, uint64_t min, uint64_t max,
                   uint64_t *valp)
{
    return (cmdline_parse_u64(val, valp) == 0 && *valp >= min && *valp <= max)
           ? 0 : -EINVAL;
}

/* One option of top: t is the struct perfmon_top. */
static int
perfmon_top_option(void *ctx, int letter, const char *val)
{
    struct perfmon_top *t = ctx;

    switch (letter) {
    case 'e':
        t->spec = val;
        break;
    case 'F':
        if (perfmon_top_number(val, 1, PERFMON_MAX_FREQ, &t->freq) != 0) {
            return perfmon_top_error("-F: '%s' is not a frequency from 1 "
                                     "to " STRINGIFY(PERFMON_MAX_FREQ), val);
        }

        break;
    case 'd':
        if (perfmon_top_number(val, 1, PERFMON_TOP_DELAY_MAX,
                               &t->delay_s) != 0) {
            return perfmon_top_error("-d: '%s' is not a number of seconds "
                                     "from 1 to "
                                     STRINGIFY(PERFMON_TOP_DELAY_MAX), val);
        }

        break;
    case 'n':
        if (perfmon_top_number(val, 1, UINT32_MAX, &t->count) != 0) {
            return perfmon_top_error("-n: '%s' is not a count", val);
        }

        break;
    case 's':
        t->stdio = true;
        break;
    }

    return 0;
}

static int
perfmon_top_parse(struct perfmon_top *t, int argc, char **argv)
{
    static const struct perfmon_cmd_longopt longopts[] = {
        { "stdio", 's', false },
        { NULL, 0, false },
    };
    struct perfmon_cmd_opts opts;
    const char *spec;
    int error;

    t->freq = PERFMON_TOP_FREQ_DEFAULT;
    t->delay_s = PERFMON_TOP_DELAY_DEFAULT;
    perfmon_cmd_opts_init(&opts, argc, argv, 2, "e:F:d:n:", longopts);
    error = perfmon_cmd_options(&opts, "top", perfmon_top_usage,
                                perfmon_top_option, t);

    if (error) {
        return error;
    }

    if (opts.index < argc) {
        return perfmon_top_error("unexpected argument '%s'",
                                 argv[opts.index]);
    }

    spec = t->spec;

    if (spec == NULL) {
        spec = perfmon_cmd_default_sample_event();
    }

    return perfmon_top_set_event(t, spec);
}

static void
perfmon_top_detach(struct perfmon_top *t)
{
    for (unsigned int i = 0; i < t->nr_events; i++) {
        if (perfmon_event_attached(&t->events[i])) {
            perfmon_event_detach(&t->events[i]);
        }
    }
}

static int
perfmon_top_attach(struct perfmon_top *t)
{
    t->sampling = (struct perfmon_sampling){
        .period = perfmon_cmd_first_period(t->event.generic, t->freq),
        .freq = (unsigned int)t->freq,
        .fields = PERFMON_SF_IP | PERFMON_SF_TID | PERFMON_SF_CPU
                  | PERFMON_SF_PERIOD,
        .sbuf = perfmon_capture_sbuf(t->cap),
    };

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        struct perfmon_event *ev = &t->events[t->nr_events++];
        int error = perfmon_event_init(ev, t->event.id, t->event.flags);

        if (error == 0 && t->event.dev != NULL) {
            error = perfmon_event_set_dev(ev, t->event.dev);
        }

        if (error == 0) {
            error = perfmon_event_set_sampling(ev, &t->sampling);
        }

        if (error == 0) {
            error = perfmon_event_attach_cpu(ev, cpu);
        }

        if (error) {
            perfmon_top_detach(t);
            kprintf("perfmon: top: %s: %s\n", t->event_name,
                    (error == -EOPNOTSUPP) ? "its device cannot sample"
                                           : error_str(error));
            return SHELL_ERR_REPORTED;
        }
    }

    return 0;
}

/* Wait an interval, draining; false when Ctrl-C came. */
static bool
perfmon_top_wait(struct perfmon_top *t)
{
    for (uint64_t ms = 0; ms < t->delay_s * 1000; ms += PERFMON_TOP_DRAIN_MS) {
        if (shell_interrupted()) {
            return false;
        }

        thread_msleep(PERFMON_TOP_DRAIN_MS);
        perfmon_capture_drain(t->cap);
    }

    return true;
}

static void
perfmon_top_show(struct perfmon_top *t, unsigned int round)
{
    struct perfmon_profile *p;
    struct perfmon_capture_info info;

    if (perfmon_profile_create(&p, PERFMON_PROFILE_KEY_SYM, false) != 0) {
        kprintf("perfmon: top: out of memory\n");
        return;
    }

    perfmon_profile_add_all(p, t->cap);
    perfmon_capture_get_info(t->cap, &info);
    kprintf("%sperfmon top: %s at %llu Hz on %u CPUs, interval %u of %llu s, "
            "%llu lost (Ctrl-C stops)\n\n", t->stdio ? "\n" : perfmon_top_clear,
            t->event_name, (unsigned long long)t->freq, cpu_count(), round,
            (unsigned long long)t->delay_s, (unsigned long long)info.nr_lost);
    perfmon_profile_print(p, t->event_name, 0, PERFMON_TOP_ROWS, false);
    perfmon_profile_destroy(p);
    perfmon_capture_clear(t->cap);
}

int
perfmon_top_main(int argc, char **argv)
{
    struct perfmon_top *t = kmem_zalloc(sizeof(*t));
    int error;

    if (t == NULL) {
        kprintf("perfmon: top: out of memory\n");
        return SHELL_ERR_REPORTED;
    }

    error = perfmon_top_parse(t, argc, argv);

    if (error == 0) {
        error = perfmon_capture_create(&t->cap, PERFMON_TOP_RING_SIZE,
                                   PERFMON_TOP_STORE_SIZE, t->event_name,
                                   "perfmon top");

        if (error) {
            kprintf("perfmon: top: cannot allocate buffers: %s\n",
                    error_str(error));
            error = SHELL_ERR_REPORTED;
        }
    }

    if (error == 0) {
        error = perfmon_top_attach(t);

        for (unsigned int round = 1; error == 0 && perfmon_top_wait(t);
             round++) {
            perfmon_top_show(t, round);

            if (t->count != 0 && round >= t->count) {
                break;
            }
        }

        perfmon_top_detach(t);
        perfmon_capture_drain(t->cap);
        perfmon_capture_destroy(t->cap);
    }

    kmem_free(t, sizeof(*t));
    return error;
}
