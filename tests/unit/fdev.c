/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The fake PMU devices of the perfmon core's host tests: see fdev.h.
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
#include "arch/x86/msr.h"
#include "arch/x86/trap.h"
#include "fakes/fake_kmem.h"
#include "fakes/fake_log.h"
#include "fakes/fake_smp.h"
#include "fdev.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/spinlock.h"
#include "kern/syscnt.h"
#include "kern/thread.h"

struct fdev fdevs[3];
struct trap_frame test_frame;


void
fdev_assert_idle(struct fdev *fd)
{
    struct perfmon_dev_info info;

    assert_int_equal(fd->hw_used, 0);
    assert_int_equal(fd->held_refs, 0);

    for (unsigned int cpu = 0; cpu < CPU_MAX; cpu++) {
        for (unsigned int i = 0; i < FDEV_MAX_HW; i++) {
            assert_false(fd->counters[cpu][i].running);
        }
    }

    if (perfmon_dev_get_info(&fd->dev, &info) == 0) {
        assert_int_equal(info.nr_pmcs_used, 0);
    }
}

uint64_t
fdev_mask(const struct fdev *fd)
{
    return fd->dev.width >= 64 ? UINT64_MAX : (1ULL << fd->dev.width) - 1;
}

/* A step of the core's on counter hw_id: the test's hook acts there. */
static void
fdev_step(struct fdev *fd, enum fdev_step step, unsigned int hw_id)
{
    if (fd->step_hook != NULL) {
        fd->step_hook(fd, step, hw_id);
    }
}

/* The core serialises the global operations with its allocator lock. */
static void
fdev_assert_serialised(void)
{
    assert_true(spinlock_held(&perfmon_lock));
}

static int
fdev_translate(struct fdev *fd, uint64_t *rawp, unsigned int id)
{
    fdev_assert_serialised();

    if (id >= PERFMON_NR_EVENTS || !fd->can[id]) {
        return -ENOENT;
    }

    *rawp = fd->code[id];
    return 0;
}

/*
 * The counters that count raw: the general ones (all but the last when
 * fd->fixed_cycles), and for cycles also the last, preferred; counter 0
 * alone for RAW_ONLY0 in the low byte (a constrained event).
 */
static int
fdev_counters(struct fdev *fd, uint64_t raw, unsigned int flags,
              uint64_t *countersp, uint64_t *preferp)
{
    uint64_t all = (1ULL << fd->nr_hw) - 1;
    uint64_t fixed = fd->fixed_cycles ? 1ULL << (fd->nr_hw - 1) : 0;

    fdev_assert_serialised();
    assert_true(flags != 0 && (flags & ~PERFMON_EF_MODE) == 0);
    fd->nr_counters_calls++;

    if (raw == RAW_UNCOUNTABLE) {
        return -ENOENT;
    }

    if (raw == RAW_REFUSED) {
        return -EINVAL;
    }

    *countersp = ((raw & 0xff) == RAW_ONLY0) ? 1 : all & ~fixed;
    *preferp = 0;

    if (raw == RAW_CYCLES) {
        *countersp |= fixed;
        *preferp = fixed;
    }

    return 0;
}

static int
fdev_alloc(struct fdev *fd, unsigned int *hw_idp, uint64_t raw,
           unsigned int flags)
{
    uint64_t counters, prefer, free;
    int error = fdev_counters(fd, raw, flags, &counters, &prefer);

    if (error) {
        return error;
    }

    free = counters & ~fd->hw_used;

    if (free == 0) {
        return -EAGAIN;
    }

    if (free & prefer) {
        free &= prefer;
    }

    *hw_idp = (unsigned int)__builtin_ctzll(free);
    fd->hw_used |= 1ULL << *hw_idp;
    fd->nr_alloc++;
    return 0;
}

static void
fdev_free(struct fdev *fd, unsigned int hw_id)
{
    fdev_assert_serialised();
    assert_true(fd->hw_used & (1ULL << hw_id));
    fd->hw_used &= ~(1ULL << hw_id);
    fd->nr_free++;
}

