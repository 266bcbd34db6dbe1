/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the performance monitoring core (kern/perfmon/perfmon.c) against
 * fake PMU devices and the fakes of CPUs, threads, xcalls, timers and the
 * clock: device registration, events and every error code, counter sharing
 * and exhaustion, 64-bit extension across wraps at several widths in poll
 * and interrupt mode, thread events across context switches, migrations
 * and exit, several devices, and the overflow-interrupt callback registry.
 *
 * A fake device models per-CPU hardware counters: fdev_count() makes
 * events happen on one CPU, and only counters started there with that raw
 * event see them, wrapping at the device width and raising an overflow
 * status bit as a PMU would.
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
#include "arch/x86/trap.h"
#include "fakes/fake_smp.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/perfmon_control.h"
#include "kern/syscnt.h"
#include "kern/thread.h"

#include "fdev.h"

/* A cycles event counting the kernel, attached to cpu. */
static void
attach_cycles_cpu(struct perfmon_event *ev, unsigned int cpu)
{
    init_ok(ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(ev, cpu), 0);
}

/* ---- devices ------------------------------------------------------------ */

static void
test_register_errors(void **state)
{
    struct fdev *fd = fdev_init(0, 48, 4, true);
    struct perfmon_dev_ops ops = fd->ops;
    struct perfmon_dev_info info;
    void **opp[] = {
        (void **)&fd->ops.translate, (void **)&fd->ops.alloc,
        (void **)&fd->ops.free, (void **)&fd->ops.start,
        (void **)&fd->ops.stop, (void **)&fd->ops.read,
        (void **)&fd->ops.handle_overflow_intr,
    };

    (void)state;
    assert_int_equal(perfmon_register(NULL), -EINVAL);

    fd->dev.name = NULL;
    assert_int_equal(perfmon_register(&fd->dev), -EINVAL);
    fd->dev.name = "fake0";
    fd->dev.ops = NULL;
    assert_int_equal(perfmon_register(&fd->dev), -EINVAL);
    fd->dev.ops = &fd->ops;

    for (size_t i = 0; i < ARRAY_SIZE(opp); i++) {
        void *saved = *opp[i];

        *opp[i] = NULL;
        assert_int_equal(perfmon_register(&fd->dev), -EINVAL);
        *opp[i] = saved;
    }

    assert_memory_equal(&ops, &fd->ops, sizeof(ops));

    fd->dev.width = 0;
    assert_int_equal(perfmon_register(&fd->dev), -EINVAL);
    fd->dev.width = 65;
    assert_int_equal(perfmon_register(&fd->dev), -EINVAL);
    fd->dev.width = 48;
    fd->dev.nr_pmcs = 0;
    assert_int_equal(perfmon_register(&fd->dev), -EINVAL);
    fd->dev.nr_pmcs = PERFMON_DEV_MAX_PMCS + 1;
    assert_int_equal(perfmon_register(&fd->dev), -EINVAL);
    fd->dev.nr_pmcs = 4;
    fd->dev.events = NULL;
    assert_int_equal(perfmon_register(&fd->dev), -EINVAL);
    fd->dev.events = fdev_events;

    /* An overflow interrupt needs its handler (above); polling does not. */
    fdev_init(1, 32, 4, false);
    fdevs[1].ops.handle_overflow_intr = NULL;
    assert_int_equal(perfmon_register(&fdevs[1].dev), 0);
    perfmon_reset();

    /* Nothing was registered by the failures. */
    assert_int_equal(perfmon_nr_devs(), 0);
    assert_null(perfmon_dev_get(0));
    assert_int_equal(perfmon_dev_get_info(&fd->dev, &info), -EINVAL);

    assert_int_equal(perfmon_register(&fd->dev), 0);
    assert_int_equal(perfmon_register(&fd->dev), -EEXIST);

    /* Another device with the same name. */
    fdev_init(1, 32, 4, false);
    fdevs[1].dev.name = "fake0";
    assert_int_equal(perfmon_register(&fdevs[1].dev), -EEXIST);
    assert_int_equal(perfmon_nr_devs(), 1);
}

static void
test_register_limits_and_lookup(void **state)
{
    static struct fdev extra[PERFMON_MAX_DEVS + 1];
    static const char *const names[] = { "a", "b", "c", "d", "e" };
    struct perfmon_dev_info info;

    (void)state;

    for (unsigned int i = 0; i <= PERFMON_MAX_DEVS; i++) {
        extra[i] = *fdev_init(0, 1 + i, 1, false);
        extra[i].dev.ops = &extra[i].ops;
        extra[i].dev.name = names[i];
        assert_int_equal(perfmon_register(&extra[i].dev),
                         i < PERFMON_MAX_DEVS ? 0 : -ENOSPC);
    }

    assert_int_equal(perfmon_nr_devs(), PERFMON_MAX_DEVS);

    for (unsigned int i = 0; i < PERFMON_MAX_DEVS; i++) {
        assert_ptr_equal(perfmon_dev_get(i), &extra[i].dev);
        assert_ptr_equal(perfmon_dev_find(names[i]), &extra[i].dev);
    }

    assert_null(perfmon_dev_get(PERFMON_MAX_DEVS));
    assert_null(perfmon_dev_find("e"));
    assert_null(perfmon_dev_find(NULL));
    assert_int_equal(perfmon_dev_get_info(&extra[PERFMON_MAX_DEVS].dev,
                                          &info), -EINVAL);
}

static void
test_dev_info_and_poll_interval(void **state)
{
    struct perfmon_dev_info info;
    struct fdev *intr, *poll16, *given;

    (void)state;
    fake_cpu_set_tsc_freq(1000000000ULL);
    intr = fdev_add(0, 48, 4, true);
    poll16 = fdev_add(1, 16, 3, false);
    given = fdev_init(2, 40, 2, true);
    given->dev.poll_ms = 7;
    assert_int_equal(perfmon_register(&given->dev), 0);

    assert_int_equal(perfmon_dev_get_info(&intr->dev, &info), 0);
    assert_string_equal(info.name, "fake0");
    assert_int_equal(info.width, 48);
    assert_int_equal(info.nr_pmcs, 4);
    assert_int_equal(info.nr_pmcs_used, 0);
    assert_true(info.overflow_intr);
    assert_int_equal(info.poll_ms, 0);

    /* 2^16 events at 16 per cycle is far below the floor. */
    assert_int_equal(perfmon_dev_get_info(&poll16->dev, &info), 0);
    assert_false(info.overflow_intr);
    assert_int_equal(info.poll_ms, 20);

    assert_int_equal(perfmon_dev_get_info(&given->dev, &info), 0);
    assert_true(info.overflow_intr);
    assert_int_equal(info.poll_ms, 7);

    assert_int_equal(perfmon_dev_get_info(NULL, &info), -EINVAL);
    assert_int_equal(perfmon_dev_get_info(&intr->dev, NULL), -EINVAL);

    /* Devices never registered, whatever their index says. */
    struct perfmon_dev stranger = intr->dev;

    assert_int_equal(perfmon_dev_get_info(&stranger, &info), -EINVAL);
    stranger.index = 7;
    assert_int_equal(perfmon_dev_get_info(&stranger, &info), -EINVAL);
}

/* Poll interval of a polled device of the given width, TSC at freq. */
static unsigned int
poll_ms_for(unsigned int width, uint64_t freq)
{
    struct perfmon_dev_info info;
    struct fdev *fd;

    fake_syscnt_reset();
    perfmon_reset();
    fake_cpu_set_tsc_freq(freq);
    fd = fdev_add(0, width, 1, false);
    assert_int_equal(perfmon_dev_get_info(&fd->dev, &info), 0);
    return info.poll_ms;
}

static void
test_poll_interval_from_width(void **state)
{
    (void)state;
    /* 2^32 / (16 * 10^6 per ms) / 4 = 67 ms. */
    assert_int_equal(poll_ms_for(32, 1000000000ULL), 67);
    /* At 4 GHz the same counter wraps 4 times sooner: floor. */
    assert_int_equal(poll_ms_for(32, 4000000000ULL), 20);
    assert_int_equal(poll_ms_for(36, 4000000000ULL), 268);
    /* Wide counters: the ceiling. */
    assert_int_equal(poll_ms_for(48, 3000000000ULL), 10000);
    assert_int_equal(poll_ms_for(64, 3000000000ULL), 10000);
    /* No TSC frequency yet: a fast 5 GHz CPU is assumed. */
    assert_int_equal(poll_ms_for(36, 0), 214);
    assert_int_equal(poll_ms_for(8, 0), 20);
}

static void
test_lookup_event(void **state)
{
    struct fdev *hw, *sw;
    uint64_t id;
    unsigned int flags;

    (void)state;
    hw = fdev_add(0, 48, 4, true);
    sw = fdev_add(1, 32, 4, false);

    assert_int_equal(perfmon_lookup_event(NULL, "cycles", &id, &flags), 0);
    assert_int_equal(id, PERFMON_EV_CYCLE);
    assert_int_equal(flags, 0);
    assert_int_equal(perfmon_lookup_event(NULL, "cpu-clock", &id, &flags), 0);
    assert_int_equal(id, PERFMON_EV_TASK_CLOCK);
    assert_int_equal(perfmon_lookup_event(NULL, "nope", &id, &flags), -ENOENT);

    /* The device's own names, then the generic events it counts. */
    assert_int_equal(perfmon_lookup_event(&hw->dev, "insns.any", &id, &flags),
                     0);
    assert_int_equal(id, RAW_INSNS);
    assert_int_equal(flags, PERFMON_EF_RAW);
    assert_int_equal(perfmon_lookup_event(&hw->dev, "branch-misses", &id,
                                          &flags), 0);
    assert_int_equal(id, PERFMON_EV_BRANCH_MISS);
    assert_int_equal(flags, 0);
    assert_int_equal(perfmon_lookup_event(&hw->dev, "test", &id, &flags),
                     -ENOENT);
    assert_int_equal(perfmon_lookup_event(&sw->dev, "test", &id, &flags), 0);
    assert_int_equal(id, PERFMON_EV_TEST);
    assert_int_equal(perfmon_lookup_event(&sw->dev, "insns.any", &id, &flags),
                     -ENOENT);

    assert_int_equal(perfmon_lookup_event(NULL, NULL, &id, &flags), -EINVAL);
    assert_int_equal(perfmon_lookup_event(NULL, "cycles", NULL, &flags),
                     -EINVAL);
    assert_int_equal(perfmon_lookup_event(NULL, "cycles", &id, NULL),
                     -EINVAL);
    fdev_init(2, 48, 4, true);
    assert_int_equal(perfmon_lookup_event(&fdevs[2].dev, "cycles", &id,
                                          &flags), -EINVAL);

    assert_string_equal(perfmon_event_desc(PERFMON_EV_CYCLE)->name,
                        "cycles");
    assert_string_equal(perfmon_event_desc(PERFMON_EV_TASK_CLOCK)->name,
                        "task-clock");
    assert_string_equal(perfmon_event_desc(PERFMON_EV_CONTEXT_SWITCH)->name,
                        "context-switches");
    assert_string_equal(perfmon_event_desc(PERFMON_EV_TEST)->name, "test");
    assert_null(perfmon_event_desc(PERFMON_NR_EVENTS));

    /* Translation of a generic event on a given device. */
    assert_int_equal(perfmon_dev_translate(&hw->dev, PERFMON_EV_BRANCH_MISS,
                                           &id), 0);
    assert_int_equal(id, hw->code[PERFMON_EV_BRANCH_MISS]);
    assert_int_equal(perfmon_dev_translate(&hw->dev, PERFMON_EV_TEST, &id),
                     -ENOENT);
    assert_int_equal(perfmon_dev_translate(&sw->dev, PERFMON_EV_TEST, &id),
                     0);
    assert_int_equal(id, sw->code[PERFMON_EV_TEST]);
    assert_int_equal(perfmon_dev_translate(&hw->dev, PERFMON_NR_EVENTS, &id),
                     -EINVAL);
    assert_int_equal(perfmon_dev_translate(NULL, PERFMON_EV_CYCLE, &id),
                     -EINVAL);
    assert_int_equal(perfmon_dev_translate(&hw->dev, PERFMON_EV_CYCLE, NULL),
                     -EINVAL);
    assert_int_equal(perfmon_dev_translate(&fdevs[2].dev, PERFMON_EV_CYCLE,
                                           &id), -EINVAL);
}

