/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fuzz target: the metric evaluator (kern/perfmon/cmd/perfmon_metric.c)
 * on any formula, with counts the input chooses.  The first 8 bytes seed
 * the counts (any name gets one derived from them and its length); the
 * rest is the formula.
 *
 * Checked: only the documented errors; a syntax error's position is
 * inside the formula; a result stays within the fixed-point range; the
 * names walk agrees with evaluation (same syntax verdict, each name
 * reported once, every name inside the formula); formatting always
 * terminates its buffer.
 */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon/cmd/perfmon_metric.h"

#define PM_FUZZ_MAX     (PERFMON_METRIC_MAX_LEN + 64)

static const char *pm_fuzz_formula;
static size_t pm_fuzz_len;

static int
pm_fuzz_value(void *arg, const char *name, size_t len, uint64_t *countp)
{
    uint64_t seed = *(const uint64_t *)arg;

    fuzz_check(len > 0 && name >= pm_fuzz_formula
               && name + len <= pm_fuzz_formula + pm_fuzz_len);

    if (name[0] == 'E') {
        return -ENOENT;
    }

    *countp = (seed * (len + 1)) >> (len % 64);
    return 0;
}

struct pm_fuzz_names {
    const char *names[64];
    size_t lens[64];
    unsigned int nr;
};

static int
pm_fuzz_name(void *arg, const char *name, size_t len)
{
    struct pm_fuzz_names *n = arg;

    fuzz_check(len > 0 && name >= pm_fuzz_formula
               && name + len <= pm_fuzz_formula + pm_fuzz_len);

    for (unsigned int i = 0; i < n->nr; i++) {
        fuzz_check(n->lens[i] != len || memcmp(n->names[i], name, len) != 0);
    }

    fuzz_check(n->nr < 64);
    n->names[n->nr] = name;
    n->lens[n->nr++] = len;
    return (name[0] == 'E') ? -ENOENT : 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char formula[PM_FUZZ_MAX + 1];
    struct pm_fuzz_names names = { .nr = 0 };
    uint64_t seed = 0;
    int64_t v = 0;
    size_t pos = 0, len;
    char buf[32];
    int error, nr;

    if (size < sizeof(seed)) {
        return 0;
    }

    memcpy(&seed, data, sizeof(seed));
    len = MIN(size - sizeof(seed), (size_t)PM_FUZZ_MAX);
    memcpy(formula, data + sizeof(seed), len);
    formula[len] = '\0';
    pm_fuzz_formula = formula;
    pm_fuzz_len = strlen(formula);

    error = perfmon_metric_eval(formula, pm_fuzz_value, &seed, &v, &pos);
    fuzz_check(error == 0 || error == -EINVAL || error == -E2BIG
               || error == -ERANGE || error == -EDOM || error == -ENOENT);
    fuzz_check(error != 0 || (v <= INT64_MAX / 2 && v >= -(INT64_MAX / 2)));
    fuzz_check(error != -EINVAL || pos <= pm_fuzz_len);

    nr = perfmon_metric_events(formula, pm_fuzz_name, &names);
    fuzz_check(nr >= 0 || nr == -EINVAL || nr == -E2BIG || nr == -ENOENT);

    /* The same syntax verdict both ways, unless a name was refused. */
    if (error == -EINVAL && nr >= 0) {
        fuzz_check(false);
    }

    perfmon_metric_format(v, buf, sizeof(buf));
    fuzz_check(memchr(buf, '\0', sizeof(buf)) != NULL);
    return 0;
}
