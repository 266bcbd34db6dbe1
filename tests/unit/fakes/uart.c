/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fake of the console's auxiliary port, COM2 (kern/console.h): bytes
 * written go to a buffer the test reads (fake_uart.h); COM2 may be missing, and its transmitter may stop
 * taking bytes after a given count, as a real one with nothing draining it
 * would.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fakes/fake_uart.h"
#include "kern/console.h"
#include "kern/error.h"

static bool fake_uart_com2_present;
static unsigned char *fake_uart_buf;
static size_t fake_uart_len;
static size_t fake_uart_cap;
static size_t fake_uart_limit = SIZE_MAX;

void
fake_uart_reset(bool com2_present)
{
    free(fake_uart_buf);
    fake_uart_buf = NULL;
    fake_uart_len = 0;
    fake_uart_cap = 0;
    fake_uart_limit = SIZE_MAX;
    fake_uart_com2_present = com2_present;
}

void
fake_uart_fail_after(size_t limit)
{
    fake_uart_limit = limit;
}

const unsigned char *
fake_uart_com2_data(size_t *sizep)
{
    *sizep = fake_uart_len;
    return fake_uart_buf;
}

bool
console_aux_setup(void)
{
    return fake_uart_com2_present;
}

int
console_aux_write(const void *buf, size_t size)
{
    const unsigned char *bytes = buf;

    for (size_t i = 0; i < size; i++) {
        if (fake_uart_limit == 0) {
            return -EIO;
        }

        if (fake_uart_len == fake_uart_cap) {
            fake_uart_cap = (fake_uart_cap == 0) ? 4096 : 2 * fake_uart_cap;
            fake_uart_buf = realloc(fake_uart_buf, fake_uart_cap);

            if (fake_uart_buf == NULL) {
                abort();
            }
        }

        fake_uart_buf[fake_uart_len++] = bytes[i];

        if (fake_uart_limit != SIZE_MAX) {
            fake_uart_limit--;
        }
    }

    return 0;
}
