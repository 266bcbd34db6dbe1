/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the core's side of branch stacks (kern/perfmon/perfmon_branch.c
 * and its hooks in kern/perfmon/perfmon.c and kern/perfmon/perfmon_pmc.c), against the
 * fake devices of fdev.c and a fake branch-record driver whose start
 * registers an overflow-interrupt callback that hands the core a branch
 * stack, and whose stop unregisters it: the driver runs only between the
 * first event asking for branches and the last; one filter at a time;
 * every refusal (no driver, the driver's check, another filter, a failed
 * start, a bad filter) leaves nothing allocated; samples carry the stack
 * of their own interrupt and none once the driver stopped; the switch hook
 * tells the driver when a thread recording branches comes in, and only
 * then; inherited children do not count as users; registration errors.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>
#include <ucontext.h>
#include <cmocka.h>

#include "fakes/fake_kmem.h"
#include "fakes/fake_smp.h"
#include "fdev.h"
#include "kern/error.h"
#include "kern/perfmon.h"
#include "kern/perfmon_ring.h"

#define FILTER_ANY  (PERFMON_BRF_ANY | PERFMON_BRF_MODE)
#define FILTER_COND (PERFMON_BRF_COND | PERFMON_BRF_KERN)
#define FIELDS      (PERFMON_SF_IP | PERFMON_SF_CPU | PERFMON_SF_BRANCH)

static struct perfmon_sbuf *sbuf;
static uint64_t rec_buf[PERFMON_RING_MAX_REC / 8];

/* ---- the fake driver ---------------------------------------------------- */

/*
 * What the fake driver saw.  The stack it hands over is {cpu, seq} in
 * every entry's from and to, seq counting its interrupts.
 */
static struct {
    unsigned int nr_start, nr_stop, nr_sched_in;
    unsigned int filter;                /* of the last start */
    int start_error;                    /* the next start fails with it */
    const struct perfmon_dev *refused;  /* check refuses it */
    int handle;                         /* the callback's, -1: none */
    unsigned int seq;
    unsigned int nr_calls;
    bool silent;                        /* the callback hands over none */
    int (*on_start)(unsigned int filter);   /* the next start, instead */
} drv_state;

static void
drv_intr(struct perfmon_dev *dev, unsigned int cpu, uint64_t mask,
         struct trap_frame *frame, void *arg)
{
    struct perfmon_branch stack[3];

    (void)dev;
    (void)mask;
    (void)frame;
    (void)arg;
    drv_state.seq++;
    drv_state.nr_calls++;

    if (drv_state.silent) {
        return;
    }

    for (unsigned int i = 0; i < 3; i++) {
        stack[i] = (struct perfmon_branch){
            .from = cpu * 1000 + drv_state.seq,
            .to = cpu * 1000 + drv_state.seq,
            .flags = (i == 1) ? PERFMON_BR_MISPRED : PERFMON_BR_PREDICTED,
        };
    }

    perfmon_intr_set_branches(stack, 3);
}

static const char *
drv_check(const struct perfmon_dev *dev, unsigned int filter)
{
    (void)filter;
    return (dev != NULL && dev == drv_state.refused)
           ? "the fake driver refuses this device" : NULL;
}

static int
drv_start(unsigned int filter)
{
    int error = drv_state.start_error;

    if (drv_state.on_start != NULL) {
        return drv_state.on_start(filter);
    }

    drv_state.nr_start++;
    drv_state.start_error = 0;

    if (error) {
        return error;
    }

    drv_state.filter = filter;
    drv_state.handle = perfmon_intr_register(drv_intr, NULL);
    assert_true(drv_state.handle >= 0);
    return 0;
}

static void
drv_stop(void)
{
    drv_state.nr_stop++;
    assert_int_equal(perfmon_intr_unregister(drv_state.handle), 0);
    drv_state.handle = -1;
}

static void
drv_sched_in(void)
{
    drv_state.nr_sched_in++;
}

static const struct perfmon_branch_ops drv_ops = {
    .check = drv_check,
    .start = drv_start,
    .stop = drv_stop,
    .sched_in = drv_sched_in,
};

static const struct perfmon_branch_driver drv = {
    .name = "fake",
    .desc = "fake branch records",
    .depth = 3,
    .filters = PERFMON_BRF_MASK,
    .ops = &drv_ops,
};

