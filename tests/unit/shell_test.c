/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the shell: the line editor fed key by key, command execution
 * and its messages, the help listing, the interrupt flag, and whole lines
 * read from a scripted console by shell_run_once().
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kern/console.h"
#include "kern/error.h"
#include "kern/shell.h"

void fake_console_set_input(const char *s, size_t n);
size_t fake_console_input_left(void);
const char *fake_console_output(void);
void fake_console_reset(void);

#define ESC "\x1b"

/* ---- test commands ------------------------------------------------------ */

static int record_calls;
static int record_argc;
static char record_argv[SHELL_MAX_ARGS + 1][SHELL_LINE_MAX];
static bool record_argv_terminated;

static int
record_cmd(int argc, char **argv)
{
    int i;

    record_calls++;
    record_argc = argc;

    for (i = 0; (i < argc) && (i <= SHELL_MAX_ARGS); i++) {
        snprintf(record_argv[i], sizeof(record_argv[i]), "%s", argv[i]);
    }

    record_argv_terminated = (argv[argc] == NULL);
    return 0;
}

static int
fail_cmd(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return -EIO;
}

static int
reported_cmd(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    kprintf("reported: explained here\n");
    return SHELL_ERR_REPORTED;
}

static int intr_seen;

static int
intr_cmd(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    intr_seen = shell_interrupted();
    return 0;
}

static int
nested_cmd(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return shell_exec("record inner 'x y'");
}

SHELL_COMMAND(record, "record", "[words...]", "remember its arguments",
              record_cmd);
SHELL_COMMAND(zeta, "zeta", "", "sorts last", record_cmd);
SHELL_COMMAND(fail, "fail", "", "fail with EIO", fail_cmd);
SHELL_COMMAND(alpha, "alpha", "N", "sorts first", record_cmd);
SHELL_COMMAND(reported, "reported", "", "fail with its own message",
              reported_cmd);
SHELL_COMMAND(intr, "intr", "", "sample the interrupt flag", intr_cmd);
SHELL_COMMAND(nested, "nested", "", "run record through shell_exec",
              nested_cmd);

/* ---- helpers ------------------------------------------------------------ */

static struct shell_line *test_line;

static int
setup(void **state)
{
    (void)state;
    test_line = malloc(sizeof(*test_line));
    assert_non_null(test_line);
    shell_line_init(test_line);
    fake_console_reset();
    record_calls = 0;
    record_argc = -1;
    intr_seen = -1;
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    free(test_line);
    return 0;
}

/*
 * Feed n bytes to the test editor; return the result of the last one and
 * check that every earlier one returned CONTINUE.
 */
static int
feed_n(const char *s, size_t n)
{
    size_t i;
    int result;

    assert_true(n > 0);

    for (i = 0; i < n - 1; i++) {
        assert_int_equal(shell_line_input(test_line, (unsigned char)s[i]),
                         SHELL_LINE_CONTINUE);
    }

    result = shell_line_input(test_line, (unsigned char)s[n - 1]);
    return result;
}

static int
feed(const char *s)
{
    return feed_n(s, strlen(s));
}

/* Enter one complete line (s ends with the Enter key) and expect DONE. */
static void
enter_line(const char *s, const char *expected)
{
    assert_int_equal(feed(s), SHELL_LINE_DONE);
    assert_string_equal(test_line->buf, expected);
}

/* Type keys that do not end the line; the line then reads expected. */
static void
edit_line(const char *keys, const char *expected)
{
    assert_int_equal(feed(keys), SHELL_LINE_CONTINUE);
    assert_string_equal(test_line->buf, expected);
}

static void
clear_output(void)
{
    fake_console_reset();
}

/* ---- line editor -------------------------------------------------------- */

static void
test_echo(void **state)
{
    (void)state;
    assert_int_equal(feed("ls -l"), SHELL_LINE_CONTINUE);
    assert_string_equal(fake_console_output(), "ls -l");
    assert_int_equal(feed("\r"), SHELL_LINE_DONE);
    assert_string_equal(test_line->buf, "ls -l");
    assert_string_equal(fake_console_output(), "ls -l\n");
}

