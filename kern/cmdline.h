/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Command lines: the kernel boot command line (options the bootloader
 * passes), the splitting of a shell line into arguments, and the parsing of
 * numbers given on either.
 *
 * The boot command line is a list of words separated by blanks (space, tab,
 * CR, LF).  Each word is `key=value` or a bare `flag`.  Double quotes group
 * text containing blanks and are removed (`key="a b"` and `"key=a b"` both
 * give key the value "a b"): they only protect blanks, so the key always
 * ends at the first '=' of the word and a value may itself contain '='.
 * cmdline_parse() is called once, early, on the boot CPU before any other
 * CPU or thread runs; the parsed state is immutable afterwards, so the
 * getters take no lock and may be called from any context.  The strings
 * they return stay valid until the next call to cmdline_parse().
 */

#ifndef KERN_CMDLINE_H
#define KERN_CMDLINE_H

#include <stdbool.h>
#include <stdint.h>

#define CMDLINE_MAX         1024    /* bytes of a boot line, NUL included */
#define CMDLINE_MAX_OPTS    64      /* options on a boot line */

/*
 * Parse the boot command line line, keeping a private copy, and replace the
 * previously parsed state with it.  Return 0, -E2BIG when the line needs more
 * than CMDLINE_MAX bytes or has more than CMDLINE_MAX_OPTS options, -EINVAL
 * when line is NULL, a quote is left open or a word has an empty key ("=x").
 * On error the previous state is left unchanged (empty if there was none).
 */
int cmdline_parse(const char *line);

/*
 * Return the value of the last option named key: "" for a bare flag (and for
 * `key=`), NULL when there is no such option.
 */
const char *cmdline_get(const char *key);

bool cmdline_has(const char *key);

/*
 * Store in *valp the value of the last option named key, parsed with
 * cmdline_parse_u64().  Return 0, -ENOENT when key is absent, -EINVAL when
 * the value is not a number (a bare flag included), -ERANGE when it exceeds
 * UINT64_MAX.  *valp is written only on success.
 */
int cmdline_get_u64(const char *key, uint64_t *valp);

/* Return the whole line as last parsed successfully ("" before that). */
const char *cmdline_raw(void);

/*
 * Enumerate the options in command-line order, repeats included: store the
 * key of option i in *keyp and its value in *valuep (NULL for a bare flag).
 * Return 0, or -EINVAL when i >= cmdline_nr_opts().
 */
unsigned int cmdline_nr_opts(void);
int cmdline_opt(unsigned int i, const char **keyp, const char **valuep);

/*
 * Split a shell line into words, in place: argv[0..argc) point into line and
 * argv[argc] is NULL, so argv needs max_args + 1 slots.  Words are separated
 * by blanks (space, tab, CR, LF).  "double" and 'single' quotes group text
 * and are removed, and adjacent parts join as in sh (a"b c"d is the one word
 * "ab cd"; "" is an empty word).  A backslash outside single quotes makes the
 * next character literal.  Return argc, or -E2BIG when there are more than
 * max_args words, -EINVAL when a quote is left open, the line ends with a
 * backslash, or line or argv is NULL; line and argv are untouched on error.
 * Reentrant.
 */
int cmdline_split(char *line, char **argv, unsigned int max_args);

/*
 * Parse the whole string s as an unsigned number: decimal ("007" is 7), or
 * hexadecimal after a 0x or 0X prefix.  No sign, blanks or suffix allowed.
 * Return 0, -EINVAL for an empty or malformed string (which takes precedence
 * over a range error), -ERANGE when the value exceeds UINT64_MAX.  *valp is
 * written only on success.  Reentrant.
 */
int cmdline_parse_u64(const char *s, uint64_t *valp);

/*
 * Like cmdline_parse_u64(), with an optional last character K, M or G (any
 * case) multiplying by 2^10, 2^20 or 2^30.  -ERANGE when the product exceeds
 * UINT64_MAX.
 */
int cmdline_parse_size(const char *s, uint64_t *valp);

#endif /* KERN_CMDLINE_H */
