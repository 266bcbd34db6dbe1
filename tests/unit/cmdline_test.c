/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of kern/cmdline.c: boot line options (flags, values, quotes,
 * repeats, limits, errors leaving the previous state in place), splitting of
 * shell lines (quotes, escapes, argument limits, untouched input on error)
 * and number parsing at the edges of the 64-bit range.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "kern/cmdline.h"
#include "kern/error.h"
#include "kern/macros.h"

/* Each test starts from an empty parsed line. */
static int
setup_empty(void **state)
{
    (void)state;
    return cmdline_parse("") == 0 ? 0 : -1;
}

/* Runs first, before any cmdline_parse(). */
static void
test_initial_state(void **state)
{
    const char *key, *value;

    (void)state;
    assert_string_equal(cmdline_raw(), "");
    assert_int_equal(cmdline_nr_opts(), 0);
    assert_int_equal(cmdline_opt(0, &key, &value), -EINVAL);
    assert_null(cmdline_get(""));
    assert_int_equal(cmdline_get_u64("x", &(uint64_t){ 0 }), -ENOENT);
}

static void
test_empty_lines(void **state)
{
    (void)state;
    assert_int_equal(cmdline_nr_opts(), 0);
    assert_string_equal(cmdline_raw(), "");
    assert_null(cmdline_get("x"));
    assert_false(cmdline_has("x"));

    assert_int_equal(cmdline_parse("   \t  "), 0);
    assert_int_equal(cmdline_nr_opts(), 0);
    assert_string_equal(cmdline_raw(), "   \t  ");
}

static void
test_flags_and_values(void **state)
{
    const char *key, *value;

    (void)state;
    assert_int_equal(cmdline_parse("  quiet smp=4\tconsole=ttyS0,115200 "
                                   "empty= eq=a=b  "), 0);
    assert_int_equal(cmdline_nr_opts(), 5);
    assert_string_equal(cmdline_raw(), "  quiet smp=4\tconsole=ttyS0,115200 "
                                       "empty= eq=a=b  ");

    assert_true(cmdline_has("quiet"));
    assert_string_equal(cmdline_get("quiet"), "");
    assert_string_equal(cmdline_get("smp"), "4");
    assert_string_equal(cmdline_get("console"), "ttyS0,115200");
    assert_string_equal(cmdline_get("empty"), "");
    assert_string_equal(cmdline_get("eq"), "a=b");
    assert_null(cmdline_get("qui"));
    assert_null(cmdline_get("quiet2"));
    assert_false(cmdline_has("smp=4"));
    assert_null(cmdline_get(NULL));
    assert_false(cmdline_has(NULL));

    assert_int_equal(cmdline_opt(0, &key, &value), 0);
    assert_string_equal(key, "quiet");
    assert_null(value);
    assert_int_equal(cmdline_opt(1, &key, &value), 0);
    assert_string_equal(key, "smp");
    assert_string_equal(value, "4");
    assert_int_equal(cmdline_opt(3, &key, &value), 0);
    assert_string_equal(key, "empty");
    assert_string_equal(value, "");
    assert_int_equal(cmdline_opt(5, &key, &value), -EINVAL);
    assert_int_equal(cmdline_opt(UINT32_MAX, &key, &value), -EINVAL);
}

static void
test_repeated_keys(void **state)
{
    const char *key, *value;

    (void)state;
    assert_int_equal(cmdline_parse("log=1 x log=2 log"), 0);
    assert_int_equal(cmdline_nr_opts(), 4);
    /* The last occurrence wins, even a bare flag. */
    assert_string_equal(cmdline_get("log"), "");

    assert_int_equal(cmdline_parse("log=1 x log=2"), 0);
    assert_string_equal(cmdline_get("log"), "2");
    assert_int_equal(cmdline_opt(0, &key, &value), 0);
    assert_string_equal(value, "1");
}