static void
test_backspace(void **state)
{
    (void)state;

    /* Nothing to erase: nothing echoed, not refused as garbage. */
    assert_int_equal(feed("\x7f\x08\x7f"), SHELL_LINE_CONTINUE);
    assert_string_equal(fake_console_output(), "");

    assert_int_equal(feed("ab\x7f"), SHELL_LINE_CONTINUE);
    assert_string_equal(fake_console_output(), "ab\b \b");
    assert_int_equal(feed("\x08" "c\x08\x08\x08"), SHELL_LINE_CONTINUE);
    assert_string_equal(fake_console_output(),
                        "ab\b \b\b \bc\b \b");
    enter_line("ok\n", "ok");
}

static void
test_ctrl_u(void **state)
{
    (void)state;
    assert_int_equal(feed("abc\x15"), SHELL_LINE_CONTINUE);
    assert_string_equal(fake_console_output(), "abc\b \b\b \b\b \b");
    assert_int_equal(test_line->len, 0);

    /* Ctrl-U on an empty line echoes nothing. */
    clear_output();
    assert_int_equal(feed("\x15"), SHELL_LINE_CONTINUE);
    assert_string_equal(fake_console_output(), "");

    enter_line("x\r", "x");
}

static void
test_ctrl_c(void **state)
{
    (void)state;
    assert_int_equal(feed("abc\x03"), SHELL_LINE_CANCEL);
    assert_string_equal(fake_console_output(), "abc^C\n");

    /* A fresh line follows, and the dropped one is not in history. */
    enter_line("d\r", "d");
    assert_int_equal(test_line->hist_count, 1);
    edit_line(ESC "[A" ESC "[A", "d");
}

static void
test_enter_pairs(void **state)
{
    int done;
    const char *s;

    (void)state;

    /* CR LF and LF CR are one Enter each; CR CR and LF LF are two. */
    s = "a\r\nb\n\rc\r\rd\n\n";
    done = 0;

    for (; *s != '\0'; s++) {
        int r = shell_line_input(test_line, *s);

        if (r == SHELL_LINE_DONE) {
            static const char *const expect[] = { "a", "b", "c", "", "d", "" };

            assert_true(done < 6);
            assert_string_equal(test_line->buf, expect[done]);
            done++;
        } else {
            assert_int_equal(r, SHELL_LINE_CONTINUE);
        }
    }

    assert_int_equal(done, 6);
    assert_string_equal(fake_console_output(), "a\nb\nc\n\nd\n\n");
}

static void
test_history_walk(void **state)
{
    (void)state;
    enter_line("one\r", "one");
    enter_line("two\r", "two");
    enter_line("two\r", "two");     /* stored once */
    enter_line("\r", "");           /* not stored */
    enter_line("   \r", "   ");     /* blank: not stored */
    enter_line("three\r", "three");
    assert_int_equal(test_line->hist_count, 3);

    assert_int_equal(feed("pa"), SHELL_LINE_CONTINUE);
    clear_output();

    edit_line(ESC "[A", "three");
    assert_string_equal(fake_console_output(), "\b \b\b \bthree");

    edit_line(ESC "[A", "two");
    edit_line(ESC "OA", "one");

    /* Past the oldest entry: nothing changes, nothing is written. */
    clear_output();
    edit_line(ESC "[A" ESC "[A", "one");
    assert_string_equal(fake_console_output(), "");

    edit_line(ESC "[B", "two");
    edit_line(ESC "OB", "three");

    /* Down past the newest: the line being typed comes back. */
    clear_output();
    edit_line(ESC "[B", "pa");
    assert_string_equal(fake_console_output(),
                        "\b \b\b \b\b \b\b \b\b \bpa");

    clear_output();
    edit_line(ESC "[B", "pa");
    assert_string_equal(fake_console_output(), "");

    /* A recalled line can be edited and run. */
    assert_int_equal(feed("\x15" ESC "[A" ESC "[A"), SHELL_LINE_CONTINUE);
    enter_line("s\r", "twos");
    assert_int_equal(test_line->hist_count, 4);

    /* Down on an empty history, Up too: ignored. */
    shell_line_init(test_line);
    clear_output();
    assert_int_equal(feed(ESC "[A" ESC "[B"), SHELL_LINE_CONTINUE);
    assert_string_equal(fake_console_output(), "");
    enter_line("z\r", "z");
}

