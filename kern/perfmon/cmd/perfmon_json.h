/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * JSON output of the `perfmon` subcommands (-j): strings written as JSON
 * string literals into a line (kern/perfmon/cmd/perfmon_cmd.h), so that
 * whatever a name holds, each line parses (RFC 8259).  Thread context.
 */

#ifndef KERN_PERFMON_JSON_H
#define KERN_PERFMON_JSON_H

#include "kern/perfmon/cmd/perfmon_cmd.h"

/*
 * Add s to line in double quotes, with '"' and '\' escaped and control
 * characters as \uXXXX (NULL: ""); what does not fit is dropped whole
 * from the first character that does not, and the closing quote kept.
 */
void perfmon_json_add_string(struct perfmon_cmd_line *line, const char *s);

#endif /* KERN_PERFMON_JSON_H */
