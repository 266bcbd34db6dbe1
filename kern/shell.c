/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The interactive shell: command registry, line editor, command execution
 * (in the background with a trailing '&', kern/shell_job.c), interruption
 * and the built-in help command.
 */

#include <stdbool.h>
#include <stddef.h>

#include "kern/assert.h"
#include "kern/clock.h"
#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/shell.h"
#include "kern/shell_job.h"
#include "kern/string.h"
#include "kern/thread.h"

#define SHELL_CTRL_C        0x03
#define SHELL_CTRL_U        0x15
#define SHELL_BS            0x08
#define SHELL_DEL           0x7f
#define SHELL_ESC           0x1b

/* Longest nap of a background command's shell_wait_interrupt(). */
#define SHELL_WAIT_NAP_MS   20

/* States of the escape-sequence parser (struct shell_line.esc_state). */
enum {
    SHELL_ESC_NONE,
    SHELL_ESC_START,        /* got ESC */
    SHELL_ESC_CSI,          /* got ESC [, reading parameters */
    SHELL_ESC_SS3,          /* got ESC O, expecting one final byte */
};

/* Bounds of the registry, defined by the linker. */
extern const struct shell_cmd __start_shell_cmds[];
extern const struct shell_cmd __stop_shell_cmds[];

static bool shell_interrupt_flag;

/* The console's editor; its history is too big for a thread stack. */
static struct shell_line shell_console_line;
static bool shell_console_line_ready;

const struct shell_cmd *
shell_cmd_lookup(const char *name)
{
    const struct shell_cmd *cmd;

    if (name == NULL) {
        return NULL;
    }

    for (cmd = __start_shell_cmds; cmd < __stop_shell_cmds; cmd++) {
        if (strcmp(cmd->name, name) == 0) {
            return cmd;
        }
    }

    return NULL;
}

/* ---- line editor -------------------------------------------------------- */

void
shell_line_init(struct shell_line *line)
{
    memset(line, 0, sizeof(*line));
    line->esc_state = SHELL_ESC_NONE;
}

static void
shell_line_clear(struct shell_line *line)
{
    line->buf[0] = '\0';
    line->len = 0;
    line->overflow = false;
    line->garbage = false;
    line->hist_pos = 0;
}

/* Erase the shown line from the terminal, leaving the cursor after the prompt. */
static void
shell_line_erase_shown(const struct shell_line *line)
{
    unsigned int i;

    for (i = 0; i < line->len; i++) {
        console_write("\b \b", 3);
    }
}

static void
shell_line_show(struct shell_line *line, const char *s, unsigned int len,
                bool overflow, bool garbage)
{
    shell_line_erase_shown(line);
    memcpy(line->buf, s, len);
    line->buf[len] = '\0';
    line->len = len;
    line->overflow = overflow;
    line->garbage = garbage;
    console_write(line->buf, len);
}

static const char *
shell_line_history_entry(const struct shell_line *line, unsigned int k)
{
    unsigned int index;

    assert((k >= 1) && (k <= line->hist_count));
    index = (line->hist_next + SHELL_HISTORY_SIZE - k) % SHELL_HISTORY_SIZE;
    return line->history[index];
}

static void
shell_line_history_up(struct shell_line *line)
{
    const char *entry;

    if (line->hist_pos >= line->hist_count) {
        return;
    }

    if (line->hist_pos == 0) {
        memcpy(line->saved, line->buf, line->len + 1);
        line->saved_len = line->len;
        line->saved_overflow = line->overflow;
        line->saved_garbage = line->garbage;
    }

    line->hist_pos++;
    entry = shell_line_history_entry(line, line->hist_pos);
    shell_line_show(line, entry, strlen(entry), false, false);
}

static void
shell_line_history_down(struct shell_line *line)
{
    const char *entry;

    if (line->hist_pos == 0) {
        return;
    }

    line->hist_pos--;

    if (line->hist_pos == 0) {
        shell_line_show(line, line->saved, line->saved_len,
                        line->saved_overflow, line->saved_garbage);
    } else {
        entry = shell_line_history_entry(line, line->hist_pos);
        shell_line_show(line, entry, strlen(entry), false, false);
    }
}

static bool
shell_line_blank(const char *s)
{
    for (; *s != '\0'; s++) {
        if ((*s != ' ') && (*s != '\t')) {
            return false;
        }
    }

    return true;
}

