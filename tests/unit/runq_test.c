/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the run queue building blocks (kern/runq.c): the FIFO list
 * (order, pop on empty, removal of the head, a middle node, the tail and
 * the only node with the tail pointer and count kept right, reuse of
 * removed nodes, removal of a node not on the list caught by an assertion),
 * the placement rule runq_pick_cpu() (least loaded allowed CPU, lowest index
 * on ties, -1 for an empty mask, CPUs beyond nr_cpus ignored) and the
 * balancer's runq_pick_busiest().
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kern/macros.h"
#include "kern/runq.h"

#define NR_NODES    8

static struct runq_node nodes[NR_NODES];

/* The list holds exactly want[0..n), head to tail, and is consistent. */
static void
assert_list(const struct runq_list *list, struct runq_node *const *want,
            unsigned int n)
{
    const struct runq_node *node = list->head;

    assert_int_equal(list->count, n);

    for (unsigned int i = 0; i < n; i++) {
        assert_ptr_equal(node, want[i]);
        node = node->next;
    }

    assert_null(node);

    if (n == 0) {
        assert_null(list->head);
        assert_null(list->tail);
    } else {
        assert_ptr_equal(list->tail, want[n - 1]);
        assert_null(list->tail->next);
    }
}

/* A list holding nodes[0..n) in order. */
static void
fill(struct runq_list *list, unsigned int n)
{
    runq_list_init(list);

    for (unsigned int i = 0; i < n; i++) {
        runq_list_push(list, &nodes[i]);
    }
}

static void
test_init_empty(void **state)
{
    struct runq_list list;

    (void)state;
    list.head = &nodes[0];
    list.tail = &nodes[1];
    list.count = 5;
    runq_list_init(&list);
    assert_list(&list, NULL, 0);
    assert_null(runq_list_pop(&list));
    assert_null(runq_list_pop(&list));
    assert_list(&list, NULL, 0);
}

static void
test_fifo(void **state)
{
    struct runq_list list;

    (void)state;
    runq_list_init(&list);

    for (unsigned int i = 0; i < NR_NODES; i++) {
        nodes[i].next = &nodes[(i + 3) % NR_NODES];  /* stale link */
        runq_list_push(&list, &nodes[i]);
        assert_int_equal(list.count, i + 1);
        assert_ptr_equal(list.tail, &nodes[i]);
        assert_null(nodes[i].next);
    }

    for (unsigned int i = 0; i < NR_NODES; i++) {
        struct runq_node *node = runq_list_pop(&list);

        assert_ptr_equal(node, &nodes[i]);
        assert_null(node->next);
        assert_int_equal(list.count, NR_NODES - 1 - i);
    }

    assert_list(&list, NULL, 0);
    assert_null(runq_list_pop(&list));
}

/* Round-robin: pop the head and push it back, the order rotates. */
static void
test_rotate(void **state)
{
    struct runq_list list;
    struct runq_node *want[] = { &nodes[1], &nodes[2], &nodes[0] };

    (void)state;
    fill(&list, 3);
    runq_list_push(&list, runq_list_pop(&list));
    assert_list(&list, want, 3);

    /* Through empty and back: the tail pointer must not dangle. */
    fill(&list, 1);
    assert_ptr_equal(runq_list_pop(&list), &nodes[0]);
    assert_list(&list, NULL, 0);
    runq_list_push(&list, &nodes[4]);
    runq_list_push(&list, &nodes[5]);
    want[0] = &nodes[4];
    want[1] = &nodes[5];
    assert_list(&list, want, 2);
}

static void
test_remove_head(void **state)
{
    struct runq_list list;
    struct runq_node *want[] = { &nodes[1], &nodes[2], &nodes[3] };

    (void)state;
    fill(&list, 4);
    runq_list_remove(&list, &nodes[0]);
    assert_null(nodes[0].next);
    assert_list(&list, want, 3);
}

static void
test_remove_middle(void **state)
{
    struct runq_list list;
    struct runq_node *want[] = { &nodes[0], &nodes[1], &nodes[3] };

    (void)state;
    fill(&list, 4);
    runq_list_remove(&list, &nodes[2]);
    assert_null(nodes[2].next);
    assert_list(&list, want, 3);
}

