/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Command lines.  The boot line is parsed into one of two static states
 * while the other stays current, and the current one is switched only once
 * the parse succeeds: an invalid line leaves the previous state whole
 * without needing a large buffer on the stack.  A state keeps the line as
 * given plus a second buffer holding each key and value NUL-terminated;
 * since quotes are dropped and '=' becomes the key's NUL, that buffer never
 * needs more bytes than the line itself.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/cmdline.h"
#include "kern/error.h"
#include "kern/string.h"

/*
 * One option of the boot line.  value is NULL for a bare flag.
 */
struct cmdline_opt {
    const char *key;
    const char *value;
};

/*
 * A parsed boot line: raw is the line as given, store the NUL-terminated
 * keys and values that opts point to.
 */
struct cmdline_state {
    char raw[CMDLINE_MAX];
    char store[CMDLINE_MAX];
    struct cmdline_opt opts[CMDLINE_MAX_OPTS];
    unsigned int nr_opts;
};

static struct cmdline_state cmdline_states[2];
static struct cmdline_state *cmdline_cur = &cmdline_states[0];

static bool
cmdline_is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Split st->raw into st->opts. */
static int
cmdline_parse_opts(struct cmdline_state *st)
{
    const char *r = st->raw;
    char *w = st->store;

    st->nr_opts = 0;

    for (;;) {
        char *key = w, *value = NULL;
        bool quoted = false;

        while (cmdline_is_blank(*r)) {
            r++;
        }

        if (*r == '\0') {
            return 0;
        }

        if (st->nr_opts == CMDLINE_MAX_OPTS) {
            return -E2BIG;
        }

        while (*r != '\0' && (quoted || !cmdline_is_blank(*r))) {
            char c = *r++;

            if (c == '"') {
                quoted = !quoted;
            } else if (c == '=' && value == NULL) {
                *w++ = '\0';
                value = w;
            } else {
                *w++ = c;
            }
        }

        if (quoted) {
            return -EINVAL;
        }

        *w++ = '\0';

        if (key[0] == '\0') {
            return -EINVAL;
        }

        st->opts[st->nr_opts].key = key;
        st->opts[st->nr_opts].value = value;
        st->nr_opts++;
    }
}

int
cmdline_parse(const char *line)
{
    struct cmdline_state *next;
    size_t len;
    int error;

    if (line == NULL) {
        return -EINVAL;
    }

    len = strnlen(line, CMDLINE_MAX);

    if (len == CMDLINE_MAX) {
        return -E2BIG;
    }

    next = (cmdline_cur == &cmdline_states[0]) ? &cmdline_states[1]
                                               : &cmdline_states[0];
    memcpy(next->raw, line, len + 1);
    error = cmdline_parse_opts(next);

    if (error) {
        return error;
    }

    cmdline_cur = next;
    return 0;
}

static const struct cmdline_opt *
cmdline_lookup(const char *key)
{
    const struct cmdline_state *st = cmdline_cur;

    if (key == NULL) {
        return NULL;
    }

    /* From the end: the last occurrence wins. */
    for (unsigned int i = st->nr_opts; i > 0; i--) {
        if (strcmp(st->opts[i - 1].key, key) == 0) {
            return &st->opts[i - 1];
        }
    }

    return NULL;
}

const char *
cmdline_get(const char *key)
{
    const struct cmdline_opt *opt = cmdline_lookup(key);

    if (opt == NULL) {
        return NULL;
    }

    return (opt->value == NULL) ? "" : opt->value;
}

bool
cmdline_has(const char *key)
{
    return cmdline_lookup(key) != NULL;
}

int
cmdline_get_u64(const char *key, uint64_t *valp)
{
    const struct cmdline_opt *opt = cmdline_lookup(key);

    if (opt == NULL) {
        return -ENOENT;
    }

    if (opt->value == NULL) {
        return -EINVAL;
    }

    return cmdline_parse_u64(opt->value, valp);
}

const char *
cmdline_raw(void)
{
    return cmdline_cur->raw;
}

unsigned int
cmdline_nr_opts(void)
{
    return cmdline_cur->nr_opts;
}

