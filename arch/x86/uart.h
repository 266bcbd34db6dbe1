/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * 16550 UARTs, 115200 baud 8N1: COM1 is the system console's device, COM2
 * an optional byte channel out of the machine (recordings leave on it in
 * perf's format, kern/perfmon/cmd/perfmon_stream.h).
 *
 * COM1 output polls the transmitter.  Input is interrupt driven once the
 * I/O APIC routes IRQ 4 (uart_intr_enable()); before that, uart_getc()
 * polls.
 *
 * COM2 is output only and 8-bit clean: bytes go out as given, with no
 * newline translation and no interrupt.  It may be missing (a QEMU started
 * with one -serial, most real machines): uart_com2_setup() probes for it.
 * One writer at a time (the caller serialises).
 */

#ifndef ARCH_X86_UART_H
#define ARCH_X86_UART_H

#include <stdbool.h>
#include <stddef.h>

#define UART_COM1_PORT      0x3f8
#define UART_COM1_IRQ       4
#define UART_COM2_PORT      0x2f8

void uart_setup(void);
void uart_putc(char c);

/* Return a received character, or -1 when none is waiting. */
int uart_getc(void);

/* Enable the receive interrupt (IRQ 4). */
void uart_intr_enable(void);

/*
 * Probe COM2 and program it, once: later calls return the first answer.
 * True when a UART answers at UART_COM2_PORT.  Thread context.
 */
bool uart_com2_setup(void);

/*
 * Send size bytes on COM2 (set up), polling the transmitter.  Returns 0,
 * or -EIO when the transmitter stayed busy for UART_COM2_TIMEOUT_MS: the
 * bytes from that point on were not sent.  Thread context.
 */
#define UART_COM2_TIMEOUT_MS    100

int uart_com2_write(const void *buf, size_t size);

#endif /* ARCH_X86_UART_H */
