/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The shell's background commands: a line ending in '&' runs in a thread
 * of its own (shell_job_start() prints "[N] TID", N the job's number, TID
 * its thread's id as `threads` shows it) while the prompt comes back;
 * `jobs` lists them and `kill TID` stops one the way Ctrl-C stops a
 * foreground command: a job's threads (the one running its command and
 * those it creates) see shell_interrupted() turn true, and never read the
 * console, which stays the foreground's.  The shell reaps finished jobs
 * before each prompt ("[N] TID done: LINE").
 *
 * At most SHELL_JOB_MAX jobs at once.  Thread context.
 */

#ifndef KERN_SHELL_JOB_H
#define KERN_SHELL_JOB_H

#include <stdbool.h>

#define SHELL_JOB_MAX   8

struct shell_job;

/*
 * Start argv (argc words, argv[0] a known command) as a job.  Returns 0
 * after printing its number and thread id, or -EAGAIN (SHELL_JOB_MAX jobs
 * run), -E2BIG (words longer than a line), or thread_create()'s error.
 */
int shell_job_start(int argc, char **argv);

/* The job the calling thread runs for, or NULL: the shell's own. */
struct shell_job *shell_job_self(void);

/* Whether `kill` asked the job to stop. */
bool shell_job_killed(const struct shell_job *job);

/* Join the jobs that ended and say so, one line each. */
void shell_job_reap(void);

#endif /* KERN_SHELL_JOB_H */
