/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The step PMU (see drivers/pmu/step.h).  A running counter is an offset
 * on its CPU's step count (arch/x86/step.h): its raw value is the count
 * plus the offset, modulo 2^width, so that loading a value (write) is one
 * store, and a read from thread code, which the overflow interrupt may
 * interrupt, sees the offset before or after, never half of it.  Each
 * counter knows the step count at which it wraps next; the CPU's deadline
 * is the earliest, and when it comes the #DB handler calls
 * steppmu_deadline(), which reports the counters that wrapped to the
 * perfmon core as their overflow interrupt.
 *
 * Per-CPU state is used by its own CPU only: by the core's operations,
 * with interrupts disabled, and by the deadline function, from the #DB
 * handler, which may interrupt them (they are stepped code themselves):
 * running is set last and cleared first, and status is atomic.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/smp.h"
#include "arch/x86/step.h"
#include "drivers/pmu/step.h"
#include "kern/cmdline.h"
#include "kern/error.h"
#include "kern/init.h"
#include "kern/log.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/string.h"

/*
 * A counter of one CPU.  nmi: it counts NMI handlers too (the other kind
 * of step count).  wrap_at: the step count at which it wraps next, 0 for
 * never (width 64, counting from 0).
 */
struct steppmu_counter {
    bool running;
    bool nmi;
    uint64_t offset;
    uint64_t wrap_at;
};

struct steppmu_cpu {
    struct steppmu_counter counters[STEPPMU_NR_PMCS];
    uint64_t status;                    /* atomic: wrapped, not yet taken */
} __aligned(CACHE_LINE_SIZE);

static struct steppmu_cpu steppmu_cpus[CPU_MAX];
static struct perfmon_dev steppmu_device;
static uint64_t steppmu_used;           /* serialised by the perfmon core */
static unsigned int steppmu_width = STEPPMU_WIDTH_DEFAULT;

static const struct perfmon_dev_event steppmu_events[] = {
    { "instructions-nmi", STEPPMU_EV_INSTRUCTIONS_NMI },
};

static struct steppmu_cpu *
steppmu_cpu_local(void)
{
    return &steppmu_cpus[cpu_id()];
}

static uint64_t
steppmu_mask(void)
{
    return (steppmu_width >= 64) ? UINT64_MAX : (1ULL << steppmu_width) - 1;
}

/* The step count at which c wraps next, seen at count now. */
static uint64_t
steppmu_next_wrap(const struct steppmu_counter *c, uint64_t now)
{
    uint64_t left = (0 - (c->offset + now)) & steppmu_mask();

    if (left == 0) {
        if (steppmu_width >= 64) {
            return 0;
        }

        left = steppmu_mask() + 1;
    }

    return now + left;
}

/* Ask for the earliest wrap of each kind of the counters running here. */
static void
steppmu_program(struct steppmu_cpu *cpu)
{
    uint64_t deadlines[2] = { 0, 0 };

    for (unsigned int i = 0; i < STEPPMU_NR_PMCS; i++) {
        const struct steppmu_counter *c = &cpu->counters[i];
        uint64_t *d = &deadlines[c->nmi];

        if (READ_ONCE(c->running) && c->wrap_at != 0
            && (*d == 0 || c->wrap_at < *d)) {
            *d = c->wrap_at;
        }
    }

    step_cpu_set_deadline(false, deadlines[0]);
    step_cpu_set_deadline(true, deadlines[1]);
}

/* ---- device operations -------------------------------------------------- */

static int
steppmu_translate(struct perfmon_dev *dev, uint64_t *raw_eventp,
                  unsigned int event_id)
{
    (void)dev;

    if (event_id != PERFMON_EV_INSTRUCTION) {
        return -ENOENT;
    }

    *raw_eventp = STEPPMU_EV_INSTRUCTIONS;
    return 0;
}

/*
 * No user mode: the mode flags are accepted, the kernel is what runs.
 * Every counter counts both events.
 */
static int
steppmu_counters(struct perfmon_dev *dev, uint64_t raw_event,
                 unsigned int flags, uint64_t *countersp, uint64_t *preferp)
{
    (void)dev;
    (void)flags;

    if (raw_event != STEPPMU_EV_INSTRUCTIONS
        && raw_event != STEPPMU_EV_INSTRUCTIONS_NMI) {
        return -ENOENT;
    }

    *countersp = (1ULL << STEPPMU_NR_PMCS) - 1;
    *preferp = 0;
    return 0;
}

static int
steppmu_alloc(struct perfmon_dev *dev, unsigned int *hw_idp,
              uint64_t raw_event, unsigned int flags)
{
    uint64_t counters, prefer, free;
    int error = steppmu_counters(dev, raw_event, flags, &counters, &prefer);

    if (error) {
        return error;
    }

    free = counters & ~steppmu_used;

    if (free == 0) {
        return -EAGAIN;
    }

    *hw_idp = (unsigned int)__builtin_ctzll(free);
    steppmu_used |= 1ULL << *hw_idp;
    return 0;
}

static void
steppmu_free(struct perfmon_dev *dev, unsigned int hw_id)
{
    (void)dev;
    steppmu_used &= ~(1ULL << hw_id);
}

