/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the `perfmon` command's shared parts (kern/perfmon/cmd/perfmon_cmd.c)
 * and its `list` and `info` (kern/perfmon/cmd/perfmon_list.c), on the real perfmon
 * core with the fake devices of fdev.c: the option parser every
 * subcommand uses (grouped letters, values in the same or the next word,
 * long options, "--", missing values and unknown options), the
 * subcommand dispatch through the shell, `perfmon list` and `perfmon
 * info`, event resolution with its suggestions, output lines, and the
 * runner's error path when no thread can be created.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fakes/fake_smp.h"
#include "fdev.h"
#include "kern/error.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_parse.h"
#include "kern/perfmon/cmd/perfmon_resolve.h"
#include "kern/shell.h"

const char *fake_console_output(void);
void fake_console_reset(void);

extern const char *fake_perfmon_subcmd;
extern int fake_perfmon_subcmd_argc;

static const char STAT_SPEC[] = "e:aC:Ar:x:";

static const struct perfmon_cmd_longopt longopts[] = {
    { "sort", 's', true },
    { "stdio", 'S', false },
    { NULL, 0, false },
};

/* Run getopt over words; the letters (and values) into out, as text. */
static int
getopt_all(int argc, char **argv, char *out, size_t size,
           struct perfmon_cmd_opts *opts)
{
    const char *val;
    int opt;

    out[0] = '\0';
    perfmon_cmd_opts_init(opts, argc, argv, 2, STAT_SPEC, longopts);

    while ((opt = perfmon_cmd_getopt(opts, &val)) != 0) {
        size_t len = strlen(out);

        snprintf(out + len, size - len, "%c%s%s;", opt, val ? "=" : "",
                 val ? val : "");

        if (opt == '?' || opt == ':' || opt == '=') {
            break;
        }
    }

    return opts->index;
}

#define WORDS(...)  (char *[]){ "perfmon", "stat", __VA_ARGS__, NULL }
#define NWORDS(...) ((int)(sizeof((char *[]){ "perfmon", "stat", __VA_ARGS__ }) \
                           / sizeof(char *)))
#define GETOPT(out, opts, ...) \
    getopt_all(NWORDS(__VA_ARGS__), WORDS(__VA_ARGS__), (out), sizeof(out), \
               (opts))

static void
test_getopt(void **state)
{
    struct perfmon_cmd_opts opts;
    char out[128];

    (void)state;
    assert_int_equal(GETOPT(out, &opts, "-a", "-e", "cycles", "--", "spin"),
                     6);
    assert_string_equal(out, "a;e=cycles;");
    assert_int_equal(GETOPT(out, &opts, "-aAecs", "-C0-1", "spin"), 4);
    assert_string_equal(out, "a;A;e=cs;C=0-1;");
    assert_int_equal(GETOPT(out, &opts, "spin", "-a"), 2);
    assert_string_equal(out, "");
    assert_int_equal(GETOPT(out, &opts, "-", "spin"), 2);
    assert_string_equal(out, "");
    GETOPT(out, &opts, "--sort=sym", "--sort", "comm", "--stdio", "x");
    assert_string_equal(out, "s=sym;s=comm;S;");

    /* Errors name the option as typed. */
    GETOPT(out, &opts, "-a", "-e");
    assert_string_equal(out, "a;:;");
    assert_string_equal(opts.bad, "-e");
    GETOPT(out, &opts, "-aq");
    assert_string_equal(out, "a;?;");
    assert_string_equal(opts.bad, "-q");
    GETOPT(out, &opts, "-:");
    assert_string_equal(out, "?;");
    GETOPT(out, &opts, "--stdio=1");
    assert_string_equal(out, "=;");
    assert_string_equal(opts.bad, "--stdio");
    GETOPT(out, &opts, "-=");
    assert_string_equal(out, "?;");
    GETOPT(out, &opts, "--nope");
    assert_string_equal(out, "?;");
    assert_string_equal(opts.bad, "--nope");
    GETOPT(out, &opts, "--sort");
    assert_string_equal(out, ":;");
}

static void
test_dispatch(void **state)
{
    static const char *const subs[] = {
        "stat", "record", "report", "script", "top", "regions", "bench",
        "selftest",
    };
    char line[64];
    const char *out;

    (void)state;

    /* Every subcommand gets the shell's words, its name in argv[1]. */
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
        fake_perfmon_subcmd = NULL;
        snprintf(line, sizeof(line), "perfmon %s -x y", subs[i]);
        assert_int_equal(shell_exec(line), 0);
        assert_non_null(fake_perfmon_subcmd);
        assert_string_equal(fake_perfmon_subcmd, subs[i]);
        assert_int_equal(fake_perfmon_subcmd_argc, 4);
    }

    /* Help: a summary line and the usage of each, from the one table. */
    fake_console_reset();
    assert_int_equal(shell_exec("perfmon"), 0);
    out = fake_console_output();
    assert_non_null(strstr(out, "usage: perfmon SUBCOMMAND"));
    assert_non_null(strstr(out, "  stat      run COMMAND"));
    assert_non_null(strstr(out, "usage: perfmon list [-j] [FILTER] | --model "
                                "VENDOR-FAMILY-MODEL[-STEPPING] [FILTER] | "
                                "metrics [FILTER]\n"));

    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
        snprintf(line, sizeof(line), "usage: perfmon %s (fake)\n", subs[i]);
        assert_non_null(strstr(out, line));
    }

    fake_console_reset();
    assert_int_equal(shell_exec("perfmon help"), 0);
    assert_string_equal(fake_console_output(), out);
    fake_console_reset();
    assert_int_equal(shell_exec("perfmon help info"), 0);
    assert_string_equal(fake_console_output(),
                        "info: devices, capabilities, counters in use\n"
                        "usage: perfmon info [-j]\n");
    fake_console_reset();
    assert_int_equal(shell_exec("perfmon help nope"), SHELL_ERR_REPORTED);
    assert_non_null(strstr(fake_console_output(),
                           "perfmon: help: unknown subcommand 'nope'"));
    fake_console_reset();
    assert_int_equal(shell_exec("perfmon info extra"), SHELL_ERR_REPORTED);
    assert_string_equal(fake_console_output(),
                        "perfmon: info: no arguments expected, not 'extra'\n"
                        "usage: perfmon info [-j]\n");
    fake_console_reset();
    assert_int_equal(shell_exec("perfmon frobnicate"), SHELL_ERR_REPORTED);
    assert_non_null(strstr(fake_console_output(),
                           "perfmon: unknown subcommand 'frobnicate'"));
}

