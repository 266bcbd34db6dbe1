/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Run queue building blocks, kept free of any hardware or locking so that
 * the scheduler's queueing and placement decisions are host-tested:
 *
 *   - struct runq_list: an intrusive FIFO of threads (round-robin order)
 *     with removal from anywhere (migration, affinity changes);
 *   - runq_pick_cpu(): where to place a thread given each CPU's load and
 *     the thread's affinity;
 *   - runq_pick_busiest(): which CPU an idle CPU should pull work from.
 *
 * The caller (kern/thread.c) provides the locking: a list belongs to one
 * CPU's run queue and is protected by its lock.
 */

#ifndef KERN_RUNQ_H
#define KERN_RUNQ_H

#include <stdbool.h>
#include <stdint.h>

struct runq_node {
    struct runq_node *next;
};

struct runq_list {
    struct runq_node *head;
    struct runq_node *tail;
    unsigned int count;
};

void runq_list_init(struct runq_list *list);

/* Append at the tail (the node must not be on a list). */
void runq_list_push(struct runq_list *list, struct runq_node *node);

/* Remove and return the head, or NULL when empty. */
struct runq_node *runq_list_pop(struct runq_list *list);

/* Remove a node known to be on the list. */
void runq_list_remove(struct runq_list *list, struct runq_node *node);

/*
 * The CPU in mask (among cpus 0..nr_cpus-1) with the smallest load, the
 * lowest index among equals; -1 when mask names no such CPU.
 */
int runq_pick_cpu(const unsigned int *loads, unsigned int nr_cpus,
                  uint64_t mask);

/*
 * The CPU other than self with the most queued threads (at least one), or
 * -1 when every other queue is empty.
 */
int runq_pick_busiest(const unsigned int *queued, unsigned int nr_cpus,
                      unsigned int self);

#endif /* KERN_RUNQ_H */