/* ---- helpers ------------------------------------------------------------ */

static unsigned int
nr_users(void)
{
    struct perfmon_branch_info info;

    perfmon_branch_get_info(&info);
    return info.nr_users;
}

static int
branch_setup(void **state)
{
    setup(state);
    memset(&drv_state, 0, sizeof(drv_state));
    drv_state.handle = -1;
    sbuf = NULL;
    assert_int_equal(perfmon_sbuf_create(&sbuf, 65536), 0);
    return 0;
}

static int
branch_teardown(void **state)
{
    (void)state;
    assert_int_equal(drv_state.handle, -1);
    assert_int_equal(nr_users(), 0);
    perfmon_sbuf_destroy(sbuf);
    assert_int_equal(fake_kmem_live(), 0);
    return 0;
}

static struct perfmon_sampling
sampling(unsigned int fields, unsigned int filter)
{
    return (struct perfmon_sampling){
        .period = 100, .fields = fields, .id = 9, .sbuf = sbuf,
        .branch_filter = filter,
    };
}

static void
sampling_event(struct perfmon_event *ev, const struct perfmon_sampling *s)
{
    init_ok(ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_set_sampling(ev, s), 0);
}

/* One sample's worth of cycles on cpu, its interrupt delivered. */
static void
one_sample(struct fdev *fd, unsigned int cpu)
{
    fdev_count(fd, cpu, RAW_CYCLES, 100);
    assert_true(fdev_nmi(fd, cpu));
}

/* The last sample of cpu's ring (there must be one), decoded. */
static struct perfmon_sample
last_sample(unsigned int cpu)
{
    struct perfmon_sample s = { 0 };
    unsigned int nr = 0;
    size_t size;

    while ((size = perfmon_sbuf_read(sbuf, cpu, rec_buf, sizeof(rec_buf)))
           != 0) {
        assert_int_equal(perfmon_sample_decode(rec_buf, size, &s), 0);
        nr++;
    }

    assert_true(nr > 0);
    return s;
}

/* The record in rec_buf, cut short at every 8 bytes: each prefix refused. */
static void
assert_every_prefix_refused(void)
{
    struct perfmon_rec_hdr *hdr = (void *)rec_buf;
    struct perfmon_sample sample;
    uint32_t full = hdr->size;

    for (size_t len = sizeof(*hdr); len < full; len += 8) {
        hdr->size = (uint32_t)len;
        assert_int_equal(perfmon_sample_decode(rec_buf, len, &sample),
                         -EINVAL);
    }

    hdr->size = full;
}

static void
assert_idle(struct fdev *fd)
{
    struct perfmon_dev_info info;

    assert_int_equal(perfmon_dev_get_info(&fd->dev, &info), 0);
    assert_int_equal(info.nr_pmcs_used, 0);
    assert_int_equal(nr_users(), 0);
}

/* ---- tests -------------------------------------------------------------- */

static void
test_no_driver(void **state)
{
    struct fdev *fd = fdev_add(0, 32, 4, true);
    struct perfmon_sampling s = sampling(FIELDS, FILTER_ANY);
    struct perfmon_branch_info info;
    struct perfmon_event ev;

    (void)state;
    perfmon_branch_get_info(&info);
    assert_string_equal(info.text, "not probed");
    assert_false(info.present);
    perfmon_branch_set_absent("no LBR: the fake says so");
    assert_string_equal(perfmon_branch_why_not(NULL, FILTER_ANY),
                        "no LBR: the fake says so");
    perfmon_branch_get_info(&info);
    assert_string_equal(info.text, "no LBR: the fake says so");

    sampling_event(&ev, &s);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 1), -EOPNOTSUPP);
    assert_int_equal(perfmon_event_attach(&ev, self), -EOPNOTSUPP);
    assert_false(perfmon_event_attached(&ev));
    assert_null(ev.dev);                /* not bound by the failed attaches */
    assert_idle(fd);
}

static void
test_bad_filters(void **state)
{
    static const unsigned int bad[] = {
        0, PERFMON_BRF_ANY, PERFMON_BRF_KERN, PERFMON_BRF_MASK + 1,
        FILTER_ANY | 0x8000,
    };
    struct perfmon_event ev;

    (void)state;
    fdev_add(0, 32, 4, true);
    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct perfmon_sampling s = sampling(FIELDS, bad[i]);

        assert_int_equal(perfmon_event_set_sampling(&ev, &s), -EINVAL);
    }

    /* The filter only matters with the field. */
    struct perfmon_sampling plain = sampling(PERFMON_SF_IP, 0);

    assert_int_equal(perfmon_event_set_sampling(&ev, &plain), 0);
}

