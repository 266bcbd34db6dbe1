/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * JSON string literals for the subcommands' -j output
 * (kern/perfmon/cmd/perfmon_json.h).
 */

#include <stddef.h>

#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_json.h"
#include "kern/printf.h"
#include "kern/string.h"

/* Room kept for the closing quote. */
#define PERFMON_JSON_QUOTE_ROOM     1

void
perfmon_json_add_string(struct perfmon_cmd_line *line, const char *s)
{
    size_t room;

    perfmon_cmd_line_add(line, "\"");

    for (; s != NULL && *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        size_t len;

        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            esc[2] = '\0';
        } else if (c < 0x20) {
            ksnprintf(esc, sizeof(esc), "\\u%04x", c);
        } else {
            esc[0] = (char)c;
            esc[1] = '\0';
        }

        len = strlen(esc);
        room = sizeof(line->buf) - 1 - line->len;

        /* An escape is kept whole or not at all. */
        if (len + PERFMON_JSON_QUOTE_ROOM > room) {
            break;
        }

        perfmon_cmd_line_add(line, "%s", esc);
    }

    room = sizeof(line->buf) - 1 - line->len;

    if (room == 0) {
        line->len--;
        line->buf[line->len] = '\0';
    }

    perfmon_cmd_line_add(line, "\"");
}
