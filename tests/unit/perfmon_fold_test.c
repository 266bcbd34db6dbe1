/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the per-CPU counter record (kern/perfmon/perfmon_cpu.c)
 * and the device contract under it: the fold against the events counted
 * on random runs, at every width and read method; a start is not followed
 * by a read; a device's counters for an event.  The record's other tests
 * are in perfmon_test.c (run again by RDPMC as perfmon_rdpmc_test).
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <cmocka.h>

#include "arch/x86/cpu.h"
#include "fakes/fake_smp.h"
#include "fdev.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_control.h"
#include "kern/perfmon/perfmon_cpu.h"

/*
 * The fold, inline or not, on random runs: counts of random sizes (under
 * a period between two folds: a second wrap before the overflow NMI would
 * be lost on hardware too), overflow NMIs taken
 * at once, late, or landing inside a read after the counter moved on
 * (the pending protocol), context switches folding a thread's count,
 * and reads.  Every read agrees with the events counted, at each width,
 * by each read method.
 */
static uint64_t fold_rand_state;

/* The raw value of the one counter of fd running on cpu. */
static uint64_t
fdev_raw(const struct fdev *fd, unsigned int cpu)
{
    for (unsigned int i = 0; i < fd->nr_hw; i++) {
        if (fd->counters[cpu][i].running) {
            return fd->counters[cpu][i].value & fdev_mask(fd);
        }
    }

    fail();
    return 0;
}

/*
 * Outside a section, fd's map on cpu names exactly the slots holding its
 * counters there (sched_mask), each at its counter: the overflow
 * interrupt's common path takes the entry for the slot without a test.
 */
static void
assert_map_exact(const struct fdev *fd, unsigned int cpu_index)
{
    const struct perfmon_cpu *cpu = perfmon_cpu_get(cpu_index);
    const struct perfmon_cpu_dev *cdev = &cpu->devs[fd->dev.index];

    assert_false(cpu->busy);

    for (unsigned int hw = 0; hw < ARRAY_SIZE(cdev->slot_of_hw); hw++) {
        unsigned int slot = cdev->slot_of_hw[hw];

        if (slot != 0) {
            assert_true(cpu->sched_mask & (1ULL << (slot - 1)));
            assert_int_equal(cpu->pmcs[slot - 1].hw_id, hw);
            assert_ptr_equal(cpu->pmcs[slot - 1].dev, &fd->dev);
        }
    }

    for (uint64_t m = cpu->sched_mask; m != 0; m &= m - 1) {
        unsigned int slot = (unsigned int)__builtin_ctzll(m);

        if (cpu->pmcs[slot].dev == &fd->dev) {
            assert_int_equal(cdev->slot_of_hw[cpu->pmcs[slot].hw_id],
                             slot + 1);
        }
    }
}

static uint64_t
fold_rand(uint64_t bound)
{
    fold_rand_state = fold_rand_state * 6364136223846793005ULL
                      + 1442695040888963407ULL;
    return (bound == 0) ? 0 : (fold_rand_state >> 11) % bound;
}

static void
check_fold_random(unsigned int width, unsigned int read_how)
{
    struct perfmon_event cpu_ev, thr_ev;
    uint64_t total = 0, thr_total = 0, period, step, late;
    struct thread *t;
    struct fdev *fd;

    setup(NULL);
    t = fake_thread_create("t");
    fd = fdev_add(0, width, 4, true);
    fd->read_how = read_how;
    period = fdev_mask(fd);
    fold_rand_state = width * 31 + read_how;
    init_ok(&cpu_ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&thr_ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&cpu_ev, 0), 0);
    assert_int_equal(perfmon_event_attach(&thr_ev, self), 0);

    for (unsigned int i = 0; i < 3000; i++) {
        step = (fold_rand(4) == 0) ? fold_rand(period)
                                   : fold_rand(period >> 6);
        late = 0;
        fdev_count(fd, 0, RAW_CYCLES, step);
        total += step;
        thr_total += step;

        switch (fold_rand(7)) {
        case 0:
            /*
             * The NMI lands in the next read, the counter moved on (a read
             * in memory has no hook to land in: the counter moves on).
             */
            late = fold_rand(period - step);

            if (read_how == PERFMON_READ_MEM) {
                fdev_count(fd, 0, RAW_CYCLES, late);
            } else {
                fd->nmi_advance = late;
                fd->nmi_in_read = true;
            }

            total += late;
            thr_total += late;
            (void)perfmon_event_read(&cpu_ev);
            break;
        case 1:
            /* A switch away and back folds the thread's count. */
            fake_thread_switch(0, t);
            fake_thread_switch(0, self);
            break;
        case 2:
            /*
             * The same, the counter moving on after the switch's read and
             * its NMI landing there: the events after the read are the
             * thread's only when they wrapped the counter, the NMI then
             * making the fold read again (below).
             */
            if (read_how != PERFMON_READ_MEM) {
                late = fold_rand(period - step);
                fd->nmi_advance = late;
                fd->nmi_in_read = true;
                total += late;
            }

            fake_thread_switch(0, t);
            fake_thread_switch(0, self);
            break;
        case 3:
            /*
             * A wrap the counter is already past its last value for (the
             * NMI late), that NMI landing in the switch's fold: the fold
             * reads again, adding the period for the thread switched out.
             */
            if (read_how != PERFMON_READ_MEM) {
                fake_thread_switch(0, t);
                fake_thread_switch(0, self);

                if (fd->status[0] != 0) {
                    assert_true(fdev_nmi(fd, 0));
                }

                late = period + 1 + fold_rand(period - fdev_raw(fd, 0));
                fdev_count(fd, 0, RAW_CYCLES, late);
                total += late;
                thr_total += late;
                late = 0;
                fd->nmi_in_read = true;
                fake_thread_switch(0, t);
                fake_thread_switch(0, self);
            }
            break;
        default:
            break;
        }

        if (fd->status[0] != 0) {
            assert_true(fdev_nmi(fd, 0));
        }

        fd->nmi_in_read = false;
        assert_int_equal(perfmon_event_read(&cpu_ev), total);

        if (perfmon_event_read(&thr_ev) == thr_total + late) {
            thr_total += late;
        }

        assert_int_equal(perfmon_event_read(&thr_ev), thr_total);
        assert_map_exact(fd, 0);
    }

    assert_int_equal(perfmon_event_detach(&thr_ev), 0);
    assert_int_equal(perfmon_event_detach(&cpu_ev), 0);
    assert_map_exact(fd, 0);
}

