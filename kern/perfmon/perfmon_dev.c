/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Performance monitoring core: the device table and the lookups around it
 * (by index, by name, event names to device codes, through the generic
 * events of perfmon_events.c), and the hardware PMU's status line.  See
 * kern/perfmon.h for the contract and kern/perfmon/perfmon_i.h for how the
 * core's files share state.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/spinlock.h"
#include "kern/string.h"

struct spinlock perfmon_lock = SPINLOCK_INITIALIZER;
struct perfmon_dev *perfmon_devs[PERFMON_MAX_DEVS];
unsigned int perfmon_nr_devs_published;
bool perfmon_ready;
struct perfmon_pmc perfmon_pmcs[PERFMON_MAX_PMCS];
uint64_t perfmon_sampling_slots;
uint64_t perfmon_branch_slots;
uint64_t perfmon_pass_slots;
uint64_t perfmon_dev_reserved[PERFMON_MAX_DEVS];
unsigned int perfmon_dev_nr_used_[PERFMON_MAX_DEVS];

/*
 * The hardware status line, written once at boot (thread context) before
 * the shell can read it; present_ tells whether a hardware device exists.
 */
static char perfmon_hw_status_text[PERFMON_HW_STATUS_SIZE] = "not probed";
static bool perfmon_hw_present;

/*
 * Poll interval of a device without overflow interrupt (perfmon_poll_ms()):
 * from the time its counters take to wrap at PERFMON_POLL_RATE events per
 * CPU cycle, more than any x86 event reaches, and at least
 * PERFMON_POLL_MIN_MS.
 */
#define PERFMON_POLL_RATE           16
#define PERFMON_POLL_MIN_MS         20

/* ---- devices ------------------------------------------------------------- */

/*
 * The poll interval of a device being registered (perfmon_lock held):
 * its own, or from the time its counters take to wrap when no interrupt
 * says they did; 0 for none.
 */
static void
perfmon_dev_set_poll(struct perfmon_dev *dev)
{
    if (dev->poll_ms != 0) {
        dev->poll_interval_ms = dev->poll_ms;
    } else if (!dev->overflow_intr) {
        dev->poll_interval_ms = perfmon_poll_ms(
            perfmon_wrap_ms(dev->width, PERFMON_POLL_RATE, cpu_tsc_freq()),
            PERFMON_POLL_MIN_MS);
    } else {
        dev->poll_interval_ms = 0;
    }
}

bool
perfmon_dev_is_registered(const struct perfmon_dev *dev)
{
    unsigned int nr = perfmon_nr_devs_load();

    return dev != NULL && dev->index < nr && perfmon_devs[dev->index] == dev;
}

static int
perfmon_dev_check(const struct perfmon_dev *dev)
{
    const struct perfmon_dev_ops *ops;

    if (dev == NULL || dev->name == NULL || dev->ops == NULL) {
        return -EINVAL;
    }

    ops = dev->ops;

    if (ops->translate == NULL || ops->counters == NULL || ops->alloc == NULL
        || ops->free == NULL || ops->start == NULL || ops->stop == NULL
        || ops->read == NULL) {
        return -EINVAL;
    }

    if ((dev->overflow_intr && ops->handle_overflow_intr == NULL)
        || ((ops->hold == NULL) != (ops->release == NULL))) {
        return -EINVAL;
    }

    if (dev->width == 0 || dev->width > 64) {
        return -EINVAL;
    }

    if (dev->nr_pmcs == 0 || dev->nr_pmcs > PERFMON_DEV_MAX_PMCS) {
        return -EINVAL;
    }

    if (dev->nr_events != 0 && dev->events == NULL) {
        return -EINVAL;
    }

    return 0;
}

