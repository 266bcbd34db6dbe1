/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * printf-style formatting.  A conversion specification is parsed completely
 * before any argument is fetched, so that an unknown conversion can be
 * printed as written without consuming the arguments a '*' in it would have
 * taken.  Integers are converted into a small buffer on the stack and the
 * padding is emitted in chunks from constant strings, which keeps the stack
 * use small and independent of the field width.
 */

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/printf.h"
#include "kern/string.h"

#define FMT_LEFT    0x01    /* '-': pad on the right */
#define FMT_ZERO    0x02    /* '0': pad numbers with zeros */
#define FMT_PLUS    0x04    /* '+': always print a sign */
#define FMT_SPACE   0x08    /* ' ': space where a '+' would go */
#define FMT_ALT     0x10    /* '#': 0x prefix, leading octal 0 */
#define FMT_GROUP   0x20    /* '\'': thousands separators */

enum fmt_length {
    FMT_LEN_NONE,
    FMT_LEN_HH,
    FMT_LEN_H,
    FMT_LEN_L,
    FMT_LEN_LL,
    FMT_LEN_Z,
    FMT_LEN_J,
    FMT_LEN_T,
};

/*
 * One parsed conversion specification.  width is 0 when absent, prec -1.
 */
struct fmt_spec {
    unsigned int flags;
    int width;
    int prec;
    enum fmt_length length;
    char conv;
};

/*
 * Output state: where the text goes and how much has been produced.
 */
struct fmt_ctx {
    fmt_out_fn_t out;
    void *arg;
    size_t count;
};

/*
 * Large enough for a 64-bit value in octal (22 digits) and in decimal with
 * separators (20 digits, 6 commas).
 */
#define FMT_INT_BUF_SIZE    32

static const char fmt_spaces[] = "                                ";
static const char fmt_zeros[] = "00000000000000000000000000000000";

static void
fmt_emit(struct fmt_ctx *ctx, const char *s, size_t n)
{
    if (n == 0) {
        return;
    }

    ctx->out(ctx->arg, s, n);
    ctx->count += n;
}

static void
fmt_pad(struct fmt_ctx *ctx, const char *chunk, size_t n)
{
    size_t max = sizeof(fmt_spaces) - 1;

    while (n > 0) {
        size_t len = (n < max) ? n : max;

        fmt_emit(ctx, chunk, len);
        n -= len;
    }
}

/* Emit s[0..n) padded to the field width, as %s and %c do. */
static void
fmt_emit_field(struct fmt_ctx *ctx, const struct fmt_spec *spec,
               const char *s, size_t n)
{
    size_t pad = ((size_t)spec->width > n) ? (size_t)spec->width - n : 0;

    if (!(spec->flags & FMT_LEFT)) {
        fmt_pad(ctx, fmt_spaces, pad);
    }

    fmt_emit(ctx, s, n);

    if (spec->flags & FMT_LEFT) {
        fmt_pad(ctx, fmt_spaces, pad);
    }
}

/*
 * Emit the magnitude value in the given base, after prefix (a sign or
 * "0x"), with the zeros its precision or the '0' flag ask for.
 */
static void
fmt_emit_int(struct fmt_ctx *ctx, const struct fmt_spec *spec,
             uint64_t value, unsigned int base, const char *prefix)
{
    const char *digits = (spec->conv == 'X') ? "0123456789ABCDEF"
                                             : "0123456789abcdef";
    bool group = (spec->flags & FMT_GROUP) && base == 10;
    char buf[FMT_INT_BUF_SIZE];
    size_t pos = sizeof(buf);
    size_t ndigits = 0;
    size_t nchars, zeros, len;

    /* C: a zero with precision 0 has no digits at all. */
    if (value != 0 || spec->prec != 0) {
        do {
            if (group && ndigits != 0 && ndigits % 3 == 0) {
                buf[--pos] = ',';
            }

            buf[--pos] = digits[value % base];
            value /= base;
            ndigits++;
        } while (value != 0);
    }

    nchars = sizeof(buf) - pos;
    zeros = ((size_t)spec->prec > ndigits && spec->prec > 0)
            ? (size_t)spec->prec - ndigits : 0;

    /* '#' with 'o' makes the first digit a 0, adding one if needed. */
    if ((spec->flags & FMT_ALT) && base == 8 && zeros == 0
        && (nchars == 0 || buf[pos] != '0')) {
        zeros = 1;
    }

    len = strlen(prefix) + zeros + nchars;

    if ((spec->flags & (FMT_ZERO | FMT_LEFT)) == FMT_ZERO && spec->prec < 0
        && (size_t)spec->width > len) {
        zeros += (size_t)spec->width - len;
        len = (size_t)spec->width;
    }

    if (!(spec->flags & FMT_LEFT) && (size_t)spec->width > len) {
        fmt_pad(ctx, fmt_spaces, (size_t)spec->width - len);
    }

    fmt_emit(ctx, prefix, strlen(prefix));
    fmt_pad(ctx, fmt_zeros, zeros);
    fmt_emit(ctx, &buf[pos], nchars);

    if ((spec->flags & FMT_LEFT) && (size_t)spec->width > len) {
        fmt_pad(ctx, fmt_spaces, (size_t)spec->width - len);
    }
}