static void
test_remove_tail(void **state)
{
    struct runq_list list;
    struct runq_node *want[] = { &nodes[0], &nodes[1], &nodes[2], &nodes[5] };

    (void)state;
    fill(&list, 4);
    runq_list_remove(&list, &nodes[3]);
    assert_list(&list, want, 3);

    /* A push after it must link after the new tail, not the removed one. */
    runq_list_push(&list, &nodes[5]);
    assert_list(&list, want, 4);
    assert_null(nodes[3].next);
}

static void
test_remove_only(void **state)
{
    struct runq_list list;
    struct runq_node *want[] = { &nodes[6] };

    (void)state;
    fill(&list, 1);
    runq_list_remove(&list, &nodes[0]);
    assert_list(&list, NULL, 0);
    assert_null(runq_list_pop(&list));

    runq_list_push(&list, &nodes[6]);
    assert_list(&list, want, 1);
}

/* Remove everything in a scattered order, then reuse the nodes. */
static void
test_remove_all_then_reuse(void **state)
{
    struct runq_list list;
    unsigned int order[NR_NODES] = { 3, 7, 0, 5, 1, 6, 2, 4 };
    struct runq_node *want[NR_NODES];
    unsigned int n;

    (void)state;
    fill(&list, NR_NODES);

    for (unsigned int i = 0; i < NR_NODES; i++) {
        runq_list_remove(&list, &nodes[order[i]]);
        n = 0;

        for (unsigned int j = 0; j < NR_NODES; j++) {
            bool removed = false;

            for (unsigned int k = 0; k <= i; k++) {
                removed |= order[k] == j;
            }

            if (!removed) {
                want[n++] = &nodes[j];
            }
        }

        assert_list(&list, want, n);
    }

    for (unsigned int i = 0; i < NR_NODES; i++) {
        runq_list_push(&list, &nodes[order[i]]);
        want[i] = &nodes[order[i]];
    }

    assert_list(&list, want, NR_NODES);
}

/* Two lists (two CPUs): moving a node between them (migration). */
static void
test_move_between_lists(void **state)
{
    struct runq_list a, b;
    struct runq_node *want_a[] = { &nodes[0], &nodes[2] };
    struct runq_node *want_b[] = { &nodes[4], &nodes[1] };

    (void)state;
    fill(&a, 3);
    runq_list_init(&b);
    runq_list_push(&b, &nodes[4]);
    runq_list_remove(&a, &nodes[1]);
    runq_list_push(&b, &nodes[1]);
    assert_list(&a, want_a, 2);
    assert_list(&b, want_b, 2);
}

/* Removing a node that is not on the list is a caller bug, caught. */
static void
test_remove_absent_asserts(void **state)
{
    struct runq_list list;
    struct runq_node *want[] = { &nodes[0], &nodes[1] };

    (void)state;
    fill(&list, 2);
    expect_assert_failure(runq_list_remove(&list, &nodes[5]));
    assert_list(&list, want, 2);

    runq_list_init(&list);
    expect_assert_failure(runq_list_remove(&list, &nodes[0]));
    assert_list(&list, NULL, 0);
}

static void
test_pick_cpu_least_loaded(void **state)
{
    unsigned int loads[] = { 3, 1, 4, 0, 5 };

    (void)state;
    assert_int_equal(runq_pick_cpu(loads, 5, ~0ULL), 3);
    assert_int_equal(runq_pick_cpu(loads, 5, 0x1f), 3);
    /* Within the mask only. */
    assert_int_equal(runq_pick_cpu(loads, 5, 0x17), 1);    /* 0,1,2,4 */
    assert_int_equal(runq_pick_cpu(loads, 5, 0x15), 0);    /* 0,2,4 */
    assert_int_equal(runq_pick_cpu(loads, 5, 0x14), 2);    /* 2,4 */
    assert_int_equal(runq_pick_cpu(loads, 5, 1ULL << 4), 4);
}

static void
test_pick_cpu_ties(void **state)
{
    unsigned int loads[] = { 2, 1, 1, 1, 2, 1 };
    unsigned int equal[] = { 7, 7, 7, 7 };

    (void)state;
    assert_int_equal(runq_pick_cpu(loads, 6, ~0ULL), 1);
    assert_int_equal(runq_pick_cpu(loads, 6, 0x2c), 2);    /* 2,3,5 */
    assert_int_equal(runq_pick_cpu(loads, 6, 0x28), 3);    /* 3,5 */
    assert_int_equal(runq_pick_cpu(equal, 4, ~0ULL), 0);
    assert_int_equal(runq_pick_cpu(equal, 4, 0xc), 2);
}