/* Started by the first, stopped after the last; one filter at a time. */
static void
test_lifecycle(void **state)
{
    struct fdev *fd = fdev_add(0, 32, 4, true);
    struct perfmon_sampling s = sampling(FIELDS, FILTER_ANY);
    struct perfmon_sampling cond = sampling(FIELDS, FILTER_COND);
    struct perfmon_branch_info info;
    struct perfmon_event a, b, c;

    (void)state;
    assert_int_equal(perfmon_branch_register(&drv), 0);
    perfmon_branch_get_info(&info);
    assert_true(info.present);
    assert_string_equal(info.text, "fake branch records");
    assert_int_equal(info.depth, 3);
    assert_int_equal(info.filters, PERFMON_BRF_MASK);
    assert_null(perfmon_branch_why_not(&fd->dev, FILTER_COND));

    sampling_event(&a, &s);
    sampling_event(&b, &s);
    sampling_event(&c, &cond);
    assert_int_equal(perfmon_event_attach_cpu(&a, 1), 0);
    assert_int_equal(drv_state.nr_start, 1);
    assert_int_equal(drv_state.filter, FILTER_ANY);
    assert_int_equal(perfmon_event_attach_cpu(&b, 2), 0);
    assert_int_equal(drv_state.nr_start, 1);
    perfmon_branch_get_info(&info);
    assert_int_equal(info.nr_users, 2);
    assert_int_equal(info.filter, FILTER_ANY);

    /* Another filter while this one records: refused, nothing kept. */
    assert_non_null(perfmon_branch_why_not(&fd->dev, FILTER_COND));
    assert_null(perfmon_branch_why_not(&fd->dev, FILTER_ANY));
    assert_int_equal(perfmon_event_attach_cpu(&c, 3), -EBUSY);
    assert_false(perfmon_event_attached(&c));
    assert_int_equal(nr_users(), 2);

    assert_int_equal(perfmon_event_detach(&a), 0);
    assert_int_equal(drv_state.nr_stop, 0);
    assert_int_equal(perfmon_event_detach(&b), 0);
    assert_int_equal(drv_state.nr_stop, 1);

    /* Now the other filter may start it again. */
    assert_int_equal(perfmon_event_attach_cpu(&c, 3), 0);
    assert_int_equal(drv_state.nr_start, 2);
    assert_int_equal(drv_state.filter, FILTER_COND);
    assert_int_equal(perfmon_event_detach(&c), 0);
    assert_int_equal(drv_state.nr_stop, 2);

    /* Sampling without branches never starts it. */
    struct perfmon_sampling plain = sampling(PERFMON_SF_IP, 0);

    sampling_event(&a, &plain);
    assert_int_equal(perfmon_event_attach_cpu(&a, 1), 0);
    assert_int_equal(nr_users(), 0);
    assert_int_equal(perfmon_event_detach(&a), 0);
    assert_int_equal(drv_state.nr_start, 2);
    assert_idle(fd);
    assert_int_equal(perfmon_branch_unregister(&drv), 0);
}

/* The driver's own refusal and a failed start leave nothing behind. */
static void
test_refusals(void **state)
{
    struct fdev *fd = fdev_add(0, 32, 4, true);
    struct fdev *other = fdev_add(2, 32, 4, true);
    struct perfmon_sampling s = sampling(FIELDS, FILTER_ANY);
    struct perfmon_event ev;

    (void)state;
    assert_int_equal(perfmon_branch_register(&drv), 0);
    drv_state.refused = &other->dev;
    assert_string_equal(perfmon_branch_why_not(&other->dev, FILTER_ANY),
                        "the fake driver refuses this device");

    sampling_event(&ev, &s);
    assert_int_equal(perfmon_event_set_dev(&ev, &other->dev), 0);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 0), -EOPNOTSUPP);
    assert_int_equal(perfmon_event_attach(&ev, self), -EOPNOTSUPP);
    assert_int_equal(drv_state.nr_start, 0);
    assert_idle(other);

    sampling_event(&ev, &s);
    drv_state.start_error = -ENOSPC;
    assert_int_equal(perfmon_event_attach(&ev, self), -ENOSPC);
    assert_false(perfmon_event_attached(&ev));
    assert_int_equal(drv_state.nr_start, 1);
    assert_idle(fd);

    /* The next try starts it. */
    assert_int_equal(perfmon_event_attach(&ev, self), 0);
    assert_int_equal(drv_state.nr_start, 2);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(drv_state.nr_stop, 1);
    assert_int_equal(perfmon_branch_unregister(&drv), 0);
}