static void
test_history_ring(void **state)
{
    char s[16];
    int i;

    (void)state;

    for (i = 0; i < SHELL_HISTORY_SIZE + 4; i++) {
        snprintf(s, sizeof(s), "cmd%d\r", i);
        assert_int_equal(feed(s), SHELL_LINE_DONE);
    }

    assert_int_equal(test_line->hist_count, SHELL_HISTORY_SIZE);

    for (i = 0; i < SHELL_HISTORY_SIZE + 3; i++) {
        assert_int_equal(feed(ESC "[A"), SHELL_LINE_CONTINUE);
    }

    /* The oldest kept entry is the 5th line typed. */
    assert_string_equal(test_line->buf, "cmd4");
}

static void
test_escape_ignored(void **state)
{
    (void)state;
    assert_int_equal(feed("a" ESC "[C" ESC "[1;5D" ESC "OC" ESC "[3~"
                          ESC "x" "b"), SHELL_LINE_CONTINUE);
    assert_string_equal(fake_console_output(), "ab");
    enter_line("\r", "ab");

    /* A control byte cuts a sequence short and acts normally. */
    assert_int_equal(feed("q" ESC "[1\x03"), SHELL_LINE_CANCEL);
    enter_line("r" ESC "[\r", "r");
    enter_line(ESC ESC "[Dk\r", "k");
}

static void
test_overlong_line(void **state)
{
    char s[400];

    (void)state;
    memset(s, 'x', 300);
    s[300] = '\r';
    assert_int_equal(feed_n(s, 301), SHELL_LINE_CANCEL);

    /* Only the 255 stored characters were echoed. */
    memset(s, 'x', 255);
    strcpy(s + 255, "\nshell: line too long (max 255 characters)\n");
    assert_string_equal(fake_console_output(), s);
    assert_int_equal(test_line->hist_count, 0);

    /* Backspace does not make a truncated line acceptable... */
    memset(s, 'y', 260);
    memcpy(s + 260, "\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f\r", 9);
    assert_int_equal(feed_n(s, 269), SHELL_LINE_CANCEL);

    /* ...but Ctrl-U starts over. */
    memcpy(s + 260, "\x15ok\r", 4);
    assert_int_equal(feed_n(s, 264), SHELL_LINE_DONE);
    assert_string_equal(test_line->buf, "ok");

    /* Exactly 255 characters fit. */
    memset(s, 'z', 255);
    s[255] = '\r';
    assert_int_equal(feed_n(s, 256), SHELL_LINE_DONE);
    assert_int_equal(strlen(test_line->buf), 255);
}

/* A tab separates words like a blank: shown and kept as one. */
static void
test_tab_is_blank(void **state)
{
    (void)state;
    enter_line("perfmon\tstat\t\t-e cs\r", "perfmon stat  -e cs");
    assert_string_equal(fake_console_output(), "perfmon stat  -e cs\n");
}

static void
test_nonprintable(void **state)
{
    (void)state;
    assert_int_equal(feed_n("a\x01" "b\t\x00" "c\r", 7), SHELL_LINE_CANCEL);
    assert_string_equal(fake_console_output(),
                        "ab c\n"
                        "shell: ignored line with non-printable characters\n");
    assert_int_equal(test_line->hist_count, 0);

    /* Walking history keeps the garbage with the line it belongs to... */
    enter_line("ok\r", "ok");
    edit_line("a\x01" ESC "[A" ESC "[B", "a");
    assert_int_equal(feed("\r"), SHELL_LINE_CANCEL);

    /* ...and a recalled entry is clean. */
    assert_int_equal(feed("a\x01" ESC "[A"), SHELL_LINE_CONTINUE);
    enter_line("\r", "ok");

    /* Ctrl-U forgets the garbage. */
    assert_int_equal(feed("x\x02\x15"), SHELL_LINE_CONTINUE);
    enter_line("y\r", "y");
}

