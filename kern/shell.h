/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The interactive shell on the serial console.  shell_run() shows the prompt
 * "tally> ", edits a line (echo, backspace, Ctrl-U, Ctrl-C, history on the
 * Up/Down arrows), splits it into words with cmdline_split() and runs the
 * command of that name.  Commands live in a registry that any module extends
 * with SHELL_COMMAND(), without editing the shell: each use places one
 * struct shell_cmd in the linker section "shell_cmds", and the shell walks
 * that section as an array.  The line editor is a pure state machine
 * (struct shell_line) whose only output is console_write(), so that it can
 * be tested on the host with a scripted console.
 *
 * The shell runs in one thread; none of this is meant for interrupt context
 * and nothing here takes a lock beyond the console's own.
 */

#ifndef KERN_SHELL_H
#define KERN_SHELL_H

#include <stdbool.h>
#include <stdint.h>

#include "kern/macros.h"

#define SHELL_PROMPT        "tally> "

/* Size of a line buffer, NUL included: lines hold at most 255 characters. */
#define SHELL_LINE_MAX      256

/* Number of previous lines the Up arrow can recall. */
#define SHELL_HISTORY_SIZE  16

/* Most words in one command line, the command name included. */
#define SHELL_MAX_ARGS      32

/*
 * Result convention for command functions:
 *
 *   0                      success;
 *   negative error code    failure: the shell prints "NAME: <error_str>";
 *   positive               failure the command has already explained with its
 *                          own message: the shell prints nothing more.
 *                          SHELL_ERR_REPORTED is the value to return.
 */
#define SHELL_ERR_REPORTED  1

/*
 * A shell command.  fn receives the words of the line, argv[0] being the
 * command name and argv[argc] NULL; it may modify the strings (they are a
 * private copy of the line).  Long-running commands poll shell_interrupted()
 * and stop, returning -EINTR, when it turns true.
 *
 * The alignment is part of the type so that every instance in the section
 * has the same size and stride: the section is then a plain array.
 */
struct shell_cmd {
    const char *name;       /* the word that runs it; unique */
    const char *args;       /* usage of the arguments, e.g. "[prefix]", or "" */
    const char *summary;    /* one line for help */
    int (*fn)(int argc, char **argv);
} __aligned(8);

/*
 * Register a command, at file scope in any source file:
 *
 *   SHELL_COMMAND(mem, "mem", "[-v]", "show memory usage", mem_cmd);
 *
 * ident only names the static variable (shell_cmd_IDENT).  The alignment is
 * repeated on the variable because GCC otherwise raises the alignment of
 * larger static objects (to 32 bytes on x86-64), which would put padding
 * between entries whenever the structure grows past a multiple of it.
 */
#define SHELL_COMMAND(ident, name_, args_, summary_, fn_)                   \
    static const struct shell_cmd shell_cmd_##ident                         \
        __used __section("shell_cmds") __aligned(8) = {                     \
        .name = (name_),                                                    \
        .args = (args_),                                                    \
        .summary = (summary_),                                              \
        .fn = (fn_),                                                        \
    }

/*
 * Return the registered command called name, or NULL when there is none.
 */
const struct shell_cmd *shell_cmd_lookup(const char *name);

/*
 * Line editor.
 *
 * The line being typed is kept in buf (NUL-terminated, cursor always at the
 * end).  Input beyond SHELL_LINE_MAX - 1 characters is dropped and not
 * echoed; control characters other than the editing keys and bytes >= 0x80
 * are not stored nor echoed.  Either condition sticks until the line ends
 * or is killed with Ctrl-U, and the line is then refused on Enter: the
 * editor prints why and returns SHELL_LINE_CANCEL, so that no partly
 * received command ever runs.
 *
 * History is a ring of the last SHELL_HISTORY_SIZE accepted non-blank lines,
 * a line equal to the most recent one not being stored again.  While the
 * user walks it with Up/Down, the line that was being typed is kept in saved
 * and comes back when Down walks past the most recent entry.
 */
enum shell_line_result {
    SHELL_LINE_CONTINUE,    /* keep feeding characters */
    SHELL_LINE_DONE,        /* buf holds a complete line to run */
    SHELL_LINE_CANCEL,      /* line dropped (Ctrl-C or refused): new prompt */
};

struct shell_line {
    char buf[SHELL_LINE_MAX];
    unsigned int len;           /* characters in buf, also the cursor */
    bool overflow;              /* characters were dropped: line too long */
    bool garbage;               /* a non-printable byte was typed */
    bool finished;              /* DONE or CANCEL returned: next input clears */
    int last_eol;               /* '\r' or '\n' that just ended a line, or 0 */
    int esc_state;              /* where we are in an escape sequence */

    char history[SHELL_HISTORY_SIZE][SHELL_LINE_MAX];
    unsigned int hist_count;    /* stored entries, up to SHELL_HISTORY_SIZE */
    unsigned int hist_next;     /* slot the next entry goes to */
    unsigned int hist_pos;      /* 0: editing; k: showing the k-th newest */

    char saved[SHELL_LINE_MAX]; /* the edited line while walking history */
    unsigned int saved_len;
    bool saved_overflow;
    bool saved_garbage;
};

/*
 * Initialize an editor: empty line, empty history.
 */
void shell_line_init(struct shell_line *line);

/*
 * Feed one input character c (0..255) to the editor, echoing through
 * console_write().  Return an enum shell_line_result, or -EINVAL (state
 * unchanged) when c is out of range.  After SHELL_LINE_DONE, buf stays valid
 * until the next call.  CR LF and LF CR each count as a single Enter.
 */
int shell_line_input(struct shell_line *line, int c);

/*
 * Split line (a copy of it: line itself is not modified) and run the
 * command, printing the shell's messages on failure: unknown command, too
 * many words, unterminated quote or trailing backslash, line too long, and
 * "NAME: <error_str>" for a negative command result.  Clear the interrupt
 * flag before the command runs.  Return 0 for a blank line, the command's
 * result, or -E2BIG (line longer than SHELL_LINE_MAX - 1 characters or more
 * than SHELL_MAX_ARGS words), -EINVAL (line NULL, unterminated quote or
 * trailing backslash), -ENOENT (unknown command).  May be called from inside
 * a command (for instance one that runs and measures another).
 */
int shell_exec(const char *line);

/*
 * Run an already split command line: look up argv[0], clear the interrupt
 * flag, call it and report a negative result as shell_exec() does.  argv
 * must hold argc words followed by NULL.  Return as shell_exec().
 */
int shell_exec_argv(int argc, char **argv);

/*
 * Print the prompt, read one line from the console and run it.  Return 0
 * once the line was handled (whatever its outcome) or -1 when the console
 * has no more input (only the host tests' console ends).
 */
int shell_run_once(void);

/*
 * The shell's main loop: shell_run_once() forever.
 */
void shell_run(void) __noreturn;

/*
 * True once the user has typed Ctrl-C since the current command started.
 * Polls the console without blocking; other characters typed meanwhile are
 * discarded.  The answer latches until shell_interrupt_clear() or the next
 * command.  Called from the thread running the command.  In a background
 * command's threads (kern/shell_job.h): true once `kill` named it; the
 * console is left alone and clearing does nothing.
 */
bool shell_interrupted(void);
void shell_interrupt_clear(void);

/*
 * Sleep until the clock reaches deadline (kern/clock.h ticks; false) or
 * the command is interrupted (true): Ctrl-C for a foreground command, which
 * waits on the console, `kill` for a background one, which naps and looks.
 */
bool shell_wait_interrupt(uint64_t deadline);

#endif /* KERN_SHELL_H */