static void
test_fold_random(void **state)
{
    static const unsigned int widths[] = { 16, 17, 24, 31, 32, 40, 48, 63, 64 };
    static const unsigned int hows[] = {
        PERFMON_READ_OP, PERFMON_READ_RDPMC, PERFMON_READ_MEM,
    };

    (void)state;

    for (unsigned int w = 0; w < ARRAY_SIZE(widths); w++) {
        for (unsigned int h = 0; h < ARRAY_SIZE(hows); h++) {
            check_fold_random(widths[w], hows[h]);
        }
    }
}

/*
 * The overflow interrupt's fold of sampling slots, inline when the counter
 * is read without a call (perfmon_cpu_fold_intr()), against the general
 * fold (perfmon_cpu_pmc_update(), which a read op gets) on the same random
 * run: two sampling events of different periods on one CPU; counts of
 * random sizes (up to a whole counter of up to 36 bits: past the value the
 * counter was armed at before its interrupt comes), a read before the interrupt now
 * and then (which may see the wrap first), the interrupt taken at once or
 * hit, in the first read of its own fold, by another that a whole turn of
 * one of the two counters raised: that slot then pending when its fold
 * begins, or after its read, or after the interrupt's fold (not sampled,
 * counted).  The counts, the records and the losses are the same step by
 * step, and the counts are the events counted.
 */
#define SAMPLING_STEPS      2000
#define SAMPLING_REC_WORDS  64
#define SAMPLING_MAX_STEP   (1ULL << 36)

struct sampling_step {
    uint64_t values[2];
    uint64_t lost;
    size_t nr_words;
    uint64_t words[SAMPLING_REC_WORDS];
};

static struct sampling_step sampling_steps[2][SAMPLING_STEPS];

/* The hardware counter of fd counting raw on cpu. */
static unsigned int
fdev_hw_of(const struct fdev *fd, unsigned int cpu, uint64_t raw)
{
    for (unsigned int i = 0; i < fd->nr_hw; i++) {
        if (fd->counters[cpu][i].running
            && fd->counters[cpu][i].raw_event == raw) {
            return i;
        }
    }

    fail();
    return 0;
}

static void
run_sampling_random(unsigned int width, unsigned int read_how, bool nested,
                    struct sampling_step *steps)
{
    static const uint64_t ids[2] = { PERFMON_EV_CYCLE,
                                     PERFMON_EV_INSTRUCTION };
    static const uint64_t raws[2] = { RAW_CYCLES, RAW_INSNS };
    const unsigned int fields = PERFMON_SF_IP | PERFMON_SF_TID
                                | PERFMON_SF_TIME | PERFMON_SF_CPU
                                | PERFMON_SF_PERIOD;
    struct perfmon_sampling s[2];
    struct perfmon_sbuf *sbuf;
    struct perfmon_event ev[2];
    uint64_t totals[2] = { 0, 0 }, mask, step;
    struct fdev *fd;

    setup(NULL);
    fd = fdev_add(0, width, 4, true);
    fd->read_how = read_how;
    mask = fdev_mask(fd);
    fold_rand_state = width * 7 + 1;
    assert_int_equal(perfmon_sbuf_create(&sbuf, 1 << 16), 0);

    for (unsigned int i = 0; i < 2; i++) {
        s[i] = (struct perfmon_sampling){
            .period = (i == 0) ? 1000 : 1537, .fields = fields, .id = i + 1,
            .sbuf = sbuf,
        };
        init_ok(&ev[i], ids[i], PERFMON_EF_KERN);
        assert_int_equal(perfmon_event_set_sampling(&ev[i], &s[i]), 0);
        assert_int_equal(perfmon_event_attach_cpu(&ev[i], 0), 0);
    }