static void
steppmu_start(struct perfmon_dev *dev, unsigned int hw_id, uint64_t raw_event,
              unsigned int flags)
{
    struct steppmu_cpu *cpu = steppmu_cpu_local();
    struct steppmu_counter *c = &cpu->counters[hw_id];
    uint64_t now;

    (void)dev;
    (void)flags;
    c->nmi = (raw_event == STEPPMU_EV_INSTRUCTIONS_NMI);
    now = step_cpu_read(c->nmi);
    c->offset = 0 - now;
    c->wrap_at = steppmu_next_wrap(c, now);
    __atomic_fetch_and(&cpu->status, ~(1ULL << hw_id), __ATOMIC_RELAXED);
    barrier();
    WRITE_ONCE(c->running, true);
    step_cpu_start(c->nmi);
    steppmu_program(cpu);
}

static void
steppmu_stop(struct perfmon_dev *dev, unsigned int hw_id)
{
    struct steppmu_cpu *cpu = steppmu_cpu_local();
    struct steppmu_counter *c = &cpu->counters[hw_id];

    (void)dev;
    WRITE_ONCE(c->running, false);
    step_cpu_stop(c->nmi);
    steppmu_program(cpu);
}

static uint64_t
steppmu_read(struct perfmon_dev *dev, unsigned int hw_id)
{
    const struct steppmu_counter *c = &steppmu_cpu_local()->counters[hw_id];

    (void)dev;
    return (READ_ONCE(c->offset) + step_cpu_read(c->nmi)) & steppmu_mask();
}

static void
steppmu_write(struct perfmon_dev *dev, unsigned int hw_id, uint64_t value)
{
    struct steppmu_cpu *cpu = steppmu_cpu_local();
    struct steppmu_counter *c = &cpu->counters[hw_id];
    uint64_t now = step_cpu_read(c->nmi);

    (void)dev;
    WRITE_ONCE(c->offset, value - now);
    c->wrap_at = steppmu_next_wrap(c, now);
    steppmu_program(cpu);
}

static uint64_t
steppmu_handle_overflow_intr(struct perfmon_dev *dev)
{
    (void)dev;
    return __atomic_exchange_n(&steppmu_cpu_local()->status, 0,
                               __ATOMIC_RELAXED);
}

static const struct perfmon_dev_ops steppmu_ops = {
    .translate = steppmu_translate,
    .counters = steppmu_counters,
    .alloc = steppmu_alloc,
    .free = steppmu_free,
    .start = steppmu_start,
    .stop = steppmu_stop,
    .read = steppmu_read,
    .write = steppmu_write,
    .handle_overflow_intr = steppmu_handle_overflow_intr,
};

static struct perfmon_dev steppmu_device = {
    .name = "step",
    .ops = &steppmu_ops,
    .nr_pmcs = STEPPMU_NR_PMCS,
    .overflow_intr = true,
    .named_only = true,
    .events = steppmu_events,
    .nr_events = ARRAY_SIZE(steppmu_events),
};

/*
 * A deadline came (the #DB handler, interrupts disabled): the counters
 * that reached their wrap go to the core as an overflow interrupt, with
 * the frame of the instruction about to run, then every counter's next
 * wrap is asked for again.
 */
static void
steppmu_deadline(struct trap_frame *frame)
{
    struct steppmu_cpu *cpu = steppmu_cpu_local();
    uint64_t due = 0;

    for (unsigned int i = 0; i < STEPPMU_NR_PMCS; i++) {
        struct steppmu_counter *c = &cpu->counters[i];
        uint64_t now = step_cpu_read(c->nmi);

        if (READ_ONCE(c->running) && c->wrap_at != 0 && now >= c->wrap_at) {
            c->wrap_at = steppmu_next_wrap(c, now);
            due |= 1ULL << i;
        }
    }

    if (due != 0) {
        __atomic_fetch_or(&cpu->status, due, __ATOMIC_RELAXED);
        perfmon_overflow_intr(&steppmu_device, frame);
    }

    steppmu_program(cpu);
}

/* ---- setup -------------------------------------------------------------- */

static void
steppmu_parse_width(void)
{
    uint64_t width;
    int error = cmdline_get_u64("steppmu.width", &width);

    if (error == 0 && width >= STEPPMU_WIDTH_MIN && width <= 64) {
        steppmu_width = (unsigned int)width;
    } else if (error != -ENOENT) {
        log_warning("steppmu: steppmu.width must be %u..64, using %u",
                    STEPPMU_WIDTH_MIN, STEPPMU_WIDTH_DEFAULT);
    }
}

static int
steppmu_setup(void)
{
    const char *option = cmdline_get("perfmon.step");
    int error;

    if (option == NULL || strcmp(option, "off") == 0) {
        return 0;
    }

    if (strcmp(option, "on") != 0) {
        log_warning("steppmu: perfmon.step must be on or off, not '%s': "
                    "off", option);
        return 0;
    }

    steppmu_parse_width();
    steppmu_device.width = steppmu_width;
    error = step_enable(steppmu_deadline);

    if (!error) {
        error = perfmon_register(&steppmu_device);
    }

    if (error) {
        log_error("steppmu: cannot register: %s", error_str(error));
        return error;
    }

    log_info("steppmu: %u counters of %u bits, counting instructions by "
             "single-stepping (a trap per instruction)", STEPPMU_NR_PMCS,
             steppmu_width);
    return 0;
}

/*
 * After the other PMU drivers: the first registered device is the default
 * for raw codes, and this one is never meant as a default.  Optional
 * dependencies, named without their drivers' headers.
 */
INIT_OP_DECLARE(pmu_setup);
INIT_OP_DECLARE(softpmu_setup);

INIT_OP_DEFINE(steppmu_setup, INIT_OP_DEP(perfmon_setup, true),
               INIT_OP_DEP(smp_setup, true), INIT_OP_DEP(pmu_setup, false),
               INIT_OP_DEP(softpmu_setup, false));
