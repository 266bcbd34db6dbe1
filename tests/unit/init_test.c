/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the init operation resolver, init_sort() in kern/init.c
 * (the runner is compiled out under TALLY_HOST_TEST): orders that respect
 * every dependency (chains, diamonds, independent operations, shared and
 * repeated dependencies), cycles reported as the exact path with the first
 * operation repeated at the end (two operations, longer cycles reached
 * through a tail, self-dependency, a cycle away from the first operation),
 * and a dependency outside the array reported with -ENOENT.  Operations are
 * built by hand, as INIT_OP_DEFINE would lay them out.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "kern/error.h"
#include "kern/init.h"
#include "kern/macros.h"

#define MAX_OPS     16

/* Dependency list entries, as INIT_OP_DEP(fn, ...) lays them out. */
#define REQ(op)     { (op), true }
#define OPT(op)     { (op), false }
#define END         { NULL, false }

static int
op_noop(void)
{
    return 0;
}

/* An operation named name; its deps array is given by the caller. */
static void
op_set(struct init_op *op, const char *name, const struct init_op_dep *deps)
{
    op->name = name;
    op->fn = op_noop;
    op->deps = deps;
    op->state = INIT_OP_STATE_NEW;
    op->error = 1;
}

static const struct init_op_dep no_deps[] = { END };

static size_t
position(struct init_op **order, size_t n, const struct init_op *op)
{
    for (size_t i = 0; i < n; i++) {
        if (order[i] == op) {
            return i;
        }
    }

    fail_msg("operation %s missing from the order", op->name);
    return n;
}

/*
 * order[0..n) is a permutation of ops[0..n) in which each operation comes
 * after all its dependencies.
 */
static void
assert_valid_order(struct init_op *ops, size_t n, struct init_op **order)
{
    for (size_t i = 0; i < n; i++) {
        assert_true(order[i] >= ops && order[i] < ops + n);

        for (size_t j = i + 1; j < n; j++) {
            assert_ptr_not_equal(order[i], order[j]);
        }
    }

    for (size_t i = 0; i < n; i++) {
        size_t pos = position(order, n, &ops[i]);

        for (const struct init_op_dep *dep = ops[i].deps; dep->op != NULL;
             dep++) {
            if (position(order, n, dep->op) >= pos) {
                fail_msg("%s placed before its dependency %s", ops[i].name,
                         dep->op->name);
            }
        }
    }
}

static bool
depends_on(const struct init_op *op, const struct init_op *dep)
{
    for (const struct init_op_dep *d = op->deps; d->op != NULL; d++) {
        if (d->op == dep) {
            return true;
        }
    }

    return false;
}

/*
 * cycle[0..len) is the cycle made of exactly the nr_members operations of
 * members, each once, the first repeated at the end, each depending on the
 * next: a -> b -> ... -> a, in dependency order.
 */
static void
assert_cycle(struct init_op **cycle, size_t len,
             struct init_op *const *members, size_t nr_members)
{
    assert_int_equal(len, nr_members + 1);
    assert_ptr_equal(cycle[0], cycle[len - 1]);

    for (size_t i = 0; i + 1 < len; i++) {
        if (!depends_on(cycle[i], cycle[i + 1])) {
            fail_msg("cycle report: %s does not depend on %s",
                     cycle[i]->name, cycle[i + 1]->name);
        }

        for (size_t j = i + 1; j + 1 < len; j++) {
            assert_ptr_not_equal(cycle[i], cycle[j]);
        }
    }

    for (size_t m = 0; m < nr_members; m++) {
        bool found = false;

        for (size_t i = 0; i + 1 < len; i++) {
            found |= cycle[i] == members[m];
        }

        if (!found) {
            fail_msg("cycle report misses %s", members[m]->name);
        }
    }
}

static void
test_empty(void **state)
{
    struct init_op *order[1], *cycle[1];
    size_t len = 42;

    (void)state;
    assert_int_equal(init_sort(NULL, 0, order, cycle, &len), 0);
    assert_int_equal(len, 0);
}

static void
test_independent(void **state)
{
    struct init_op ops[5], *order[5], *cycle[6];
    size_t len = 42;

    (void)state;

    for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
        op_set(&ops[i], "op", no_deps);
    }

    assert_int_equal(init_sort(ops, ARRAY_SIZE(ops), order, cycle, &len), 0);
    assert_int_equal(len, 0);
    assert_valid_order(ops, ARRAY_SIZE(ops), order);

    for (size_t i = 0; i < ARRAY_SIZE(ops); i++) {
        assert_int_equal(ops[i].state, INIT_OP_STATE_SORTED);
        assert_int_equal(ops[i].error, 1);  /* sorting runs nothing */
    }
}

