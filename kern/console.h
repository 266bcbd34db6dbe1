/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The system console: the serial port, for output and for the shell's input.
 *
 * Output is serialized by a console lock so that lines from different CPUs do
 * not interleave inside a single kprintf() call.  kprintf() may be called
 * from any context but NMI (an NMI handler that must report uses
 * console_write_nmi(), which skips the lock; it is for panics only).
 */

#ifndef KERN_CONSOLE_H
#define KERN_CONSOLE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/macros.h"

void console_write(const char *s, size_t n);
void console_write_nmi(const char *s, size_t n);

/* Block until a character arrives and return it (0..255). */
int console_getc(void);

/* Return the next input character, or -1 when none is waiting. */
int console_trygetc(void);

/*
 * Drop the input waiting up to and including the last character c in it;
 * nothing when there is no c.  Input still polled is left alone.
 */
void console_drop_through(int c);

/*
 * Sleep until input is waiting or ms milliseconds passed; true when input
 * is waiting (left unread).  It wakes early, returning false, while input
 * is polled (before the UART interrupt is routed) or another reader waits
 * for it.  Thread context: commands that wait, and stop on Ctrl-C.
 */
bool console_wait_input(uint64_t ms);

/* Enter panic mode: output no longer takes the console lock. */
void console_panic(void);

int kprintf(const char *fmt, ...) __format_printf(1, 2);
int kvprintf(const char *fmt, va_list ap);

#endif /* KERN_CONSOLE_H */
