/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The `perfmon` shell command: its table of subcommands, from which it
 * dispatches and prints `perfmon help`, and what every subcommand shares
 * (kern/perfmon/cmd/perfmon_cmd.h): the output line buffer, one-line
 * errors with the usage, option parsing (short and long options), the
 * command runner that starts a workload disabled and lets its caller
 * enable events as it begins.  Each of these exists once, for stat,
 * record, report, script, top and selftest; so does the resolution of
 * event names, in perfmon_resolve.c.  The subcommands
 * are in their own files of kern/perfmon/cmd/: `list` and `info` in
 * perfmon_list.c, `stat` in perfmon_stat.c, `bench` in perfmon_bench.c,
 * and so on.  It reaches the hardware only through the core's API
 * (kern/perfmon.h).
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/clock.h"
#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_bench.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_list.h"
#include "kern/perfmon/cmd/perfmon_parse.h"
#include "kern/perfmon/cmd/perfmon_record.h"
#include "kern/perfmon/cmd/perfmon_regions.h"
#include "kern/perfmon/cmd/perfmon_resolve.h"
#include "kern/perfmon/cmd/perfmon_selftest.h"
#include "kern/perfmon/cmd/perfmon_stat.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/string.h"
#include "kern/thread.h"
#include "kern/timer.h"


/* ---- lines -------------------------------------------------------------- */

void
perfmon_cmd_line_init(struct perfmon_cmd_line *line)
{
    line->buf[0] = '\0';
    line->len = 0;
}

void
perfmon_cmd_line_vadd(struct perfmon_cmd_line *line, const char *fmt,
                      va_list ap)
{
    int n;

    if (line->len >= sizeof(line->buf) - 1) {
        return;
    }

    n = kvsnprintf(&line->buf[line->len], sizeof(line->buf) - line->len, fmt,
                   ap);

    if (n > 0) {
        line->len = MIN(line->len + (size_t)n, sizeof(line->buf) - 1);
    }
}

void
perfmon_cmd_line_add(struct perfmon_cmd_line *line, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    perfmon_cmd_line_vadd(line, fmt, ap);
    va_end(ap);
}

void
perfmon_cmd_line_print(struct perfmon_cmd_line *line)
{
    /* perf pads its columns: trailing blanks help nobody. */
    while ((line->len > 0) && (line->buf[line->len - 1] == ' ')) {
        line->buf[--line->len] = '\0';
    }

    kprintf("%s\n", line->buf);
    perfmon_cmd_line_init(line);
}

const char *
perfmon_cmd_default_sample_event(void)
{
    return (perfmon_resolve_dev_for("cycles") != NULL) ? "cycles" : "cpu-clock";
}

uint64_t
perfmon_cmd_first_period(int generic, uint64_t freq)
{
    uint64_t hz = cpu_tsc_freq();

    return (generic == PERFMON_EV_TASK_CLOCK && hz != 0 && freq != 0)
           ? MAX(hz / freq, 1) : 0;
}

/*
 * An error is one line, then the usage's first line, its synopsis: the
 * options' details are for `perfmon help SUBCOMMAND`, not for every typo.
 */
static void
perfmon_cmd_synopsis_print(const char *usage)
{
    const char *end = strchr(usage, '\n');

    kprintf("%.*s\n", (int)(end != NULL ? end - usage : (long)strlen(usage)),
            usage);
}

int
perfmon_cmd_error(const char *who, const char *usage, const char *fmt, ...)
{
    struct perfmon_cmd_line line;
    va_list ap;

    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "perfmon: %s: ", who);
    va_start(ap, fmt);
    perfmon_cmd_line_vadd(&line, fmt, ap);
    va_end(ap);
    perfmon_cmd_line_print(&line);
    perfmon_cmd_synopsis_print(usage);
    return SHELL_ERR_REPORTED;
}

int
perfmon_cmd_cpus(const char *who, const char *usage, bool all,
                 const char *list, uint64_t *maskp)
{
    unsigned int nr_cpus = cpu_count();
    int error;

    *maskp = 0;

    if (all && list != NULL) {
        return perfmon_cmd_error(who, usage, "-a and -C %s exclude each other",
                                 list);
    }

    if (all) {
        *maskp = (nr_cpus >= 64) ? UINT64_MAX : (1ULL << nr_cpus) - 1;
        return 0;
    }

    if (list == NULL) {
        return 0;
    }

    error = perfmon_parse_cpulist(list, nr_cpus, maskp);

    if (error == -ERANGE) {
        return perfmon_cmd_error(who, usage, "-C %s: this machine has CPUs "
                                 "0 to %u", list, nr_cpus - 1);
    } else if (error) {
        return perfmon_cmd_error(who, usage, "-C %s: bad CPU list (expected "
                                 "e.g. 0,2-3)", list);
    }

    return 0;
}