static void
test_high_bytes(void **state)
{
    int c;

    (void)state;

    for (c = 0x80; c <= 0xff; c++) {
        clear_output();
        assert_int_equal(shell_line_input(test_line, 'a'),
                         SHELL_LINE_CONTINUE);
        assert_int_equal(shell_line_input(test_line, c), SHELL_LINE_CONTINUE);
        assert_int_equal(shell_line_input(test_line, '\r'),
                         SHELL_LINE_CANCEL);
        assert_string_equal(fake_console_output(),
            "a\nshell: ignored line with non-printable characters\n");
    }

    assert_int_equal(test_line->hist_count, 0);
}

static void
test_input_out_of_range(void **state)
{
    (void)state;
    assert_int_equal(feed("ab"), SHELL_LINE_CONTINUE);
    assert_int_equal(shell_line_input(test_line, -1), -EINVAL);
    assert_int_equal(shell_line_input(test_line, 0x100), -EINVAL);
    enter_line("\r", "ab");
}

/* ---- execution ---------------------------------------------------------- */

static void
test_lookup(void **state)
{
    const struct shell_cmd *cmd;

    (void)state;
    cmd = shell_cmd_lookup("record");
    assert_non_null(cmd);
    assert_string_equal(cmd->name, "record");
    assert_ptr_equal(cmd->fn, record_cmd);
    assert_non_null(shell_cmd_lookup("help"));
    assert_null(shell_cmd_lookup("recor"));
    assert_null(shell_cmd_lookup(""));
    assert_null(shell_cmd_lookup(NULL));
}

static void
test_exec_quotes(void **state)
{
    (void)state;
    assert_int_equal(shell_exec("  record 'a b'  \"c  d\" e\\ f \"\"  "), 0);
    assert_int_equal(record_calls, 1);
    assert_int_equal(record_argc, 5);
    assert_string_equal(record_argv[0], "record");
    assert_string_equal(record_argv[1], "a b");
    assert_string_equal(record_argv[2], "c  d");
    assert_string_equal(record_argv[3], "e f");
    assert_string_equal(record_argv[4], "");
    assert_true(record_argv_terminated);
    assert_string_equal(fake_console_output(), "");
}

static void
test_exec_blank(void **state)
{
    (void)state;
    assert_int_equal(shell_exec(""), 0);
    assert_int_equal(shell_exec("  \t "), 0);
    assert_int_equal(record_calls, 0);
    assert_string_equal(fake_console_output(), "");
    assert_int_equal(shell_exec(NULL), -EINVAL);
}

static void
test_exec_unknown(void **state)
{
    (void)state;
    assert_int_equal(shell_exec("xyz 1 2"), -ENOENT);
    assert_string_equal(fake_console_output(),
                        "shell: unknown command 'xyz' (type 'help')\n");
}

static void
test_exec_errors(void **state)
{
    (void)state;
    assert_int_equal(shell_exec("fail"), -EIO);
    assert_string_equal(fake_console_output(), "fail: input/output error\n");

    clear_output();
    assert_int_equal(shell_exec("reported"), SHELL_ERR_REPORTED);
    assert_string_equal(fake_console_output(), "reported: explained here\n");
}

static void
test_exec_too_many_args(void **state)
{
    char line[SHELL_LINE_MAX];
    int i;

    (void)state;

    /* record + 31 words = 32: accepted. */
    strcpy(line, "record");

    for (i = 1; i < SHELL_MAX_ARGS; i++) {
        strcat(line, " w");
    }

    assert_int_equal(shell_exec(line), 0);
    assert_int_equal(record_argc, SHELL_MAX_ARGS);
    assert_true(record_argv_terminated);

    strcat(line, " w");
    assert_int_equal(shell_exec(line), -E2BIG);
    assert_int_equal(record_calls, 1);
    assert_string_equal(fake_console_output(),
                        "shell: too many arguments (max 32)\n");
}

static void
test_exec_bad_quotes(void **state)
{
    (void)state;
    assert_int_equal(shell_exec("record 'abc"), -EINVAL);
    assert_int_equal(shell_exec("record \"abc"), -EINVAL);
    assert_int_equal(shell_exec("record abc\\"), -EINVAL);
    assert_int_equal(record_calls, 0);
    assert_string_equal(fake_console_output(),
        "shell: unterminated quote or trailing backslash\n"
        "shell: unterminated quote or trailing backslash\n"
        "shell: unterminated quote or trailing backslash\n");
}