/* a needs b needs c needs d, listed in the worst order: only d c b a fits. */
static void
test_chain(void **state)
{
    struct init_op ops[4], *order[4], *cycle[5];
    const struct init_op_dep a_deps[] = { REQ(&ops[1]), END };
    const struct init_op_dep b_deps[] = { REQ(&ops[2]), END };
    const struct init_op_dep c_deps[] = { REQ(&ops[3]), END };
    size_t len;

    (void)state;
    op_set(&ops[0], "a", a_deps);
    op_set(&ops[1], "b", b_deps);
    op_set(&ops[2], "c", c_deps);
    op_set(&ops[3], "d", no_deps);

    assert_int_equal(init_sort(ops, 4, order, cycle, &len), 0);
    assert_ptr_equal(order[0], &ops[3]);
    assert_ptr_equal(order[1], &ops[2]);
    assert_ptr_equal(order[2], &ops[1]);
    assert_ptr_equal(order[3], &ops[0]);
}

/* top needs left and right, both need bottom: bottom once, first; top last. */
static void
test_diamond(void **state)
{
    struct init_op ops[4], *order[4], *cycle[5];
    const struct init_op_dep top_deps[] = { REQ(&ops[1]), REQ(&ops[2]), END };
    const struct init_op_dep side_deps[] = { REQ(&ops[3]), END };
    size_t len;

    (void)state;
    op_set(&ops[0], "top", top_deps);
    op_set(&ops[1], "left", side_deps);
    op_set(&ops[2], "right", side_deps);
    op_set(&ops[3], "bottom", no_deps);

    assert_int_equal(init_sort(ops, 4, order, cycle, &len), 0);
    assert_valid_order(ops, 4, order);
    assert_ptr_equal(order[0], &ops[3]);
    assert_ptr_equal(order[3], &ops[0]);
}

/*
 * A larger graph: several roots, shared dependencies, a dependency named
 * twice, the dependency-free operations scattered through the array.
 */
static void
test_mixed_graph(void **state)
{
    struct init_op ops[8], *order[8], *cycle[9];
    const struct init_op_dep d0[] = { REQ(&ops[5]), REQ(&ops[7]), END };
    const struct init_op_dep d1[] = { REQ(&ops[0]), REQ(&ops[0]), REQ(&ops[6]), END };
    const struct init_op_dep d3[] = { REQ(&ops[1]), REQ(&ops[2]), END };
    const struct init_op_dep d4[] = { REQ(&ops[7]), END };
    const struct init_op_dep d5[] = { REQ(&ops[4]), REQ(&ops[2]), END };
    size_t len;

    (void)state;
    op_set(&ops[0], "op0", d0);
    op_set(&ops[1], "op1", d1);
    op_set(&ops[2], "op2", no_deps);
    op_set(&ops[3], "op3", d3);
    op_set(&ops[4], "op4", d4);
    op_set(&ops[5], "op5", d5);
    op_set(&ops[6], "op6", no_deps);
    op_set(&ops[7], "op7", no_deps);

    assert_int_equal(init_sort(ops, 8, order, cycle, &len), 0);
    assert_valid_order(ops, 8, order);
}

/* The resolver state is reset on each call: sorting twice gives the same. */
static void
test_sort_twice(void **state)
{
    struct init_op ops[3], *order1[3], *order2[3], *cycle[4];
    const struct init_op_dep a_deps[] = { REQ(&ops[2]), END };
    const struct init_op_dep c_deps[] = { REQ(&ops[1]), END };
    size_t len;

    (void)state;
    op_set(&ops[0], "a", a_deps);
    op_set(&ops[1], "b", no_deps);
    op_set(&ops[2], "c", c_deps);

    assert_int_equal(init_sort(ops, 3, order1, cycle, &len), 0);
    assert_int_equal(init_sort(ops, 3, order2, cycle, &len), 0);
    assert_valid_order(ops, 3, order2);
    assert_memory_equal(order1, order2, sizeof(order1));
}

