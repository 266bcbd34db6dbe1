/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Helpers shared by the in-kernel tests.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/clock.h"
#include "kern/printf.h"
#include "kern/syscnt.h"
#include "kern/thread.h"
#include "tests/kernel/ktest_util.h"

uint64_t
ktest_deadline(unsigned int ms)
{
    return clock_get_time() + clock_ticks_from_ms(ms);
}

bool
ktest_expired(uint64_t deadline)
{
    return clock_get_time() > deadline;
}

bool
ktest_wait_until(bool (*done)(void *arg), void *arg, unsigned int ms)
{
    uint64_t deadline = ktest_deadline(ms);

    while (!done(arg)) {
        if (ktest_expired(deadline)) {
            return false;
        }

        thread_msleep(1);
    }

    return true;
}

static bool
ktest_flag_set(void *arg)
{
    return *(volatile bool *)arg;
}

bool
ktest_wait_flag(volatile bool *flag, unsigned int ms)
{
    return ktest_wait_until(ktest_flag_set, (void *)flag, ms);
}

unsigned int
ktest_cpu_now(void)
{
    unsigned int cpu;

    thread_preempt_disable();
    cpu = cpu_id();
    thread_preempt_enable();
    return cpu;
}

uint64_t
ktest_pin_self(unsigned int *cpup)
{
    struct thread *self = thread_self();
    uint64_t saved = thread_get_affinity(self);

    *cpup = ktest_cpu_now();
    thread_set_affinity(self, THREAD_CPUMASK(*cpup));
    return saved;
}

void
ktest_unpin_self(uint64_t saved)
{
    thread_set_affinity(thread_self(), saved);
}

struct syscnt *
ktest_syscnt_cpu(const char *prefix, unsigned int cpu)
{
    char name[SYSCNT_NAME_SIZE];

    ksnprintf(name, sizeof(name), "%s/%u", prefix, cpu);
    return syscnt_lookup(name);
}

uint64_t
ktest_syscnt_read_cpu(const char *prefix, unsigned int cpu)
{
    struct syscnt *s = ktest_syscnt_cpu(prefix, cpu);

    return (s == NULL) ? 0 : syscnt_read(s);
}