static void
test_quotes(void **state)
{
    (void)state;
    assert_int_equal(cmdline_parse("a=\"hello  world\" b=\"\" "
                                   "\"c=x y\" d=pre\"mid dle\"post"), 0);
    assert_int_equal(cmdline_nr_opts(), 4);
    assert_string_equal(cmdline_get("a"), "hello  world");
    assert_string_equal(cmdline_get("b"), "");
    assert_string_equal(cmdline_get("c"), "x y");
    assert_string_equal(cmdline_get("d"), "premid dlepost");

    /* Quotes only protect blanks: the first '=' still ends the key. */
    assert_int_equal(cmdline_parse("\"k=v\"=w \"fl ag\""), 0);
    assert_string_equal(cmdline_get("k"), "v=w");
    assert_string_equal(cmdline_get("fl ag"), "");
}

static void
test_errors_keep_state(void **state)
{
    char line[CMDLINE_MAX + 1];

    (void)state;
    assert_int_equal(cmdline_parse("keep=1 flag"), 0);

    assert_int_equal(cmdline_parse("a=\"open"), -EINVAL);
    assert_int_equal(cmdline_parse("=x"), -EINVAL);
    assert_int_equal(cmdline_parse("ok =x"), -EINVAL);
    assert_int_equal(cmdline_parse("\"\""), -EINVAL);
    assert_int_equal(cmdline_parse(NULL), -EINVAL);

    memset(line, 'a', CMDLINE_MAX);
    line[CMDLINE_MAX] = '\0';
    assert_int_equal(cmdline_parse(line), -E2BIG);

    /* Still the last good line, after failures that used the other copy. */
    assert_string_equal(cmdline_raw(), "keep=1 flag");
    assert_int_equal(cmdline_nr_opts(), 2);
    assert_string_equal(cmdline_get("keep"), "1");
    assert_true(cmdline_has("flag"));
    assert_false(cmdline_has("a"));
}

static void
test_longest_line(void **state)
{
    char line[CMDLINE_MAX];
    const char *key, *value;

    (void)state;
    /* CMDLINE_MAX - 1 characters fit: one long flag. */
    memset(line, 'f', CMDLINE_MAX - 1);
    line[CMDLINE_MAX - 1] = '\0';
    assert_int_equal(cmdline_parse(line), 0);
    assert_int_equal(cmdline_nr_opts(), 1);
    assert_int_equal(strlen(cmdline_raw()), CMDLINE_MAX - 1);
    assert_int_equal(cmdline_opt(0, &key, &value), 0);
    assert_int_equal(strlen(key), CMDLINE_MAX - 1);

    /* A line that fits but holds too many options. */
    for (size_t i = 0; i < CMDLINE_MAX - 1; i++) {
        line[i] = (i % 2 == 0) ? 'k' : ' ';
    }

    line[CMDLINE_MAX - 2] = '=';
    assert_int_equal(cmdline_parse(line), -E2BIG);  /* 512 options */
}

static void
build_opts(char *line, size_t size, unsigned int n)
{
    size_t len = 0;

    line[0] = '\0';

    for (unsigned int i = 0; i < n; i++) {
        len += (size_t)snprintf(line + len, size - len, "o%u=%u ", i, i);
        assert_true(len < size);
    }
}

static void
test_option_limit(void **state)
{
    char line[CMDLINE_MAX];
    const char *key, *value;

    (void)state;
    build_opts(line, sizeof(line), CMDLINE_MAX_OPTS);
    assert_int_equal(cmdline_parse(line), 0);
    assert_int_equal(cmdline_nr_opts(), CMDLINE_MAX_OPTS);
    assert_string_equal(cmdline_get("o63"), "63");
    assert_int_equal(cmdline_opt(CMDLINE_MAX_OPTS - 1, &key, &value), 0);
    assert_string_equal(key, "o63");

    build_opts(line, sizeof(line), CMDLINE_MAX_OPTS + 1);
    assert_int_equal(cmdline_parse(line), -E2BIG);
    assert_int_equal(cmdline_nr_opts(), CMDLINE_MAX_OPTS);
    assert_null(cmdline_get("o64"));
}

static void
test_get_u64(void **state)
{
    uint64_t v = 77;

    (void)state;
    assert_int_equal(cmdline_parse("a=10 b=0x1F flag c=abc d= "
                                   "e=18446744073709551616"), 0);
    assert_int_equal(cmdline_get_u64("a", &v), 0);
    assert_int_equal(v, 10);
    assert_int_equal(cmdline_get_u64("b", &v), 0);
    assert_int_equal(v, 31);

    v = 77;
    assert_int_equal(cmdline_get_u64("missing", &v), -ENOENT);
    assert_int_equal(cmdline_get_u64("flag", &v), -EINVAL);
    assert_int_equal(cmdline_get_u64("c", &v), -EINVAL);
    assert_int_equal(cmdline_get_u64("d", &v), -EINVAL);
    assert_int_equal(cmdline_get_u64("e", &v), -ERANGE);
    assert_int_equal(v, 77);
}

