/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of a thread's counts in the perfmon core
 * (kern/perfmon/perfmon_td.c): a count kept as an offset to the CPU's
 * value while loaded, times that follow the thread's clock.  Threads
 * sharing events and not, migrating over CPUs at random, their events
 * enabled and disabled, multiplexed against each other and against CPU
 * events, have the counts and times the snapshot model gives: what
 * happened on a CPU while the thread ran there and its slot held a
 * counter, and the time it ran (enabled) and ran holding one (running),
 * exactly, whatever the device's read method.  And a switch between two
 * threads keeping a counter gives an overflow that lands in its read to
 * the thread switched out.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/cpu.h"
#include "fakes/fake_smp.h"
#include "fdev.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_cpu.h"

#define NR_THREADS  3
#define NR_EVS      4                   /* per thread, at most */
#define NR_STEPS    4000

static const uint64_t raws[] = {
    RAW_CYCLES, RAW_INSNS, RAW_BRANCH, RAW_MISS,
};

/* A thread event and what the snapshot model says it counted. */
struct model_ev {
    struct perfmon_event ev;
    struct thread *thread;
    uint64_t raw;
    bool enabled;
    uint64_t value;
    uint64_t time_enabled;
    uint64_t time_running;
};

static struct model_ev evs[NR_THREADS][NR_EVS];
static unsigned int nr_evs[NR_THREADS];
static struct thread *threads[NR_THREADS];
static uint64_t rand_state;

static uint64_t
test_rand(uint64_t bound)
{
    rand_state = rand_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (rand_state >> 11) % bound;
}

/* Whether ev's slot holds a counter on cpu now. */
static bool
model_running(const struct model_ev *m, unsigned int cpu)
{
    return perfmon_cpu_active_slots(cpu) & perfmon_slot_bit(m->ev.slot);
}

/* Time passes: the threads running count it, as their slots run. */
static void
model_advance(uint64_t dt)
{
    for (unsigned int cpu = 1; cpu < NR_CPUS; cpu++) {
        struct thread *t = fake_thread_current(cpu);

        for (unsigned int i = 0; i < NR_THREADS; i++) {
            if (threads[i] != t) {
                continue;
            }

            for (unsigned int e = 0; e < nr_evs[i]; e++) {
                struct model_ev *m = &evs[i][e];

                if (m->enabled) {
                    m->time_enabled += dt;
                    m->time_running += model_running(m, cpu) ? dt : 0;
                }
            }
        }
    }

    fake_cpu_advance_tsc(dt);
}

/* n events of raw happen on cpu. */
static void
model_happen(struct fdev *fd, unsigned int cpu, uint64_t raw, uint64_t n)
{
    struct thread *t = fake_thread_current(cpu);

    for (unsigned int i = 0; i < NR_THREADS; i++) {
        for (unsigned int e = 0; e < nr_evs[i] && threads[i] == t; e++) {
            struct model_ev *m = &evs[i][e];

            if (m->enabled && m->raw == raw && model_running(m, cpu)) {
                m->value += n;
            }
        }
    }

    fdev_count(fd, cpu, raw, n);
}

static void
model_check(struct model_ev *m)
{
    uint64_t enabled, running, value;

    value = perfmon_event_read_times(&m->ev, &enabled, &running);
    assert_int_equal(value, m->value);
    assert_int_equal(enabled, m->time_enabled);
    assert_int_equal(running, m->time_running);
}

/* Thread i runs on cpu, or the idle thread when i is NR_THREADS. */
static void
model_switch(unsigned int cpu, unsigned int i)
{
    struct thread *t = (i < NR_THREADS) ? threads[i] : NULL;

    if (t != NULL && t == fake_thread_current(cpu)) {
        return;
    }

    if (t != NULL) {
        for (unsigned int c = 1; c < NR_CPUS; c++) {
            if (fake_thread_current(c) == t) {
                fake_thread_switch(c, NULL);
            }
        }

        fake_thread_migrate(t, cpu);
    }

    fake_thread_switch(cpu, t);
}

