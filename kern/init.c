/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Init operation sorting (depth-first topological sort) and execution.
 */

#include <stdbool.h>
#include <stddef.h>

#include "kern/error.h"
#include "kern/init.h"

#ifndef TALLY_HOST_TEST
#include "kern/log.h"
#include "kern/panic.h"
#endif

/*
 * The resolver's state.  The path doubles as the cycle report: when an
 * operation already on the path is reached again, the path from its first
 * appearance is the cycle.
 */
struct init_sorter {
    struct init_op *ops;
    size_t n;
    struct init_op **order;
    size_t nr_sorted;
    struct init_op **path;
    size_t path_len;
};

static bool
init_sorter_contains(const struct init_sorter *s, const struct init_op *op)
{
    return op >= s->ops && op < s->ops + s->n;
}

static int
init_sorter_report_cycle(struct init_sorter *s, struct init_op *op,
                         size_t *cycle_lenp)
{
    size_t start = 0;

    while (s->path[start] != op) {
        start++;
    }

    for (size_t i = start; i < s->path_len; i++) {
        s->path[i - start] = s->path[i];
    }

    s->path_len -= start;
    s->path[s->path_len++] = op;
    *cycle_lenp = s->path_len;
    return -ELOOP;
}

static int
init_sorter_visit(struct init_sorter *s, struct init_op *op,
                  size_t *cycle_lenp)
{
    int error;

    if (!init_sorter_contains(s, op)) {
        s->path[0] = op;
        *cycle_lenp = 1;
        return -ENOENT;
    }

    if (op->state == INIT_OP_STATE_SORTED) {
        return 0;
    }

    if (op->state == INIT_OP_STATE_VISITING) {
        return init_sorter_report_cycle(s, op, cycle_lenp);
    }

    op->state = INIT_OP_STATE_VISITING;
    s->path[s->path_len++] = op;

    for (const struct init_op_dep *dep = op->deps; dep->op != NULL; dep++) {
        error = init_sorter_visit(s, dep->op, cycle_lenp);

        if (error) {
            return error;
        }
    }

    s->path_len--;
    op->state = INIT_OP_STATE_SORTED;
    s->order[s->nr_sorted++] = op;
    return 0;
}

int
init_sort(struct init_op *ops, size_t n, struct init_op **order,
          struct init_op **cycle, size_t *cycle_lenp)
{
    struct init_sorter s = { ops, n, order, 0, cycle, 0 };
    int error;

    *cycle_lenp = 0;

    for (size_t i = 0; i < n; i++) {
        ops[i].state = INIT_OP_STATE_NEW;
    }

    for (size_t i = 0; i < n; i++) {
        error = init_sorter_visit(&s, &ops[i], cycle_lenp);

        if (error) {
            return error;
        }
    }

    return 0;
}

bool
init_op_ready(const struct init_op *op)
{
    for (const struct init_op_dep *dep = op->deps; dep->op != NULL; dep++) {
        if (dep->required && dep->op->error != 0) {
            return false;
        }
    }

    return true;
}

#ifndef TALLY_HOST_TEST

#define INIT_MAX_OPS    128

extern struct init_op __start_init_ops[];
extern struct init_op __stop_init_ops[];

static struct init_op *init_order[INIT_MAX_OPS];
static struct init_op *init_cycle[INIT_MAX_OPS + 1];

static void
init_panic_cycle(int error, size_t len)
{
    if (error == -ENOENT) {
        panic("init: %s is a dependency but not a registered operation",
              init_cycle[0]->name);
    }

    /* Enough for any sane cycle; longer ones are cut with "...". */
    char buf[256];
    size_t pos = 0;

    for (size_t i = 0; i < len && pos + 40 < sizeof(buf); i++) {
        const char *name = init_cycle[i]->name;

        if (i > 0) {
            buf[pos++] = ' ';
            buf[pos++] = '-';
            buf[pos++] = '>';
            buf[pos++] = ' ';
        }

        while (*name != '\0' && pos + 8 < sizeof(buf)) {
            buf[pos++] = *name++;
        }
    }

    buf[pos] = '\0';
    panic("init: dependency cycle, refusing to boot: %s", buf);
}

unsigned int
init_run_all(void)
{
    size_t n = __stop_init_ops - __start_init_ops, len;
    unsigned int nr_failed = 0;
    int error;

    if (n > INIT_MAX_OPS) {
        panic("init: too many init operations (%zu)", n);
    }

    error = init_sort(__start_init_ops, n, init_order, init_cycle, &len);

    if (error) {
        init_panic_cycle(error, len);
    }

    for (size_t i = 0; i < n; i++) {
        struct init_op *op = init_order[i];

        if (!init_op_ready(op)) {
            op->error = -EAGAIN;
            log_error("init: %s skipped: a dependency failed", op->name);
            nr_failed++;
            continue;
        }

        op->error = op->fn();

        /* Nothing to drive: the operation said so itself. */
        if (op->error != 0 && op->error != -ENODEV) {
            log_error("init: %s failed: %s", op->name, error_str(op->error));
            nr_failed++;
        }
    }

    return nr_failed;
}

#endif /* TALLY_HOST_TEST */
