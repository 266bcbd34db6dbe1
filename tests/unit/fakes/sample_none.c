/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * What kern/perfmon/perfmon_sample.c calls to write a sample, for host
 * tests that link it to read records only (the stream, the capture): no
 * sample is ever written there, so each call fails the test.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/thread.h"

struct thread *
thread_self(void)
{
    fail_msg("thread_self: no sample is written here");
    return NULL;
}

unsigned int
thread_id(const struct thread *thread)
{
    (void)thread;
    fail_msg("thread_id: no sample is written here");
    return 0;
}

unsigned int
thread_self_id(void)
{
    fail_msg("thread_self_id: no sample is written here");
    return 0;
}

bool
thread_stack_bounds(const struct thread *thread, uint64_t *lop,
                    uint64_t *hip)
{
    (void)thread;
    (void)lop;
    (void)hip;
    fail_msg("thread_stack_bounds: no sample is written here");
    return false;
}

const struct perfmon_branch *
perfmon_intr_branches(unsigned int *nrp)
{
    (void)nrp;
    fail_msg("perfmon_intr_branches: no sample is written here");
    return NULL;
}

uint64_t
perfmon_intr_read_value(const struct perfmon_event *event)
{
    (void)event;
    fail_msg("perfmon_intr_read_value: no sample is written here");
    return 0;
}