/* Parse a decimal field, saturating at INT_MAX rather than overflowing. */
static int
fmt_parse_num(const char **fmtp)
{
    const char *fmt = *fmtp;
    int value = 0;

    while (*fmt >= '0' && *fmt <= '9') {
        int digit = *fmt - '0';

        value = (value > (INT_MAX - digit) / 10) ? INT_MAX
                                                 : value * 10 + digit;
        fmt++;
    }

    *fmtp = fmt;
    return value;
}

static unsigned int
fmt_parse_flags(const char **fmtp)
{
    const char *fmt = *fmtp;
    unsigned int flags = 0;

    for (;; fmt++) {
        switch (*fmt) {
        case '-':
            flags |= FMT_LEFT;
            break;
        case '0':
            flags |= FMT_ZERO;
            break;
        case '+':
            flags |= FMT_PLUS;
            break;
        case ' ':
            flags |= FMT_SPACE;
            break;
        case '#':
            flags |= FMT_ALT;
            break;
        case '\'':
            flags |= FMT_GROUP;
            break;
        default:
            *fmtp = fmt;
            return flags;
        }
    }
}

static enum fmt_length
fmt_parse_length(const char **fmtp)
{
    const char *fmt = *fmtp;
    enum fmt_length length;

    switch (*fmt) {
    case 'h':
        if (fmt[1] == 'h') {
            fmt++;
            length = FMT_LEN_HH;
        } else {
            length = FMT_LEN_H;
        }
        break;
    case 'l':
        if (fmt[1] == 'l') {
            fmt++;
            length = FMT_LEN_LL;
        } else {
            length = FMT_LEN_L;
        }
        break;
    case 'z':
        length = FMT_LEN_Z;
        break;
    case 'j':
        length = FMT_LEN_J;
        break;
    case 't':
        length = FMT_LEN_T;
        break;
    default:
        return FMT_LEN_NONE;
    }

    *fmtp = fmt + 1;
    return length;
}

static bool
fmt_conv_known(char conv)
{
    return conv != '\0' && strchr("diuxXocsp%", conv) != NULL;
}

