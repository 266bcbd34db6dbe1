/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the step PMU (drivers/pmu/step.c), against the perfmon
 * core stand-in of the PMU driver tests (fakes/pmu_perfmon.c) and a fake
 * of arch/x86/step.c's step count: each CPU's count of stepped
 * instructions moves only when the test runs a "loop" of n of them, and
 * when it reaches a deadline the driver asked for, the fake calls the
 * deadline function as the #DB handler would, at that very instruction.
 * step.c is #included to reach its setup function and its state.
 *
 * They cover exact counts over known loops, across wraps at the narrowest
 * width, and the start contract: a counter started after its previous
 * user left an overflow status bit counts exactly, the old overflow not
 * reported for it.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "drivers/pmu/step.c"
#include "fakes/fake_log.h"
#include "fakes/fake_smp.h"
#include "fakes/pmu_perfmon.h"

/* ---- the fake step count (arch/x86/step.c) ------------------------------ */

/*
 * A CPU's step counts (outside handlers, and with NMI handlers: the same
 * here, no NMI is stepped), its deadlines and its users.
 */
static struct {
    uint64_t count;
    uint64_t deadline[2];
    unsigned int users[2];
} fake_step_cpus[CPU_MAX];

static step_deadline_fn_t fake_step_fn;

int
step_enable(step_deadline_fn_t fn)
{
    if (fake_step_fn != NULL) {
        return -EEXIST;
    }

    fake_step_fn = fn;
    return 0;
}

bool
step_available(void)
{
    return fake_step_fn != NULL;
}

void
step_cpu_start(bool nmi)
{
    fake_step_cpus[cpu_id()].users[nmi]++;
}

void
step_cpu_stop(bool nmi)
{
    assert_true(fake_step_cpus[cpu_id()].users[nmi] > 0);
    fake_step_cpus[cpu_id()].users[nmi]--;
}

uint64_t
step_cpu_read(bool nmi)
{
    (void)nmi;
    return fake_step_cpus[cpu_id()].count;
}

void
step_cpu_set_deadline(bool nmi, uint64_t count)
{
    fake_step_cpus[cpu_id()].deadline[nmi] = count;
}

/*
 * n instructions stepped on this CPU: each deadline reached on the way
 * calls the deadline function, interrupts disabled, at its instruction.
 */
static void
fake_step_run(uint64_t n)
{
    typeof(fake_step_cpus[0]) *fc = &fake_step_cpus[cpu_id()];

    while (n > 0) {
        uint64_t next = n;

        for (unsigned int k = 0; k < 2; k++) {
            uint64_t d = fc->deadline[k];

            if (d != 0 && d > fc->count && d - fc->count < next) {
                next = d - fc->count;
            }
        }

        fc->count += next;
        n -= next;

        if ((fc->deadline[0] != 0 && fc->count >= fc->deadline[0])
            || (fc->deadline[1] != 0 && fc->count >= fc->deadline[1])) {
            fake_cpu_set_intr(false);
            fake_step_fn(NULL);
            fake_cpu_set_intr(true);
        }
    }
}

/* ---- setup -------------------------------------------------------------- */

static int
setup(void **state)
{
    (void)state;
    fake_cpu_reset(1);
    fake_perfmon_reset();
    fake_log_reset();
    memset(fake_step_cpus, 0, sizeof(fake_step_cpus));
    fake_step_fn = NULL;
    memset(steppmu_cpus, 0, sizeof(steppmu_cpus));
    steppmu_used = 0;
    steppmu_width = STEPPMU_WIDTH_DEFAULT;
    steppmu_device.width = 0;
    return 0;
}

/* Boot with the given command line: parse it, run the driver's setup. */
static void
boot(const char *cmdline)
{
    assert_int_equal(cmdline_parse(cmdline), 0);
    assert_int_equal(steppmu_setup(), 0);
    assert_ptr_equal(fake_perfmon_dev(), &steppmu_device);
}

/* A counter of instructions (the generic event) on this CPU. */
static int
open_insns(unsigned int *hw_idp)
{
    int h = fake_perfmon_open(PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN,
                              hw_idp);

    assert_true(h >= 0);
    return h;
}

/* ---- counting ----------------------------------------------------------- */

/* A loop of known length counts exactly, across wraps at width 16. */
static void
test_loop_exact(void **state)
{
    int h;

    (void)state;
    boot("perfmon.step=on steppmu.width=16");
    assert_int_equal(steppmu_device.width, 16);
    h = open_insns(NULL);
    fake_step_run(1000);
    assert_int_equal(fake_perfmon_value(h), 1000);
    fake_step_run(5 * 65536 + 123);
    assert_int_equal(fake_perfmon_value(h), 1000 + 5 * 65536 + 123);
    assert_int_equal(fake_perfmon_nr_ovf_folds(), 5);
    assert_int_equal(fake_perfmon_close(h), 1000 + 5 * 65536 + 123);
}

/*
 * The start contract: the counter's previous user left its overflow
 * status bit set (a deadline whose report the core never took), then the
 * counter is started for a new user.  Another counter's wrap reports the
 * overflows: the new user's count over a known loop is exact, without the
 * old run's overflow (a whole period, 2^16, added).
 */
static void
test_restart_drops_stale_status(void **state)
{
    unsigned int hw, hw2, hw_other;
    int h, h2, other;

    (void)state;
    boot("perfmon.step=on steppmu.width=16");
    h = open_insns(&hw);
    fake_step_run(100);
    __atomic_fetch_or(&steppmu_cpus[0].status, 1ULL << hw, __ATOMIC_RELAXED);
    fake_perfmon_close(h);

    h2 = open_insns(&hw2);
    assert_int_equal(hw2, hw);
    other = open_insns(&hw_other);
    assert_true(hw_other != hw);
    fake_perfmon_write(other, 65536 - 500);

    /* The other counter wraps at the 500th instruction of the loop. */
    fake_step_run(3000);
    assert_int_equal(fake_perfmon_nr_intrs(), 1);
    assert_int_equal(fake_perfmon_value(h2), 3000);
    assert_int_equal(fake_perfmon_value(other), 3000);
    assert_int_equal(fake_perfmon_last_mask(), 1ULL << hw_other);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_loop_exact, setup),
        cmocka_unit_test_setup(test_restart_drops_stale_status, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