/*
 * Each sample carries the stack of its own interrupt; with the field
 * missing, or once the driver stopped, none.
 */
static void
test_samples_carry_their_stack(void **state)
{
    struct fdev *fd = fdev_add(0, 32, 4, true);
    struct perfmon_sampling s = sampling(FIELDS, FILTER_ANY);
    struct perfmon_sampling plain = sampling(PERFMON_SF_IP | PERFMON_SF_CPU,
                                             0);
    struct perfmon_event ev, ev2;
    struct perfmon_sample sample;

    (void)state;
    assert_int_equal(perfmon_branch_register(&drv), 0);
    sampling_event(&ev, &s);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 1), 0);

    for (unsigned int i = 0; i < 3; i++) {
        one_sample(fd, 1);
        sample = last_sample(1);
        assert_int_equal(sample.nr_branches, 3);
        assert_int_equal(sample.cpu, 1);
        assert_true(sample.branches[0].from == 1000 + drv_state.seq);
        assert_true(sample.branches[2].to == 1000 + drv_state.seq);
        assert_true(sample.branches[1].flags == PERFMON_BR_MISPRED);
    }

    /* rec_buf holds that sample: refused when cut short anywhere. */
    assert_every_prefix_refused();

    /* An event without the field, while the driver runs: no stack. */
    sampling_event(&ev2, &plain);
    assert_int_equal(perfmon_event_attach_cpu(&ev2, 2), 0);
    one_sample(fd, 2);
    sample = last_sample(2);
    assert_int_equal(sample.nr_branches, 0);
    assert_false(sample.fields & PERFMON_SF_BRANCH);
    assert_int_equal(perfmon_event_detach(&ev), 0);

    /* The driver stopped: its callback no longer runs. */
    drv_state.nr_calls = 0;
    one_sample(fd, 2);
    assert_int_equal(drv_state.nr_calls, 0);
    assert_int_equal(perfmon_event_detach(&ev2), 0);
    assert_int_equal(perfmon_branch_unregister(&drv), 0);
}

/*
 * An interrupt in which no callback hands over branches (here the driver
 * has none for it) gives its samples an empty stack, not the last one.
 */
static void
test_no_stack_handed_over(void **state)
{
    struct fdev *fd = fdev_add(0, 32, 4, true);
    struct perfmon_sampling s = sampling(FIELDS, FILTER_ANY);
    struct perfmon_event ev;
    struct perfmon_sample sample;

    (void)state;
    assert_int_equal(perfmon_branch_register(&drv), 0);
    sampling_event(&ev, &s);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 1), 0);
    one_sample(fd, 1);
    assert_int_equal(last_sample(1).nr_branches, 3);
    drv_state.silent = true;
    one_sample(fd, 1);
    sample = last_sample(1);
    assert_true(sample.fields & PERFMON_SF_BRANCH);
    assert_int_equal(sample.nr_branches, 0);
    assert_int_equal(drv_state.nr_calls, 2);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(perfmon_branch_unregister(&drv), 0);
}

/*
 * An NMI of another device landing in an overflow interrupt that is no
 * NMI (a soft PMU's deadline call), while it folds: the nested one's
 * callback hands over its own stack, and the outer interrupt's sample
 * still carries the outer's.
 */
static void
nested_nmi_hook(struct fdev *fd, enum fdev_step step, unsigned int hw_id)
{
    (void)hw_id;

    if (fd == &fdevs[0] && step == FDEV_STEP_READ) {
        fd->step_hook = NULL;
        assert_true(fdev_nmi_here(&fdevs[2], 0, 1ULL << 32));
    }
}