static void
fdev_start(struct fdev *fd, unsigned int hw_id, uint64_t raw,
           unsigned int flags)
{
    struct fdev_counter *c = &fd->counters[cpu_id()][hw_id];

    assert_false(cpu_intr_enabled());
    assert_true(hw_id < fd->nr_hw);
    assert_false(c->running);
    fdev_step(fd, FDEV_STEP_START, hw_id);
    c->running = true;
    c->raw_event = raw;
    c->flags = flags;
    /*
     * The start contract: the counter starts from 0, and the previous
     * run's unreported overflow goes.
     */
    c->value = 0;
    fd->status[cpu_id()] &= ~(1ULL << hw_id);
    fd->nr_start++;
}

static void
fdev_stop(struct fdev *fd, unsigned int hw_id)
{
    struct fdev_counter *c = &fd->counters[cpu_id()][hw_id];

    assert_false(cpu_intr_enabled());
    assert_true(c->running);
    fdev_step(fd, FDEV_STEP_STOP, hw_id);
    c->running = false;
    fd->nr_stop++;
}

static unsigned int fdev_op_read_method(struct perfmon_dev *dev,
                                        unsigned int hw_id, uintptr_t *argp);

/*
 * The transfer contract: the counter counts raw from its count, which it
 * returns, and an overflow status it holds stays (the count's that goes
 * on).  The core hands it the counter's read method, which it leaves: the
 * fake's depends on the counter only, so it must be the one read_method
 * gives (the op's: no argument the core uses).
 */
static uint64_t
fdev_transfer(struct fdev *fd, unsigned int hw_id, uint64_t raw,
              unsigned int flags, const unsigned int *read_howp,
              const uintptr_t *argp)
{
    struct fdev_counter *c = &fd->counters[cpu_id()][hw_id];
    uintptr_t arg = 0;
    uint64_t value;

    assert_false(cpu_intr_enabled());
    assert_true(c->running);
    assert_int_equal(*read_howp,
                     fdev_op_read_method(&fd->dev, hw_id, &arg));

    if (*read_howp != PERFMON_READ_OP) {
        assert_int_equal(*argp, arg);
    }

    fdev_step(fd, FDEV_STEP_TRANSFER, hw_id);
    value = c->value;
    c->raw_event = raw;
    c->flags = flags;
    fd->nr_transfer++;

    /* The count at the hand-over, junk above the width as a read's. */
    return (fd->dev.width < 64) ? value | (0xa5ULL << fd->dev.width) : value;
}

static uint64_t
fdev_read(struct fdev *fd, unsigned int hw_id)
{
    unsigned long flags;
    uint64_t value;

    /* Local reads run with only preemption disabled. */
    assert_true(!cpu_intr_enabled() || !thread_preempt_enabled());
    assert_true(fd->counters[cpu_id()][hw_id].running);
    value = fd->counters[cpu_id()][hw_id].value;
    fd->nr_read++;

    if (fd->step_hook != NULL) {
        fdev_step(fd, FDEV_STEP_READ, hw_id);
    } else if (fd->intr_in_read != NULL) {
        void (*intr)(void) = fd->intr_in_read;

        /* An interrupt (a section of the core) lands after the read. */
        fd->intr_in_read = NULL;
        intr();
    } else if (fd->nmi_in_read) {
        /*
         * The counter moves on after the read (and may wrap), then an NMI
         * lands between two instructions of the core.
         */
        fd->nmi_in_read = false;
        fdev_count(fd, cpu_id(), fd->counters[cpu_id()][hw_id].raw_event,
                   fd->nmi_advance);
        fd->nmi_advance = 0;
        flags = cpu_intr_save();
        fd->nmi_result = perfmon_overflow_intr(&fd->dev, &test_frame);
        cpu_intr_restore(flags);
    }

    /* Bits above the width are junk the core must ignore. */
    return (fd->dev.width < 64) ? value | (0xa5ULL << fd->dev.width) : value;
}

static uint64_t
fdev_ovf(struct fdev *fd)
{
    uint64_t mask;

    fdev_step(fd, FDEV_STEP_OVF, 0);
    mask = fd->status[cpu_id()];

    fd->status[cpu_id()] = 0;

    /* An interrupt that takes time (throttling tests). */
    fake_cpu_advance_tsc(fd->ovf_cycles);
    return mask;
}