/* ---- event errors ------------------------------------------------------- */

static void
test_event_init_errors(void **state)
{
    struct perfmon_event ev;

    (void)state;
    assert_int_equal(perfmon_event_init(NULL, 0, PERFMON_EF_KERN), -EINVAL);
    assert_int_equal(perfmon_event_init(&ev, 0, 0), -EINVAL);
    assert_int_equal(perfmon_event_init(&ev, 0, PERFMON_EF_RAW), -EINVAL);
    assert_int_equal(perfmon_event_init(&ev, 0, PERFMON_EF_KERN | 0x80),
                     -EINVAL);
    assert_int_equal(perfmon_event_init(&ev, PERFMON_NR_EVENTS,
                                        PERFMON_EF_KERN), -EINVAL);
    assert_int_equal(perfmon_event_init(&ev, UINT64_MAX, PERFMON_EF_USER),
                     -EINVAL);

    init_ok(&ev, PERFMON_NR_EVENTS - 1, PERFMON_EF_USER);
    init_ok(&ev, 0, PERFMON_EF_KERN | PERFMON_EF_USER);
    init_ok(&ev, UINT64_MAX, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_false(perfmon_event_attached(&ev));
    assert_int_equal(perfmon_event_read(&ev), 0);
    assert_int_equal(perfmon_event_read(NULL), 0);
    assert_false(perfmon_event_attached(NULL));
}

static void
test_attach_errors(void **state)
{
    struct perfmon_event ev, raw, garbage;
    struct thread *t = fake_thread_create("t");
    struct fdev *fd;

    (void)state;
    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);

    /* No device at all. */
    assert_int_equal(perfmon_event_attach(&ev, t), -ENODEV);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 0), -ENODEV);

    fd = fdev_add(0, 48, 4, true);

    assert_int_equal(perfmon_event_attach(NULL, t), -EINVAL);
    assert_int_equal(perfmon_event_attach(&ev, NULL), -EINVAL);
    assert_int_equal(perfmon_event_attach_cpu(NULL, 0), -EINVAL);
    assert_int_equal(perfmon_event_attach_cpu(&ev, NR_CPUS), -EINVAL);
    assert_int_equal(perfmon_event_attach_cpu(&ev, UINT32_MAX), -EINVAL);
    memset(&garbage, 0x5a, sizeof(garbage));
    assert_int_equal(perfmon_event_attach(&garbage, t), -EINVAL);
    assert_int_equal(perfmon_event_attach_cpu(&garbage, 0), -EINVAL);
    assert_int_equal(perfmon_event_detach(&garbage), -EINVAL);

    /* An event no device counts, a raw code the device refuses. */
    init_ok(&ev, PERFMON_EV_TEST, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach(&ev, t), -ENOENT);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 1), -ENOENT);
    init_ok(&raw, RAW_REFUSED, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_attach_cpu(&raw, 1), -EINVAL);
    init_ok(&raw, RAW_UNCOUNTABLE, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_attach_cpu(&raw, 1), -ENOENT);
    fdev_assert_idle(fd);
    assert_int_equal(t->nr_refs, 1);

    /* Not attached: detach refused, nothing changes. */
    assert_int_equal(perfmon_event_detach(NULL), -EINVAL);
    assert_int_equal(perfmon_event_detach(&ev), -EINVAL);

    /* Attached twice, to a thread or a CPU. */
    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach(&ev, t), 0);
    assert_true(perfmon_event_attached(&ev));
    assert_int_equal(perfmon_event_attach(&ev, t), -EINVAL);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 0), -EINVAL);
    assert_int_equal(t->nr_refs, 2);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(perfmon_event_detach(&ev), -EINVAL);
    assert_int_equal(t->nr_refs, 1);
    assert_int_equal(fd->nr_counters_calls, 3);     /* 2 refused above */
    fdev_assert_idle(fd);

    assert_int_equal(perfmon_event_attach_cpu(&ev, 3), 0);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 3), -EINVAL);
    assert_int_equal(perfmon_event_attach(&ev, t), -EINVAL);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    fdev_assert_idle(fd);

    /* The switch hook off: thread events refused, CPU events fine. */
    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_set_switch_hook(false), 0);
    assert_int_equal(perfmon_event_attach(&ev, t), -EBUSY);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 1), 0);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(perfmon_set_switch_hook(true), 0);

    /* And the hook cannot go off under an attached thread event. */
    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach(&ev, t), 0);
    assert_int_equal(perfmon_set_switch_hook(false), -EBUSY);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(perfmon_set_switch_hook(false), 0);
    assert_int_equal(perfmon_set_switch_hook(true), 0);
}

static void
test_set_dev(void **state)
{
    struct perfmon_event ev;
    struct fdev *a, *b;

    (void)state;
    a = fdev_add(0, 48, 4, true);
    b = fdev_add(1, 32, 4, false);
    fdev_init(2, 48, 4, true);

    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_set_dev(NULL, &a->dev), -EINVAL);
    assert_int_equal(perfmon_event_set_dev(&ev, &fdevs[2].dev), -ENODEV);

    /* A device that cannot count the generic event. */
    assert_int_equal(perfmon_event_set_dev(&ev, &b->dev), 0);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 0), -ENOENT);
    assert_int_equal(perfmon_event_set_dev(&ev, NULL), 0);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 0), 0);
    assert_int_equal(a->nr_counters_calls, 1);
    assert_int_equal(perfmon_event_set_dev(&ev, &b->dev), -EINVAL);
    assert_int_equal(perfmon_event_detach(&ev), 0);

    /* Raw events: the first device unless one is chosen. */
    init_ok(&ev, 0x123, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 0), 0);
    assert_int_equal(a->nr_counters_calls, 2);
    assert_int_equal(a->counters[0][0].raw_event, 0x123);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    init_ok(&ev, 0x123, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_set_dev(&ev, &b->dev), 0);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 0), 0);
    assert_int_equal(b->nr_counters_calls, 1);
    assert_int_equal(b->counters[0][0].raw_event, 0x123);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * A named_only device counts only events that name it: registered first
 * and able to count cycles, it is still not the default for them.
 */
static void
test_named_only(void **state)
{
    struct perfmon_event ev;
    struct fdev *named, *other;

    (void)state;
    named = fdev_init(0, 48, 4, true);
    named->dev.named_only = true;
    assert_int_equal(perfmon_register(&named->dev), 0);

    /* No other device counts cycles: none is chosen. */
    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 0), -ENOENT);

    /* Named, it counts them. */
    assert_int_equal(perfmon_event_set_dev(&ev, &named->dev), 0);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 0), 0);
    assert_int_equal(named->nr_counters_calls, 1);
    assert_int_equal(perfmon_event_detach(&ev), 0);

    /* With another device that counts them, that one is the default. */
    other = fdev_add(2, 48, 4, true);
    attach_cycles_cpu(&ev, 0);
    assert_int_equal(other->nr_counters_calls, 1);
    assert_int_equal(named->nr_counters_calls, 1);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

static void
test_misuse_asserted(void **state)
{
    struct perfmon_event ev;
    struct thread *t = fake_thread_create("t");
    struct perfmon_td idle;

    (void)state;
    perfmon_td_init(&idle);
    fdev_add(0, 48, 4, true);
    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);

    /* Interrupts disabled: xcalls could deadlock. */
    fake_cpu_set_intr(false);
    expect_assert_failure(perfmon_event_attach(&ev, t));
    expect_assert_failure(perfmon_event_attach_cpu(&ev, 1));
    fake_cpu_set_intr(true);
    assert_false(perfmon_event_attached(&ev));

    assert_int_equal(perfmon_event_attach(&ev, t), 0);
    fake_cpu_set_intr(false);
    expect_assert_failure(perfmon_event_read(&ev));
    expect_assert_failure(perfmon_event_detach(&ev));
    fake_cpu_set_intr(true);
    assert_int_equal(perfmon_event_detach(&ev), 0);

    /* The context switch hook needs interrupts and preemption disabled. */
    t->perfmon_td.active_mask = 1;
    expect_assert_failure(perfmon_td_switch_change(&idle, &t->perfmon_td));
    thread_preempt_disable();
    expect_assert_failure(perfmon_td_switch_change(&idle, &t->perfmon_td));
    thread_preempt_enable();
    t->perfmon_td.active_mask = 0;

    /* The overflow interrupt runs with interrupts disabled. */
    expect_assert_failure(perfmon_overflow_intr(&fdevs[0].dev, &test_frame));
}

/* ---- sharing and exhaustion --------------------------------------------- */

struct foreach_seen {
    unsigned int nr;
    struct perfmon_pmc_info infos[8];
};

static void
foreach_fn(const struct perfmon_pmc_info *info, void *arg)
{
    struct foreach_seen *seen = arg;

    assert_true(seen->nr < ARRAY_SIZE(seen->infos));
    seen->infos[seen->nr++] = *info;
}

