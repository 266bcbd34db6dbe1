/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The perfmon core stand-in of pmu_perfmon.h: perfmon_register() and
 * perfmon_overflow_intr() as the PMU drivers call them, plus the handful
 * of counter operations a driver test needs.  Values are extended the way
 * the core documents it: the difference between raw reads modulo 2^width,
 * plus one period when the overflow interrupt reports a wrap the
 * difference cannot see.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arch/x86/cpu.h"
#include "fakes/pmu_perfmon.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "kern/perfmon.h"

struct fake_counter {
    bool open;
    unsigned int hw_id;
    uint64_t prev;
    uint64_t value;
    bool wrap_seen;
    uint64_t rearm;             /* 0, or the value to re-arm with */
};

static struct perfmon_dev *fake_dev;
static struct fake_counter fake_counters[FAKE_PERFMON_MAX_OPEN];
static unsigned int fake_nr_intrs;
static unsigned int fake_nr_ovf_folds;
static uint64_t fake_last_mask;

/* The callback registry, the stack set in the interrupt, the driver. */
static struct {
    perfmon_intr_fn_t fn;
    void *arg;
} fake_callbacks[PERFMON_MAX_INTR_CALLBACKS];
static struct perfmon_branch fake_branches[PERFMON_MAX_BRANCHES];
static unsigned int fake_nr_branches;
static unsigned int fake_callback_runs;
static perfmon_intr_fn_t fake_last_callback;
static const struct perfmon_branch_driver *fake_branch_drv;
static char fake_branch_absent[PERFMON_HW_STATUS_SIZE];

void
fake_perfmon_reset(void)
{
    fake_dev = NULL;
    memset(fake_counters, 0, sizeof(fake_counters));
    fake_nr_intrs = 0;
    fake_nr_ovf_folds = 0;
    fake_last_mask = 0;
    memset(fake_callbacks, 0, sizeof(fake_callbacks));
    fake_nr_branches = 0;
    fake_callback_runs = 0;
    fake_last_callback = NULL;
    fake_branch_drv = NULL;
    fake_branch_absent[0] = '\0';
}

struct perfmon_dev *
fake_perfmon_dev(void)
{
    return fake_dev;
}

int
perfmon_register(struct perfmon_dev *dev)
{
    const struct perfmon_dev_ops *ops;

    if (dev == NULL || dev->name == NULL || dev->ops == NULL) {
        return -EINVAL;
    }

    ops = dev->ops;

    if (ops->translate == NULL || ops->alloc == NULL || ops->free == NULL
        || ops->start == NULL || ops->stop == NULL || ops->read == NULL
        || (dev->overflow_intr && ops->handle_overflow_intr == NULL)
        || dev->width == 0 || dev->width > 64 || dev->nr_pmcs == 0
        || dev->nr_pmcs > PERFMON_DEV_MAX_PMCS) {
        return -EINVAL;
    }

    if (fake_dev != NULL) {
        return -EEXIST;
    }

    fake_dev = dev;
    return 0;
}

static uint64_t
fake_mask(void)
{
    return (fake_dev->width >= 64) ? UINT64_MAX
                                   : (1ULL << fake_dev->width) - 1;
}

static void
fake_fold(struct fake_counter *c, bool ovf)
{
    uint64_t mask = fake_mask();
    uint64_t raw = fake_dev->ops->read(fake_dev, c->hw_id) & mask;
    uint64_t delta = (raw - c->prev) & mask;
    bool wrapped = raw < c->prev;

    if (ovf) {
        fake_nr_ovf_folds++;

        if (!wrapped && !c->wrap_seen) {
            delta += mask + 1;
        }

        c->wrap_seen = false;
    } else if (wrapped) {
        c->wrap_seen = true;
    }

    c->value += delta;
    c->prev = raw;
}

static void
fake_run_callbacks(struct perfmon_dev *dev, uint64_t mask,
                   struct trap_frame *frame)
{
    fake_nr_branches = 0;
    fake_callback_runs++;

