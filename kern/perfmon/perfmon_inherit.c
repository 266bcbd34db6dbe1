/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: inherited events (PERFMON_EF_INHERIT).
 *
 * An inherited thread event (the root) has a family: when a thread the
 * family counts creates a thread, the new thread gets a child event of
 * its own, attached before it first runs, sharing the root's counter slot.
 * Reading the root adds up the live children and what the children that
 * are gone counted (family->gone).  A child lives as long as its thread:
 * when the thread exits, its counts go into family->gone and the child is
 * released.  Detaching the root releases every child.
 *
 * Who touches a child: the thread that creates it (before anyone else can
 * see it), then the root's owner (read, enable, disable: the calls on the
 * root, which never run concurrently) and the exit of its thread.  The
 * owner works on one child at a time outside perfmon_family_lock, holding
 * it pinned: an exit that finds its child pinned leaves it to the owner
 * (marked exiting), which releases it when done.  Creations and exits in
 * flight hold the family (nr_busy), and the root's detach waits for them.
 *
 * perfmon_family_lock protects every family's lists and flags and every
 * thread's member list; it is taken in thread context and never held
 * across a thread_call, an xcall or an event operation (it nests only the
 * allocator's lock, kmem_zalloc).
 *
 * An event's family pointer is also read under perfmon_lock by whoever
 * walks the counter slots' user lists (perfmon_pmc_foreach: `perfmon
 * info`), which follows it to the family: it is set and cleared under
 * that lock (perfmon_event_set_family) while the event is on a list, so
 * that such a reader sees NULL or a whole family not yet freed.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_event.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/perfmon/perfmon_inherit.h"
#include "kern/perfmon_ring.h"
#include "kern/spinlock.h"
#include "kern/string.h"
#include "kern/thread.h"

/*
 * A child: its event, on its thread, and its place in the family (under
 * perfmon_family_lock).  pinned: the owner is working on it; exiting: its
 * thread exited while it was pinned, the owner releases it.  enable: while
 * being created, whether to attach it enabled.
 */
struct perfmon_child {
    struct perfmon_event event;
    struct perfmon_member member;
    struct perfmon_child *next;         /* family->children */
    bool pinned;
    bool exiting;
    bool enable;
};

static struct spinlock perfmon_family_lock = SPINLOCK_INITIALIZER;

/* Families alive: thread creation looks for nothing while there are none. */
static unsigned int perfmon_nr_families;

/* ---- members (perfmon_family_lock) --------------------------------------- */

static void
perfmon_member_add(struct thread *thread, struct perfmon_member *member,
                   struct perfmon_family *family)
{
    struct perfmon_td *td = thread_get_perfmon_td(thread);

    assert(spinlock_held(&perfmon_family_lock));
    member->family = family;
    member->next = td->members;
    td->members = member;
}

static void
perfmon_member_remove(struct thread *thread, struct perfmon_member *member)
{
    struct perfmon_member **prevp = &thread_get_perfmon_td(thread)->members;

    assert(spinlock_held(&perfmon_family_lock));

    while (*prevp != member) {
        assert(*prevp != NULL);
        prevp = &(*prevp)->next;
    }

    *prevp = member->next;
    member->next = NULL;
}

/* ---- children ------------------------------------------------------------ */

/* Set or clear the family of an attached event (see the top). */
static void
perfmon_event_set_family(struct perfmon_event *event,
                         struct perfmon_family *family)
{
    spinlock_lock(&perfmon_lock);
    event->family = family;
    spinlock_unlock(&perfmon_lock);
}

static struct perfmon_child *
perfmon_child_of_member(struct perfmon_member *member)
{
    return structof(member, struct perfmon_child, member);
}

static bool
perfmon_member_is_child(const struct perfmon_member *member)
{
    return member != &member->family->root_member;
}

/* Take a child off its family's list (perfmon_family_lock). */
static void
perfmon_child_unlink(struct perfmon_family *family,
                     struct perfmon_child *child)
{
    struct perfmon_child **prevp = &family->children;

    assert(spinlock_held(&perfmon_family_lock));

    while (*prevp != child) {
        assert(*prevp != NULL);
        prevp = &(*prevp)->next;
    }

    *prevp = child->next;
    perfmon_member_remove(child->event.thread, &child->member);
}

/*
 * Release a child taken off its family: detach its event, keep what it
 * counted in family->gone, free it.
 */
static void
perfmon_child_release(struct perfmon_family *family,
                      struct perfmon_child *child)
{
    perfmon_event_set_family(&child->event, NULL);
    perfmon_event_release(&child->event);
    spinlock_lock(&perfmon_family_lock);
    perfmon_counts_add(&family->gone, &child->event.total);
    spinlock_unlock(&perfmon_family_lock);
    kmem_free(child, sizeof(*child));
}

/*
 * Wait, the lock held, until no thread creation or exit works on the
 * family; they take a moment and do not wait for anything.
 */
static void
perfmon_family_wait_idle(struct perfmon_family *family)
{
    assert(spinlock_held(&perfmon_family_lock));

    while (family->nr_busy != 0) {
        spinlock_unlock(&perfmon_family_lock);
        thread_yield();
        spinlock_lock(&perfmon_family_lock);
    }
}

/*
 * The owner's walk over the live children: fn runs on each, pinned, the
 * lock released, and may give counts it read, which go into sum (when not
 * NULL).  A child whose thread exited meanwhile is released after fn, its
 * final counts going into family->gone; what fn read of it is dropped.
 * Releasing it drops the lock, so the next child is pinned first: an exit
 * meanwhile then leaves it to the walk instead of freeing it under it.
 * Children created during the walk are not visited.
 */
static void
perfmon_family_walk(struct perfmon_family *family,
                    void (*fn)(struct perfmon_child *child, void *arg,
                               struct perfmon_counts *counts),
                    void *arg, struct perfmon_counts *sum)
{
    struct perfmon_child *child, *next;
    struct perfmon_counts counts;

    spinlock_lock(&perfmon_family_lock);
    perfmon_family_wait_idle(family);
    child = family->children;

    while (child != NULL) {
        child->pinned = true;
        spinlock_unlock(&perfmon_family_lock);
        counts = (struct perfmon_counts){ 0 };
        fn(child, arg, &counts);
        spinlock_lock(&perfmon_family_lock);
        child->pinned = false;
        next = child->next;

        if (child->exiting) {
            perfmon_child_unlink(family, child);

            if (next != NULL) {
                next->pinned = true;
            }

            spinlock_unlock(&perfmon_family_lock);
            perfmon_child_release(family, child);
            spinlock_lock(&perfmon_family_lock);
        } else if (sum != NULL) {
            perfmon_counts_add(sum, &counts);
        }

        child = next;
    }

    spinlock_unlock(&perfmon_family_lock);
}

/* ---- the root's side ------------------------------------------------------ */

int
perfmon_family_create(struct perfmon_event *root)
{
    struct perfmon_family *family;

    assert(root->state != 0 && root->thread != NULL);
    family = kmem_zalloc(sizeof(*family));

    if (family == NULL) {
        return -ENOMEM;
    }

    family->root = root;
    perfmon_event_set_family(root, family);
    spinlock_lock(&perfmon_family_lock);
    perfmon_member_add(root->thread, &family->root_member, family);
    perfmon_nr_families++;
    spinlock_unlock(&perfmon_family_lock);
    return 0;
}

void
perfmon_family_destroy(struct perfmon_event *root)
{
    struct perfmon_family *family = root->family;
    struct perfmon_child *children;

    spinlock_lock(&perfmon_family_lock);
    family->dying = true;
    perfmon_family_wait_idle(family);
    children = family->children;
    family->children = NULL;

    for (struct perfmon_child *c = children; c != NULL; c = c->next) {
        perfmon_member_remove(c->event.thread, &c->member);
    }

    perfmon_member_remove(root->thread, &family->root_member);
    assert(perfmon_nr_families != 0);
    perfmon_nr_families--;
    spinlock_unlock(&perfmon_family_lock);

    while (children != NULL) {
        struct perfmon_child *child = children;

        children = child->next;
        perfmon_child_release(family, child);
    }

    perfmon_counts_add(&root->total, &family->gone);
    perfmon_event_set_family(root, NULL);
    kmem_free(family, sizeof(*family));
}

static void
perfmon_child_set_enabled(struct perfmon_child *child, void *arg,
                          struct perfmon_counts *counts)
{
    struct perfmon_event *event = &child->event;

    (void)counts;

    perfmon_events_set_enabled(&event, 1, *(const bool *)arg);
}

void
perfmon_family_set_enabled(struct perfmon_family *family, bool enabled)
{
    /* Creations from now on follow; the walk waits for those in flight. */
    spinlock_lock(&perfmon_family_lock);
    family->enabled = enabled;
    spinlock_unlock(&perfmon_family_lock);
    perfmon_family_walk(family, perfmon_child_set_enabled, &enabled, NULL);
}

static void
perfmon_child_read(struct perfmon_child *child, void *arg,
                   struct perfmon_counts *counts)
{
    perfmon_event_read_counts(&child->event, *(const bool *)arg, counts);
}

void
perfmon_family_add_counts(struct perfmon_family *family, bool times,
                          struct perfmon_counts *counts)
{
    struct perfmon_counts sum = { 0 };

    perfmon_family_walk(family, perfmon_child_read, &times, &sum);
    spinlock_lock(&perfmon_family_lock);
    perfmon_counts_add(counts, &sum);
    perfmon_counts_add(counts, &family->gone);
    spinlock_unlock(&perfmon_family_lock);
}

/* ---- thread creation and exit ---------------------------------------------- */

/* A new child of family for thread, attached, not yet on any list. */
static int
perfmon_child_attach(struct perfmon_child *child, struct thread *thread,
                     bool enabled)
{
    const struct perfmon_event *root = child->member.family->root;
    struct perfmon_event *event = &child->event;
    unsigned int flags = root->flags & ~PERFMON_EF_INHERIT;
    int error;

    flags = enabled ? (flags & ~PERFMON_EF_DISABLED)
                    : (flags | PERFMON_EF_DISABLED);
    error = perfmon_event_init(event, root->id, flags);
    assert(error == 0);
    perfmon_event_set_dev(event, root->dev);
    perfmon_event_set_sampling(event, root->sampling);

    /*
     * Marks it a child (perfmon_event_is_root(), perfmon info), which
     * shares the root's slot: the root's group, not a member of it.
     */
    event->family = child->member.family;
    event->group = root->group;
    error = perfmon_event_attach_thread(event, thread);

    if (error) {
        event->family = NULL;
        return error;
    }

    perfmon_event_attach_end(event);
    return 0;
}

/* The buffer a child's samples go to, or NULL: a counting event. */
static struct perfmon_sbuf *
perfmon_child_sbuf(const struct perfmon_child *child)
{
    const struct perfmon_sampling *sampling =
        child->member.family->root->sampling;

    return (sampling != NULL) ? sampling->sbuf : NULL;
}

/*
 * Name a new thread in each buffer its new children sample into (once a
 * buffer), in the ring of this CPU, before it first runs: its samples may
 * be read after it is gone, and its name with it (perf names a new task
 * the same way).  Interrupts are disabled so that no other writer of this
 * CPU's ring but an NMI comes in between, and the CPU stays this one.
 */
static void
perfmon_child_name(struct thread *thread, const struct perfmon_child *made)
{
    char name[PERFMON_REC_NAME_SIZE];
    struct perfmon_ring_txn txn;
    unsigned long flags;
    unsigned int cpu;

    memset(name, 0, sizeof(name));
    strlcpy(name, thread_name(thread), sizeof(name));
    flags = cpu_intr_save();
    cpu = cpu_id();

    for (const struct perfmon_child *child = made; child != NULL;
         child = child->next) {
        struct perfmon_sbuf *sbuf = perfmon_child_sbuf(child);
        const struct perfmon_child *seen = made;
        struct perfmon_ring *ring;

        while (seen != child && perfmon_child_sbuf(seen) != sbuf) {
            seen = seen->next;
        }

        ring = (sbuf != NULL && seen == child) ? perfmon_sbuf_ring(sbuf, cpu)
                                               : NULL;

        if (ring != NULL
            && perfmon_ring_begin(ring, PERFMON_REC_COMM, thread_id(thread),
                                  sizeof(name), &txn)) {
            perfmon_ring_put(ring, &txn, name, sizeof(name));
            perfmon_ring_commit(ring, &txn);
        }
    }

    cpu_intr_restore(flags);
}

int
perfmon_thread_fork(struct thread *thread)
{
    struct perfmon_child *made = NULL, *child, *next;
    struct perfmon_member *member;
    int error = 0;

    if (__atomic_load_n(&perfmon_nr_families, __ATOMIC_RELAXED) == 0) {
        return 0;
    }

    perfmon_assert_thread_context();

    /* A child for each family counting the caller, the family held. */
    spinlock_lock(&perfmon_family_lock);

    for (member = thread_get_perfmon_td(thread_self())->members;
         member != NULL; member = member->next) {
        struct perfmon_family *family = member->family;

        if (family->dying) {
            continue;
        }

        child = kmem_zalloc(sizeof(*child));

        if (child == NULL) {
            error = -ENOMEM;
            break;
        }

        child->member.family = family;
        child->enable = family->enabled;
        child->next = made;
        made = child;
        family->nr_busy++;
    }

    spinlock_unlock(&perfmon_family_lock);

    for (child = made; child != NULL && error == 0; child = child->next) {
        error = perfmon_child_attach(child, thread, child->enable);
    }

    /* While the families are busy: their roots' buffers stay. */
    if (error == 0) {
        perfmon_child_name(thread, made);
    }

    /* Publish them all, or undo them all. */
    spinlock_lock(&perfmon_family_lock);

    for (child = made; child != NULL; child = next) {
        struct perfmon_family *family = child->member.family;

        next = child->next;
        family->nr_busy--;

        if (error == 0) {
            child->next = family->children;
            family->children = child;
            perfmon_member_add(thread, &child->member, family);
        }
    }

    spinlock_unlock(&perfmon_family_lock);

    if (error != 0) {
        for (child = made; child != NULL; child = next) {
            next = child->next;

            if (perfmon_event_attached(&child->event)) {
                perfmon_event_set_family(&child->event, NULL);
                perfmon_event_release(&child->event);
            }

            kmem_free(child, sizeof(*child));
        }
    }

    return error;
}

void
perfmon_thread_exit(void)
{
    struct perfmon_td *td = thread_get_perfmon_td(thread_self());
    struct perfmon_child *leaving = NULL, *child;
    struct perfmon_member *member, *next;

    if (__atomic_load_n(&perfmon_nr_families, __ATOMIC_RELAXED) == 0) {
        return;
    }

    perfmon_assert_thread_context();
    spinlock_lock(&perfmon_family_lock);

    for (member = td->members; member != NULL; member = next) {
        next = member->next;

        if (!perfmon_member_is_child(member)) {
            continue;
        }

        child = perfmon_child_of_member(member);

        if (child->pinned) {
            child->exiting = true;
            continue;
        }

        perfmon_child_unlink(member->family, child);
        member->family->nr_busy++;
        child->next = leaving;
        leaving = child;
    }

    spinlock_unlock(&perfmon_family_lock);

    while (leaving != NULL) {
        struct perfmon_family *family = leaving->member.family;

        child = leaving;
        leaving = child->next;
        perfmon_child_release(family, child);
        spinlock_lock(&perfmon_family_lock);
        family->nr_busy--;
        spinlock_unlock(&perfmon_family_lock);
    }
}
