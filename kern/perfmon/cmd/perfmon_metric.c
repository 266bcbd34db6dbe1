/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fixed-point evaluation of metric formulas.  See
 * kern/perfmon/cmd/perfmon_metric.h.  A recursive-descent parser that
 * computes as it parses: expr = term {(+|-) term}, term = factor {(*|/)
 * factor}, factor = number | name | '(' expr ')'.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon/cmd/perfmon_metric.h"
#include "kern/printf.h"
#include "kern/string.h"

/* The largest magnitude a fixed-point value may take. */
#define PERFMON_METRIC_LIMIT        (INT64_MAX / 2)

/*
 * A parse in progress: where it is, how deep, the first error (0 while
 * none), and whether to stop: an arithmetic error (-EDOM, -ERANGE) lets
 * the parse go on, so that the syntax is checked and every name seen.
 */
struct perfmon_metric_parse {
    const char *s;
    size_t pos;
    unsigned int depth;
    bool stop;
    int error;
    size_t error_pos;
    perfmon_metric_value_fn value;
    void *arg;
};

static void
perfmon_metric_fail(struct perfmon_metric_parse *p, int error)
{
    bool stops = (error != -EDOM && error != -ERANGE);

    /* The first error, but one that stops the parse beats arithmetic. */
    if (p->error == 0 || (stops && !p->stop)) {
        p->error = error;
        p->error_pos = p->pos;
    }

    p->stop |= stops;
}

static void
perfmon_metric_blanks(struct perfmon_metric_parse *p)
{
    while (p->s[p->pos] == ' ') {
        p->pos++;
    }
}

static bool
perfmon_metric_is_name_start(char c)
{
    return ((c >= 'a') && (c <= 'z')) || ((c >= 'A') && (c <= 'Z'))
           || (c == '_');
}

static bool
perfmon_metric_is_name_char(char c)
{
    return perfmon_metric_is_name_start(c) || ((c >= '0') && (c <= '9'))
           || (c == '.') || (c == ':');
}

/* A name's length at p->pos: '-' between name characters is part of it. */
static size_t
perfmon_metric_name_len(const char *s)
{
    size_t i = 1;

    while (perfmon_metric_is_name_char(s[i])
           || (s[i] == '-' && perfmon_metric_is_name_char(s[i + 1]))) {
        i++;
    }

    return i;
}

static uint64_t
perfmon_metric_abs(int64_t v)
{
    return (v < 0) ? -(uint64_t)v : (uint64_t)v;
}

static int64_t
perfmon_metric_signed(struct perfmon_metric_parse *p, uint64_t mag,
                      bool negative)
{
    if (mag > PERFMON_METRIC_LIMIT) {
        perfmon_metric_fail(p, -ERANGE);
        return 0;
    }

    return negative ? -(int64_t)mag : (int64_t)mag;
}

/* a * b in fixed point: the 128-bit product, scaled back. */
static int64_t
perfmon_metric_mul(struct perfmon_metric_parse *p, int64_t a, int64_t b)
{
    unsigned __int128 prod = (unsigned __int128)perfmon_metric_abs(a)
                             * perfmon_metric_abs(b);

    prod >>= PERFMON_METRIC_SHIFT;

    if (prod > PERFMON_METRIC_LIMIT) {
        perfmon_metric_fail(p, -ERANGE);
        return 0;
    }

    return perfmon_metric_signed(p, (uint64_t)prod, (a < 0) != (b < 0));
}

/*
 * a / b in fixed point: the integer quotient, then the fraction's bits
 * one by one (long division: no 128-bit divide, which would need a
 * library the kernel does not link).
 */
static int64_t
perfmon_metric_div(struct perfmon_metric_parse *p, int64_t a, int64_t b)
{
    uint64_t ua = perfmon_metric_abs(a), ub = perfmon_metric_abs(b), q, r;

    if (b == 0) {
        perfmon_metric_fail(p, -EDOM);
        return 0;
    }

    q = ua / ub;
    r = ua % ub;

    if (q > (PERFMON_METRIC_LIMIT >> PERFMON_METRIC_SHIFT)) {
        perfmon_metric_fail(p, -ERANGE);
        return 0;
    }

    for (unsigned int i = 0; i <= PERFMON_METRIC_SHIFT; i++) {
        bool carry = (r >> 63) != 0;

        r <<= 1;
        q <<= 1;

        if (carry || r >= ub) {
            r -= ub;
            q |= 1;
        }
    }

    /* One bit more than kept: round to nearest. */
    q = (q + 1) >> 1;

    return perfmon_metric_signed(p, q, (a < 0) != (b < 0));
}

