/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Ordered initialization.
 *
 * Each module declares its init operation with INIT_OP_DEFINE(fn, deps...),
 * naming the operations it must follow with INIT_OP_DEP(other_fn,
 * required); a module that others depend on declares its operation in its
 * header with INIT_OP_DECLARE(fn).  At boot init_run_all() sorts all
 * operations so that each runs after its dependencies, on the boot CPU, and
 * refuses to boot (a panic naming the cycle) when the dependencies form a
 * cycle.  Nobody calls another module's init function by hand.
 *
 * A required dependency must succeed: an operation whose required
 * dependency failed is skipped.  An optional one (required false) only
 * orders: the operation runs after it whatever its result.  That lets a
 * module follow another it does not use (the software PMU registers after
 * the hardware probe, so that raw codes default to the hardware's), naming
 * it with INIT_OP_DECLARE(fn) rather than including that module's header.
 *
 * An operation returns 0 or a negative error.  Failures are reported in
 * the log, except -ENODEV: an operation that found no hardware to drive
 * says so itself, in its own words, and returns -ENODEV; that is not a
 * failure of the kernel, though operations requiring it are skipped.
 */

#ifndef KERN_INIT_H
#define KERN_INIT_H

#include <stdbool.h>
#include <stddef.h>

#include "kern/macros.h"

#define INIT_OP_STATE_NEW       0
#define INIT_OP_STATE_VISITING  1   /* on the resolver's path (cycle check) */
#define INIT_OP_STATE_SORTED    2

typedef int (*init_op_fn_t)(void);

struct init_op;

/* A dependency: op runs first; required: op must also succeed. */
struct init_op_dep {
    struct init_op *op;
    bool required;
};

struct init_op {
    const char *name;
    init_op_fn_t fn;
    const struct init_op_dep *deps; /* terminated by a NULL op */
    unsigned int state;             /* resolver state */
    int error;                      /* result; 1 while not run */
} __aligned(8);

#define INIT_OP_DECLARE(fn)     extern struct init_op init_op_##fn
#define INIT_OP_DEP(fn, required) { &init_op_##fn, (required) }

#ifdef TALLY_HOST_TEST
/* Host tests call init functions themselves: no registry, no dependencies. */
#define INIT_OP_DEFINE(fn, ...) \
    static init_op_fn_t init_op_unused_##fn __unused = fn
#else
#define INIT_OP_DEFINE(fn, ...)                                         \
    static const struct init_op_dep init_op_deps_##fn[] = {             \
        __VA_ARGS__ __VA_OPT__(,) { NULL, false }                       \
    };                                                                  \
    struct init_op init_op_##fn __section("init_ops") __used           \
    __aligned(8) = { #fn, fn, init_op_deps_##fn, INIT_OP_STATE_NEW, 1 }
#endif

/*
 * Sort ops[0..n) into order[0..n) so that every operation comes after its
 * dependencies.  Returns 0, or -ELOOP when there is a cycle: then cycle[]
 * receives the operations on it, first repeated at the end (a -> b -> a),
 * and *cycle_lenp their count (cycle needs n + 1 slots).  Dependencies
 * outside ops[] are an error too (-ENOENT, reported through cycle[0]).
 */
int init_sort(struct init_op *ops, size_t n, struct init_op **order,
              struct init_op **cycle, size_t *cycle_lenp);

/*
 * Whether op may run: every required dependency succeeded (optional ones
 * only order).  Dependencies must have run.
 */
bool init_op_ready(const struct init_op *op);

/*
 * Run every registered operation in dependency order.  Panics on a cycle.
 * Returns the number of operations that failed or were skipped.
 */
unsigned int init_run_all(void);

#endif /* KERN_INIT_H */
