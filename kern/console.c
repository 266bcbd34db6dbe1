/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The system console on the serial port.
 *
 * Input arrives through the UART interrupt into a small ring buffer once
 * interrupts are routed; the reader sleeps on it.  Before that (early boot,
 * panics) input and output poll the UART.  The auxiliary port is COM2.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "arch/x86/cpu.h"
#include "arch/x86/ioapic.h"
#include "arch/x86/lapic.h"
#include "arch/x86/trap.h"
#include "arch/x86/uart.h"
#include "kern/clock.h"
#include "kern/error.h"
#include "kern/init.h"
#include "kern/log.h"
#include "kern/thread.h"
#include "kern/console.h"
#include "kern/printf.h"
#include "kern/spinlock.h"
#include "kern/timer.h"

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

/*
 * Received characters, filled by the UART interrupt once console_setup has
 * routed it; protected by console_rx_lock (interrupts disabled).  One
 * reader at a time sleeps for input: the shell.
 */
#define CONSOLE_RX_SIZE     512

/* Longest nap of console_wait_input() when input is polled. */
#define CONSOLE_WAIT_POLL_MS    20

static char console_rx[CONSOLE_RX_SIZE];
static unsigned int console_rx_head;    /* next to read */
static unsigned int console_rx_count;
static struct thread *console_rx_waiter;
static bool console_rx_intr_mode;
static struct spinlock console_rx_lock = SPINLOCK_INITIALIZER;

static int
console_rx_pop(void)
{
    int c = -1;

    if (console_rx_count != 0) {
        c = (unsigned char)console_rx[console_rx_head];
        console_rx_head = (console_rx_head + 1) % CONSOLE_RX_SIZE;
        console_rx_count--;
    }

    return c;
}

int
console_trygetc(void)
{
    unsigned long flags;
    int c;

    if (!__atomic_load_n(&console_rx_intr_mode, __ATOMIC_ACQUIRE)) {
        return uart_getc();
    }

    spinlock_lock_intr_save(&console_rx_lock, &flags);
    c = console_rx_pop();
    spinlock_unlock_intr_restore(&console_rx_lock, flags);
    return c;
}

void
console_drop_through(int c)
{
    unsigned long flags;

    if (!__atomic_load_n(&console_rx_intr_mode, __ATOMIC_ACQUIRE)) {
        return;
    }

    spinlock_lock_intr_save(&console_rx_lock, &flags);

    for (unsigned int i = console_rx_count; i > 0; i--) {
        unsigned int pos = (console_rx_head + i - 1) % CONSOLE_RX_SIZE;

        if ((unsigned char)console_rx[pos] == c) {
            console_rx_head = (pos + 1) % CONSOLE_RX_SIZE;
            console_rx_count -= i;
            break;
        }
    }

    spinlock_unlock_intr_restore(&console_rx_lock, flags);
}

int
console_getc(void)
{
    unsigned long flags;
    int c;

    while (!__atomic_load_n(&console_rx_intr_mode, __ATOMIC_ACQUIRE)) {
        c = uart_getc();

        if (c >= 0) {
            return c;
        }

        thread_yield();
    }

    for (;;) {
        thread_sleep_prepare();
        spinlock_lock_intr_save(&console_rx_lock, &flags);
        c = console_rx_pop();
        console_rx_waiter = c < 0 ? thread_self() : NULL;
        spinlock_unlock_intr_restore(&console_rx_lock, flags);

        if (c >= 0) {
            thread_sleep_cancel();
            return c;
        }

        thread_sleep();
    }
}

static void
console_wait_timeout(struct timer *timer)
{
    thread_wakeup(timer->arg);
}

bool
console_wait_input(uint64_t ms)
{
    uint64_t deadline = clock_deadline_from_ms(ms);
    struct thread *self = thread_self();
    unsigned long flags;
    struct timer timer;
    bool ready = false;

    /* Polled input, or another reader waiting: naps of a bounded length. */
    if (!__atomic_load_n(&console_rx_intr_mode, __ATOMIC_ACQUIRE)
        || (READ_ONCE(console_rx_waiter) != NULL)) {
        thread_msleep(MIN(ms, CONSOLE_WAIT_POLL_MS));
        return false;
    }

    timer_init(&timer, console_wait_timeout, TIMER_INTR);
    timer.arg = self;

    while (!ready && (clock_get_time() < deadline)) {
        thread_sleep_prepare();
        spinlock_lock_intr_save(&console_rx_lock, &flags);
        ready = (console_rx_count != 0);
        console_rx_waiter = ready ? NULL : self;
        spinlock_unlock_intr_restore(&console_rx_lock, flags);

        if (ready) {
            thread_sleep_cancel();
            break;
        }

        timer_schedule(&timer, deadline);
        thread_sleep();
    }

    timer_cancel(&timer);
    spinlock_lock_intr_save(&console_rx_lock, &flags);

    if (console_rx_waiter == self) {
        console_rx_waiter = NULL;
    }

    ready = (console_rx_count != 0);
    spinlock_unlock_intr_restore(&console_rx_lock, flags);
    return ready;
}

static void
console_rx_intr(struct trap_frame *frame)
{
    struct thread *waiter;
    int c;

    (void)frame;
    lapic_eoi();
    spinlock_lock(&console_rx_lock);

    while ((c = uart_getc()) >= 0) {
        if (console_rx_count < CONSOLE_RX_SIZE) {
            console_rx[(console_rx_head + console_rx_count)
                       % CONSOLE_RX_SIZE] = (char)c;
            console_rx_count++;
        }
    }

    waiter = console_rx_waiter;
    console_rx_waiter = NULL;
    spinlock_unlock(&console_rx_lock);

    if (waiter != NULL) {
        thread_wakeup(waiter);
    }
}

/* Switch console input from polling to the UART interrupt. */
static int
console_setup(void)
{
    int error;

    trap_register(TRAP_VEC_SERIAL, console_rx_intr);
    error = ioapic_route_isa(UART_COM1_IRQ, TRAP_VEC_SERIAL,
                             cpu_table[0].apic_id);

    if (error) {
        log_warning("console: serial interrupt not routed (%s), polling",
                    error_str(error));
        return 0;
    }

    __atomic_store_n(&console_rx_intr_mode, true, __ATOMIC_RELEASE);
    uart_intr_enable();
    return 0;
}

INIT_OP_DEFINE(console_setup, INIT_OP_DEP(ioapic_setup, true),
               INIT_OP_DEP(thread_setup, true),
               INIT_OP_DEP(lapic_setup, true));

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

bool
console_aux_setup(void)
{
    return uart_com2_setup();
}

int
console_aux_write(const void *buf, size_t size)
{
    return uart_com2_write(buf, size);
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
