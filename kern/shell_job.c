/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The shell's background commands, `jobs` and `kill` (kern/shell_job.h).
 * Each job owns a copy of its words and a slot of a fixed table; its
 * thread marks it done when the command returns, and the shell joins it
 * and frees the slot before its next prompt, or `kill` does on its way
 * out.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kern/clock.h"
#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/shell_job.h"
#include "kern/spinlock.h"
#include "kern/string.h"
#include "kern/thread.h"

/* How long `kill` waits for a job to stop before saying it has not. */
#define SHELL_JOB_KILL_WAIT_MS  2000
#define SHELL_JOB_KILL_NAP_MS   10

/*
 * A job.  thread is set by the shell at start (NULL: the slot is free)
 * and cleared when it is reaped; the words are constant meanwhile; done and
 * killed are atomic (set by the job's thread and by `kill`).  The table's
 * lock covers which slots are taken and their numbers.
 */
struct shell_job {
    struct thread *thread;
    unsigned int number;
    unsigned int tid;
    char words[SHELL_LINE_MAX];
    char *argv[SHELL_MAX_ARGS + 1];
    int argc;
    bool done;
    bool killed;
    int result;
};

static struct shell_job shell_jobs[SHELL_JOB_MAX];
static struct spinlock shell_jobs_lock = SPINLOCK_INITIALIZER;
static unsigned int shell_jobs_next = 1;

static void
shell_job_main(void *arg)
{
    struct shell_job *job = arg;

    thread_set_job(job);
    job->result = shell_exec_argv(job->argc, job->argv);
    __atomic_store_n(&job->done, true, __ATOMIC_RELEASE);
}

/* Copy the words into the job, each after the other. */
static int
shell_job_copy(struct shell_job *job, int argc, char **argv)
{
    size_t len = 0;

    for (int i = 0; i < argc; i++) {
        size_t n = strlen(argv[i]) + 1;

        if (len + n > sizeof(job->words)) {
            return -E2BIG;
        }

        memcpy(&job->words[len], argv[i], n);
        job->argv[i] = &job->words[len];
        len += n;
    }

    job->argv[argc] = NULL;
    job->argc = argc;
    return 0;
}

/* A free slot, taken (thread not yet set: the caller's), or NULL. */
static struct shell_job *
shell_job_alloc(void)
{
    struct shell_job *job = NULL;

    spinlock_lock(&shell_jobs_lock);

    for (unsigned int i = 0; i < SHELL_JOB_MAX; i++) {
        if (shell_jobs[i].number == 0) {
            job = &shell_jobs[i];
            job->number = shell_jobs_next++;
            break;
        }
    }

    spinlock_unlock(&shell_jobs_lock);
    return job;
}

static void
shell_job_free(struct shell_job *job)
{
    spinlock_lock(&shell_jobs_lock);
    job->thread = NULL;
    job->number = 0;
    spinlock_unlock(&shell_jobs_lock);
}

int
shell_job_start(int argc, char **argv)
{
    struct shell_job *job = shell_job_alloc();
    int error;

    if (job == NULL) {
        return -EAGAIN;
    }

    error = shell_job_copy(job, argc, argv);
    job->done = false;
    job->killed = false;
    job->result = 0;

    if (error == 0) {
        error = thread_create(&job->thread, job->argv[0], shell_job_main, job,
                              THREAD_CPUMASK_ALL);
    }

    if (error) {
        shell_job_free(job);
        return error;
    }

    job->tid = thread_id(job->thread);
    kprintf("[%u] %u\n", job->number, job->tid);
    return 0;
}

struct shell_job *
shell_job_self(void)
{
    return thread_job(thread_self());
}

bool
shell_job_killed(const struct shell_job *job)
{
    return __atomic_load_n(&job->killed, __ATOMIC_ACQUIRE);
}

static bool
shell_job_done(const struct shell_job *job)
{
    return __atomic_load_n(&job->done, __ATOMIC_ACQUIRE);
}