static void
model_run(struct fdev *fd)
{
    struct perfmon_event cpu_ev;
    unsigned int cpu_ev_cpu = 0;

    /* At 1 GHz, a TSC cycle is the nanosecond the times are read in. */
    fake_cpu_set_tsc_freq(1000000000);

    /* Two threads share their events, the third has more than fit. */
    static const unsigned int masks[NR_THREADS] = { 0x3, 0x3, 0xd };

    for (unsigned int i = 0; i < NR_THREADS; i++) {
        threads[i] = fake_thread_create("t");
        nr_evs[i] = 0;

        for (unsigned int r = 0; r < ARRAY_SIZE(raws); r++) {
            struct model_ev *m = &evs[i][nr_evs[i]];

            if (!(masks[i] & (1U << r))) {
                continue;
            }

            memset(m, 0, sizeof(*m));
            m->thread = threads[i];
            m->raw = raws[r];
            m->enabled = true;
            init_ok(&m->ev, raws[r], PERFMON_EF_KERN | PERFMON_EF_RAW);
            assert_int_equal(perfmon_event_attach(&m->ev, threads[i]), 0);
            nr_evs[i]++;
        }
    }

    for (unsigned int step = 0; step < NR_STEPS; step++) {
        unsigned int cpu = 1 + (unsigned int)test_rand(NR_CPUS - 1);
        unsigned int i = (unsigned int)test_rand(NR_THREADS);
        struct model_ev *m = &evs[i][test_rand(nr_evs[i])];
        struct fake_ctx ctx;

        switch (test_rand(10)) {
        case 0:
        case 1:
        case 2:
            model_switch(cpu, (unsigned int)test_rand(NR_THREADS + 1));
            break;
        case 3:
        case 4:
            model_happen(fd, cpu, raws[test_rand(ARRAY_SIZE(raws))],
                         1 + test_rand(200));
            break;
        case 5:
            model_advance(1 + test_rand(5000));
            break;
        case 6:
            assert_int_equal(m->enabled ? perfmon_event_disable(&m->ev)
                                        : perfmon_event_enable(&m->ev), 0);
            m->enabled = !m->enabled;
            break;
        case 7:
            /* A turn on the CPU. */
            fake_ctx_enter(&ctx, cpu);

            for (unsigned int t = 0; t < PERFMON_MUX_MS_DEFAULT; t++) {
                perfmon_tick(cpu);
            }

            fake_ctx_exit(&ctx);
            break;
        case 8:
            /* A CPU event competes for the counters, or stops. */
            if (cpu_ev_cpu != 0) {
                assert_int_equal(perfmon_event_detach(&cpu_ev), 0);
                cpu_ev_cpu = 0;
            } else {
                init_ok(&cpu_ev, raws[test_rand(ARRAY_SIZE(raws))],
                        PERFMON_EF_KERN | PERFMON_EF_RAW);
                assert_int_equal(perfmon_event_attach_cpu(&cpu_ev, cpu), 0);
                cpu_ev_cpu = cpu;
            }

            break;
        default:
            fdev_nmi(fd, cpu);
            model_check(m);
            break;
        }
    }

    for (unsigned int i = 0; i < NR_THREADS; i++) {
        for (unsigned int e = 0; e < nr_evs[i]; e++) {
            model_check(&evs[i][e]);
            assert_int_equal(perfmon_event_detach(&evs[i][e].ev), 0);
        }
    }

    if (cpu_ev_cpu != 0) {
        assert_int_equal(perfmon_event_detach(&cpu_ev), 0);
    }

    for (unsigned int cpu = 1; cpu < NR_CPUS; cpu++) {
        fake_thread_switch(cpu, NULL);
    }

    fdev_assert_idle(fd);
}

/* The random sequence from seed, the device reading its counters by how. */
static void
model_run_read(unsigned int how, uint64_t seed)
{
    struct fdev *fd = fdev_init(0, 20, 2, true);

    fd->read_how = how;
    assert_int_equal(perfmon_register(&fd->dev), 0);
    rand_state = seed;
    model_run(fd);
}

static void
test_random_op(void **state)
{
    (void)state;
    model_run_read(PERFMON_READ_OP, 1);
}

static void
test_random_rdpmc(void **state)
{
    (void)state;
    model_run_read(PERFMON_READ_RDPMC, 2);
}

static void
test_random_mem(void **state)
{
    (void)state;
    model_run_read(PERFMON_READ_MEM, 3);
}