    for (unsigned int i = 0; i < SAMPLING_STEPS; i++) {
        struct sampling_step *st = &steps[i];
        unsigned int hit;
        size_t size;

        for (unsigned int e = 0; e < 2; e++) {
            switch (fold_rand(8)) {
            case 0:
                /* No more than 2^36 events between two interrupts. */
                step = MIN(mask, SAMPLING_MAX_STEP) / 2
                       + fold_rand(MIN(mask, SAMPLING_MAX_STEP) / 2);
                break;
            case 1:
                step = fold_rand(4000);
                break;
            default:
                step = fold_rand(700);
                break;
            }

            fdev_count(fd, 0, raws[e], step);
            totals[e] += step;
        }

        hit = (unsigned int)fold_rand(6);

        /* A read before the interrupt may see the wrap first. */
        if (fold_rand(4) == 0) {
            (void)perfmon_event_read(&ev[fold_rand(2)]);
        }

        if (fd->status[0] != 0) {
            /*
             * Not the second slot's counter when both overflowed: its
             * second turn would be pending as its fold begins, folded
             * with the first as one overflow (a whole turn of a counter
             * inside the interrupt, which no hardware makes).
             */
            if (hit == 1
                && fd->status[0] == ((1ULL << fdev_hw_of(fd, 0, raws[0]))
                                     | (1ULL << fdev_hw_of(fd, 0, raws[1])))) {
                hit = 0;
            }

            if (nested && width <= 36 && hit < 2) {
                fdev_script_nmi(fd, FDEV_STEP_READ, 1,
                                (int)fdev_hw_of(fd, 0, raws[hit]), mask + 1);
                totals[hit] += mask + 1;
                assert_true(fdev_nmi(fd, 0));
                fdev_script_done(fd);
            } else {
                assert_true(fdev_nmi(fd, 0));
            }
        }

        for (unsigned int e = 0; e < 2; e++) {
            st->values[e] = perfmon_event_read(&ev[e]);
            assert_true(st->values[e] == totals[e]);
        }

        st->lost = perfmon_sbuf_lost(sbuf, 0);
        st->nr_words = 0;

        while ((size = perfmon_sbuf_read(sbuf, 0, &st->words[st->nr_words],
                                         sizeof(st->words)
                                         - st->nr_words * 8))
               != 0) {
            st->nr_words += size / 8;
        }
    }

    for (unsigned int i = 0; i < 2; i++) {
        assert_int_equal(perfmon_event_detach(&ev[i]), 0);
    }

    perfmon_sbuf_destroy(sbuf);
}

static void
test_fold_sampling_random(void **state)
{
    static const unsigned int widths[] = { 16, 24, 32, 48, 64 };
    static const unsigned int hows[] = {
        PERFMON_READ_RDPMC, PERFMON_READ_MEM,
    };

    (void)state;

    for (unsigned int w = 0; w < ARRAY_SIZE(widths); w++) {
        for (unsigned int h = 0; h < ARRAY_SIZE(hows); h++) {
            /* Memory has no hook for an interrupt to land in. */
            bool nested = hows[h] != PERFMON_READ_MEM;

            run_sampling_random(widths[w], PERFMON_READ_OP, nested,
                                sampling_steps[0]);
            run_sampling_random(widths[w], hows[h], nested,
                                sampling_steps[1]);

            for (unsigned int i = 0; i < SAMPLING_STEPS; i++) {
                const struct sampling_step *a = &sampling_steps[0][i];
                const struct sampling_step *b = &sampling_steps[1][i];

                assert_true(a->values[0] == b->values[0]);
                assert_true(a->values[1] == b->values[1]);
                assert_true(a->lost == b->lost);
                assert_int_equal(a->nr_words, b->nr_words);
                assert_memory_equal(a->words, b->words, a->nr_words * 8);
            }
        }
    }
}

/*
 * A counter passed on in place at a switch (the device's transfer): two
 * threads count one event each on one CPU, so every switch between them
 * reprograms the outgoing thread's counter for the incoming one's event.
 * Overflows land at each step: at once, left for after the switch (the
 * fold saw the wrap; the status bit stays and its NMI comes for the
 * incoming slot, which must not add a period), in the outgoing fold's
 * read (the fold reads again: those events are the outgoing thread's),
 * just before the transfer (after the fold: the incoming thread's, its
 * overflow moved to the incoming slot), and late (the counter past its
 * old value, the NMI in the fold).  A third thread without events makes
 * the counter stop and start.  Both threads' counts stay exact.
 */
struct xfer_run {
    struct fdev *fd;
    struct thread *thr[3];              /* branches, misses, none */
    struct perfmon_event ev[2];
    uint64_t total[2];
    unsigned int cur;
    uint64_t period;
};

static void
xfer_nmi_pending(struct xfer_run *r)
{
    if (r->fd->status[0] != 0) {
        assert_true(fdev_nmi(r->fd, 0));
    }
}

/* Events of both kinds; the running thread's kind is its own. */
static void
xfer_count(struct xfer_run *r, uint64_t n0, uint64_t n1)
{
    fdev_count(r->fd, 0, RAW_BRANCH, n0);
    fdev_count(r->fd, 0, RAW_MISS, n1);

    if (r->cur < 2) {
        r->total[r->cur] += (r->cur == 0) ? n0 : n1;
    }
}

static void
xfer_switch(struct xfer_run *r, unsigned int to)
{
    if (to == r->cur) {
        return;
    }

    fake_thread_switch(0, r->thr[to]);
    r->cur = to;
}

/*
 * A switch to thread to, an overflow NMI landing at the first step of the
 * core's of its kind (the counter first takes whatever NMI is due): the
 * counter wraps there, or, late, wrapped and passed its old value before
 * the switch.  Those events are the outgoing thread's: at a read, the
 * fold reads again; in a transfer, they come before its hand-over, whose
 * count ends the outgoing thread's.
 */
static void
xfer_switch_nmi(struct xfer_run *r, enum fdev_step step, unsigned int to,
                bool late)
{
    unsigned int from = r->cur;
    uint64_t raw, n;

    xfer_nmi_pending(r);

    if (from == 2) {
        return;
    }

    raw = fdev_raw(r->fd, 0);

    if (late) {
        n = r->period + 1 + fold_rand(r->period - raw - 1);
        xfer_count(r, (from == 0) ? n : 0, (from == 1) ? n : 0);
        n = 0;
    } else {
        n = r->period - raw + fold_rand(r->period / 4);
        /* Up to the transfer's hand-over, the count is the outgoing's. */
        r->total[from] += n;
    }

    fdev_script_nmi(r->fd, step, 1, -1, n);
    xfer_switch(r, to);
    fdev_script_done(r->fd);
}

