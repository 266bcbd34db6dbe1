/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * System counter registry and the `syscnt` shell command.
 */

#include <stddef.h>

#include "kern/init.h"
#include "kern/spinlock.h"
#include "kern/string.h"
#include "kern/syscnt.h"

#ifndef TALLY_HOST_TEST
#include "kern/console.h"
#include "kern/shell.h"
#endif

/* Registered counters, in registration order; syscnt_lock protects it. */
static struct syscnt *syscnt_head;
static struct syscnt **syscnt_tailp = &syscnt_head;
static struct spinlock syscnt_lock = SPINLOCK_INITIALIZER;

void
syscnt_register(struct syscnt *syscnt, const char *name)
{
    unsigned long flags;

    __atomic_store_n(&syscnt->value, 0, __ATOMIC_RELAXED);
    strlcpy(syscnt->name, name, sizeof(syscnt->name));
    syscnt->next = NULL;

    spinlock_lock_intr_save(&syscnt_lock, &flags);
    *syscnt_tailp = syscnt;
    syscnt_tailp = &syscnt->next;
    spinlock_unlock_intr_restore(&syscnt_lock, flags);
}

struct syscnt *
syscnt_lookup(const char *name)
{
    struct syscnt *found = NULL;
    unsigned long flags;

    spinlock_lock_intr_save(&syscnt_lock, &flags);

    for (struct syscnt *s = syscnt_head; s != NULL; s = s->next) {
        if (strcmp(s->name, name) == 0) {
            found = s;
            break;
        }
    }

    spinlock_unlock_intr_restore(&syscnt_lock, flags);
    return found;
}

/*
 * Counters are never unregistered, so the list may be walked without the
 * lock once a node is reached: only the tail pointer changes.
 */
void
syscnt_foreach(const char *prefix,
               void (*fn)(const struct syscnt *syscnt, void *arg), void *arg)
{
    size_t len = prefix == NULL ? 0 : strlen(prefix);
    struct syscnt *s = __atomic_load_n(&syscnt_head, __ATOMIC_ACQUIRE);

    for (; s != NULL; s = __atomic_load_n(&s->next, __ATOMIC_ACQUIRE)) {
        if (len == 0 || strncmp(s->name, prefix, len) == 0) {
            fn(s, arg);
        }
    }
}

#ifdef TALLY_HOST_TEST

void
syscnt_reset(void)
{
    syscnt_head = NULL;
    syscnt_tailp = &syscnt_head;
}

#else /* TALLY_HOST_TEST */

static int
syscnt_setup(void)
{
    return 0;
}

INIT_OP_DEFINE(syscnt_setup);

static void
syscnt_cmd_print(const struct syscnt *syscnt, void *arg)
{
    unsigned int *countp = arg;

    kprintf("%-32s %'20lu\n", syscnt->name, syscnt_read(syscnt));
    (*countp)++;
}

static int
syscnt_cmd(int argc, char **argv)
{
    unsigned int count = 0;

    if (argc > 2) {
        kprintf("usage: syscnt [prefix]\n");
        return SHELL_ERR_REPORTED;
    }

    syscnt_foreach(argc == 2 ? argv[1] : NULL, syscnt_cmd_print, &count);

    if (count == 0) {
        kprintf("syscnt: no counter matches '%s'\n", argv[1]);
        return SHELL_ERR_REPORTED;
    }

    return 0;
}

SHELL_COMMAND(syscnt, "syscnt", "[prefix]",
              "list system counters (all, or those named prefix...)",
              syscnt_cmd);

#endif /* TALLY_HOST_TEST */