static void
test_pick_cpu_empty_mask(void **state)
{
    unsigned int loads[] = { 0, 0, 0, 0 };

    (void)state;
    assert_int_equal(runq_pick_cpu(loads, 4, 0), -1);
    assert_int_equal(runq_pick_cpu(loads, 0, ~0ULL), -1);
    /* Only CPUs that do not exist. */
    assert_int_equal(runq_pick_cpu(loads, 4, 0xf0), -1);
    assert_int_equal(runq_pick_cpu(loads, 4, 1ULL << 63), -1);
}

/* CPUs at or beyond nr_cpus are ignored even when in the mask. */
static void
test_pick_cpu_beyond_nr_cpus(void **state)
{
    /* The entries past nr_cpus would win if they were read. */
    unsigned int loads[] = { 9, 8, 0, 0 };

    (void)state;
    assert_int_equal(runq_pick_cpu(loads, 2, ~0ULL), 1);
    assert_int_equal(runq_pick_cpu(loads, 2, 0xd), 0);     /* 0,2,3 */
    assert_int_equal(runq_pick_cpu(loads, 1, ~0ULL), 0);
}

/* 64 CPUs: the top mask bit is reachable, no shift overflow. */
static void
test_pick_cpu_64(void **state)
{
    unsigned int loads[64];

    (void)state;

    for (unsigned int i = 0; i < 64; i++) {
        loads[i] = 100 - i;
    }

    assert_int_equal(runq_pick_cpu(loads, 64, ~0ULL), 63);
    assert_int_equal(runq_pick_cpu(loads, 64, 1ULL << 63), 63);
    assert_int_equal(runq_pick_cpu(loads, 64, (1ULL << 63) - 1), 62);
    assert_int_equal(runq_pick_cpu(loads, 64, 1), 0);
}

static void
test_pick_busiest(void **state)
{
    unsigned int queued[] = { 2, 0, 5, 1 };
    unsigned int ties[] = { 0, 3, 1, 3 };
    unsigned int empty[] = { 0, 0, 0, 0 };
    unsigned int self_busy[] = { 9, 0, 0, 1 };

    (void)state;
    assert_int_equal(runq_pick_busiest(queued, 4, 0), 2);
    assert_int_equal(runq_pick_busiest(queued, 4, 1), 2);
    /* Never self, even when self is the busiest. */
    assert_int_equal(runq_pick_busiest(queued, 4, 2), 0);
    assert_int_equal(runq_pick_busiest(self_busy, 4, 0), 3);
    /* Ties: the lowest index. */
    assert_int_equal(runq_pick_busiest(ties, 4, 0), 1);
    assert_int_equal(runq_pick_busiest(ties, 4, 1), 3);
    /* Nothing queued elsewhere. */
    assert_int_equal(runq_pick_busiest(empty, 4, 0), -1);
    assert_int_equal(runq_pick_busiest(self_busy, 3, 0), -1);
    assert_int_equal(runq_pick_busiest(queued, 1, 0), -1);
    /* CPUs beyond nr_cpus are ignored. */
    assert_int_equal(runq_pick_busiest(queued, 2, 1), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_empty),
        cmocka_unit_test(test_fifo),
        cmocka_unit_test(test_rotate),
        cmocka_unit_test(test_remove_head),
        cmocka_unit_test(test_remove_middle),
        cmocka_unit_test(test_remove_tail),
        cmocka_unit_test(test_remove_only),
        cmocka_unit_test(test_remove_all_then_reuse),
        cmocka_unit_test(test_move_between_lists),
        cmocka_unit_test(test_remove_absent_asserts),
        cmocka_unit_test(test_pick_cpu_least_loaded),
        cmocka_unit_test(test_pick_cpu_ties),
        cmocka_unit_test(test_pick_cpu_empty_mask),
        cmocka_unit_test(test_pick_cpu_beyond_nr_cpus),
        cmocka_unit_test(test_pick_cpu_64),
        cmocka_unit_test(test_pick_busiest),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