    for (unsigned int i = 0; i < PERFMON_MAX_INTR_CALLBACKS; i++) {
        if (fake_callbacks[i].fn != NULL) {
            fake_callbacks[i].fn(dev, cpu_id(), mask, frame,
                                 fake_callbacks[i].arg);
        }
    }
}

int
perfmon_intr_register(perfmon_intr_fn_t fn, void *arg)
{
    if (fn == NULL) {
        return -EINVAL;
    }

    for (int i = 0; i < PERFMON_MAX_INTR_CALLBACKS; i++) {
        if (fake_callbacks[i].fn == NULL) {
            fake_callbacks[i].fn = fn;
            fake_callbacks[i].arg = arg;
            fake_last_callback = fn;
            return i;
        }
    }

    return -ENOSPC;
}

int
perfmon_intr_unregister(int handle)
{
    if (handle < 0 || handle >= PERFMON_MAX_INTR_CALLBACKS
        || fake_callbacks[handle].fn == NULL) {
        return -EINVAL;
    }

    fake_callbacks[handle].fn = NULL;
    return 0;
}

void
perfmon_intr_set_branches(const struct perfmon_branch *entries,
                          unsigned int nr)
{
    assert(nr <= PERFMON_MAX_BRANCHES);

    /* memcpy's source must not be NULL, even for no bytes (UBSan). */
    if (nr != 0) {
        memcpy(fake_branches, entries, nr * sizeof(*entries));
    }

    fake_nr_branches = nr;
}

const struct perfmon_branch *
fake_perfmon_branches(unsigned int *nrp)
{
    *nrp = fake_nr_branches;
    return fake_branches;
}

unsigned int
fake_perfmon_nr_callback_runs(void)
{
    return fake_callback_runs;
}

unsigned int
fake_perfmon_nr_callbacks(void)
{
    unsigned int nr = 0;

    for (unsigned int i = 0; i < PERFMON_MAX_INTR_CALLBACKS; i++) {
        nr += fake_callbacks[i].fn != NULL;
    }

    return nr;
}

perfmon_intr_fn_t
fake_perfmon_last_callback(void)
{
    return fake_last_callback;
}

int
perfmon_branch_register(const struct perfmon_branch_driver *drv)
{
    if (drv == NULL || drv->desc == NULL || drv->ops == NULL) {
        return -EINVAL;
    }

    if (fake_branch_drv != NULL) {
        return -EEXIST;
    }

    fake_branch_drv = drv;
    return 0;
}

int
perfmon_branch_unregister(const struct perfmon_branch_driver *drv)
{
    if (drv == NULL || drv != fake_branch_drv) {
        return -EINVAL;
    }

    fake_branch_drv = NULL;
    return 0;
}

void
perfmon_branch_set_absent(const char *why)
{
    strncpy(fake_branch_absent, why, sizeof(fake_branch_absent) - 1);
}

const struct perfmon_branch_driver *
fake_perfmon_branch_driver(void)
{
    return fake_branch_drv;
}

const char *
fake_perfmon_branch_absent(void)
{
    return fake_branch_absent;
}

bool
perfmon_overflow_nmi(void *arg, struct trap_frame *frame)
{
    struct perfmon_dev *dev = arg;
    uint64_t mask;

    (void)frame;

    if (dev == NULL || dev != fake_dev || !dev->overflow_intr) {
        return false;
    }

    mask = dev->ops->handle_overflow_intr(dev);
    fake_last_mask = mask;

    if (mask == 0) {
        return false;
    }

    fake_nr_intrs++;

    for (unsigned int i = 0; i < FAKE_PERFMON_MAX_OPEN; i++) {
        struct fake_counter *c = &fake_counters[i];

        if (c->open && (mask & (1ULL << c->hw_id))) {
            fake_fold(c, true);

            if (c->rearm != 0) {
                dev->ops->write(dev, c->hw_id, c->rearm);
                c->prev = c->rearm;
            }
        }
    }

    fake_run_callbacks(dev, mask, frame);

    if (dev->ops->overflow_intr_end != NULL) {
        dev->ops->overflow_intr_end(dev);
    }

    return true;
}

