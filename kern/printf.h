/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * printf-style formatting, with no I/O of its own: fmt_vformat() hands the
 * produced text in pieces to an output callback (kprintf() passes the
 * console, kvsnprintf() a buffer).
 *
 * Conversions: %d %i %u %x %X %o %c %s %p %%.  Flags: '-' '0' '+' ' ' '#'
 * and '\'' (group the digits of %d %i %u in thousands with ',', as in
 * "1,234,567"; zeros added by a precision or the '0' flag are not grouped).
 * Field width and precision, either of them may be '*' (a negative '*' width
 * means '-' and that width; a negative '*' precision means none).  Length
 * modifiers: hh h l ll z j t.  %s of NULL prints "(null)".  %p prints "0x"
 * and 16 lowercase hex digits.  An unknown conversion is printed as written
 * ("%q" stays "%q", "%-5q" stays "%-5q") and consumes no argument, not even
 * for a '*' in it; a '%' that ends the format prints as "%".
 *
 * Everything here is reentrant, takes no lock and uses about 300 bytes of
 * stack, so it is safe in any context, NMI and panic paths included.
 */

#ifndef KERN_PRINTF_H
#define KERN_PRINTF_H

#include <stdarg.h>
#include <stddef.h>

#include "kern/macros.h"

/*
 * Output callback: receives the next n characters of the output (s is not
 * NUL-terminated).  n is never 0.
 */
typedef void (*fmt_out_fn_t)(void *arg, const char *s, size_t n);

/*
 * Format fmt with the arguments in ap and pass the result to out(arg, ...).
 * Return the number of characters produced (saturated at INT_MAX).
 */
int fmt_vformat(fmt_out_fn_t out, void *arg, const char *fmt, va_list ap);

/*
 * C99 vsnprintf: write at most size - 1 characters and a NUL to buf (nothing
 * at all when size is 0, so buf may then be NULL), and return the length the
 * whole output would have had: truncation happened when the result is
 * >= size.
 */
int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int ksnprintf(char *buf, size_t size, const char *fmt, ...)
    __format_printf(3, 4);

#endif /* KERN_PRINTF_H */