static void
test_sharing_and_release(void **state)
{
    struct perfmon_event a, b, c, k;
    struct thread *t = fake_thread_create("worker");
    struct foreach_seen seen = { 0 };
    struct perfmon_dev_info info;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    init_ok(&a, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN | PERFMON_EF_USER);
    init_ok(&b, RAW_INSNS, PERFMON_EF_KERN | PERFMON_EF_USER | PERFMON_EF_RAW);
    init_ok(&c, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN | PERFMON_EF_USER);
    init_ok(&k, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);

    /* Generic and raw spellings of one event share one counter. */
    assert_int_equal(perfmon_event_attach(&a, t), 0);
    assert_int_equal(perfmon_event_attach_cpu(&b, 2), 0);
    assert_int_equal(perfmon_event_attach_cpu(&c, 2), 0);
    assert_int_equal(fd->nr_counters_calls, 1);
    /* Another mode is another counter. */
    assert_int_equal(perfmon_event_attach_cpu(&k, 2), 0);
    assert_int_equal(fd->nr_counters_calls, 2);
    assert_int_equal(perfmon_dev_get_info(&fd->dev, &info), 0);
    assert_int_equal(info.nr_pmcs_used, 2);

    /* Started once on CPU 2 for two users. */
    assert_int_equal(fd->nr_start, 2);
    fdev_count(fd, 2, RAW_INSNS, 100);
    assert_int_equal(perfmon_event_read(&b), 100);
    assert_int_equal(perfmon_event_read(&c), 100);
    assert_int_equal(perfmon_event_read(&k), 100);
    assert_int_equal(perfmon_event_read(&a), 0);

    perfmon_pmc_foreach(foreach_fn, &seen);
    perfmon_pmc_foreach(NULL, NULL);
    assert_int_equal(seen.nr, 2);
    assert_ptr_equal(seen.infos[0].dev, &fd->dev);
    assert_int_equal(seen.infos[0].index, 0);
    assert_int_equal(seen.infos[0].raw_event, RAW_INSNS);
    assert_int_equal(seen.infos[0].flags, PERFMON_EF_KERN | PERFMON_EF_USER);
    assert_int_equal(seen.infos[0].nr_users, 3);
    /* Most recent user first: c, b (CPU 2), then a (the thread). */
    assert_null(seen.infos[0].users[0].thread);
    assert_int_equal(seen.infos[0].users[0].cpu, 2);
    assert_null(seen.infos[0].users[1].thread);
    assert_ptr_equal(seen.infos[0].users[2].thread, t);
    assert_null(seen.infos[0].users[3].thread);
    assert_int_equal(seen.infos[1].index, 1);
    assert_int_equal(seen.infos[1].flags, PERFMON_EF_KERN);
    assert_int_equal(seen.infos[1].nr_users, 1);

    /* Releasing one user keeps the counter for the others. */
    assert_int_equal(perfmon_event_detach(&b), 0);
    assert_int_equal(fd->nr_stop, 0);
    fdev_count(fd, 2, RAW_INSNS, 5);
    assert_int_equal(perfmon_event_read(&b), 100);
    assert_int_equal(perfmon_event_read(&c), 105);
    assert_int_equal(perfmon_event_detach(&c), 0);
    assert_int_equal(fd->nr_stop, 1);
    assert_int_equal(perfmon_dev_get_info(&fd->dev, &info), 0);
    assert_int_equal(info.nr_pmcs_used, 2);
    assert_int_equal(perfmon_event_detach(&a), 0);
    assert_int_equal(perfmon_dev_get_info(&fd->dev, &info), 0);
    assert_int_equal(info.nr_pmcs_used, 1);
    assert_int_equal(perfmon_event_detach(&k), 0);
    fdev_assert_idle(fd);
    assert_int_equal(perfmon_dev_get_info(&fd->dev, &info), 0);
    assert_int_equal(info.nr_pmcs_used, 0);
    seen.nr = 0;
    perfmon_pmc_foreach(foreach_fn, &seen);
    assert_int_equal(seen.nr, 0);
}

static void
test_foreach_many_users(void **state)
{
    struct perfmon_event evs[PERFMON_PMC_INFO_MAX_USERS + 2];
    struct foreach_seen seen = { 0 };

    (void)state;
    fdev_add(0, 48, 2, true);

    for (size_t i = 0; i < ARRAY_SIZE(evs); i++) {
        init_ok(&evs[i], PERFMON_EV_CYCLE, PERFMON_EF_KERN);
        assert_int_equal(perfmon_event_attach_cpu(&evs[i], i % NR_CPUS), 0);
    }

    perfmon_pmc_foreach(foreach_fn, &seen);
    assert_int_equal(seen.nr, 1);
    assert_int_equal(seen.infos[0].nr_users, ARRAY_SIZE(evs));
    /* The newest users are listed first. */
    assert_int_equal(seen.infos[0].users[0].cpu,
                     (ARRAY_SIZE(evs) - 1) % NR_CPUS);

    for (size_t i = 0; i < ARRAY_SIZE(evs); i++) {
        assert_int_equal(perfmon_event_detach(&evs[i]), 0);
    }
}

/* Pinned events: a counter of their own, or -EAGAIN. */
static void
test_eagain_then_success(void **state)
{
    struct perfmon_event a, b, c;
    struct thread *t = fake_thread_create("t");
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 2, true);
    init_ok(&a, PERFMON_EV_CYCLE, PERFMON_EF_KERN | PERFMON_EF_PINNED);
    init_ok(&b, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN | PERFMON_EF_PINNED);
    init_ok(&c, PERFMON_EV_BRANCH, PERFMON_EF_KERN | PERFMON_EF_PINNED);

    assert_int_equal(perfmon_event_attach(&a, t), 0);
    assert_int_equal(perfmon_event_attach_cpu(&b, 1), 0);
    assert_int_equal(perfmon_event_attach(&c, t), -EAGAIN);
    assert_int_equal(perfmon_event_attach_cpu(&c, 1), -EAGAIN);
    assert_false(perfmon_event_attached(&c));
    assert_int_equal(t->nr_refs, 2);

    /* A shared event still fits. */
    struct perfmon_event a2;

    init_ok(&a2, PERFMON_EV_CYCLE, PERFMON_EF_KERN | PERFMON_EF_PINNED);
    assert_int_equal(perfmon_event_attach_cpu(&a2, 3), 0);
    assert_int_equal(fd->nr_alloc, 2);

    assert_int_equal(perfmon_event_detach(&b), 0);
    assert_int_equal(perfmon_event_attach(&c, t), 0);
    assert_int_equal(perfmon_event_detach(&c), 0);
    assert_int_equal(perfmon_event_detach(&a2), 0);
    assert_int_equal(perfmon_event_detach(&a), 0);
    fdev_assert_idle(fd);
    assert_int_equal(t->nr_refs, 1);
}

static void
test_eagain_from_device(void **state)
{
    struct perfmon_event a, b;
    struct fdev *fd;

    (void)state;
    /* Four logical slots, but the hardware has one counter. */
    fd = fdev_init(0, 48, 4, true);
    fd->nr_hw = 1;
    assert_int_equal(perfmon_register(&fd->dev), 0);
    init_ok(&a, PERFMON_EV_CYCLE, PERFMON_EF_KERN | PERFMON_EF_PINNED);
    init_ok(&b, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN | PERFMON_EF_PINNED);
    assert_int_equal(perfmon_event_attach_cpu(&a, 0), 0);
    assert_int_equal(perfmon_event_attach_cpu(&b, 0), -EAGAIN);
    assert_int_equal(perfmon_event_detach(&a), 0);
    assert_int_equal(perfmon_event_attach_cpu(&b, 0), 0);
    assert_int_equal(perfmon_event_detach(&b), 0);
}

/* ---- CPU events --------------------------------------------------------- */

static void
test_cpu_event_counts_its_cpu(void **state)
{
    struct perfmon_event ev, local;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&local, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 1), 0);
    assert_int_equal(fake_xcall_nr_on(1), 1);

    fdev_count(fd, 1, RAW_CYCLES, 1000);
    fdev_count(fd, 0, RAW_CYCLES, 77);          /* not running there */
    fdev_count(fd, 1, RAW_INSNS, 55);           /* another event */
    assert_int_equal(perfmon_event_read(&ev), 1000);
    assert_int_equal(fake_xcall_nr_remote(), 2);

    /* The local CPU: no remote xcall. */
    assert_int_equal(perfmon_event_attach_cpu(&local, 0), 0);
    fdev_count(fd, 0, RAW_CYCLES, 20);
    assert_int_equal(perfmon_event_read(&local), 20);
    assert_int_equal(fake_xcall_nr_remote(), 2);

    /* Detached events keep their value; reattaching counts on. */
    fdev_count(fd, 1, RAW_CYCLES, 1);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    fdev_count(fd, 1, RAW_CYCLES, 500);
    assert_int_equal(perfmon_event_read(&ev), 1001);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 2), 0);
    fdev_count(fd, 2, RAW_CYCLES, 9);
    assert_int_equal(perfmon_event_read(&ev), 1010);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(perfmon_event_read(&ev), 1010);
    assert_int_equal(perfmon_event_detach(&local), 0);
    assert_int_equal(perfmon_event_read(&local), 20);
}

/* ---- thread events ------------------------------------------------------ */