/* The fake device behind a struct perfmon_dev (its first member). */
static struct fdev *
fdev_of(struct perfmon_dev *dev)
{
    return (struct fdev *)dev;
}

static int
fdev_op_translate(struct perfmon_dev *dev, uint64_t *rawp, unsigned int id)
{
    return fdev_translate(fdev_of(dev), rawp, id);
}

static int
fdev_op_counters(struct perfmon_dev *dev, uint64_t raw, unsigned int flags,
                 uint64_t *countersp, uint64_t *preferp)
{
    return fdev_counters(fdev_of(dev), raw, flags, countersp, preferp);
}

static int
fdev_op_alloc(struct perfmon_dev *dev, unsigned int *hw_idp, uint64_t raw,
              unsigned int flags)
{
    return fdev_alloc(fdev_of(dev), hw_idp, raw, flags);
}

static void
fdev_op_free(struct perfmon_dev *dev, unsigned int hw_id)
{
    fdev_free(fdev_of(dev), hw_id);
}

static void
fdev_op_start(struct perfmon_dev *dev, unsigned int hw_id, uint64_t raw,
              unsigned int flags)
{
    fdev_start(fdev_of(dev), hw_id, raw, flags);
}

static void
fdev_op_stop(struct perfmon_dev *dev, unsigned int hw_id)
{
    fdev_stop(fdev_of(dev), hw_id);
}

static uint64_t
fdev_op_transfer(struct perfmon_dev *dev, unsigned int hw_id, uint64_t raw,
                 unsigned int flags, unsigned int *read_howp, uintptr_t *argp)
{
    return fdev_transfer(fdev_of(dev), hw_id, raw, flags, read_howp, argp);
}

static uint64_t
fdev_op_read(struct perfmon_dev *dev, unsigned int hw_id)
{
    return fdev_read(fdev_of(dev), hw_id);
}

static uint64_t
fdev_op_ovf(struct perfmon_dev *dev)
{
    return fdev_ovf(fdev_of(dev));
}

static unsigned int
fdev_op_read_method(struct perfmon_dev *dev, unsigned int hw_id,
                    uintptr_t *argp)
{
    struct fdev *fd = fdev_of(dev);

    assert_false(cpu_intr_enabled());
    assert_true(fd->counters[cpu_id()][hw_id].running);

    if (fd->read_how == PERFMON_READ_RDPMC) {
        *argp = dev->index * 256 + hw_id;
    } else if (fd->read_how == PERFMON_READ_MEM) {
        *argp = (uintptr_t)&fd->counters[cpu_id()][hw_id].value;
    }

    return fd->read_how;
}

/* RDPMC on the fake devices: the index names the device and counter. */
uint64_t
msr_rdpmc(uint32_t index)
{
    struct perfmon_dev *dev = perfmon_dev_get(index / 256);

    assert_non_null(dev);
    assert_int_equal(fdev_of(dev)->read_how, PERFMON_READ_RDPMC);
    return fdev_read(fdev_of(dev), index % 256);
}

/* Load a running counter; an armed one is what sampling writes. */
static void
fdev_op_write(struct perfmon_dev *dev, unsigned int hw_id, uint64_t value)
{
    struct fdev *fd = fdev_of(dev);
    struct fdev_counter *c = &fd->counters[cpu_id()][hw_id];

    assert_false(cpu_intr_enabled());
    assert_true(c->running);
    assert_true((value & ~fdev_mask(fd)) == 0);

    /* A device that loads at most max_period events in one write. */
    if (fd->dev.max_period != 0) {
        assert_true(((0 - value) & fdev_mask(fd)) <= fd->dev.max_period);
    }

    fdev_step(fd, FDEV_STEP_WRITE, hw_id);
    c->value = value;
    fd->nr_write++;
}

