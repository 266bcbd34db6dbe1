/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon record`, modelled on Linux `perf record`: run a shell command
 * in a new thread with a sampling event on it (or on every CPU, or some,
 * until the command ends, or without one until Ctrl-C or --timeout), keep the samples in kernel memory until the next
 * record, and end with perf's summary line.  `perfmon report` and `perfmon
 * script` read the recording (kern/perfmon/cmd/perfmon_report.c).
 *
 * Everything a run creates (the thread, the events, the drain thread) is
 * released before the command returns; only the recording is kept.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/clock.h"
#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/num.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_parse.h"
#include "kern/perfmon/cmd/perfmon_capture.h"
#include "kern/perfmon/cmd/perfmon_record.h"
#include "kern/perfmon/cmd/perfmon_record_events.h"
#include "kern/perfmon/cmd/perfmon_stream.h"
#include "kern/perfmon_switchrec.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/string.h"
#include "kern/thread.h"

#define PERFMON_RECORD_RING_DEFAULT     (256 * 1024)

const char perfmon_record_usage[] =
    "usage: perfmon record [-e EVENTS] [-c N | -F HZ] [-g] [-b | -j FILTERS] "
    "[-a | -C CPUS | -t TIDS] [-i] [-m SIZE] [--timeout MS] "
    "[--switch-events] [--] "
    "[COMMAND [ARGS...]]\n"
    "  (no COMMAND: sample the CPUs or threads until Ctrl-C or --timeout "
    "MS)\n"
    "  -e EVENTS  up to " STRINGIFY(PERFMON_RECORD_MAX_EVENTS) " events, "
    "each at -c or -F, or its own EVENT/period=N/ or EVENT/freq=HZ/\n"
    "             {LEADER,...}:S: only the leader samples, reading the "
    "group\n"
    "  -t TIDS    sample these running threads (ids as 'threads' shows "
    "them, e.g. 9,12)\n"
    "  -c N       a sample every N events; -F HZ: HZ samples a second per "
    "CPU (default " STRINGIFY(PERFMON_RECORD_FREQ_DEFAULT) ")\n"
    "  -g         with call chains; -m SIZE: buffer per CPU, 4K to 16M "
    "(default 256K)\n"
    "  -b         with branch stacks (LBR); -j any,any_call,any_ret,ind_call,"
    "call,cond,ind_jmp,u,k: filtered\n"
    "  --switch-events  also a record at every context switch (perfmon "
    "script shows them; perfmon report --sort offcpu)\n";

/* --timeout, a long option without a letter of its own. */
#define PERFMON_RECORD_OPT_TIMEOUT      0x100
#define PERFMON_RECORD_OPT_SWITCH       0x101

/* How often sampling -t threads without a command looks for their exit. */
#define PERFMON_RECORD_EXIT_POLL_MS     20

/* A `perfmon record` invocation, on the heap. */
struct perfmon_record {
    const char *event_list;             /* -e */
    struct perfmon_record_events events;
    uint64_t period;                    /* -c */
    uint64_t freq;                      /* -F */
    bool callchain;                     /* -g */
    bool branches;                      /* -b, or -j */
    unsigned int branch_filter;         /* -j, completed by the parse */
    const char *branch_list;            /* -j's argument */
    bool all_cpus;                      /* -a */
    const char *cpu_list;               /* -C */
    uint64_t cpu_mask;
    const char *tid_list;               /* -t */
    struct thread *threads[PERFMON_CMD_MAX_THREADS];    /* referenced */
    unsigned int nr_threads;
    bool no_inherit;                    /* -i */
    uint64_t ring_size;                 /* -m */
    uint64_t timeout_ms;                /* --timeout, without a command */
    bool switch_events;                 /* --switch-events */
    int cmd_argc;                       /* 0: none, the CPUs until Ctrl-C */
    char **cmd_argv;
    int argc;                           /* the whole perfmon command */
    char **argv;

    struct perfmon_capture *cap;
    struct perfmon_cmd_runner runner;
    struct perfmon_switchrec switchrec; /* with --switch-events */
    struct perfmon_stream *stream;      /* NULL: not streamed (why: */
    int stream_error;                   /*   this error) */
};

static const struct perfmon_cmd_longopt perfmon_record_longopts[] = {
    { "event", 'e', true },
    { "count", 'c', true },
    { "freq", 'F', true },
    { "branch-any", 'b', false },
    { "branch-filter", 'j', true },
    { "all-cpus", 'a', false },
    { "cpu", 'C', true },
    { "no-inherit", 'i', false },
    { "timeout", PERFMON_RECORD_OPT_TIMEOUT, true },
    { "tid", 't', true },
    { "switch-events", PERFMON_RECORD_OPT_SWITCH, false },
    { NULL, 0, false },
};

/* One line saying what is wrong, then the usage. */
#define perfmon_record_error(...) \
    perfmon_cmd_error("record", perfmon_record_usage, __VA_ARGS__)

/* ---- options ---------------------------------------------------------------- */

static int
perfmon_record_number(const char *opt, const char *val, uint64_t max,
                      uint64_t *valp)
{
    if (cmdline_parse_u64(val, valp) != 0 || *valp == 0 || *valp > max) {
        return perfmon_record_error("%s: '%s' is not a number from 1 to %llu",
                                    opt, val, (unsigned long long)max);
    }

    return 0;
}

static int
perfmon_record_ring_size(struct perfmon_record *r, const char *val)
{
    uint64_t size;

    if (cmdline_parse_size(val, &size) != 0 || size < PERFMON_SBUF_MIN
        || size > PERFMON_SBUF_MAX || (size & (size - 1)) != 0) {
        return perfmon_record_error("-m: '%s' is not a power of two from 4K "
                                    "to 16M", val);
    }

    r->ring_size = size;
    return 0;
}

/* -j LIST: perf's branch filter names; -j implies -b, as in perf. */
static int
perfmon_record_branch_filter(struct perfmon_record *r, const char *list)
{
    char bad[PERFMON_PARSE_NAME_SIZE];
    unsigned int filter;
    int error;

    error = perfmon_parse_branch_filter(list, &filter, bad, sizeof(bad));

    if (error == -EOPNOTSUPP) {
        return perfmon_record_error("-j %s: '%s' is perf's, but means "
                                    "nothing here (filters: any, any_call, "
                                    "any_ret, ind_call, call, cond, ind_jmp, "
                                    "u, k)", list, bad);
    } else if (error) {
        return perfmon_record_error("-j %s: %s%s%s (filters: any, any_call, "
                                    "any_ret, ind_call, call, cond, ind_jmp, "
                                    "u, k)", list,
                                    (bad[0] == '\0') ? "an empty filter"
                                                     : "unknown filter '",
                                    bad, (bad[0] == '\0') ? "" : "'");
    }

    r->branches = true;
    r->branch_filter |= filter;
    r->branch_list = list;
    return 0;
}

/*
 * The filter completed as perf completes it (any kind of branch; the
 * first event's own modes), then asked of the branch-record driver for
 * each event: no driver, one that cannot filter so, an event whose
 * interrupt does not freeze the records, another recording's filter, each
 * says so in one line.
 */
static int
perfmon_record_check_branches(struct perfmon_record *r)
{
    const struct perfmon_record_ev *ev = &r->events.evs[0];
    struct perfmon_branch_info info;
    const char *why = NULL;

    if (!(r->branch_filter & PERFMON_BRF_KINDS)) {
        r->branch_filter |= PERFMON_BRF_ANY;
    }

    if (!(r->branch_filter & PERFMON_BRF_MODE)) {
        r->branch_filter |= ((ev->event.flags & PERFMON_EF_USER)
                             ? PERFMON_BRF_USER : 0)
                            | ((ev->event.flags & PERFMON_EF_KERN)
                               ? PERFMON_BRF_KERN : 0);
    }

    for (unsigned int i = 0; why == NULL && i < r->events.nr_evs; i++) {
        ev = &r->events.evs[i];
        why = perfmon_branch_why_not(ev->dev, r->branch_filter);
    }

    if (why == NULL) {
        return 0;
    }

    perfmon_branch_get_info(&info);

    if (!info.present) {
        kprintf("perfmon: record: %s: no branch records on this machine "
                "(%s)\n", (r->branch_list != NULL) ? "-j" : "-b", why);
    } else if (r->branch_list != NULL) {
        kprintf("perfmon: record: -j %s with %s: %s\n", r->branch_list,
                ev->name, why);
    } else {
        kprintf("perfmon: record: -b with %s: %s\n", ev->name, why);
    }

    return SHELL_ERR_REPORTED;
}

static int
perfmon_record_option(void *arg, int opt, const char *val)
{
    struct perfmon_record *r = arg;

    switch (opt) {
    case 'e':
        r->event_list = val;
        return perfmon_record_events_parse(&r->events, val);
    case 'c':
        return perfmon_record_number("-c", val, PERFMON_MAX_PERIOD,
                                     &r->period);
    case 'F':
        return perfmon_record_number("-F", val, PERFMON_MAX_FREQ, &r->freq);
    case 'g':
        r->callchain = true;
        return 0;
    case 'b':
        r->branches = true;
        return 0;
    case 'j':
        return perfmon_record_branch_filter(r, val);
    case 'a':
        r->all_cpus = true;
        return 0;
    case 'C':
        r->cpu_list = val;
        return 0;
    case 'i':
        r->no_inherit = true;
        return 0;
    case 'm':
        return perfmon_record_ring_size(r, val);
    case 't':
        r->tid_list = val;
        return 0;
    case PERFMON_RECORD_OPT_SWITCH:
        r->switch_events = true;
        return 0;
    case PERFMON_RECORD_OPT_TIMEOUT:
        return perfmon_record_number("--timeout", val, PERFMON_CMD_TIME_MAX_MS,
                                     &r->timeout_ms);
    default:
        return 0;
    }
}

/*
 * The CPUs of -a or -C, or the threads of -t.  A recording's drain thread
 * is refused: it writes the samples out, so sampling it records the
 * recording.
 */
static int
perfmon_record_select_cpus(struct perfmon_record *r)
{
    int error;

    error = perfmon_cmd_cpus("record", perfmon_record_usage, r->all_cpus,
                             r->cpu_list, &r->cpu_mask);

    if (error || r->tid_list == NULL) {
        return error;
    }

    if (r->cpu_mask != 0) {
        return perfmon_record_error("-t and %s exclude each other",
                                    r->all_cpus ? "-a" : "-C");
    }

    error = perfmon_cmd_threads("record", perfmon_record_usage, r->tid_list,
                                r->threads, &r->nr_threads);

    for (unsigned int i = 0; error == 0 && i < r->nr_threads; i++) {
        if (strcmp(thread_name(r->threads[i]), "perfmon-drain") == 0) {
            error = perfmon_record_error("-t: thread %u is a recording's "
                                         "drain thread: sampling it would "
                                         "record the recording",
                                         thread_id(r->threads[i]));
        }
    }

    return error;
}

/* Whether record enables the events itself: on CPUs and -t threads. */
static bool
perfmon_record_enables(const struct perfmon_record *r)
{
    return r->cpu_mask != 0 || r->nr_threads != 0;
}

/* -t: whether every thread named has exited (nothing left to sample). */
static bool
perfmon_record_threads_gone(const struct perfmon_record *r)
{
    for (unsigned int i = 0; i < r->nr_threads; i++) {
        if (!thread_exited(r->threads[i])) {
            return false;
        }
    }

    return true;
}

static int
perfmon_record_parse(struct perfmon_record *r, int argc, char **argv)
{
    struct perfmon_cmd_opts opts;
    int error;

    r->ring_size = PERFMON_RECORD_RING_DEFAULT;
    perfmon_cmd_opts_init(&opts, argc, argv, 2, "e:c:F:gbj:aC:im:t:",
                          perfmon_record_longopts);

    error = perfmon_cmd_options(&opts, "record", perfmon_record_usage,
                                perfmon_record_option, r);

    if (error) {
        return error;
    }

    if (r->period != 0 && r->freq != 0) {
        return perfmon_record_error("-c and -F exclude each other");
    }

    error = perfmon_cmd_command("record", perfmon_record_usage, argc, argv,
                                opts.index, &r->cmd_argc, &r->cmd_argv);

    if (error) {
        return error;
    }

    if (r->period == 0 && r->freq == 0) {
        r->freq = PERFMON_RECORD_FREQ_DEFAULT;
    }

    error = perfmon_record_select_cpus(r);

    /* Without a command, what is named is sampled until Ctrl-C. */
    if (error == 0 && r->cmd_argc == 0 && !perfmon_record_enables(r)) {
        return perfmon_record_error("missing command (or -a, -C or -t to "
                                    "sample until Ctrl-C)");
    }

    if (error == 0 && r->cmd_argc != 0 && r->timeout_ms != 0) {
        return perfmon_record_error("--timeout samples without a command (a "
                                    "command ends itself, or on Ctrl-C)");
    }

    if (error == 0 && r->events.nr_evs == 0) {
        r->event_list = perfmon_cmd_default_sample_event();
        error = perfmon_record_events_parse(&r->events, r->event_list);
    }

    if (error == 0 && r->branches) {
        error = perfmon_record_check_branches(r);
    }

    if (error == 0) {
        error = perfmon_record_events_finish(&r->events, r->period, r->freq);
    }

    return error;
}

/* ---- running ------------------------------------------------------------------ */

/* Stop the switch records, then detach every event. */
static void
perfmon_record_detach_all(struct perfmon_record *r)
{
    perfmon_switchrec_stop(&r->switchrec);
    perfmon_record_events_detach(&r->events);
}

/* Explain an attach failure of ev in one line. */
static int
perfmon_record_attach_error(const struct perfmon_record *r,
                            const struct perfmon_record_ev *ev, int error)
{
    const char *why = NULL;

    /* The branch driver refused, or another filter came first. */
    if (r->branches && (error == -EOPNOTSUPP || error == -EBUSY)) {
        why = perfmon_branch_why_not(ev->dev, r->branch_filter);
    }

    if (why != NULL) {
        kprintf("perfmon: record: branch stacks with %s: %s\n", ev->name,
                why);
        return SHELL_ERR_REPORTED;
    }

    switch (error) {
    case -EOPNOTSUPP:
        kprintf("perfmon: record: %s: its device cannot sample (no overflow "
                "interrupt: boot without softpmu.overflow=poll, or "
                "perfmon.nmi=off)\n", ev->name);
        break;
    case -EAGAIN:
        kprintf("perfmon: record: %s: every counter of its device is in "
                "use\n", ev->name);
        break;
    case -EBUSY:
        kprintf("perfmon: record: %s: the context-switch hook is off "
                "(perfmon.hook=off): use -a\n", ev->name);
        break;
    case -ENOSPC:
        kprintf("perfmon: record: %s: its group has more events than its "
                "device has counters\n", ev->name);
        break;
    default:
        kprintf("perfmon: record: %s: %s\n", ev->name, error_str(error));
        break;
    }

    return SHELL_ERR_REPORTED;
}

/*
 * The events: on the command's thread, on each selected CPU, or on each
 * thread of -t; a thread event also samples the threads the command
 * creates, unless -i.
 */
static int
perfmon_record_attach(struct perfmon_record *r)
{
    unsigned int flags = (r->cpu_mask == 0 && !r->no_inherit)
                         ? PERFMON_EF_INHERIT : 0;
    const struct perfmon_record_ev *failed;

    for (unsigned int slot = 0; slot < r->events.nr_slots; slot++) {
        int error;

        if (r->cpu_mask != 0 && !(r->cpu_mask & (1ULL << slot))) {
            continue;
        }

        error = perfmon_record_events_attach(&r->events, slot, flags, slot,
                                             (r->cpu_mask != 0) ? NULL
                                             : (r->nr_threads != 0)
                                             ? r->threads[slot]
                                             : r->runner.thread, &failed);

        if (error) {
            perfmon_record_events_detach(&r->events);
            return perfmon_record_attach_error(r, failed, error);
        }
    }

    return 0;
}

/* --switch-events: watch the switches of what the events sample. */
static int
perfmon_record_switch_start(struct perfmon_record *r)
{
    int error = perfmon_switchrec_start(&r->switchrec,
                                        perfmon_capture_sbuf(r->cap),
                                        r->events.set, r->events.nr_set);

    if (error) {
        perfmon_record_detach_all(r);
        kprintf("perfmon: record: --switch-events: %s\n",
                (error == -EBUSY) ? "too many recordings take switch records "
                                    "now" : error_str(error));
        return SHELL_ERR_REPORTED;
    }

    return 0;
}

/* ---- the stream on COM2 ------------------------------------------------- */

/*
 * Stream the recording out from its first record on, if there is a COM2:
 * one description per event, in the order of their ids.
 */
static void
perfmon_record_stream_open(struct perfmon_record *r)
{
    struct perfmon_stream_desc descs[PERFMON_RECORD_MAX_EVENTS];

    perfmon_record_events_describe(&r->events, r->cap, r->argc, r->argv,
                                   descs);
    descs[0].switch_events = r->switch_events;  /* the tracking event's */
    r->stream_error = perfmon_stream_open(&r->stream, &descs[0]);

    if (r->stream_error) {
        r->stream = NULL;
    } else {
        perfmon_capture_set_sink(r->cap, perfmon_stream_rec, r->stream);
    }
}

static void
perfmon_record_stream_close(struct perfmon_record *r)
{
    struct perfmon_capture_info info;

    if (r->stream != NULL) {
        perfmon_capture_get_info(r->cap, &info);
        r->stream_error = perfmon_stream_close(r->stream, &info);
        r->stream = NULL;
    }
}

/* Where the samples went, in one line. */
static void
perfmon_record_say_where(const struct perfmon_record *r)
{
    switch (r->stream_error) {
    case 0:
        kprintf("perfmon: record: streamed to COM2 in perf's format (on the "
                "host: make perf-report)\n");
        break;
    case -ENODEV:
        kprintf("perfmon: record: kept in memory only (no COM2 to stream "
                "to): read it with perfmon report\n");
        break;
    case -EIO:
        kprintf("perfmon: record: COM2 stopped taking bytes: the host's copy "
                "is cut short; perfmon report reads it all\n");
        break;
    default:
        kprintf("perfmon: record: not streamed to COM2 (%s): read it with "
                "perfmon report\n", error_str(r->stream_error));
        break;
    }
}

/* ---- the end ------------------------------------------------------------ */

static void
perfmon_record_summary(const struct perfmon_record *r)
{
    struct perfmon_capture_info info;

    perfmon_capture_get_info(r->cap, &info);
    kprintf("[ perfmon record: captured %llu samples, %llu lost, %llu KiB ]\n",
            (unsigned long long)info.nr_samples,
            (unsigned long long)info.nr_lost,
            (unsigned long long)((info.store_bytes + 1023) / 1024));

    if (r->switch_events) {
        kprintf("perfmon: record: %llu switch records (perfmon script shows "
                "them)\n", (unsigned long long)info.nr_switches);
    }

    if (info.nr_throttles != 0) {
        kprintf("perfmon: record: sampling was throttled %llu times (the "
                "period was raised)\n",
                (unsigned long long)info.nr_throttles);
    }
}

/* The command recorded; without one, what was sampled, as perf says it. */
static void
perfmon_record_command_line(const struct perfmon_record *r, char *buf,
                            size_t size)
{
    size_t len = 0;

    buf[0] = '\0';

    if (r->cmd_argc == 0 && r->nr_threads != 0) {
        ksnprintf(buf, size, "thread id %s", r->tid_list);
        return;
    } else if (r->cmd_argc == 0) {
        ksnprintf(buf, size, r->all_cpus ? "system wide" : "CPU(s) %s",
                  r->cpu_list);
        return;
    }

    for (int i = 0; i < r->cmd_argc && len < size; i++) {
        len += (size_t)ksnprintf(&buf[len], size - len, "%s%s",
                                 (i == 0) ? "" : " ", r->cmd_argv[i]);
    }
}

/*
 * Without a command: until Ctrl-C, --timeout, or (-t) the exit of every
 * thread named, looked for every PERFMON_RECORD_EXIT_POLL_MS.
 */
static void
perfmon_record_wait(const struct perfmon_record *r)
{
    uint64_t end = (r->timeout_ms != 0)
                   ? clock_get_time() + clock_ticks_from_ms(r->timeout_ms)
                   : UINT64_MAX;

    for (;;) {
        uint64_t deadline = end;

        if (r->nr_threads != 0) {
            deadline = MIN(end, clock_get_time()
                           + clock_ticks_from_ms(PERFMON_RECORD_EXIT_POLL_MS));
        }

        if (shell_wait_interrupt(deadline) || clock_get_time() >= end
            || (r->nr_threads != 0 && perfmon_record_threads_gone(r))) {
            return;
        }
    }
}

/* What the samples carry. */
static unsigned int
perfmon_record_fields(const struct perfmon_record *r)
{
    return PERFMON_SF_IP | PERFMON_SF_TID | PERFMON_SF_TIME | PERFMON_SF_CPU
           | PERFMON_SF_PERIOD | (r->callchain ? PERFMON_SF_CALLCHAIN : 0)
           | (r->branches ? PERFMON_SF_BRANCH : 0);
}

static int
perfmon_record_run(struct perfmon_record *r)
{
    char command[96];
    int error;

    perfmon_record_command_line(r, command, sizeof(command));
    error = perfmon_capture_create(&r->cap, r->ring_size,
                               PERFMON_CAPTURE_STORE_DEFAULT, r->event_list,
                               command);

    if (error) {
        kprintf("perfmon: record: cannot allocate %llu KiB of buffers per "
                "CPU: %s\n", (unsigned long long)(r->ring_size / 1024),
                error_str(error));
        return SHELL_ERR_REPORTED;
    }

    /* A slot per thread of -t, per CPU, or the command's thread. */
    error = perfmon_record_events_alloc(&r->events, (r->nr_threads != 0)
                                                    ? r->nr_threads
                                                    : (r->cpu_mask != 0)
                                                    ? cpu_count() : 1);

    if (error == 0) {
        perfmon_record_events_set_samplings(&r->events, r->cap,
                                            perfmon_record_fields(r),
                                            r->branch_filter);
    } else {
        perfmon_capture_destroy(r->cap);
        return error;
    }

    /* The thread is named after the command, as perf shows its comm. */
    error = (r->cmd_argc == 0) ? 0
            : perfmon_cmd_runner_start(&r->runner, r->cmd_argv[0],
                                       r->cmd_argc, r->cmd_argv);

    if (error) {
        kprintf("perfmon: record: cannot create a thread: %s\n",
                error_str(error));
        perfmon_record_events_free(&r->events);
        perfmon_capture_destroy(r->cap);
        return SHELL_ERR_REPORTED;
    }

    error = perfmon_record_attach(r);

    if (error == 0 && r->switch_events) {
        error = perfmon_record_switch_start(r);
    }

    if (error == 0) {
        perfmon_record_stream_open(r);

        if (r->cmd_argc != 0) {
            perfmon_capture_name_thread(r->cap,
                                        thread_id(r->runner.thread));
        }

        error = perfmon_capture_start(r->cap);

        if (error) {
            kprintf("perfmon: record: cannot start draining: %s\n",
                    error_str(error));
            perfmon_record_detach_all(r);
            perfmon_record_stream_close(r);
            error = SHELL_ERR_REPORTED;
        }
    }

    if (error) {
        if (r->cmd_argc != 0) {
            perfmon_cmd_runner_cancel(&r->runner);
        }

        perfmon_record_events_free(&r->events);
        perfmon_capture_destroy(r->cap);
        return error;
    }

    if (r->cmd_argc == 0) {
        perfmon_events_enable(r->events.set, r->events.nr_set);
        perfmon_record_wait(r);
        perfmon_events_disable(r->events.set, r->events.nr_set);
    } else if (perfmon_record_enables(r)) {
        perfmon_events_enable(r->events.set, r->events.nr_set);
        perfmon_cmd_runner_go(&r->runner, NULL, 0);
        perfmon_cmd_runner_join(&r->runner);
        perfmon_events_disable(r->events.set, r->events.nr_set);
    } else {
        perfmon_cmd_runner_go(&r->runner, r->events.set, r->events.nr_set);
        perfmon_cmd_runner_join(&r->runner);
    }

    perfmon_record_detach_all(r);
    perfmon_record_events_free(&r->events);
    perfmon_capture_stop(r->cap);
    perfmon_record_stream_close(r);
    perfmon_record_summary(r);
    perfmon_record_say_where(r);
    perfmon_capture_keep(r->cap);
    return 0;
}

int
perfmon_record_main(int argc, char **argv)
{
    struct perfmon_record *r = kmem_zalloc(sizeof(*r));
    bool cmd;
    int error;

    if (r == NULL) {
        kprintf("perfmon: record: out of memory\n");
        return SHELL_ERR_REPORTED;
    }

    r->argc = argc;
    r->argv = argv;
    error = perfmon_record_parse(r, argc, argv);

    if (error == 0) {
        error = perfmon_record_run(r);
    }

    cmd = (r->cmd_argc != 0);
    perfmon_cmd_threads_put(r->threads, r->nr_threads);
    kmem_free(r, sizeof(*r));

    /*
     * The flag latches until the next command: Ctrl-C kept the samples.
     * Without a command it is how recording ends.
     */
    if (error == 0 && cmd && shell_interrupted()) {
        kprintf("perfmon: record: interrupted (the samples so far are "
                "kept)\n");
    }

    return error;
}