/*
 * Two threads count the same event: the switch between them keeps the
 * counter and reads it once.  The counter wraps as it is read and the
 * overflow interrupt lands there: the wrap is the outgoing thread's.
 */
static void
test_kept_switch_overflow(void **state)
{
    struct fdev *fd = fdev_init(0, 16, 2, true);
    struct perfmon_event a, b;
    struct thread *ta = fake_thread_create("a");
    struct thread *tb = fake_thread_create("b");

    (void)state;
    fd->read_how = PERFMON_READ_RDPMC;
    assert_int_equal(perfmon_register(&fd->dev), 0);
    init_ok(&a, RAW_CYCLES, PERFMON_EF_KERN | PERFMON_EF_RAW);
    init_ok(&b, RAW_CYCLES, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_attach(&a, ta), 0);
    assert_int_equal(perfmon_event_attach(&b, tb), 0);
    fake_thread_migrate(ta, 1);
    fake_thread_migrate(tb, 1);
    fake_thread_switch(1, ta);
    fdev_count(fd, 1, RAW_CYCLES, 1000);
    fake_thread_switch(1, tb);
    fdev_count(fd, 1, RAW_CYCLES, 7);
    fake_thread_switch(1, ta);
    fdev_count(fd, 1, RAW_CYCLES, 400);

    /*
     * 65536 + 200 more just after the switch reads: the counter wraps
     * and goes past the value read, which only the overflow tells.
     */
    fdev_script_nmi(fd, FDEV_STEP_READ, 1, -1, 65536 + 200);
    fake_thread_switch(1, tb);
    fdev_script_done(fd);
    fdev_count(fd, 1, RAW_CYCLES, 3);
    fake_thread_switch(1, NULL);
    assert_int_equal(perfmon_event_read(&a), 1000 + 400 + 65536 + 200);
    assert_int_equal(perfmon_event_read(&b), 7 + 3);
    assert_int_equal(perfmon_event_detach(&a), 0);
    assert_int_equal(perfmon_event_detach(&b), 0);
    fdev_assert_idle(fd);
}

/*
 * A running thread's only event is disabled and enabled again: its
 * times stop and go on from the enable, the thread's clock started then.
 */
static void
test_enable_while_running(void **state)
{
    struct fdev *fd = fdev_add(0, 48, 2, true);
    struct thread *t = fake_thread_create("t");
    struct perfmon_counts counts;
    struct perfmon_event ev;
    uint64_t enabled, running;

    (void)state;
    fake_cpu_set_tsc_freq(1000000000);
    init_ok(&ev, RAW_CYCLES, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_attach(&ev, t), 0);
    fake_thread_migrate(t, 1);
    fake_thread_switch(1, t);
    fake_cpu_advance_tsc(1000);
    fdev_count(fd, 1, RAW_CYCLES, 5);
    assert_int_equal(perfmon_event_disable(&ev), 0);
    fake_cpu_advance_tsc(50000);
    fdev_count(fd, 1, RAW_CYCLES, 7);
    assert_int_equal(perfmon_event_enable(&ev), 0);
    fake_cpu_advance_tsc(300);
    fdev_count(fd, 1, RAW_CYCLES, 11);
    assert_int_equal(perfmon_event_read_times(&ev, &enabled, &running),
                     5 + 11);
    assert_int_equal(enabled, 1000 + 300);
    assert_int_equal(running, 1000 + 300);
    fake_thread_switch(1, NULL);
    fake_cpu_advance_tsc(20);
    assert_int_equal(perfmon_event_read_times(&ev, &enabled, &running),
                     5 + 11);
    assert_int_equal(enabled, 1000 + 300);
    assert_int_equal(running, 1000 + 300);

    /* The thread's own times, which its turns compare, are the same. */
    perfmon_cpu_td_pmc_counts(&t->perfmon_td, ev.slot, 0, 0, &counts);
    assert_int_equal(counts.value, 5 + 11);
    assert_int_equal(counts.enabled, 1000 + 300);
    assert_int_equal(counts.running, 1000 + 300);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    fdev_assert_idle(fd);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_random_op, setup),
        cmocka_unit_test_setup(test_random_rdpmc, setup),
        cmocka_unit_test_setup(test_random_mem, setup),
        cmocka_unit_test_setup(test_kept_switch_overflow, setup),
        cmocka_unit_test_setup(test_enable_while_running, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