/* RAW_HELD codes share one extra register: one value at a time. */
static int
fdev_op_hold(struct perfmon_dev *dev, uint64_t raw)
{
    struct fdev *fd = fdev_of(dev);

    fdev_assert_serialised();

    if ((raw & 0xff) != RAW_HELD) {
        return 0;
    }

    if (fd->held_refs != 0 && fd->held_value != (raw >> 8)) {
        return -EAGAIN;
    }

    fd->held_value = raw >> 8;
    fd->held_refs++;
    return 0;
}

static void
fdev_op_release(struct perfmon_dev *dev, uint64_t raw)
{
    struct fdev *fd = fdev_of(dev);

    fdev_assert_serialised();

    if ((raw & 0xff) == RAW_HELD) {
        assert_true(fd->held_refs != 0 && fd->held_value == (raw >> 8));
        fd->held_refs--;
    }
}

static const struct perfmon_dev_ops fdev_ops = {
    .translate = fdev_op_translate, .counters = fdev_op_counters,
    .alloc = fdev_op_alloc,
    .free = fdev_op_free, .start = fdev_op_start, .stop = fdev_op_stop,
    .read = fdev_op_read, .read_method = fdev_op_read_method,
    .transfer = fdev_op_transfer, .write = fdev_op_write,
    .handle_overflow_intr = fdev_op_ovf,
    .hold = fdev_op_hold, .release = fdev_op_release,
};

static const char *const fdev_names[] = { "fake0", "fake1", "fake2" };

const struct perfmon_dev_event fdev_events[] = {
    { "insns.any", RAW_INSNS },
    { "other.thing", RAW_OTHER },
};

/*
 * Prepare fake device i: a hardware-like PMU (cycles, instructions,
 * branches, branch misses) for i != 1, a software-like one (the software
 * events) for i == 1.  intr: with an overflow interrupt.
 */
struct fdev *
fdev_init(unsigned int i, unsigned int width, unsigned int nr_pmcs,
          bool intr)
{
    struct fdev *fd = &fdevs[i];

    memset(fd, 0, sizeof(*fd));
    fd->ops = fdev_ops;
    fd->read_how = fdev_read_how;
    fd->dev.overflow_intr = intr;

    if (i == 1) {
        for (unsigned int id = PERFMON_EV_TASK_CLOCK; id < PERFMON_NR_EVENTS;
             id++) {
            fd->can[id] = true;
            fd->code[id] = 0x100 + id;
        }
    } else {
        fd->can[PERFMON_EV_CYCLE] = true;
        fd->code[PERFMON_EV_CYCLE] = RAW_CYCLES;
        fd->can[PERFMON_EV_INSTRUCTION] = true;
        fd->code[PERFMON_EV_INSTRUCTION] = RAW_INSNS;
        fd->can[PERFMON_EV_BRANCH] = true;
        fd->code[PERFMON_EV_BRANCH] = RAW_BRANCH;
        fd->can[PERFMON_EV_BRANCH_MISS] = true;
        fd->code[PERFMON_EV_BRANCH_MISS] = RAW_MISS;
        fd->dev.events = fdev_events;
        fd->dev.nr_events = ARRAY_SIZE(fdev_events);
    }

    fd->dev.name = fdev_names[i];
    fd->dev.ops = &fd->ops;
    fd->dev.width = width;
    fd->dev.nr_pmcs = nr_pmcs;
    fd->nr_hw = nr_pmcs;
    return fd;
}

struct fdev *
fdev_add(unsigned int i, unsigned int width, unsigned int nr_pmcs, bool intr)
{
    struct fdev *fd = fdev_init(i, width, nr_pmcs, intr);

    assert_int_equal(perfmon_register(&fd->dev), 0);
    return fd;
}

/* n events of type raw happen on cpu. */
void
fdev_count(struct fdev *fd, unsigned int cpu, uint64_t raw, uint64_t n)
{
    uint64_t mask = fdev_mask(fd);

    for (unsigned int i = 0; i < fd->nr_hw; i++) {
        struct fdev_counter *c = &fd->counters[cpu][i];

        if (!c->running || c->raw_event != raw) {
            continue;
        }

        unsigned __int128 sum = (unsigned __int128)c->value + n;
        uint64_t wraps = (uint64_t)(sum >> fd->dev.width);

        if (wraps != 0) {
            fd->status[cpu] |= 1ULL << i;
            fd->wraps[cpu] += wraps;
        }

        c->value = (uint64_t)sum & mask;
    }
}

