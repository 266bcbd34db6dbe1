/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Kernel log: console output plus a ring buffer of the latest lines.
 */

#include <stdarg.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "kern/console.h"
#include "kern/log.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/spinlock.h"
#include "kern/string.h"

#define LOG_LINE_MAX    256

static const char *const log_level_names[] = {
    [LOG_ERROR] = "error: ",
    [LOG_WARNING] = "warning: ",
    [LOG_INFO] = "",
};

/*
 * The ring buffer: log_buffer[log_head % size] is the next byte written;
 * log_size bytes before it are valid.  Protected by log_lock.
 */
static char log_buffer[LOG_BUFFER_SIZE];
static size_t log_head;
static size_t log_size;
static struct spinlock log_lock = SPINLOCK_INITIALIZER;

static void
log_append(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        log_buffer[log_head] = s[i];
        log_head = (log_head + 1) % LOG_BUFFER_SIZE;
    }

    log_size = MIN(log_size + n, (size_t)LOG_BUFFER_SIZE);
}

void
log_msg(unsigned int level, const char *fmt, ...)
{
    char line[LOG_LINE_MAX];
    uint64_t us = tsc_us();
    unsigned long flags;
    va_list ap;
    int n, m;

    if (level > LOG_INFO) {
        level = LOG_INFO;
    }

    n = ksnprintf(line, sizeof(line), "[%5lu.%06lu] cpu%u: %s",
                  us / 1000000, us % 1000000, cpu_id(),
                  log_level_names[level]);
    va_start(ap, fmt);
    m = kvsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
    va_end(ap);
    n = MIN((size_t)(n + m), sizeof(line) - 2);
    line[n++] = '\n';
    line[n] = '\0';

    spinlock_lock_intr_save(&log_lock, &flags);
    log_append(line, n);
    spinlock_unlock_intr_restore(&log_lock, flags);
    console_write(line, n);
}

size_t
log_read(char *buf, size_t size)
{
    unsigned long flags;
    size_t n, start;

    if (size == 0) {
        return 0;
    }

    spinlock_lock_intr_save(&log_lock, &flags);
    n = MIN(log_size, size - 1);
    start = (log_head + LOG_BUFFER_SIZE - n) % LOG_BUFFER_SIZE;

    for (size_t i = 0; i < n; i++) {
        buf[i] = log_buffer[(start + i) % LOG_BUFFER_SIZE];
    }

    spinlock_unlock_intr_restore(&log_lock, flags);
    buf[n] = '\0';
    return n;
}

static char log_cmd_buf[LOG_BUFFER_SIZE + 1];

static int
log_cmd(int argc, char **argv)
{
    size_t n;

    (void)argc;
    (void)argv;

    /* One reader at a time is enough for a shell command. */
    n = log_read(log_cmd_buf, sizeof(log_cmd_buf));
    console_write(log_cmd_buf, n);
    return 0;
}

SHELL_COMMAND(log, "log", "", "show the kernel log", log_cmd);
