/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the workload commands (kern/workload.c), run through the
 * shell as a user types them: the argument checks of every command (too
 * many, missing, not a number, out of range, suffixes), and the runs
 * that need no second thread (spin, branchy, memwalk, sleep, xcall on
 * two fake CPUs); yield cannot create its helper on the host, which
 * shows its error path.  The thread the commands run in and the xcalls
 * are stand-ins defined here: the shared fakes of both bring the perfmon
 * core with them.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "arch/x86/cpu.h"
#include "fakes/fake_kmem.h"
#include "fakes/fake_smp.h"
#include "kern/error.h"
#include "kern/shell.h"
#include "kern/thread.h"
#include "kern/xcall.h"

const char *fake_console_output(void);
void fake_console_reset(void);

/* xcalls that ran, each on the CPU asked, at once. */
static unsigned int nr_xcalls;

struct thread *
thread_self(void)
{
    return NULL;
}

unsigned int
thread_cpu(const struct thread *thread)
{
    (void)thread;
    return cpu_id();
}

int
xcall_call(xcall_fn_t fn, void *arg, unsigned int cpu)
{
    unsigned int self = cpu_id();

    if (cpu >= cpu_count()) {
        return -EINVAL;
    }

    fake_cpu_set_id(cpu);
    fn(arg);
    fake_cpu_set_id(self);
    nr_xcalls++;
    return 0;
}

static int
setup(void **state)
{
    (void)state;
    fake_cpu_reset(1);
    fake_kmem_reset();
    fake_console_reset();
    nr_xcalls = 0;
    return 0;
}

/* Run line; its result, and its output must contain want. */
static void
run(const char *line, int result, const char *want)
{
    fake_console_reset();
    assert_int_equal(shell_exec(line), result);

    if (strstr(fake_console_output(), want) == NULL) {
        fail_msg("'%s' printed:\n%s\nnot: %s", line, fake_console_output(),
                 want);
    }
}

static void
test_arguments(void **state)
{
    (void)state;
    run("spin", SHELL_ERR_REPORTED, "spin: missing N");
    run("spin 1 2", SHELL_ERR_REPORTED, "spin: too many arguments");
    run("spin 0", SHELL_ERR_REPORTED, "spin: N must be a number from 1 to");
    run("spin x", SHELL_ERR_REPORTED, "not 'x'");
    run("spin 99999999999999999999", SHELL_ERR_REPORTED, "usage: spin N");
    run("branchy -1", SHELL_ERR_REPORTED, "usage: branchy N");
    run("memwalk 4K", SHELL_ERR_REPORTED, "memwalk: missing STRIDE");
    run("memwalk 4K 0", SHELL_ERR_REPORTED, "(K, M suffixes allowed)");
    run("memwalk 4K 64 0", SHELL_ERR_REPORTED, "PASSES must be");
    run("memwalk 1 2 3 4", SHELL_ERR_REPORTED, "too many arguments");
    run("yield 0", SHELL_ERR_REPORTED, "usage: yield N");
    run("sleep", SHELL_ERR_REPORTED, "sleep: missing MS");
    run("hop 10", SHELL_ERR_REPORTED, "hop: needs at least 2 CPUs");
    run("xcall 10", SHELL_ERR_REPORTED, "xcall: needs at least 2 CPUs");
}

static void
test_runs(void **state)
{
    (void)state;
    run("spin 1000", 0, "spin: 1,000 iterations of 4 instructions");
    run("branchy 1000", 0, "branchy: 1,000 random branches");
    run("memwalk 16K 64 2", 0, "memwalk: ");
    assert_int_equal(fake_kmem_live(), 0);
    run("memwalk 1G 4M 1", 0, "SIZE capped at");
    assert_int_equal(fake_kmem_live(), 0);
    run("sleep 25", 0, "sleep: asked 25 ms");
    run("yield 5", SHELL_ERR_REPORTED,
        "yield: cannot create the helper thread: out of memory");
}

static void
test_xcall(void **state)
{
    (void)state;
    fake_cpu_reset(2);
    run("xcall 4", 0, "xcall: 4 calls");
    assert_int_equal(nr_xcalls, 4);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_arguments, setup),
        cmocka_unit_test_setup(test_runs, setup),
        cmocka_unit_test_setup(test_xcall, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
