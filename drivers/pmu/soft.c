/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The software PMU.  Each CPU has SOFTPMU_NR_PMCS counters; a running
 * counter keeps a 64-bit count of its event on that CPU, of which the core
 * sees the low width bits as the raw value, so it wraps like a hardware
 * counter.  Event counters grow through the swevent handler; the clock
 * counter is the TSC minus its value at start.
 *
 * Per-CPU state is used by its own CPU only, with interrupts disabled (the
 * core's start, stop and read, and the swevent handler) or in NMI context
 * (the handler again, for NMIs, and the overflow status).  The count and
 * the status are updated with atomic operations so that an NMI landing in
 * the middle of an update on the same CPU loses nothing.
 *
 * In nmi mode an increment is split at every wrap: the part up to the wrap
 * is added, the overflow bit set, a self-NMI sent, and the rest waits until
 * the NMI handler has taken the bit, i.e. the core has folded the wrap.
 * Inside an NMI the self-NMI stays pending until the current one returns,
 * so there is no waiting there (increments from NMI context are 1).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/trap.h"
#include "drivers/pmu/soft.h"
#include "kern/assert.h"
#include "kern/clock.h"
#include "kern/cmdline.h"
#include "kern/error.h"
#include "kern/init.h"
#include "kern/log.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/string.h"
#include "kern/swevent.h"
#include "kern/syscnt.h"

/* Spins waiting for the overflow NMI before giving up on it. */
#define SOFTPMU_NMI_WAIT        1000000

/* Shortest poll interval of the clock counters in nmi mode. */
#define SOFTPMU_POLL_MIN_MS     10

/*
 * Shortest time to a clock counter's overflow, in microseconds: a clock
 * armed for a few TSC cycles (`-c 1` on cpu-clock) must not turn the timer
 * into an interrupt storm; the sample then stands for more cycles.
 */
#define SOFTPMU_CLOCK_MIN_US    20

/*
 * A counter of one CPU.  deadline: for a clock counter running and armed
 * to overflow (sampling), the TSC at which it wraps, 0 otherwise (a stop
 * clears it).  key: the event the handler counts into it, its raw_event
 * while it runs and sees its events, 0 otherwise (a clock, a counter
 * stopped or changing events, one started for user mode only on an event
 * of kernel work: see softpmu_key()); one word, so that the handler,
 * which may be an NMI landing in a start, a stop or a transfer, needs
 * only it, and that a counter announced to swevent (swevent_activate) is
 * one with a key.  The two say all a counter's state the others need: a
 * counter is 40 bytes, a CPU's counters three cache lines with its
 * status, found by a shift and an add.
 */
struct softpmu_counter {
    uint64_t raw_event;                 /* a SWEVENT_* id */
    uint64_t key;
    uint64_t deadline;
    uint64_t count;                     /* atomic: events since start */
    uint64_t tsc_start;                 /* the clock counter's start */
};

struct softpmu_cpu {
    struct softpmu_counter counters[SOFTPMU_NR_PMCS];
    uint64_t status;                    /* atomic: wrapped, NMI not taken */
    struct syscnt nr_lost_nmis;         /* waits that timed out */
} __aligned(CACHE_LINE_SIZE);

/*
 * The generic events this PMU counts, and their raw codes: the raw code of
 * a software event is its SWEVENT_* number (kern/swevent.h).
 */
static const struct {
    unsigned int id;
    unsigned int swevent;
} softpmu_events[] = {
    { PERFMON_EV_TASK_CLOCK, SWEVENT_CLOCK },
    { PERFMON_EV_CONTEXT_SWITCH, SWEVENT_CONTEXT_SWITCH },
    { PERFMON_EV_MIGRATION, SWEVENT_MIGRATION },
    { PERFMON_EV_INTERRUPT, SWEVENT_INTERRUPT },
    { PERFMON_EV_XCALL, SWEVENT_XCALL },
    { PERFMON_EV_NMI, SWEVENT_NMI },
    { PERFMON_EV_TEST, SWEVENT_TEST },
    { PERFMON_EV_XCALL_SENT, SWEVENT_XCALL_SENT },
};

/* One generic event per software event, the clock included. */
_Static_assert(ARRAY_SIZE(softpmu_events) == SWEVENT_NR - SWEVENT_CLOCK,
               "a software event without a generic event, or the reverse");

static struct softpmu_cpu softpmu_cpus[CPU_MAX];
static struct perfmon_dev softpmu_device;
static uint64_t softpmu_used;           /* serialised by the perfmon core */
static unsigned int softpmu_nr_counters = SOFTPMU_NR_PMCS;
static unsigned int softpmu_width = SOFTPMU_WIDTH_DEFAULT;
static bool softpmu_nmi = true;

static struct softpmu_cpu *
softpmu_cpu_local(void)
{
    return &softpmu_cpus[cpu_id()];
}

static uint64_t
softpmu_mask(void)
{
    return (softpmu_width >= 64) ? UINT64_MAX : (1ULL << softpmu_width) - 1;
}

/* ---- device operations -------------------------------------------------- */

static int
softpmu_translate(struct perfmon_dev *dev, uint64_t *raw_eventp,
                  unsigned int event_id)
{
    (void)dev;

    for (size_t i = 0; i < ARRAY_SIZE(softpmu_events); i++) {
        if (softpmu_events[i].id == event_id) {
            *raw_eventp = softpmu_events[i].swevent;
            return 0;
        }
    }

    return -ENOENT;
}

/*
 * The modes each software event tells apart, by raw code, from the
 * generic event table (perfmon_event_desc()), set at boot: counter starts
 * look them up on every context switch.
 */
static unsigned int softpmu_modes[SWEVENT_NR];

static void
softpmu_modes_setup(void)
{
    for (size_t i = 0; i < ARRAY_SIZE(softpmu_events); i++) {
        softpmu_modes[softpmu_events[i].swevent] =
            perfmon_event_desc(softpmu_events[i].id)->modes;
    }
}

/*
 * The key of a counter of raw_event (a valid one) started in mode flags:
 * raw_event when it sees its events, 0 when it sees none (the clock, or
 * there being no user mode, an event that tells modes apart counted in
 * user mode only).
 */
static uint64_t
softpmu_key(uint64_t raw_event, unsigned int flags)
{
    unsigned int modes = softpmu_modes[raw_event];

    if (raw_event == SWEVENT_CLOCK
        || (modes != 0 && !(flags & modes & PERFMON_EF_KERN))) {
        return 0;
    }

    return raw_event;
}

/*
 * Milliseconds the TSC takes to wrap a clock counter width bits wide
 * (UINT64_MAX: never).
 */
static uint64_t
softpmu_clock_wrap_ms(unsigned int width)
{
    return perfmon_wrap_ms(width, 1, cpu_tsc_freq());
}

/*
 * The poll interval of the clock counters (in nmi mode only they need
 * polling).
 */
static unsigned int
softpmu_clock_poll_ms(unsigned int width)
{
    return perfmon_poll_ms(softpmu_clock_wrap_ms(width), SOFTPMU_POLL_MIN_MS);
}

/* True when polls come often enough to see every wrap of the clock. */
static bool
softpmu_clock_countable(unsigned int width)
{
    return softpmu_clock_wrap_ms(width) > 2ULL * softpmu_clock_poll_ms(width);
}

/*
 * Why the clock cannot count at this width, for `perfmon list` and
 * `perfmon stat` (empty when it can); set at boot.
 */
static char softpmu_clock_refusal[128];

static void
softpmu_clock_refusal_set(void)
{
    unsigned int w = softpmu_width;

    softpmu_clock_refusal[0] = '\0';

    if (softpmu_clock_countable(w)) {
        return;
    }

    while (w < 64 && !softpmu_clock_countable(w)) {
        w++;
    }

    ksnprintf(softpmu_clock_refusal, sizeof(softpmu_clock_refusal),
              "at softpmu.width=%u the clock wraps every %llu us, too fast "
              "for its polls: boot with softpmu.width=%u or more",
              softpmu_width,
              (unsigned long long)((1ULL << softpmu_width)
                                   / MAX(cpu_tsc_freq() / 1000000, 1)), w);
}

static const char *
softpmu_why_not(struct perfmon_dev *dev, uint64_t raw_event)
{
    (void)dev;

    if (raw_event == SWEVENT_CLOCK && softpmu_clock_refusal[0] != '\0') {
        return softpmu_clock_refusal;
    }

    return NULL;
}

/*
 * Every counter counts every event, in every mode (see softpmu_key()
 * for what each mode counts), but the clock at a width where it wraps
 * within two poll intervals: it never raises an overflow NMI, only polls
 * catch its wraps, and a count would silently lose some.
 */
static int
softpmu_counters(struct perfmon_dev *dev, uint64_t raw_event,
                 unsigned int flags, uint64_t *countersp, uint64_t *preferp)
{
    (void)flags;

    if (raw_event < SWEVENT_CLOCK || raw_event >= SWEVENT_NR
        || (raw_event == SWEVENT_CLOCK && softpmu_why_not(dev, raw_event))) {
        return -ENOENT;
    }

    *countersp = (1ULL << softpmu_nr_counters) - 1;
    *preferp = 0;
    return 0;
}

static int
softpmu_alloc(struct perfmon_dev *dev, unsigned int *hw_idp,
              uint64_t raw_event, unsigned int flags)
{
    uint64_t counters, prefer, free;
    int error = softpmu_counters(dev, raw_event, flags, &counters, &prefer);

    if (error) {
        return error;
    }

    free = counters & ~softpmu_used;

    if (free == 0) {
        return -EAGAIN;
    }

    *hw_idp = (unsigned int)__builtin_ctzll(free);
    softpmu_used |= 1ULL << *hw_idp;
    return 0;
}

static void
softpmu_free(struct perfmon_dev *dev, unsigned int hw_id)
{
    (void)dev;
    softpmu_used &= ~(1ULL << hw_id);
}

/*
 * Ask the clock for the earliest wrap of the clock counters armed on this
 * CPU (or for none).  Interrupts disabled.
 */
static void
softpmu_clock_program(struct softpmu_cpu *cpu)
{
    uint64_t deadline = 0;

    for (unsigned int i = 0; i < SOFTPMU_NR_PMCS; i++) {
        const struct softpmu_counter *c = &cpu->counters[i];

        if (c->deadline != 0 && (deadline == 0 || c->deadline < deadline)) {
            deadline = c->deadline;
        }
    }

    clock_set_deadline(deadline);
}

static void
softpmu_start(struct perfmon_dev *dev, unsigned int hw_id, uint64_t raw_event,
              unsigned int flags)
{
    struct softpmu_counter *c = &softpmu_cpu_local()->counters[hw_id];

    uint64_t key = softpmu_key(raw_event, flags);

    (void)dev;
    c->raw_event = raw_event;
    __atomic_store_n(&c->count, 0, __ATOMIC_RELAXED);

    /* A wrap of an earlier user whose NMI never came is not this one's. */
    __atomic_fetch_and(&softpmu_cpu_local()->status, ~(1ULL << hw_id),
                       __ATOMIC_RELAXED);

    if (raw_event == SWEVENT_CLOCK) {
        c->tsc_start = cpu_rdtsc();
        c->deadline = 0;
    }

    /* The NMI reads the key first: the fields above must be set by then. */
    barrier();
    WRITE_ONCE(c->key, key);

    if (key != 0) {
        swevent_activate((unsigned int)key);
    }
}

static void
softpmu_stop(struct perfmon_dev *dev, unsigned int hw_id)
{
    struct softpmu_counter *c = &softpmu_cpu_local()->counters[hw_id];

    uint64_t key = c->key;

    (void)dev;
    WRITE_ONCE(c->key, 0);

    if (key != 0) {
        swevent_deactivate((unsigned int)key);
    } else if (c->raw_event == SWEVENT_CLOCK && c->deadline != 0) {
        c->deadline = 0;
        softpmu_clock_program(softpmu_cpu_local());
    }
}

static uint64_t
softpmu_read(struct perfmon_dev *dev, unsigned int hw_id)
{
    const struct softpmu_counter *c = &softpmu_cpu_local()->counters[hw_id];

    (void)dev;

    if (c->raw_event == SWEVENT_CLOCK) {
        return cpu_rdtsc() - c->tsc_start;
    }

    return __atomic_load_n(&c->count, __ATOMIC_RELAXED);
}

/*
 * The core reads an event counter's count in place, and loads it there
 * too (all softpmu_write does for one); the clock's is computed from the
 * TSC, by softpmu_read, and loaded by softpmu_write.
 */
static unsigned int
softpmu_read_method(struct perfmon_dev *dev, unsigned int hw_id,
                    uintptr_t *argp)
{
    struct softpmu_counter *c = &softpmu_cpu_local()->counters[hw_id];

    (void)dev;

    if (c->raw_event == SWEVENT_CLOCK) {
        return PERFMON_READ_OP;
    }

    *argp = (uintptr_t)&c->count;
    return PERFMON_READ_MEM;
}

/*
 * Count another event from the count the counter holds, when the clock
 * is one of the two: its count lives in its start, moved there and back,
 * and the core reads it through the op, not in place.  It counts
 * nothing (the stop's key 0) for the few instructions in between, so
 * that the handler does not count the new event into the old one; a
 * wrap it holds in the status
 * stays, the count's that goes on.  The count at the stop is the
 * hand-over's.
 */
static uint64_t __attribute__((noinline))
softpmu_transfer_clock(struct perfmon_dev *dev, unsigned int hw_id,
                       uint64_t raw_event, unsigned int flags,
                       unsigned int *read_howp, uintptr_t *argp)
{
    struct softpmu_counter *c = &softpmu_cpu_local()->counters[hw_id];
    bool was_clock = (c->raw_event == SWEVENT_CLOCK);
    uint64_t count = was_clock ? cpu_rdtsc() - c->tsc_start : 0;

    softpmu_stop(dev, hw_id);
    barrier();

    if (!was_clock) {
        count = __atomic_load_n(&c->count, __ATOMIC_RELAXED);
    }

    c->raw_event = raw_event;

    if (was_clock) {
        __atomic_store_n(&c->count, count, __ATOMIC_RELAXED);
    }

    if (raw_event == SWEVENT_CLOCK) {
        c->tsc_start = cpu_rdtsc() - __atomic_load_n(&c->count,
                                                     __ATOMIC_RELAXED);
    }

    barrier();
    WRITE_ONCE(c->key, softpmu_key(raw_event, flags));

    if (c->key != 0) {
        swevent_activate((unsigned int)c->key);
    }

    *read_howp = softpmu_read_method(dev, hw_id, argp);
    return count;
}

/*
 * Count another event from the count the counter holds.  Between two
 * event counters the count stays where it is, and so does the read
 * method (the count, in place), which the core hands in: its argument
 * names the count, and so the counter, with no look-up by CPU.  The
 * counter counts nothing while it changes events (its key 0: the handler
 * counts neither the old event nor the new), the old event is withdrawn
 * and the new announced, and the count then, the hand-over's, goes on
 * with the new.  A wrap it holds in the status stays, the count's that
 * goes on.
 */
static uint64_t
softpmu_transfer(struct perfmon_dev *dev, unsigned int hw_id,
                 uint64_t raw_event, unsigned int flags,
                 unsigned int *read_howp, uintptr_t *argp)
{
    struct softpmu_counter *c;
    uint64_t old, key, count;

    /* The clock's counter is read by the op (softpmu_read_method). */
    if (unlikely(*read_howp != PERFMON_READ_MEM
                 || raw_event == SWEVENT_CLOCK)) {
        return softpmu_transfer_clock(dev, hw_id, raw_event, flags,
                                      read_howp, argp);
    }

    c = (struct softpmu_counter *)(*argp
                                   - offsetof(struct softpmu_counter, count));
    old = c->key;
    WRITE_ONCE(c->key, 0);
    barrier();
    key = softpmu_key(raw_event, flags);
    c->raw_event = raw_event;
    swevent_move(old, key);
    count = __atomic_load_n(&c->count, __ATOMIC_RELAXED);
    barrier();
    WRITE_ONCE(c->key, key);
    return count;
}

/*
 * Load a counter.  The clock's count is the TSC minus its start, so the
 * start moves instead; it raises no NMI of its own, so the clock is asked
 * for an interrupt when it wraps (see softpmu_clock_deadline), at least
 * SOFTPMU_CLOCK_MIN_US from now.
 */
static void
softpmu_write(struct perfmon_dev *dev, unsigned int hw_id, uint64_t value)
{
    struct softpmu_cpu *cpu = softpmu_cpu_local();
    struct softpmu_counter *c = &cpu->counters[hw_id];
    uint64_t now, min_cycles;

    (void)dev;

    if (c->raw_event != SWEVENT_CLOCK) {
        __atomic_store_n(&c->count, value, __ATOMIC_RELAXED);
        return;
    }

    now = cpu_rdtsc();
    c->tsc_start = now - value;

    if (!softpmu_nmi || softpmu_width >= 64) {
        return;
    }

    min_cycles = cpu_tsc_freq() / 1000000 * SOFTPMU_CLOCK_MIN_US;
    c->deadline = MAX(c->tsc_start + (1ULL << softpmu_width),
                      now + min_cycles);
    softpmu_clock_program(cpu);
}

/*
 * The clock's deadline passed (its interrupt, interrupts disabled): the
 * clock counters due have wrapped.  They go through the core like a PMI,
 * with the timer's frame, which shows what the CPU was running.
 */
static void
softpmu_clock_deadline(struct trap_frame *frame)
{
    struct softpmu_cpu *cpu = softpmu_cpu_local();
    uint64_t now = cpu_rdtsc(), due = 0;

    for (unsigned int i = 0; i < SOFTPMU_NR_PMCS; i++) {
        struct softpmu_counter *c = &cpu->counters[i];

        if (c->deadline != 0 && now >= c->deadline) {
            c->deadline = 0;
            due |= 1ULL << i;
        }
    }

    if (due != 0) {
        __atomic_fetch_or(&cpu->status, due, __ATOMIC_RELAXED);
        perfmon_overflow_intr(&softpmu_device, frame);
    }

    softpmu_clock_program(cpu);
}

static uint64_t
softpmu_handle_overflow_intr(struct perfmon_dev *dev)
{
    (void)dev;
    return __atomic_exchange_n(&softpmu_cpu_local()->status, 0,
                               __ATOMIC_RELAXED);
}

static const struct perfmon_dev_ops softpmu_ops = {
    .translate = softpmu_translate,
    .counters = softpmu_counters,
    .alloc = softpmu_alloc,
    .free = softpmu_free,
    .start = softpmu_start,
    .stop = softpmu_stop,
    .read = softpmu_read,
    .read_method = softpmu_read_method,
    .transfer = softpmu_transfer,
    .write = softpmu_write,
    .handle_overflow_intr = softpmu_handle_overflow_intr,
    .why_not = softpmu_why_not,
};

static struct perfmon_dev softpmu_device = {
    .name = "soft",
    .ops = &softpmu_ops,
    .nr_pmcs = SOFTPMU_NR_PMCS,
    .min_arm = 1,                       /* no x86 counter's quirk */
};

/* ---- counting ----------------------------------------------------------- */

/* Report a wrap of counter hw_id and wait until the core has folded it. */
static void
softpmu_raise(struct softpmu_cpu *cpu, unsigned int hw_id)
{
    uint64_t bit = 1ULL << hw_id;

    __atomic_fetch_or(&cpu->status, bit, __ATOMIC_RELAXED);

    /*
     * Inside an NMI (counting `nmis`), the status bit is enough: the NMI
     * handlers, this driver's among them, run after the count.  Sending an
     * IPI from there could also corrupt an xAPIC ICR write the NMI
     * interrupted (its destination register is shared).
     */
    if (cpu_self()->nmi_nesting != 0) {
        return;
    }

    lapic_send_self_nmi();

    for (unsigned int i = 0; __atomic_load_n(&cpu->status, __ATOMIC_RELAXED)
                             & bit; i++) {
        if (i == SOFTPMU_NMI_WAIT) {
            syscnt_inc(&cpu->nr_lost_nmis);
            return;
        }

        cpu_pause();
    }
}

/* Add n to a counter in nmi mode: one wrap, and its NMI, at a time. */
static void
softpmu_add_split(struct softpmu_cpu *cpu, unsigned int hw_id, uint64_t n)
{
    struct softpmu_counter *c = &cpu->counters[hw_id];
    uint64_t mask = softpmu_mask();

    while (n != 0) {
        uint64_t room, chunk, old;

        /* Events left before the wrap (0 stands for 2^64). */
        room = mask - (__atomic_load_n(&c->count, __ATOMIC_RELAXED) & mask)
               + 1;
        chunk = (room == 0 || n < room) ? n : room;
        old = __atomic_fetch_add(&c->count, chunk, __ATOMIC_RELAXED);
        n -= chunk;

        /* From old, not room: an NMI may have counted in between. */
        if (chunk > mask - (old & mask)) {
            softpmu_raise(cpu, hw_id);
        }
    }
}

/* The swevent handler: interrupts disabled, maybe in an NMI. */
static void
softpmu_count(unsigned int id, uint64_t n)
{
    struct softpmu_cpu *cpu = softpmu_cpu_local();
    uint64_t raw_event = id;

    for (unsigned int i = 0; i < SOFTPMU_NR_PMCS; i++) {
        struct softpmu_counter *c = &cpu->counters[i];

        if (READ_ONCE(c->key) != raw_event) {
            continue;
        }

        if (softpmu_nmi) {
            softpmu_add_split(cpu, i, n);
        } else {
            __atomic_fetch_add(&c->count, n, __ATOMIC_RELAXED);
        }
    }
}

/* ---- setup -------------------------------------------------------------- */

static void
softpmu_parse_options(void)
{
    const char *mode;
    uint64_t width, nr;
    int error;

    error = cmdline_get_u64("softpmu.width", &width);

    if (error == 0 && width >= SOFTPMU_WIDTH_MIN && width <= 64) {
        softpmu_width = (unsigned int)width;
    } else if (error != -ENOENT) {
        log_warning("softpmu: softpmu.width must be %u..64, using %u",
                    SOFTPMU_WIDTH_MIN, SOFTPMU_WIDTH_DEFAULT);
    }

    error = cmdline_get_u64("softpmu.counters", &nr);

    if (error == 0 && nr >= 1 && nr <= SOFTPMU_NR_PMCS) {
        softpmu_nr_counters = (unsigned int)nr;
    } else if (error != -ENOENT) {
        log_warning("softpmu: softpmu.counters must be 1..%u, using %u",
                    SOFTPMU_NR_PMCS, SOFTPMU_NR_PMCS);
    }

    mode = cmdline_get("softpmu.overflow");

    if (mode != NULL && strcmp(mode, "poll") == 0) {
        softpmu_nmi = false;
    } else if (mode != NULL && strcmp(mode, "nmi") != 0) {
        log_warning("softpmu: softpmu.overflow must be poll or nmi, "
                    "using nmi");
    }
}

static int
softpmu_setup(void)
{
    unsigned int nr_cpus = cpu_count();
    int error;

    softpmu_parse_options();
    softpmu_modes_setup();
    softpmu_clock_refusal_set();

    for (unsigned int i = 0; i < nr_cpus; i++) {
        syscnt_register_cpu(&softpmu_cpus[i].nr_lost_nmis, "softpmu_lost_nmis",
                            i);
    }

    softpmu_device.width = softpmu_width;
    softpmu_device.nr_pmcs = softpmu_nr_counters;

    if (softpmu_nmi) {
        softpmu_device.overflow_intr = true;
        softpmu_device.poll_ms = softpmu_clock_poll_ms(softpmu_width);
        trap_nmi_register(perfmon_overflow_nmi, &softpmu_device);
        clock_set_deadline_handler(softpmu_clock_deadline);
    }

    swevent_set_handler(softpmu_count);
    error = perfmon_register(&softpmu_device);

    if (error) {
        log_error("softpmu: cannot register: %s", error_str(error));
        return error;
    }

    log_info("softpmu: %u counters of %u bits, overflow by %s",
             softpmu_nr_counters, softpmu_width,
             softpmu_nmi ? "nmi" : "poll");
    return 0;
}

/*
 * After the hardware probe, whatever it found: the first registered device
 * is the default for raw event codes, and rNNNN should mean the hardware's
 * encoding when there is hardware.  An optional dependency, named without
 * the hardware driver's header.
 */
INIT_OP_DECLARE(pmu_setup);

INIT_OP_DEFINE(softpmu_setup, INIT_OP_DEP(perfmon_setup, true),
               INIT_OP_DEP(lapic_setup, true), INIT_OP_DEP(pmu_setup, false));
