/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Test side of the fake UART (fakes/uart.c): COM2 present or not, what was
 * written to it, and a transmitter that stops taking bytes after a while.
 */

#ifndef FAKES_FAKE_UART_H
#define FAKES_FAKE_UART_H

#include <stdbool.h>
#include <stddef.h>

/* No bytes, COM2 present (or not), no failure. */
void fake_uart_reset(bool com2_present);

/* The transmitter takes limit more bytes, then times out. */
void fake_uart_fail_after(size_t limit);

/* Everything COM2 took so far. */
const unsigned char *fake_uart_com2_data(size_t *sizep);

#endif /* FAKES_FAKE_UART_H */
