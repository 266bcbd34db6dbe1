/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The shell's background commands (kern/shell_job.h) for host tests of
 * what links kern/shell.c without threads: every command is the shell's
 * own, none can be started in the background (-ENOSYS, said by the
 * shell as any start error), and there is nothing to reap.
 */

#include <stdbool.h>
#include <stddef.h>

#include "kern/error.h"
#include "kern/shell_job.h"

int
shell_job_start(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return -ENOSYS;
}

struct shell_job *
shell_job_self(void)
{
    return NULL;
}

bool
shell_job_killed(const struct shell_job *job)
{
    (void)job;
    return false;
}

void
shell_job_reap(void)
{
}