int
perfmon_register(struct perfmon_dev *dev)
{
    unsigned int nr;
    int error;

    assert(perfmon_ready);
    error = perfmon_dev_check(dev);

    if (error) {
        return error;
    }

    spinlock_lock(&perfmon_lock);
    nr = perfmon_nr_devs_published;

    for (unsigned int i = 0; i < nr; i++) {
        if (perfmon_devs[i] == dev || strcmp(perfmon_devs[i]->name,
                                             dev->name) == 0) {
            spinlock_unlock(&perfmon_lock);
            return -EEXIST;
        }
    }

    if (nr == PERFMON_MAX_DEVS) {
        spinlock_unlock(&perfmon_lock);
        return -ENOSPC;
    }

    dev->index = nr;
    dev->intr_end = dev->ops->overflow_intr_end != NULL;
    dev->arm_min = (dev->min_arm != 0) ? dev->min_arm : PERFMON_DEV_MIN_ARM;
    dev->arm_max = perfmon_width_mask(dev->width);

    if (dev->max_period != 0) {
        dev->arm_max = MIN(dev->arm_max, dev->max_period);
    }

    perfmon_dev_set_poll(dev);
    perfmon_devs[nr] = dev;
    __atomic_store_n(&perfmon_nr_devs_published, nr + 1, __ATOMIC_RELEASE);
    spinlock_unlock(&perfmon_lock);
    return 0;
}

unsigned int
perfmon_nr_devs(void)
{
    return perfmon_nr_devs_load();
}

struct perfmon_dev *
perfmon_dev_get(unsigned int index)
{
    return (index < perfmon_nr_devs_load()) ? perfmon_devs[index] : NULL;
}

struct perfmon_dev *
perfmon_dev_find(const char *name)
{
    unsigned int nr = perfmon_nr_devs_load();

    if (name == NULL) {
        return NULL;
    }

    for (unsigned int i = 0; i < nr; i++) {
        if (strcmp(perfmon_devs[i]->name, name) == 0) {
            return perfmon_devs[i];
        }
    }

    return NULL;
}

int
perfmon_dev_get_info(const struct perfmon_dev *dev,
                     struct perfmon_dev_info *info)
{
    if (info == NULL || !perfmon_dev_is_registered(dev)) {
        return -EINVAL;
    }

    info->name = dev->name;
    info->width = dev->width;
    info->nr_pmcs = dev->nr_pmcs;
    info->nr_pmcs_used = READ_ONCE(perfmon_dev_nr_used_[dev->index]);
    info->overflow_intr = dev->overflow_intr;
    info->poll_ms = dev->poll_interval_ms;
    return 0;
}

/* The device's translate, serialised like its other global operations. */
static int
perfmon_dev_translate_locked(struct perfmon_dev *dev, unsigned int event_id,
                             uint64_t *raw_eventp)
{
    int error;

    spinlock_lock(&perfmon_lock);
    error = dev->ops->translate(dev, raw_eventp, event_id);
    spinlock_unlock(&perfmon_lock);
    return error == 0 ? 0 : -ENOENT;
}

int
perfmon_dev_counters(struct perfmon_dev *dev, uint64_t raw_event,
                     unsigned int flags, uint64_t *countersp)
{
    uint64_t prefer;
    int error;

    if (dev == NULL || countersp == NULL || !perfmon_dev_is_registered(dev)
        || (flags & ~PERFMON_EF_MODE) != 0 || (flags & PERFMON_EF_MODE) == 0) {
        return -EINVAL;
    }

    spinlock_lock(&perfmon_lock);
    error = dev->ops->counters(dev, raw_event, flags, countersp, &prefer);
    spinlock_unlock(&perfmon_lock);

    if (error == 0 && *countersp == 0) {
        error = -ENOENT;
    }

    return (error == 0 || error == -EINVAL) ? error : -ENOENT;
}

int
perfmon_dev_translate(struct perfmon_dev *dev, unsigned int event_id,
                      uint64_t *raw_eventp)
{
    if (dev == NULL || raw_eventp == NULL || event_id >= PERFMON_NR_EVENTS
        || !perfmon_dev_is_registered(dev)) {
        return -EINVAL;
    }

    return perfmon_dev_translate_locked(dev, event_id, raw_eventp);
}

const char *
perfmon_dev_why_not(struct perfmon_dev *dev, uint64_t raw_event)
{
    if (dev == NULL || !perfmon_dev_is_registered(dev)
        || dev->ops->why_not == NULL) {
        return NULL;
    }

    return dev->ops->why_not(dev, raw_event);
}