static void
test_cycle_of_two(void **state)
{
    struct init_op ops[2], *order[2], *cycle[3];
    const struct init_op_dep a_deps[] = { REQ(&ops[1]), END };
    const struct init_op_dep b_deps[] = { REQ(&ops[0]), END };
    size_t len = 0;

    (void)state;
    op_set(&ops[0], "a", a_deps);
    op_set(&ops[1], "b", b_deps);

    assert_int_equal(init_sort(ops, 2, order, cycle, &len), -ELOOP);
    /* Found from a, the first operation: a -> b -> a. */
    assert_int_equal(len, 3);
    assert_ptr_equal(cycle[0], &ops[0]);
    assert_ptr_equal(cycle[1], &ops[1]);
    assert_ptr_equal(cycle[2], &ops[0]);
}

static void
test_self_dependency(void **state)
{
    struct init_op ops[2], *order[2], *cycle[3];
    const struct init_op_dep b_deps[] = { REQ(&ops[1]), END };
    size_t len = 0;

    (void)state;
    op_set(&ops[0], "a", no_deps);
    op_set(&ops[1], "b", b_deps);

    assert_int_equal(init_sort(ops, 2, order, cycle, &len), -ELOOP);
    assert_int_equal(len, 2);
    assert_ptr_equal(cycle[0], &ops[1]);
    assert_ptr_equal(cycle[1], &ops[1]);
}

/*
 * x needs a; a -> b -> c -> a.  The report is the cycle alone, without the
 * path that led to it (x), every cycle member once plus the repeat.
 */
static void
test_long_cycle_behind_tail(void **state)
{
    struct init_op ops[5], *order[5], *cycle[6];
    const struct init_op_dep x_deps[] = { REQ(&ops[1]), END };
    const struct init_op_dep a_deps[] = { REQ(&ops[4]), REQ(&ops[2]), END };
    const struct init_op_dep b_deps[] = { REQ(&ops[3]), END };
    const struct init_op_dep c_deps[] = { REQ(&ops[1]), END };
    struct init_op *const members[] = { &ops[1], &ops[2], &ops[3] };
    size_t len = 0;

    (void)state;
    op_set(&ops[0], "x", x_deps);
    op_set(&ops[1], "a", a_deps);
    op_set(&ops[2], "b", b_deps);
    op_set(&ops[3], "c", c_deps);
    op_set(&ops[4], "leaf", no_deps);

    assert_int_equal(init_sort(ops, 5, order, cycle, &len), -ELOOP);
    assert_cycle(cycle, len, members, ARRAY_SIZE(members));
    /* Entered at a: a -> b -> c -> a exactly. */
    assert_ptr_equal(cycle[0], &ops[1]);
    assert_ptr_equal(cycle[1], &ops[2]);
    assert_ptr_equal(cycle[2], &ops[3]);
}

/* The cycle sits after acyclic operations and is reached from neither. */
static void
test_cycle_not_first(void **state)
{
    struct init_op ops[6], *order[6], *cycle[7];
    const struct init_op_dep p_deps[] = { REQ(&ops[1]), END };
    const struct init_op_dep r_deps[] = { REQ(&ops[3]), END };
    const struct init_op_dep s_deps[] = { REQ(&ops[4]), END };
    const struct init_op_dep t_deps[] = { REQ(&ops[5]), REQ(&ops[1]), END };
    const struct init_op_dep u_deps[] = { REQ(&ops[2]), END };
    struct init_op *const members[] = { &ops[2], &ops[3], &ops[4], &ops[5] };
    size_t len = 0;

    (void)state;
    op_set(&ops[0], "p", p_deps);
    op_set(&ops[1], "q", no_deps);
    op_set(&ops[2], "r", r_deps);
    op_set(&ops[3], "s", s_deps);
    op_set(&ops[4], "t", t_deps);
    op_set(&ops[5], "u", u_deps);

    assert_int_equal(init_sort(ops, 6, order, cycle, &len), -ELOOP);
    assert_cycle(cycle, len, members, ARRAY_SIZE(members));
}

/* A cycle through every operation: the report needs all n + 1 slots. */
static void
test_cycle_through_all(void **state)
{
    struct init_op ops[MAX_OPS], *order[MAX_OPS], *cycle[MAX_OPS + 1];
    struct init_op_dep deps[MAX_OPS][2];
    size_t len = 0;

    (void)state;

    for (size_t i = 0; i < MAX_OPS; i++) {
        deps[i][0] = (struct init_op_dep)REQ(&ops[(i + 1) % MAX_OPS]);
        deps[i][1] = (struct init_op_dep)END;
        op_set(&ops[i], "ring", deps[i]);
    }

    assert_int_equal(init_sort(ops, MAX_OPS, order, cycle, &len), -ELOOP);
    assert_int_equal(len, MAX_OPS + 1);

    for (size_t i = 0; i <= MAX_OPS; i++) {
        assert_ptr_equal(cycle[i], &ops[i % MAX_OPS]);
    }
}