static void
shell_line_history_add(struct shell_line *line)
{
    if (shell_line_blank(line->buf)) {
        return;
    }

    if ((line->hist_count > 0)
        && (strcmp(shell_line_history_entry(line, 1), line->buf) == 0)) {
        return;
    }

    memcpy(line->history[line->hist_next], line->buf, line->len + 1);
    line->hist_next = (line->hist_next + 1) % SHELL_HISTORY_SIZE;

    if (line->hist_count < SHELL_HISTORY_SIZE) {
        line->hist_count++;
    }
}

static int
shell_line_enter(struct shell_line *line, int c)
{
    line->last_eol = c;
    line->finished = true;
    console_write("\n", 1);

    if (line->overflow) {
        kprintf("shell: line too long (max %d characters)\n",
                SHELL_LINE_MAX - 1);
        return SHELL_LINE_CANCEL;
    }

    if (line->garbage) {
        kprintf("shell: ignored line with non-printable characters\n");
        return SHELL_LINE_CANCEL;
    }

    shell_line_history_add(line);
    return SHELL_LINE_DONE;
}

/*
 * The byte that ends a CSI or SS3 sequence: Up and Down walk the history,
 * any other final byte is swallowed with its sequence.  Return false when
 * c is no final byte, and so must be handled as an ordinary key.
 */
static bool
shell_line_escape_final(struct shell_line *line, int c)
{
    if ((c < 0x40) || (c > 0x7e)) {
        return false;
    }

    if (c == 'A') {
        shell_line_history_up(line);
    } else if (c == 'B') {
        shell_line_history_down(line);
    }

    return true;
}

/*
 * Advance the escape-sequence parser with c.  Return true when c was part of
 * a sequence (and so consumed), false when c ended an invalid sequence and
 * must be handled as an ordinary key.  Sequences other than Up and Down are
 * swallowed whole so that their tails never show up as typed text.
 */
static bool
shell_line_escape(struct shell_line *line, int c)
{
    switch (line->esc_state) {
    case SHELL_ESC_START:
        if (c == '[') {
            line->esc_state = SHELL_ESC_CSI;
            return true;
        } else if (c == 'O') {
            line->esc_state = SHELL_ESC_SS3;
            return true;
        }

        line->esc_state = SHELL_ESC_NONE;

        /* ESC + printable: an Alt- chord; ignore both. */
        return (c >= 0x20) && (c < 0x7f);

    case SHELL_ESC_CSI:
        if ((c >= 0x20) && (c <= 0x3f)) {
            /* Parameter and intermediate bytes: "1;5" in ESC [ 1 ; 5 D. */
            return true;
        }

        line->esc_state = SHELL_ESC_NONE;
        return shell_line_escape_final(line, c);

    case SHELL_ESC_SS3:
        line->esc_state = SHELL_ESC_NONE;
        return shell_line_escape_final(line, c);

    default:
        line->esc_state = SHELL_ESC_NONE;
        return false;
    }
}

int
shell_line_input(struct shell_line *line, int c)
{
    int last_eol;
    char ch;

    if ((c < 0) || (c > 0xff)) {
        return -EINVAL;
    }

    last_eol = line->last_eol;
    line->last_eol = 0;

    if (line->finished) {
        line->finished = false;
        shell_line_clear(line);
    }

    /* The second half of a CR LF or LF CR pair. */
    if (((c == '\r') && (last_eol == '\n'))
        || ((c == '\n') && (last_eol == '\r'))) {
        return SHELL_LINE_CONTINUE;
    }

    if ((line->esc_state != SHELL_ESC_NONE) && shell_line_escape(line, c)) {
        return SHELL_LINE_CONTINUE;
    }

    switch (c) {
    case '\r':
    case '\n':
        return shell_line_enter(line, c);

    case SHELL_CTRL_C:
        console_write("^C\n", 3);
        shell_line_clear(line);
        line->finished = true;
        return SHELL_LINE_CANCEL;

    case SHELL_CTRL_U:
        shell_line_erase_shown(line);
        shell_line_clear(line);
        return SHELL_LINE_CONTINUE;

    case SHELL_BS:
    case SHELL_DEL:
        if (line->len > 0) {
            line->len--;
            line->buf[line->len] = '\0';
            console_write("\b \b", 3);
        }

        return SHELL_LINE_CONTINUE;

    case SHELL_ESC:
        line->esc_state = SHELL_ESC_START;
        return SHELL_LINE_CONTINUE;

    /* A tab separates words like a blank (pasted commands have them). */
    case '\t':
        c = ' ';
        break;
    }

    if ((c < 0x20) || (c >= 0x7f)) {
        line->garbage = true;
        return SHELL_LINE_CONTINUE;
    }

    if (line->len >= (SHELL_LINE_MAX - 1)) {
        line->overflow = true;
        return SHELL_LINE_CONTINUE;
    }

    ch = (char)c;
    line->buf[line->len] = ch;
    line->len++;
    line->buf[line->len] = '\0';
    console_write(&ch, 1);
    return SHELL_LINE_CONTINUE;
}

