/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of kern/printf.c: a table of conversions checked against expected
 * strings (and, where the C library formats the same way, against the
 * host's vsnprintf as well), truncation and return values of ksnprintf(),
 * and the output callback contract of fmt_vformat().
 */

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include <cmocka.h>

#include "kern/printf.h"

static void __attribute__((format(printf, 4, 5)))
check_fmt(int line, bool host_cmp, const char *expected, const char *fmt, ...)
{
    char buf[512], host[512];
    va_list ap, ap2;
    int ret;

    va_start(ap, fmt);
    va_copy(ap2, ap);
    memset(buf, 'X', sizeof(buf));
    ret = kvsnprintf(buf, sizeof(buf), fmt, ap);

    if (strcmp(buf, expected) != 0 || ret != (int)strlen(expected)) {
        print_error("line %d: format \"%s\": got \"%s\" (%d), "
                    "expected \"%s\" (%zu)\n",
                    line, fmt, buf, ret, expected, strlen(expected));
        fail();
    }

    if (host_cmp) {
        vsnprintf(host, sizeof(host), fmt, ap2);

        if (strcmp(host, expected) != 0) {
            print_error("line %d: format \"%s\": host gives \"%s\"\n",
                        line, fmt, host);
            fail();
        }
    }

    va_end(ap2);
    va_end(ap);
}

/* Checked against the expected string and the host's vsnprintf. */
#define CHECK(expected, ...) \
    check_fmt(__LINE__, true, expected, __VA_ARGS__)

/* Checked against the expected string only (glibc differs or lacks it). */
#define CHECK_OURS(expected, ...) \
    check_fmt(__LINE__, false, expected, __VA_ARGS__)

static void
test_plain(void **state)
{
    (void)state;
    CHECK("", "%s", "");
    CHECK("abc", "abc");
    CHECK("%", "%%");
    CHECK("a%b", "a%%b");
    CHECK("100% sure", "100%% sure");
}

static void
test_signed(void **state)
{
    (void)state;
    CHECK("0", "%d", 0);
    CHECK("42", "%d", 42);
    CHECK("-42", "%i", -42);
    CHECK("2147483647", "%d", INT_MAX);
    CHECK("-2147483648", "%d", INT_MIN);
    CHECK("   42", "%5d", 42);
    CHECK("42   |", "%-5d|", 42);
    CHECK("00042", "%05d", 42);
    CHECK("-0042", "%05d", -42);
    CHECK("+42", "%+d", 42);
    CHECK("-42", "%+d", -42);
    CHECK("+0", "%+d", 0);
    CHECK(" 42", "% d", 42);
    CHECK("-42", "% d", -42);
    CHECK("+0042", "%+05d", 42);
    CHECK("007", "%.3d", 7);
    CHECK("-007", "%.3d", -7);
    CHECK("12345", "%.3d", 12345);
    CHECK("", "%.0d", 0);
    CHECK("     ", "%5.0d", 0);
    CHECK("+", "%+.0d", 0);
    CHECK("1", "%1d", 1);
    CHECK("-1", "%1d", -1);
}

static void
test_lengths(void **state)
{
    (void)state;
    CHECK("-9223372036854775808", "%lld", (long long)INT64_MIN);
    CHECK("9223372036854775807", "%lld", (long long)INT64_MAX);
    CHECK("-9223372036854775808", "%ld", LONG_MIN);
    CHECK("18446744073709551615", "%llu", (unsigned long long)UINT64_MAX);
    CHECK("18446744073709551615", "%lu", ULONG_MAX);
    CHECK("ffffffffffffffff", "%lx", ULONG_MAX);
    CHECK("FFFFFFFFFFFFFFFF", "%llX", (unsigned long long)UINT64_MAX);
    CHECK("1777777777777777777777", "%llo", (unsigned long long)UINT64_MAX);
    CHECK("-9223372036854775808", "%jd", INTMAX_MIN);
    CHECK("18446744073709551615", "%ju", UINTMAX_MAX);
    CHECK("18446744073709551615", "%zu", SIZE_MAX);
    CHECK("-5", "%zd", (ssize_t)-5);
    CHECK("-3", "%td", (ptrdiff_t)-3);
    CHECK("fffffffffffffffd", "%tx", (ptrdiff_t)-3);
    CHECK("-1", "%hhd", 255);
    CHECK("-128", "%hhd", 128);
    CHECK("0", "%hhu", 256);
    CHECK("ff", "%hhx", -1);
    CHECK("-1", "%hd", 65535);
    CHECK("0", "%hu", 65536);
    CHECK("ffff", "%hx", -1);
    CHECK("4294967295", "%u", UINT_MAX);
    CHECK("ffffffff", "%x", -1);
    /* A 64-bit argument after a 32-bit one keeps its alignment right. */
    CHECK("1 18446744073709551615 2", "%d %llu %d", 1,
          (unsigned long long)UINT64_MAX, 2);
}

static void
test_unsigned_bases(void **state)
{
    (void)state;
    CHECK("255", "%u", 255U);
    CHECK("ff", "%x", 255U);
    CHECK("FF", "%X", 255U);
    CHECK("377", "%o", 255U);
    CHECK("0xff", "%#x", 255U);
    CHECK("0XFF", "%#X", 255U);
    CHECK("0", "%#x", 0U);
    CHECK("010", "%#o", 8U);
    CHECK("0", "%#o", 0U);
    CHECK("0", "%#.0o", 0U);
    CHECK("0012", "%#.4o", 10U);
    CHECK("", "%.0x", 0U);
    CHECK("0x0000ff", "%#08x", 255U);
    CHECK("0xff    |", "%-#8x|", 255U);
    CHECK("    00ab", "%8.4x", 0xabU);
}

static void
test_char_and_string(void **state)
{
    const char *volatile null_string = NULL;
    const char unterminated[3] = { 'a', 'b', 'c' };

    (void)state;
    CHECK("A", "%c", 'A');
    CHECK("  A", "%3c", 'A');
    CHECK("A  |", "%-3c|", 'A');
    CHECK("hi", "%s", "hi");
    CHECK("   hi", "%5s", "hi");
    CHECK("hi   |", "%-5s|", "hi");
    CHECK("he", "%.2s", "hello");
    CHECK("hi", "%.10s", "hi");
    CHECK("", "%.0s", "hello");
    CHECK("   he", "%5.2s", "hello");
    CHECK("(null)", "%s", null_string);
    CHECK("abc", "%.3s", unterminated);
    CHECK("x=1 y=two", "x=%d y=%s", 1, "two");
}

static void
test_char_nul(void **state)
{
    char buf[8];
    int ret;

    (void)state;
    memset(buf, 'X', sizeof(buf));
    ret = ksnprintf(buf, sizeof(buf), "a%cb", '\0');
    assert_int_equal(ret, 3);
    assert_memory_equal(buf, "a\0b\0", 4);
}

static void
test_pointer(void **state)
{
    (void)state;
    CHECK("0xffffffff80001234", "%p", (void *)0xffffffff80001234UL);
    CHECK_OURS("0x0000000000001234", "%p", (void *)0x1234UL);
    CHECK_OURS("0x0000000000000000", "%p", NULL);
    CHECK_OURS("  0x00000000000000ff", "%20p", (void *)0xffUL);
    CHECK_OURS("0x00000000000000ff  |", "%-20p|", (void *)0xffUL);
}

static void
test_star(void **state)
{
    (void)state;
    CHECK("   42", "%*d", 5, 42);
    CHECK("42   |", "%*d|", -5, 42);
    CHECK("007", "%.*d", 3, 7);
    CHECK("7", "%.*d", -1, 7);
    CHECK("    he", "%*.*s", 6, 2, "hello");
    CHECK("hello |", "%-*s|", 6, "hello");
    CHECK("0042 9", "%0*d %d", 4, 42, 9);
}

static void
test_group(void **state)
{
    (void)state;
    CHECK_OURS("1,234,567", "%'d", 1234567);
    CHECK_OURS("0", "%'d", 0);
    CHECK_OURS("999", "%'d", 999);
    CHECK_OURS("1,000", "%'d", 1000);
    CHECK_OURS("100,000", "%'u", 100000U);
    CHECK_OURS("-1,234", "%'d", -1234);
    CHECK_OURS("+1,234", "%'+d", 1234);
    CHECK_OURS("18,446,744,073,709,551,615", "%'llu",
               (unsigned long long)UINT64_MAX);
    CHECK_OURS("-9,223,372,036,854,775,808", "%'lld", (long long)INT64_MIN);
    CHECK_OURS("   1,234,567", "%'12d", 1234567);
    CHECK_OURS("1,234,567   |", "%'-12d|", 1234567);
    CHECK_OURS("0001,234,567", "%'012d", 1234567);
    CHECK_OURS("01,234,567", "%'.8d", 1234567);
}

/* These formats are deliberately odd or invalid: gcc would rightly warn. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat"
#pragma GCC diagnostic ignored "-Wformat-extra-args"

/*
 * Flags that C defines as ignored, or that we define as ignored: gcc warns
 * about them but they must still format sanely.
 */
static void
test_ignored_flags(void **state)
{
    (void)state;
    CHECK("+42", "%+ d", 42);
    CHECK("42   ", "%-05d", 42);
    CHECK("  042", "%05.3d", 42);
    CHECK("42", "%+u", 42U);
    CHECK("42", "% u", 42U);
    /* Grouping is for decimal conversions only. */
    CHECK_OURS("123456", "%'x", 0x123456U);
    CHECK_OURS("1234567", "%'o", 01234567U);
}

static void
test_unknown_conversion(void **state)
{
    (void)state;
    CHECK_OURS("%q", "%q");
    CHECK_OURS("a%qb", "a%qb");
    CHECK_OURS("%-5q", "%-5q");
    CHECK_OURS("%lq", "%lq");
    CHECK_OURS("%Lf", "%Lf");
    CHECK_OURS("a%", "a%");
    CHECK_OURS("%5", "%5");
    /* No argument is consumed, not even for the '*': 7 goes to %d. */
    CHECK_OURS("%*q7", "%*q%d", 7);
    CHECK_OURS("%.*k x", "%.*k %s", "x");
    CHECK_OURS("%q 1 %q 2", "%q %d %q %d", 1, 2);
}

#pragma GCC diagnostic pop

static void
test_truncation(void **state)
{
    char buf[16];
    int ret;

    (void)state;
    memset(buf, 'X', sizeof(buf));
    ret = ksnprintf(buf, 5, "hello world");
    assert_int_equal(ret, 11);
    assert_string_equal(buf, "hell");
    assert_int_equal(buf[5], 'X');

    memset(buf, 'X', sizeof(buf));
    ret = ksnprintf(buf, 6, "hello");
    assert_int_equal(ret, 5);
    assert_string_equal(buf, "hello");
    assert_int_equal(buf[6], 'X');

    ret = ksnprintf(buf, 5, "hello");
    assert_int_equal(ret, 5);
    assert_string_equal(buf, "hell");

    memset(buf, 'X', sizeof(buf));
    ret = ksnprintf(buf, 1, "hello %d", 42);
    assert_int_equal(ret, 8);
    assert_int_equal(buf[0], '\0');
    assert_int_equal(buf[1], 'X');

    /* Cut inside padding and inside a number. */
    ret = ksnprintf(buf, 4, "%10d", 5);
    assert_int_equal(ret, 10);
    assert_string_equal(buf, "   ");
    ret = ksnprintf(buf, 4, "%d", -123456);
    assert_int_equal(ret, 7);
    assert_string_equal(buf, "-12");
}

static void
test_size_zero(void **state)
{
    char buf[4] = { 'X', 'X', 'X', 'X' };
    int ret;

    (void)state;
    ret = ksnprintf(NULL, 0, "%s-%d", "abc", 12345);
    assert_int_equal(ret, 9);

    ret = ksnprintf(buf, 0, "%s", "abc");
    assert_int_equal(ret, 3);
    assert_memory_equal(buf, "XXXX", 4);

    ret = ksnprintf(buf, sizeof(buf), "%s", "");
    assert_int_equal(ret, 0);
    assert_int_equal(buf[0], '\0');
}

/* In buf: a field of width characters, pad characters then tail. */
static const char *
padded(char *buf, size_t width, char pad, const char *tail)
{
    size_t nr_pad = width - strlen(tail);

    memset(buf, pad, nr_pad);
    strcpy(&buf[nr_pad], tail);
    return buf;
}

static void
test_wide_fields(void **state)
{
    char expected[512];

    (void)state;
    /* Wider than the padding chunks, to exercise the loops. */
    CHECK(padded(expected, 300, ' ', "1"), "%300d", 1);
    CHECK(padded(expected, 300, '0', "1"), "%0300d", 1);
    CHECK(padded(expected, 300, '0', "1"), "%.300d", 1);
    CHECK(padded(expected, 100, ' ', "x"), "%100s", "x");
}

/*
 * A collecting output callback, to check fmt_vformat() directly: every call
 * must carry at least one character.
 */
struct collect {
    char buf[256];
    size_t len;
    unsigned int calls;
};

static void
collect_out(void *arg, const char *s, size_t n)
{
    struct collect *c = arg;

    assert_true(n > 0);
    assert_true(c->len + n < sizeof(c->buf));
    memcpy(c->buf + c->len, s, n);
    c->len += n;
    c->buf[c->len] = '\0';
    c->calls++;
}

static int __attribute__((format(printf, 2, 3)))
collect_format(struct collect *c, const char *fmt, ...)
{
    va_list ap;
    int ret;

    memset(c, 0, sizeof(*c));
    va_start(ap, fmt);
    ret = fmt_vformat(collect_out, c, fmt, ap);
    va_end(ap);
    return ret;
}

static void
test_vformat_callback(void **state)
{
    struct collect c;
    int ret;

    (void)state;
    ret = collect_format(&c, "%s%s%.0d", "", "", 0);
    assert_int_equal(ret, 0);
    assert_int_equal(c.calls, 0);

    ret = collect_format(&c, "cpu%u: %'llu cycles (%s)", 3U,
                         1234567ULL, "ok");
    assert_int_equal(ret, 27);
    assert_int_equal(c.len, 27);
    assert_string_equal(c.buf, "cpu3: 1,234,567 cycles (ok)");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_signed),
        cmocka_unit_test(test_lengths),
        cmocka_unit_test(test_unsigned_bases),
        cmocka_unit_test(test_char_and_string),
        cmocka_unit_test(test_char_nul),
        cmocka_unit_test(test_pointer),
        cmocka_unit_test(test_star),
        cmocka_unit_test(test_group),
        cmocka_unit_test(test_ignored_flags),
        cmocka_unit_test(test_unknown_conversion),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_size_zero),
        cmocka_unit_test(test_wide_fields),
        cmocka_unit_test(test_vformat_callback),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
