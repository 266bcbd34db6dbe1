/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fuzz target: the kernel's printf formatter (kern/printf.c) against the
 * host C library's, for the formats whose meaning C defines and the
 * kernel supports (kern/printf.h).  The input chooses one conversion
 * (flags, width, precision, each maybe '*', length modifier, conversion,
 * value) between two pieces of literal text, and the size of the buffer.
 *
 * Checked: the same return value and the same bytes in the buffer as the
 * host's snprintf, truncation included.  Combinations C leaves undefined
 * ('#' on %d, '0' on %s, a length on %c...) and the kernel's own
 * extensions (the '\'' flag, %p's fixed width) are only run, under the
 * sanitizers, not compared.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "fuzz.h"
#include "kern/printf.h"

#define PF_BUF_SIZE     1024
#define PF_TEXT_MAX     24
#define PF_NUM_MAX      300     /* widths and precisions, up to */

static const char pf_flag_chars[] = "-0+ #'";
static const char *const pf_lengths[] = { "", "hh", "h", "l", "ll", "z", "j",
                                          "t" };
static const char pf_convs[] = "diuxXocsp";

/* The format being built, and what to pass with it. */
struct pf_case {
    char fmt[128];
    size_t len;
    unsigned int flags;                 /* bit i: pf_flag_chars[i] */
    bool has_prec;
    unsigned int length;                /* index in pf_lengths */
    char conv;
    int stars[2];
    unsigned int nr_stars;
    bool comparable;                    /* C defines it, the kernel too */
};

static char pf_kbuf[PF_BUF_SIZE], pf_hbuf[PF_BUF_SIZE];
static char pf_string[PF_TEXT_MAX + 1];

static void
pf_add(struct pf_case *c, const char *s)
{
    size_t n = strlen(s);

    fuzz_check(c->len + n < sizeof(c->fmt));
    memcpy(&c->fmt[c->len], s, n + 1);
    c->len += n;
}

/* Literal text: '%' would start a conversion, NUL would end the format. */
static void
pf_add_text(struct pf_case *c, struct fuzz_stream *s)
{
    char text[PF_TEXT_MAX + 1];
    size_t n = fuzz_stream_u8(s) % (PF_TEXT_MAX + 1);

    fuzz_stream_str(s, text, sizeof(text), n);

    for (char *p = text; *p != '\0'; p++) {
        if (*p == '%') {
            *p = '_';
        }
    }

    pf_add(c, text);
}

/* Width or precision: none, a number, or '*' with a value from input. */
static bool
pf_add_number(struct pf_case *c, struct fuzz_stream *s)
{
    uint8_t mode = fuzz_stream_u8(s);
    char num[16];

    switch (mode % 3) {
    case 0:
        return false;
    case 1:
        snprintf(num, sizeof(num), "%u",
                 (unsigned int)(fuzz_stream_u8(s) + 256U * (mode >> 7))
                 % PF_NUM_MAX);
        pf_add(c, num);
        return true;
    default:
        c->stars[c->nr_stars++] = (int8_t)fuzz_stream_u8(s) * 2;
        pf_add(c, "*");
        return true;
    }
}

static void
pf_build(struct pf_case *c, struct fuzz_stream *s)
{
    uint8_t flags = fuzz_stream_u8(s);

    memset(c, 0, sizeof(*c));
    pf_add_text(c, s);
    pf_add(c, "%");

    for (unsigned int i = 0; i < sizeof(pf_flag_chars) - 1; i++) {
        if (flags & (1U << i)) {
            char f[2] = { pf_flag_chars[i], '\0' };

            c->flags |= 1U << i;
            pf_add(c, f);
        }
    }

    pf_add_number(c, s);

    if (fuzz_stream_u8(s) & 1) {
        pf_add(c, ".");
        c->has_prec = true;
        pf_add_number(c, s);
    }

    c->length = fuzz_stream_u8(s) % (sizeof(pf_lengths)
                                     / sizeof(pf_lengths[0]));
    c->conv = pf_convs[fuzz_stream_u8(s) % (sizeof(pf_convs) - 1)];
    pf_add(c, pf_lengths[c->length]);
    pf_add(c, (char[2]){ c->conv, '\0' });
    pf_add_text(c, s);
}

/* Whether C defines the combination, and the kernel means the same. */
static bool
pf_comparable(const struct pf_case *c)
{
    bool numeric = strchr("diuxXo", c->conv) != NULL;
    bool alt = c->flags & (1U << 4), zero = c->flags & (1U << 1);

    if (c->flags & (1U << 5)) {
        return false;                   /* '\'': grouping, kernel only */
    }

    if (c->conv == 'p') {
        return false;                   /* kernel: always 16 digits */
    }

    if (!numeric && (zero || alt || c->length != 0)) {
        return false;
    }

    if (c->conv == 'c' && c->has_prec) {
        return false;
    }

    return !(alt && strchr("diuc", c->conv) != NULL);
}

#define PF_BOTH(size, ...)                                              \
    do {                                                                \
        kn = ksnprintf(pf_kbuf, (size), c->fmt, __VA_ARGS__);           \
        if (c->comparable) {                                            \
            hn = snprintf(pf_hbuf, (size), c->fmt, __VA_ARGS__);        \
        }                                                               \
    } while (0)

#define PF_CALL(size, v)                                                \
    do {                                                                \
        if (c->nr_stars == 0) {                                         \
            PF_BOTH((size), (v));                                       \
        } else if (c->nr_stars == 1) {                                  \
            PF_BOTH((size), c->stars[0], (v));                          \
        } else {                                                        \
            PF_BOTH((size), c->stars[0], c->stars[1], (v));             \
        }                                                               \
    } while (0)

static void
pf_run(const struct pf_case *c, size_t size, uint64_t v)
{
    bool is_signed = (c->conv == 'd' || c->conv == 'i');
    int kn = 0, hn = 0;

    if (c->conv == 's') {
        PF_CALL(size, pf_string);
    } else if (c->conv == 'c') {
        PF_CALL(size, (int)(unsigned char)v);
    } else if (c->conv == 'p') {
        PF_CALL(size, (void *)(uintptr_t)v);
    } else if (c->length <= 2) {            /* none, hh, h: promoted */
        PF_CALL(size, is_signed ? (int)v : (int)(unsigned int)v);
    } else if (c->length == 3) {
        PF_CALL(size, is_signed ? (long)v : (long)(unsigned long)v);
    } else if (c->length == 4) {
        PF_CALL(size, (long long)v);
    } else if (c->length == 5) {
        PF_CALL(size, is_signed ? (ssize_t)v : (ssize_t)(size_t)v);
    } else if (c->length == 6) {
        PF_CALL(size, (intmax_t)v);
    } else {
        PF_CALL(size, (ptrdiff_t)v);
    }

    fuzz_check(kn >= 0);

    if (size > 0) {
        fuzz_check(memchr(pf_kbuf, '\0', size) != NULL);
    }

    if (!c->comparable) {
        return;
    }

    if (kn != hn || (size > 0 && memcmp(pf_kbuf, pf_hbuf, size) != 0)) {
        fprintf(stderr, "printf: format \"%s\" value %#llx size %zu:\n"
                "  kernel %d \"%.*s\"\n  host   %d \"%.*s\"\n", c->fmt,
                (unsigned long long)v, size, kn, (int)size, pf_kbuf, hn,
                (int)size, pf_hbuf);
        fuzz_check(!"kernel and host printf differ");
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_stream s = { data, size };
    struct pf_case c;
    uint64_t value;
    size_t bufsize;

    pf_build(&c, &s);
    c.comparable = pf_comparable(&c);
    value = fuzz_stream_u64(&s);
    bufsize = (fuzz_stream_u8(&s) & 1) ? PF_BUF_SIZE
                                       : fuzz_stream_u8(&s) % 16;
    fuzz_stream_str(&s, pf_string, sizeof(pf_string), PF_TEXT_MAX);
    memset(pf_kbuf, 0x55, sizeof(pf_kbuf));
    memset(pf_hbuf, 0x55, sizeof(pf_hbuf));
    pf_run(&c, bufsize, value);
    return 0;
}