static void
check_transfer_random(unsigned int width)
{
    struct xfer_run r = { 0 };

    setup(NULL);
    r.fd = fdev_add(0, width, 2, true);
    r.period = fdev_mask(r.fd) + 1;
    fold_rand_state = width * 7919;
    r.thr[0] = fake_thread_create("a");
    r.thr[1] = fake_thread_create("b");
    r.thr[2] = fake_thread_create("c");
    init_ok(&r.ev[0], PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    init_ok(&r.ev[1], PERFMON_EV_BRANCH_MISS, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach(&r.ev[0], r.thr[0]), 0);
    assert_int_equal(perfmon_event_attach(&r.ev[1], r.thr[1]), 0);
    fake_thread_switch(0, r.thr[0]);

    for (unsigned int i = 0; i < 2000; i++) {
        unsigned int other = (r.cur == 2) ? fold_rand(2) : 1 - r.cur;

        xfer_count(&r, fold_rand(r.period / 2), fold_rand(r.period / 2));

        switch (fold_rand(7)) {
        case 0:
            xfer_nmi_pending(&r);
            break;
        case 1:
            /* The wrap's NMI (if any) comes after the switch. */
            xfer_switch(&r, other);
            break;
        case 2:
            /* An overflow in the outgoing fold's read: re-folded. */
            xfer_switch_nmi(&r, FDEV_STEP_READ, 2, false);
            break;
        case 3:
            /* In the transfer, before its hand-over: the outgoing's. */
            xfer_switch_nmi(&r, FDEV_STEP_TRANSFER, 1 - r.cur, false);
            break;
        case 4:
            /*
             * Late: past its old value again, the NMI in the fold (a read,
             * or for a counter passed on, the transfer's hand-over).
             */
            if (fold_rand(2) == 0) {
                xfer_switch_nmi(&r, FDEV_STEP_READ, 2, true);
            } else {
                xfer_switch_nmi(&r, FDEV_STEP_TRANSFER, 1 - r.cur, true);
            }
            break;
        case 5:
            xfer_switch(&r, 2);
            break;
        default:
            break;
        }

        if (fold_rand(2) == 0) {
            xfer_nmi_pending(&r);
        }

        assert_int_equal(perfmon_event_read(&r.ev[0]), r.total[0]);
        assert_int_equal(perfmon_event_read(&r.ev[1]), r.total[1]);
        assert_map_exact(r.fd, 0);
    }

    assert_true(r.fd->nr_transfer > 100);
    xfer_switch(&r, 2);
    xfer_nmi_pending(&r);
    assert_int_equal(perfmon_event_read(&r.ev[0]), r.total[0]);
    assert_int_equal(perfmon_event_read(&r.ev[1]), r.total[1]);
    assert_int_equal(perfmon_event_detach(&r.ev[0]), 0);
    assert_int_equal(perfmon_event_detach(&r.ev[1]), 0);
    fdev_assert_idle(r.fd);
}

static void
test_transfer_random(void **state)
{
    static const unsigned int widths[] = { 16, 17, 24, 32, 48 };

    (void)state;

    for (unsigned int w = 0; w < ARRAY_SIZE(widths); w++) {
        check_transfer_random(widths[w]);
    }
}

/*
 * The wrap the outgoing fold saw, its NMI after the transfer: it comes
 * for the incoming slot, which adds no period (the fold counted it).
 */
static void
test_transfer_carries_wrap(void **state)
{
    struct perfmon_event ea, eb;
    struct thread *a = fake_thread_create("a"), *b = fake_thread_create("b");
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 16, 2, true);
    init_ok(&ea, PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    init_ok(&eb, PERFMON_EV_BRANCH_MISS, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach(&ea, a), 0);
    assert_int_equal(perfmon_event_attach(&eb, b), 0);
    fake_thread_switch(0, a);
    fdev_count(fd, 0, RAW_BRANCH, 60000);
    assert_int_equal(perfmon_event_read(&ea), 60000);
    fdev_count(fd, 0, RAW_BRANCH, 10000);        /* wraps; NMI not yet */
    assert_int_not_equal(fd->status[0], 0);
    fake_thread_switch(0, b);
    assert_int_equal(fd->nr_transfer, 1);
    assert_int_equal(fd->nr_start, 1);
    assert_true(fdev_nmi(fd, 0));
    fdev_count(fd, 0, RAW_MISS, 5);
    assert_int_equal(perfmon_event_read(&ea), 70000);
    assert_int_equal(perfmon_event_read(&eb), 5);
    fake_thread_switch(0, NULL);
    assert_int_equal(perfmon_event_detach(&ea), 0);
    assert_int_equal(perfmon_event_detach(&eb), 0);
}

/*
 * One round of a switch from a thread counting ea (branches, on fd,
 * initialised here) alone to one counting eb (raw_b, on fd_b) alone on CPU
 * 0, and back: passed says whether the counter passes in place each way
 * (fd's transfers), and the counts stay exact either way.
 */
static void
check_pass(struct fdev *fd, struct perfmon_event *ea,
           struct perfmon_event *eb, struct fdev *fd_b, uint64_t raw_b,
           bool passed)
{
    struct thread *a = fake_thread_create("a"), *b = fake_thread_create("b");
    unsigned int transfers = fd->nr_transfer;
    const uint64_t raw_a = RAW_BRANCH;

    init_ok(ea, PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach(ea, a), 0);
    assert_int_equal(perfmon_event_attach(eb, b), 0);
    fake_thread_switch(0, a);
    fdev_count(fd, 0, raw_a, 3);
    fake_thread_switch(0, b);
    fdev_count(fd_b, 0, raw_a, 100);
    fdev_count(fd_b, 0, raw_b, 5);
    fake_thread_switch(0, a);
    fdev_count(fd, 0, raw_a, 7);
    fdev_count(fd, 0, raw_b, 100);
    assert_int_equal(fd->nr_transfer - transfers, passed ? 2 : 0);
    fake_thread_switch(0, NULL);
    assert_int_equal(perfmon_event_read(ea), 10);
    assert_int_equal(perfmon_event_read(eb), 5);
    assert_int_equal(perfmon_event_detach(ea), 0);
    assert_int_equal(perfmon_event_detach(eb), 0);
}

/*
 * The switch's pass of a counter from one thread's only slot to the
 * other's, and where it must not pass: the incoming event prefers a
 * counter that is free (a fixed counter for cycles), the outgoing slot
 * has another user here (a CPU event sharing it), the incoming slot is
 * a group's, or it is another device's.  A preferred counter taken, the
 * pass goes on.
 */
static void
test_transfer_refused(void **state)
{
    struct perfmon_event ea, eb, cpu_ev, other;
    struct fdev *fd, *fd1;

    (void)state;
    fd = fdev_add(0, 48, 3, true);
    fd1 = fdev_add(2, 48, 3, true);
    fd->fixed_cycles = true;

    init_ok(&eb, PERFMON_EV_BRANCH_MISS, PERFMON_EF_KERN);
    check_pass(fd, &ea, &eb, fd, RAW_MISS, true);

    init_ok(&eb, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    check_pass(fd, &ea, &eb, fd, RAW_CYCLES, false);

    /* The fixed counter taken (another mode's slot), cycles may pass. */
    init_ok(&other, PERFMON_EV_CYCLE, PERFMON_EF_KERN | PERFMON_EF_USER);
    assert_int_equal(perfmon_event_attach_cpu(&other, 0), 0);
    init_ok(&eb, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    check_pass(fd, &ea, &eb, fd, RAW_CYCLES, true);
    assert_int_equal(perfmon_event_detach(&other), 0);

    init_ok(&cpu_ev, PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&cpu_ev, 0), 0);
    init_ok(&eb, PERFMON_EV_BRANCH_MISS, PERFMON_EF_KERN);
    check_pass(fd, &ea, &eb, fd, RAW_MISS, false);
    assert_int_equal(perfmon_event_detach(&cpu_ev), 0);

    init_ok(&eb, PERFMON_EV_BRANCH_MISS, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_set_group(&eb, &eb), 0);
    check_pass(fd, &ea, &eb, fd, RAW_MISS, false);

    init_ok(&eb, PERFMON_EV_BRANCH_MISS, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_set_dev(&eb, &fd1->dev), 0);
    check_pass(fd, &ea, &eb, fd1, RAW_MISS, false);
    assert_int_equal(fd1->nr_transfer, 0);
    fdev_assert_idle(fd);
    fdev_assert_idle(fd1);
}

/*
 * A slot waiting for a counter gets the one a switch frees: the counter
 * is not passed on past it.  Two counters: a CPU event holds one, the
 * outgoing thread's the other, a second CPU event waits.  At the switch
 * the waiting event and the incoming thread's take turns by share (both
 * ran nothing yet): both run, the first CPU event waits.
 */
static void
test_transfer_not_past_waiting(void **state)
{
    struct perfmon_event ea, eb, z, w;
    struct thread *a = fake_thread_create("a"), *b = fake_thread_create("b");
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 2, true);
    init_ok(&ea, PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    init_ok(&eb, PERFMON_EV_BRANCH_MISS, PERFMON_EF_KERN);
    init_ok(&z, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    init_ok(&w, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach(&ea, a), 0);
    assert_int_equal(perfmon_event_attach(&eb, b), 0);
    assert_int_equal(perfmon_event_attach_cpu(&z, 0), 0);
    fake_thread_switch(0, a);
    assert_int_equal(perfmon_event_attach_cpu(&w, 0), 0);
    fdev_count(fd, 0, RAW_CYCLES, 3);               /* w waits */
    fake_cpu_advance_tsc(1000);
    fake_thread_switch(0, b);

    /* One pass in place: the turn's, of z's counter to w; not ea's. */
    assert_int_equal(fd->nr_transfer, 1);
    fdev_count(fd, 0, RAW_CYCLES, 7);
    fdev_count(fd, 0, RAW_MISS, 11);
    fdev_count(fd, 0, RAW_INSNS, 13);               /* z waits */
    assert_int_equal(perfmon_event_read(&w), 7);
    assert_int_equal(perfmon_event_read(&eb), 11);
    assert_int_equal(perfmon_event_read(&z), 0);
    fake_thread_switch(0, NULL);
    assert_int_equal(perfmon_event_detach(&w), 0);
    assert_int_equal(perfmon_event_detach(&z), 0);
    assert_int_equal(perfmon_event_detach(&ea), 0);
    assert_int_equal(perfmon_event_detach(&eb), 0);
    fdev_assert_idle(fd);
}

/*
 * The same when the switches themselves change what allowed it: a's
 * event counts on counter 0 only, a CPU event counts beside it; a and b
 * pass a counter back and forth; a thread with two events takes turns
 * with the CPU event, which then holds counter 0 when a comes back, and
 * a's event waits (no section on the CPU, only switches).  The next
 * switch to b must not pass the counter a's event no longer holds (the
 * CPU event's): it stops and starts, and the CPU event counts on.
 */
static void
test_transfer_known_switches_changed(void **state)
{
    struct perfmon_event ea, eb, ec[2], cpu_ev;
    struct thread *a = fake_thread_create("a"), *b = fake_thread_create("b");
    struct thread *c = fake_thread_create("c");
    unsigned int transfers;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 2, true);
    init_ok(&ea, RAW_ONLY0, PERFMON_EF_KERN | PERFMON_EF_RAW);
    init_ok(&eb, PERFMON_EV_BRANCH_MISS, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach(&ea, a), 0);
    assert_int_equal(perfmon_event_attach(&eb, b), 0);

    for (unsigned int i = 0; i < 2; i++) {
        init_ok(&ec[i], PERFMON_EV_CYCLE,
                PERFMON_EF_KERN | ((i == 0) ? PERFMON_EF_USER : 0));
        assert_int_equal(perfmon_event_attach(&ec[i], c), 0);
    }

    fake_thread_switch(0, a);
    init_ok(&cpu_ev, PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&cpu_ev, 0), 0);
    fake_cpu_advance_tsc(1000);
    fake_thread_switch(0, b);
    fake_cpu_advance_tsc(1000);
    fake_thread_switch(0, a);
    assert_int_equal(fd->nr_transfer, 2);
    fake_cpu_advance_tsc(1000);
    fake_thread_switch(0, c);
    fake_cpu_advance_tsc(1000);
    fake_thread_switch(0, a);
    assert_int_equal(perfmon_cpus[0].sched_mask
                     & perfmon_slot_bit(ea.slot), 0);
    transfers = fd->nr_transfer;
    fake_thread_switch(0, b);
    assert_int_equal(fd->nr_transfer, transfers);
    fdev_count(fd, 0, RAW_BRANCH, 7);
    assert_int_equal(perfmon_event_read(&cpu_ev), 7);
    fake_thread_switch(0, NULL);
    assert_int_equal(perfmon_event_detach(&cpu_ev), 0);
    assert_int_equal(perfmon_event_detach(&ea), 0);
    assert_int_equal(perfmon_event_detach(&eb), 0);
    assert_int_equal(perfmon_event_detach(&ec[0]), 0);
    assert_int_equal(perfmon_event_detach(&ec[1]), 0);
}

/*
 * A pass the switch found allowed is taken again without the checks
 * while nothing but passes changed (perfmon_td_pass_check); a slot
 * allocated since may be another slot at the same place.  Threads a and
 * b pass a counter back and forth; b's event goes, and one of a group of
 * its own (which never passes) takes its slot while b does not run, no
 * section on the CPU meanwhile: the next switch to b starts its counter.
 */
static void
test_transfer_known_slot_reused(void **state)
{
    struct perfmon_event ea, eb, eg;
    struct thread *a = fake_thread_create("a"), *b = fake_thread_create("b");
    unsigned int slot;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 2, true);
    init_ok(&ea, PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    init_ok(&eb, PERFMON_EV_BRANCH_MISS, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach(&ea, a), 0);
    assert_int_equal(perfmon_event_attach(&eb, b), 0);
    slot = eb.slot;
    fake_thread_switch(0, a);
    fake_thread_switch(0, b);
    fake_thread_switch(0, a);
    fake_thread_switch(0, b);
    fake_thread_switch(0, a);
    assert_int_equal(fd->nr_transfer, 4);
    assert_int_equal(perfmon_event_detach(&eb), 0);
    init_ok(&eg, PERFMON_EV_BRANCH_MISS, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_set_group(&eg, &eg), 0);
    assert_int_equal(perfmon_event_attach(&eg, b), 0);
    assert_int_equal(eg.slot, slot);
    fake_thread_switch(0, b);
    assert_int_equal(fd->nr_transfer, 4);
    fdev_count(fd, 0, RAW_MISS, 5);
    assert_int_equal(perfmon_event_read(&eg), 5);
    fake_thread_switch(0, NULL);
    assert_int_equal(perfmon_event_detach(&ea), 0);
    assert_int_equal(perfmon_event_detach(&eg), 0);
}

/*
 * The overflow handler called outside an NMI (the soft and step PMUs'
 * deadline calls) folds its one counting counter inline, and an NMI of the
 * same counter lands just after that fold's read, the counter a period
 * and 100 past it: the NMI only records its overflow, which the handler's
 * section folds as it ends (left pending, it would wait for some later
 * section).  Both wraps count, once each; by each read
 * method that has a read to land in.
 */
static void
check_nmi_in_counting_fold(unsigned int read_how)
{
    uint64_t overflows, intrs;
    struct perfmon_event ev;
    struct fdev *fd;

    setup(NULL);
    fd = fdev_add(0, 16, 2, true);
    fd->read_how = read_how;
    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 1), 0);
    fdev_count(fd, 1, RAW_CYCLES, 10);
    assert_int_equal(perfmon_event_read(&ev), 10);
    overflows = syscnt_value("perfmon_nr_overflows/1");
    intrs = syscnt_value("perfmon_nr_intrs/1");

    /* The counter back at 10: only the interrupt says it wrapped. */
    fdev_count(fd, 1, RAW_CYCLES, 65536);
    fdev_script_nmi(fd, FDEV_STEP_READ, 1, -1, 65536 + 100);
    assert_true(fdev_nmi(fd, 1));
    fdev_script_done(fd);
    assert_int_equal(fd->status[1], 0);
    assert_int_equal(perfmon_cpu_get(1)->pending, 0);
    assert_int_equal(syscnt_value("perfmon_nr_overflows/1") - overflows, 2);
    assert_int_equal(syscnt_value("perfmon_nr_intrs/1") - intrs, 2);
    assert_int_equal(perfmon_event_read(&ev), 10 + 2 * 65536 + 100);
    assert_map_exact(fd, 1);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