static void
test_nested_interrupt_keeps_stack(void **state)
{
    struct fdev *fd = fdev_add(0, 32, 4, true);
    struct fdev *other = fdev_add(2, 32, 4, true);
    struct perfmon_sampling s = sampling(FIELDS, FILTER_ANY);
    struct perfmon_event ev, counting;
    struct perfmon_sample sample;

    (void)state;
    assert_int_equal(perfmon_branch_register(&drv), 0);
    sampling_event(&ev, &s);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 1), 0);
    init_ok(&counting, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_set_dev(&counting, &other->dev), 0);
    assert_int_equal(perfmon_event_attach_cpu(&counting, 1), 0);

    fd->step_hook = nested_nmi_hook;
    one_sample(fd, 1);
    assert_null(fd->step_hook);
    assert_int_equal(drv_state.nr_calls, 2);
    sample = last_sample(1);
    assert_int_equal(sample.nr_branches, 3);
    assert_true(sample.branches[0].from == 1000 + 1);
    assert_true(perfmon_event_read(&counting) == 1ULL << 32);
    assert_int_equal(perfmon_event_detach(&counting), 0);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(perfmon_branch_unregister(&drv), 0);
}

/*
 * Two first users at once: the second arrives while the first starts the
 * driver (its start runs without the lock), and is a thread of its own
 * here (a ucontext), which runs until it sleeps waiting, then resumes
 * once the first is done.  The driver starts once; both use it.
 */
static ucontext_t main_uc, second_uc;
static char second_stack[256 * 1024];
static struct perfmon_sampling second_sampling;
static struct perfmon_event second_ev;
static int second_error = 1;
static unsigned int second_sleeps;

static void
second_sleep(void)
{
    second_sleeps++;
    assert_int_equal(swapcontext(&second_uc, &main_uc), 0);
}

static void
second_user(void)
{
    sampling_event(&second_ev, &second_sampling);
    second_error = perfmon_event_attach_cpu(&second_ev, 2);
}

static int
start_with_second_user(unsigned int filter)
{
    drv_state.on_start = NULL;
    assert_int_equal(getcontext(&second_uc), 0);
    second_uc.uc_stack.ss_sp = second_stack;
    second_uc.uc_stack.ss_size = sizeof(second_stack);
    second_uc.uc_link = &main_uc;
    makecontext(&second_uc, second_user, 0);
    fake_thread_set_msleep_hook(second_sleep);
    assert_int_equal(swapcontext(&main_uc, &second_uc), 0);
    assert_int_equal(second_sleeps, 1);
    assert_int_equal(second_error, 1);
    return drv_start(filter);
}

static void
test_two_first_users(void **state)
{
    struct fdev *fd = fdev_add(0, 32, 4, true);
    struct perfmon_sampling s = sampling(FIELDS, FILTER_ANY);
    struct perfmon_event ev;

    (void)state;
    assert_int_equal(perfmon_branch_register(&drv), 0);
    second_sampling = s;
    second_error = 1;
    second_sleeps = 0;
    sampling_event(&ev, &s);
    drv_state.on_start = start_with_second_user;
    assert_int_equal(perfmon_event_attach_cpu(&ev, 1), 0);
    assert_int_equal(drv_state.nr_start, 1);
    assert_int_equal(nr_users(), 1);

    /* The second wakes: the start is over, it joins. */
    assert_int_equal(swapcontext(&main_uc, &second_uc), 0);
    fake_thread_set_msleep_hook(NULL);
    assert_int_equal(second_error, 0);
    assert_int_equal(drv_state.nr_start, 1);
    assert_int_equal(nr_users(), 2);

    one_sample(fd, 2);
    assert_int_equal(last_sample(2).nr_branches, 3);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(drv_state.nr_stop, 0);
    assert_int_equal(perfmon_event_detach(&second_ev), 0);
    assert_int_equal(drv_state.nr_stop, 1);
    assert_int_equal(perfmon_branch_unregister(&drv), 0);
}

