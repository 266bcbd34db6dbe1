/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fake of the xcall module for host tests: xcall_call() runs the function
 * at once "on" the target CPU (the fake cpu_id() switched, interrupts and
 * preemption disabled), after an optional test hook, and counts the calls.
 */

#include <stddef.h>
#include <string.h>

#include "arch/x86/cpu.h"
#include "fakes/fake_smp.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "kern/param.h"
#include "kern/xcall.h"

static unsigned int fake_xcall_remote;
static unsigned int fake_xcall_on[CPU_MAX];
static void (*fake_xcall_hook)(unsigned int cpu);

void
fake_xcall_reset(void)
{
    fake_xcall_remote = 0;
    memset(fake_xcall_on, 0, sizeof(fake_xcall_on));
    fake_xcall_hook = NULL;
}

unsigned int
fake_xcall_nr_remote(void)
{
    return fake_xcall_remote;
}

unsigned int
fake_xcall_nr_on(unsigned int cpu)
{
    return fake_xcall_on[cpu];
}

void
fake_xcall_set_hook(void (*hook)(unsigned int cpu))
{
    fake_xcall_hook = hook;
}

int
xcall_call(xcall_fn_t fn, void *arg, unsigned int cpu)
{
    struct fake_ctx ctx;

    assert(cpu_intr_enabled());
    assert(fn != NULL);

    if (cpu >= cpu_count()) {
        return -EINVAL;
    }

    if (cpu != cpu_id()) {
        fake_xcall_remote++;
    }

    if (fake_xcall_hook != NULL) {
        fake_xcall_hook(cpu);
    }

    fake_xcall_on[cpu]++;
    fake_ctx_enter(&ctx, cpu);
    fn(arg);
    fake_ctx_exit(&ctx);
    return 0;
}

/* The calls one after the other: the fakes run one CPU at a time. */
int
xcall_call_many(xcall_fn_t fn, void *arg, uint64_t cpus)
{
    if (cpus == 0 || (cpus >> cpu_count()) != 0) {
        return -EINVAL;
    }

    for (uint64_t left = cpus; left != 0; left &= left - 1) {
        xcall_call(fn, arg, (unsigned int)__builtin_ctzll(left));
    }

    return 0;
}
