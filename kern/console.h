/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The system console: the serial port, for output and for the shell's input;
 * and the auxiliary port, a second serial port that only carries bytes out.
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

/*
 * The auxiliary port (COM2): output only, 8-bit clean, no newline
 * translation; `perfmon record` streams its recordings on it.  It may be
 * missing.  console_aux_setup() probes it once and returns whether it is
 * there (later calls give the first answer).  console_aux_write() sends
 * size bytes on a port set up and returns 0, or -EIO when the port stopped
 * taking bytes (those from that point on were not sent).  Thread context,
 * one writer at a time: the caller serialises.
 */
bool console_aux_setup(void);
int console_aux_write(const void *buf, size_t size);

int kprintf(const char *fmt, ...) __format_printf(1, 2);
int kvprintf(const char *fmt, va_list ap);

#endif /* KERN_CONSOLE_H */
