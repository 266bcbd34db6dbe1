/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Run queue lists and placement decisions.
 */

#include <stddef.h>
#include <stdint.h>

#include "kern/assert.h"
#include "kern/runq.h"

void
runq_list_init(struct runq_list *list)
{
    list->head = NULL;
    list->tail = NULL;
    list->count = 0;
}

void
runq_list_push(struct runq_list *list, struct runq_node *node)
{
    node->next = NULL;

    if (list->tail == NULL) {
        list->head = node;
    } else {
        list->tail->next = node;
    }

    list->tail = node;
    list->count++;
}

struct runq_node *
runq_list_pop(struct runq_list *list)
{
    struct runq_node *node = list->head;

    if (node == NULL) {
        return NULL;
    }

    list->head = node->next;

    if (list->head == NULL) {
        list->tail = NULL;
    }

    list->count--;
    node->next = NULL;
    return node;
}

void
runq_list_remove(struct runq_list *list, struct runq_node *node)
{
    struct runq_node **p = &list->head, *prev = NULL;

    while (*p != node) {
        assert(*p != NULL);     /* not on this list: a caller bug */

        if (*p == NULL) {
            return;
        }

        prev = *p;
        p = &(*p)->next;
    }

    *p = node->next;

    if (list->tail == node) {
        list->tail = prev;
    }

    list->count--;
    node->next = NULL;
}

int
runq_pick_cpu(const unsigned int *loads, unsigned int nr_cpus, uint64_t mask)
{
    int best = -1;

    for (unsigned int cpu = 0; cpu < nr_cpus && cpu < 64; cpu++) {
        if ((mask & (1ULL << cpu)) == 0) {
            continue;
        }

        if (best < 0 || loads[cpu] < loads[best]) {
            best = cpu;
        }
    }

    return best;
}

int
runq_pick_busiest(const unsigned int *queued, unsigned int nr_cpus,
                  unsigned int self)
{
    int best = -1;

    for (unsigned int cpu = 0; cpu < nr_cpus; cpu++) {
        if (cpu != self && queued[cpu] != 0
            && (best < 0 || queued[cpu] > queued[best])) {
            best = cpu;
        }
    }

    return best;
}