static void
test_exec_long_line(void **state)
{
    char line[SHELL_LINE_MAX + 10];

    (void)state;
    strcpy(line, "record ");
    memset(line + 7, 'a', sizeof(line) - 8);
    line[sizeof(line) - 1] = '\0';
    assert_int_equal(shell_exec(line), -E2BIG);
    assert_int_equal(record_calls, 0);
    assert_string_equal(fake_console_output(),
                        "shell: line too long (max 255 characters)\n");

    /* 255 characters are fine. */
    line[SHELL_LINE_MAX - 1] = '\0';
    assert_int_equal(shell_exec(line), 0);
    assert_int_equal(strlen(record_argv[1]), SHELL_LINE_MAX - 1 - 7);
}

static void
test_exec_nested(void **state)
{
    (void)state;
    assert_int_equal(shell_exec("nested"), 0);
    assert_int_equal(record_argc, 3);
    assert_string_equal(record_argv[1], "inner");
    assert_string_equal(record_argv[2], "x y");
}

static void
test_exec_argv(void **state)
{
    char a0[] = "record", a1[] = "q";
    char *argv[] = { a0, a1, NULL };

    (void)state;
    assert_int_equal(shell_exec_argv(2, argv), 0);
    assert_int_equal(record_argc, 2);
    assert_string_equal(record_argv[1], "q");
    assert_int_equal(shell_exec_argv(0, argv), 0);
    assert_int_equal(record_calls, 1);
}

/* ---- help --------------------------------------------------------------- */

static void
test_help_list(void **state)
{
    (void)state;
    assert_int_equal(shell_exec("help"), 0);
    assert_string_equal(fake_console_output(),
        "  alpha N            - sorts first\n"
        "  fail               - fail with EIO\n"
        "  help [command]     - list the commands, or show how to use one\n"
        "  intr               - sample the interrupt flag\n"
        "  nested             - run record through shell_exec\n"
        "  record [words...]  - remember its arguments\n"
        "  reported           - fail with its own message\n"
        "  zeta               - sorts last\n");
}

static void
test_help_one(void **state)
{
    (void)state;
    assert_int_equal(shell_exec("help record"), 0);
    assert_string_equal(fake_console_output(),
                        "usage: record [words...]\n"
                        "  remember its arguments\n");

    clear_output();
    assert_int_equal(shell_exec("help zeta"), 0);
    assert_string_equal(fake_console_output(),
                        "usage: zeta\n  sorts last\n");

    clear_output();
    assert_int_equal(shell_exec("help nope"), SHELL_ERR_REPORTED);
    assert_string_equal(fake_console_output(),
                        "help: no such command 'nope'\n");

    clear_output();
    assert_int_equal(shell_exec("help a b"), SHELL_ERR_REPORTED);
    assert_string_equal(fake_console_output(), "usage: help [command]\n");
}

/* ---- interruption ------------------------------------------------------- */

static void
test_interrupt(void **state)
{
    (void)state;
    shell_interrupt_clear();

    fake_console_set_input("ab", 2);
    assert_false(shell_interrupted());
    assert_int_equal(fake_console_input_left(), 0);

    /* Ctrl-C latches; what follows it stays unread. */
    fake_console_set_input("x\x03yz", 4);
    assert_true(shell_interrupted());
    assert_int_equal(fake_console_input_left(), 2);
    assert_true(shell_interrupted());
    assert_int_equal(fake_console_input_left(), 2);

    shell_interrupt_clear();
    assert_false(shell_interrupted());
    assert_int_equal(fake_console_input_left(), 0);

    /* shell_exec() clears a stale flag before the command runs. */
    fake_console_set_input("\x03", 1);
    assert_true(shell_interrupted());
    assert_int_equal(shell_exec("intr"), 0);
    assert_int_equal(intr_seen, 0);

    fake_console_set_input("\x03", 1);
    assert_int_equal(shell_exec("intr"), 0);
    assert_int_equal(intr_seen, 1);
    shell_interrupt_clear();
}

/* ---- whole lines from the console --------------------------------------- */