/* An error is one line and the usage's synopsis, not its option details. */
static void
test_error_one_line_and_synopsis(void **state)
{
    static const char usage[] = "usage: perfmon fake [-a] COMMAND\n"
                                "  -a  every CPU\n";

    (void)state;
    fake_console_reset();
    assert_int_equal(perfmon_cmd_error("fake", usage, "bad %s", "word"),
                     SHELL_ERR_REPORTED);
    assert_string_equal(fake_console_output(),
                        "perfmon: fake: bad word\n"
                        "usage: perfmon fake [-a] COMMAND\n");
}

static void
test_list_and_info(void **state)
{
    struct perfmon_event ev;
    const char *out;

    (void)state;
    fdev_add(0, 48, 4, true);
    fdev_add(1, 32, 4, false);
    perfmon_set_hw_status(true, "fake PMU, 4 counters");

    fake_console_reset();
    assert_int_equal(shell_exec("perfmon list"), 0);
    out = fake_console_output();
    assert_non_null(strstr(out, "cycles"));
    assert_non_null(strstr(out, "task-clock"));

    fake_console_reset();
    assert_int_equal(shell_exec("perfmon info"), 0);
    out = fake_console_output();
    assert_non_null(strstr(out, "fake PMU, 4 counters"));
    assert_non_null(strstr(out, "counters in use: none"));

    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_USER);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 1), 0);
    fake_console_reset();
    assert_int_equal(shell_exec("perfmon info"), 0);
    out = fake_console_output();
    assert_non_null(strstr(out, "counters in use: 1"));
    assert_non_null(strstr(out, "cpu 1"));
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

static void
test_resolve(void **state)
{
    struct perfmon_parse_event parsed[2];
    struct perfmon_resolved ev;

    (void)state;
    fdev_add(0, 48, 4, true);
    assert_int_equal(perfmon_parse_events("cycles:u,instructions", parsed, 2,
                                          NULL), 2);
    assert_int_equal(perfmon_resolve("stat", &parsed[0], &ev), 0);
    assert_int_equal(ev.generic, PERFMON_EV_CYCLE);
    assert_int_equal(ev.flags, PERFMON_EF_USER);
    assert_true(ev.supported);
    assert_ptr_equal(perfmon_resolve_dev_for("cycles"), &fdevs[0].dev);
    assert_null(perfmon_resolve_dev_for("task-clock"));

    /* Known, but no device here counts it. */
    assert_int_equal(perfmon_parse_events("cs", parsed, 1, NULL), 1);
    assert_int_equal(perfmon_resolve("stat", &parsed[0], &ev), 0);
    assert_false(ev.supported);

    fake_console_reset();
    assert_int_equal(perfmon_parse_events("cyclez", parsed, 1, NULL), 1);
    assert_int_equal(perfmon_resolve("stat", &parsed[0], &ev),
                     SHELL_ERR_REPORTED);
    assert_string_equal(fake_console_output(),
                        "perfmon: stat: unknown event 'cyclez'; did you mean "
                        "'cycles'? (see 'perfmon list')\n");
}

static void
test_lines_and_runner(void **state)
{
    struct perfmon_cmd_runner runner;
    struct perfmon_cmd_line line;
    char *argv[] = { "spin", "10", NULL };

    (void)state;
    perfmon_cmd_line_init(&line);

    for (unsigned int i = 0; i < 200; i++) {
        perfmon_cmd_line_add(&line, "%u      ", i);
    }

    assert_int_equal(line.len, sizeof(line.buf) - 1);
    fake_console_reset();
    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "%-10s", "x");
    perfmon_cmd_line_print(&line);
    assert_string_equal(fake_console_output(), "x\n");
    assert_int_equal(line.len, 0);

    assert_int_equal(perfmon_cmd_runner_start(&runner, "t", 2, argv),
                     -ENOMEM);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_getopt, setup),
        cmocka_unit_test_setup(test_dispatch, setup),
        cmocka_unit_test_setup(test_error_one_line_and_synopsis, setup),
        cmocka_unit_test_setup(test_list_and_info, setup),
        cmocka_unit_test_setup(test_resolve, setup),
        cmocka_unit_test_setup(test_lines_and_runner, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