/* ---- execution ---------------------------------------------------------- */

int
shell_exec_argv(int argc, char **argv)
{
    const struct shell_cmd *cmd;
    int error;

    if ((argc <= 0) || (argv == NULL) || (argv[0] == NULL)) {
        return 0;
    }

    cmd = shell_cmd_lookup(argv[0]);

    if (cmd == NULL) {
        kprintf("shell: unknown command '%s' (type 'help')\n", argv[0]);
        return -ENOENT;
    }

    shell_interrupt_clear();
    error = cmd->fn(argc, argv);

    if (error < 0) {
        kprintf("%s: %s\n", cmd->name, error_str(error));
    }

    return error;
}

/*
 * Whether the line ends in '&' (a word of its own, or the last word's
 * last character): then it is taken off.
 */
static bool
shell_background(int *argcp, char **argv)
{
    char *last;
    size_t len;

    if (*argcp == 0) {
        return false;
    }

    last = argv[*argcp - 1];
    len = strlen(last);

    if (len == 0 || last[len - 1] != '&') {
        return false;
    }

    if (len == 1) {
        argv[--*argcp] = NULL;
    } else {
        last[len - 1] = '\0';
    }

    return true;
}

static int
shell_exec_background(int argc, char **argv)
{
    int error;

    if (argc == 0) {
        kprintf("shell: '&' runs a command in the background: which one?\n");
        return -EINVAL;
    }

    if (shell_job_self() != NULL) {
        kprintf("shell: a background command cannot start another\n");
        return -EINVAL;
    }

    if (shell_cmd_lookup(argv[0]) == NULL) {
        kprintf("shell: unknown command '%s' (type 'help')\n", argv[0]);
        return -ENOENT;
    }

    error = shell_job_start(argc, argv);

    if (error == -EAGAIN) {
        kprintf("shell: %d background commands already run (see jobs)\n",
                SHELL_JOB_MAX);
    } else if (error) {
        kprintf("shell: cannot start a background command: %s\n",
                error_str(error));
    }

    return error;
}

int
shell_exec(const char *line)
{
    char buf[SHELL_LINE_MAX];
    char *argv[SHELL_MAX_ARGS + 1];
    size_t len;
    int argc;

    if (line == NULL) {
        return -EINVAL;
    }

    len = strnlen(line, sizeof(buf));

    if (len >= sizeof(buf)) {
        kprintf("shell: line too long (max %d characters)\n",
                SHELL_LINE_MAX - 1);
        return -E2BIG;
    }

    memcpy(buf, line, len + 1);

    argc = cmdline_split(buf, argv, SHELL_MAX_ARGS);

    if (argc == -E2BIG) {
        kprintf("shell: too many arguments (max %d)\n", SHELL_MAX_ARGS);
        return argc;
    } else if (argc < 0) {
        kprintf("shell: unterminated quote or trailing backslash\n");
        return argc;
    }

    if (shell_background(&argc, argv)) {
        return shell_exec_background(argc, argv);
    }

    return shell_exec_argv(argc, argv);
}

int
shell_run_once(void)
{
    struct shell_line *line;
    int c, result;

    line = &shell_console_line;

    if (!shell_console_line_ready) {
        shell_line_init(line);
        shell_console_line_ready = true;
    }

    shell_job_reap();
    console_write(SHELL_PROMPT, sizeof(SHELL_PROMPT) - 1);

    do {
        c = console_getc();

        if (c < 0) {
            return -1;
        }

        result = shell_line_input(line, c);
    } while (result == SHELL_LINE_CONTINUE);

    if (result == SHELL_LINE_DONE) {
        shell_exec(line->buf);

        /*
         * A Ctrl-C typed while the command ran was meant for it (which
         * may not have looked for one, or ended first): it must not
         * cancel the next line.  Drop it with what was typed before it;
         * what follows it is typed ahead, kept.
         */
        console_drop_through(SHELL_CTRL_C);
    }

    return 0;
}

