/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The fake PMU devices of the perfmon core's host tests (perfmon_test.c,
 * perfmon_sample_test.c): a fake device models per-CPU hardware counters:
 * fdev_count() makes events happen on one CPU, and only counters started
 * there with that raw event see them, wrapping at the device width and
 * raising an overflow status bit as a PMU would; fdev_nmi() delivers its
 * overflow interrupt on a CPU.  Device 1 counts the software events, the
 * others hardware-like events (cycles, instructions, branches, misses).
 * Like a real driver, a fake device keeps what start was told (the mode
 * flags included), keeps the driver's side of the contract (a start
 * drops the previous run's unreported overflow) and asserts the core's:
 * the global operations (translate, alloc, free) run with the allocator
 * lock held.
 */

#ifndef TESTS_UNIT_FDEV_H
#define TESTS_UNIT_FDEV_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/trap.h"
#include "kern/param.h"
#include "kern/perfmon.h"

#define NR_CPUS     4

#define FDEV_MAX_HW 16

/* Raw codes of the fake devices. */
#define RAW_CYCLES  0x3c
#define RAW_INSNS   0xc0
#define RAW_BRANCH  0xc4
#define RAW_MISS    0xc5
#define RAW_OTHER   0x99
#define RAW_REFUSED 0xdead         /* the device says: bits it does not define */
#define RAW_UNCOUNTABLE 0xbeef     /* the device says: cannot count this */
#define RAW_ONLY0   0x77        /* low byte: counts on counter 0 only */
#define RAW_HELD    0x66        /* low byte: needs the device's one extra
                                   register, holding bits 15:8 */

/*
 * The steps of the core's use of a counter at which a test may act
 * (fdev->step_hook): just after a read, just before a write, a start or
 * a stop takes effect, as the overflow interrupt handler begins,
 * before it reads the device's overflow status (hw_id 0 then), and just
 * before a transfer reprograms a counter.
 */
enum fdev_step {
    FDEV_STEP_READ,
    FDEV_STEP_WRITE,
    FDEV_STEP_START,
    FDEV_STEP_STOP,
    FDEV_STEP_OVF,
    FDEV_STEP_TRANSFER,
};

struct fdev_counter {
    bool running;
    uint64_t raw_event;
    unsigned int flags;                 /* PERFMON_EF_MODE bits at start */
    uint64_t value;
};

/*
 * How a fake device lets the core read its counters (fdev->read_how):
 * through its read op (the default), by RDPMC (msr_rdpmc(), index: the
 * device's index times 256 plus the hw id, which runs the read op's
 * checks and hook), or in memory (the counter's value itself: no hook).
 */
struct fdev {
    struct perfmon_dev dev;
    struct perfmon_dev_ops ops;
    bool can[PERFMON_NR_EVENTS];
    uint64_t code[PERFMON_NR_EVENTS];
    unsigned int nr_hw;                 /* hardware counters */
    unsigned int read_how;              /* PERFMON_READ_*, see above */
    bool fixed_cycles;                  /* the last counts cycles only */
    uint64_t hw_used;                   /* reserved by alloc (pinned) */
    struct fdev_counter counters[CPU_MAX][FDEV_MAX_HW];
    uint64_t status[CPU_MAX];
    uint64_t wraps[CPU_MAX];            /* counter wraps seen */
    unsigned int nr_alloc, nr_free, nr_start, nr_stop, nr_read, nr_write;
    unsigned int nr_transfer;
    unsigned int nr_counters_calls;
    uint64_t held_value;                /* the extra register's (RAW_HELD) */
    unsigned int held_refs;             /*   slots holding it */
    bool nmi_in_read;                   /* next read is hit by an NMI */
    void (*intr_in_read)(void);         /* next read is interrupted by it */
    uint64_t nmi_advance;               /* events just before that NMI */
    bool nmi_result;
    uint64_t ovf_cycles;                /* TSC the overflow handler takes */
    void (*step_hook)(struct fdev *fd, enum fdev_step step,
                      unsigned int hw_id);
};

extern struct fdev fdevs[3];

/* The named raw events of the hardware-like devices. */
extern const struct perfmon_dev_event fdev_events[2];
extern struct trap_frame test_frame;

/* The thread the test runs as, current on CPU 0. */
extern struct thread *self;

uint64_t fdev_mask(const struct fdev *fd);

/*
 * Prepare fake device i (not registered): a hardware-like PMU for i != 1,
 * a software-like one for i == 1.  intr: with an overflow interrupt.
 */
struct fdev *fdev_init(unsigned int i, unsigned int width,
                       unsigned int nr_pmcs, bool intr);

/* fdev_init(), then registered. */
struct fdev *fdev_add(unsigned int i, unsigned int width,
                      unsigned int nr_pmcs, bool intr);

/* n events of type raw happen on cpu. */
void fdev_count(struct fdev *fd, unsigned int cpu, uint64_t raw, uint64_t n);

/*
 * From a step hook: counter hw_id of the calling CPU counts n more of its
 * event (and may wrap), then the device's overflow interrupt lands there,
 * between two instructions of the core; true when it was the device's.
 */
bool fdev_nmi_here(struct fdev *fd, unsigned int hw_id, uint64_t n);

/*
 * A script of overflow interrupts at steps of the core's (it sets
 * fd->step_hook): each hits the nth step of its kind from now (1: the
 * next), after counter hw (-1: the step's own) of the CPU counted advance
 * more events.  fdev_script_done() checks that each came and was the
 * device's, and ends the script.
 */
void fdev_script_nmi(struct fdev *fd, enum fdev_step step, unsigned int nth,
                     int hw, uint64_t advance);
void fdev_script_done(struct fdev *fd);

/* An overflow interrupt of dev (fd) on cpu; true when it was the device's. */
bool dev_nmi(struct perfmon_dev *dev, unsigned int cpu);
bool fdev_nmi(struct fdev *fd, unsigned int cpu);

/*
 * Nothing of fd in use: no counter reserved or running on any CPU, no
 * slot of the core's.
 */
void fdev_assert_idle(struct fdev *fd);

/* The value of the system counter name, which must exist. */
uint64_t syscnt_value(const char *name);

/* cmocka setup: 4 CPUs, fresh fakes and core, self current on CPU 0. */
int setup(void **state);

/*
 * The read method the fake devices give the core when added (each one's
 * read_how after): the op, or in a program linking fdev_rdpmc.c, RDPMC.
 */
extern unsigned int fdev_read_how;

void init_ok(struct perfmon_event *ev, uint64_t id, unsigned int flags);

#endif /* TESTS_UNIT_FDEV_H */