static void
check_split(const char *input, int expected_argc, const char *const *expected)
{
    char line[128];
    char *argv[9];
    int argc;

    snprintf(line, sizeof(line), "%s", input);
    memset(argv, 0xa5, sizeof(argv));
    argc = cmdline_split(line, argv, 8);
    assert_int_equal(argc, expected_argc);

    for (int i = 0; i < argc; i++) {
        assert_string_equal(argv[i], expected[i]);
        /* Words are in place, inside the line. */
        assert_true(argv[i] >= line && argv[i] < line + sizeof(line));
    }

    assert_null(argv[argc]);
}

static void
test_split(void **state)
{
    (void)state;
    check_split("", 0, NULL);
    check_split("   \t ", 0, NULL);
    check_split("ls", 1, (const char *[]){ "ls" });
    check_split("  perf   stat\t-e cycles  ", 4,
                (const char *[]){ "perf", "stat", "-e", "cycles" });
    check_split("echo \"a  b\" 'c d'", 3,
                (const char *[]){ "echo", "a  b", "c d" });
    check_split("a\"b c\"d", 1, (const char *[]){ "ab cd" });
    check_split("x '' \"\" y", 4, (const char *[]){ "x", "", "", "y" });
    check_split("'say \"hi\"' \"it's\"", 2,
                (const char *[]){ "say \"hi\"", "it's" });
    check_split("a\\ b \\\"q\\\" \\\\", 3,
                (const char *[]){ "a b", "\"q\"", "\\" });
    /* Backslash is literal in single quotes, escapes in double quotes. */
    check_split("'a\\b' \"c\\\"d\"", 2, (const char *[]){ "a\\b", "c\"d" });
    check_split("1 2 3 4 5 6 7 8", 8,
                (const char *[]){ "1", "2", "3", "4", "5", "6", "7", "8" });
}

static void
check_split_error(const char *input, unsigned int max_args, int error)
{
    char line[128], copy[128];
    char *argv[9];

    snprintf(line, sizeof(line), "%s", input);
    memcpy(copy, line, sizeof(line));
    memset(argv, 0xa5, sizeof(argv));
    assert_int_equal(cmdline_split(line, argv, max_args), error);
    /* Nothing was touched. */
    assert_memory_equal(line, copy, sizeof(line));

    for (size_t i = 0; i < 9; i++) {
        assert_true(argv[i] == (char *)(uintptr_t)0xa5a5a5a5a5a5a5a5ULL);
    }
}

static void
test_split_errors(void **state)
{
    char line[8] = "a";
    char *argv[2];

    (void)state;
    check_split_error("1 2 3 4 5 6 7 8 9", 8, -E2BIG);
    check_split_error("one", 0, -E2BIG);
    check_split_error("echo \"open", 8, -EINVAL);
    check_split_error("echo 'open", 8, -EINVAL);
    check_split_error("echo \"a\\\"", 8, -EINVAL);
    check_split_error("echo trailing\\", 8, -EINVAL);
    /* The error wins even after words that were fine. */
    check_split_error("a b c 'x", 2, -E2BIG);
    check_split_error("a 'x", 2, -EINVAL);

    assert_int_equal(cmdline_split(NULL, argv, 1), -EINVAL);
    assert_int_equal(cmdline_split(line, NULL, 1), -EINVAL);

    /* max_args 0 still accepts an empty line. */
    line[0] = ' ';
    assert_int_equal(cmdline_split(line, argv, 0), 0);
    assert_null(argv[0]);
}

/*
 * Inputs of a number parser of kern/cmdline.h: the error expected, and the
 * value on success (on failure the parser leaves *valp alone).
 */
struct number_case {
    const char *s;
    int error;
    uint64_t value;
};

typedef int (*parse_fn_t)(const char *s, uint64_t *valp);

