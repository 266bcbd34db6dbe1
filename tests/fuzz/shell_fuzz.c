/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fuzz target: the shell's line editor and argument splitter, which see
 * every byte typed or pasted on the serial line.  The input is that byte
 * stream (escape sequences, control characters, overlong lines, history
 * walks).  Each finished line is split with cmdline_split() and run with
 * shell_exec() (no command is registered on the host: the shell's own
 * refusals run), and the raw input is also split whole, at a word limit
 * taken from its first byte.
 *
 * Checked: the editor's line stays NUL-terminated at len, below
 * SHELL_LINE_MAX; a split returns at most max_args words, each inside the
 * line, NULL after the last, and leaves line and argv untouched when it
 * fails.
 */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "kern/cmdline.h"
#include "kern/error.h"
#include "kern/shell.h"

void fake_console_reset(void);

#define SHELL_FUZZ_RAW_MAX  4096

static struct shell_line shell_fuzz_line;

static void
shell_fuzz_check_line(const struct shell_line *line)
{
    fuzz_check(line->len < SHELL_LINE_MAX);
    fuzz_check(line->buf[line->len] == '\0');
    fuzz_check(strlen(line->buf) == line->len);
    fuzz_check(line->hist_count <= SHELL_HISTORY_SIZE);
    fuzz_check(line->hist_pos <= line->hist_count);
}

static void
shell_fuzz_split(char *line, size_t size, unsigned int max_args)
{
    static char before[SHELL_FUZZ_RAW_MAX + 1];
    char *argv[SHELL_FUZZ_RAW_MAX + 2];
    int argc;

    memcpy(before, line, size);

    for (unsigned int i = 0; i <= max_args; i++) {
        argv[i] = (char *)&argv;        /* recognisable garbage */
    }

    argc = cmdline_split(line, argv, max_args);

    if (argc < 0) {
        fuzz_check(argc == -E2BIG || argc == -EINVAL);
        fuzz_check(memcmp(before, line, size) == 0);

        for (unsigned int i = 0; i <= max_args; i++) {
            fuzz_check(argv[i] == (char *)&argv);
        }

        return;
    }

    fuzz_check((unsigned int)argc <= max_args);
    fuzz_check(argv[argc] == NULL);

    for (int i = 0; i < argc; i++) {
        fuzz_check(argv[i] >= line && argv[i] < line + size);
        fuzz_check(argv[i] + strlen(argv[i]) < line + size);
    }
}

static void
shell_fuzz_done(const struct shell_line *line)
{
    char copy[SHELL_LINE_MAX];

    memcpy(copy, line->buf, line->len + 1);
    shell_fuzz_split(copy, line->len + 1, SHELL_MAX_ARGS);
    (void)shell_exec(line->buf);
    fake_console_reset();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char raw[SHELL_FUZZ_RAW_MAX + 1];
    size_t n = (size < SHELL_FUZZ_RAW_MAX) ? size : SHELL_FUZZ_RAW_MAX;

    shell_line_init(&shell_fuzz_line);
    fake_console_reset();

    for (size_t i = 0; i < size; i++) {
        int result = shell_line_input(&shell_fuzz_line, data[i]);

        fuzz_check(result == SHELL_LINE_CONTINUE || result == SHELL_LINE_DONE
                   || result == SHELL_LINE_CANCEL);
        shell_fuzz_check_line(&shell_fuzz_line);

        if (result == SHELL_LINE_DONE) {
            shell_fuzz_done(&shell_fuzz_line);
        }

        /* Keep the capture buffer from filling up on long inputs. */
        if ((i & 1023) == 1023) {
            fake_console_reset();
        }
    }

    fuzz_check(shell_line_input(&shell_fuzz_line, 256) == -EINVAL);
    fuzz_check(shell_line_input(&shell_fuzz_line, -1) == -EINVAL);

    memcpy(raw, data, n);
    raw[n] = '\0';
    shell_fuzz_split(raw, n + 1, (n == 0) ? 0 : data[0] % 64);
    return 0;
}
