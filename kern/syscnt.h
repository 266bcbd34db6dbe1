/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * System counters: named 64-bit event counts that modules register and
 * bump, listed by the `syscnt [prefix]` shell command.
 *
 * syscnt_add/inc/read are lock-free atomics, safe from any context,
 * including NMI handlers.  Registration takes a lock: thread context only.
 * Per-CPU counters are separate counters named "name/N".
 */

#ifndef KERN_SYSCNT_H
#define KERN_SYSCNT_H

#include <stdint.h>

#include "kern/init.h"
#include "kern/printf.h"

#define SYSCNT_NAME_SIZE    32

struct syscnt {
    uint64_t value;                 /* atomic */
    char name[SYSCNT_NAME_SIZE];
    struct syscnt *next;            /* registry list, under the registry lock */
};

/* Register a counter (value starts at 0); the name is copied, truncated. */
void syscnt_register(struct syscnt *syscnt, const char *name);

/* Register the counter of one CPU, named "prefix/cpu". */
static inline void
syscnt_register_cpu(struct syscnt *syscnt, const char *prefix,
                    unsigned int cpu)
{
    char name[SYSCNT_NAME_SIZE];

    ksnprintf(name, sizeof(name), "%s/%u", prefix, cpu);
    syscnt_register(syscnt, name);
}

static inline void
syscnt_add(struct syscnt *syscnt, int64_t delta)
{
    __atomic_fetch_add(&syscnt->value, (uint64_t)delta, __ATOMIC_RELAXED);
}

static inline void
syscnt_inc(struct syscnt *syscnt)
{
    syscnt_add(syscnt, 1);
}

static inline uint64_t
syscnt_read(const struct syscnt *syscnt)
{
    return __atomic_load_n(&syscnt->value, __ATOMIC_RELAXED);
}

/* Find a registered counter by exact name, or NULL. */
struct syscnt *syscnt_lookup(const char *name);

/*
 * Call fn for each registered counter whose name starts with prefix (all
 * when prefix is NULL or ""), in registration order.
 */
void syscnt_foreach(const char *prefix,
                    void (*fn)(const struct syscnt *syscnt, void *arg),
                    void *arg);

#ifdef TALLY_HOST_TEST
/* Forget every registered counter (host tests only). */
void syscnt_reset(void);
#else
INIT_OP_DECLARE(syscnt_setup);
#endif

#endif /* KERN_SYSCNT_H */