int
cmdline_opt(unsigned int i, const char **keyp, const char **valuep)
{
    const struct cmdline_state *st = cmdline_cur;

    if (i >= st->nr_opts) {
        return -EINVAL;
    }

    *keyp = st->opts[i].key;
    *valuep = st->opts[i].value;
    return 0;
}

/*
 * Scan line once.  The first pass (store false) only validates and counts,
 * so that an invalid line is left untouched; the second one writes the words
 * in place, which is safe because a word never grows.
 */
static int
cmdline_split_scan(char *line, char **argv, unsigned int max_args,
                   bool store)
{
    const char *r = line;
    char *w = line;
    unsigned int argc = 0;

    for (;;) {
        char quote = '\0';
        char end;

        while (cmdline_is_blank(*r)) {
            r++;
        }

        if (*r == '\0') {
            break;
        }

        if (argc == max_args) {
            return -E2BIG;
        }

        if (store) {
            argv[argc] = w;
        }

        argc++;

        while (*r != '\0' && (quote != '\0' || !cmdline_is_blank(*r))) {
            char c = *r++;

            if (c == '\\' && quote != '\'') {
                if (*r == '\0') {
                    return -EINVAL;
                }

                c = *r++;
            } else if (quote == '\0' && (c == '"' || c == '\'')) {
                quote = c;
                continue;
            } else if (c == quote) {
                quote = '\0';
                continue;
            }

            if (store) {
                *w = c;
            }

            w++;
        }

        if (quote != '\0') {
            return -EINVAL;
        }

        /* Read the separator before the NUL may overwrite it. */
        end = *r;

        if (store) {
            *w = '\0';
        }

        w++;

        if (end == '\0') {
            break;
        }

        r++;
    }

    if (store) {
        argv[argc] = NULL;
    }

    return (int)argc;
}

int
cmdline_split(char *line, char **argv, unsigned int max_args)
{
    int ret;

    if (line == NULL || argv == NULL) {
        return -EINVAL;
    }

    ret = cmdline_split_scan(line, argv, max_args, false);

    if (ret < 0) {
        return ret;
    }

    return cmdline_split_scan(line, argv, max_args, true);
}

static int
cmdline_digit_value(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    } else if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }

    return -1;
}

/*
 * Parse the number at the start of s, stopping at the first character that
 * is not a digit of its base (*endp).  The whole number is scanned even past
 * an overflow, so that the caller can still reject what follows as garbage.
 */
static int
cmdline_scan_u64(const char *s, const char **endp, uint64_t *valp)
{
    unsigned int base = 10;
    const char *start;
    uint64_t value = 0;
    bool overflow = false;
    int digit;

    if (s == NULL) {
        return -EINVAL;
    }

    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    }

    start = s;

    for (;;) {
        digit = cmdline_digit_value(*s);

        if (digit < 0 || (unsigned int)digit >= base) {
            break;
        }

        if (value > (UINT64_MAX - (unsigned int)digit) / base) {
            overflow = true;
        } else {
            value = value * base + (unsigned int)digit;
        }

        s++;
    }

    if (s == start) {
        return -EINVAL;
    }

    *endp = s;
    *valp = value;
    return overflow ? -ERANGE : 0;
}

int
cmdline_parse_u64(const char *s, uint64_t *valp)
{
    const char *end;
    uint64_t value;
    int error;

    error = cmdline_scan_u64(s, &end, &value);

    if (error == -EINVAL || *end != '\0') {
        return -EINVAL;
    }

    if (error) {
        return error;
    }

    *valp = value;
    return 0;
}

int
cmdline_parse_size(const char *s, uint64_t *valp)
{
    const char *end;
    uint64_t value;
    unsigned int shift;
    int error;

    error = cmdline_scan_u64(s, &end, &value);

    if (error == -EINVAL) {
        return error;
    }

    switch (*end) {
    case '\0':
        shift = 0;
        break;
    case 'k':
    case 'K':
        shift = 10;
        break;
    case 'm':
    case 'M':
        shift = 20;
        break;
    case 'g':
    case 'G':
        shift = 30;
        break;
    default:
        return -EINVAL;
    }

    if (shift != 0 && end[1] != '\0') {
        return -EINVAL;
    }

    if (error) {
        return error;
    }

    if (value > (UINT64_MAX >> shift)) {
        return -ERANGE;
    }

    *valp = value << shift;
    return 0;
}
