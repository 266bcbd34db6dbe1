/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of sampling in the perfmon core (kern/perfmon/perfmon.c,
 * kern/perfmon/perfmon_pmc.c, kern/perfmon/perfmon_sample.c) against the fake devices of
 * fdev.c: a fixed period gives exactly total / period samples, with skid
 * and with periods longer than the counter; a thread's progress to its
 * next sample follows it across a switch and a migration; frequency mode
 * converges on a steady, a changing and a bursty load and never reaches a
 * period of 0; throttling doubles the period and says so; an overflow in
 * the middle of a perfmon section is counted and re-armed, not sampled;
 * a full ring drops and counts samples (branch stacks:
 * perfmon_branch_test.c); every refusal (bad arguments, devices that cannot sample, sharing that
 * cannot work) and the decoding of damaged records.  Records read from a
 * buffer are the reference writer's byte for byte, their raw call chains
 * cut by the read where the reference's walk stopped, at the ring's end
 * too, with what follows moved down, and the read's size contract holds
 * for the size as read.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "arch/x86/cpu.h"
#include "arch/x86/trap.h"
#include "fakes/fake_kmem.h"
#include "fakes/fake_smp.h"
#include "fdev.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_control.h"
#include "kern/perfmon/perfmon_cpu.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/perfmon_ring.h"
#include "kern/syscnt.h"
#include "perfmon_sample_ref.h"

void fake_symtab_set(const char *name, uint64_t start, uint64_t end);
void fake_symtab_set_text(const void *text, size_t size);

#define ALL_FIELDS  (PERFMON_SF_IP | PERFMON_SF_TID | PERFMON_SF_TIME     \
                     | PERFMON_SF_CPU | PERFMON_SF_PERIOD                 \
                     | PERFMON_SF_CALLCHAIN)
#define TEST_IP     0xffffffff80123456ULL

static struct perfmon_sbuf *sbuf;
static uint64_t rec_buf[PERFMON_RING_MAX_REC / 8];

/* What a CPU's ring held: the samples decoded, the throttle records. */
struct drained {
    unsigned int nr_samples;
    unsigned int nr_throttles;
    uint64_t period_sum;
    uint64_t last_period;
    uint64_t throttle_period;
    struct perfmon_sample last;
};

static int
sample_setup(void **state)
{
    setup(state);
    test_frame.rip = TEST_IP;
    sbuf = NULL;
    return 0;
}

static int
sample_teardown(void **state)
{
    (void)state;
    perfmon_sbuf_destroy(sbuf);
    assert_int_equal(fake_kmem_live(), 0);
    return 0;
}

static struct perfmon_sampling
make_sampling(uint64_t period, unsigned int freq, unsigned int fields,
              size_t size)
{
    if (sbuf == NULL) {
        assert_int_equal(perfmon_sbuf_create(&sbuf, size), 0);
    }

    return (struct perfmon_sampling){
        .period = period, .freq = freq, .fields = fields, .id = 7,
        .sbuf = sbuf,
    };
}

static void
drain(unsigned int cpu, struct drained *d)
{
    size_t size;

    memset(d, 0, sizeof(*d));

    while ((size = perfmon_sbuf_read(sbuf, cpu, rec_buf, sizeof(rec_buf)))
           != 0) {
        const struct perfmon_rec_hdr *hdr = (const void *)rec_buf;

        if (hdr->type == PERFMON_REC_THROTTLE) {
            const uint64_t *payload = (const uint64_t *)(hdr + 1);

            assert_int_equal(hdr->misc, 7);
            d->nr_throttles++;
            d->throttle_period = payload[1];
            continue;
        }

        assert_int_equal(perfmon_sample_decode(rec_buf, size, &d->last), 0);
        d->nr_samples++;
        d->period_sum += d->last.period;
        d->last_period = d->last.period;
    }
}

/*
 * The record in rec_buf (size bytes) cut short at every 8 bytes: each
 * prefix is refused.
 */
static void
assert_every_prefix_refused(size_t size)
{
    struct perfmon_rec_hdr *hdr = (void *)rec_buf;
    struct perfmon_sample sample;
    uint32_t full = hdr->size;

    for (size_t len = sizeof(*hdr); len < size; len += 8) {
        hdr->size = (uint32_t)len;

        if (perfmon_sample_decode(rec_buf, len, &sample) != -EINVAL) {
            fail_msg("a record cut to %zu of %zu bytes was accepted", len,
                     size);
        }
    }

    hdr->size = full;
}

/*
 * total events of raw on cpu, chunk at a time, with the overflow
 * interrupt delivered after each chunk that raised one (each chunk's TSC
 * advance in tsc_per_chunk).
 */
static void
run(struct fdev *fd, unsigned int cpu, uint64_t raw, uint64_t total,
    uint64_t chunk, uint64_t tsc_per_chunk)
{
    while (total > 0) {
        uint64_t n = MIN(chunk, total);

        fdev_count(fd, cpu, raw, n);
        fake_cpu_advance_tsc(tsc_per_chunk);
        total -= n;

        if (fd->status[cpu] != 0) {
            assert_true(fdev_nmi(fd, cpu));
        }
    }
}

static struct thread *
current_on(unsigned int cpu)
{
    struct thread *t = fake_thread_create("worker");

    fake_thread_switch(cpu, t);
    return t;
}

/* ev counts id in the kernel and samples it as s. */
static void
sample_event_init(struct perfmon_event *ev, uint64_t id,
                  const struct perfmon_sampling *s)
{
    init_ok(ev, id, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_set_sampling(ev, s), 0);
}

/* ev samples id as s on cpu. */
static void
sample_event_attach_cpu(struct perfmon_event *ev, uint64_t id,
                        const struct perfmon_sampling *s, unsigned int cpu)
{
    sample_event_init(ev, id, s);
    assert_int_equal(perfmon_event_attach_cpu(ev, cpu), 0);
}

/* ev samples id as s in thread t. */
static void
sample_event_attach(struct perfmon_event *ev, uint64_t id,
                    const struct perfmon_sampling *s, struct thread *t)
{
    sample_event_init(ev, id, s);
    assert_int_equal(perfmon_event_attach(ev, t), 0);
}

/*
 * The next sample on cpu comes exactly n events of raw from now: none
 * after n - 1 of them, one with the nth (its record left in d).
 */
static void
assert_next_sample_after(struct fdev *fd, unsigned int cpu, uint64_t raw,
                         uint64_t n, struct drained *d)
{
    run(fd, cpu, raw, n - 1, n - 1, 0);
    drain(cpu, d);

    if (d->nr_samples != 0) {
        fail_msg("CPU %u: a sample before %" PRIu64 " events", cpu, n);
    }

    run(fd, cpu, raw, 1, 1, 0);
    drain(cpu, d);

    if (d->nr_samples != 1) {
        fail_msg("CPU %u: %u samples at %" PRIu64 " events, not 1", cpu,
                 d->nr_samples, n);
    }
}

/* ---- fixed period --------------------------------------------------------- */