bool
fdev_nmi_here(struct fdev *fd, unsigned int hw_id, uint64_t n)
{
    unsigned int cpu = cpu_id();
    struct fdev_counter *c = &fd->counters[cpu][hw_id];
    unsigned __int128 sum = (unsigned __int128)c->value + n;
    unsigned long flags;
    bool handled;

    if ((sum >> fd->dev.width) != 0) {
        fd->status[cpu] |= 1ULL << hw_id;
        fd->wraps[cpu] += (uint64_t)(sum >> fd->dev.width);
    }

    c->value = (uint64_t)sum & fdev_mask(fd);
    flags = cpu_intr_save();
    handled = perfmon_overflow_intr(&fd->dev, &test_frame);
    cpu_intr_restore(flags);
    return handled;
}

static struct {
    enum fdev_step step;
    unsigned int nth;
    int hw;
    uint64_t advance;
    bool handled;
} fdev_script[4];
static unsigned int fdev_script_len;

static void
fdev_script_hook(struct fdev *fd, enum fdev_step step, unsigned int hw_id)
{
    for (unsigned int i = 0; i < fdev_script_len; i++) {
        if (fdev_script[i].nth != 0 && fdev_script[i].step == step
            && --fdev_script[i].nth == 0) {
            unsigned int hw = (fdev_script[i].hw < 0)
                              ? hw_id : (unsigned int)fdev_script[i].hw;

            fdev_script[i].handled = fdev_nmi_here(fd, hw,
                                                   fdev_script[i].advance);
        }
    }
}

void
fdev_script_nmi(struct fdev *fd, enum fdev_step step, unsigned int nth,
                int hw, uint64_t advance)
{
    assert_true(fdev_script_len < ARRAY_SIZE(fdev_script));
    assert_true(nth != 0);
    fdev_script[fdev_script_len++] = (typeof(fdev_script[0])){
        .step = step, .nth = nth, .hw = hw, .advance = advance,
    };
    fd->step_hook = fdev_script_hook;
}

void
fdev_script_done(struct fdev *fd)
{
    for (unsigned int i = 0; i < fdev_script_len; i++) {
        assert_int_equal(fdev_script[i].nth, 0);
        assert_true(fdev_script[i].handled);
    }

    fdev_script_len = 0;
    fd->step_hook = NULL;
}

/* An NMI for fd on cpu. */
bool
dev_nmi(struct perfmon_dev *dev, unsigned int cpu)
{
    struct fake_ctx ctx;
    bool handled;

    fake_ctx_enter(&ctx, cpu);
    handled = perfmon_overflow_intr(dev, &test_frame);
    fake_ctx_exit(&ctx);
    return handled;
}

bool
fdev_nmi(struct fdev *fd, unsigned int cpu)
{
    return dev_nmi(&fd->dev, cpu);
}

uint64_t
syscnt_value(const char *name)
{
    struct syscnt *s = syscnt_lookup(name);

    assert_non_null(s);
    return syscnt_read(s);
}

/* The thread the test runs as, current on CPU 0. */
struct thread *self;

/* A program linking tests/unit/fdev_rdpmc.c reads by RDPMC instead. */
__attribute__((weak)) unsigned int fdev_read_how = PERFMON_READ_OP;

int
setup(void **state)
{
    (void)state;
    fake_cpu_reset(NR_CPUS);
    fake_thread_reset();
    fake_xcall_reset();
    fake_timer_reset();
    fake_syscnt_reset();
    fake_kmem_reset();
    fake_log_reset();
    fake_clock_set(1000);
    fdev_script_len = 0;
    perfmon_reset();
    self = fake_thread_create("self");
    fake_thread_switch(0, self);
    return 0;
}

void
init_ok(struct perfmon_event *ev, uint64_t id, unsigned int flags)
{
    assert_int_equal(perfmon_event_init(ev, id, flags), 0);
}

