/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * What the files of the `perfmon` shell command share (kern/perfmon_cmd.c,
 * kern/perfmon_stat.c).  Thread context, like every shell command.
 */

#ifndef KERN_PERFMON_CMD_H
#define KERN_PERFMON_CMD_H

#include <stdarg.h>
#include <stddef.h>

#include "kern/macros.h"
#include "kern/perfmon.h"

#define PERFMON_CMD_LINE_SIZE   256

/*
 * A line built in pieces and printed at once, so that output from other
 * CPUs does not interleave with it; what does not fit is dropped.
 * perfmon_cmd_line_print() drops trailing blanks (perf pads its columns),
 * prints the line with a newline and empties it.
 */
struct perfmon_cmd_line {
    char buf[PERFMON_CMD_LINE_SIZE];
    size_t len;
};

void perfmon_cmd_line_init(struct perfmon_cmd_line *line);
void perfmon_cmd_line_add(struct perfmon_cmd_line *line, const char *fmt, ...)
    __format_printf(2, 3);
void perfmon_cmd_line_vadd(struct perfmon_cmd_line *line, const char *fmt,
                           va_list ap);
void perfmon_cmd_line_print(struct perfmon_cmd_line *line);

/* The first device that counts the event named name, or NULL. */
struct perfmon_dev *perfmon_cmd_dev_for(const char *name);

#endif /* KERN_PERFMON_CMD_H */
