/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of kern/string.c, linked in place of the C library's versions (the
 * test is built with -fno-builtin so that the calls really reach them):
 * standard results, overlapping moves in both directions, the sign of
 * comparisons on bytes above 0x7f, and strlcpy truncation.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kern/string.h"

static void
test_memcpy_memset(void **state)
{
    unsigned char buf[64], src[64];

    (void)state;
    for (size_t i = 0; i < sizeof(src); i++) {
        src[i] = (unsigned char)(i * 7 + 1);
    }

    assert_ptr_equal(memset(buf, 0xcc, sizeof(buf)), buf);
    for (size_t i = 0; i < sizeof(buf); i++) {
        assert_int_equal(buf[i], 0xcc);
    }

    /* Every length and offset, and nothing past the end is touched. */
    for (size_t off = 0; off < 8; off++) {
        for (size_t n = 0; n < 40; n++) {
            memset(buf, 0xcc, sizeof(buf));
            assert_ptr_equal(memcpy(buf + off, src, n), buf + off);

            for (size_t i = 0; i < sizeof(buf); i++) {
                unsigned char want = (i >= off && i < off + n)
                                     ? src[i - off] : 0xcc;

                assert_int_equal(buf[i], want);
            }
        }
    }

    memset(buf, 0x1ff, 3);     /* only the low byte of c counts */
    assert_int_equal(buf[0], 0xff);
    assert_int_equal(buf[2], 0xff);
    assert_int_equal(buf[3], 0xcc);
    memset(buf, 0, 0);
    assert_int_equal(buf[0], 0xff);
}

static void
test_memmove(void **state)
{
    char buf[16];

    (void)state;
    memcpy(buf, "0123456789", 11);
    assert_ptr_equal(memmove(buf + 2, buf, 5), buf + 2);
    assert_string_equal(buf, "0101234789");

    memcpy(buf, "0123456789", 11);
    assert_ptr_equal(memmove(buf, buf + 3, 5), buf);
    assert_string_equal(buf, "3456756789");

    memcpy(buf, "0123456789", 11);
    memmove(buf + 1, buf, 9);
    assert_string_equal(buf, "0012345678");

    memcpy(buf, "abc", 4);
    memmove(buf, buf, 3);
    memmove(buf + 1, buf, 0);
    assert_string_equal(buf, "abc");
}

static void
test_memcmp(void **state)
{
    (void)state;
    assert_int_equal(memcmp("abc", "abc", 3), 0);
    assert_int_equal(memcmp("abc", "abd", 0), 0);
    assert_true(memcmp("abc", "abd", 3) < 0);
    assert_true(memcmp("abd", "abc", 3) > 0);
    /* Bytes compare as unsigned char. */
    assert_true(memcmp("\x80", "\x7f", 1) > 0);
    assert_int_equal(memcmp("a\0x", "a\0y", 2), 0);
    assert_true(memcmp("a\0x", "a\0y", 3) < 0);
}

static void
test_lengths(void **state)
{
    (void)state;
    assert_int_equal(strlen(""), 0);
    assert_int_equal(strlen("hello"), 5);
    assert_int_equal(strnlen("hello", 3), 3);
    assert_int_equal(strnlen("hello", 5), 5);
    assert_int_equal(strnlen("hello", 100), 5);
    assert_int_equal(strnlen("hello", 0), 0);
}

static void
test_strcmp(void **state)
{
    (void)state;
    assert_int_equal(strcmp("", ""), 0);
    assert_int_equal(strcmp("abc", "abc"), 0);
    assert_true(strcmp("abc", "abd") < 0);
    assert_true(strcmp("abc", "ab") > 0);
    assert_true(strcmp("ab", "abc") < 0);
    assert_true(strcmp("\xff", "a") > 0);

    assert_int_equal(strncmp("abcX", "abcY", 3), 0);
    assert_true(strncmp("abcX", "abcY", 4) < 0);
    assert_int_equal(strncmp("abc", "xyz", 0), 0);
    assert_int_equal(strncmp("ab", "ab", 10), 0);
    assert_true(strncmp("ab", "abc", 10) < 0);
    assert_true(strncmp("\x90", "\x10", 1) > 0);
}

static void
test_strchr(void **state)
{
    const char *s = "hello";
    const char *e = "a\xe9";

    (void)state;
    assert_ptr_equal(strchr(s, 'l'), s + 2);
    assert_ptr_equal(strrchr(s, 'l'), s + 3);
    assert_ptr_equal(strchr(s, 'h'), s);
    assert_ptr_equal(strrchr(s, 'o'), s + 4);
    assert_null(strchr(s, 'z'));
    assert_null(strrchr(s, 'z'));
    /* The terminator is part of the string. */
    assert_ptr_equal(strchr(s, '\0'), s + 5);
    assert_ptr_equal(strrchr(s, '\0'), s + 5);
    /* c is converted to char: 0xe9 and -23 find the same byte. */
    assert_ptr_equal(strchr(e, 0xe9), e + 1);
    assert_ptr_equal(strchr(e, -23), e + 1);
}

static void
test_memchr(void **state)
{
    const char s[] = "ab\0cb\xe9";

    (void)state;
    assert_ptr_equal(memchr(s, 'b', sizeof(s)), s + 1);
    /* Past the NUL, and only within n bytes. */
    assert_ptr_equal(memchr(s, 'c', sizeof(s)), s + 3);
    assert_null(memchr(s, 'c', 3));
    assert_ptr_equal(memchr(s, '\0', sizeof(s)), s + 2);
    assert_null(memchr(s, 'a', 0));
    assert_null(memchr(s, 'z', sizeof(s)));
    /* c is converted to unsigned char. */
    assert_ptr_equal(memchr(s, -23, sizeof(s)), s + 5);
}

static void
test_strstr(void **state)
{
    const char *s = "abababc";
    const char *empty = "";

    (void)state;
    assert_ptr_equal(strstr(s, ""), s);
    assert_ptr_equal(strstr(s, "ab"), s);
    assert_ptr_equal(strstr(s, "abc"), s + 4);
    assert_ptr_equal(strstr(s, "c"), s + 6);
    assert_null(strstr(s, "abcd"));
    assert_null(strstr(s, "x"));
    assert_null(strstr("", "a"));
    assert_ptr_equal(strstr(empty, ""), empty);
}

static void
test_strlcpy(void **state)
{
    char buf[8];

    (void)state;
    memset(buf, 'X', sizeof(buf));
    assert_int_equal(strlcpy(buf, "hi", sizeof(buf)), 2);
    assert_string_equal(buf, "hi");
    assert_int_equal(buf[3], 'X');

    memset(buf, 'X', sizeof(buf));
    assert_int_equal(strlcpy(buf, "truncated", 5), 9);
    assert_string_equal(buf, "trun");
    assert_int_equal(buf[5], 'X');

    assert_int_equal(strlcpy(buf, "1234567", sizeof(buf)), 7);
    assert_string_equal(buf, "1234567");

    memset(buf, 'X', sizeof(buf));
    assert_int_equal(strlcpy(buf, "abc", 1), 3);
    assert_int_equal(buf[0], '\0');
    assert_int_equal(buf[1], 'X');

    assert_int_equal(strlcpy(NULL, "abc", 0), 3);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memcpy_memset),
        cmocka_unit_test(test_memmove),
        cmocka_unit_test(test_memcmp),
        cmocka_unit_test(test_lengths),
        cmocka_unit_test(test_strcmp),
        cmocka_unit_test(test_strchr),
        cmocka_unit_test(test_memchr),
        cmocka_unit_test(test_strstr),
        cmocka_unit_test(test_strlcpy),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
