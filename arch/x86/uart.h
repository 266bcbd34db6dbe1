/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * 16550 UART on COM1, 115200 baud 8N1: the system console's device.
 *
 * Output polls the transmitter.  Input is interrupt driven once the I/O
 * APIC routes IRQ 4 (uart_intr_enable()); before that, uart_getc() polls.
 */

#ifndef ARCH_X86_UART_H
#define ARCH_X86_UART_H

#include <stdbool.h>

#define UART_COM1_PORT      0x3f8
#define UART_COM1_IRQ       4

void uart_setup(void);
void uart_putc(char c);

/* Return a received character, or -1 when none is waiting. */
int uart_getc(void);

/* Enable the receive interrupt (IRQ 4). */
void uart_intr_enable(void);

#endif /* ARCH_X86_UART_H */
