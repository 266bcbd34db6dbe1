/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of throttling's figures in the overflow interrupt
 * (kern/perfmon/perfmon_nmi.c): computed once, not on each sample, they
 * still follow the TSC frequency and the share of the CPU allowed
 * (perfmon.max_sample_share).  The rest of throttling is tested with
 * sampling (perfmon_sample_test.c).
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdbool.h>
#include <cmocka.h>

#include "fakes/fake_kmem.h"
#include "fakes/fake_smp.h"
#include "fdev.h"
#include "kern/cmdline.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/perfmon_nmi.h"
#include "kern/perfmon_control.h"
#include "kern/perfmon_ring.h"

static struct perfmon_sbuf *sbuf;
static char rec_buf[PERFMON_RING_MAX_REC];

/* What a CPU's ring held: samples and throttle records. */
struct drained {
    unsigned int nr_samples;
    unsigned int nr_throttles;
};

static int
throttle_setup(void **state)
{
    setup(state);
    assert_int_equal(perfmon_sbuf_create(&sbuf, 1 << 20), 0);
    return 0;
}

static int
throttle_teardown(void **state)
{
    (void)state;
    perfmon_sbuf_destroy(sbuf);
    sbuf = NULL;
    assert_int_equal(cmdline_parse(""), 0);
    assert_int_equal(fake_kmem_live(), 0);
    return 0;
}

/* A sample each 100 events, of the period alone. */
static struct perfmon_sampling
throttle_sampling(void)
{
    return (struct perfmon_sampling){
        .period = 100, .fields = PERFMON_SF_PERIOD, .id = 7, .sbuf = sbuf,
    };
}

static void
drain(unsigned int cpu, struct drained *d)
{
    size_t size;

    d->nr_samples = 0;
    d->nr_throttles = 0;

    while ((size = perfmon_sbuf_read(sbuf, cpu, rec_buf, sizeof(rec_buf)))
           != 0) {
        const struct perfmon_rec_hdr *hdr = (const void *)rec_buf;

        if (hdr->type == PERFMON_REC_THROTTLE) {
            d->nr_throttles++;
        } else {
            assert_int_equal(hdr->type, PERFMON_REC_SAMPLE);
            d->nr_samples++;
        }
    }
}

/* total events of raw on cpu, chunk at a time, each overflow delivered. */
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

/*
 * Throttling's figures follow the TSC frequency and the share allowed,
 * though computed once for them: at 6 GHz, 40 interrupts of 3 million
 * cycles each are 20% of a 100 ms window (under 25%: none throttled,
 * where the figures of 3 GHz would make it 40%), and 80 are 40%: under a
 * share of 50%, over the default 25%.  Each phase starts in a window of
 * its own.
 */
static void
test_throttle_follows_freq_and_share(void **state)
{
    struct perfmon_sampling s = throttle_sampling();
    struct fdev *fd = fdev_add(0, 32, 4, true);
    struct perfmon_event ev;
    struct drained d;

    (void)state;
    fake_thread_switch(1, fake_thread_create("worker"));
    fake_cpu_set_tsc_freq(3000000000ULL);
    fd->ovf_cycles = 3000000;
    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_set_sampling(&ev, &s), 0);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 1), 0);

    /* A few at 3 GHz and 25%: the figures for those. */
    run(fd, 1, RAW_CYCLES, 5 * 100, 100, 0);
    fake_cpu_advance_tsc(12000000000ULL);      /* a window later */
    fake_cpu_set_tsc_freq(6000000000ULL);
    run(fd, 1, RAW_CYCLES, 40 * 100, 100, 0);
    drain(1, &d);
    assert_int_equal(d.nr_throttles, 0);
    assert_int_equal(d.nr_samples, 45);

    /* Half the CPU allowed. */
    assert_int_equal(cmdline_parse("perfmon.max_sample_share=50"), 0);
    perfmon_nmi_setup();
    fake_cpu_advance_tsc(12000000000ULL);      /* a window later */
    run(fd, 1, RAW_CYCLES, 80 * 100, 100, 0);
    drain(1, &d);
    assert_int_equal(d.nr_throttles, 0);
    assert_int_equal(d.nr_samples, 80);

    /* And the default share again: the same interrupts are too many. */
    assert_int_equal(cmdline_parse(""), 0);
    perfmon_nmi_reset();
    perfmon_nmi_setup();
    fake_cpu_advance_tsc(12000000000ULL);      /* a window later */
    run(fd, 1, RAW_CYCLES, 80 * 100, 100, 0);
    drain(1, &d);
    assert_true(d.nr_throttles >= 1);

    /* Set at run time: half again, and the same interrupts are not. */
    assert_int_equal(perfmon_set_max_sample_share(50), 25);
    fake_cpu_advance_tsc(12000000000ULL);      /* a window later */
    run(fd, 1, RAW_CYCLES, 80 * 100, 100, 0);
    drain(1, &d);
    assert_int_equal(d.nr_throttles, 0);
    assert_int_equal(perfmon_set_max_sample_share(25), 50);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

/*
 * The limit is exact: at 3 GHz a window is 300 million cycles, of which
 * the default 25% is 75 million, 25 interrupts of 3 million cycles: those
 * are not throttled, and one more of a single cycle in the same window
 * is.
 */
static void
test_throttle_at_the_limit(void **state)
{
    struct perfmon_sampling s = throttle_sampling();
    struct fdev *fd = fdev_add(0, 32, 4, true);
    struct perfmon_event ev;
    struct drained d;

    (void)state;
    fake_thread_switch(1, fake_thread_create("worker"));
    fake_cpu_set_tsc_freq(3000000000ULL);
    fd->ovf_cycles = 3000000;
    init_ok(&ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_set_sampling(&ev, &s), 0);
    assert_int_equal(perfmon_event_attach_cpu(&ev, 1), 0);

    run(fd, 1, RAW_CYCLES, 25 * 100, 100, 0);
    drain(1, &d);
    assert_int_equal(d.nr_throttles, 0);
    assert_int_equal(d.nr_samples, 25);

    fd->ovf_cycles = 1;
    run(fd, 1, RAW_CYCLES, 100, 100, 0);
    drain(1, &d);
    assert_int_equal(d.nr_throttles, 1);
    assert_int_equal(d.nr_samples, 1);
    assert_int_equal(perfmon_event_detach(&ev), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_throttle_follows_freq_and_share,
                                        throttle_setup, throttle_teardown),
        cmocka_unit_test_setup_teardown(test_throttle_at_the_limit,
                                        throttle_setup, throttle_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
