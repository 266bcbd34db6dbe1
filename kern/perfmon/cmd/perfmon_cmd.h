/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * What the files of the `perfmon` shell command share (kern/perfmon/cmd/perfmon_cmd.c),
 * for its subcommands (kern/perfmon/cmd/perfmon_list.c, perfmon_stat.c, perfmon_record.c
 * and the others).  Thread context, like every shell command.
 */

#ifndef KERN_PERFMON_CMD_H
#define KERN_PERFMON_CMD_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/macros.h"
#include "kern/perfmon.h"

/* Room for a JSON object of -j (perfmon_stat_print.c) with long names. */
#define PERFMON_CMD_LINE_SIZE   512

/*
 * A subcommand's entry point, one row of the dispatcher's table
 * (kern/perfmon/cmd/perfmon_cmd.c).  argv holds the shell's words:
 * argv[0] is "perfmon", argv[1] the subcommand's name.  Returns 0, a
 * negative errno or SHELL_ERR_REPORTED.  Thread context.
 *
 * Each subcommand's header also gives its usage, perfmon_X_usage[]: the
 * text it prints after a bad option, and `perfmon help` prints, starting
 * "usage: perfmon X" and ending with a newline.
 */
typedef int (*perfmon_cmd_main_fn_t)(int argc, char **argv);

/*
 * A line built in pieces and printed at once, so that output from other
 * CPUs does not interleave with it; what does not fit is dropped.
 * perfmon_cmd_line_print() drops trailing blanks (perf pads its columns),
 * prints the line with a newline and empties it.
 */
struct perfmon_cmd_line {
    char buf[PERFMON_CMD_LINE_SIZE];
    size_t len;
};

void perfmon_cmd_line_init(struct perfmon_cmd_line *line);
void perfmon_cmd_line_add(struct perfmon_cmd_line *line, const char *fmt, ...)
    __format_printf(2, 3);
void perfmon_cmd_line_vadd(struct perfmon_cmd_line *line, const char *fmt,
                           va_list ap);
void perfmon_cmd_line_print(struct perfmon_cmd_line *line);

/*
 * What every subcommand does with a bad option or argument: one line
 * "perfmon: WHO: what is wrong", then its usage.  Returns
 * SHELL_ERR_REPORTED.
 */
int perfmon_cmd_error(const char *who, const char *usage,
                      const char *fmt, ...) __format_printf(3, 4);

/*
 * Options, in the style of getopt: short ones from spec ("ab:c", a letter
 * followed by ':' takes a value, in the same word or the next), which may
 * be grouped ("-ga"), and long ones from longopts ("--name value" or
 * "--name=value", NULL-terminated table), each returning its letter.
 * Options end at the first word that does not start with '-', at "--"
 * (skipped) or at the end; index is then the first word after them.
 *
 * perfmon_cmd_getopt() returns the next option's letter and its value in
 * *valp (NULL without one), 0 at the end of the options, '?' for an
 * unknown option, ':' for one without its value and '=' for a long one
 * given a value it does not take (opts->bad names it, as typed, without
 * the value).  Neither ':' nor '=' may be a short option's letter.
 */
struct perfmon_cmd_longopt {
    const char *name;
    int letter;
    bool has_arg;
};

struct perfmon_cmd_opts {
    int argc;
    char **argv;
    const char *spec;
    const struct perfmon_cmd_longopt *longopts;
    int index;                          /* the word being read */
    const char *rest;                   /* grouped letters left in it */
    char bad[32];
};

void perfmon_cmd_opts_init(struct perfmon_cmd_opts *opts, int argc,
                           char **argv, int first, const char *spec,
                           const struct perfmon_cmd_longopt *longopts);
int perfmon_cmd_getopt(struct perfmon_cmd_opts *opts, const char **valp);

/*
 * Every option of opts, through fn(ctx, letter, value), which returns 0
 * or SHELL_ERR_REPORTED having said why; an unknown option or one without
 * its value is said as perfmon_cmd_error(who, usage) says it.  Returns 0
 * or SHELL_ERR_REPORTED (the first error ends it).
 */
typedef int (*perfmon_cmd_option_fn_t)(void *ctx, int letter,
                                       const char *value);

