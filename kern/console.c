/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The system console on the serial port.
 *
 * Input arrives through the UART interrupt into a small ring buffer once
 * interrupts are routed; the reader sleeps on it.  Before that (early boot,
 * panics) input and output poll the UART.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "arch/x86/cpu.h"
#include "arch/x86/uart.h"
#include "kern/console.h"
#include "kern/printf.h"
#include "kern/spinlock.h"

#define CONSOLE_PRINTF_BUF  128

static struct spinlock console_lock = SPINLOCK_INITIALIZER;

/* Set once by a panic: from then on output bypasses the lock. */
static bool console_panicking;

void
console_panic(void)
{
    __atomic_store_n(&console_panicking, true, __ATOMIC_RELEASE);
}

static bool
console_lock_acquire(unsigned long *flagsp)
{
    if (__atomic_load_n(&console_panicking, __ATOMIC_ACQUIRE)) {
        return false;
    }

    spinlock_lock_intr_save(&console_lock, flagsp);
    return true;
}

static void
console_lock_release(bool locked, unsigned long flags)
{
    if (locked) {
        spinlock_unlock_intr_restore(&console_lock, flags);
    }
}

static void
console_put_raw(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\n') {
            uart_putc('\r');
        }

        uart_putc(s[i]);
    }
}

void
console_write(const char *s, size_t n)
{
    unsigned long flags;
    bool locked;

    locked = console_lock_acquire(&flags);
    console_put_raw(s, n);
    console_lock_release(locked, flags);
}

void
console_write_nmi(const char *s, size_t n)
{
    console_put_raw(s, n);
}

int
console_trygetc(void)
{
    return uart_getc();
}

int
console_getc(void)
{
    int c;

    while ((c = console_trygetc()) < 0) {
        cpu_pause();
    }

    return c;
}

/*
 * kprintf output is collected in a small buffer and written in pieces, each
 * under the console lock; a whole call is serialized by holding the lock
 * across it, so concurrent messages never interleave within a line.
 */
struct console_buf {
    char data[CONSOLE_PRINTF_BUF];
    size_t len;
};

static void
console_buf_flush(struct console_buf *buf)
{
    console_put_raw(buf->data, buf->len);
    buf->len = 0;
}

static void
console_buf_out(void *arg, const char *s, size_t n)
{
    struct console_buf *buf = arg;

    for (size_t i = 0; i < n; i++) {
        if (buf->len == sizeof(buf->data)) {
            console_buf_flush(buf);
        }

        buf->data[buf->len++] = s[i];
    }
}

int
kvprintf(const char *fmt, va_list ap)
{
    struct console_buf buf;
    unsigned long flags;
    bool locked;
    int n;

    buf.len = 0;
    locked = console_lock_acquire(&flags);
    n = fmt_vformat(console_buf_out, &buf, fmt, ap);
    console_buf_flush(&buf);
    console_lock_release(locked, flags);
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