static void
check_numbers(parse_fn_t parse, const struct number_case *cases, size_t nr)
{
    for (size_t i = 0; i < nr; i++) {
        uint64_t v = 0xdeadbeef;
        uint64_t expected = (cases[i].error == 0) ? cases[i].value
                                                  : 0xdeadbeef;
        int error = parse(cases[i].s, &v);

        if ((error != cases[i].error) || (v != expected)) {
            fail_msg("\"%s\": got %d and %#llx, expected %d and %#llx",
                     (cases[i].s != NULL) ? cases[i].s : "(NULL)", error,
                     (unsigned long long)v, cases[i].error,
                     (unsigned long long)expected);
        }
    }
}

static void
test_parse_u64(void **state)
{
    static const struct number_case cases[] = {
        { "0", 0, 0 },
        { "42", 0, 42 },
        { "007", 0, 7 },
        { "0x0", 0, 0 },
        { "0x1f", 0, 0x1f },
        { "0XABCdef", 0, 0xabcdef },
        { "18446744073709551615", 0, UINT64_MAX },
        { "0xffffffffffffffff", 0, UINT64_MAX },
        { "0x00000000000000000000ffffffffffffffff", 0, UINT64_MAX },

        { "18446744073709551616", -ERANGE, 0 },
        { "99999999999999999999999", -ERANGE, 0 },
        { "0x10000000000000000", -ERANGE, 0 },

        { "", -EINVAL, 0 },
        { NULL, -EINVAL, 0 },
        { "0x", -EINVAL, 0 },
        { "-1", -EINVAL, 0 },
        { "+1", -EINVAL, 0 },
        { " 1", -EINVAL, 0 },
        { "1 ", -EINVAL, 0 },
        { "12abc", -EINVAL, 0 },
        { "0x1g", -EINVAL, 0 },
        { "1K", -EINVAL, 0 },
        { "x10", -EINVAL, 0 },
        /* Garbage is reported before the overflow. */
        { "18446744073709551616z", -EINVAL, 0 },
    };

    (void)state;
    check_numbers(cmdline_parse_u64, cases, ARRAY_SIZE(cases));
}

static void
test_parse_size(void **state)
{
    static const struct number_case cases[] = {
        { "0", 0, 0 },
        { "512", 0, 512 },
        { "4k", 0, 4096 },
        { "4K", 0, 4096 },
        { "16m", 0, 16ULL << 20 },
        { "16M", 0, 16ULL << 20 },
        { "2G", 0, 2ULL << 30 },
        { "2g", 0, 2ULL << 30 },
        { "0x10K", 0, 16ULL << 10 },
        { "18446744073709551615", 0, UINT64_MAX },
        { "17179869183G", 0, 17179869183ULL << 30 },

        { "17179869184G", -ERANGE, 0 },
        { "0x40000000000000M", -ERANGE, 0 },
        { "18014398509481984K", -ERANGE, 0 },
        { "18446744073709551616", -ERANGE, 0 },
        { "18446744073709551616K", -ERANGE, 0 },

        { "", -EINVAL, 0 },
        { NULL, -EINVAL, 0 },
        { "K", -EINVAL, 0 },
        { "4KB", -EINVAL, 0 },
        { "4KiB", -EINVAL, 0 },
        { "4T", -EINVAL, 0 },
        { "4 K", -EINVAL, 0 },
        { "-4K", -EINVAL, 0 },
        { "0xK", -EINVAL, 0 },
    };

    (void)state;
    check_numbers(cmdline_parse_size, cases, ARRAY_SIZE(cases));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_initial_state),
        cmocka_unit_test_setup(test_empty_lines, setup_empty),
        cmocka_unit_test_setup(test_flags_and_values, setup_empty),
        cmocka_unit_test_setup(test_repeated_keys, setup_empty),
        cmocka_unit_test_setup(test_quotes, setup_empty),
        cmocka_unit_test_setup(test_errors_keep_state, setup_empty),
        cmocka_unit_test_setup(test_longest_line, setup_empty),
        cmocka_unit_test_setup(test_option_limit, setup_empty),
        cmocka_unit_test_setup(test_get_u64, setup_empty),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_split_errors),
        cmocka_unit_test(test_parse_u64),
        cmocka_unit_test(test_parse_size),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
