/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The `perfmon` shell command's pure parsing, its -j part: perf's
 * branch-filter names (declared in kern/perfmon/cmd/perfmon_parse.h, with
 * the rest of the parsing in kern/perfmon/cmd/perfmon_parse.c).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/assert.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_parse.h"
#include "kern/printf.h"
#include "kern/string.h"

/* perf's --branch-filter names, in the order -j lists print them. */
static const struct {
    unsigned int bit;
    const char *name;
} perfmon_parse_branch_names[] = {
    { PERFMON_BRF_ANY, "any" },
    { PERFMON_BRF_ANY_CALL, "any_call" },
    { PERFMON_BRF_ANY_RET, "any_ret" },
    { PERFMON_BRF_IND_CALL, "ind_call" },
    { PERFMON_BRF_CALL, "call" },
    { PERFMON_BRF_COND, "cond" },
    { PERFMON_BRF_IND_JMP, "ind_jmp" },
    { PERFMON_BRF_USER, "u" },
    { PERFMON_BRF_KERN, "k" },
};

const char *
perfmon_parse_branch_name(unsigned int bit)
{
    for (size_t i = 0; i < ARRAY_SIZE(perfmon_parse_branch_names); i++) {
        if (perfmon_parse_branch_names[i].bit == bit) {
            return perfmon_parse_branch_names[i].name;
        }
    }

    return NULL;
}

/* perf's names Tally refuses: no hypervisor, no TSX, no call-stack mode. */
static const char *const perfmon_parse_branch_unsupported[] = {
    "hv", "abort_tx", "in_tx", "no_tx", "call_stack", "save_type", "stack",
    "hw_index", "priv", "counter", "no_flags", "no_cycles",
};

/* One name of a -j list, len characters at item. */
static int
perfmon_parse_branch_item(const char *item, size_t len, unsigned int *bitp)
{
    if (len == 3 && memcmp(item, "ret", 3) == 0) {
        *bitp = PERFMON_BRF_ANY_RET;
        return 0;
    }

    for (size_t i = 0; i < ARRAY_SIZE(perfmon_parse_branch_names); i++) {
        const char *name = perfmon_parse_branch_names[i].name;

        if (strlen(name) == len && memcmp(item, name, len) == 0) {
            *bitp = perfmon_parse_branch_names[i].bit;
            return 0;
        }
    }

    for (size_t i = 0; i < ARRAY_SIZE(perfmon_parse_branch_unsupported); i++) {
        const char *name = perfmon_parse_branch_unsupported[i];

        if (strlen(name) == len && memcmp(item, name, len) == 0) {
            return -EOPNOTSUPP;
        }
    }

    return -EINVAL;
}

int
perfmon_parse_branch_filter(const char *list, unsigned int *filterp,
                            char *bad, size_t bad_size)
{
    unsigned int filter = 0, bit;
    const char *item = list;
    int error;

    assert(bad != NULL && bad_size > 0);
    bad[0] = '\0';

    if (list == NULL || filterp == NULL) {
        return -EINVAL;
    }

    for (;;) {
        const char *end = strchr(item, ',');
        size_t len = (end != NULL) ? (size_t)(end - item) : strlen(item);

        error = (len == 0) ? -EINVAL : perfmon_parse_branch_item(item, len,
                                                                   &bit);

        if (error) {
            ksnprintf(bad, bad_size, "%.*s", (int)len, item);
            return error;
        }

        filter |= bit;

        if (end == NULL) {
            break;
        }

        item = end + 1;
    }

    *filterp = filter;
    return 0;
}

void
perfmon_parse_branch_fmt(char *buf, size_t size, unsigned int filter)
{
    size_t len = 0;

    assert(size > 0);
    buf[0] = '\0';

    for (size_t i = 0; i < ARRAY_SIZE(perfmon_parse_branch_names); i++) {
        if ((filter & perfmon_parse_branch_names[i].bit) && len < size) {
            len += (size_t)ksnprintf(&buf[len], size - len, "%s%s",
                                     (len == 0) ? "" : ",",
                                     perfmon_parse_branch_names[i].name);
        }
    }
}