/* The driver hears of a switch to a thread recording branches only. */
static void
test_sched_in(void **state)
{
    struct fdev *fd = fdev_add(0, 32, 4, true);
    struct perfmon_sampling s = sampling(FIELDS, FILTER_ANY);
    struct perfmon_sampling plain = sampling(PERFMON_SF_IP, 0);
    struct thread *t = fake_thread_create("traced");
    struct thread *u = fake_thread_create("plain");
    struct perfmon_event ev, ev2;

    (void)state;
    assert_int_equal(perfmon_branch_register(&drv), 0);
    sampling_event(&ev, &s);
    sampling_event(&ev2, &plain);
    assert_int_equal(perfmon_event_attach(&ev, t), 0);
    assert_int_equal(perfmon_event_attach(&ev2, u), 0);

    fake_thread_switch(2, u);
    assert_int_equal(drv_state.nr_sched_in, 0);
    fake_thread_switch(2, t);
    assert_int_equal(drv_state.nr_sched_in, 1);
    fake_thread_switch(2, NULL);
    assert_int_equal(drv_state.nr_sched_in, 1);
    fake_thread_switch(2, t);
    assert_int_equal(drv_state.nr_sched_in, 2);

    /* Its samples carry stacks; the other thread's do not. */
    one_sample(fd, 2);
    assert_int_equal(last_sample(2).nr_branches, 3);
    fake_thread_switch(2, u);
    assert_int_equal(drv_state.nr_sched_in, 2);
    one_sample(fd, 2);
    assert_int_equal(last_sample(2).nr_branches, 0);

    fake_thread_switch(2, NULL);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(perfmon_event_detach(&ev2), 0);

    /* Detached: no more. */
    fake_thread_switch(2, t);
    assert_int_equal(drv_state.nr_sched_in, 2);
    fake_thread_switch(2, NULL);
    thread_unref(t);
    thread_unref(u);
    assert_int_equal(perfmon_branch_unregister(&drv), 0);
}

/* An inherited event's children ride on their root. */
static void
test_inherited_children(void **state)
{
    struct perfmon_sampling s = sampling(FIELDS, FILTER_ANY);
    struct thread *child = NULL;
    struct perfmon_event ev;

    (void)state;
    fdev_add(0, 32, 4, true);
    assert_int_equal(perfmon_branch_register(&drv), 0);
    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN | PERFMON_EF_INHERIT);
    assert_int_equal(perfmon_event_set_sampling(&ev, &s), 0);
    assert_int_equal(perfmon_event_attach(&ev, self), 0);
    assert_int_equal(fake_thread_fork(self, "child", &child), 0);
    assert_int_equal(nr_users(), 1);

    fake_thread_switch(1, child);
    assert_int_equal(drv_state.nr_sched_in, 1);
    fake_thread_exit(child);
    assert_int_equal(nr_users(), 1);
    assert_int_equal(drv_state.nr_stop, 0);

    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(drv_state.nr_start, 1);
    assert_int_equal(drv_state.nr_stop, 1);
    thread_unref(child);
    assert_int_equal(perfmon_branch_unregister(&drv), 0);
}

static void
test_register_errors(void **state)
{
    struct perfmon_branch_ops no_stop = drv_ops;
    struct perfmon_branch_driver bad = drv;
    struct perfmon_sampling s = sampling(FIELDS, FILTER_ANY);
    struct perfmon_event ev;

    (void)state;
    fdev_add(0, 32, 4, true);
    assert_int_equal(perfmon_branch_register(NULL), -EINVAL);
    bad.desc = NULL;
    assert_int_equal(perfmon_branch_register(&bad), -EINVAL);
    bad = drv;
    no_stop.stop = NULL;
    bad.ops = &no_stop;
    assert_int_equal(perfmon_branch_register(&bad), -EINVAL);

    assert_int_equal(perfmon_branch_register(&drv), 0);
    assert_int_equal(perfmon_branch_register(&drv), -EEXIST);
    assert_int_equal(perfmon_branch_unregister(&bad), -EINVAL);

    /* Not while an event records branches. */
    sampling_event(&ev, &s);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 0), 0);
    assert_int_equal(perfmon_branch_unregister(&drv), -EBUSY);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(perfmon_branch_unregister(&drv), 0);
    assert_int_equal(perfmon_branch_unregister(&drv), -EINVAL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, branch_setup,             \
                                              branch_teardown)
        T(test_no_driver),
        T(test_bad_filters),
        T(test_lifecycle),
        T(test_refusals),
        T(test_samples_carry_their_stack),
        T(test_no_stack_handed_over),
        T(test_nested_interrupt_keeps_stack),
        T(test_two_first_users),
        T(test_sched_in),
        T(test_inherited_children),
        T(test_register_errors),
#undef T
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