int
fmt_vformat(fmt_out_fn_t out, void *arg, const char *fmt, va_list ap)
{
    struct fmt_ctx ctx = { out, arg, 0 };

    while (*fmt != '\0') {
        const char *start = fmt;
        struct fmt_spec spec;
        bool width_star = false, prec_star = false;
        const char *prefix = "";
        uint64_t value;

        if (*fmt != '%') {
            while (*fmt != '\0' && *fmt != '%') {
                fmt++;
            }

            fmt_emit(&ctx, start, (size_t)(fmt - start));
            continue;
        }

        fmt++;
        spec.flags = fmt_parse_flags(&fmt);
        spec.width = 0;
        spec.prec = -1;

        if (*fmt == '*') {
            width_star = true;
            fmt++;
        } else {
            spec.width = fmt_parse_num(&fmt);
        }

        if (*fmt == '.') {
            fmt++;

            if (*fmt == '*') {
                prec_star = true;
                fmt++;
            } else {
                spec.prec = fmt_parse_num(&fmt);
            }
        }

        spec.length = fmt_parse_length(&fmt);
        spec.conv = *fmt;

        if (!fmt_conv_known(spec.conv)) {
            if (spec.conv != '\0') {
                fmt++;
            }

            fmt_emit(&ctx, start, (size_t)(fmt - start));
            continue;
        }

        fmt++;

        if (width_star) {
            int width = va_arg(ap, int);

            if (width < 0) {
                spec.flags |= FMT_LEFT;
                width = (width == INT_MIN) ? INT_MAX : -width;
            }

            spec.width = width;
        }

        if (prec_star) {
            int prec = va_arg(ap, int);

            spec.prec = (prec < 0) ? -1 : prec;
        }

        switch (spec.conv) {
        case 'd':
        case 'i': {
            int64_t sval;

            switch (spec.length) {
            case FMT_LEN_HH:
                sval = (signed char)va_arg(ap, int);
                break;
            case FMT_LEN_H:
                sval = (short)va_arg(ap, int);
                break;
            case FMT_LEN_L:
                sval = va_arg(ap, long);
                break;
            case FMT_LEN_LL:
                sval = va_arg(ap, long long);
                break;
            case FMT_LEN_Z:
            case FMT_LEN_T:
                sval = va_arg(ap, ptrdiff_t);
                break;
            case FMT_LEN_J:
                sval = va_arg(ap, intmax_t);
                break;
            default:
                sval = va_arg(ap, int);
                break;
            }

            /* Negate in unsigned arithmetic: INT64_MIN has no positive. */
            if (sval < 0) {
                value = (uint64_t)0 - (uint64_t)sval;
                prefix = "-";
            } else {
                value = (uint64_t)sval;
                prefix = (spec.flags & FMT_PLUS) ? "+"
                         : (spec.flags & FMT_SPACE) ? " " : "";
            }

            fmt_emit_int(&ctx, &spec, value, 10, prefix);
            break;
        }
        case 'u':
        case 'x':
        case 'X':
        case 'o':
            switch (spec.length) {
            case FMT_LEN_HH:
                value = (unsigned char)va_arg(ap, unsigned int);
                break;
            case FMT_LEN_H:
                value = (unsigned short)va_arg(ap, unsigned int);
                break;
            case FMT_LEN_L:
                value = va_arg(ap, unsigned long);
                break;
            case FMT_LEN_LL:
                value = va_arg(ap, unsigned long long);
                break;
            case FMT_LEN_Z:
            case FMT_LEN_T:
                value = va_arg(ap, size_t);
                break;
            case FMT_LEN_J:
                value = va_arg(ap, uintmax_t);
                break;
            default:
                value = va_arg(ap, unsigned int);
                break;
            }

            if (spec.conv == 'u') {
                fmt_emit_int(&ctx, &spec, value, 10, "");
            } else if (spec.conv == 'o') {
                fmt_emit_int(&ctx, &spec, value, 8, "");
            } else {
                if ((spec.flags & FMT_ALT) && value != 0) {
                    prefix = (spec.conv == 'X') ? "0X" : "0x";
                }

                fmt_emit_int(&ctx, &spec, value, 16, prefix);
            }
            break;
        case 'p':
            value = (uintptr_t)va_arg(ap, void *);
            spec.flags &= FMT_LEFT;
            spec.prec = 16;
            fmt_emit_int(&ctx, &spec, value, 16, "0x");
            break;
        case 'c': {
            char c = (char)va_arg(ap, int);

            fmt_emit_field(&ctx, &spec, &c, 1);
            break;
        }
        case 's': {
            const char *s = va_arg(ap, const char *);

            if (s == NULL) {
                s = "(null)";
            }

            fmt_emit_field(&ctx, &spec, s, (spec.prec < 0)
                           ? strlen(s) : strnlen(s, (size_t)spec.prec));
            break;
        }
        default:    /* '%' */
            fmt_emit(&ctx, "%", 1);
            break;
        }
    }

    return (ctx.count > INT_MAX) ? INT_MAX : (int)ctx.count;
}

/*
 * Destination of kvsnprintf(): pos counts every character produced, stored
 * or not.
 */
struct fmt_buf {
    char *buf;
    size_t size;
    size_t pos;
};

static void
fmt_buf_out(void *arg, const char *s, size_t n)
{
    struct fmt_buf *fb = arg;

    if (fb->size > 0 && fb->pos < fb->size - 1) {
        size_t room = fb->size - 1 - fb->pos;

        memcpy(fb->buf + fb->pos, s, (n < room) ? n : room);
    }

    fb->pos += n;
}

int
kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
    struct fmt_buf fb = { buf, size, 0 };
    int ret;

    ret = fmt_vformat(fmt_buf_out, &fb, fmt, ap);

    if (size > 0) {
        buf[(fb.pos < size - 1) ? fb.pos : size - 1] = '\0';
    }

    return ret;
}

int
ksnprintf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    int ret;

    va_start(ap, fmt);
    ret = kvsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return ret;
}