int
perfmon_cmd_command(const char *who, const char *usage, int argc, char **argv,
                    int index, int *cmd_argcp, char ***cmd_argvp)
{
    *cmd_argcp = 0;
    *cmd_argvp = NULL;

    if (index >= argc) {
        return 0;
    }

    if (shell_cmd_lookup(argv[index]) == NULL) {
        return perfmon_cmd_error(who, usage, "unknown command '%s' (type "
                                 "'help')", argv[index]);
    }

    *cmd_argcp = argc - index;
    *cmd_argvp = &argv[index];
    return 0;
}

void
perfmon_cmd_threads_put(struct thread **threads, unsigned int nr)
{
    for (unsigned int i = 0; i < nr; i++) {
        thread_unref(threads[i]);
        threads[i] = NULL;
    }
}

/* One id of a -t list, of len characters: its thread, or an error said. */
static int
perfmon_cmd_thread(const char *who, const char *usage, const char *id,
                   size_t len, struct thread **threads, unsigned int nr)
{
    char word[24];
    uint64_t tid;

    if (len == 0 || len >= sizeof(word)) {
        return perfmon_cmd_error(who, usage, "-t: '%.*s' is not a thread id "
                                 "(see threads)", (int)MIN(len, 23U), id);
    }

    memcpy(word, id, len);
    word[len] = '\0';

    if (cmdline_parse_u64(word, &tid) != 0 || tid > UINT32_MAX) {
        return perfmon_cmd_error(who, usage, "-t: '%s' is not a thread id "
                                 "(see threads)", word);
    }

    for (unsigned int i = 0; i < nr; i++) {
        if (thread_id(threads[i]) == tid) {
            return perfmon_cmd_error(who, usage, "-t: thread %s is named "
                                     "twice", word);
        }
    }

    threads[nr] = thread_lookup((unsigned int)tid);

    if (threads[nr] == NULL) {
        return perfmon_cmd_error(who, usage, "-t: no thread %s (it has "
                                 "exited, or never was: see threads)", word);
    }

    return 0;
}

int
perfmon_cmd_threads(const char *who, const char *usage, const char *list,
                    struct thread **threads, unsigned int *nrp)
{
    unsigned int nr = 0;
    const char *p = list;
    int error;

    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = (comma != NULL) ? (size_t)(comma - p) : strlen(p);

        if (nr == PERFMON_CMD_MAX_THREADS) {
            perfmon_cmd_threads_put(threads, nr);
            return perfmon_cmd_error(who, usage, "-t: %u threads at most",
                                     PERFMON_CMD_MAX_THREADS);
        }

        error = perfmon_cmd_thread(who, usage, p, len, threads, nr);

        if (error) {
            perfmon_cmd_threads_put(threads, nr);
            return error;
        }

        nr++;

        if (comma == NULL) {
            break;
        }

        p = comma + 1;
    }

    *nrp = nr;
    return 0;
}

/* ---- options ---------------------------------------------------------------- */

void
perfmon_cmd_opts_init(struct perfmon_cmd_opts *opts, int argc, char **argv,
                      int first, const char *spec,
                      const struct perfmon_cmd_longopt *longopts)
{
    memset(opts, 0, sizeof(*opts));
    opts->argc = argc;
    opts->argv = argv;
    opts->spec = spec;
    opts->longopts = longopts;
    opts->index = first;
}

/* The value of an option: the rest of its word, or the next word. */
static const char *
perfmon_cmd_optval(struct perfmon_cmd_opts *opts, const char *rest)
{
    if (rest != NULL && *rest != '\0') {
        return rest;
    }

    if (opts->index >= opts->argc) {
        return NULL;
    }

    return opts->argv[opts->index++];
}

static int
perfmon_cmd_getopt_long(struct perfmon_cmd_opts *opts, const char *word,
                        const char **valp)
{
    const char *eq = strchr(word, '=');
    size_t len = (eq != NULL) ? (size_t)(eq - word) : strlen(word);

    strlcpy(opts->bad, word - 2, sizeof(opts->bad));

    for (const struct perfmon_cmd_longopt *o = opts->longopts;
         o != NULL && o->name != NULL; o++) {
        if (strlen(o->name) != len || strncmp(o->name, word, len) != 0) {
            continue;
        }

        if (!o->has_arg) {
            if (eq != NULL) {
                opts->bad[MIN(len + 2, sizeof(opts->bad) - 1)] = '\0';
                return '=';
            }

            return o->letter;
        }

        *valp = perfmon_cmd_optval(opts, (eq != NULL) ? eq + 1 : NULL);
        return (*valp != NULL) ? o->letter : ':';
    }

    return '?';
}

