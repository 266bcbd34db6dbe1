/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fuzz target: the option parser of the `perfmon` subcommands
 * (perfmon_cmd_getopt() in kern/perfmon/cmd/perfmon_cmd.c), on words as the shell
 * splits them.  The input is a command line after "perfmon stat"; the
 * first byte chooses the option spec and whether long options exist.
 *
 * Checked: it ends (each call consumes a letter or a word), never reads
 * past the words, returns 0, '?', ':' or a letter of the spec or of a long
 * option (some beyond a char, as stat's --interval-count), gives a value
 * exactly to the letters that take one, names a bad option in a
 * NUL-terminated opts->bad, and leaves index on a word or just past them.
 */

#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "kern/cmdline.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/shell.h"

static const char *const opts_fuzz_specs[] = {
    "e:aC:Ar:x:", "e:aAC:r:x:ijI:t:", "e:c:F:gbj:aC:im:t:", "e:F:d:n:", "gb",
    ":", "",
};

static const struct perfmon_cmd_longopt opts_fuzz_longopts[] = {
    { "sort", 's', true },
    { "folded", 'f', false },
    { "percent-limit", 'p', true },
    { "stdio", 'S', false },
    { "interval-count", 0x100, true },
    { "per-thread", 0x101, false },
    { "switch-events", 0x102, false },
    { NULL, 0, false },
};

static void
opts_fuzz_check(const struct perfmon_cmd_opts *opts, int opt,
                const char *val, const char *spec, bool longs)
{
    const char *in_spec = (opt > 0 && opt <= 0xff && opt != ':')
                          ? strchr(spec, opt) : NULL;
    bool long_letter = false;

    for (const struct perfmon_cmd_longopt *o = opts_fuzz_longopts;
         longs && o->name != NULL; o++) {
        long_letter |= (o->letter == opt);

        /* A long option without a letter: its value as its table says. */
        if (o->letter == opt && opt > 0xff) {
            fuzz_check((val != NULL) == o->has_arg);
        }
    }

    fuzz_check(opts->index >= 2 && opts->index <= opts->argc);

    if (opt == '?' || opt == ':' || opt == '=') {
        fuzz_check(memchr(opts->bad, '\0', sizeof(opts->bad)) != NULL);
        fuzz_check(opts->bad[0] == '-');
        fuzz_check(val == NULL);
        return;
    }

    fuzz_check(in_spec != NULL || long_letter);

    if (in_spec != NULL && !long_letter) {
        fuzz_check((val != NULL) == (in_spec[1] == ':'));
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char line[SHELL_LINE_MAX];
    char *argv[SHELL_MAX_ARGS + 3] = { "perfmon", "stat" };
    struct perfmon_cmd_opts opts;
    const char *spec, *val;
    uint8_t choice;
    bool longs;
    int argc, opt;

    if (size == 0) {
        return 0;
    }

    choice = data[0];
    spec = opts_fuzz_specs[choice % (sizeof(opts_fuzz_specs)
                                     / sizeof(opts_fuzz_specs[0]))];
    longs = choice & 0x80;
    size = (size - 1 < sizeof(line) - 1) ? size - 1 : sizeof(line) - 1;
    memcpy(line, data + 1, size);
    line[size] = '\0';
    argc = cmdline_split(line, &argv[2], SHELL_MAX_ARGS);

    if (argc < 0) {
        return 0;
    }

    argc += 2;
    perfmon_cmd_opts_init(&opts, argc, argv, 2, spec,
                          longs ? opts_fuzz_longopts : NULL);

    for (int calls = 0; calls <= SHELL_LINE_MAX; calls++) {
        opt = perfmon_cmd_getopt(&opts, &val);

        if (opt == 0) {
            fuzz_check(opts.index <= argc);
            return 0;
        }

        opts_fuzz_check(&opts, opt, val, spec, longs);
    }

    fuzz_check(!"getopt did not end");
    return 0;
}
