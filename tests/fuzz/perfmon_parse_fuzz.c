/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fuzz target: the pure parsers of the `perfmon` command
 * (kern/perfmon/cmd/perfmon_parse.c) on what a user types after -e and -C, and the
 * closest-name suggestions made from it.  The first byte of the input
 * chooses the parser and a limit; the rest is the argument.
 *
 * Checked: results within the documented limits and errno codes; every
 * string written is NUL-terminated inside its buffer; an error always
 * says why; a CPU mask holds only CPUs below the count given; distances
 * are symmetric and bounded by the longer name; suggestions are taken
 * from the candidates.
 */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_parse.h"

#define PP_FUZZ_ARG_MAX     1024

static const char *const pp_fuzz_cands[] = {
    "cycles", "cpu-cycles", "instructions", "branches", "branch-misses",
    "task-clock", "cpu-clock", "context-switches", "cs", "cpu-migrations",
    "interrupts", "xcalls", "nmis", "test", "cycles",
};

static bool
pp_fuzz_terminated(const char *s, size_t size)
{
    return memchr(s, '\0', size) != NULL;
}

static void
pp_fuzz_events(const char *arg, unsigned int max)
{
    struct perfmon_parse_event events[PERFMON_PARSE_MAX_EVENTS + 1];
    struct perfmon_parse_error err;
    int n;

    memset(&err, 0, sizeof(err));
    n = perfmon_parse_events(arg, events, max, &err);

    if (n < 0) {
        fuzz_check(n == -EINVAL || n == -E2BIG);
        fuzz_check(err.reason != NULL && err.reason[0] != '\0');
        fuzz_check(pp_fuzz_terminated(err.item, sizeof(err.item)));
        return;
    }

    fuzz_check(n >= 1 && (unsigned int)n <= max);

    for (int i = 0; i < n; i++) {
        const struct perfmon_parse_event *e = &events[i];

        fuzz_check(pp_fuzz_terminated(e->spec, sizeof(e->spec)));
        fuzz_check(pp_fuzz_terminated(e->name, sizeof(e->name)));
        fuzz_check(e->spec[0] != '\0');
        fuzz_check((e->flags & PERFMON_EF_MODE) != 0);
        fuzz_check((e->flags
                    & ~(PERFMON_EF_MODE | PERFMON_EF_RAW | PERFMON_EF_PINNED))
                   == 0);
        fuzz_check(((e->flags & PERFMON_EF_RAW) != 0) == (e->name[0] == '\0'));
        fuzz_check(strstr(arg, e->spec) != NULL);
    }
}

static void
pp_fuzz_cpulist(const char *arg, unsigned int nr_cpus)
{
    uint64_t mask = 0x5a5a;
    int error = perfmon_parse_cpulist(arg, nr_cpus, &mask);

    if (error) {
        fuzz_check(error == -EINVAL || error == -ERANGE);
        fuzz_check(mask == 0x5a5a);
        return;
    }

    fuzz_check(mask != 0);

    if (nr_cpus < 64) {
        fuzz_check((mask >> nr_cpus) == 0);
    }
}

static void
pp_fuzz_names(const char *arg, size_t len)
{
    const char *out[ARRAY_SIZE(pp_fuzz_cands)];
    const char *b = arg + strlen(arg) + 1;
    unsigned int d, n;

    /* Two names: the argument up to a NUL, and what follows it. */
    if (b > arg + len) {
        b = "";
    }

    d = perfmon_parse_distance(arg, b);
    fuzz_check(d == perfmon_parse_distance(b, arg));
    fuzz_check(d <= MAX(MIN(strlen(arg), PERFMON_PARSE_NAME_SIZE - 1),
                        MIN(strlen(b), PERFMON_PARSE_NAME_SIZE - 1)));
    fuzz_check(perfmon_parse_distance(arg, arg) == 0);

    n = perfmon_parse_suggest(arg, pp_fuzz_cands, ARRAY_SIZE(pp_fuzz_cands),
                              out, ARRAY_SIZE(out));
    fuzz_check(n <= ARRAY_SIZE(out));

    for (unsigned int i = 0; i < n; i++) {
        bool from_cands = false;

        for (size_t j = 0; j < ARRAY_SIZE(pp_fuzz_cands); j++) {
            from_cands |= (out[i] == pp_fuzz_cands[j]);
        }

        fuzz_check(from_cands);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char arg[PP_FUZZ_ARG_MAX + 2];
    struct fuzz_stream s = { data, size };
    uint8_t choice = fuzz_stream_u8(&s);
    size_t len;

    /* Two NULs at the end: pp_fuzz_names reads a second string. */
    len = fuzz_stream_str(&s, arg, sizeof(arg) - 1, PP_FUZZ_ARG_MAX);
    arg[len + 1] = '\0';

    switch (choice % 3) {
    case 0:
        pp_fuzz_events(arg, (choice / 3) % (PERFMON_PARSE_MAX_EVENTS + 1));
        break;
    case 1:
        pp_fuzz_cpulist(arg, (choice / 3) % (PERFMON_PARSE_MAX_CPUS + 1));
        break;
    default:
        pp_fuzz_names(arg, len);
        break;
    }

    return 0;
}
