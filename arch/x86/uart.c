/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * 16550 UART driver (register layout from the National Semiconductor
 * PC16550D data sheet), for COM1 (the console) and COM2 (an output-only
 * byte channel).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/io.h"
#include "arch/x86/uart.h"
#include "kern/error.h"

#define UART_REG_DATA       0       /* receive buffer / transmit holding */
#define UART_REG_IER        1       /* interrupt enable */
#define UART_REG_DLL        0       /* divisor latch low (DLAB = 1) */
#define UART_REG_DLH        1       /* divisor latch high (DLAB = 1) */
#define UART_REG_FCR        2       /* FIFO control */
#define UART_REG_LCR        3       /* line control */
#define UART_REG_MCR        4       /* modem control */
#define UART_REG_LSR        5       /* line status */
#define UART_REG_SCR        7       /* scratch */

#define UART_IER_RDA        0x01
#define UART_LCR_8N1        0x03
#define UART_LCR_DLAB       0x80
#define UART_FCR_ENABLE     0x07    /* enable and clear both FIFOs */
#define UART_MCR_DTR_RTS    0x03
#define UART_MCR_OUT2       0x08    /* gates the IRQ line on PCs */
#define UART_LSR_DR         0x01
#define UART_LSR_THRE       0x20

/* Bytes the transmit FIFO takes once THRE says it is empty. */
#define UART_TX_FIFO_SIZE   16

#define UART_CLOCK          115200
#define UART_BAUD           115200

/* COM2: 0 not probed yet, 1 present, -1 absent. */
static int uart_com2_state;

static void
uart_write(uint16_t port, unsigned int reg, uint8_t value)
{
    io_write8(port + reg, value);
}

static uint8_t
uart_read(uint16_t port, unsigned int reg)
{
    return io_read8(port + reg);
}

/* 8N1 at UART_BAUD, FIFOs on, no interrupt yet. */
static void
uart_init_port(uint16_t port)
{
    uint16_t divisor = UART_CLOCK / UART_BAUD;

    uart_write(port, UART_REG_IER, 0);
    uart_write(port, UART_REG_LCR, UART_LCR_DLAB);
    uart_write(port, UART_REG_DLL, divisor & 0xff);
    uart_write(port, UART_REG_DLH, divisor >> 8);
    uart_write(port, UART_REG_LCR, UART_LCR_8N1);
    uart_write(port, UART_REG_FCR, UART_FCR_ENABLE);
    uart_write(port, UART_REG_MCR, UART_MCR_DTR_RTS | UART_MCR_OUT2);
}

void
uart_setup(void)
{
    uart_init_port(UART_COM1_PORT);
}

void
uart_putc(char c)
{
    while ((uart_read(UART_COM1_PORT, UART_REG_LSR) & UART_LSR_THRE) == 0) {
        __asm__ __volatile__("pause");
    }

    uart_write(UART_COM1_PORT, UART_REG_DATA, (uint8_t)c);
}

int
uart_getc(void)
{
    if ((uart_read(UART_COM1_PORT, UART_REG_LSR) & UART_LSR_DR) == 0) {
        return -1;
    }

    return uart_read(UART_COM1_PORT, UART_REG_DATA);
}

void
uart_intr_enable(void)
{
    uart_write(UART_COM1_PORT, UART_REG_IER, UART_IER_RDA);
}

/*
 * A UART keeps what is written to its scratch register; a port with
 * nothing behind it reads back all ones whatever was written.
 */
static bool
uart_present(uint16_t port)
{
    static const uint8_t patterns[] = { 0x55, 0xaa };

    for (size_t i = 0; i < sizeof(patterns); i++) {
        uart_write(port, UART_REG_SCR, patterns[i]);

        if (uart_read(port, UART_REG_SCR) != patterns[i]) {
            return false;
        }
    }

    return true;
}

bool
uart_com2_setup(void)
{
    if (uart_com2_state == 0) {
        if (uart_present(UART_COM2_PORT)) {
            uart_init_port(UART_COM2_PORT);
            uart_com2_state = 1;
        } else {
            uart_com2_state = -1;
        }
    }

    return uart_com2_state > 0;
}

/* Wait until the transmit FIFO is empty; false after the timeout. */
static bool
uart_com2_wait_tx(void)
{
    uint64_t start = cpu_rdtsc();
    uint64_t limit = cpu_tsc_freq() / 1000 * UART_COM2_TIMEOUT_MS;

    while ((uart_read(UART_COM2_PORT, UART_REG_LSR) & UART_LSR_THRE) == 0) {
        if (cpu_rdtsc() - start > limit) {
            return false;
        }

        __asm__ __volatile__("pause");
    }

    return true;
}

int
uart_com2_write(const void *buf, size_t size)
{
    const uint8_t *bytes = buf;

    /* An empty FIFO takes a whole FIFO's worth: one status read each. */
    while (size != 0) {
        size_t n = (size < UART_TX_FIFO_SIZE) ? size : UART_TX_FIFO_SIZE;

        if (!uart_com2_wait_tx()) {
            return -EIO;
        }

        for (size_t i = 0; i < n; i++) {
            uart_write(UART_COM2_PORT, UART_REG_DATA, bytes[i]);
        }

        bytes += n;
        size -= n;
    }

    return 0;
}