static void
test_missing_dependency(void **state)
{
    struct init_op outside, ops[3], *order[3], *cycle[4];
    const struct init_op_dep b_deps[] = { REQ(&ops[2]), REQ(&outside), END };
    size_t len = 0;

    (void)state;
    op_set(&outside, "outside", no_deps);
    op_set(&ops[0], "a", no_deps);
    op_set(&ops[1], "b", b_deps);
    op_set(&ops[2], "c", no_deps);

    assert_int_equal(init_sort(ops, 3, order, cycle, &len), -ENOENT);
    assert_int_equal(len, 1);
    assert_ptr_equal(cycle[0], &outside);
    assert_string_equal(cycle[0]->name, "outside");
}

/* The operation just past the end of the array is outside it too. */
static void
test_dependency_past_the_end(void **state)
{
    struct init_op ops[3], *order[2], *cycle[3];
    const struct init_op_dep a_deps[] = { REQ(&ops[2]), END };
    size_t len = 0;

    (void)state;
    op_set(&ops[0], "a", a_deps);
    op_set(&ops[1], "b", no_deps);
    op_set(&ops[2], "c", no_deps);

    assert_int_equal(init_sort(ops, 2, order, cycle, &len), -ENOENT);
    assert_int_equal(len, 1);
    assert_ptr_equal(cycle[0], &ops[2]);
}

/* Once the graph is fixed, the same array sorts. */
static void
test_error_then_fixed(void **state)
{
    struct init_op ops[2], *order[2], *cycle[3];
    struct init_op_dep a_deps[] = { REQ(&ops[1]), END };
    struct init_op_dep b_deps[] = { REQ(&ops[0]), END };
    size_t len;

    (void)state;
    op_set(&ops[0], "a", a_deps);
    op_set(&ops[1], "b", b_deps);
    assert_int_equal(init_sort(ops, 2, order, cycle, &len), -ELOOP);

    b_deps[0] = (struct init_op_dep)END;
    assert_int_equal(init_sort(ops, 2, order, cycle, &len), 0);
    assert_int_equal(len, 0);
    assert_ptr_equal(order[0], &ops[1]);
    assert_ptr_equal(order[1], &ops[0]);
}

/* An optional dependency orders like a required one. */
static void
test_optional_orders(void **state)
{
    struct init_op ops[3], *order[3], *cycle[4];
    const struct init_op_dep a_deps[] = { OPT(&ops[1]), REQ(&ops[2]), END };
    size_t len;

    (void)state;
    op_set(&ops[0], "a", a_deps);
    op_set(&ops[1], "b", no_deps);
    op_set(&ops[2], "c", no_deps);
    assert_int_equal(init_sort(ops, 3, order, cycle, &len), 0);
    assert_valid_order(ops, 3, order);
}

/*
 * Readiness: a failed required dependency holds an operation back, a failed
 * optional one does not.
 */
static void
test_ready(void **state)
{
    struct init_op hw, core, soft, user;
    const struct init_op_dep soft_deps[] = { REQ(&core), OPT(&hw), END };
    const struct init_op_dep user_deps[] = { REQ(&hw), END };

    (void)state;
    op_set(&hw, "hw", no_deps);
    op_set(&core, "core", no_deps);
    op_set(&soft, "soft", soft_deps);
    op_set(&user, "user", user_deps);
    assert_true(init_op_ready(&hw));

    core.error = 0;
    hw.error = -ENODEV;
    assert_true(init_op_ready(&soft));
    assert_false(init_op_ready(&user));

    hw.error = 0;
    assert_true(init_op_ready(&user));

    core.error = -ENOMEM;
    assert_false(init_op_ready(&soft));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_independent),
        cmocka_unit_test(test_chain),
        cmocka_unit_test(test_diamond),
        cmocka_unit_test(test_mixed_graph),
        cmocka_unit_test(test_sort_twice),
        cmocka_unit_test(test_cycle_of_two),
        cmocka_unit_test(test_self_dependency),
        cmocka_unit_test(test_long_cycle_behind_tail),
        cmocka_unit_test(test_cycle_not_first),
        cmocka_unit_test(test_cycle_through_all),
        cmocka_unit_test(test_missing_dependency),
        cmocka_unit_test(test_optional_orders),
        cmocka_unit_test(test_ready),
        cmocka_unit_test(test_dependency_past_the_end),
        cmocka_unit_test(test_error_then_fixed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
