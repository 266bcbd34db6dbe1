/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the software PMU (drivers/pmu/soft.c), against the perfmon
 * core stand-in of the PMU driver tests (fakes/pmu_perfmon.c), a fake
 * local APIC self-NMI and NMI path (fakes/nmi.c, the NMI delivered from
 * the driver's own wait loop through cpu_pause()) and the real swevent
 * and command-line modules.  soft.c is #included to reach its setup
 * function, which registers the device as the boot would, and its state,
 * which each test resets.
 *
 * They cover the boot options (widths up to 64, both overflow modes), the
 * poll interval of the clock counters in nmi mode and the widths where
 * the clock is refused, the split of an increment at each wrap with its
 * self-NMI taken before the rest is added (an add ending exactly at the
 * mask raises nothing), counting inside an NMI (no self-NMI, no wait),
 * a lost NMI and the stale status it leaves to a restarted counter,
 * stopped counters, and the clock's deadline.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "drivers/pmu/soft.c"
#include "fakes/fake_log.h"
#include "fakes/fake_nmi.h"
#include "fakes/fake_smp.h"
#include "fakes/pmu_perfmon.h"

void fake_syscnt_reset(void);

#define MODE    (PERFMON_EF_KERN | PERFMON_EF_USER)
#define TSC_HZ  3000000000ULL

/* Put the driver, the swevent module and the fakes back in boot state. */
static int
setup(void **state)
{
    (void)state;
    fake_cpu_reset(2);
    fake_cpu_set_tsc_freq(TSC_HZ);
    fake_cpu_set_pause_hook(fake_nmi_deliver);
    fake_nmi_reset();
    fake_perfmon_reset();
    fake_syscnt_reset();
    fake_log_reset();
    memset(swevent_nr_active, 0, sizeof(swevent_nr_active));
    swevent_set_handler(NULL);
    memset(softpmu_cpus, 0, sizeof(softpmu_cpus));
    softpmu_used = 0;
    softpmu_nr_counters = SOFTPMU_NR_PMCS;
    softpmu_width = SOFTPMU_WIDTH_DEFAULT;
    softpmu_nmi = true;
    softpmu_device = (struct perfmon_dev){
        .name = "soft", .ops = &softpmu_ops, .nr_pmcs = SOFTPMU_NR_PMCS,
    };
    return 0;
}

/* Boot with the given command line: parse it, run the driver's setup. */
static void
boot(const char *cmdline)
{
    assert_int_equal(cmdline_parse(cmdline), 0);
    assert_int_equal(softpmu_setup(), 0);
    assert_ptr_equal(fake_perfmon_dev(), &softpmu_device);
}

static uint64_t
lost_nmis(void)
{
    return syscnt_read(&softpmu_cpus[cpu_id()].nr_lost_nmis);
}

/* Milliseconds the TSC takes to wrap a clock counter of width bits. */
static uint64_t
clock_wrap_ms(unsigned int width)
{
    return (uint64_t)(((unsigned __int128)1 << width) * 1000 / TSC_HZ);
}

/* ---- options ------------------------------------------------------------ */

static void
test_default_options(void **state)
{
    (void)state;
    boot("");
    assert_int_equal(softpmu_device.width, SOFTPMU_WIDTH_DEFAULT);
    assert_true(softpmu_device.overflow_intr);
    assert_int_equal(fake_log_count(LOG_WARNING), 0);
}

/* Every width from the minimum to 64 is accepted, 64 included. */
static void
test_width_option_range(void **state)
{
    char line[64];

    (void)state;

    for (unsigned int width = SOFTPMU_WIDTH_MIN; width <= 64; width++) {
        setup(NULL);
        snprintf(line, sizeof(line), "softpmu.width=%u", width);
        boot(line);
        assert_int_equal(softpmu_device.width, width);
        assert_int_equal(fake_log_count(LOG_WARNING), 0);
    }

    setup(NULL);
    boot("softpmu.width=65");
    assert_int_equal(softpmu_device.width, SOFTPMU_WIDTH_DEFAULT);
    assert_int_equal(fake_log_count(LOG_WARNING), 1);
    setup(NULL);
    boot("softpmu.width=15 softpmu.overflow=sometimes");
    assert_int_equal(softpmu_device.width, SOFTPMU_WIDTH_DEFAULT);
    assert_int_equal(fake_log_count(LOG_WARNING), 2);
}

/* At width 64 nothing wraps: counts and the clock work as they are. */
static void
test_width64_counts(void **state)
{
    int ev, clk;

    (void)state;
    boot("softpmu.width=64");
    ev = fake_perfmon_open(PERFMON_EV_TEST, MODE, NULL);
    clk = fake_perfmon_open(PERFMON_EV_TASK_CLOCK, MODE, NULL);
    assert_true(ev >= 0 && clk >= 0);
    swevent_add(SWEVENT_TEST, UINT64_MAX / 2);
    fake_cpu_advance_tsc(12345);
    assert_int_equal(fake_perfmon_value(ev), UINT64_MAX / 2);
    assert_int_equal(fake_perfmon_value(clk), 12345);
    assert_int_equal(fake_nmi_nr_sent(), 0);
}

/*
 * In nmi mode the clock raises no NMI: its counters are polled, often
 * enough to see every wrap.  Without the poll a 32-bit clock counter
 * loses 2^32 cycles every wrap, about every 1.4 s at 3 GHz.
 */
static void
test_nmi_mode_polls_clock(void **state)
{
    (void)state;
    boot("softpmu.overflow=nmi");
    assert_true(softpmu_device.overflow_intr);
    assert_int_not_equal(softpmu_device.poll_ms, 0);
    assert_true(2 * softpmu_device.poll_ms < clock_wrap_ms(32));
}

/* In poll mode the core polls every counter: no interrupt, no NMI. */
static void
test_poll_mode(void **state)
{
    int ev;

    (void)state;
    boot("softpmu.overflow=poll softpmu.width=16");
    assert_false(softpmu_device.overflow_intr);
    assert_int_equal(softpmu_device.poll_ms, 0);
    ev = fake_perfmon_open(PERFMON_EV_TEST, MODE, NULL);
    swevent_add(SWEVENT_TEST, 0x10005);
    assert_int_equal(softpmu_read(&softpmu_device, 0), 0x10005);
    assert_int_equal(fake_nmi_nr_sent(), 0);
    fake_perfmon_close(ev);
}

/*
 * The clock is refused where polls could miss its wraps (the wrap takes
 * no more than two poll intervals), and accepted, with a poll interval
 * that sees every wrap, from 26 bits on at 3 GHz.
 */
static void
test_clock_refused_where_polls_miss_wraps(void **state)
{
    char line[64];

    (void)state;

    for (unsigned int width = SOFTPMU_WIDTH_MIN; width <= 64; width++) {
        int clk;

        setup(NULL);
        snprintf(line, sizeof(line), "softpmu.width=%u", width);
        boot(line);
        clk = fake_perfmon_open(PERFMON_EV_TASK_CLOCK, MODE, NULL);

        if (width < 26) {
            assert_int_equal(clk, -ENOENT);
            continue;
        }

        assert_true(clk >= 0);

        if (width < 64) {
            assert_true(2 * softpmu_device.poll_ms < clock_wrap_ms(width));
        }
    }
}

/* ---- nmi mode ----------------------------------------------------------- */

/* An add that ends exactly at the mask has not wrapped: no NMI. */
static void
test_add_ending_at_mask(void **state)
{
    int ev;

    (void)state;
    boot("softpmu.width=16");
    ev = fake_perfmon_open(PERFMON_EV_TEST, MODE, NULL);
    swevent_add(SWEVENT_TEST, 0xffff);
    assert_int_equal(fake_nmi_nr_sent(), 0);
    assert_int_equal(fake_perfmon_value(ev), 0xffff);
    swevent_add(SWEVENT_TEST, 1);
    assert_int_equal(fake_nmi_nr_sent(), 1);
    assert_int_equal(fake_perfmon_nr_intrs(), 1);
    assert_int_equal(fake_perfmon_value(ev), 0x10000);
    fake_perfmon_close(ev);
}

/*
 * An add of several periods: one wrap, one self-NMI at a time, each taken
 * (the core folds it) before the rest is added, so none is lost.
 */
static void
test_add_waits_for_each_nmi(void **state)
{
    uint64_t n = 3 * 0x10000ULL + 5;
    int ev;

    (void)state;
    boot("softpmu.width=16");
    ev = fake_perfmon_open(PERFMON_EV_TEST, MODE, NULL);
    swevent_add(SWEVENT_TEST, n);
    assert_int_equal(fake_nmi_nr_sent(), 3);
    assert_int_equal(fake_nmi_nr_delivered(), 3);
    assert_int_equal(fake_nmi_nr_pending(), 0);
    assert_int_equal(fake_nmi_nr_unclaimed(), 0);
    assert_int_equal(fake_perfmon_nr_intrs(), 3);
    assert_int_equal(lost_nmis(), 0);
    fake_nmi_deliver();
    assert_int_equal(fake_perfmon_value(ev), n);
    fake_perfmon_close(ev);
}

/*
 * Counting NMIs wraps a counter inside an NMI: the status bit is set for
 * the NMI handlers that run after the count (this driver's among them),
 * no self-NMI is sent (it would stay pending, then come unclaimed) and
 * the driver does not wait for one (it could not come: a stall, then a
 * lost NMI).
 */
static void
test_wrap_inside_nmi(void **state)
{
    int ev;

    (void)state;
    boot("softpmu.width=16");
    ev = fake_perfmon_open(PERFMON_EV_NMI, MODE, NULL);
    swevent_add(SWEVENT_NMI, 0xffff);

    cpu_self()->nmi_nesting++;
    swevent_add(SWEVENT_NMI, 1);
    assert_int_equal(fake_nmi_nr_sent(), 0);
    assert_int_equal(lost_nmis(), 0);
    assert_true(perfmon_overflow_nmi(&softpmu_device, NULL));
    cpu_self()->nmi_nesting--;

    assert_int_equal(fake_nmi_nr_sent_in_nmi(), 0);
    assert_int_equal(fake_nmi_nr_unclaimed(), 0);
    assert_int_equal(fake_perfmon_value(ev), 0x10000);
    fake_perfmon_close(ev);
}

/*
 * A self-NMI that never comes: the driver gives up waiting and counts a
 * lost NMI.  Its status bit stays behind; the next counter started on the
 * same hardware counter must not take it for a wrap of its own when the
 * late NMI finally arrives.
 */
static void
test_lost_nmi_then_restart(void **state)
{
    unsigned int hw, hw2;
    int ev;

    (void)state;
    boot("softpmu.width=16");
    fake_cpu_set_pause_hook(NULL);
    ev = fake_perfmon_open(PERFMON_EV_TEST, MODE, &hw);
    swevent_add(SWEVENT_TEST, 0x10000);
    assert_int_equal(lost_nmis(), 1);
    assert_int_equal(fake_nmi_nr_pending(), 1);
    fake_perfmon_close(ev);

    ev = fake_perfmon_open(PERFMON_EV_TEST, MODE, &hw2);
    assert_int_equal(hw2, hw);
    fake_nmi_deliver();
    assert_int_equal(fake_nmi_nr_unclaimed(), 1);
    assert_int_equal(fake_perfmon_value(ev), 0);
    fake_perfmon_close(ev);
}

/* A stopped counter neither counts nor raises NMIs. */
static void
test_stopped_counter_is_quiet(void **state)
{
    unsigned int hw_a, hw_b;
    int a, b;

    (void)state;
    boot("softpmu.width=16");
    a = fake_perfmon_open(PERFMON_EV_TEST, MODE, &hw_a);
    b = fake_perfmon_open(PERFMON_EV_TEST, MODE, &hw_b);
    swevent_add(SWEVENT_TEST, 0xfff0);
    fake_perfmon_close(a);

    swevent_add(SWEVENT_TEST, 0x20);
    assert_int_equal(fake_nmi_nr_sent(), 1);
    assert_int_equal(fake_perfmon_last_mask(), 1ULL << hw_b);
    assert_int_equal(softpmu_cpus[0].counters[hw_a].count, 0xfff0);
    assert_int_equal(softpmu_cpus[0].status, 0);
    assert_int_equal(fake_perfmon_value(b), 0x10010);
    fake_perfmon_close(b);
}

/* Counters are per CPU: events on one CPU are not seen on another. */
static void
test_per_cpu_counters(void **state)
{
    int ev;

    (void)state;
    boot("");
    ev = fake_perfmon_open(PERFMON_EV_CONTEXT_SWITCH, MODE, NULL);
    fake_cpu_set_id(1);
    swevent_add(SWEVENT_CONTEXT_SWITCH, 5);
    fake_cpu_set_id(0);
    swevent_add(SWEVENT_CONTEXT_SWITCH, 2);
    assert_int_equal(fake_perfmon_value(ev), 2);
    fake_perfmon_close(ev);
}

/* Every counter in use: -EAGAIN; an unknown raw event: -ENOENT. */
static void
test_alloc_limits(void **state)
{
    int evs[SOFTPMU_NR_PMCS];
    uint64_t raw;

    (void)state;
    boot("");

    for (unsigned int i = 0; i < SOFTPMU_NR_PMCS; i++) {
        evs[i] = fake_perfmon_open(PERFMON_EV_TEST, MODE, NULL);
        assert_true(evs[i] >= 0);
    }

    assert_int_equal(fake_perfmon_open(PERFMON_EV_TEST, MODE, NULL), -EAGAIN);
    assert_int_equal(fake_perfmon_open_raw(SWEVENT_NR, MODE, NULL), -ENOENT);
    assert_int_equal(fake_perfmon_open_raw(0, MODE, NULL), -ENOENT);
    assert_int_equal(softpmu_translate(&softpmu_device, &raw,
                                       PERFMON_EV_CYCLE), -ENOENT);

    for (unsigned int i = 0; i < SOFTPMU_NR_PMCS; i++) {
        fake_perfmon_close(evs[i]);
    }

    assert_int_equal(softpmu_used, 0);
}

/*
 * A clock counter armed to overflow (sampling) asks the clock for a
 * deadline at its wrap; the deadline's interrupt reports the wrap like
 * an NMI would, and a stop cancels the deadline.  Interrupts disabled
 * throughout, as the core calls the device (the fake clock asserts it).
 */
static void
test_clock_deadline(void **state)
{
    unsigned int hw;
    uint64_t start;
    int clk;

    (void)state;
    boot("");
    fake_cpu_set_intr(false);
    clk = fake_perfmon_open(PERFMON_EV_TASK_CLOCK, MODE, &hw);
    start = cpu_rdtsc();
    softpmu_write(&softpmu_device, hw, 0xffffffffULL - 999999);
    assert_int_equal(fake_clock_deadline(), start + 1000000);

    fake_cpu_advance_tsc(999999);
    fake_clock_deadline_fire();
    assert_int_equal(fake_perfmon_nr_intrs(), 0);
    fake_cpu_advance_tsc(1);
    fake_clock_deadline_fire();
    assert_int_equal(fake_perfmon_nr_intrs(), 1);
    assert_int_equal(fake_perfmon_last_mask(), 1ULL << hw);
    assert_int_equal(fake_clock_deadline(), 0);

    softpmu_write(&softpmu_device, hw, 0xffffffffULL - 5);
    assert_int_not_equal(fake_clock_deadline(), 0);
    fake_perfmon_close(clk);
    assert_int_equal(fake_clock_deadline(), 0);
    fake_cpu_set_intr(true);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_default_options, setup),
        cmocka_unit_test_setup(test_width_option_range, setup),
        cmocka_unit_test_setup(test_width64_counts, setup),
        cmocka_unit_test_setup(test_nmi_mode_polls_clock, setup),
        cmocka_unit_test_setup(test_poll_mode, setup),
        cmocka_unit_test_setup(test_clock_refused_where_polls_miss_wraps,
                               setup),
        cmocka_unit_test_setup(test_add_ending_at_mask, setup),
        cmocka_unit_test_setup(test_add_waits_for_each_nmi, setup),
        cmocka_unit_test_setup(test_wrap_inside_nmi, setup),
        cmocka_unit_test_setup(test_lost_nmi_then_restart, setup),
        cmocka_unit_test_setup(test_stopped_counter_is_quiet, setup),
        cmocka_unit_test_setup(test_per_cpu_counters, setup),
        cmocka_unit_test_setup(test_alloc_limits, setup),
        cmocka_unit_test_setup(test_clock_deadline, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
