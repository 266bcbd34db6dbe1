/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Families of inherited events (perfmon_inherit.c), private to the core,
 * for the entry points of perfmon.c above it.  The family's structure is
 * in perfmon_i.h (the allocator tells children apart by it).  Thread
 * context, on behalf of the root's owner.
 *
 * perfmon_family_create: give an attached thread event its family (the
 *   event's family set), before it is first enabled; 0 or -ENOMEM.
 * perfmon_family_destroy: release every child, add what they counted to
 *   the root's total, free the family (root->family NULL).
 * perfmon_family_set_enabled: the root was enabled or disabled: so are
 *   the children, now and those created from now on.
 * perfmon_family_add_counts: add the children's counts to counts.
 */

#ifndef KERN_PERFMON_INHERIT_H
#define KERN_PERFMON_INHERIT_H

#include <stdbool.h>

#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_i.h"

int perfmon_family_create(struct perfmon_event *root);
void perfmon_family_destroy(struct perfmon_event *root);
void perfmon_family_set_enabled(struct perfmon_family *family, bool enabled);
void perfmon_family_add_counts(struct perfmon_family *family, bool times,
                               struct perfmon_counts *counts);

#endif /* KERN_PERFMON_INHERIT_H */