int
perfmon_cmd_getopt(struct perfmon_cmd_opts *opts, const char **valp)
{
    const char *spec;
    char letter;

    *valp = NULL;

    if (opts->rest == NULL || *opts->rest == '\0') {
        const char *word;

        if (opts->index >= opts->argc) {
            return 0;
        }

        word = opts->argv[opts->index];

        if (strcmp(word, "--") == 0) {
            opts->index++;
            return 0;
        }

        if (word[0] != '-' || word[1] == '\0') {
            return 0;
        }

        opts->index++;

        if (word[1] == '-') {
            return perfmon_cmd_getopt_long(opts, word + 2, valp);
        }

        opts->rest = word + 1;
    }

    letter = *opts->rest++;
    ksnprintf(opts->bad, sizeof(opts->bad), "-%c", letter);
    spec = strchr(opts->spec, letter);

    if (letter == ':' || letter == '=' || spec == NULL) {
        return '?';
    }

    if (spec[1] == ':') {
        *valp = perfmon_cmd_optval(opts, opts->rest);
        opts->rest = NULL;
        return (*valp != NULL) ? letter : ':';
    }

    return letter;
}

int
perfmon_cmd_options(struct perfmon_cmd_opts *opts, const char *who,
                    const char *usage, perfmon_cmd_option_fn_t fn, void *ctx)
{
    const char *val;
    int opt, error;

    while ((opt = perfmon_cmd_getopt(opts, &val)) != 0) {
        if (opt == '?') {
            return perfmon_cmd_error(who, usage, "unknown option '%s'",
                                     opts->bad);
        } else if (opt == ':') {
            return perfmon_cmd_error(who, usage, "option %s needs an argument",
                                     opts->bad);
        } else if (opt == '=') {
            return perfmon_cmd_error(who, usage,
                                     "option %s takes no argument", opts->bad);
        }

        error = fn(ctx, opt, val);

        if (error) {
            return error;
        }
    }

    return 0;
}

/* ---- command runner ------------------------------------------------------ */

static void
perfmon_cmd_runner_main(void *arg)
{
    struct perfmon_cmd_runner *runner = arg;

    /* Sleep at the gate, so that nothing before the command counts. */
    for (;;) {
        thread_sleep_prepare();

        if (__atomic_load_n(&runner->gate, __ATOMIC_ACQUIRE)) {
            thread_sleep_cancel();
            break;
        }

        thread_sleep();
    }

    if (runner->cancelled) {
        return;
    }

    /* The command's events count from its first instruction to its last. */
    if (runner->nr_events != 0) {
        perfmon_events_enable(runner->events, runner->nr_events);
    }

    runner->result = shell_exec_argv(runner->argc, runner->argv);

    if (runner->nr_events != 0) {
        perfmon_events_disable(runner->events, runner->nr_events);
    }

    /* The waiter outlives this thread: it joins it. */
    __atomic_store_n(&runner->done, true, __ATOMIC_RELEASE);
    thread_wakeup(runner->waiter);
}

int
perfmon_cmd_runner_start(struct perfmon_cmd_runner *runner, const char *name,
                         int argc, char **argv)
{
    runner->argc = argc;
    runner->argv = argv;
    runner->result = 0;
    runner->cancelled = false;
    runner->events = NULL;
    runner->nr_events = 0;
    runner->waiter = NULL;
    __atomic_store_n(&runner->done, false, __ATOMIC_RELAXED);
    __atomic_store_n(&runner->gate, false, __ATOMIC_RELAXED);
    return thread_create(&runner->thread, name, perfmon_cmd_runner_main,
                         runner, THREAD_CPUMASK_ALL);
}

void
perfmon_cmd_runner_go(struct perfmon_cmd_runner *runner,
                      struct perfmon_event *const *events, unsigned int nr)
{
    runner->events = events;
    runner->nr_events = nr;
    runner->waiter = thread_self();
    __atomic_store_n(&runner->gate, true, __ATOMIC_RELEASE);
    thread_wakeup(runner->thread);
}

static void
perfmon_cmd_runner_wake(struct timer *timer)
{
    thread_wakeup(timer->arg);
}

bool
perfmon_cmd_runner_wait(struct perfmon_cmd_runner *runner, uint64_t deadline)
{
    struct timer timer;
    bool done;

    assert(runner->waiter == thread_self());
    timer_init(&timer, perfmon_cmd_runner_wake, TIMER_INTR);
    timer.arg = runner->waiter;

    /* Prepared before each test: a wakeup between them is not lost. */
    for (;;) {
        thread_sleep_prepare();
        done = __atomic_load_n(&runner->done, __ATOMIC_ACQUIRE);

        if (done || clock_get_time() >= deadline) {
            thread_sleep_cancel();
            break;
        }

        timer_schedule(&timer, deadline);
        thread_sleep();
    }

    timer_cancel(&timer);
    return done;
}