/* A decimal number with at most 6 decimals, as a fixed-point value. */
static int64_t
perfmon_metric_number(struct perfmon_metric_parse *p)
{
    uint64_t whole = 0, frac = 0, scale = 1;
    unsigned int decimals = 0;

    while (p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
        whole = whole * 10 + (uint64_t)(p->s[p->pos++] - '0');

        if (whole > PERFMON_METRIC_MAX_COUNT) {
            perfmon_metric_fail(p, -ERANGE);
            whole = 0;
        }
    }

    if (p->s[p->pos] == '.') {
        p->pos++;

        while (p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
            if (++decimals > 6) {
                perfmon_metric_fail(p, -EINVAL);
                return 0;
            }

            frac = frac * 10 + (uint64_t)(p->s[p->pos++] - '0');
            scale *= 10;
        }
    }

    return (int64_t)((whole << PERFMON_METRIC_SHIFT)
                     + ((frac << PERFMON_METRIC_SHIFT) + scale / 2) / scale);
}

static int64_t perfmon_metric_expr(struct perfmon_metric_parse *p);

static int64_t
perfmon_metric_factor(struct perfmon_metric_parse *p)
{
    char c;

    perfmon_metric_blanks(p);
    c = p->s[p->pos];

    if (c == '(') {
        int64_t v;

        if (++p->depth > PERFMON_METRIC_MAX_DEPTH) {
            perfmon_metric_fail(p, -E2BIG);
            return 0;
        }

        p->pos++;
        v = perfmon_metric_expr(p);
        perfmon_metric_blanks(p);

        if (p->s[p->pos] != ')') {
            perfmon_metric_fail(p, -EINVAL);
            return 0;
        }

        p->pos++;
        p->depth--;
        return v;
    }

    if (c >= '0' && c <= '9') {
        return perfmon_metric_number(p);
    }

    if (perfmon_metric_is_name_start(c)) {
        size_t len = perfmon_metric_name_len(&p->s[p->pos]);
        uint64_t count = 0;
        int error = p->value(p->arg, &p->s[p->pos], len, &count);

        if (error) {
            perfmon_metric_fail(p, error);
            return 0;
        }

        p->pos += len;

        if (count > PERFMON_METRIC_MAX_COUNT) {
            perfmon_metric_fail(p, -ERANGE);
            return 0;
        }

        return (int64_t)(count << PERFMON_METRIC_SHIFT);
    }

    perfmon_metric_fail(p, -EINVAL);
    return 0;
}

static int64_t
perfmon_metric_term(struct perfmon_metric_parse *p)
{
    int64_t v = perfmon_metric_factor(p);

    for (;;) {
        char op;

        perfmon_metric_blanks(p);
        op = p->s[p->pos];

        if (p->stop || (op != '*' && op != '/')) {
            return v;
        }

        p->pos++;
        v = (op == '*') ? perfmon_metric_mul(p, v, perfmon_metric_factor(p))
                        : perfmon_metric_div(p, v, perfmon_metric_factor(p));
    }
}

static int64_t
perfmon_metric_expr(struct perfmon_metric_parse *p)
{
    int64_t v = perfmon_metric_term(p);

    for (;;) {
        char op;
        int64_t w;

        perfmon_metric_blanks(p);
        op = p->s[p->pos];

        if (p->stop || (op != '+' && op != '-')) {
            return v;
        }

        p->pos++;
        w = perfmon_metric_term(p);
        w = (op == '+') ? w : -w;

        /* Out of range: noted, and the parse goes on (the syntax). */
        if (perfmon_metric_abs(v) > PERFMON_METRIC_LIMIT / 2
            || perfmon_metric_abs(w) > PERFMON_METRIC_LIMIT / 2) {
            perfmon_metric_fail(p, -ERANGE);
            v = 0;
        } else {
            v += w;
        }
    }
}

