/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the JSON strings of the subcommands' -j output
 * (kern/perfmon/cmd/perfmon_json.c): quotes, backslashes and control
 * characters escaped, other bytes kept, and a string too long for its line
 * cut before an escape, never inside one, with its closing quote kept.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_json.h"

static void
test_escapes(void **state)
{
    struct perfmon_cmd_line line;

    (void)state;
    perfmon_cmd_line_init(&line);
    perfmon_json_add_string(&line, "a\"b\\c\td\x01/\xc3\xa9");
    assert_string_equal(line.buf, "\"a\\\"b\\\\c\\u0009d\\u0001/\xc3\xa9\"");

    perfmon_cmd_line_init(&line);
    perfmon_json_add_string(&line, NULL);
    perfmon_json_add_string(&line, "");
    assert_string_equal(line.buf, "\"\"\"\"");
}

static void
test_long_string(void **state)
{
    char s[2 * PERFMON_CMD_LINE_SIZE];
    struct perfmon_cmd_line line;
    size_t len;

    (void)state;

    /* Escapes only: the cut may fall on no half of one. */
    for (size_t i = 0; i + 1 < sizeof(s); i++) {
        s[i] = '"';
    }

    s[sizeof(s) - 1] = '\0';

    for (size_t pad = 0; pad < 4; pad++) {
        perfmon_cmd_line_init(&line);

        for (size_t i = 0; i < pad; i++) {
            perfmon_cmd_line_add(&line, "x");
        }

        perfmon_json_add_string(&line, s);
        len = strlen(line.buf);
        assert_true(len <= sizeof(line.buf) - 1);
        assert_int_equal(line.buf[len - 1], '"');
        assert_int_equal(line.buf[pad], '"');

        /* Between the quotes: whole \" pairs. */
        assert_int_equal((len - pad - 2) % 2, 0);

        for (size_t i = pad + 1; i + 1 < len; i += 2) {
            assert_int_equal(line.buf[i], '\\');
            assert_int_equal(line.buf[i + 1], '"');
        }
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_long_string),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
