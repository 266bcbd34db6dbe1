/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fake of the system counter registry for host tests: the same contract as
 * kern/syscnt.c, a list in registration order, without the lock.
 */

#include <stddef.h>
#include <string.h>

#include "fakes/fake_smp.h"
#include "kern/syscnt.h"

static struct syscnt *fake_syscnt_first;
static struct syscnt **fake_syscnt_lastp = &fake_syscnt_first;

void
fake_syscnt_reset(void)
{
    fake_syscnt_first = NULL;
    fake_syscnt_lastp = &fake_syscnt_first;
}

void
syscnt_register(struct syscnt *syscnt, const char *name)
{
    syscnt->value = 0;
    strncpy(syscnt->name, name, sizeof(syscnt->name) - 1);
    syscnt->name[sizeof(syscnt->name) - 1] = '\0';
    syscnt->next = NULL;
    *fake_syscnt_lastp = syscnt;
    fake_syscnt_lastp = &syscnt->next;
}

struct syscnt *
syscnt_lookup(const char *name)
{
    for (struct syscnt *s = fake_syscnt_first; s != NULL; s = s->next) {
        if (strcmp(s->name, name) == 0) {
            return s;
        }
    }

    return NULL;
}

void
syscnt_foreach(const char *prefix,
               void (*fn)(const struct syscnt *syscnt, void *arg), void *arg)
{
    size_t len = (prefix == NULL) ? 0 : strlen(prefix);

    for (struct syscnt *s = fake_syscnt_first; s != NULL; s = s->next) {
        if (strncmp(s->name, prefix == NULL ? "" : prefix, len) == 0) {
            fn(s, arg);
        }
    }
}
