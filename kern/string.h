/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Freestanding string and memory functions with their standard C names and
 * semantics (strlcpy follows BSD: it returns strlen(src) so that truncation
 * shows as a return value >= size).  The compiler itself emits calls to
 * memcpy, memset, memmove and memcmp, so these must exist in every kernel
 * image.  All of them are reentrant and callable from any context, NMI
 * included.  Host unit tests get them from the C library instead (glibc
 * before 2.38 has no strlcpy: a host test that reaches strlcpy links
 * kern/string.c).
 */

#ifndef KERN_STRING_H
#define KERN_STRING_H

#include <stddef.h>

void *memcpy(void *dest, const void *src, size_t n);
void *memmove(void *dest, const void *src, size_t n);
void *memset(void *s, int c, size_t n);
int memcmp(const void *s1, const void *s2, size_t n);
void *memchr(const void *s, int c, size_t n);

size_t strlen(const char *s);
size_t strnlen(const char *s, size_t maxlen);
int strcmp(const char *s1, const char *s2);
int strncmp(const char *s1, const char *s2, size_t n);
char *strchr(const char *s, int c);
char *strrchr(const char *s, int c);
char *strstr(const char *haystack, const char *needle);

/*
 * Copy src into dest, truncating to size - 1 characters and always
 * NUL-terminating when size > 0 (size 0 writes nothing).  Return strlen(src).
 */
size_t strlcpy(char *dest, const char *src, size_t size);

#endif /* KERN_STRING_H */
