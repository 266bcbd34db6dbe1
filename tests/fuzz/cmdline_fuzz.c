/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fuzz target: the boot command line (kern/cmdline.c), as GRUB or fw_cfg
 * hands it over, and the number parsers the boot options and the shell
 * use.  The input is the line itself.
 *
 * Checked: a refused line leaves the previous state as it was; an
 * accepted one is kept whole (cmdline_raw()), has at most
 * CMDLINE_MAX_OPTS options, each with a non-empty key that cmdline_get()
 * finds; the number parsers agree with each other (a plain number is the
 * same size) and write nothing on failure.
 */

#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "kern/cmdline.h"
#include "kern/error.h"

#define CMDLINE_FUZZ_MAX    (2 * CMDLINE_MAX)

/* A known state to compare with after a refused line. */
static const char cmdline_fuzz_base[] = "smp=2 test \"a=b c\"";

static void
cmdline_fuzz_check_opts(void)
{
    unsigned int nr = cmdline_nr_opts();
    const char *key, *value;

    fuzz_check(nr <= CMDLINE_MAX_OPTS);
    fuzz_check(cmdline_opt(nr, &key, &value) == -EINVAL);

    for (unsigned int i = 0; i < nr; i++) {
        uint64_t n;
        int error;

        fuzz_check(cmdline_opt(i, &key, &value) == 0);
        fuzz_check(key != NULL && key[0] != '\0');
        fuzz_check(strchr(key, '=') == NULL);
        fuzz_check(cmdline_has(key));
        fuzz_check(cmdline_get(key) != NULL);
        error = cmdline_get_u64(key, &n);
        fuzz_check(error == 0 || error == -EINVAL || error == -ERANGE);
    }
}

static void
cmdline_fuzz_numbers(const char *s)
{
    uint64_t a = 42, b = 42;
    int ea, eb;

    ea = cmdline_parse_u64(s, &a);
    eb = cmdline_parse_size(s, &b);
    fuzz_check(ea == 0 || ea == -EINVAL || ea == -ERANGE);
    fuzz_check(eb == 0 || eb == -EINVAL || eb == -ERANGE);
    fuzz_check(ea == 0 || a == 42);
    fuzz_check(eb == 0 || b == 42);

    /* Without a suffix, a size is the same number. */
    if (ea == 0) {
        fuzz_check(eb == 0 && a == b);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char line[CMDLINE_FUZZ_MAX + 1];
    static char before[CMDLINE_MAX];
    size_t n = (size < CMDLINE_FUZZ_MAX) ? size : CMDLINE_FUZZ_MAX;
    int error;

    memcpy(line, data, n);
    line[n] = '\0';

    fuzz_check(cmdline_parse(cmdline_fuzz_base) == 0);
    strcpy(before, cmdline_raw());
    error = cmdline_parse(line);

    if (error) {
        fuzz_check(error == -E2BIG || error == -EINVAL);
        fuzz_check(strcmp(cmdline_raw(), before) == 0);
        fuzz_check(cmdline_nr_opts() == 3);
    } else {
        fuzz_check(strcmp(cmdline_raw(), line) == 0);
    }

    cmdline_fuzz_check_opts();
    cmdline_fuzz_numbers(line);
    return 0;
}