static void
test_thread_event_switches_and_migrations(void **state)
{
    struct perfmon_event ev, cpu1;
    struct thread *t = fake_thread_create("t");
    struct thread *u = fake_thread_create("u");
    struct fdev *fd;
    unsigned int calls;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    init_ok(&ev, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    init_ok(&cpu1, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);

    /* Attaching to a thread that does not run starts nothing. */
    assert_int_equal(perfmon_event_attach(&ev, t), 0);
    assert_int_equal(fd->nr_start, 0);
    assert_int_equal(fake_thread_nr_remote_calls(), 0);
    assert_int_equal(perfmon_event_attach_cpu(&cpu1, 1), 0);
    assert_int_equal(fd->nr_start, 1);

    fake_thread_switch(1, t);
    fdev_count(fd, 1, RAW_INSNS, 100);
    fdev_count(fd, 0, RAW_INSNS, 50);           /* no counter there */

    /* Running elsewhere: one remote call. */
    calls = fake_thread_nr_remote_calls();
    assert_int_equal(perfmon_event_read(&ev), 100);
    assert_int_equal(fake_thread_nr_remote_calls(), calls + 1);

    /* Switched out: what happens on CPU 1 is not its count anymore. */
    fake_thread_switch(1, u);
    fdev_count(fd, 1, RAW_INSNS, 30);
    calls = fake_thread_nr_remote_calls();
    assert_int_equal(perfmon_event_read(&ev), 100);
    assert_int_equal(fake_thread_nr_remote_calls(), calls);
    assert_int_equal(perfmon_event_read(&cpu1), 130);

    /* Migrated to CPU 2, where nothing counted before. */
    fake_thread_migrate(t, 2);
    fake_thread_switch(2, t);
    assert_int_equal(fd->nr_start, 2);
    fdev_count(fd, 2, RAW_INSNS, 7);
    fdev_count(fd, 1, RAW_INSNS, 1000);
    assert_int_equal(perfmon_event_read(&ev), 107);

    /* Back to CPU 1, sharing the counter with the CPU event. */
    fake_thread_switch(2, NULL);
    assert_int_equal(fd->nr_stop, 1);
    fake_thread_switch(1, NULL);
    fake_thread_migrate(t, 1);
    fake_thread_switch(1, t);
    fdev_count(fd, 1, RAW_INSNS, 3);
    assert_int_equal(perfmon_event_read(&ev), 110);
    assert_int_equal(perfmon_event_read(&cpu1), 1133);

    /* Detaching a running thread's event stops nothing the CPU uses. */
    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(t->perfmon_td.active_mask, 0);
    assert_int_equal(t->perfmon_td.loaded_mask, 0);
    fdev_count(fd, 1, RAW_INSNS, 3);
    assert_int_equal(perfmon_event_read(&ev), 110);
    assert_int_equal(perfmon_event_read(&cpu1), 1136);
    assert_int_equal(perfmon_event_detach(&cpu1), 0);
    assert_int_equal(fd->nr_start, fd->nr_stop);

    /* Without events, the switch hook does nothing. */
    fake_thread_switch(1, NULL);
    fake_thread_switch(1, t);
    assert_int_equal(fd->nr_start, fd->nr_stop);
}

static void
test_thread_event_self(void **state)
{
    struct perfmon_event a, b, c;
    struct fdev *fd;
    unsigned int xcalls;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    init_ok(&a, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&b, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&c, PERFMON_EV_BRANCH, PERFMON_EF_KERN);

    /* The caller's own thread: loaded at once, read without an xcall. */
    assert_int_equal(perfmon_event_attach(&a, thread_self()), 0);
    assert_int_equal(self->perfmon_td.loaded_mask, 1);
    fdev_count(fd, 0, RAW_CYCLES, 40);
    xcalls = fake_xcall_nr_remote();
    assert_int_equal(perfmon_event_read(&a), 40);
    assert_int_equal(fake_xcall_nr_remote(), xcalls);
    assert_int_equal(fake_thread_nr_remote_calls(), 0);

    /* A second event on the same counter, and one on another. */
    assert_int_equal(perfmon_event_attach(&b, self), 0);
    assert_int_equal(perfmon_event_attach(&c, self), 0);
    assert_int_equal(self->perfmon_td.pmcs[0].nr_refs, 2);
    assert_int_equal(self->perfmon_td.loaded_mask, 3);
    fdev_count(fd, 0, RAW_CYCLES, 2);
    fdev_count(fd, 0, RAW_BRANCH, 9);
    assert_int_equal(perfmon_event_read(&a), 42);
    assert_int_equal(perfmon_event_read(&b), 2);
    assert_int_equal(perfmon_event_read(&c), 9);

    /* Dropping one of two users keeps the counter loaded. */
    assert_int_equal(perfmon_event_detach(&a), 0);
    assert_int_equal(self->perfmon_td.loaded_mask, 3);
    fdev_count(fd, 0, RAW_CYCLES, 1);
    assert_int_equal(perfmon_event_read(&b), 3);
    assert_int_equal(perfmon_event_read(&a), 42);
    assert_int_equal(perfmon_event_detach(&b), 0);
    assert_int_equal(self->perfmon_td.loaded_mask, 2);
    assert_int_equal(perfmon_event_detach(&c), 0);
    assert_int_equal(self->perfmon_td.loaded_mask, 0);
    assert_int_equal(self->perfmon_td.active_mask, 0);
    assert_int_equal(fd->nr_start, fd->nr_stop);
}

/*
 * A switch between two threads passes the counters both use from one to
 * the other without stopping them; only the others stop and start.  Counts
 * stay exact for both threads, across a wrap of a shared counter.
 */
static void
test_switch_keeps_shared_counters(void **state)
{
    struct perfmon_event t_cyc, t_ins, u_cyc, u_br;
    struct thread *t = fake_thread_create("t");
    struct thread *u = fake_thread_create("u");
    struct thread *v = fake_thread_create("v");
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 16, 4, true);
    init_ok(&t_cyc, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&t_ins, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    init_ok(&u_cyc, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&u_br, PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach(&t_cyc, t), 0);
    assert_int_equal(perfmon_event_attach(&t_ins, t), 0);
    assert_int_equal(perfmon_event_attach(&u_cyc, u), 0);
    assert_int_equal(perfmon_event_attach(&u_br, u), 0);

    fake_thread_switch(1, t);
    assert_int_equal(fd->nr_start, 2);
    fdev_count(fd, 1, RAW_CYCLES, 10);
    fdev_count(fd, 1, RAW_INSNS, 5);

    /*
     * cycles keeps running; instructions passes its counter on to
     * branches, reprogrammed in place: nothing stops or starts.
     */
    fake_thread_switch(1, u);
    assert_int_equal(fd->nr_start, 2);
    assert_int_equal(fd->nr_stop, 0);
    assert_int_equal(fd->nr_transfer, 1);
    assert_int_equal(u->perfmon_td.loaded_mask, u->perfmon_td.active_mask);
    assert_int_equal(t->perfmon_td.loaded_mask, 0);
    fdev_count(fd, 1, RAW_CYCLES, 65536 + 20);
    assert_true(fdev_nmi(fd, 1));
    fdev_count(fd, 1, RAW_INSNS, 100);          /* stopped: not counted */
    fdev_count(fd, 1, RAW_BRANCH, 7);

    fake_thread_switch(1, t);
    assert_int_equal(fd->nr_start, 2);
    assert_int_equal(fd->nr_transfer, 2);
    fdev_count(fd, 1, RAW_CYCLES, 3);
    fdev_count(fd, 1, RAW_INSNS, 1);

    assert_int_equal(perfmon_event_read(&t_cyc), 13);
    assert_int_equal(perfmon_event_read(&t_ins), 6);
    assert_int_equal(perfmon_event_read(&u_cyc), 65556);
    assert_int_equal(perfmon_event_read(&u_br), 7);

    /* To a thread without events, and back: everything stops and starts. */
    fake_thread_switch(1, v);
    assert_int_equal(fd->nr_start, fd->nr_stop);
    fake_thread_switch(1, u);
    fdev_count(fd, 1, RAW_CYCLES, 2);
    fake_thread_switch(1, NULL);
    assert_int_equal(perfmon_event_read(&u_cyc), 65558);
    assert_int_equal(perfmon_event_read(&t_cyc), 13);

    assert_int_equal(perfmon_event_detach(&t_cyc), 0);
    assert_int_equal(perfmon_event_detach(&t_ins), 0);
    assert_int_equal(perfmon_event_detach(&u_cyc), 0);
    assert_int_equal(perfmon_event_detach(&u_br), 0);
    assert_int_equal(fd->nr_start, fd->nr_stop);
}

/*
 * Local reads compute the count in place (no xcall, no thread_call) and
 * fold only once the counter is 1/16 of a period past its last fold.
 * Without interrupt or poll, reads less than 15/16 of a period apart
 * still see every wrap, and never go backwards.
 */
static void
test_local_read_folds_far_counters(void **state)
{
    static const uint64_t steps[] = {
        13107, 58982, 3000, 61000, 4000, 61439, 1, 30000, 61439, 61439,
        4095, 61439, 4096, 100,
    };
    struct perfmon_event cpu0, own;
    uint64_t total = 0;
    unsigned int xcalls, calls;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 16, 4, false);
    init_ok(&cpu0, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&own, PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&cpu0, 0), 0);
    assert_int_equal(perfmon_event_attach(&own, self), 0);

    for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
        fdev_count(fd, 0, RAW_CYCLES, steps[i]);
        fdev_count(fd, 0, RAW_BRANCH, steps[i]);
        total += steps[i];
        assert_int_equal(perfmon_event_read(&cpu0), total);
        assert_int_equal(perfmon_event_read(&own), total);
    }

    /* Small steps take the in-place path, and still add up. */
    xcalls = fake_xcall_nr_on(0);
    calls = fake_thread_nr_calls();

    for (unsigned int i = 1; i <= 10; i++) {
        fdev_count(fd, 0, RAW_CYCLES, 300);
        fdev_count(fd, 0, RAW_BRANCH, 300);
        assert_int_equal(perfmon_event_read(&cpu0), total + i * 300);
        assert_int_equal(perfmon_event_read(&own), total + i * 300);
    }

    assert_int_equal(fake_xcall_nr_on(0), xcalls);
    assert_int_equal(fake_thread_nr_calls(), calls);

    /* Far from the last fold: the general path folds. */
    fdev_count(fd, 0, RAW_CYCLES, 5000);
    fdev_count(fd, 0, RAW_BRANCH, 5000);
    assert_int_equal(perfmon_event_read(&cpu0), total + 8000);
    assert_int_equal(perfmon_event_read(&own), total + 8000);
    assert_int_equal(fake_xcall_nr_on(0), xcalls + 1);
    assert_int_equal(fake_thread_nr_calls(), calls + 1);

    assert_int_equal(fake_xcall_nr_remote(), 0);
    assert_int_equal(fake_thread_nr_remote_calls(), 0);
    assert_int_equal(perfmon_event_detach(&cpu0), 0);
    assert_int_equal(perfmon_event_detach(&own), 0);
}

/* An overflow NMI landing in an in-place read of the caller's own event. */
static void
test_own_read_hit_by_nmi(void **state)
{
    struct perfmon_event ev;
    struct fdev *fd;
    unsigned int calls;

    (void)state;
    fd = fdev_add(0, 16, 2, true);
    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach(&ev, self), 0);
    fdev_count(fd, 0, RAW_CYCLES, 10);
    calls = fake_thread_nr_calls();
    assert_int_equal(perfmon_event_read(&ev), 10);

    /* Wrapped to just past the last fold: the NMI settles it mid-read. */
    fdev_count(fd, 0, RAW_CYCLES, 65536 + 5);
    fd->nmi_in_read = true;
    assert_int_equal(perfmon_event_read(&ev), 65551);
    assert_true(fd->nmi_result);

    /*
     * Read 3000 past the last fold (in place), then the counter moves on
     * 62636 and wraps before the NMI.
     */
    fdev_count(fd, 0, RAW_CYCLES, 3000);
    fd->nmi_in_read = true;
    fd->nmi_advance = 62636;
    assert_int_equal(perfmon_event_read(&ev), 65551 + 65636);
    assert_true(fd->nmi_result);
    assert_int_equal(fake_thread_nr_calls(), calls);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * Another CPU attaches an event to the reading thread while the reader is
 * in the middle of an in-place read: the attach's section runs on the
 * reader's CPU and, hit by an overflow NMI itself, folds a wrap the reader
 * had not seen.  The reader must notice and start over.
 */
static struct perfmon_event section_event;

static void
section_attach_from_cpu1(void)
{
    fdevs[0].nmi_in_read = true;
    fake_cpu_set_id(1);
    init_ok(&section_event, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach(&section_event, self), 0);
    fake_cpu_set_id(0);
}

static void
test_local_read_hit_by_section(void **state)
{
    struct perfmon_event ev, cpu0;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 16, 2, true);
    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&cpu0, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach(&ev, self), 0);
    assert_int_equal(perfmon_event_attach_cpu(&cpu0, 0), 0);
    fdev_count(fd, 0, RAW_CYCLES, 10);
    assert_int_equal(perfmon_event_read(&ev), 10);

    fdev_count(fd, 0, RAW_CYCLES, 65536 + 5);
    fd->intr_in_read = section_attach_from_cpu1;
    assert_int_equal(perfmon_event_read(&ev), 65551);
    assert_true(fd->nmi_result);
    assert_int_equal(fake_thread_nr_remote_calls(), 1);
    assert_int_equal(perfmon_event_read(&cpu0), 65551);
    assert_int_equal(perfmon_event_read(&section_event), 0);

    /* The same for a CPU event. */
    assert_int_equal(perfmon_event_detach(&section_event), 0);
    fdev_count(fd, 0, RAW_CYCLES, 65536 + 7);
    fd->intr_in_read = section_attach_from_cpu1;
    assert_int_equal(perfmon_event_read(&cpu0), 65551 + 65543);
    assert_int_equal(perfmon_event_read(&ev), 65551 + 65543);
    assert_int_equal(perfmon_event_read(&section_event), 0);

    assert_int_equal(perfmon_event_detach(&section_event), 0);
    assert_int_equal(perfmon_event_detach(&cpu0), 0);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