int
perfmon_cmd_runner_join(struct perfmon_cmd_runner *runner)
{
    thread_join(runner->thread);
    runner->thread = NULL;
    return runner->result;
}

void
perfmon_cmd_runner_cancel(struct perfmon_cmd_runner *runner)
{
    runner->cancelled = true;
    perfmon_cmd_runner_go(runner, NULL, 0);
    perfmon_cmd_runner_join(runner);
}

/* ---- perfmon ------------------------------------------------------------ */

static int perfmon_cmd_help(int argc, char **argv);

static const char perfmon_cmd_help_usage[] = "usage: perfmon help [SUBCOMMAND]\n";

/*
 * A subcommand: its name, its entry point, its usage (what it prints
 * after a bad option, and `perfmon help SUBCOMMAND`) and one line saying
 * what it does.  The table is constant.
 */
struct perfmon_cmd_sub {
    const char *name;
    perfmon_cmd_main_fn_t main;
    const char *usage;
    const char *summary;
};

static const struct perfmon_cmd_sub perfmon_cmd_subs[] = {
    { "help", perfmon_cmd_help, perfmon_cmd_help_usage,
      "this text, or a subcommand's usage" },
    { "list", perfmon_list_main, perfmon_list_usage,
      "every event of every device (or those FILTER names)" },
    { "info", perfmon_info_main, perfmon_info_usage,
      "devices, capabilities, counters in use" },
    { "stat", perfmon_stat_main, perfmon_stat_usage,
      "run COMMAND in a new thread and count what it does" },
    { "record", perfmon_record_main, perfmon_record_usage,
      "sample COMMAND (or the CPUs while it runs), keep the samples" },
    { "report", perfmon_report_main, perfmon_report_usage,
      "the last recording, hottest first, or its branch stacks" },
    { "script", perfmon_script_main, perfmon_script_usage,
      "the last recording, one sample a line" },
    { "top", perfmon_top_main, perfmon_top_usage,
      "the hottest symbols of the machine, until Ctrl-C" },
    { "regions", perfmon_regions_main, perfmon_regions_usage,
      "what the kernel's code regions cost, per CPU, exactly" },
    { "bench", perfmon_bench_main, perfmon_bench_usage,
      "microbenchmarks of the perfmon layer" },
    { "selftest", perfmon_selftest_main, perfmon_selftest_usage,
      "check that the counters count what they claim, here" },
};

static const struct perfmon_cmd_sub *
perfmon_cmd_sub_find(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(perfmon_cmd_subs); i++) {
        if (strcmp(perfmon_cmd_subs[i].name, name) == 0) {
            return &perfmon_cmd_subs[i];
        }
    }

    return NULL;
}

/* The subcommands with their summaries, then each one's usage. */
static void
perfmon_cmd_help_all(void)
{
    kprintf("usage: perfmon SUBCOMMAND [ARGS...]\n");

    for (size_t i = 0; i < ARRAY_SIZE(perfmon_cmd_subs); i++) {
        kprintf("  %-9s %s\n", perfmon_cmd_subs[i].name,
                perfmon_cmd_subs[i].summary);
    }

    for (size_t i = 0; i < ARRAY_SIZE(perfmon_cmd_subs); i++) {
        kprintf("\n%s", perfmon_cmd_subs[i].usage);
    }

    kprintf("\nworkloads: spin N, memwalk SIZE STRIDE [PASSES], branchy N, "
            "yield N, hop N, xcall N, sleep MS\n");
}

static int
perfmon_cmd_help(int argc, char **argv)
{
    const struct perfmon_cmd_sub *sub;

    if (argc < 3) {
        perfmon_cmd_help_all();
        return 0;
    }

    sub = perfmon_cmd_sub_find(argv[2]);

    if (argc > 3 || sub == NULL) {
        return perfmon_cmd_error("help", perfmon_cmd_help_usage,
                                 "%s '%s' (see 'perfmon help')",
                                 (sub == NULL) ? "unknown subcommand"
                                               : "one subcommand at most, not",
                                 argv[(sub == NULL) ? 2 : 3]);
    }

    kprintf("%s: %s\n%s", sub->name, sub->summary, sub->usage);
    return 0;
}

static int
perfmon_cmd(int argc, char **argv)
{
    const struct perfmon_cmd_sub *sub;

    if (argc < 2) {
        perfmon_cmd_help_all();
        return 0;
    }

    sub = perfmon_cmd_sub_find(argv[1]);

    if (sub == NULL) {
        kprintf("perfmon: unknown subcommand '%s' (see 'perfmon help')\n",
                argv[1]);
        return SHELL_ERR_REPORTED;
    }

    return sub->main(argc, argv);
}

SHELL_COMMAND(perfmon, "perfmon",
              "[SUBCOMMAND [ARGS...]] (see 'perfmon help')",
              "performance counters: list events, count and profile",
              perfmon_cmd);