static void
test_nmi_in_counting_fold(void **state)
{
    (void)state;
    check_nmi_in_counting_fold(PERFMON_READ_RDPMC);
    check_nmi_in_counting_fold(PERFMON_READ_OP);
}

/*
 * Two counting counters wrap before one overflow interrupt: both are
 * folded by it, each wrap counted once, past its old value or not; and
 * the next interrupt, for one of them, is its alone.
 */
static void
test_nmi_two_counters(void **state)
{
    struct perfmon_event a, b;
    uint64_t overflows;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 16, 2, true);
    fd->read_how = PERFMON_READ_MEM;
    init_ok(&a, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&b, PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&a, 2), 0);
    assert_int_equal(perfmon_event_attach_cpu(&b, 2), 0);
    fdev_count(fd, 2, RAW_CYCLES, 100);
    fdev_count(fd, 2, RAW_BRANCH, 200);
    assert_int_equal(perfmon_event_read(&a), 100);
    assert_int_equal(perfmon_event_read(&b), 200);
    overflows = syscnt_value("perfmon_nr_overflows/2");
    fdev_count(fd, 2, RAW_CYCLES, 65536 + 7);
    fdev_count(fd, 2, RAW_BRANCH, 65536 - 150);
    assert_int_equal(fd->status[2], 3);
    assert_true(fdev_nmi(fd, 2));
    assert_int_equal(fd->status[2], 0);
    assert_int_equal(perfmon_event_read(&a), 100 + 65536 + 7);
    assert_int_equal(perfmon_event_read(&b), 200 + 65536 - 150);
    assert_int_equal(syscnt_value("perfmon_nr_overflows/2") - overflows, 2);
    fdev_count(fd, 2, RAW_BRANCH, 65536);
    assert_true(fdev_nmi(fd, 2));
    assert_int_equal(perfmon_event_read(&a), 100 + 65536 + 7);
    assert_int_equal(perfmon_event_read(&b), 200 + 2 * 65536 - 150);
    assert_int_equal(syscnt_value("perfmon_nr_overflows/2") - overflows, 3);
    assert_false(fdev_nmi(fd, 2));
    assert_int_equal(perfmon_event_detach(&a), 0);
    assert_int_equal(perfmon_event_detach(&b), 0);
    assert_map_exact(fd, 2);
}