static void
test_thread_exit_while_monitored(void **state)
{
    struct perfmon_event ev;
    struct thread *t = fake_thread_create("t");
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_USER);
    assert_int_equal(perfmon_event_attach(&ev, t), 0);
    fake_thread_switch(3, t);
    fdev_count(fd, 3, RAW_CYCLES, 40);

    /* The creator drops its reference; the event's keeps t alive. */
    fake_thread_exit(t);
    thread_unref(t);
    assert_int_equal(t->nr_refs, 1);
    assert_int_equal(fd->nr_stop, 1);
    fdev_count(fd, 3, RAW_CYCLES, 1000);
    assert_int_equal(perfmon_event_read(&ev), 40);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(t->nr_refs, 0);
    assert_int_equal(perfmon_event_read(&ev), 40);
    fdev_assert_idle(fd);
}

static void
test_thread_attached_while_running_elsewhere(void **state)
{
    struct perfmon_event a, b;
    struct thread *t = fake_thread_create("t");
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    init_ok(&a, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&b, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);

    /* t runs on CPU 2 without events: the switch in loaded nothing. */
    fake_thread_switch(2, t);
    fdev_count(fd, 2, RAW_CYCLES, 11);
    assert_int_equal(perfmon_event_attach(&a, t), 0);
    assert_int_equal(fake_thread_nr_remote_calls(), 1);
    fdev_count(fd, 2, RAW_CYCLES, 5);
    assert_int_equal(perfmon_event_attach(&b, t), 0);
    fdev_count(fd, 2, RAW_INSNS, 6);
    fdev_count(fd, 2, RAW_CYCLES, 1);
    assert_int_equal(perfmon_event_read(&a), 6);
    assert_int_equal(perfmon_event_read(&b), 6);

    /* Sleeping: both slots unloaded, the counts stay. */
    fake_thread_switch(2, NULL);
    assert_int_equal(t->perfmon_td.loaded_mask, 0);
    assert_int_equal(fd->nr_start, fd->nr_stop);
    assert_int_equal(perfmon_event_detach(&a), 0);
    assert_int_equal(perfmon_event_read(&a), 6);
    assert_int_equal(perfmon_event_read(&b), 6);
    assert_int_equal(perfmon_event_detach(&b), 0);
}

/* ---- wraps -------------------------------------------------------------- */

/*
 * Count total events on a CPU event and a thread event at a device width,
 * in steps below one period, folding by the poll timer (poll mode) or by
 * overflow NMIs (interrupt mode) between steps.  The counters are taken
 * close to their top first, to wrap early.
 */
static void
check_wraps(unsigned int width, bool intr, uint64_t step, unsigned int steps)
{
    struct perfmon_event cpu_ev, thr_ev;
    struct thread *t = fake_thread_create("t");
    struct perfmon_dev_info info;
    struct fdev *fd;
    uint64_t total = 0, before;

    fd = fdev_add(0, width, 4, intr);
    assert_int_equal(perfmon_dev_get_info(&fd->dev, &info), 0);
    init_ok(&cpu_ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&thr_ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&cpu_ev, 2), 0);
    fake_thread_switch(2, t);
    assert_int_equal(perfmon_event_attach(&thr_ev, t), 0);
    fdev_count(fd, 2, RAW_CYCLES, fdev_mask(fd) - 2);
    total = fdev_mask(fd) - 2;
    assert_int_equal(perfmon_event_read(&cpu_ev), total);
    before = syscnt_value("perfmon_nr_overflows/2");

    for (unsigned int i = 0; i < steps; i++) {
        fdev_count(fd, 2, RAW_CYCLES, step);
        total += step;

        if (intr) {
            if (fd->status[2] != 0) {
                assert_true(fdev_nmi(fd, 2));
            }
        } else {
            fake_clock_advance_ms(info.poll_ms);
            assert_int_equal(fake_timer_run_due(), 1);
        }

        /* Every few steps, a read folds too. */
        if (i % 3 == 0) {
            assert_int_equal(perfmon_event_read(&cpu_ev), total);
        }
    }

    assert_int_equal(perfmon_event_read(&cpu_ev), total);
    assert_int_equal(perfmon_event_read(&thr_ev), total);
    assert_true(fd->wraps[2] >= steps / 4);
    assert_int_equal(syscnt_value("perfmon_nr_overflows/2") - before,
                     fd->wraps[2]);
    assert_int_equal(perfmon_event_detach(&thr_ev), 0);
    assert_int_equal(perfmon_event_detach(&cpu_ev), 0);
    assert_int_equal(perfmon_event_read(&cpu_ev), total);
}

static void
test_wrap_width16_poll(void **state)
{
    (void)state;
    /* 200 wraps of a 16-bit counter, 65000 events per poll. */
    check_wraps(16, false, 65000, 200);
}

static void
test_wrap_width16_intr(void **state)
{
    (void)state;
    check_wraps(16, true, 65535, 300);
}

static void
test_wrap_width32(void **state)
{
    (void)state;
    check_wraps(32, false, 3000000000ULL, 50);
    setup(NULL);
    check_wraps(32, true, UINT32_MAX, 50);
}

static void
test_wrap_width48(void **state)
{
    (void)state;
    check_wraps(48, false, (1ULL << 47) + 12345, 20);
    setup(NULL);
    check_wraps(48, true, (1ULL << 48) - 1, 20);
}

static void
test_wrap_width64(void **state)
{
    (void)state;
    /* The 64-bit count itself wraps modulo 2^64, as the counter does. */
    check_wraps(64, false, 1ULL << 62, 7);
    setup(NULL);
    check_wraps(64, true, (1ULL << 63) + 1, 3);
}

static void
test_wrap_width1(void **state)
{
    struct perfmon_event ev;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 1, 1, false);
    attach_cycles_cpu(&ev, 0);

    for (unsigned int i = 0; i < 25; i++) {
        fdev_count(fd, 0, RAW_CYCLES, 1);
        assert_int_equal(perfmon_event_read(&ev), i + 1);
    }

    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * With an interrupt, a wrap is caught even when the counter has already
 * gone past its previous value when the core looks (interrupt latency),
 * and is not counted twice when a plain read saw it first.
 */
static void
test_wrap_latency_intr(void **state)
{
    struct perfmon_event ev;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 16, 2, true);
    attach_cycles_cpu(&ev, 1);
    fdev_count(fd, 1, RAW_CYCLES, 10);
    assert_int_equal(perfmon_event_read(&ev), 10);

    /* A full period and 5: the raw value (15) is past the previous one. */
    fdev_count(fd, 1, RAW_CYCLES, 40000);
    fdev_count(fd, 1, RAW_CYCLES, 25541);
    assert_int_equal(fd->status[1], 1);
    assert_true(fdev_nmi(fd, 1));
    assert_int_equal(perfmon_event_read(&ev), 10 + 65541);

    /* A read after the wrap and before its NMI: counted once. */
    fdev_count(fd, 1, RAW_CYCLES, 65530);
    assert_int_equal(perfmon_event_read(&ev), 10 + 65541 + 65530);
    assert_true(fdev_nmi(fd, 1));
    assert_int_equal(perfmon_event_read(&ev), 10 + 65541 + 65530);

    /* A read after the wrap that missed it, then the NMI. */
    fdev_count(fd, 1, RAW_CYCLES, 65536);
    assert_int_equal(perfmon_event_read(&ev), 10 + 65541 + 65530);
    assert_true(fdev_nmi(fd, 1));
    assert_int_equal(perfmon_event_read(&ev), 10 + 65541 + 65530 + 65536);

    /* Not this device's NMI. */
    assert_false(fdev_nmi(fd, 1));
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/* An overflow NMI arriving while the core is folding is deferred to it. */
static void
test_nmi_during_update(void **state)
{
    struct perfmon_event ev;
    struct fdev *fd;
    uint64_t intrs;

    (void)state;
    fd = fdev_add(0, 16, 2, true);
    attach_cycles_cpu(&ev, 0);
    fdev_count(fd, 0, RAW_CYCLES, 10);
    assert_int_equal(perfmon_event_read(&ev), 10);

    intrs = syscnt_value("perfmon_nr_intrs/0");
    fdev_count(fd, 0, RAW_CYCLES, 65536 + 5);
    fd->nmi_in_read = true;
    assert_int_equal(perfmon_event_read(&ev), 10 + 65541);
    assert_true(fd->nmi_result);
    assert_int_equal(syscnt_value("perfmon_nr_intrs/0"), intrs + 1);
    assert_int_equal(syscnt_value("perfmon_nr_overflows/0"), 1);

    /* The same from a thread event loaded by a context switch. */
    struct perfmon_event tev;
    struct thread *t = fake_thread_create("t");

    init_ok(&tev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach(&tev, t), 0);
    fake_thread_switch(1, t);
    fdev_count(fd, 1, RAW_CYCLES, 3);
    fake_thread_switch(1, NULL);
    fake_thread_switch(1, t);
    fdev_count(fd, 1, RAW_CYCLES, 65536);
    fd->nmi_in_read = true;
    fake_thread_switch(1, NULL);        /* the unload is interrupted */
    assert_true(fd->nmi_result);
    assert_int_equal(perfmon_event_read(&tev), 65539);
    assert_int_equal(perfmon_event_detach(&tev), 0);

    /*
     * The NMI is for another counter than the one being read.  During an
     * in-place read (ev far from its last fold: the read then folds) it
     * folds at once; during a section (a detach) it is left pending, and
     * folded when the core leaves the section.
     */
    struct perfmon_event other, probe;

    init_ok(&other, PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    init_ok(&probe, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&other, 0), 0);
    assert_int_equal(perfmon_event_attach_cpu(&probe, 0), 0);
    fdev_count(fd, 0, RAW_BRANCH, 4);
    assert_int_equal(perfmon_event_read(&other), 4);
    fdev_count(fd, 0, RAW_BRANCH, 65536 + 1);
    fdev_count(fd, 0, RAW_CYCLES, 5000);
    fd->nmi_in_read = true;
    assert_int_equal(perfmon_event_read(&ev), 10 + 65541 + 5000);
    assert_true(fd->nmi_result);
    assert_int_equal(syscnt_value("perfmon_nr_overflows/0"), 2);
    assert_int_equal(perfmon_event_read(&other), 4 + 65537);

    fdev_count(fd, 0, RAW_BRANCH, 65536 + 2);
    fd->nmi_in_read = true;
    assert_int_equal(perfmon_event_detach(&probe), 0);
    assert_int_equal(perfmon_event_read(&probe), 5000);
    assert_true(fd->nmi_result);
    assert_int_equal(syscnt_value("perfmon_nr_overflows/0"), 3);
    assert_int_equal(perfmon_event_read(&other), 4 + 65537 + 65538);
    assert_int_equal(perfmon_event_detach(&other), 0);

    /*
     * The counter wraps just after the core read it, and the NMI comes
     * before the core used the value: the core must finish with what it
     * read, then fold the wrap; folding inside the NMI would mix both.
     */
    fdev_count(fd, 0, RAW_CYCLES, 65500);
    assert_int_equal(perfmon_event_read(&ev), 10 + 65541 + 5000 + 65500);
    fd->nmi_in_read = true;
    fd->nmi_advance = 100;
    assert_int_equal(perfmon_event_read(&ev),
                     10 + 65541 + 5000 + 65500 + 100);
    assert_true(fd->nmi_result);
    assert_int_equal(perfmon_event_read(&ev),
                     10 + 65541 + 5000 + 65500 + 100);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/* A sampling event of raw (period 1000) on cpu, its buffer in *sbufp. */
static void
attach_sampling_cpu(struct perfmon_event *ev, struct perfmon_sampling *s,
                    struct perfmon_sbuf **sbufp, uint64_t id, unsigned int cpu)
{
    assert_int_equal(perfmon_sbuf_create(sbufp, 4096), 0);
    *s = (struct perfmon_sampling){ .period = 1000, .id = 1, .sbuf = *sbufp };
    init_ok(ev, id, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_set_sampling(ev, s), 0);
    assert_int_equal(perfmon_event_attach_cpu(ev, cpu), 0);
}

/*
 * A section (a read of a CPU event from another CPU) is hit by an
 * overflow interrupt of a sampling counter, left pending; the section's
 * exit folds it, and a second interrupt of that counter lands in that
 * fold's read, the counter 100 past it: it only records its overflow, and
 * the fold takes it after: two folds (and re-arms) of one slot never
 * interleave, and every count is exact.
 */
static void
test_nmi_in_exit_fold(void **state)
{
    struct perfmon_sampling s;
    struct perfmon_sbuf *sbuf;
    struct perfmon_event a, b;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 16, 2, true);
    attach_cycles_cpu(&a, 1);
    attach_sampling_cpu(&b, &s, &sbuf, PERFMON_EV_BRANCH, 1);
    fdev_count(fd, 1, RAW_BRANCH, 10);
    assert_true(perfmon_event_read(&b) == 10);

    /* a has counter 0, b counter 1: a's read is the section's first. */
    fdev_script_nmi(fd, FDEV_STEP_READ, 1, 1, 65536);
    fdev_script_nmi(fd, FDEV_STEP_READ, 2, -1, 65536 + 100);
    assert_true(perfmon_event_read(&a) == 0);
    fdev_script_done(fd);
    assert_true(perfmon_event_read(&b) == 10 + 2 * 65536 + 100);
    fdev_count(fd, 1, RAW_BRANCH, 999);
    assert_int_equal(fd->status[1], 0);
    fdev_count(fd, 1, RAW_BRANCH, 1);
    assert_true(fdev_nmi(fd, 1));
    assert_true(perfmon_event_read(&b) == 10 + 2 * 65536 + 100 + 1000);
    assert_int_equal(perfmon_event_detach(&a), 0);
    assert_int_equal(perfmon_event_detach(&b), 0);
    perfmon_sbuf_destroy(sbuf);
}