int
perfmon_metric_eval(const char *formula, perfmon_metric_value_fn value,
                    void *arg, int64_t *resultp, size_t *errposp)
{
    struct perfmon_metric_parse p = {
        .s = formula, .value = value, .arg = arg,
    };
    int64_t v;

    if (formula == NULL || value == NULL || resultp == NULL) {
        return -EINVAL;
    }

    if (strnlen(formula, PERFMON_METRIC_MAX_LEN + 1)
        > PERFMON_METRIC_MAX_LEN) {
        return -E2BIG;
    }

    v = perfmon_metric_expr(&p);
    perfmon_metric_blanks(&p);

    if (!p.stop && p.s[p.pos] != '\0') {
        perfmon_metric_fail(&p, -EINVAL);
    }

    if (errposp != NULL) {
        *errposp = p.error_pos;
    }

    if (p.error == 0) {
        *resultp = v;
    }

    return p.error;
}

/* ---- the names of a formula --------------------------------------------- */

#define PERFMON_METRIC_MAX_NAMES    64

struct perfmon_metric_names {
    const char *names[PERFMON_METRIC_MAX_NAMES];
    size_t lens[PERFMON_METRIC_MAX_NAMES];
    unsigned int nr;
    int (*fn)(void *arg, const char *name, size_t len);
    void *arg;
};

/* A value callback that reports each new name and counts 1. */
static int
perfmon_metric_collect(void *arg, const char *name, size_t len,
                       uint64_t *countp)
{
    struct perfmon_metric_names *n = arg;
    int error;

    *countp = 1;

    for (unsigned int i = 0; i < n->nr; i++) {
        if (n->lens[i] == len && memcmp(n->names[i], name, len) == 0) {
            return 0;
        }
    }

    if (n->nr == PERFMON_METRIC_MAX_NAMES) {
        return -E2BIG;
    }

    error = n->fn(n->arg, name, len);

    if (error) {
        return error;
    }

    n->names[n->nr] = name;
    n->lens[n->nr++] = len;
    return 0;
}

int
perfmon_metric_events(const char *formula,
                      int (*fn)(void *arg, const char *name, size_t len),
                      void *arg)
{
    struct perfmon_metric_names n = { .fn = fn, .arg = arg };
    int64_t v;
    int error;

    if (fn == NULL) {
        return -EINVAL;
    }

    error = perfmon_metric_eval(formula, perfmon_metric_collect, &n, &v,
                                NULL);

    /* Every count is 1 here: a division by zero or range is no error. */
    return (error == 0 || error == -EDOM || error == -ERANGE)
           ? (int)n.nr : error;
}

void
perfmon_metric_format(int64_t value, char *buf, size_t size)
{
    uint64_t mag = perfmon_metric_abs(value);
    uint64_t hundredths = (mag * 100 + (uint64_t)PERFMON_METRIC_ONE / 2)
                          >> PERFMON_METRIC_SHIFT;

    if (mag > PERFMON_METRIC_LIMIT / 128) {
        hundredths = (mag >> PERFMON_METRIC_SHIFT) * 100;
    }

    ksnprintf(buf, size, "%s%llu.%02llu",
              (value < 0 && hundredths != 0) ? "-" : "",
              (unsigned long long)(hundredths / 100),
              (unsigned long long)(hundredths % 100));
}

/* ---- the generic metrics ------------------------------------------------ */

static const struct {
    const char *name;
    const char *formula;
} perfmon_metric_builtins[] = {
    { "ipc", "instructions / cycles" },
    { "cpi", "cycles / instructions" },
    { "branch_miss_rate", "100 * branch-misses / branches" },
    { "cache_miss_rate", "100 * cache-misses / cache-references" },
    { "mpki", "1000 * cache-misses / instructions" },
};

bool
perfmon_metric_builtin(unsigned int i, const char **namep,
                       const char **formulap)
{
    if (i >= ARRAY_SIZE(perfmon_metric_builtins)) {
        return false;
    }

    *namep = perfmon_metric_builtins[i].name;
    *formulap = perfmon_metric_builtins[i].formula;
    return true;
}