/* The records in sbuf's ring of cpu, consumed. */
static unsigned int
sbuf_drain(struct perfmon_sbuf *sbuf, unsigned int cpu)
{
    unsigned int n = 0;

    while (perfmon_sbuf_drop(sbuf, cpu) != 0) {
        n++;
    }

    return n;
}

/*
 * Two sampling counters complete their periods before one overflow
 * interrupt: it writes a sample for each and arms both again; the next
 * interrupt, for one of them, writes its sample alone.
 */
static void
test_nmi_two_sampling_counters(void **state)
{
    struct perfmon_sampling s = { .period = 1000, .id = 1 };
    struct perfmon_event a, b;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 32, 2, true);
    assert_int_equal(perfmon_sbuf_create(&s.sbuf, 4096), 0);
    init_ok(&a, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&b, PERFMON_EV_BRANCH, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_set_sampling(&a, &s), 0);
    assert_int_equal(perfmon_event_set_sampling(&b, &s), 0);
    assert_int_equal(perfmon_event_attach_cpu(&a, 1), 0);
    assert_int_equal(perfmon_event_attach_cpu(&b, 1), 0);
    fdev_count(fd, 1, RAW_CYCLES, 1000);
    fdev_count(fd, 1, RAW_BRANCH, 1000);
    assert_int_equal(fd->status[1], 3);
    assert_true(fdev_nmi(fd, 1));
    assert_int_equal(sbuf_drain(s.sbuf, 1), 2);
    fdev_count(fd, 1, RAW_CYCLES, 999);
    fdev_count(fd, 1, RAW_BRANCH, 999);
    assert_int_equal(fd->status[1], 0);
    fdev_count(fd, 1, RAW_BRANCH, 1);
    assert_true(fdev_nmi(fd, 1));
    assert_int_equal(sbuf_drain(s.sbuf, 1), 1);
    assert_int_equal(perfmon_event_read(&a), 1999);
    assert_int_equal(perfmon_event_read(&b), 2000);
    assert_int_equal(perfmon_event_detach(&a), 0);
    assert_int_equal(perfmon_event_detach(&b), 0);
    perfmon_sbuf_destroy(s.sbuf);
}

