/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The kernel log.
 *
 * Each message is printed on the console and kept in a ring buffer (the
 * oldest messages are dropped first), which the `log` shell command shows.
 * Lines carry a timestamp (seconds since boot, from the TSC) and the CPU
 * number.  Callable from thread and interrupt context, not from NMIs.
 */

#ifndef KERN_LOG_H
#define KERN_LOG_H

#include <stddef.h>

#include "kern/macros.h"

#define LOG_ERROR       0
#define LOG_WARNING     1
#define LOG_INFO        2

#define LOG_BUFFER_SIZE 16384

void log_msg(unsigned int level, const char *fmt, ...) __format_printf(2, 3);

#define log_error(...)      log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warning(...)    log_msg(LOG_WARNING, __VA_ARGS__)
#define log_info(...)       log_msg(LOG_INFO, __VA_ARGS__)

/*
 * Copy the buffered log, oldest first, into buf (NUL-terminated).  Returns
 * the number of characters copied.
 */
size_t log_read(char *buf, size_t size);

#endif /* KERN_LOG_H */