/* A job's words, as one line. */
static void
shell_job_line(const struct shell_job *job, char *buf, size_t size)
{
    size_t len = 0;

    buf[0] = '\0';

    for (int i = 0; i < job->argc && len < size; i++) {
        len += (size_t)ksnprintf(&buf[len], size - len, "%s%s",
                                 (i == 0) ? "" : " ", job->argv[i]);
    }
}

/* Join an ended job, say how it ended, free its slot. */
static void
shell_job_finish(struct shell_job *job)
{
    char line[SHELL_LINE_MAX];

    thread_join(job->thread);
    shell_job_line(job, line, sizeof(line));
    kprintf("[%u] %u %s: %s\n", job->number, job->tid,
            job->killed ? "killed" : (job->result == 0) ? "done" : "failed",
            line);
    shell_job_free(job);
}

/*
 * Only the shell's own thread reaps and kills: a job never joins another
 * job (or itself).
 */
void
shell_job_reap(void)
{
    if (shell_job_self() != NULL) {
        return;
    }

    for (unsigned int i = 0; i < SHELL_JOB_MAX; i++) {
        struct shell_job *job = &shell_jobs[i];

        if (job->thread != NULL && shell_job_done(job)) {
            shell_job_finish(job);
        }
    }
}

static int
shell_job_jobs_cmd(int argc, char **argv)
{
    char line[SHELL_LINE_MAX];

    (void)argv;

    if (argc != 1) {
        kprintf("usage: jobs\n");
        return SHELL_ERR_REPORTED;
    }

    for (unsigned int i = 0; i < SHELL_JOB_MAX; i++) {
        const struct shell_job *job = &shell_jobs[i];

        if (job->thread == NULL) {
            continue;
        }

        shell_job_line(job, line, sizeof(line));
        kprintf("[%u] %u %s: %s\n", job->number, job->tid,
                shell_job_done(job) ? "done"
                : shell_job_killed(job) ? "stopping" : "running", line);
    }

    shell_job_reap();
    return 0;
}

SHELL_COMMAND(jobs, "jobs", "", "list the background commands (CMD &)",
              shell_job_jobs_cmd);

static struct shell_job *
shell_job_find(unsigned int tid)
{
    for (unsigned int i = 0; i < SHELL_JOB_MAX; i++) {
        if (shell_jobs[i].thread != NULL && shell_jobs[i].tid == tid) {
            return &shell_jobs[i];
        }
    }

    return NULL;
}

/*
 * `kill TID`: ask the job to stop as Ctrl-C would, and wait a while for
 * it to, so that what it prints last comes before the prompt.
 */
static int
shell_job_kill_cmd(int argc, char **argv)
{
    struct shell_job *job;
    uint64_t tid, end;

    if (argc != 2 || cmdline_parse_u64(argv[1], &tid) != 0
        || tid > UINT32_MAX) {
        kprintf("usage: kill TID (a background command's thread, see "
                "jobs)\n");
        return SHELL_ERR_REPORTED;
    }

    if (shell_job_self() != NULL) {
        kprintf("kill: a background command cannot kill\n");
        return SHELL_ERR_REPORTED;
    }

    job = shell_job_find((unsigned int)tid);

    if (job == NULL) {
        kprintf("kill: thread %llu is not a background command (see "
                "jobs)\n", (unsigned long long)tid);
        return SHELL_ERR_REPORTED;
    }

    __atomic_store_n(&job->killed, true, __ATOMIC_RELEASE);
    end = clock_get_time() + clock_ticks_from_ms(SHELL_JOB_KILL_WAIT_MS);

    while (!shell_job_done(job) && clock_get_time() < end) {
        thread_msleep(SHELL_JOB_KILL_NAP_MS);
    }

    if (!shell_job_done(job)) {
        kprintf("kill: thread %u has not stopped yet (it stops where it "
                "would for Ctrl-C)\n", job->tid);
        return 0;
    }

    shell_job_finish(job);
    return 0;
}

SHELL_COMMAND(kill, "kill", "TID",
              "stop a background command, as Ctrl-C stops one", shell_job_kill_cmd);