/* A start leaves the counter at 0: the core reads nothing after it. */
static void
test_start_reads_nothing(void **state)
{
    struct perfmon_event ev;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 4, true);
    init_ok(&ev, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 1), 0);
    assert_int_equal(fd->nr_start, 1);
    assert_int_equal(fd->nr_read, 0);
    fdev_count(fd, 1, RAW_INSNS, 42);
    assert_int_equal(perfmon_event_read(&ev), 42);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * A slot whose counter the scheduler took on this CPU reads as it was
 * when the counter stopped: its record no longer reads the counter's
 * memory, which counts for the slot that got it (the local read tests
 * no sched_mask; the record says it).  By each read method.
 */
static void
test_stopped_reads_stored(void **state)
{
    static const unsigned int hows[] = {
        PERFMON_READ_OP, PERFMON_READ_RDPMC, PERFMON_READ_MEM,
    };

    (void)state;

    for (unsigned int h = 0; h < ARRAY_SIZE(hows); h++) {
        struct perfmon_event a, b;
        uint64_t ca, cb, first = 0;
        struct fake_ctx ctx;
        struct fdev *fd;

        setup(NULL);
        fd = fdev_add(0, 48, 1, true);
        fd->read_how = hows[h];
        init_ok(&a, RAW_CYCLES, PERFMON_EF_KERN | PERFMON_EF_RAW);
        init_ok(&b, RAW_INSNS, PERFMON_EF_KERN | PERFMON_EF_RAW);
        assert_int_equal(perfmon_event_attach_cpu(&a, 0), 0);
        assert_int_equal(perfmon_event_attach_cpu(&b, 0), 0);

        /* One counter for two: whichever holds it counts, then the other. */
        for (unsigned int turn = 0; turn < 4; turn++) {
            fdev_count(fd, 0, RAW_CYCLES, 100 + turn);
            fdev_count(fd, 0, RAW_INSNS, 1000 + turn);
            ca = perfmon_event_read(&a);
            cb = perfmon_event_read(&b);
            fake_cpu_advance_tsc(30000);
            fake_ctx_enter(&ctx, 0);
            perfmon_rotate_local();
            fake_ctx_exit(&ctx);

            /*
             * The one that lost the counter: the other's events go on it,
             * past the value it stopped at, by less than a fold allows.
             */
            fdev_count(fd, 0, RAW_CYCLES, 100000);
            fdev_count(fd, 0, RAW_INSNS, 100000);

            if (fd->counters[0][0].raw_event == RAW_INSNS) {
                assert_int_equal(perfmon_event_read(&a), ca);
                first |= 1;
            } else {
                assert_int_equal(perfmon_event_read(&b), cb);
                first |= 2;
            }
        }

        /* Each lost the counter at some turn. */
        assert_int_equal(first, 3);
        assert_int_equal(perfmon_event_detach(&b), 0);
        assert_int_equal(perfmon_event_detach(&a), 0);
    }
}

