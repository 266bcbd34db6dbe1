/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fake of the kernel log for host tests: log_msg() keeps the last message
 * and counts messages per level, so that a test can check what a module
 * reported (fake_log.h).
 */

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fakes/fake_log.h"
#include "kern/log.h"

static char fake_log_last_msg[256];
static unsigned int fake_log_counts[LOG_INFO + 1];

void
fake_log_reset(void)
{
    fake_log_last_msg[0] = '\0';
    memset(fake_log_counts, 0, sizeof(fake_log_counts));
}

const char *
fake_log_last(void)
{
    return fake_log_last_msg;
}

unsigned int
fake_log_count(unsigned int level)
{
    return (level <= LOG_INFO) ? fake_log_counts[level] : 0;
}

void
log_msg(unsigned int level, const char *fmt, ...)
{
    va_list ap;

    if (level <= LOG_INFO) {
        fake_log_counts[level]++;
    }

    va_start(ap, fmt);
    vsnprintf(fake_log_last_msg, sizeof(fake_log_last_msg), fmt, ap);
    va_end(ap);
}
