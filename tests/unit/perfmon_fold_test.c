/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the per-CPU counter record (kern/perfmon/perfmon_cpu.c)
 * and the device contract under it: the fold against the events counted
 * on random runs, at every width and read method; a start is not followed
 * by a read; a device's counters for an event.  The record's other tests
 * are in perfmon_test.c (run again by RDPMC as perfmon_rdpmc_test).
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <cmocka.h>

#include "arch/x86/cpu.h"
#include "fakes/fake_smp.h"
#include "fdev.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_control.h"

/*
 * The fold, inline or not, on random runs: counts of random sizes (under
 * a period between two folds: a second wrap before the overflow NMI would
 * be lost on hardware too), overflow NMIs taken
 * at once, late, or landing inside a read after the counter moved on
 * (the pending protocol), context switches folding a thread's count,
 * and reads.  Every read agrees with the events counted, at each width,
 * by each read method.
 */
static uint64_t fold_rand_state;

/* The raw value of the one counter of fd running on cpu. */
static uint64_t
fdev_raw(const struct fdev *fd, unsigned int cpu)
{
    for (unsigned int i = 0; i < fd->nr_hw; i++) {
        if (fd->counters[cpu][i].running) {
            return fd->counters[cpu][i].value & fdev_mask(fd);
        }
    }

    fail();
    return 0;
}

static uint64_t
fold_rand(uint64_t bound)
{
    fold_rand_state = fold_rand_state * 6364136223846793005ULL
                      + 1442695040888963407ULL;
    return (bound == 0) ? 0 : (fold_rand_state >> 11) % bound;
}

static void
check_fold_random(unsigned int width, unsigned int read_how)
{
    struct perfmon_event cpu_ev, thr_ev;
    uint64_t total = 0, thr_total = 0, period, step, late;
    struct thread *t;
    struct fdev *fd;

    setup(NULL);
    t = fake_thread_create("t");
    fd = fdev_add(0, width, 4, true);
    fd->read_how = read_how;
    period = fdev_mask(fd);
    fold_rand_state = width * 31 + read_how;
    init_ok(&cpu_ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&thr_ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&cpu_ev, 0), 0);
    assert_int_equal(perfmon_event_attach(&thr_ev, self), 0);

    for (unsigned int i = 0; i < 3000; i++) {
        step = (fold_rand(4) == 0) ? fold_rand(period)
                                   : fold_rand(period >> 6);
        late = 0;
        fdev_count(fd, 0, RAW_CYCLES, step);
        total += step;
        thr_total += step;

        switch (fold_rand(7)) {
        case 0:
            /*
             * The NMI lands in the next read, the counter moved on (a read
             * in memory has no hook to land in: the counter moves on).
             */
            late = fold_rand(period - step);

            if (read_how == PERFMON_READ_MEM) {
                fdev_count(fd, 0, RAW_CYCLES, late);
            } else {
                fd->nmi_advance = late;
                fd->nmi_in_read = true;
            }

            total += late;
            thr_total += late;
            (void)perfmon_event_read(&cpu_ev);
            break;
        case 1:
            /* A switch away and back folds the thread's count. */
            fake_thread_switch(0, t);
            fake_thread_switch(0, self);
            break;
        case 2:
            /*
             * The same, the counter moving on after the switch's read and
             * its NMI landing there: the events after the read are the
             * thread's only when they wrapped the counter, the NMI then
             * making the fold read again (below).
             */
            if (read_how != PERFMON_READ_MEM) {
                late = fold_rand(period - step);
                fd->nmi_advance = late;
                fd->nmi_in_read = true;
                total += late;
            }

            fake_thread_switch(0, t);
            fake_thread_switch(0, self);
            break;
        case 3:
            /*
             * A wrap the counter is already past its last value for (the
             * NMI late), that NMI landing in the switch's fold: the fold
             * reads again, adding the period for the thread switched out.
             */
            if (read_how != PERFMON_READ_MEM) {
                fake_thread_switch(0, t);
                fake_thread_switch(0, self);

                if (fd->status[0] != 0) {
                    assert_true(fdev_nmi(fd, 0));
                }

                late = period + 1 + fold_rand(period - fdev_raw(fd, 0));
                fdev_count(fd, 0, RAW_CYCLES, late);
                total += late;
                thr_total += late;
                late = 0;
                fd->nmi_in_read = true;
                fake_thread_switch(0, t);
                fake_thread_switch(0, self);
            }
            break;
        default:
            break;
        }

        if (fd->status[0] != 0) {
            assert_true(fdev_nmi(fd, 0));
        }

        fd->nmi_in_read = false;
        assert_int_equal(perfmon_event_read(&cpu_ev), total);

        if (perfmon_event_read(&thr_ev) == thr_total + late) {
            thr_total += late;
        }

        assert_int_equal(perfmon_event_read(&thr_ev), thr_total);
    }

    assert_int_equal(perfmon_event_detach(&thr_ev), 0);
    assert_int_equal(perfmon_event_detach(&cpu_ev), 0);
}