/*
 * The overflow handler called outside an NMI (the soft and step PMUs'
 * deadline calls) is hit by an NMI of the same sampling counter in the
 * middle of its fold's read, the counter 100 past it: the NMI only
 * records its overflow, which the handler folds after its own.
 */
static void
test_nmi_in_deadline_fold(void **state)
{
    struct perfmon_sampling s;
    struct perfmon_sbuf *sbuf;
    struct perfmon_event a;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 16, 2, true);
    attach_sampling_cpu(&a, &s, &sbuf, PERFMON_EV_CYCLE, 1);
    fdev_count(fd, 1, RAW_CYCLES, 10);
    assert_true(perfmon_event_read(&a) == 10);
    fdev_count(fd, 1, RAW_CYCLES, 65536);
    fdev_script_nmi(fd, FDEV_STEP_READ, 1, -1, 65536 + 100);
    assert_true(fdev_nmi(fd, 1));
    fdev_script_done(fd);
    assert_true(perfmon_event_read(&a) == 10 + 2 * 65536 + 100);
    fdev_count(fd, 1, RAW_CYCLES, 999);
    assert_int_equal(fd->status[1], 0);
    fdev_count(fd, 1, RAW_CYCLES, 1);
    assert_true(fdev_nmi(fd, 1));
    assert_true(perfmon_event_read(&a) == 10 + 2 * 65536 + 100 + 1000);
    assert_int_equal(perfmon_event_detach(&a), 0);
    perfmon_sbuf_destroy(sbuf);
}

/*
 * A lock-free read of a sampling CPU event of the reader's CPU is hit,
 * just after its device read, by the counter's overflow interrupt, which
 * folds and arms the counter again: the value read before it does not go
 * with the state after it (it would count 980 events twice); the read
 * starts over.
 */
static void
test_local_read_hit_by_rearm(void **state)
{
    struct perfmon_sampling s;
    struct perfmon_sbuf *sbuf;
    struct perfmon_event a;
    struct fdev *fd;
    unsigned int calls;

    (void)state;
    fd = fdev_add(0, 16, 2, true);
    attach_sampling_cpu(&a, &s, &sbuf, PERFMON_EV_CYCLE, 0);
    fdev_count(fd, 0, RAW_CYCLES, 990);
    calls = fake_xcall_nr_on(0);
    fdev_script_nmi(fd, FDEV_STEP_READ, 1, -1, 20);
    assert_true(perfmon_event_read(&a) == 1010);
    fdev_script_done(fd);
    assert_int_equal(fake_xcall_nr_on(0), calls);
    assert_true(perfmon_event_read(&a) == 1010);
    assert_int_equal(perfmon_event_detach(&a), 0);
    perfmon_sbuf_destroy(sbuf);
}

/* A multiplexing turn, as the clock's interrupt takes it on this CPU. */
static void
rotate_here(void)
{
    perfmon_rotate_local();
}

/*
 * A lock-free read of a CPU event of the reader's CPU is hit, just after
 * its device read, by a multiplexing turn that moves the event to another
 * counter: the value read from the old counter does not go with the new
 * counter's state (it would count the 100 events twice); the read starts
 * over.
 */
static void
test_local_read_hit_by_turn(void **state)
{
    static const uint64_t ids[] = {
        PERFMON_EV_CYCLE, PERFMON_EV_INSTRUCTION, PERFMON_EV_BRANCH,
    };
    struct perfmon_event evs[3];
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 2, true);

    for (unsigned int i = 0; i < 3; i++) {
        init_ok(&evs[i], ids[i], PERFMON_EF_KERN);
        assert_int_equal(perfmon_event_attach_cpu(&evs[i], 0), 0);
    }

    fdev_count(fd, 0, RAW_CYCLES, 100);
    fake_cpu_advance_tsc(1000);
    fd->intr_in_read = rotate_here;
    assert_true(perfmon_event_read(&evs[0]) == 100);
    assert_null(fd->intr_in_read);
    assert_true(perfmon_event_read(&evs[0]) == 100);

    for (unsigned int i = 0; i < 3; i++) {
        assert_int_equal(perfmon_event_detach(&evs[i]), 0);
    }
}

/* ---- poll timer --------------------------------------------------------- */

static void
test_poll_timer_lifecycle(void **state)
{
    struct perfmon_event a, b, c;
    struct perfmon_dev_info info;
    struct fdev *poll, *intr;

    (void)state;
    intr = fdev_add(0, 48, 4, true);
    poll = fdev_add(1, 32, 4, false);
    assert_int_equal(perfmon_dev_get_info(&poll->dev, &info), 0);
    assert_true(info.poll_ms >= 20);

    /* An interrupt-driven device arms no timer. */
    init_ok(&a, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&a, 1), 0);
    fake_clock_advance_ms(100000);
    assert_int_equal(fake_timer_run_due(), 0);

    /* The first counter of a polled device arms it, once. */
    init_ok(&b, PERFMON_EV_TEST, PERFMON_EF_KERN);
    init_ok(&c, PERFMON_EV_XCALL, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&b, 3), 0);
    assert_int_equal(perfmon_event_attach_cpu(&c, 3), 0);
    fake_clock_advance_ms(info.poll_ms - 1);
    assert_int_equal(fake_timer_run_due(), 0);
    fake_clock_advance_ms(1);

    /* It polls the CPUs where the device counts, and only those. */
    fake_xcall_reset();
    assert_int_equal(fake_timer_run_due(), 1);
    assert_int_equal(fake_xcall_nr_on(3), 1);
    assert_int_equal(fake_xcall_nr_on(1), 0);
    assert_int_equal(fake_xcall_nr_on(0) + fake_xcall_nr_on(2), 0);
    assert_int_equal(syscnt_value("perfmon_nr_polls/3"), 1);
    assert_int_equal(syscnt_value("perfmon_nr_polls/1"), 0);

    /* While counters are allocated, it comes back. */
    assert_int_equal(perfmon_event_detach(&b), 0);
    fake_clock_advance_ms(info.poll_ms);
    assert_int_equal(fake_timer_run_due(), 1);
    assert_int_equal(syscnt_value("perfmon_nr_polls/3"), 2);

    /* Then stops after the last one is released... */
    assert_int_equal(perfmon_event_detach(&c), 0);
    fake_clock_advance_ms(info.poll_ms);
    assert_int_equal(fake_timer_run_due(), 1);
    assert_int_equal(syscnt_value("perfmon_nr_polls/3"), 2);
    fake_clock_advance_ms(info.poll_ms * 10);
    assert_int_equal(fake_timer_run_due(), 0);

    /* ...and starts again with the next. */
    assert_int_equal(perfmon_event_attach_cpu(&b, 0), 0);
    fake_clock_advance_ms(info.poll_ms);
    assert_int_equal(fake_timer_run_due(), 1);
    assert_int_equal(syscnt_value("perfmon_nr_polls/0"), 1);
    assert_int_equal(perfmon_event_detach(&b), 0);
    assert_int_equal(perfmon_event_detach(&a), 0);
    (void)intr;
}

static void
test_poll_given_interval_with_intr(void **state)
{
    struct perfmon_event ev;
    struct fdev *fd;

    (void)state;
    fd = fdev_init(1, 16, 4, true);
    fd->dev.poll_ms = 5;
    assert_int_equal(perfmon_register(&fd->dev), 0);
    init_ok(&ev, PERFMON_EV_TASK_CLOCK, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 2), 0);
    fdev_count(fd, 2, 0x100 + PERFMON_EV_TASK_CLOCK, 60000);
    fake_clock_advance_ms(5);
    assert_int_equal(fake_timer_run_due(), 1);
    fdev_count(fd, 2, 0x100 + PERFMON_EV_TASK_CLOCK, 60000);
    fake_clock_advance_ms(5);
    assert_int_equal(fake_timer_run_due(), 1);
    fd->status[2] = 0;          /* this wrap never raises an NMI */
    assert_int_equal(perfmon_event_read(&ev), 120000);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/* ---- several devices ---------------------------------------------------- */

