/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Freestanding string and memory functions.  Plain byte loops, except that
 * memcpy and memset use `rep movsb`/`rep stosb`, which are fast on every CPU
 * with ERMS and never touch SIMD state (the kernel saves none).
 */

#include <stddef.h>
#include <stdint.h>

#include "kern/string.h"

/*
 * At -O2 gcc recognizes byte-copy and byte-fill loops and replaces them with
 * calls to memcpy/memmove/memset, which here would be the function itself.
 */
#define STRING_NO_LIBCALL \
    __attribute__((optimize("no-tree-loop-distribute-patterns")))

void *
memcpy(void *dest, const void *src, size_t n)
{
    void *d = dest;

    __asm__ __volatile__("rep movsb"
                         : "+D" (d), "+S" (src), "+c" (n)
                         :
                         : "memory");
    return dest;
}

STRING_NO_LIBCALL void *
memmove(void *dest, const void *src, size_t n)
{
    unsigned char *d = dest;
    const unsigned char *s = src;

    /* A forward copy is safe unless dest starts inside [src, src + n). */
    if ((uintptr_t)d - (uintptr_t)s >= n) {
        return memcpy(dest, src, n);
    }

    while (n > 0) {
        n--;
        d[n] = s[n];
    }

    return dest;
}

void *
memset(void *s, int c, size_t n)
{
    void *d = s;

    __asm__ __volatile__("rep stosb"
                         : "+D" (d), "+c" (n)
                         : "a" (c)
                         : "memory");
    return s;
}

STRING_NO_LIBCALL int
memcmp(const void *s1, const void *s2, size_t n)
{
    const unsigned char *a = s1;
    const unsigned char *b = s2;

    for (size_t i = 0; i < n; i++) {
        if (a[i] != b[i]) {
            return (int)a[i] - (int)b[i];
        }
    }

    return 0;
}

STRING_NO_LIBCALL void *
memchr(const void *s, int c, size_t n)
{
    const unsigned char *p = s;

    for (size_t i = 0; i < n; i++) {
        if (p[i] == (unsigned char)c) {
            return (void *)&p[i];
        }
    }

    return NULL;
}

STRING_NO_LIBCALL size_t
strlen(const char *s)
{
    size_t n = 0;

    while (s[n] != '\0') {
        n++;
    }

    return n;
}

STRING_NO_LIBCALL size_t
strnlen(const char *s, size_t maxlen)
{
    size_t n = 0;

    while (n < maxlen && s[n] != '\0') {
        n++;
    }

    return n;
}

STRING_NO_LIBCALL int
strcmp(const char *s1, const char *s2)
{
    const unsigned char *a = (const unsigned char *)s1;
    const unsigned char *b = (const unsigned char *)s2;

    while (*a != '\0' && *a == *b) {
        a++;
        b++;
    }

    return (int)*a - (int)*b;
}

STRING_NO_LIBCALL int
strncmp(const char *s1, const char *s2, size_t n)
{
    const unsigned char *a = (const unsigned char *)s1;
    const unsigned char *b = (const unsigned char *)s2;

    for (size_t i = 0; i < n; i++) {
        if (a[i] != b[i] || a[i] == '\0') {
            return (int)a[i] - (int)b[i];
        }
    }

    return 0;
}

STRING_NO_LIBCALL char *
strchr(const char *s, int c)
{
    char ch = (char)c;

    for (;; s++) {
        if (*s == ch) {
            return (char *)s;
        }

        if (*s == '\0') {
            return NULL;
        }
    }
}

STRING_NO_LIBCALL char *
strrchr(const char *s, int c)
{
    char ch = (char)c;
    const char *last = NULL;

    for (;; s++) {
        if (*s == ch) {
            last = s;
        }

        if (*s == '\0') {
            return (char *)last;
        }
    }
}

STRING_NO_LIBCALL char *
strstr(const char *haystack, const char *needle)
{
    size_t len = strlen(needle);

    if (len == 0) {
        return (char *)haystack;
    }

    for (; *haystack != '\0'; haystack++) {
        if (*haystack == *needle && strncmp(haystack, needle, len) == 0) {
            return (char *)haystack;
        }
    }

    return NULL;
}

STRING_NO_LIBCALL size_t
strlcpy(char *dest, const char *src, size_t size)
{
    size_t len = strlen(src);

    if (size > 0) {
        size_t n = (len < size - 1) ? len : size - 1;

        memcpy(dest, src, n);
        dest[n] = '\0';
    }

    return len;
}