static void
test_fold_random(void **state)
{
    static const unsigned int widths[] = { 16, 17, 24, 31, 32, 40, 48, 63, 64 };
    static const unsigned int hows[] = {
        PERFMON_READ_OP, PERFMON_READ_RDPMC, PERFMON_READ_MEM,
    };

    (void)state;

    for (unsigned int w = 0; w < ARRAY_SIZE(widths); w++) {
        for (unsigned int h = 0; h < ARRAY_SIZE(hows); h++) {
            check_fold_random(widths[w], hows[h]);
        }
    }
}

/* A start leaves the counter at 0: the core reads nothing after it. */
static void
test_start_reads_nothing(void **state)
{
    struct perfmon_event ev;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    init_ok(&ev, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 1), 0);
    assert_int_equal(fd->nr_start, 1);
    assert_int_equal(fd->nr_read, 0);
    fdev_count(fd, 1, RAW_INSNS, 42);
    assert_int_equal(perfmon_event_read(&ev), 42);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * A slot whose counter the scheduler took on this CPU reads as it was
 * when the counter stopped: its record no longer reads the counter's
 * memory, which counts for the slot that got it (the local read tests
 * no sched_mask; the record says it).  By each read method.
 */
static void
test_stopped_reads_stored(void **state)
{
    static const unsigned int hows[] = {
        PERFMON_READ_OP, PERFMON_READ_RDPMC, PERFMON_READ_MEM,
    };

    (void)state;

    for (unsigned int h = 0; h < ARRAY_SIZE(hows); h++) {
        struct perfmon_event a, b;
        uint64_t ca, cb, first = 0;
        struct fake_ctx ctx;
        struct fdev *fd;

        setup(NULL);
        fd = fdev_add(0, 48, 1, true);
        fd->read_how = hows[h];
        init_ok(&a, RAW_CYCLES, PERFMON_EF_KERN | PERFMON_EF_RAW);
        init_ok(&b, RAW_INSNS, PERFMON_EF_KERN | PERFMON_EF_RAW);
        assert_int_equal(perfmon_event_attach_cpu(&a, 0), 0);
        assert_int_equal(perfmon_event_attach_cpu(&b, 0), 0);

        /* One counter for two: whichever holds it counts, then the other. */
        for (unsigned int turn = 0; turn < 4; turn++) {
            fdev_count(fd, 0, RAW_CYCLES, 100 + turn);
            fdev_count(fd, 0, RAW_INSNS, 1000 + turn);
            ca = perfmon_event_read(&a);
            cb = perfmon_event_read(&b);
            fake_cpu_advance_tsc(30000);
            fake_ctx_enter(&ctx, 0);
            perfmon_rotate_local();
            fake_ctx_exit(&ctx);

            /*
             * The one that lost the counter: the other's events go on it,
             * past the value it stopped at, by less than a fold allows.
             */
            fdev_count(fd, 0, RAW_CYCLES, 100000);
            fdev_count(fd, 0, RAW_INSNS, 100000);

            if (fd->counters[0][0].raw_event == RAW_INSNS) {
                assert_int_equal(perfmon_event_read(&a), ca);
                first |= 1;
            } else {
                assert_int_equal(perfmon_event_read(&b), cb);
                first |= 2;
            }
        }

        /* Each lost the counter at some turn. */
        assert_int_equal(first, 3);
        assert_int_equal(perfmon_event_detach(&b), 0);
        assert_int_equal(perfmon_event_detach(&a), 0);
    }
}

/* The counters a device can count an event on, as its counters op says. */
static void
test_dev_counters(void **state)
{
    uint64_t counters = 0;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 3, true);
    fd->fixed_cycles = true;
    assert_int_equal(perfmon_dev_counters(&fd->dev, RAW_CYCLES,
                                          PERFMON_EF_KERN, &counters), 0);
    assert_int_equal(counters, 0x7);
    assert_int_equal(perfmon_dev_counters(&fd->dev, RAW_INSNS,
                                          PERFMON_EF_USER, &counters), 0);
    assert_int_equal(counters, 0x3);
    assert_int_equal(perfmon_dev_counters(&fd->dev, RAW_ONLY0,
                                          PERFMON_EF_KERN, &counters), 0);
    assert_int_equal(counters, 0x1);
    assert_int_equal(perfmon_dev_counters(&fd->dev, RAW_UNCOUNTABLE,
                                          PERFMON_EF_KERN, &counters),
                     -ENOENT);
    assert_int_equal(perfmon_dev_counters(&fd->dev, RAW_REFUSED,
                                          PERFMON_EF_KERN, &counters),
                     -EINVAL);
    assert_int_equal(perfmon_dev_counters(NULL, RAW_CYCLES, PERFMON_EF_KERN,
                                          &counters), -EINVAL);
    assert_int_equal(perfmon_dev_counters(&fd->dev, RAW_CYCLES, 0,
                                          &counters), -EINVAL);
    assert_int_equal(perfmon_dev_counters(&fd->dev, RAW_CYCLES,
                                          PERFMON_EF_KERN | PERFMON_EF_PINNED,
                                          &counters), -EINVAL);
    assert_int_equal(perfmon_dev_counters(&fd->dev, RAW_CYCLES,
                                          PERFMON_EF_KERN, NULL), -EINVAL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_fold_random, setup),
        cmocka_unit_test_setup(test_start_reads_nothing, setup),
        cmocka_unit_test_setup(test_stopped_reads_stored, setup),
        cmocka_unit_test_setup(test_dev_counters, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