static void
test_run_once(void **state)
{
    static const char script[] = "record 'q r'\r\n"
                                 "bogus\r\n"
                                 "ab\x03"
                                 "\r\n"
                                 "fail\r\n";

    (void)state;
    fake_console_set_input(script, sizeof(script) - 1);

    assert_int_equal(shell_run_once(), 0);
    assert_int_equal(record_calls, 1);
    assert_int_equal(record_argc, 2);
    assert_string_equal(record_argv[1], "q r");

    /*
     * All of it was typed while record ran: the Ctrl-C was meant for it,
     * and goes with what was typed before it (bogus, ab).
     */
    assert_int_equal(shell_run_once(), 0);     /* empty line */
    assert_int_equal(shell_run_once(), 0);     /* fail */
    assert_int_equal(shell_run_once(), -1);    /* swallows LF, then ends */

    assert_string_equal(fake_console_output(),
        "tally> record 'q r'\n"
        "tally> \n"
        "tally> fail\n"
        "fail: input/output error\n"
        "tally> ");
}

/* A Ctrl-C at the prompt cancels the line being typed. */
static void
test_run_once_ctrl_c_at_prompt(void **state)
{
    (void)state;
    fake_console_set_input("ab\x03", 3);
    assert_int_equal(shell_run_once(), 0);
    assert_int_equal(record_calls, 0);
    assert_string_equal(fake_console_output(), "tally> ab^C\n");
}

/*
 * A Ctrl-C typed while a command runs does not cancel the next line, and
 * what is typed after it is kept.
 */
static void
test_run_once_ctrl_c_does_not_leak(void **state)
{
    static const char script[] = "bogus\r" "\x03" "record x\r";

    (void)state;
    fake_console_set_input(script, sizeof(script) - 1);
    assert_int_equal(shell_run_once(), 0);
    assert_int_equal(shell_run_once(), 0);
    assert_int_equal(record_calls, 1);
    assert_string_equal(record_argv[1], "x");
    assert_string_equal(fake_console_output(),
        "tally> bogus\n"
        "shell: unknown command 'bogus' (type 'help')\n"
        "tally> record x\n");
}

static void
test_run_once_refused(void **state)
{
    char script[300];

    (void)state;
    memset(script, 'r', sizeof(script));
    memcpy(script, "record ", 7);
    script[sizeof(script) - 1] = '\n';
    fake_console_set_input(script, sizeof(script));
    assert_int_equal(shell_run_once(), 0);
    assert_int_equal(record_calls, 0);
    assert_non_null(strstr(fake_console_output(),
                           "\nshell: line too long (max 255 characters)\n"));

    clear_output();
    fake_console_set_input("record \xff\n", 9);
    assert_int_equal(shell_run_once(), 0);
    assert_int_equal(record_calls, 0);
    assert_string_equal(fake_console_output(),
        "tally> record \n"
        "shell: ignored line with non-printable characters\n");

    /* History recall through the console, then the line runs. */
    clear_output();
    fake_console_set_input("record h\n" ESC "[A\n", 13);
    assert_int_equal(shell_run_once(), 0);
    assert_int_equal(shell_run_once(), 0);
    assert_int_equal(record_calls, 2);
    assert_string_equal(record_argv[1], "h");
    assert_int_equal(shell_run_once(), -1);
}

/* Every test starts with a fresh line editor and an empty console. */
#define T(fn)   cmocka_unit_test_setup_teardown(fn, setup, teardown)

int
main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_echo),
        T(test_backspace),
        T(test_ctrl_u),
        T(test_ctrl_c),
        T(test_enter_pairs),
        T(test_history_walk),
        T(test_history_ring),
        T(test_escape_ignored),
        T(test_overlong_line),
        T(test_tab_is_blank),
        T(test_nonprintable),
        T(test_high_bytes),
        T(test_input_out_of_range),
        T(test_lookup),
        T(test_exec_quotes),
        T(test_exec_blank),
        T(test_exec_unknown),
        T(test_exec_errors),
        T(test_exec_too_many_args),
        T(test_exec_bad_quotes),
        T(test_exec_long_line),
        T(test_exec_nested),
        T(test_exec_argv),
        T(test_help_list),
        T(test_help_one),
        T(test_interrupt),
        T(test_run_once),
        T(test_run_once_ctrl_c_at_prompt),
        T(test_run_once_ctrl_c_does_not_leak),
        T(test_run_once_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