static void
test_several_devices(void **state)
{
    struct perfmon_event cyc, tst, raw_b, tst_thr;
    struct thread *t = fake_thread_create("t");
    struct fdev *a, *b;

    (void)state;
    a = fdev_add(0, 48, 2, true);
    b = fdev_add(1, 16, 2, false);

    /* Each generic event goes to the device that counts it. */
    init_ok(&cyc, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&tst, PERFMON_EV_TEST, PERFMON_EF_KERN);
    init_ok(&tst_thr, PERFMON_EV_TEST, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&cyc, 1), 0);
    assert_int_equal(perfmon_event_attach_cpu(&tst, 1), 0);
    assert_int_equal(perfmon_event_attach(&tst_thr, t), 0);
    assert_int_equal(a->nr_counters_calls, 1);
    assert_int_equal(b->nr_counters_calls, 1);

    /* Slots are per device: both devices' first counters are in use. */
    assert_int_equal(cyc.slot, 0);
    assert_int_equal(tst.slot, PERFMON_DEV_MAX_PMCS);

    fake_thread_switch(1, t);
    fdev_count(a, 1, RAW_CYCLES, 1000);
    fdev_count(b, 1, 0x100 + PERFMON_EV_TEST, 17);
    fdev_count(b, 1, RAW_CYCLES, 99);   /* b has no such counter running */
    assert_int_equal(perfmon_event_read(&cyc), 1000);
    assert_int_equal(perfmon_event_read(&tst), 17);
    assert_int_equal(perfmon_event_read(&tst_thr), 17);

    /* Reserving all of one device's counters leaves the other free. */
    init_ok(&raw_b, RAW_OTHER,
            PERFMON_EF_KERN | PERFMON_EF_RAW | PERFMON_EF_PINNED);
    assert_int_equal(perfmon_event_set_dev(&raw_b, &b->dev), 0);
    assert_int_equal(perfmon_event_attach_cpu(&raw_b, 0), 0);
    struct perfmon_event more, pinned;

    init_ok(&pinned, PERFMON_EV_XCALL, PERFMON_EF_KERN | PERFMON_EF_PINNED);
    assert_int_equal(perfmon_event_attach_cpu(&pinned, 0), 0);
    init_ok(&more, PERFMON_EV_NMI, PERFMON_EF_KERN | PERFMON_EF_PINNED);
    assert_int_equal(perfmon_event_attach_cpu(&more, 0), -EAGAIN);
    init_ok(&more, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN | PERFMON_EF_PINNED);
    assert_int_equal(perfmon_event_attach_cpu(&more, 0), 0);

    /* An NMI of one device does not touch the other's counters. */
    assert_false(fdev_nmi(b, 1));
    a->status[1] = 2;               /* a counter not running here */
    assert_true(fdev_nmi(a, 1));
    assert_int_equal(perfmon_event_read(&cyc), 1000);

    assert_int_equal(perfmon_event_detach(&more), 0);
    assert_int_equal(perfmon_event_detach(&pinned), 0);
    assert_int_equal(perfmon_event_detach(&raw_b), 0);
    assert_int_equal(perfmon_event_detach(&tst_thr), 0);
    assert_int_equal(perfmon_event_detach(&tst), 0);
    assert_int_equal(perfmon_event_detach(&cyc), 0);
    fdev_assert_idle(a);
    fdev_assert_idle(b);
}

/*
 * The core passes each counter's mode to the device at start: a hardware
 * driver programs its user/kernel bits from it.
 */
static void
test_mode_flags_reach_device(void **state)
{
    static const unsigned int modes[] = {
        PERFMON_EF_KERN, PERFMON_EF_USER, PERFMON_EF_KERN | PERFMON_EF_USER,
    };
    struct perfmon_event evs[ARRAY_SIZE(modes)];
    struct thread *t = fake_thread_create("t");
    struct perfmon_event thr;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);

    for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
        init_ok(&evs[i], PERFMON_EV_CYCLE, modes[i]);
        assert_int_equal(perfmon_event_attach_cpu(&evs[i], 2), 0);
        assert_true(fd->counters[2][i].running);
        assert_int_equal(fd->counters[2][i].flags, modes[i]);
    }

    /*
     * A thread event's counter, started by the switch hook on CPU 1,
     * where the first counter is free.
     */
    init_ok(&thr, PERFMON_EV_INSTRUCTION, PERFMON_EF_USER);
    assert_int_equal(perfmon_event_attach(&thr, t), 0);
    fake_thread_switch(1, t);
    assert_true(fd->counters[1][0].running);
    assert_int_equal(fd->counters[1][0].flags, PERFMON_EF_USER);
    fake_thread_switch(1, NULL);

    assert_int_equal(perfmon_event_detach(&thr), 0);

    for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
        assert_int_equal(perfmon_event_detach(&evs[i]), 0);
    }
}

/*
 * A wrap seen by a plain fold, then a detach before its NMI: the next
 * user of the slot starts afresh.  A "wrap seen" flag left over would
 * make the NMI of the new run's first wrap, which arrives once the raw
 * value is already past where it started (interrupt latency), add no
 * period.
 */
static void
test_restart_forgets_wrap_seen(void **state)
{
    struct perfmon_event ev;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 16, 2, true);
    attach_cycles_cpu(&ev, 1);
    fdev_count(fd, 1, RAW_CYCLES, 65530);
    assert_int_equal(perfmon_event_read(&ev), 65530);
    fdev_count(fd, 1, RAW_CYCLES, 10);
    assert_int_equal(perfmon_event_read(&ev), 65540);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(fd->status[1], 1);

    /* The device drops the old run's overflow at restart (its contract). */
    attach_cycles_cpu(&ev, 1);
    assert_int_equal(fd->status[1], 0);
    assert_int_equal(ev.slot, 0);
    fdev_count(fd, 1, RAW_CYCLES, 65536 + 5);
    assert_int_equal(fd->status[1], 1);
    assert_true(fdev_nmi(fd, 1));
    assert_int_equal(perfmon_event_read(&ev), 65541);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * A device with the most counters a device may have, registered before
 * another: its slot range ends where the other's begins, and an event of
 * the first never shares the second's counter, even for the same event.
 */
static void
test_full_device_beside_another(void **state)
{
    struct perfmon_event on_a, on_b;
    struct fdev *a, *b;

    (void)state;
    a = fdev_add(0, 48, PERFMON_DEV_MAX_PMCS, true);
    b = fdev_add(2, 48, 2, true);
    init_ok(&on_b, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_set_dev(&on_b, &b->dev), 0);
    assert_int_equal(perfmon_event_attach_cpu(&on_b, 0), 0);
    assert_int_equal(on_b.slot, PERFMON_DEV_MAX_PMCS);

    init_ok(&on_a, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_set_dev(&on_a, &a->dev), 0);
    assert_int_equal(perfmon_event_attach_cpu(&on_a, 0), 0);
    assert_int_equal(a->nr_counters_calls, 1);
    assert_ptr_equal(on_a.dev, &a->dev);
    assert_true(on_a.slot < PERFMON_DEV_MAX_PMCS);

    fdev_count(a, 0, RAW_CYCLES, 100);
    fdev_count(b, 0, RAW_CYCLES, 7);
    assert_int_equal(perfmon_event_read(&on_a), 100);
    assert_int_equal(perfmon_event_read(&on_b), 7);
    assert_int_equal(perfmon_event_detach(&on_a), 0);
    assert_int_equal(perfmon_event_detach(&on_b), 0);
    fdev_assert_idle(a);
    fdev_assert_idle(b);
}

static void
test_overflow_intr_not_ours(void **state)
{
    struct fdev *poll;

    (void)state;
    poll = fdev_add(1, 32, 2, false);
    fdev_init(0, 48, 2, true);              /* never registered */
    assert_false(fdev_nmi(&fdevs[0], 0));
    assert_false(fdev_nmi(poll, 0));
    assert_false(dev_nmi(NULL, 0));
}

/* ---- interrupt callbacks ------------------------------------------------ */

struct cb_state {
    unsigned int calls;
    struct perfmon_dev *dev;
    unsigned int cpu;
    uint64_t mask;
    struct trap_frame *frame;
    bool poisoned;
    struct fdev *fd;                    /* if set: its reads at the call */
    unsigned int nr_read;
};

static void
cb_fn(struct perfmon_dev *dev, unsigned int cpu, uint64_t mask,
      struct trap_frame *frame, void *arg)
{
    struct cb_state *s = arg;

    assert_false(s->poisoned);
    assert_false(cpu_intr_enabled());
    assert_int_equal(cpu, cpu_id());
    s->calls++;
    s->dev = dev;
    s->cpu = cpu;
    s->mask = mask;
    s->frame = frame;

    if (s->fd != NULL) {
        s->nr_read = s->fd->nr_read;
    }
}