static void
test_fixed_period_exact(void **state)
{
    struct perfmon_sampling s = make_sampling(1000, 0, ALL_FIELDS, 65536);
    struct fdev *fd = fdev_add(0, 16, 4, true);
    struct thread *t = current_on(1);
    struct perfmon_event ev;
    struct drained d;

    (void)state;
    sample_event_attach_cpu(&ev, PERFMON_EV_CYCLE, &s, 1);

    run(fd, 1, RAW_CYCLES, 50 * 1000, 1000, 0);
    drain(1, &d);
    assert_int_equal(d.nr_samples, 50);
    assert_true(d.period_sum == 50 * 1000);
    assert_int_equal(d.last.fields, ALL_FIELDS);
    assert_int_equal(d.last.id, 7);
    assert_true(d.last.ip == TEST_IP);
    assert_int_equal(d.last.tid, thread_id(t));
    assert_int_equal(d.last.cpu, 1);
    assert_int_equal(d.last.nr_ips, 1);        /* fake threads: no stack */
    assert_true(d.last.ips[0] == TEST_IP);

    /* The count stays exact; nothing on the other CPUs. */
    assert_true(perfmon_event_read(&ev) == 50 * 1000);
    drain(0, &d);
    assert_int_equal(d.nr_samples, 0);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/* Interrupts come late (skid): still one sample per period counted. */
static void
test_fixed_period_skid(void **state)
{
    struct perfmon_sampling s = make_sampling(1000, 0, PERFMON_SF_PERIOD,
                                              65536);
    struct fdev *fd = fdev_add(0, 16, 4, true);
    struct perfmon_event ev;
    struct drained d;

    (void)state;
    current_on(2);
    sample_event_attach_cpu(&ev, PERFMON_EV_CYCLE, &s, 2);

    /*
     * 1003 events between interrupts: 3 past each period, which count
     * towards the next one, so the 101st sample is 700 events later.
     */
    run(fd, 2, RAW_CYCLES, 100 * 1003, 1003, 0);
    drain(2, &d);
    assert_int_equal(d.nr_samples, 100);
    assert_next_sample_after(fd, 2, RAW_CYCLES, 700, &d);
    assert_true(perfmon_event_read(&ev) == 101000);

    /*
     * Far past the period before the interrupt: one sample (as a PMU
     * with that much skid gives), and the next a period later.
     */
    run(fd, 2, RAW_CYCLES, 5000, 5000, 0);
    drain(2, &d);
    assert_int_equal(d.nr_samples, 1);
    assert_next_sample_after(fd, 2, RAW_CYCLES, 1000, &d);

    /* Exactly one period past, the edge of that rule: the same. */
    run(fd, 2, RAW_CYCLES, 2000, 2000, 0);
    drain(2, &d);
    assert_int_equal(d.nr_samples, 1);
    assert_next_sample_after(fd, 2, RAW_CYCLES, 1000, &d);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/* A period the counter cannot hold is armed in steps. */
static void
test_period_longer_than_counter(void **state)
{
    struct perfmon_sampling s = make_sampling(100000, 0, PERFMON_SF_PERIOD,
                                              65536);
    struct fdev *fd = fdev_init(0, 16, 4, true);
    struct perfmon_event ev;
    struct drained d;

    (void)state;
    fd->dev.max_period = 30000;     /* set before the device registers */
    assert_int_equal(perfmon_register(&fd->dev), 0);
    current_on(1);
    sample_event_attach_cpu(&ev, PERFMON_EV_BRANCH, &s, 1);

    run(fd, 1, RAW_BRANCH, 1000000, 1000, 0);
    drain(1, &d);
    assert_int_equal(d.nr_samples, 10);
    assert_true(d.last_period == 100000);
    assert_true(perfmon_event_read(&ev) == 1000000);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * A counter read in memory is armed there too (kern/perfmon_dev.h): the
 * samples come at their period, the counts are exact, and the device's
 * write is never called.
 */
static void
test_memory_counter_armed_in_place(void **state)
{
    struct perfmon_sampling s = make_sampling(1000, 0, PERFMON_SF_PERIOD,
                                              65536);
    struct fdev *fd = fdev_add(0, 16, 4, true);
    struct perfmon_event ev;
    struct drained d;

    (void)state;
    fd->read_how = PERFMON_READ_MEM;
    current_on(1);
    sample_event_attach_cpu(&ev, PERFMON_EV_BRANCH, &s, 1);
    run(fd, 1, RAW_BRANCH, 10000, 100, 0);
    drain(1, &d);
    assert_int_equal(d.nr_samples, 10);
    assert_true(d.last_period == 1000);
    assert_true(perfmon_event_read(&ev) == 10000);
    assert_int_equal(fd->nr_write, 0);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * A device that loads at most 2^31 - 1 events in one write (Intel without
 * full-width writes): a longer period is armed in parts no longer than
 * that (the fake device checks every write), the sample after the whole.
 */
static void
test_period_split_at_device_max(void **state)
{
    const uint64_t max = 0x7fffffff, period = (1ULL << 33) + 5;
    struct perfmon_sampling s = make_sampling(period, 0, PERFMON_SF_PERIOD,
                                              65536);
    struct fdev *fd = fdev_init(0, 48, 4, true);
    struct perfmon_event ev;
    struct drained d;

    (void)state;
    fd->dev.max_period = max;       /* set before the device registers */
    assert_int_equal(perfmon_register(&fd->dev), 0);
    current_on(1);
    sample_event_attach_cpu(&ev, PERFMON_EV_BRANCH, &s, 1);
    run(fd, 1, RAW_BRANCH, 4 * max, max, 0);
    drain(1, &d);
    assert_int_equal(d.nr_samples, 0);
    assert_next_sample_after(fd, 1, RAW_BRANCH, period - 4 * max, &d);
    assert_true(d.last.period == period);
    assert_true(perfmon_event_read(&ev) == period);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * Frequency mode under throttling: once throttling doubled the period,
 * the adjustments to the frequency keep it at least there, even when the
 * event gets a thousand times rarer (which alone would take it down to
 * 300); long enough for a few periods of the floor.
 */
static void
test_freq_keeps_throttled_floor(void **state)
{
    struct perfmon_sampling s = make_sampling(0, 1000, PERFMON_SF_PERIOD,
                                              1 << 20);
    struct fdev *fd = fdev_add(0, 48, 4, true);
    struct perfmon_event ev;
    uint64_t floor;
    struct drained d;

    (void)state;
    current_on(1);
    fake_cpu_set_tsc_freq(3000000000ULL);
    sample_event_attach_cpu(&ev, PERFMON_EV_INSTRUCTION, &s, 1);
    fd->ovf_cycles = 3000000;
    run(fd, 1, RAW_INSNS, 30000000, 1000, 10000);
    drain(1, &d);
    assert_true(d.nr_throttles >= 1);
    floor = d.throttle_period;

    fd->ovf_cycles = 0;
    run(fd, 1, RAW_INSNS, 3000000, 100, 1000000);
    drain(1, &d);
    assert_true(d.nr_samples > 0);
    assert_true(d.nr_throttles == 0);
    assert_true(d.last_period >= floor);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * A thread's sampling progress and period go with its last event on the
 * slot: a new sampling event there, another recording of another period,
 * samples at its own period from its first event.
 */
static void
test_thread_progress_dropped_at_detach(void **state)
{
    struct perfmon_sampling s = make_sampling(1000, 0, PERFMON_SF_PERIOD,
                                              65536);
    struct perfmon_sampling s2 = s;
    struct fdev *fd = fdev_add(0, 32, 4, true);
    struct thread *t = fake_thread_create("sampled");
    struct perfmon_event a, b;
    struct drained d;

    (void)state;
    s2.period = 500;
    sample_event_attach(&a, PERFMON_EV_CYCLE, &s, t);
    fake_thread_switch(1, t);
    run(fd, 1, RAW_CYCLES, 600, 600, 0);
    fake_thread_switch(1, NULL);
    assert_int_equal(perfmon_event_detach(&a), 0);

    sample_event_attach(&b, PERFMON_EV_CYCLE, &s2, t);
    assert_int_equal(b.slot, a.slot);
    fake_thread_switch(1, t);
    assert_next_sample_after(fd, 1, RAW_CYCLES, 500, &d);
    assert_true(d.last.period == 500);
    fake_thread_switch(1, NULL);
    assert_int_equal(perfmon_event_detach(&b), 0);
}

/* ---- thread events --------------------------------------------------------- */

/*
 * 600 events on CPU 0, the thread switched out, moved to CPU 2, switched
 * in, 400 events there: that is the period, and the sample comes there.
 */
static void
test_thread_progress_follows(void **state)
{
    struct perfmon_sampling s = make_sampling(1000, 0, ALL_FIELDS, 65536);
    struct fdev *fd = fdev_add(0, 32, 4, true);
    struct thread *t = fake_thread_create("sampled");
    struct perfmon_event ev;
    struct drained d;

    (void)state;
    sample_event_attach(&ev, PERFMON_EV_CYCLE, &s, t);

    fake_thread_switch(0, NULL);
    fake_thread_switch(0, t);
    run(fd, 0, RAW_CYCLES, 600, 600, 0);
    fake_thread_switch(0, self);

    /* Events of another thread do not count towards its sample. */
    run(fd, 0, RAW_CYCLES, 5000, 500, 0);
    fake_thread_migrate(t, 2);
    fake_thread_switch(2, t);
    assert_next_sample_after(fd, 2, RAW_CYCLES, 400, &d);
    assert_int_equal(d.last.tid, thread_id(t));
    assert_int_equal(d.last.cpu, 2);
    drain(0, &d);
    assert_int_equal(d.nr_samples, 0);

    fake_thread_switch(2, NULL);
    assert_true(perfmon_event_read(&ev) == 1000);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * 600 events, then a CPU event takes the only counter from the thread's
 * sampling slot (a turn), and the thread is switched out while its slot
 * waits: the 600 are charged once, so 400 more events give the sample.
 */
static void
test_thread_progress_kept_while_waiting(void **state)
{
    struct perfmon_sampling s = make_sampling(1000, 0, PERFMON_SF_TID,
                                              65536);
    struct fdev *fd = fdev_add(0, 32, 1, true);
    struct thread *t = fake_thread_create("sampled");
    struct perfmon_event ev, other;
    struct fake_ctx ctx;
    struct drained d;

    (void)state;
    sample_event_attach(&ev, PERFMON_EV_CYCLE, &s, t);
    fake_thread_switch(1, t);
    run(fd, 1, RAW_CYCLES, 600, 600, 0);

    init_ok(&other, RAW_INSNS, PERFMON_EF_KERN | PERFMON_EF_RAW);
    assert_int_equal(perfmon_event_attach_cpu(&other, 1), 0);
    fake_cpu_advance_tsc(30000);
    fake_ctx_enter(&ctx, 1);
    perfmon_rotate_local();
    fake_ctx_exit(&ctx);
    fake_thread_switch(1, NULL);
    assert_int_equal(perfmon_event_detach(&other), 0);

    fake_thread_switch(1, t);
    assert_next_sample_after(fd, 1, RAW_CYCLES, 400, &d);
    assert_int_equal(d.last.tid, thread_id(t));
    fake_thread_switch(1, NULL);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/* Two threads of one recording share the counter, each with its progress. */
static void
test_threads_share_counter(void **state)
{
    struct perfmon_sampling s = make_sampling(100, 0, PERFMON_SF_TID, 65536);
    struct fdev *fd = fdev_add(0, 32, 4, true);
    struct thread *a = fake_thread_create("a"), *b = fake_thread_create("b");
    struct perfmon_event ea, eb;
    struct perfmon_dev_info info;
    struct drained d;

    (void)state;
    sample_event_attach(&ea, PERFMON_EV_CYCLE, &s, a);
    sample_event_attach(&eb, PERFMON_EV_CYCLE, &s, b);
    assert_int_equal(perfmon_dev_get_info(&fd->dev, &info), 0);
    assert_int_equal(info.nr_pmcs_used, 1);

    /* a: 60, b: 70, a: 40 (a's sample), b: 30 (b's sample). */
    fake_thread_switch(1, a);
    run(fd, 1, RAW_CYCLES, 60, 60, 0);
    fake_thread_switch(1, b);
    run(fd, 1, RAW_CYCLES, 70, 70, 0);
    fake_thread_switch(1, a);
    run(fd, 1, RAW_CYCLES, 40, 40, 0);
    drain(1, &d);
    assert_int_equal(d.nr_samples, 1);
    assert_int_equal(d.last.tid, thread_id(a));
    fake_thread_switch(1, b);
    run(fd, 1, RAW_CYCLES, 30, 30, 0);
    drain(1, &d);
    assert_int_equal(d.nr_samples, 1);
    assert_int_equal(d.last.tid, thread_id(b));

    fake_thread_switch(1, NULL);
    assert_true(perfmon_event_read(&ea) == 100);
    assert_true(perfmon_event_read(&eb) == 100);
    assert_int_equal(perfmon_event_detach(&ea), 0);
    assert_int_equal(perfmon_event_detach(&eb), 0);
}

/*
 * A switch between two threads sharing a sampling counter stops it and
 * starts it again in one section.  An overflow interrupt landing after
 * the counter's last fold there (here: in the re-arm after the fold of a
 * first, late interrupt) belongs to the events lost at the stop: it must
 * not come back as a wrap of the next thread's run.
 */
static void
test_overflow_before_stop_not_charged_again(void **state)
{
    struct perfmon_sampling s = make_sampling(1000, 0, PERFMON_SF_TID,
                                              65536);
    struct fdev *fd = fdev_add(0, 16, 4, true);
    struct thread *a = fake_thread_create("a"), *b = fake_thread_create("b");
    struct perfmon_event ea, eb;
    struct drained d;

    (void)state;
    sample_event_attach(&ea, PERFMON_EV_CYCLE, &s, a);
    sample_event_attach(&eb, PERFMON_EV_CYCLE, &s, b);
    fake_thread_switch(1, a);
    run(fd, 1, RAW_CYCLES, 60, 60, 0);

    /*
     * a's period is used up just before the switch, its interrupt late:
     * it lands in the switch's read, and another wrap's in the re-arm
     * that follows (the 65536 events before the write are lost).
     */
    fdev_count(fd, 1, RAW_CYCLES, 940);
    fdev_script_nmi(fd, FDEV_STEP_READ, 1, -1, 0);
    fdev_script_nmi(fd, FDEV_STEP_WRITE, 1, -1, 65536);
    fake_thread_switch(1, b);
    fdev_script_done(fd);
    assert_true(perfmon_event_read(&ea) == 1000);
    assert_true(perfmon_event_read(&eb) == 0);

    /* b counts what it counts, and samples after its own period. */
    assert_next_sample_after(fd, 1, RAW_CYCLES, 1000, &d);
    assert_int_equal(d.last.tid, thread_id(b));
    assert_true(perfmon_event_read(&eb) == 1000);
    fake_thread_switch(1, NULL);
    assert_true(perfmon_event_read(&ea) == 1000);
    assert_true(perfmon_event_read(&eb) == 1000);
    assert_int_equal(perfmon_event_detach(&ea), 0);
    assert_int_equal(perfmon_event_detach(&eb), 0);
}

/* ---- frequency mode -------------------------------------------------------- */

/*
 * One event every 10 TSC cycles at 3 GHz: 1000 samples a second need a
 * period of 300,000.  Returns the period of the last sample.
 */
static uint64_t
run_freq(struct fdev *fd, uint64_t events, uint64_t cycles_per_event)
{
    struct drained d;

    run(fd, 1, RAW_INSNS, events, 1000, 1000 * cycles_per_event);
    drain(1, &d);
    assert_true(d.nr_samples > 0);
    return d.last_period;
}

static void
test_freq_converges(void **state)
{
    struct perfmon_sampling s = make_sampling(0, 1000, PERFMON_SF_PERIOD,
                                              1 << 20);
    struct fdev *fd = fdev_add(0, 48, 4, true);
    struct perfmon_event ev;
    uint64_t period;

    (void)state;
    current_on(1);
    fake_cpu_set_tsc_freq(3000000000ULL);
    sample_event_attach_cpu(&ev, PERFMON_EV_INSTRUCTION, &s, 1);

    /* Steady: within 10% after a tenth of a second of events. */
    period = run_freq(fd, 30000000, 10);
    assert_in_range(period, 270000, 330000);

    /* The workload gets 4 times faster: the period follows. */
    period = run_freq(fd, 120000000, 10 / 4 + 0);
    assert_in_range(period, 1350000, 1650000);

    /* Idle, then a burst: no sample while idle, never a period of 0. */
    fake_cpu_advance_tsc(3000000000ULL);
    period = run_freq(fd, 5000000, 1);
    assert_true(period >= 1);
    period = run_freq(fd, 60000000, 10);
    assert_in_range(period, 270000, 330000);
    assert_true(perfmon_event_read(&ev) == 215000000);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * 20 hours at 3 GHz without a sample at 100 kHz: the TSC cycles times the
 * frequency no longer fit in 64 bits.  10^12 events over 2.16 * 10^14
 * cycles want a period of 10^12 * 3 * 10^9 / (2.16 * 10^14 * 10^5) = 138.
 */
static void
test_freq_after_a_long_idle(void **state)
{
    struct perfmon_sampling s = make_sampling(1000000000000ULL, 100000,
                                              PERFMON_SF_PERIOD, 65536);
    struct fdev *fd = fdev_add(0, 48, 4, true);
    struct perfmon_event ev;
    struct drained d;

    (void)state;
    current_on(1);
    fake_cpu_set_tsc_freq(3000000000ULL);
    sample_event_attach_cpu(&ev, PERFMON_EV_INSTRUCTION, &s, 1);
    fake_cpu_advance_tsc(216000000000000ULL);
    run(fd, 1, RAW_INSNS, 1000000000000ULL, 1000000000000ULL, 0);
    drain(1, &d);
    assert_int_equal(d.nr_samples, 1);
    assert_true(d.last.period == 1000000000000ULL);
    assert_next_sample_after(fd, 1, RAW_INSNS, 138, &d);
    assert_true(d.last.period == 138);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * Some x86 CPUs misbehave with a counter armed one event from its
 * overflow: a period of 1 samples every 2 events, and says so; and an
 * interrupt one event late leaves one event to the next sample, which
 * still comes after 2.
 */
static void
test_period_at_least_2(void **state)
{
    struct perfmon_sampling s = make_sampling(1, 0, PERFMON_SF_PERIOD,
                                              65536);
    struct fdev *fd = fdev_add(0, 48, 4, true);
    struct perfmon_event ev;
    struct drained d;

    (void)state;
    current_on(1);
    sample_event_attach_cpu(&ev, PERFMON_EV_INSTRUCTION, &s, 1);
    assert_next_sample_after(fd, 1, RAW_INSNS, 2, &d);
    assert_true(d.last.period == 2);
    run(fd, 1, RAW_INSNS, 100, 2, 0);
    drain(1, &d);
    assert_int_equal(d.nr_samples, 50);
    assert_true(d.period_sum == 100);

    /* 3 events before the interrupt: 1 towards the next, still 2 away. */
    run(fd, 1, RAW_INSNS, 3, 3, 0);
    drain(1, &d);
    assert_int_equal(d.nr_samples, 1);
    assert_next_sample_after(fd, 1, RAW_INSNS, 2, &d);
    assert_true(perfmon_event_read(&ev) == 107);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * A device whose counters may be armed one event from their overflow
 * keeps a period of 1, and a thread that meets one event a run, as a
 * thread meets its context switches, reaches every sample: the counter is
 * armed for the one event left.  A device that arms for at least 2 never
 * samples that thread (why the soft PMU says min_arm 1).
 */
static unsigned int
samples_of_one_event_runs(struct fdev *fd, struct thread *t)
{
    struct perfmon_sampling s = make_sampling(1, 0, PERFMON_SF_PERIOD,
                                              65536);
    struct perfmon_event ev;
    unsigned int nr = 0;
    struct drained d;

    sample_event_init(&ev, PERFMON_EV_INSTRUCTION, &s);
    assert_int_equal(perfmon_event_set_dev(&ev, &fd->dev), 0);
    assert_int_equal(perfmon_event_attach(&ev, t), 0);

    for (unsigned int i = 0; i < 10; i++) {
        fake_thread_switch(1, t);
        run(fd, 1, RAW_INSNS, 1, 1, 0);
        fake_thread_switch(1, NULL);
        drain(1, &d);
        nr += d.nr_samples;
        assert_true(d.nr_samples == 0 || d.period_sum == d.nr_samples);
    }

    assert_int_equal(perfmon_event_read(&ev), 10);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    return nr;
}

static void
test_one_event_a_run(void **state)
{
    struct fdev *fd = fdev_init(0, 48, 4, true);
    struct fdev *plain = fdev_add(2, 48, 4, true);
    struct thread *t = fake_thread_create("switching");

    (void)state;
    fd->dev.min_arm = 1;
    assert_int_equal(perfmon_register(&fd->dev), 0);
    assert_int_equal(samples_of_one_event_runs(fd, t), 10);
    assert_int_equal(samples_of_one_event_runs(plain, t), 0);
}

/* The first period is the one given. */
static void
test_freq_first_period(void **state)
{
    struct perfmon_sampling s = make_sampling(500, 100, PERFMON_SF_PERIOD,
                                              65536);
    struct fdev *fd = fdev_add(0, 48, 4, true);
    struct perfmon_event ev;
    struct drained d;

    (void)state;
    current_on(1);
    sample_event_attach_cpu(&ev, PERFMON_EV_INSTRUCTION, &s, 1);
    run(fd, 1, RAW_INSNS, 500, 500, 1000);
    drain(1, &d);
    assert_int_equal(d.nr_samples, 1);
    assert_true(d.last.period == 500);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * A sample's time is the TSC in nanoseconds, exactly, also where the
 * product of TSC and 10^9 no longer fits in 64 bits.
 */
static void
test_time_exact(void **state)
{
    struct perfmon_sampling s = make_sampling(500, 0, PERFMON_SF_TIME,
                                              65536);
    struct fdev *fd = fdev_add(0, 48, 4, true);
    struct perfmon_event ev;
    struct drained d;

    (void)state;
    current_on(1);
    fake_cpu_set_tsc_freq(2994000000ULL);
    fake_cpu_advance_tsc((1ULL << 60) + 123456789);
    sample_event_attach_cpu(&ev, PERFMON_EV_INSTRUCTION, &s, 1);
    run(fd, 1, RAW_INSNS, 500, 500, 0);
    drain(1, &d);
    assert_int_equal(d.nr_samples, 1);
    /* floor((2^60 + 123456789) * 10^9 / 2994000000) */
    assert_true(d.last.time_ns == 385077322889213014ULL);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/* ---- throttling, sections, full rings ---------------------------------------- */

/* Each interrupt takes 1 ms: far above 25% of a CPU; the period doubles. */
static void
test_throttle(void **state)
{
    struct perfmon_sampling s = make_sampling(100, 0, PERFMON_SF_PERIOD,
                                              1 << 20);
    struct fdev *fd = fdev_add(0, 32, 4, true);
    struct perfmon_event ev;
    struct drained d;

    (void)state;
    current_on(1);
    fake_cpu_set_tsc_freq(3000000000ULL);
    fd->ovf_cycles = 3000000;
    sample_event_attach_cpu(&ev, PERFMON_EV_CYCLE, &s, 1);

    run(fd, 1, RAW_CYCLES, 100 * 100, 100, 0);
    drain(1, &d);
    assert_true(d.nr_throttles >= 1);
    assert_true(d.throttle_period >= 200);
    assert_true(d.last_period > 100);
    assert_true(syscnt_value("perfmon_nr_throttles/1") >= 1);
    assert_true(d.nr_samples < 100);
    assert_true(perfmon_event_read(&ev) == 100 * 100);

    /* Cheap interrupts again: the period stays where throttling put it. */
    fd->ovf_cycles = 0;
    run(fd, 1, RAW_CYCLES, 100000, 100, 300);
    drain(1, &d);
    assert_true(d.last_period >= 200);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * A host that runs the CPU a tenth of the time: between interrupts of
 * 1 ms each the vCPU is held for a second.  The CPU spends nearly all its
 * own time sampling, so it must be throttled; against the TSC's window
 * (a second free of sampling each time) it never was.
 */
static void
test_throttle_host_stalls(void **state)
{
    struct perfmon_sampling s = make_sampling(100, 0, PERFMON_SF_PERIOD,
                                              1 << 20);
    struct fdev *fd = fdev_add(0, 32, 4, true);
    struct perfmon_event ev;
    struct drained d;

    (void)state;
    current_on(1);
    fake_cpu_set_tsc_freq(3000000000ULL);
    fd->ovf_cycles = 3000000;
    sample_event_attach_cpu(&ev, PERFMON_EV_CYCLE, &s, 1);

    for (unsigned int i = 0; i < 40; i++) {
        run(fd, 1, RAW_CYCLES, 100, 100, 0);
        fake_cpu_stall(3000000000ULL);
    }

    drain(1, &d);
    assert_true(d.nr_throttles >= 1);
    assert_true(d.nr_samples < 40);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * The soft and step PMUs call the overflow handler from a deadline, which
 * is no NMI: a hardware PMU's NMI may land in it.  Here each of 0's
 * interrupts (the deadline's, taking no time) is hit as it begins by one
 * of 2's, which samples and takes 1 ms of the 100 ms window at 3 GHz.
 * Throttling starts past 25% of the window: at the 26th pair, not the
 * 13th (the time of the nested one counted twice).
 */
static void
nested_ovf_hook(struct fdev *fd, enum fdev_step step, unsigned int hw_id)
{
    (void)hw_id;

    if (fd == &fdevs[0] && step == FDEV_STEP_OVF) {
        fdev_count(&fdevs[2], 1, RAW_CYCLES, 100);
        assert_true(fdev_nmi_here(&fdevs[2], 0, 0));
    }
}

static void
test_throttle_nested_counted_once(void **state)
{
    struct perfmon_sampling s = make_sampling(100, 0, PERFMON_SF_PERIOD,
                                              1 << 20);
    struct fdev *outer = fdev_add(0, 32, 4, true);
    struct fdev *inner = fdev_add(2, 32, 4, true);
    struct perfmon_event a, b;
    struct drained d;

    (void)state;
    current_on(1);
    fake_cpu_set_tsc_freq(3000000000ULL);
    inner->ovf_cycles = 3000000;
    sample_event_attach_cpu(&a, PERFMON_EV_CYCLE, &s, 1);
    sample_event_init(&b, PERFMON_EV_CYCLE, &s);
    assert_int_equal(perfmon_event_set_dev(&b, &inner->dev), 0);
    assert_int_equal(perfmon_event_attach_cpu(&b, 1), 0);
    outer->step_hook = nested_ovf_hook;

    for (unsigned int i = 0; i < 25; i++) {
        fdev_count(outer, 1, RAW_CYCLES, 100);
        assert_true(fdev_nmi(outer, 1));
    }

    drain(1, &d);
    assert_int_equal(d.nr_samples, 2 * 25);
    assert_int_equal(d.nr_throttles, 0);
    fdev_count(outer, 1, RAW_CYCLES, 100);
    assert_true(fdev_nmi(outer, 1));
    drain(1, &d);
    assert_int_equal(d.nr_samples, 2);
    assert_int_equal(d.nr_throttles, 2);
    outer->step_hook = NULL;
    assert_int_equal(perfmon_event_detach(&a), 0);
    assert_int_equal(perfmon_event_detach(&b), 0);
}

/*
 * The overflow interrupt lands while the CPU is inside a perfmon section
 * (a remote read of the event): the wrap is counted and the counter armed
 * again, but there is no sample (the frame is gone when the section ends).
 */
static void
test_overflow_in_section(void **state)
{
    struct perfmon_sampling s = make_sampling(1000, 0, PERFMON_SF_PERIOD,
                                              65536);
    struct fdev *fd = fdev_add(0, 16, 4, true);
    struct perfmon_event ev;
    struct drained d;

    (void)state;
    current_on(1);
    sample_event_attach_cpu(&ev, PERFMON_EV_CYCLE, &s, 1);
    run(fd, 1, RAW_CYCLES, 500, 500, 0);

    fd->nmi_in_read = true;
    fd->nmi_advance = 600;
    assert_true(perfmon_event_read(&ev) >= 500);
    assert_true(fd->nmi_result);
    drain(1, &d);
    assert_int_equal(d.nr_samples, 0);
    assert_true(syscnt_value("perfmon_nr_unsampled/1") == 1);

    /*
     * Armed again, with the 100 events past the period counted: the next
     * sample is at 2000 events.
     */
    assert_next_sample_after(fd, 1, RAW_CYCLES, 900, &d);
    assert_true(perfmon_event_read(&ev) == 2000);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/* A small ring at a high rate: lost samples counted, every kept one whole. */
static void
test_ring_full(void **state)
{
    struct perfmon_sampling s = make_sampling(10, 0, ALL_FIELDS, 4096);
    struct fdev *fd = fdev_add(0, 32, 4, true);
    struct perfmon_event ev;
    struct drained d;

    (void)state;
    current_on(3);
    sample_event_attach_cpu(&ev, PERFMON_EV_CYCLE, &s, 3);

    run(fd, 3, RAW_CYCLES, 1000 * 10, 10, 0);
    drain(3, &d);
    assert_true(d.nr_samples > 0 && d.nr_samples < 1000);
    assert_true(perfmon_sbuf_lost(sbuf, 3) == 1000 - d.nr_samples);
    assert_true(perfmon_event_read(&ev) == 10000);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/* ---- refusals ---------------------------------------------------------------- */

static void
test_set_sampling_errors(void **state)
{
    struct perfmon_sampling s = make_sampling(1000, 0, ALL_FIELDS, 65536);
    struct perfmon_sampling bad;
    struct perfmon_event ev;

    (void)state;
    fdev_add(0, 32, 4, true);
    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_set_sampling(NULL, &s), -EINVAL);

    bad = s;
    bad.period = 0;
    assert_int_equal(perfmon_event_set_sampling(&ev, &bad), -EINVAL);
    bad = s;
    bad.period = PERFMON_MAX_PERIOD + 1;
    assert_int_equal(perfmon_event_set_sampling(&ev, &bad), -EINVAL);
    bad = s;
    bad.freq = PERFMON_MAX_FREQ + 1;
    assert_int_equal(perfmon_event_set_sampling(&ev, &bad), -EINVAL);
    bad = s;
    bad.fields = 0x80;
    assert_int_equal(perfmon_event_set_sampling(&ev, &bad), -EINVAL);
    bad = s;
    bad.sbuf = NULL;
    assert_int_equal(perfmon_event_set_sampling(&ev, &bad), -EINVAL);

    /* Not while attached; back to counting when not. */
    assert_int_equal(perfmon_event_set_sampling(&ev, &s), 0);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 0), 0);
    assert_int_equal(perfmon_event_set_sampling(&ev, NULL), -EINVAL);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    assert_int_equal(perfmon_event_set_sampling(&ev, NULL), 0);
}

static void
test_devices_that_cannot_sample(void **state)
{
    struct perfmon_sampling s = make_sampling(1000, 0, ALL_FIELDS, 65536);
    struct fdev *polled = fdev_add(0, 32, 4, false);
    struct fdev *nowrite = fdev_init(2, 32, 4, true);
    struct perfmon_dev_info info;
    struct perfmon_event ev;

    (void)state;
    nowrite->ops.write = NULL;
    assert_int_equal(perfmon_register(&nowrite->dev), 0);

    sample_event_init(&ev, PERFMON_EV_CYCLE, &s);
    assert_int_equal(perfmon_event_set_dev(&ev, &polled->dev), 0);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 0), -EOPNOTSUPP);
    assert_int_equal(perfmon_event_attach(&ev, self), -EOPNOTSUPP);
    assert_int_equal(perfmon_event_set_dev(&ev, &nowrite->dev), 0);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 0), -EOPNOTSUPP);

    /* Nothing was left allocated by the refusals. */
    assert_int_equal(perfmon_dev_get_info(&polled->dev, &info), 0);
    assert_int_equal(info.nr_pmcs_used, 0);
    assert_int_equal(perfmon_dev_get_info(&nowrite->dev, &info), 0);
    assert_int_equal(info.nr_pmcs_used, 0);
    assert_false(perfmon_event_attached(&ev));
}

/*
 * Counting and sampling events never share a counter, nor do CPU and
 * thread events of one sampling; CPU events of one sampling on different
 * CPUs do.
 */
static void
test_sharing_rules(void **state)
{
    struct perfmon_sampling s = make_sampling(1000, 0, ALL_FIELDS, 65536);
    struct perfmon_sampling s2 = s;
    struct fdev *fd = fdev_add(0, 32, 8, true);
    struct perfmon_event counting, c0, c1, thr, other;
    struct perfmon_dev_info info;

    (void)state;
    init_ok(&counting, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&c0, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&c1, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&thr, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&other, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_set_sampling(&c0, &s), 0);
    assert_int_equal(perfmon_event_set_sampling(&c1, &s), 0);
    assert_int_equal(perfmon_event_set_sampling(&thr, &s), 0);
    assert_int_equal(perfmon_event_set_sampling(&other, &s2), 0);

    assert_int_equal(perfmon_event_attach_cpu(&counting, 0), 0);
    assert_int_equal(perfmon_event_attach_cpu(&c0, 0), 0);
    assert_int_equal(perfmon_event_attach_cpu(&c1, 1), 0);
    assert_int_equal(perfmon_dev_get_info(&fd->dev, &info), 0);
    assert_int_equal(info.nr_pmcs_used, 2);
    assert_int_equal(perfmon_event_attach(&thr, self), 0);
    assert_int_equal(perfmon_event_attach_cpu(&other, 2), 0);
    assert_int_equal(perfmon_dev_get_info(&fd->dev, &info), 0);
    assert_int_equal(info.nr_pmcs_used, 4);

    assert_int_equal(perfmon_event_detach(&counting), 0);
    assert_int_equal(perfmon_event_detach(&c0), 0);
    assert_int_equal(perfmon_event_detach(&c1), 0);
    assert_int_equal(perfmon_event_detach(&thr), 0);
    assert_int_equal(perfmon_event_detach(&other), 0);
    assert_int_equal(perfmon_dev_get_info(&fd->dev, &info), 0);
    assert_int_equal(info.nr_pmcs_used, 0);
}

/* ---- buffers and records ------------------------------------------------------ */

static void
test_sbuf_create_errors(void **state)
{
    struct perfmon_sbuf *b = NULL;

    (void)state;
    assert_int_equal(perfmon_sbuf_create(NULL, 4096), -EINVAL);
    assert_int_equal(perfmon_sbuf_create(&b, 4095), -EINVAL);
    assert_int_equal(perfmon_sbuf_create(&b, 2048), -EINVAL);
    assert_int_equal(perfmon_sbuf_create(&b, PERFMON_SBUF_MAX * 2),
                     -EINVAL);

    /* Out of memory at every step: nothing left allocated. */
    for (unsigned int n = 0; n < NR_CPUS + 1; n++) {
        fake_kmem_fail_after_n(n);
        assert_int_equal(perfmon_sbuf_create(&b, 4096), -ENOMEM);
        assert_int_equal(fake_kmem_live(), 0);
    }

    fake_kmem_fail_after_n(FAKE_KMEM_NEVER);
    assert_int_equal(perfmon_sbuf_create(&b, 4096), 0);
    assert_int_equal(perfmon_sbuf_nr_cpus(b), NR_CPUS);
    assert_int_equal(perfmon_sbuf_size(b), 4096);
    assert_int_equal(perfmon_sbuf_read(b, NR_CPUS, rec_buf, 64), 0);
    assert_int_equal(perfmon_sbuf_lost(b, NR_CPUS), 0);
    perfmon_sbuf_destroy(b);
    perfmon_sbuf_destroy(NULL);
    assert_int_equal(perfmon_sbuf_size(NULL), 0);
    assert_int_equal(perfmon_sbuf_nr_cpus(NULL), 0);
}

/* Damaged records are refused, never read past their end. */
static void
test_decode_damaged(void **state)
{
    struct perfmon_sampling s = make_sampling(10, 0, ALL_FIELDS, 65536);
    struct fdev *fd = fdev_add(0, 32, 4, true);
    struct perfmon_rec_hdr *hdr = (void *)rec_buf;
    struct perfmon_sample sample;
    struct perfmon_event ev;
    uint32_t *head;
    size_t size;

    (void)state;
    current_on(1);
    sample_event_attach_cpu(&ev, PERFMON_EV_CYCLE, &s, 1);
    run(fd, 1, RAW_CYCLES, 10, 10, 0);
    size = perfmon_sbuf_read(sbuf, 1, rec_buf, sizeof(rec_buf));
    assert_int_equal(perfmon_sample_decode(rec_buf, size, &sample), 0);

    assert_int_equal(perfmon_sample_decode(NULL, size, &sample), -EINVAL);
    assert_int_equal(perfmon_sample_decode(rec_buf, size, NULL), -EINVAL);
    assert_int_equal(perfmon_sample_decode(rec_buf, 4, &sample), -EINVAL);
    assert_int_equal(perfmon_sample_decode(rec_buf, size - 8, &sample),
                     -EINVAL);
    hdr->type = PERFMON_REC_THROTTLE;
    assert_int_equal(perfmon_sample_decode(rec_buf, size, &sample), -EINVAL);
    hdr->type = PERFMON_REC_SAMPLE;

    /* Unknown fields, and a call chain longer than the record. */
    head = (uint32_t *)(hdr + 1);
    head[0] |= 0x80;
    assert_int_equal(perfmon_sample_decode(rec_buf, size, &sample), -EINVAL);
    head[0] &= ~0x80U;
    rec_buf[7] = 1000;      /* after header, head, ip, tid, time, cpu, period */
    assert_int_equal(perfmon_sample_decode(rec_buf, size, &sample), -EINVAL);

    /* A record shorter than its fields. */
    hdr->size = 16;
    assert_int_equal(perfmon_sample_decode(rec_buf, 16, &sample), -EINVAL);
    hdr->size = (uint32_t)size;
    assert_every_prefix_refused(size);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * A record of fields alone built by hand in rec_buf: head, then a u64
 * count of nr entries of size bytes (all zero), then extra zero bytes.
 * Returns its size.
 */
static size_t
build_array_record(unsigned int fields, uint64_t nr, size_t size,
                   size_t extra)
{
    struct perfmon_rec_hdr *hdr = (void *)rec_buf;
    uint32_t *head = (uint32_t *)(hdr + 1);
    size_t len = sizeof(*hdr) + 8 + 8 + nr * size + extra;

    assert_true(len <= sizeof(rec_buf));
    memset(rec_buf, 0, len);
    hdr->type = PERFMON_REC_SAMPLE;
    hdr->size = (uint16_t)len;
    head[0] = fields;
    head[1] = 7;
    rec_buf[2] = nr;
    return len;
}

/*
 * The bounds of decoding: a call chain or a branch stack of exactly the
 * most entries is taken, one more is not; a word more than the fields
 * ask for is no padding.
 */
static void
test_decode_bounds(void **state)
{
    struct perfmon_sample sample;
    size_t size;

    (void)state;
    size = build_array_record(PERFMON_SF_CALLCHAIN, PERFMON_MAX_CALLCHAIN,
                              8, 0);
    assert_int_equal(perfmon_sample_decode(rec_buf, size, &sample), 0);
    assert_int_equal(sample.nr_ips, PERFMON_MAX_CALLCHAIN);
    size = build_array_record(PERFMON_SF_CALLCHAIN, PERFMON_MAX_CALLCHAIN + 1,
                              8, 0);
    assert_int_equal(perfmon_sample_decode(rec_buf, size, &sample), -EINVAL);

    size = build_array_record(PERFMON_SF_BRANCH, PERFMON_MAX_BRANCHES,
                              sizeof(struct perfmon_branch), 0);
    assert_int_equal(perfmon_sample_decode(rec_buf, size, &sample), 0);
    assert_int_equal(sample.nr_branches, PERFMON_MAX_BRANCHES);
    size = build_array_record(PERFMON_SF_BRANCH, PERFMON_MAX_BRANCHES + 1,
                              sizeof(struct perfmon_branch), 0);
    assert_int_equal(perfmon_sample_decode(rec_buf, size, &sample), -EINVAL);

    size = build_array_record(PERFMON_SF_CALLCHAIN, 3, 8, 0);
    assert_int_equal(perfmon_sample_decode(rec_buf, size, &sample), 0);
    size = build_array_record(PERFMON_SF_CALLCHAIN, 3, 8, 8);
    assert_int_equal(perfmon_sample_decode(rec_buf, size, &sample), -EINVAL);
}

/*
 * A sample's call chain, from the interrupted function (past its
 * prologue, in a fake symbol) up the frames of the thread's stack: each
 * return address follows a call (indirect, then direct to the function).
 */
static void
test_callchain_walks_the_stack(void **state)
{
    /* push %rbp; mov %rsp,%rbp; ...; call *%rax; ...; call code. */
    static const uint8_t code[64] = { 0x55, 0x48, 0x89, 0xe5,
                                      [16] = 0xff, 0xd0,
                                      [32] = 0xe8, 0xdb, 0xff, 0xff, 0xff };
    static uint64_t stack[32];
    struct perfmon_sampling s = make_sampling(10, 0, ALL_FIELDS, 65536);
    struct fdev *fd = fdev_add(0, 32, 4, true);
    struct thread *t = current_on(1);
    struct perfmon_event ev;
    struct drained d;

    (void)state;
    /* The call at 32 is to code[0]: rel32 -37 from its end. */
    fake_symtab_set("leaf", (uint64_t)code, (uint64_t)code + sizeof(code));
    fake_symtab_set_text(code, sizeof(code));
    fake_thread_set_stack(t, (uint64_t)stack, (uint64_t)&stack[32]);
    stack[4] = (uint64_t)&stack[8];     /* the frame: saved rbp, return */
    stack[5] = (uint64_t)&code[18];
    stack[8] = 0;                       /* the outermost frame */
    stack[9] = (uint64_t)&code[37];
    test_frame.rip = (uint64_t)&code[8];
    test_frame.rsp = (uint64_t)&stack[2];
    test_frame.rbp = (uint64_t)&stack[4];

    sample_event_attach(&ev, PERFMON_EV_CYCLE, &s, t);
    run(fd, 1, RAW_CYCLES, 10, 10, 0);
    drain(1, &d);
    assert_int_equal(d.nr_samples, 1);
    assert_int_equal(d.last.nr_ips, 3);
    assert_int_equal(d.last.ips[0], (uint64_t)&code[8]);
    assert_int_equal(d.last.ips[1], (uint64_t)&code[17]);
    assert_int_equal(d.last.ips[2], (uint64_t)&code[36]);
    assert_int_equal(perfmon_event_detach(&ev), 0);
    fake_symtab_set(NULL, 0, 0);
    fake_symtab_set_text(NULL, 0);
    test_frame.rip = TEST_IP;
}

/* ---- leader sampling: the group's counts in the samples ------------------ */

/*
 * A group led by a sampling cycles event, with a counting instructions
 * member: each sample reads both counters on its CPU, leader first, and
 * its record is laid out word for word as kern/perfmon.h says.
 */
static void
test_read_group_layout(void **state)
{
    struct perfmon_sampling s = make_sampling(1000, 0, PERFMON_SF_IP
                                              | PERFMON_SF_PERIOD
                                              | PERFMON_SF_READ, 65536);
    struct fdev *fd = fdev_add(0, 16, 4, true);
    struct perfmon_event lead, member;
    struct perfmon_event *reads[2] = { &lead, &member };
    struct perfmon_event *both[2] = { &lead, &member };
    struct perfmon_sample sample;
    uint64_t expect[7];
    size_t size;

    (void)state;
    current_on(1);
    s.reads = reads;
    s.nr_reads = 2;
    init_ok(&lead, PERFMON_EV_CYCLE, PERFMON_EF_KERN | PERFMON_EF_DISABLED);
    init_ok(&member, PERFMON_EV_INSTRUCTION,
            PERFMON_EF_KERN | PERFMON_EF_DISABLED);
    assert_int_equal(perfmon_event_set_sampling(&lead, &s), 0);
    assert_int_equal(perfmon_event_set_group(&lead, &lead), 0);
    assert_int_equal(perfmon_event_set_group(&member, &lead), 0);
    assert_int_equal(perfmon_event_attach_cpu(&lead, 1), 0);
    assert_int_equal(perfmon_event_attach_cpu(&member, 1), 0);
    assert_int_equal(perfmon_events_enable(both, 2), 0);

    for (unsigned int i = 1; i <= 2; i++) {
        run(fd, 1, RAW_INSNS, 300 * i, 300 * i, 0);
        run(fd, 1, RAW_CYCLES, 1000, 1000, 0);
        size = perfmon_sbuf_read(sbuf, 1, rec_buf, sizeof(rec_buf));
        expect[0] = perfmon_ring_hdr_word(PERFMON_REC_SAMPLE, sizeof(expect),
                                          0);
        expect[1] = (PERFMON_SF_IP | PERFMON_SF_PERIOD | PERFMON_SF_READ)
                    | (7ULL << 32);
        expect[2] = TEST_IP;
        expect[3] = 1000;
        expect[4] = 2;
        expect[5] = 1000 * i;
        expect[6] = (i == 1) ? 300 : 900;
        assert_int_equal(size, sizeof(expect));
        assert_memory_equal(rec_buf, expect, sizeof(expect));
        assert_int_equal(perfmon_sample_decode(rec_buf, size, &sample), 0);
        assert_int_equal(sample.nr_reads, 2);
        assert_true(sample.reads[1] == expect[6]);
        assert_every_prefix_refused(size);
    }

    assert_int_equal(perfmon_event_detach(&member), 0);
    assert_int_equal(perfmon_event_detach(&lead), 0);

    /* Reads without events, or too many, are refused. */
    s.nr_reads = 0;
    assert_int_equal(perfmon_event_set_sampling(&lead, &s), -EINVAL);
    s.nr_reads = PERFMON_MAX_READS + 1;
    assert_int_equal(perfmon_event_set_sampling(&lead, &s), -EINVAL);
    reads[1] = NULL;
    s.nr_reads = 2;
    assert_int_equal(perfmon_event_set_sampling(&lead, &s), -EINVAL);
    s.reads = NULL;
    assert_int_equal(perfmon_event_set_sampling(&lead, &s), -EINVAL);
}

/* ---- records as the reference writer makes them ---------------------------- */

/*
 * A function calling itself (a direct call at 32, to its start): frames of
 * it make call chains of any depth.
 */
static const uint8_t ref_code[64] = { 0x55, 0x48, 0x89, 0xe5,
                                      [32] = 0xe8, 0xdb, 0xff, 0xff, 0xff };
static uint64_t ref_stack[512];
static uint64_t ref_data[4096 / 8];
static struct perfmon_ring ref_ring;
static uint64_t ref_out[PERFMON_RING_MAX_REC / 8];

#define REF_CPU         1
#define REF_SIZE        4096

/*
 * The frame of ref_stack whose return address follows no call (into the
 * function's body, after its prologue), or UINT_MAX: the walk goes on past
 * it, the chain ends before it.
 */
static unsigned int ref_cut = UINT_MAX;

/* The interrupted frame: in the function's body, depth frames of it below. */
static void
ref_frame_set(struct trap_frame *frame, unsigned int depth)
{
    memset(ref_stack, 0, sizeof(ref_stack));

    for (unsigned int j = 0; j < depth; j++) {
        ref_stack[8 + 2 * j] =
            (j + 1 < depth) ? (uint64_t)&ref_stack[8 + 2 * (j + 1)] : 0;
        ref_stack[9 + 2 * j] = (uint64_t)&ref_code[(j == ref_cut) ? 10 : 37];
    }

    frame->rip = (uint64_t)&ref_code[8];
    frame->rsp = (uint64_t)&ref_stack[4];
    frame->rbp = (depth != 0) ? (uint64_t)&ref_stack[8] : 0;
}

/* Both rings hold the same records, byte for byte, and lost as many. */
static void
ref_assert_same(void)
{
    size_t size, ref_size;

    assert_true(perfmon_sbuf_lost(sbuf, REF_CPU)
                == perfmon_ring_lost(&ref_ring));

    do {
        size = perfmon_sbuf_read(sbuf, REF_CPU, rec_buf, sizeof(rec_buf));
        ref_size = perfmon_ring_pop(&ref_ring, ref_out, sizeof(ref_out));
        assert_int_equal(size, ref_size);
        assert_memory_equal(rec_buf, ref_out, size);
    } while (size != 0);
}

/*
 * Branch stacks of nr entries, different for each seq, handed to the
 * interrupt as the branch-record driver does.
 */
static void
ref_branches_set(unsigned int nr, unsigned int seq)
{
    struct perfmon_branch b[PERFMON_MAX_BRANCHES];

    for (unsigned int i = 0; i < nr; i++) {
        b[i].from = 0xffffffff80100000ULL + seq * 64 + i;
        b[i].to = 0xffffffff80200000ULL + seq;
        b[i].flags = (uint64_t)(i % 3) | ((uint64_t)seq << 4);
    }

    perfmon_intr_set_branches(b, nr);
}

/*
 * One sample of fields by both writers, on a thread with a stack (or none)
 * depth frames deep, with nr_branches branch records; returns whether the
 * reference wrote it (and checks the new writer agreed).  The record's
 * place in the reference ring goes into *offp and its size into *sizep.
 */
static bool
ref_write_both(unsigned int fields, unsigned int depth,
               unsigned int nr_branches, unsigned int seq, uint64_t *offp,
               uint64_t *sizep)
{
    struct perfmon_sampling s = {
        /* The reference writer knows no READ: its test is its own. */
        .period = 1000, .fields = fields & ~PERFMON_SF_READ, .id = 100 + seq,
        .sbuf = sbuf,
    };
    struct trap_frame frame;
    uint64_t head = ref_ring.head;
    bool written;

    ref_frame_set(&frame, depth);
    ref_branches_set(nr_branches, seq);
    fake_cpu_advance_tsc(123457 * (seq + 1));
    written = ref_sample_write(&ref_ring, &s, &frame, 1000 + seq);
    assert_int_equal(perfmon_sample_write(&s, perfmon_sample_size(&s), &frame,
                                          1000 + seq), written);
    *offp = head & (REF_SIZE - 1);
    *sizep = ref_ring.head - head;
    return written;
}

/*
 * Both writers on REF_CPU, in its overflow interrupt, for thread t with a
 * stack of frames of ref_code: the buffer and the reference ring empty.
 */
static void
ref_start(struct thread *t, struct fake_ctx *ctx)
{
    make_sampling(1000, 0, 0, REF_SIZE);
    assert_int_equal(perfmon_ring_init(&ref_ring, ref_data, sizeof(ref_data)),
                     0);
    fake_cpu_set_tsc_freq(2994000000ULL);
    fake_symtab_set("self", (uint64_t)ref_code,
                    (uint64_t)ref_code + sizeof(ref_code));
    fake_symtab_set_text(ref_code, sizeof(ref_code));
    fake_thread_set_stack(t, (uint64_t)ref_stack,
                          (uint64_t)&ref_stack[ARRAY_SIZE(ref_stack)]);
    fake_thread_switch(REF_CPU, t);
    fake_ctx_enter(ctx, REF_CPU);
    /* Inside the interrupt, as perfmon_overflow_intr is: its first level. */
    perfmon_cpu_get(REF_CPU)->intr_depth = 1;
}

/* Out of the interrupt ref_start entered. */
static void
ref_stop(const struct fake_ctx *ctx)
{
    perfmon_cpu_get(REF_CPU)->intr_depth = 0;
    fake_ctx_exit(ctx);
}

/*
 * Every field combination, with call chains from 1 to past the longest
 * kept and branch stacks from none to the most, by the reference writer
 * and the new one into rings drained at different paces: the same records
 * come out, byte for byte, the same are lost when the ring is full, and
 * records are cut by the end of the ring at every 8-byte point.
 */
static void
test_records_match_reference(void **state)
{
    struct thread *t = fake_thread_create("sampled");
    bool split[PERFMON_RING_MAX_REC / 8] = { false };
    struct fake_ctx ctx;
    uint64_t off, size;
    unsigned int max_split = 0;

    (void)state;
    ref_start(t, &ctx);

    for (unsigned int seq = 0; seq < 20000; seq++) {
        unsigned int fields = seq % (PERFMON_SF_MASK + 1);
        unsigned int depth = (seq * 7) % 23;
        unsigned int nr_branches = (seq * 5) % (PERFMON_MAX_BRANCHES + 1);

        if (seq % 97 == 0) {
            depth = PERFMON_MAX_CALLCHAIN + seq % 5;
        }

        if (ref_write_both(fields, depth, nr_branches, seq, &off, &size)
            && off + size > REF_SIZE) {
            split[(REF_SIZE - off) / 8] = true;
            max_split = MAX(max_split, (unsigned int)((REF_SIZE - off) / 8));
        }

        if (seq % 211 == 0) {
            perfmon_sample_throttled(&(struct perfmon_sampling){
                                         .id = seq, .sbuf = sbuf },
                                     seq);
            ref_sample_throttled(&ref_ring,
                                 &(struct perfmon_sampling){ .id = seq },
                                 seq);
        }

        /* Drained at three paces: often, seldom, when full. */
        if (seq % ((seq / 1000) % 3 == 0 ? 3 : 17) == 0
            || ((seq / 1000) % 3 == 2 && perfmon_ring_lost(&ref_ring) != 0
                && seq % 50 == 0)) {
            ref_assert_same();
        }
    }

    ref_assert_same();
    assert_true(perfmon_ring_lost(&ref_ring) != 0);

    /* Every cut from one word into the record up to the longest seen. */
    for (unsigned int w = 1; w <= 32; w++) {
        if (!split[w]) {
            fail_msg("no record was cut %u bytes into it", w * 8);
        }
    }

    assert_true(max_split > PERFMON_MAX_CALLCHAIN);
    ref_stop(&ctx);
    fake_thread_switch(REF_CPU, NULL);
    fake_symtab_set(NULL, 0, 0);
    fake_symtab_set_text(NULL, 0);
}

/*
 * Samples of fields with a call chain into rings filled to every room
 * from 3 to 39 words, the chain as long as the room holds, one shorter,
 * one longer.  With cut, the walk goes 10 frames past the room, the
 * chain ending where it would have: the raw frames fill the room, and
 * the sample is kept when its chain fits (the read cuts the rest).
 */
static void
ref_fill_then_write(unsigned int fields, bool cut, unsigned int *seqp)
{
    uint64_t off, size;
    int depth;

    for (unsigned int room_words = 3; room_words < 40; room_words++) {
        for (int extra = -1; extra <= 1; extra++) {
            /* Fill with 8-word records to room_words words free. */
            ref_assert_same();

            while (REF_SIZE - (ref_ring.head - ref_ring.tail)
                   > room_words * 8 + 7 * 8) {
                assert_true(ref_write_both(PERFMON_SF_MASK
                                           & ~PERFMON_SF_CALLCHAIN
                                           & ~PERFMON_SF_BRANCH, 0,
                                           1, (*seqp)++, &off, &size));
            }

            while (REF_SIZE - (ref_ring.head - ref_ring.tail)
                   > room_words * 8) {
                assert_true(ref_write_both(0, 0, 0, (*seqp)++, &off, &size));
            }

            /* header, head, ip, nr, then room_words - 4 entries fit. */
            depth = MAX((int)room_words - 5 + extra, 0);
            ref_cut = cut ? (unsigned int)depth : UINT_MAX;
            ref_write_both(fields,
                           cut ? room_words + 10 : (unsigned int)depth, 0,
                           (*seqp)++, &off, &size);
            ref_cut = UINT_MAX;
            ref_assert_same();
        }
    }
}

/*
 * A ring with just the room for a sample of a call chain of depth frames:
 * it is written when the chain is that long, lost when one more frame
 * would not fit, as the reference does, also when the walk stores more
 * frames than the chain keeps; and a thread without a stack (or none at
 * all) has the interrupted address alone for a chain.
 */
static void
test_records_match_reference_when_full(void **state)
{
    struct thread *t = fake_thread_create("sampled");
    unsigned int fields = PERFMON_SF_IP | PERFMON_SF_CALLCHAIN;
    struct fake_ctx ctx;
    uint64_t off, size, lost;
    unsigned int seq = 0;

    (void)state;
    ref_start(t, &ctx);
    ref_fill_then_write(fields, false, &seq);
    lost = perfmon_ring_lost(&ref_ring);
    assert_true(lost != 0);
    ref_fill_then_write(fields, true, &seq);
    assert_true(perfmon_ring_lost(&ref_ring) == 2 * lost);

    /* No stack, then no thread: the address alone. */
    fake_thread_set_stack(t, 0, 0);
    ref_write_both(fields, 3, 0, seq++, &off, &size);
    ref_stop(&ctx);
    fake_thread_switch(REF_CPU, NULL);
    fake_ctx_enter(&ctx, REF_CPU);
    perfmon_cpu_get(REF_CPU)->intr_depth = 1;
    ref_write_both(PERFMON_SF_MASK, 3, 2, seq++, &off, &size);
    ref_assert_same();
    ref_stop(&ctx);
    fake_symtab_set(NULL, 0, 0);
    fake_symtab_set_text(NULL, 0);
}

/* The place of the next record in REF_CPU's ring of the buffer. */
static uint64_t
ref_sbuf_head(void)
{
    return perfmon_sbuf_ring(sbuf, REF_CPU)->head;
}

/*
 * Call chains cut by the check at read anywhere (their first raw frame,
 * the middle, the last one the walk stores, never), with branch stacks
 * after them: what the buffer gives out is what the reference wrote,
 * byte for byte, with the raw record cut by the end of the ring's data
 * at every 8-byte point, and the rest moved down.  Each record is read
 * as soon as written, as the raw ones take more room until then.
 */
static void
test_records_match_reference_cut(void **state)
{
    struct thread *t = fake_thread_create("sampled");
    bool split[PERFMON_RING_MAX_REC / 8] = { false };
    unsigned int nr_cut = 0;
    struct fake_ctx ctx;
    uint64_t off, size;

    (void)state;
    ref_start(t, &ctx);

    for (unsigned int seq = 0; seq < 6000; seq++) {
        unsigned int fields = (seq % (PERFMON_SF_MASK + 1))
                              | PERFMON_SF_CALLCHAIN;
        unsigned int depth = 1 + (seq * 7) % 40;
        uint64_t head = ref_sbuf_head(), raw;

        if (seq % 53 == 0) {
            depth = PERFMON_MAX_CALLCHAIN + seq % 5;
        }

        ref_cut = (seq % 11 == 0) ? UINT_MAX : (seq * 13) % (depth + 1);
        assert_true(ref_write_both(fields, depth,
                                   (seq * 5) % (PERFMON_MAX_BRANCHES + 1),
                                   seq, &off, &size));
        raw = ref_sbuf_head() - head;
        assert_true(raw >= size);
        nr_cut += (raw > size);

        if ((head & (REF_SIZE - 1)) + raw > REF_SIZE) {
            split[(REF_SIZE - (head & (REF_SIZE - 1))) / 8] = true;
        }

        ref_assert_same();
    }

    for (unsigned int w = 1; w <= 32; w++) {
        if (!split[w]) {
            fail_msg("no raw record was cut %u bytes into it", w * 8);
        }
    }

    assert_true(nr_cut > 3000);
    assert_true(perfmon_ring_lost(&ref_ring) == 0);
    ref_cut = UINT_MAX;
    ref_stop(&ctx);
    fake_thread_switch(REF_CPU, NULL);
    fake_symtab_set(NULL, 0, 0);
    fake_symtab_set_text(NULL, 0);
}

/*
 * A record whose chain the read cuts is read only into room for its size
 * as read: with less, that size is given and the record left; with just
 * that (less than it holds in the ring), it is read.  A drop gives the
 * same size.
 */
static void
test_read_cut_room(void **state)
{
    struct thread *t = fake_thread_create("sampled");
    unsigned int fields = PERFMON_SF_IP | PERFMON_SF_CALLCHAIN
                          | PERFMON_SF_BRANCH;
    struct fake_ctx ctx;
    uint64_t off, size, head;

    (void)state;
    ref_start(t, &ctx);
    ref_cut = 3;

    for (unsigned int drop = 0; drop < 2; drop++) {
        head = ref_sbuf_head();
        assert_true(ref_write_both(fields, 20, 2, drop, &off, &size));
        assert_true(ref_sbuf_head() - head == size + 17 * 8);
        assert_int_equal(perfmon_sbuf_read(sbuf, REF_CPU, NULL, 0), size);
        assert_int_equal(perfmon_sbuf_read(sbuf, REF_CPU, rec_buf, size - 8),
                         size);

        if (drop) {
            assert_int_equal(perfmon_sbuf_drop(sbuf, REF_CPU), size);
            assert_int_equal(perfmon_ring_pop(&ref_ring, ref_out,
                                              sizeof(ref_out)), size);
        } else {
            memset(rec_buf, 0xa5, sizeof(rec_buf));
            assert_int_equal(perfmon_sbuf_read(sbuf, REF_CPU, rec_buf, size),
                             size);
            assert_int_equal(perfmon_ring_pop(&ref_ring, ref_out,
                                              sizeof(ref_out)), size);
            assert_memory_equal(rec_buf, ref_out, size);
            assert_true(((const unsigned char *)rec_buf)[size] == 0xa5);
        }
    }

    assert_int_equal(perfmon_sbuf_read(sbuf, REF_CPU, rec_buf,
                                       sizeof(rec_buf)), 0);
    assert_int_equal(perfmon_sbuf_drop(sbuf, REF_CPU), 0);
    ref_cut = UINT_MAX;
    ref_stop(&ctx);
    fake_thread_switch(REF_CPU, NULL);
    fake_symtab_set(NULL, 0, 0);
    fake_symtab_set_text(NULL, 0);
}

/* A record of nr words into cpu's ring of the buffer, as a writer stores it. */
static void
put_raw_record(unsigned int cpu, const uint64_t *words, size_t nr)
{
    struct perfmon_ring *ring = perfmon_sbuf_ring(sbuf, cpu);
    uint64_t off;

    assert_true(perfmon_ring_reserve(ring, nr * sizeof(uint64_t), &off));
    memcpy(&ring->data[off], words, nr * sizeof(uint64_t));
    perfmon_ring_publish(ring);
}

/*
 * The read finds the chain past a group's reads, cuts it at its first
 * frame that is no caller (the first two, the interrupt's, kept as they
 * are), makes the rest call addresses, and moves the branch stack down.
 * A record whose counts do not fit its size (or a sample of a header
 * alone) is given out as it is: the decoder refuses it.
 */
static void
test_read_cut_after_reads(void **state)
{
    const uint64_t fields = PERFMON_SF_IP | PERFMON_SF_READ
                            | PERFMON_SF_CALLCHAIN | PERFMON_SF_BRANCH;
    const uint64_t self = (uint64_t)ref_code, rip = self + 8;
    uint64_t raw[] = {
        perfmon_ring_hdr_word(PERFMON_REC_SAMPLE, 16 * 8, 0),
        fields | (9ULL << 32), rip, 2, 111, 222,
        5, rip, self + 36, self + 37, self + 10, self + 37,
        1, 0xf00, 0xba5, 3,
    };
    uint64_t expect[] = {
        perfmon_ring_hdr_word(PERFMON_REC_SAMPLE, 14 * 8, 0),
        fields | (9ULL << 32), rip, 2, 111, 222,
        3, rip, self + 36, self + 36,
        1, 0xf00, 0xba5, 3,
    };
    struct perfmon_sample sample;
    size_t size;

    (void)state;
    make_sampling(1000, 0, 0, 4096);
    fake_symtab_set("self", self, self + sizeof(ref_code));
    fake_symtab_set_text(ref_code, sizeof(ref_code));

    put_raw_record(1, raw, ARRAY_SIZE(raw));
    size = perfmon_sbuf_read(sbuf, 1, rec_buf, sizeof(rec_buf));
    assert_int_equal(size, sizeof(expect));
    assert_memory_equal(rec_buf, expect, sizeof(expect));
    assert_int_equal(perfmon_sample_decode(rec_buf, size, &sample), 0);
    assert_int_equal(sample.nr_ips, 3);
    assert_int_equal(sample.nr_branches, 1);

    /* Counts past the end: as they are. */
    for (unsigned int bad = 0; bad < 4; bad++) {
        uint64_t words[ARRAY_SIZE(raw)];
        size_t nr = ARRAY_SIZE(raw);

        memcpy(words, raw, sizeof(raw));

        if (bad == 0) {
            words[3] = PERFMON_MAX_READS + 1;
        } else if (bad == 1) {
            words[6] = 11;
        } else if (bad == 2) {
            words[6] = PERFMON_MAX_CALLCHAIN + 1;
        } else {
            nr = 4;
            words[0] = perfmon_ring_hdr_word(PERFMON_REC_SAMPLE, nr * 8, 0);
        }

        put_raw_record(1, words, nr);
        assert_int_equal(perfmon_sbuf_read(sbuf, 1, rec_buf,
                                           sizeof(rec_buf)), nr * 8);
        assert_memory_equal(rec_buf, words, nr * 8);
    }

    /* A header alone. */
    raw[0] = perfmon_ring_hdr_word(PERFMON_REC_SAMPLE, 8, 0);
    put_raw_record(1, raw, 1);
    assert_int_equal(perfmon_sbuf_read(sbuf, 1, rec_buf, sizeof(rec_buf)),
                     8);
    fake_symtab_set(NULL, 0, 0);
    fake_symtab_set_text(NULL, 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, sample_setup, sample_teardown)
        T(test_fixed_period_exact),
        T(test_fixed_period_skid),
        T(test_period_longer_than_counter),
        T(test_thread_progress_follows),
        T(test_thread_progress_kept_while_waiting),
        T(test_overflow_before_stop_not_charged_again),
        T(test_threads_share_counter),
        T(test_freq_after_a_long_idle),
        T(test_throttle_nested_counted_once),
        T(test_period_at_least_2),
        T(test_one_event_a_run),
        T(test_period_split_at_device_max),
        T(test_memory_counter_armed_in_place),
        T(test_freq_keeps_throttled_floor),
        T(test_thread_progress_dropped_at_detach),
        T(test_freq_converges),
        T(test_freq_first_period),
        T(test_time_exact),
        T(test_throttle),
        T(test_throttle_host_stalls),
        T(test_overflow_in_section),
        T(test_ring_full),
        T(test_set_sampling_errors),
        T(test_devices_that_cannot_sample),
        T(test_sharing_rules),
        T(test_sbuf_create_errors),
        T(test_decode_damaged),
        T(test_decode_bounds),
        T(test_callchain_walks_the_stack),
        T(test_read_group_layout),
        T(test_records_match_reference),
        T(test_records_match_reference_when_full),
        T(test_records_match_reference_cut),
        T(test_read_cut_room),
        T(test_read_cut_after_reads),
#undef T
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
