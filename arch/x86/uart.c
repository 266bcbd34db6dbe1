/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * 16550 UART driver (register layout from the National Semiconductor
 * PC16550D data sheet).
 */

#include <stdint.h>

#include "arch/x86/io.h"
#include "arch/x86/uart.h"

#define UART_REG_DATA       0       /* receive buffer / transmit holding */
#define UART_REG_IER        1       /* interrupt enable */
#define UART_REG_DLL        0       /* divisor latch low (DLAB = 1) */
#define UART_REG_DLH        1       /* divisor latch high (DLAB = 1) */
#define UART_REG_FCR        2       /* FIFO control */
#define UART_REG_LCR        3       /* line control */
#define UART_REG_MCR        4       /* modem control */
#define UART_REG_LSR        5       /* line status */

#define UART_IER_RDA        0x01
#define UART_LCR_8N1        0x03
#define UART_LCR_DLAB       0x80
#define UART_FCR_ENABLE     0x07    /* enable and clear both FIFOs */
#define UART_MCR_DTR_RTS    0x03
#define UART_MCR_OUT2       0x08    /* gates the IRQ line on PCs */
#define UART_LSR_DR         0x01
#define UART_LSR_THRE       0x20

#define UART_CLOCK          115200
#define UART_BAUD           115200

static void
uart_write(unsigned int reg, uint8_t value)
{
    io_write8(UART_COM1_PORT + reg, value);
}

static uint8_t
uart_read(unsigned int reg)
{
    return io_read8(UART_COM1_PORT + reg);
}

void
uart_setup(void)
{
    uint16_t divisor = UART_CLOCK / UART_BAUD;

    uart_write(UART_REG_IER, 0);
    uart_write(UART_REG_LCR, UART_LCR_DLAB);
    uart_write(UART_REG_DLL, divisor & 0xff);
    uart_write(UART_REG_DLH, divisor >> 8);
    uart_write(UART_REG_LCR, UART_LCR_8N1);
    uart_write(UART_REG_FCR, UART_FCR_ENABLE);
    uart_write(UART_REG_MCR, UART_MCR_DTR_RTS | UART_MCR_OUT2);
}

void
uart_putc(char c)
{
    while ((uart_read(UART_REG_LSR) & UART_LSR_THRE) == 0) {
        __asm__ __volatile__("pause");
    }

    uart_write(UART_REG_DATA, (uint8_t)c);
}

int
uart_getc(void)
{
    if ((uart_read(UART_REG_LSR) & UART_LSR_DR) == 0) {
        return -1;
    }

    return uart_read(UART_REG_DATA);
}

void
uart_intr_enable(void)
{
    uart_write(UART_REG_IER, UART_IER_RDA);
}
