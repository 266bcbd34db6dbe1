/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Scripted fake of the console for host tests.  Input comes from a script
 * set with fake_console_set_input(): console_getc() and console_trygetc()
 * return its bytes in order and -1 once it is exhausted (the real
 * console_getc() would block forever instead).  Everything written, by
 * console_write() or kprintf(), is appended to a capture buffer that a test
 * reads with fake_console_output() and empties with fake_console_reset().
 *
 * The fake's own interface is declared by each test that uses it:
 *
 *   void fake_console_set_input(const char *s, size_t n);
 *   size_t fake_console_input_left(void);
 *   const char *fake_console_output(void);
 *   void fake_console_reset(void);
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "kern/console.h"

#define FAKE_CONSOLE_OUT_MAX    (64 * 1024)
#define FAKE_CONSOLE_IN_MAX     (8 * 1024)

static char fake_console_out[FAKE_CONSOLE_OUT_MAX];
static size_t fake_console_out_len;

static unsigned char fake_console_in[FAKE_CONSOLE_IN_MAX];
static size_t fake_console_in_len;
static size_t fake_console_in_pos;

void fake_console_set_input(const char *s, size_t n);
size_t fake_console_input_left(void);
const char *fake_console_output(void);
void fake_console_reset(void);

/* Replace the pending input with the n bytes at s (may include NULs). */
void
fake_console_set_input(const char *s, size_t n)
{
    if (n > sizeof(fake_console_in)) {
        n = sizeof(fake_console_in);
    }

    memcpy(fake_console_in, s, n);
    fake_console_in_len = n;
    fake_console_in_pos = 0;
}

size_t
fake_console_input_left(void)
{
    return fake_console_in_len - fake_console_in_pos;
}

/* Everything written since the last reset, NUL-terminated. */
const char *
fake_console_output(void)
{
    return fake_console_out;
}

/* Forget the captured output and any pending input. */
void
fake_console_reset(void)
{
    fake_console_out_len = 0;
    fake_console_out[0] = '\0';
    fake_console_in_len = 0;
    fake_console_in_pos = 0;
}

void
console_write(const char *s, size_t n)
{
    size_t room;

    /* Keep one byte for the terminating NUL; excess output is dropped. */
    room = sizeof(fake_console_out) - 1 - fake_console_out_len;

    if (n > room) {
        n = room;
    }

    memcpy(fake_console_out + fake_console_out_len, s, n);
    fake_console_out_len += n;
    fake_console_out[fake_console_out_len] = '\0';
}

void
console_write_nmi(const char *s, size_t n)
{
    console_write(s, n);
}

int
console_getc(void)
{
    if (fake_console_in_pos >= fake_console_in_len) {
        return -1;
    }

    return fake_console_in[fake_console_in_pos++];
}

int
console_trygetc(void)
{
    return console_getc();
}

void
console_drop_through(int c)
{
    for (size_t i = fake_console_in_len; i > fake_console_in_pos; i--) {
        if ((unsigned char)fake_console_in[i - 1] == c) {
            fake_console_in_pos = i;
            break;
        }
    }
}

int
kvprintf(const char *fmt, va_list ap)
{
    char buf[1024];
    int n;

    n = vsnprintf(buf, sizeof(buf), fmt, ap);

    if (n > 0) {
        console_write(buf, ((size_t)n < sizeof(buf)) ? (size_t)n
                                                      : sizeof(buf) - 1);
    }

    return n;
}

int
kprintf(const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = kvprintf(fmt, ap);
    va_end(ap);
    return n;
}