/*
 * The hardware counters the counter alloc gave as hw_id takes (its
 * alloc_counters operation): hw_id's and whatever else it holds with it.
 */
static uint64_t
perfmon_dev_taken_locked(struct perfmon_dev *dev, unsigned int hw_id)
{
    uint64_t taken = 1ULL << hw_id;

    if (dev->ops->alloc_counters != NULL) {
        taken = dev->ops->alloc_counters(dev, hw_id);
        assert(taken & (1ULL << hw_id));
    }

    return taken;
}

int
perfmon_dev_reserve_locked(struct perfmon_dev *dev, uint64_t raw_event,
                           unsigned int flags, unsigned int *hw_idp,
                           uint64_t *takenp)
{
    int error;

    assert(spinlock_held(&perfmon_lock));
    error = dev->ops->alloc(dev, hw_idp, raw_event, flags);

    if (error == 0) {
        assert(*hw_idp < 64);
        *takenp = perfmon_dev_taken_locked(dev, *hw_idp);
        assert(!(perfmon_dev_reserved[dev->index] & *takenp));
        WRITE_ONCE(perfmon_dev_reserved[dev->index],
                   perfmon_dev_reserved[dev->index] | *takenp);
    }

    return error;
}

void
perfmon_dev_unreserve_locked(struct perfmon_dev *dev, unsigned int hw_id)
{
    uint64_t taken;

    assert(spinlock_held(&perfmon_lock));
    taken = perfmon_dev_taken_locked(dev, hw_id);
    dev->ops->free(dev, hw_id);
    WRITE_ONCE(perfmon_dev_reserved[dev->index],
               perfmon_dev_reserved[dev->index] & ~taken);
}

int
perfmon_lookup_event(struct perfmon_dev *dev, const char *name,
                     uint64_t *idp, unsigned int *flagsp)
{
    uint64_t raw;
    int id;

    if (name == NULL || idp == NULL || flagsp == NULL) {
        return -EINVAL;
    }

    if (dev != NULL) {
        if (!perfmon_dev_is_registered(dev)) {
            return -EINVAL;
        }

        for (unsigned int i = 0; i < dev->nr_events; i++) {
            if (strcmp(dev->events[i].name, name) == 0) {
                *idp = dev->events[i].raw_event;
                *flagsp = PERFMON_EF_RAW;
                return 0;
            }
        }
    }

    id = perfmon_event_find(name);

    if (id < 0) {
        return -ENOENT;
    }

    if (dev != NULL
        && perfmon_dev_translate_locked(dev, (unsigned int)id, &raw) != 0) {
        return -ENOENT;
    }

    *idp = (unsigned int)id;
    *flagsp = 0;
    return 0;
}

/* ---- hardware status ----------------------------------------------------- */

void
perfmon_set_hw_status(bool present, const char *text)
{
    assert(text != NULL);
    strlcpy(perfmon_hw_status_text, text, sizeof(perfmon_hw_status_text));
    perfmon_hw_present = present;
}

const char *
perfmon_hw_status(bool *presentp)
{
    if (presentp != NULL) {
        *presentp = perfmon_hw_present;
    }

    return perfmon_hw_status_text;
}

#ifdef TALLY_HOST_TEST
void
perfmon_dev_reset(void)
{
    spinlock_init(&perfmon_lock);
    memset(perfmon_devs, 0, sizeof(perfmon_devs));
    perfmon_nr_devs_published = 0;
    perfmon_ready = false;
    strlcpy(perfmon_hw_status_text, "not probed",
            sizeof(perfmon_hw_status_text));
    perfmon_hw_present = false;
    memset(perfmon_pmcs, 0, sizeof(perfmon_pmcs));
    perfmon_sampling_slots = 0;
    perfmon_branch_slots = 0;
    perfmon_pass_slots = 0;
    memset(perfmon_dev_reserved, 0, sizeof(perfmon_dev_reserved));
    memset(perfmon_dev_nr_used_, 0, sizeof(perfmon_dev_nr_used_));
}
#endif /* TALLY_HOST_TEST */