static void
test_intr_callbacks(void **state)
{
    struct cb_state s1 = { 0 }, s2 = { 0 };
    struct perfmon_event ev;
    unsigned int nr_read;
    struct fdev *fd;
    int h1, h2;

    (void)state;
    fd = fdev_add(0, 16, 2, true);
    assert_int_equal(perfmon_intr_register(NULL, &s1), -EINVAL);
    h1 = perfmon_intr_register(cb_fn, &s1);
    h2 = perfmon_intr_register(cb_fn, &s2);
    assert_true(h1 >= 0 && h2 >= 0 && h1 != h2);

    attach_cycles_cpu(&ev, 2);
    fdev_count(fd, 2, RAW_CYCLES, 65540);
    s1.fd = fd;
    nr_read = fd->nr_read;
    assert_true(fdev_nmi(fd, 2));

    /*
     * After the device reported the mask, with the frame, and before the
     * core's fold reads the counter: branch records that do not freeze on
     * the interrupt would otherwise fill with the fold's own branches.
     */
    assert_int_equal(s1.nr_read, nr_read);
    assert_true(fd->nr_read > nr_read);
    assert_int_equal(s1.calls, 1);
    assert_ptr_equal(s1.dev, &fd->dev);
    assert_int_equal(s1.cpu, 2);
    assert_int_equal(s1.mask, 1);
    assert_ptr_equal(s1.frame, &test_frame);
    assert_int_equal(s2.calls, 1);
    assert_int_equal(perfmon_event_read(&ev), 65540);

    /* No callback for an NMI that is not the PMU's. */
    assert_false(fdev_nmi(fd, 2));
    assert_int_equal(s1.calls, 1);

    assert_int_equal(perfmon_intr_unregister(h1), 0);
    s1.poisoned = true;
    fd->status[3] = 1;
    assert_true(fdev_nmi(fd, 3));
    assert_int_equal(s2.calls, 2);
    assert_int_equal(s2.cpu, 3);
    assert_int_equal(s1.calls, 1);

    /* Bad handles. */
    assert_int_equal(perfmon_intr_unregister(h1), -EINVAL);
    assert_int_equal(perfmon_intr_unregister(-1), -EINVAL);
    assert_int_equal(perfmon_intr_unregister(h2 + PERFMON_MAX_INTR_CALLBACKS),
                     -EINVAL);

    /* A new registration in the freed entry has a new handle. */
    int h3 = perfmon_intr_register(cb_fn, &s2);

    assert_true(h3 >= 0 && h3 != h1);
    assert_int_equal(h3 % PERFMON_MAX_INTR_CALLBACKS,
                     h1 % PERFMON_MAX_INTR_CALLBACKS);
    assert_int_equal(perfmon_intr_unregister(h1), -EINVAL);
    assert_int_equal(perfmon_intr_unregister(h3), 0);
    assert_int_equal(perfmon_intr_unregister(h2), 0);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

static void
test_intr_register_full(void **state)
{
    struct cb_state s = { 0 };
    int handles[PERFMON_MAX_INTR_CALLBACKS];

    (void)state;

    for (int i = 0; i < PERFMON_MAX_INTR_CALLBACKS; i++) {
        handles[i] = perfmon_intr_register(cb_fn, &s);
        assert_true(handles[i] >= 0);
    }

    assert_int_equal(perfmon_intr_register(cb_fn, &s), -ENOSPC);
    assert_int_equal(perfmon_intr_unregister(handles[3]), 0);
    handles[3] = perfmon_intr_register(cb_fn, &s);
    assert_true(handles[3] >= 0);

    for (int i = 0; i < PERFMON_MAX_INTR_CALLBACKS; i++) {
        assert_int_equal(perfmon_intr_unregister(handles[i]), 0);
    }
}

/*
 * Unregister waits for every CPU: each serves an xcall, which it cannot do
 * from inside an NMI handler.  Meanwhile NMIs keep coming and must not run
 * the callback, and the entry cannot be handed out again.
 */
static struct fdev *race_dev;
static unsigned int race_sync_cpus;
static int race_register_result;

static void
race_hook(unsigned int cpu)
{
    struct cb_state other = { 0 };

    race_sync_cpus |= 1U << cpu;
    race_dev->status[cpu] = 1;
    assert_true(fdev_nmi(race_dev, cpu));
    race_register_result = perfmon_intr_register(cb_fn, &other);
}

static void
test_intr_unregister_waits_for_cpus(void **state)
{
    struct cb_state s = { 0 };
    struct cb_state fill = { 0 };
    int h, others[PERFMON_MAX_INTR_CALLBACKS - 1];

    (void)state;
    race_dev = fdev_add(0, 16, 2, true);
    h = perfmon_intr_register(cb_fn, &s);
    assert_true(h >= 0);

    for (int i = 0; i < PERFMON_MAX_INTR_CALLBACKS - 1; i++) {
        others[i] = perfmon_intr_register(cb_fn, &fill);
        assert_true(others[i] >= 0);
    }

    race_sync_cpus = 0;
    fake_xcall_set_hook(race_hook);
    assert_int_equal(perfmon_intr_unregister(h), 0);
    fake_xcall_set_hook(NULL);
    s.poisoned = true;

    assert_int_equal(race_sync_cpus, (1U << NR_CPUS) - 1);
    assert_int_equal(s.calls, 0);
    assert_int_equal(fill.calls, (PERFMON_MAX_INTR_CALLBACKS - 1) * NR_CPUS);
    assert_int_equal(race_register_result, -ENOSPC);

    for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++) {
        race_dev->status[cpu] = 1;
        assert_true(fdev_nmi(race_dev, cpu));
    }

    assert_int_equal(s.calls, 0);

    for (int i = 0; i < PERFMON_MAX_INTR_CALLBACKS - 1; i++) {
        assert_int_equal(perfmon_intr_unregister(others[i]), 0);
    }
}

/* ---- syscnt names ------------------------------------------------------- */

static void
test_syscnt_per_cpu(void **state)
{
    (void)state;

    for (unsigned int cpu = 0; cpu < NR_CPUS; cpu++) {
        char name[SYSCNT_NAME_SIZE];

        snprintf(name, sizeof(name), "perfmon_nr_overflows/%u", cpu);
        assert_int_equal(syscnt_value(name), 0);
        snprintf(name, sizeof(name), "perfmon_nr_intrs/%u", cpu);
        assert_int_equal(syscnt_value(name), 0);
        snprintf(name, sizeof(name), "perfmon_nr_polls/%u", cpu);
        assert_int_equal(syscnt_value(name), 0);
    }

    assert_null(syscnt_lookup("perfmon_nr_overflows/4"));
}

/* ---- perfmon_dev_alloc: counters for a device's self-test ------------- */

/*
 * A counter reserved with perfmon_dev_alloc() is the device's alloc, and
 * no event gets it until perfmon_dev_free(); the errors are alloc's, plus
 * -EINVAL for a bad argument or a device not registered.
 */
/* The device's reason for refusing an event, asked through the core. */
static const char *
why_not_cycles(struct perfmon_dev *dev, uint64_t raw_event)
{
    (void)dev;
    return (raw_event == RAW_CYCLES) ? "cycles are off here" : NULL;
}

static void
test_why_not_and_hw_status(void **state)
{
    struct fdev *fd = fdev_init(0, 48, 4, true);
    bool present = true;

    (void)state;
    fd->ops.why_not = why_not_cycles;
    assert_null(perfmon_dev_why_not(&fd->dev, RAW_CYCLES));
    assert_int_equal(perfmon_register(&fd->dev), 0);
    assert_string_equal(perfmon_dev_why_not(&fd->dev, RAW_CYCLES),
                        "cycles are off here");
    assert_null(perfmon_dev_why_not(&fd->dev, RAW_INSNS));
    assert_null(perfmon_dev_why_not(NULL, RAW_CYCLES));
    fd = fdev_add(2, 48, 4, true);
    assert_null(perfmon_dev_why_not(&fd->dev, RAW_CYCLES));

    assert_string_equal(perfmon_hw_status(&present), "not probed");
    assert_false(present);
    perfmon_set_hw_status(true, "fake: 4 counters");
    assert_string_equal(perfmon_hw_status(NULL), "fake: 4 counters");
    assert_string_equal(perfmon_hw_status(&present), "fake: 4 counters");
    assert_true(present);
}

static void
test_dev_alloc(void **state)
{
    struct perfmon_event a, b;
    unsigned int hw, hw2;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 2, true);
    assert_int_equal(perfmon_dev_alloc(&fd->dev, RAW_CYCLES, PERFMON_EF_KERN,
                                       &hw), 0);
    assert_int_equal(fd->nr_alloc, 1);
    init_ok(&a, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN | PERFMON_EF_PINNED);
    init_ok(&b, PERFMON_EV_BRANCH, PERFMON_EF_KERN | PERFMON_EF_PINNED);
    assert_int_equal(perfmon_event_attach_cpu(&a, 0), 0);
    assert_int_equal(perfmon_event_attach_cpu(&b, 0), -EAGAIN);
    assert_int_equal(perfmon_dev_alloc(&fd->dev, RAW_CYCLES, PERFMON_EF_KERN,
                                       &hw2), -EAGAIN);

    perfmon_dev_free(&fd->dev, hw);
    assert_int_equal(fd->nr_free, 1);
    assert_int_equal(perfmon_event_attach_cpu(&b, 0), 0);

    assert_int_equal(perfmon_dev_alloc(&fd->dev, RAW_UNCOUNTABLE,
                                       PERFMON_EF_KERN, &hw), -ENOENT);
    assert_int_equal(perfmon_dev_alloc(&fd->dev, RAW_REFUSED,
                                       PERFMON_EF_KERN, &hw), -EINVAL);
    assert_int_equal(perfmon_dev_alloc(NULL, RAW_CYCLES, PERFMON_EF_KERN,
                                       &hw), -EINVAL);
    assert_int_equal(perfmon_dev_alloc(&fd->dev, RAW_CYCLES, PERFMON_EF_KERN,
                                       NULL), -EINVAL);
    fdev_init(1, 48, 2, true);
    assert_int_equal(perfmon_dev_alloc(&fdevs[1].dev, RAW_CYCLES,
                                       PERFMON_EF_KERN, &hw), -EINVAL);

    assert_int_equal(perfmon_event_detach(&a), 0);
    assert_int_equal(perfmon_event_detach(&b), 0);
    fdev_assert_idle(fd);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_register_errors, setup),
        cmocka_unit_test_setup(test_named_only, setup),
        cmocka_unit_test_setup(test_register_limits_and_lookup, setup),
        cmocka_unit_test_setup(test_dev_info_and_poll_interval, setup),
        cmocka_unit_test_setup(test_poll_interval_from_width, setup),
        cmocka_unit_test_setup(test_lookup_event, setup),
        cmocka_unit_test_setup(test_event_init_errors, setup),
        cmocka_unit_test_setup(test_attach_errors, setup),
        cmocka_unit_test_setup(test_set_dev, setup),
        cmocka_unit_test_setup(test_misuse_asserted, setup),
        cmocka_unit_test_setup(test_sharing_and_release, setup),
        cmocka_unit_test_setup(test_foreach_many_users, setup),
        cmocka_unit_test_setup(test_eagain_then_success, setup),
        cmocka_unit_test_setup(test_eagain_from_device, setup),
        cmocka_unit_test_setup(test_cpu_event_counts_its_cpu, setup),
        cmocka_unit_test_setup(test_thread_event_switches_and_migrations,
                               setup),
        cmocka_unit_test_setup(test_thread_event_self, setup),
        cmocka_unit_test_setup(test_switch_keeps_shared_counters, setup),
        cmocka_unit_test_setup(test_local_read_folds_far_counters, setup),
        cmocka_unit_test_setup(test_own_read_hit_by_nmi, setup),
        cmocka_unit_test_setup(test_local_read_hit_by_section, setup),
        cmocka_unit_test_setup(test_thread_exit_while_monitored, setup),
        cmocka_unit_test_setup(test_thread_attached_while_running_elsewhere,
                               setup),
        cmocka_unit_test_setup(test_wrap_width16_poll, setup),
        cmocka_unit_test_setup(test_wrap_width16_intr, setup),
        cmocka_unit_test_setup(test_wrap_width32, setup),
        cmocka_unit_test_setup(test_wrap_width48, setup),
        cmocka_unit_test_setup(test_wrap_width64, setup),
        cmocka_unit_test_setup(test_wrap_width1, setup),
        cmocka_unit_test_setup(test_wrap_latency_intr, setup),
        cmocka_unit_test_setup(test_nmi_during_update, setup),
        cmocka_unit_test_setup(test_nmi_in_exit_fold, setup),
        cmocka_unit_test_setup(test_nmi_in_deadline_fold, setup),
        cmocka_unit_test_setup(test_local_read_hit_by_rearm, setup),
        cmocka_unit_test_setup(test_local_read_hit_by_turn, setup),
        cmocka_unit_test_setup(test_poll_timer_lifecycle, setup),
        cmocka_unit_test_setup(test_poll_given_interval_with_intr, setup),
        cmocka_unit_test_setup(test_several_devices, setup),
        cmocka_unit_test_setup(test_mode_flags_reach_device, setup),
        cmocka_unit_test_setup(test_restart_forgets_wrap_seen, setup),
        cmocka_unit_test_setup(test_full_device_beside_another, setup),
        cmocka_unit_test_setup(test_overflow_intr_not_ours, setup),
        cmocka_unit_test_setup(test_intr_callbacks, setup),
        cmocka_unit_test_setup(test_intr_register_full, setup),
        cmocka_unit_test_setup(test_intr_unregister_waits_for_cpus, setup),
        cmocka_unit_test_setup(test_syscnt_per_cpu, setup),
        cmocka_unit_test_setup(test_dev_alloc, setup),
        cmocka_unit_test_setup(test_why_not_and_hw_status, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
