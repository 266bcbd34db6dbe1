/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel tests of the interrupt-callback registry (suite perfmon):
 * callbacks registered and unregistered while NMIs of a test device of
 * their own land on every CPU.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/trap.h"
#include "kern/error.h"
#include "kern/ktest.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/thread.h"
#include "tests/kernel/ktest_util.h"

/* ---- interrupt callbacks under an NMI storm ----------------------------- */

/*
 * A device of the test's own, whose "overflow interrupt" is an NMI the
 * test sends to a CPU after flagging it: the NMIs go through
 * perfmon_overflow_intr() exactly as a PMU's do, on every CPU.
 */
#define PT_CB_ROUNDS        300
#define PT_CB_ALIVE         0xa11fe
#define PT_CB_POISON        0xdead

static uint64_t pt_nmi_flag[CPU_MAX];   /* atomic */

static int
pt_dev_translate(struct perfmon_dev *dev, uint64_t *raw_eventp,
                 unsigned int event_id)
{
    (void)dev;
    (void)raw_eventp;
    (void)event_id;
    return -ENOENT;
}

static int
pt_dev_counters(struct perfmon_dev *dev, uint64_t raw_event,
                unsigned int flags, uint64_t *countersp, uint64_t *preferp)
{
    (void)dev;
    (void)raw_event;
    (void)flags;
    (void)countersp;
    (void)preferp;
    return -ENOENT;
}

static int
pt_dev_alloc(struct perfmon_dev *dev, unsigned int *hw_idp, uint64_t raw_event,
             unsigned int flags)
{
    (void)dev;
    (void)hw_idp;
    (void)raw_event;
    (void)flags;
    return -ENOENT;
}

static void
pt_dev_free(struct perfmon_dev *dev, unsigned int hw_id)
{
    (void)dev;
    (void)hw_id;
}

static void
pt_dev_start(struct perfmon_dev *dev, unsigned int hw_id, uint64_t raw_event,
             unsigned int flags)
{
    (void)dev;
    (void)hw_id;
    (void)raw_event;
    (void)flags;
}

static void
pt_dev_stop(struct perfmon_dev *dev, unsigned int hw_id)
{
    (void)dev;
    (void)hw_id;
}

static uint64_t
pt_dev_read(struct perfmon_dev *dev, unsigned int hw_id)
{
    (void)dev;
    (void)hw_id;
    return 0;
}

static uint64_t
pt_dev_overflow(struct perfmon_dev *dev)
{
    (void)dev;
    return __atomic_exchange_n(&pt_nmi_flag[cpu_id()], 0, __ATOMIC_RELAXED);
}

static const struct perfmon_dev_ops pt_dev_ops = {
    .translate = pt_dev_translate, .counters = pt_dev_counters,
    .alloc = pt_dev_alloc,
    .free = pt_dev_free, .start = pt_dev_start, .stop = pt_dev_stop,
    .read = pt_dev_read, .handle_overflow_intr = pt_dev_overflow,
};

static struct perfmon_dev pt_dev = {
    .name = "ktest",
    .ops = &pt_dev_ops,
    .width = 48,
    .nr_pmcs = 1,
    .overflow_intr = true,
};

struct pt_cb_state {
    volatile unsigned int magic;
    unsigned int calls;                 /* atomic */
};

static struct pt_cb_state pt_cb_states[PT_CB_ROUNDS];
static unsigned int pt_cb_poisoned_calls;      /* atomic */
static unsigned int pt_cb_bad_args;            /* atomic */

static void
pt_cb(struct perfmon_dev *dev, unsigned int cpu, uint64_t mask,
      struct trap_frame *frame, void *arg)
{
    struct pt_cb_state *s = arg;

    if (dev != &pt_dev || cpu != cpu_id() || mask != 1 || frame == NULL) {
        __atomic_fetch_add(&pt_cb_bad_args, 1, __ATOMIC_RELAXED);
    }

    if (s->magic != PT_CB_ALIVE) {
        __atomic_fetch_add(&pt_cb_poisoned_calls, 1, __ATOMIC_RELAXED);
    }

    __atomic_fetch_add(&s->calls, 1, __ATOMIC_RELAXED);
}

struct pt_storm {
    volatile bool stop;
    unsigned int sent;
};

static void
pt_storm_fn(void *arg)
{
    struct pt_storm *st = arg;
    unsigned int n = cpu_count();

    while (!st->stop) {
        for (unsigned int cpu = 0; cpu < n; cpu++) {
            __atomic_store_n(&pt_nmi_flag[cpu], 1, __ATOMIC_RELEASE);
            lapic_ipi_nmi(cpu_table[cpu].apic_id);
            st->sent++;
        }

        for (volatile unsigned int i = 0; i < 200; i++) {
            cpu_pause();
        }
    }
}

static int
pt_intr_callback_race(void)
{
    static bool registered;
    struct pt_storm storm = { 0 };
    struct thread *sender = NULL;
    unsigned int calls = 0;
    int h;

    /* Neither can be unregistered: the first run registers them for good. */
    if (!registered) {
        KTEST_ASSERT_EQ(perfmon_register(&pt_dev), 0);
        trap_nmi_register(perfmon_overflow_nmi, &pt_dev);
        registered = true;
    }

    h = perfmon_intr_register(NULL, NULL);
    KTEST_CHECK_EQ(h, -EINVAL);
    KTEST_CHECK_EQ(perfmon_intr_unregister(-1), -EINVAL);
    KTEST_CHECK_EQ(thread_create(&sender, "pt_storm", pt_storm_fn, &storm,
                                 THREAD_CPUMASK_ALL), 0);

    for (unsigned int i = 0; i < PT_CB_ROUNDS; i++) {
        struct pt_cb_state *s = &pt_cb_states[i];

        s->magic = PT_CB_ALIVE;
        h = perfmon_intr_register(pt_cb, s);
        KTEST_CHECK(h >= 0);

        /* Let a few NMIs in, sometimes none. */
        if (i % 4 != 0) {
            thread_msleep(1);
        }

        KTEST_CHECK_EQ(perfmon_intr_unregister(h), 0);
        KTEST_CHECK_EQ(perfmon_intr_unregister(h), -EINVAL);
        h = -1;
        s->magic = PT_CB_POISON;
    }

    storm.stop = true;
    thread_join(sender);
    sender = NULL;
    thread_msleep(5);

    for (unsigned int i = 0; i < PT_CB_ROUNDS; i++) {
        calls += pt_cb_states[i].calls;
    }

    ktest_diag("%u NMIs sent, %u callback calls", storm.sent, calls);
    KTEST_CHECK_EQ(pt_cb_poisoned_calls, 0);
    KTEST_CHECK_EQ(pt_cb_bad_args, 0);
    KTEST_CHECK(calls > 0);

out:
    /* A callback left registered would run on the next test's NMIs. */
    if (h >= 0) {
        perfmon_intr_unregister(h);
    }

    storm.stop = true;

    if (sender != NULL) {
        thread_join(sender);
    }

    return ktest_result();
}

KTEST_DEFINE(perfmon, intr_callback_unregister_race, pt_intr_callback_race);