int
perfmon_dev_translate(struct perfmon_dev *dev, unsigned int event_id,
                      uint64_t *raw_eventp)
{
    if (dev == NULL || dev != fake_dev || raw_eventp == NULL) {
        return -EINVAL;
    }

    return dev->ops->translate(dev, raw_eventp, event_id) ? -ENOENT : 0;
}

int
perfmon_dev_alloc(struct perfmon_dev *dev, uint64_t raw_event,
                  unsigned int flags, unsigned int *hw_idp)
{
    if (dev == NULL || dev != fake_dev || hw_idp == NULL) {
        return -EINVAL;
    }

    return dev->ops->alloc(dev, hw_idp, raw_event, flags);
}

void
perfmon_dev_free(struct perfmon_dev *dev, unsigned int hw_id)
{
    assert(dev != NULL && dev == fake_dev);
    dev->ops->free(dev, hw_id);
}

int
fake_perfmon_open_raw(uint64_t raw, unsigned int flags, unsigned int *hw_idp)
{
    unsigned int hw_id;
    int error;

    assert(fake_dev != NULL);

    for (int i = 0; i < FAKE_PERFMON_MAX_OPEN; i++) {
        struct fake_counter *c = &fake_counters[i];

        if (c->open) {
            continue;
        }

        error = fake_dev->ops->alloc(fake_dev, &hw_id, raw, flags);

        if (error) {
            return error;
        }

        assert(hw_id < 64);
        fake_dev->ops->start(fake_dev, hw_id, raw, flags);
        *c = (struct fake_counter){
            .open = true,
            .hw_id = hw_id,
            .prev = fake_dev->ops->read(fake_dev, hw_id) & fake_mask(),
        };

        if (hw_idp != NULL) {
            *hw_idp = hw_id;
        }

        return i;
    }

    return -ENOSPC;
}

int
fake_perfmon_open(unsigned int event_id, unsigned int flags,
                  unsigned int *hw_idp)
{
    uint64_t raw;
    int error;

    assert(fake_dev != NULL);
    error = fake_dev->ops->translate(fake_dev, &raw, event_id);

    if (error) {
        return error;
    }

    return fake_perfmon_open_raw(raw, flags, hw_idp);
}

void
fake_perfmon_write(int handle, uint64_t value)
{
    struct fake_counter *c = &fake_counters[handle];

    assert(handle >= 0 && handle < FAKE_PERFMON_MAX_OPEN && c->open);
    assert(fake_dev->ops->write != NULL);
    fake_fold(c, false);
    fake_dev->ops->write(fake_dev, c->hw_id, value & fake_mask());
    c->prev = value & fake_mask();
}

void
fake_perfmon_set_rearm(int handle, uint64_t value)
{
    struct fake_counter *c = &fake_counters[handle];

    assert(handle >= 0 && handle < FAKE_PERFMON_MAX_OPEN && c->open);
    c->rearm = value & fake_mask();

    if (c->rearm != 0) {
        fake_perfmon_write(handle, c->rearm);
    }
}

uint64_t
fake_perfmon_value(int handle)
{
    struct fake_counter *c = &fake_counters[handle];

    assert(handle >= 0 && handle < FAKE_PERFMON_MAX_OPEN && c->open);
    fake_fold(c, false);
    return c->value;
}

uint64_t
fake_perfmon_close(int handle)
{
    struct fake_counter *c = &fake_counters[handle];
    uint64_t value = fake_perfmon_value(handle);

    fake_dev->ops->stop(fake_dev, c->hw_id);
    fake_dev->ops->free(fake_dev, c->hw_id);
    c->open = false;
    return value;
}

unsigned int
fake_perfmon_nr_intrs(void)
{
    return fake_nr_intrs;
}

unsigned int
fake_perfmon_nr_ovf_folds(void)
{
    return fake_nr_ovf_folds;
}

uint64_t
fake_perfmon_last_mask(void)
{
    return fake_last_mask;
}