/* The counters a device can count an event on, as its counters op says. */
static void
test_dev_counters(void **state)
{
    uint64_t counters = 0;
    struct fdev *fd;

    (void)state;
    fd = fdev_add(0, 48, 3, true);
    fd->fixed_cycles = true;
    assert_int_equal(perfmon_dev_counters(&fd->dev, RAW_CYCLES,
                                          PERFMON_EF_KERN, &counters), 0);
    assert_int_equal(counters, 0x7);
    assert_int_equal(perfmon_dev_counters(&fd->dev, RAW_INSNS,
                                          PERFMON_EF_USER, &counters), 0);
    assert_int_equal(counters, 0x3);
    assert_int_equal(perfmon_dev_counters(&fd->dev, RAW_ONLY0,
                                          PERFMON_EF_KERN, &counters), 0);
    assert_int_equal(counters, 0x1);
    assert_int_equal(perfmon_dev_counters(&fd->dev, RAW_UNCOUNTABLE,
                                          PERFMON_EF_KERN, &counters),
                     -ENOENT);
    assert_int_equal(perfmon_dev_counters(&fd->dev, RAW_REFUSED,
                                          PERFMON_EF_KERN, &counters),
                     -EINVAL);
    assert_int_equal(perfmon_dev_counters(NULL, RAW_CYCLES, PERFMON_EF_KERN,
                                          &counters), -EINVAL);
    assert_int_equal(perfmon_dev_counters(&fd->dev, RAW_CYCLES, 0,
                                          &counters), -EINVAL);
    assert_int_equal(perfmon_dev_counters(&fd->dev, RAW_CYCLES,
                                          PERFMON_EF_KERN | PERFMON_EF_PINNED,
                                          &counters), -EINVAL);
    assert_int_equal(perfmon_dev_counters(&fd->dev, RAW_CYCLES,
                                          PERFMON_EF_KERN, NULL), -EINVAL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_fold_random, setup),
        cmocka_unit_test_setup(test_fold_sampling_random, setup),
        cmocka_unit_test_setup(test_transfer_random, setup),
        cmocka_unit_test_setup(test_transfer_carries_wrap, setup),
        cmocka_unit_test_setup(test_transfer_not_past_waiting, setup),
        cmocka_unit_test_setup(test_transfer_refused, setup),
        cmocka_unit_test_setup(test_transfer_known_slot_reused, setup),
        cmocka_unit_test_setup(test_transfer_known_switches_changed, setup),
        cmocka_unit_test_setup(test_nmi_in_counting_fold, setup),
        cmocka_unit_test_setup(test_nmi_two_counters, setup),
        cmocka_unit_test_setup(test_nmi_two_sampling_counters, setup),
        cmocka_unit_test_setup(test_start_reads_nothing, setup),
        cmocka_unit_test_setup(test_stopped_reads_stored, setup),
        cmocka_unit_test_setup(test_dev_counters, setup),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
