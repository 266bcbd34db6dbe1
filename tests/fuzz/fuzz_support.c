/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Support linked into every fuzz target: the contract check, the input
 * stream, and mock_assert(), which kern/assert.h calls in host builds
 * (the unit tests get it from cmocka): here a failed kernel assertion
 * aborts, so libFuzzer keeps the input that reached it.
 *
 * Also strlcpy(), which kernel code calls and the host C library (glibc
 * before 2.38) may lack.  kern/string.c cannot stand in: it replaces
 * memcpy() and friends, which the sanitizers intercept.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

void mock_assert(const int result, const char *const expression,
                 const char *const file, const int line);

void
fuzz_check_at(int cond, const char *expr, const char *file, int line)
{
    if (!cond) {
        fprintf(stderr, "fuzz: %s:%d: check failed: %s\n", file, line, expr);
        abort();
    }
}

void
mock_assert(const int result, const char *const expression,
            const char *const file, const int line)
{
    if (!result) {
        fprintf(stderr, "fuzz: %s:%d: kernel assertion failed: %s\n", file,
                line, expression);
        abort();
    }
}

size_t strlcpy(char *dst, const char *src, size_t size)
    __attribute__((weak));

size_t
strlcpy(char *dst, const char *src, size_t size)
{
    size_t len = strlen(src);

    if (size != 0) {
        size_t n = (len < size - 1) ? len : size - 1;

        memcpy(dst, src, n);
        dst[n] = '\0';
    }

    return len;
}

uint8_t
fuzz_stream_u8(struct fuzz_stream *s)
{
    uint8_t b;

    if (s->size == 0) {
        return 0;
    }

    b = s->data[0];
    s->data++;
    s->size--;
    return b;
}

uint64_t
fuzz_stream_u64(struct fuzz_stream *s)
{
    uint64_t v = 0;

    for (unsigned int i = 0; i < 8; i++) {
        v |= (uint64_t)fuzz_stream_u8(s) << (8 * i);
    }

    return v;
}

size_t
fuzz_stream_str(struct fuzz_stream *s, char *buf, size_t size, size_t n)
{
    if (n > s->size) {
        n = s->size;
    }

    if (n >= size) {
        n = size - 1;
    }

    memcpy(buf, s->data, n);
    buf[n] = '\0';
    s->data += n;
    s->size -= n;
    return n;
}