void
shell_run(void)
{
    for (;;) {
        shell_run_once();
    }
}

/* ---- interruption ------------------------------------------------------- */

bool
shell_interrupted(void)
{
    struct shell_job *job = shell_job_self();
    int c;

    /* A background command stops on kill; the console is not its. */
    if (job != NULL) {
        return shell_job_killed(job);
    }

    while (!READ_ONCE(shell_interrupt_flag)) {
        c = console_trygetc();

        if (c < 0) {
            break;
        }

        if (c == SHELL_CTRL_C) {
            WRITE_ONCE(shell_interrupt_flag, true);
        }
    }

    return READ_ONCE(shell_interrupt_flag);
}

void
shell_interrupt_clear(void)
{
    if (shell_job_self() == NULL) {
        WRITE_ONCE(shell_interrupt_flag, false);
    }
}

bool
shell_wait_interrupt(uint64_t deadline)
{
    uint64_t now;

    while ((now = clock_get_time()) < deadline) {
        if (shell_job_self() != NULL) {
            thread_msleep(MIN(clock_ms_from_ticks(deadline - now) + 1,
                              SHELL_WAIT_NAP_MS));

            if (shell_interrupted()) {
                return true;
            }
        } else if (console_wait_input(clock_ms_from_ticks(deadline - now))
                   && shell_interrupted()) {
            return true;
        }
    }

    return false;
}

/* ---- help --------------------------------------------------------------- */

/*
 * Return the command that sorts first by name after prev (all of them when
 * prev is NULL), or NULL at the end.  Quadratic, but without a copy of the
 * registry to sort and with a few dozen commands at most.
 */
static const struct shell_cmd *
shell_cmd_next_sorted(const struct shell_cmd *prev)
{
    const struct shell_cmd *cmd, *best;

    best = NULL;

    for (cmd = __start_shell_cmds; cmd < __stop_shell_cmds; cmd++) {
        if ((prev != NULL) && (strcmp(cmd->name, prev->name) <= 0)) {
            continue;
        }

        if ((best == NULL) || (strcmp(cmd->name, best->name) < 0)) {
            best = cmd;
        }
    }

    return best;
}

static int
shell_cmd_usage_width(const struct shell_cmd *cmd)
{
    int width;

    width = (int)strlen(cmd->name);

    if (cmd->args[0] != '\0') {
        width += 1 + (int)strlen(cmd->args);
    }

    return width;
}

static void
shell_cmd_print_usage(const struct shell_cmd *cmd, int width)
{
    int pad;

    /* Never negative: a negative '*' width would mean left-justify. */
    pad = MAX(0, width - shell_cmd_usage_width(cmd));

    if (cmd->args[0] == '\0') {
        kprintf("%s%*s", cmd->name, pad, "");
    } else {
        kprintf("%s %s%*s", cmd->name, cmd->args, pad, "");
    }
}

static int
shell_help(int argc, char **argv)
{
    const struct shell_cmd *cmd;
    int width;

    if (argc > 2) {
        kprintf("usage: help [command]\n");
        return SHELL_ERR_REPORTED;
    }

    if (argc == 2) {
        cmd = shell_cmd_lookup(argv[1]);

        if (cmd == NULL) {
            kprintf("help: no such command '%s'\n", argv[1]);
            return SHELL_ERR_REPORTED;
        }

        kprintf("usage: ");
        shell_cmd_print_usage(cmd, 0);
        kprintf("\n  %s\n", cmd->summary);
        return 0;
    }

    width = 0;

    for (cmd = __start_shell_cmds; cmd < __stop_shell_cmds; cmd++) {
        width = MAX(width, shell_cmd_usage_width(cmd));
    }

    for (cmd = shell_cmd_next_sorted(NULL); cmd != NULL;
         cmd = shell_cmd_next_sorted(cmd)) {
        kprintf("  ");
        shell_cmd_print_usage(cmd, width);
        kprintf("  - %s\n", cmd->summary);
    }

    return 0;
}

SHELL_COMMAND(help, "help", "[command]",
              "list the commands, or show how to use one", shell_help);