int perfmon_cmd_options(struct perfmon_cmd_opts *opts, const char *who,
                        const char *usage, perfmon_cmd_option_fn_t fn,
                        void *ctx);

/*
 * The CPUs -a (all online) or -C LIST names, in *maskp (0 when neither is
 * given).  Returns 0, or perfmon_cmd_error(who, usage) when both are
 * given, or the list is malformed or names a CPU this machine lacks.
 */
int perfmon_cmd_cpus(const char *who, const char *usage, bool all,
                     const char *list, uint64_t *maskp);

/*
 * The COMMAND [ARGS...] after the options, from argv[index] on, into
 * *cmd_argcp and *cmd_argvp (0 and NULL when there is none).  Returns 0,
 * or perfmon_cmd_error(who, usage) when the first word names no command.
 */
int perfmon_cmd_command(const char *who, const char *usage, int argc,
                        char **argv, int index, int *cmd_argcp,
                        char ***cmd_argvp);

/* Most threads -t names. */
#define PERFMON_CMD_MAX_THREADS     16

/*
 * The threads -t LIST names ("9,10": ids as `threads` shows them), each
 * with a reference that perfmon_cmd_threads_put() drops, in
 * threads[0..*nrp).  Any thread may be named, kernel threads included (the
 * idle threads, the shell, the timer threads).  Returns 0, or
 * perfmon_cmd_error(who, usage) and no reference held: a malformed list,
 * more than PERFMON_CMD_MAX_THREADS, an id twice, an id no thread has or
 * whose thread has exited.
 */
struct thread;

int perfmon_cmd_threads(const char *who, const char *usage, const char *list,
                        struct thread **threads, unsigned int *nrp);
void perfmon_cmd_threads_put(struct thread **threads, unsigned int nr);

/*
 * Sampling, for record and top: the event when none is named (perf's
 * default: cycles where a device counts them, else cpu-clock), and the
 * first period of a frequency-mode event of generic id generic at freq
 * samples a second: known for the clock (TSC cycles), else 0 (the core's
 * first guess).
 */
const char *perfmon_cmd_default_sample_event(void);
uint64_t perfmon_cmd_first_period(int generic, uint64_t freq);

/*
 * A shell command run in a thread of its own (named name, any CPU), held
 * at a gate until perfmon_cmd_runner_go(), so that the caller can attach
 * events to the thread before the command's first instruction.
 * perfmon_cmd_runner_start() returns 0 or thread_create()'s error;
 * perfmon_cmd_runner_go() opens the gate: the thread enables the nr events
 * (attached to it, disabled) at once just before the command and disables
 * them just after it, so they count the command and nothing else (perf's
 * enable-on-exec); perfmon_cmd_runner_join() waits for the command and
 * returns what it returned; perfmon_cmd_runner_cancel() ends the thread
 * without running the command (and joins it).  perfmon_cmd_runner_wait()
 * sleeps until the command has returned (true) or the clock reaches
 * deadline (kern/clock.h ticks; false), whichever comes first, so that the
 * caller can act at set times while the command runs; only the thread
 * that called perfmon_cmd_runner_go() may wait.
 */
struct perfmon_cmd_runner {
    struct thread *thread;
    int argc;
    char **argv;
    bool gate;                          /* atomic */
    bool cancelled;
    struct perfmon_event *const *events;
    unsigned int nr_events;
    int result;
    struct thread *waiter;              /* the caller of _go() */
    bool done;                          /* atomic: the command returned */
};

int perfmon_cmd_runner_start(struct perfmon_cmd_runner *runner,
                             const char *name, int argc, char **argv);
void perfmon_cmd_runner_go(struct perfmon_cmd_runner *runner,
                           struct perfmon_event *const *events,
                           unsigned int nr);
bool perfmon_cmd_runner_wait(struct perfmon_cmd_runner *runner,
                             uint64_t deadline);

/* The longest --timeout (and -I) of stat and record, in ms: a day. */
#define PERFMON_CMD_TIME_MAX_MS     (24ULL * 3600 * 1000)
int perfmon_cmd_runner_join(struct perfmon_cmd_runner *runner);
void perfmon_cmd_runner_cancel(struct perfmon_cmd_runner *runner);

#endif /* KERN_PERFMON_CMD_H */
