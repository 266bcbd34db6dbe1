/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of switch records (kern/perfmon/perfmon_switchrec.c and
 * perfmon_switchrec_decode.c) on the core and the fake devices of fdev.c:
 * the record's bytes; a thread watch writes the OUT record of a watched
 * thread leaving (preempted or not, with the chain its stack gives) and
 * the IN record of one coming in, nothing for threads it does not watch
 * nor once the event is disabled; a CPU watch writes both records of
 * every switch on its CPUs only; a watch turns the context switch's one
 * test on while it runs and the stop waits on every CPU; every refusal;
 * and the decoding of damaged records.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "arch/x86/cpu.h"
#include "fakes/fake_kmem.h"
#include "fakes/fake_smp.h"
#include "fdev.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_ring.h"
#include "kern/perfmon_switchrec.h"
#include "kern/swevent.h"

static struct perfmon_sbuf *sbuf;
static uint64_t rec_buf[PERFMON_RING_MAX_REC / 8];

static int
sw_setup(void **state)
{
    setup(state);
    fdev_add(0, 48, 4, true);
    perfmon_switchrec_reset();
    assert_int_equal(perfmon_sbuf_create(&sbuf, 65536), 0);
    return 0;
}

static int
sw_teardown(void **state)
{
    (void)state;
    perfmon_switchrec_reset();
    perfmon_sbuf_destroy(sbuf);
    assert_int_equal(fake_kmem_live(), 0);
    return 0;
}

static struct perfmon_sampling
make_sampling(void)
{
    return (struct perfmon_sampling){
        .period = 1000, .fields = PERFMON_SF_IP | PERFMON_SF_TID,
        .id = 3, .sbuf = sbuf,
    };
}

static void
attach_thread(struct perfmon_event *ev, const struct perfmon_sampling *s,
              struct thread *t)
{
    init_ok(ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_set_sampling(ev, s), 0);
    assert_int_equal(perfmon_event_attach(ev, t), 0);
}

static void
attach_cpu(struct perfmon_event *ev, const struct perfmon_sampling *s,
           unsigned int cpu)
{
    init_ok(ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_set_sampling(ev, s), 0);
    assert_int_equal(perfmon_event_attach_cpu(ev, cpu), 0);
}

/* The switch from prev to next on cpu, as kern/thread.c's hook calls it. */
static void
hook(unsigned int cpu, struct thread *prev, struct thread *next,
     bool preempted)
{
    struct fake_ctx ctx;

    fake_ctx_enter(&ctx, cpu);
    fake_cpu_advance_tsc(1000);
    perfmon_switchrec_write(prev, next, preempted);
    fake_ctx_exit(&ctx);
}

/* The next record of cpu's ring, decoded into sw; false: none. */
static bool
next_switch(unsigned int cpu, struct perfmon_switch *sw)
{
    size_t size = perfmon_sbuf_read(sbuf, cpu, rec_buf, sizeof(rec_buf));

    if (size == 0) {
        return false;
    }

    assert_int_equal(perfmon_switch_decode((const void *)rec_buf, sw), 0);
    return true;
}

static void
assert_switch(unsigned int cpu, bool out, bool preempt, struct thread *self_,
              struct thread *other)
{
    struct perfmon_switch sw;

    assert_true(next_switch(cpu, &sw));
    assert_int_equal(sw.out, out);
    assert_int_equal(sw.preempt, preempt);
    assert_int_equal(sw.tid, thread_id(self_));
    assert_int_equal(sw.other, thread_id(other));
    assert_int_equal(sw.cpu, cpu);
}

static void
assert_no_switch(unsigned int cpu)
{
    struct perfmon_switch sw;

    assert_false(next_switch(cpu, &sw));
}

/* ---- the record --------------------------------------------------------- */

/*
 * Byte for byte: header (type, size, misc: perf's SWITCH_OUT 1 << 13 and
 * SWITCH_OUT_PREEMPT 1 << 14), u32 tid, u32 the other thread, u64 time,
 * u32 cpu, u32 the chain's length, the chain.
 */
static void
test_record_bytes(void **state)
{
    struct perfmon_sampling s = make_sampling();
    struct thread *a = fake_thread_create("a"), *b = fake_thread_create("b");
    struct perfmon_event ev, *set[] = { &ev };
    struct perfmon_switchrec sr;
    uint32_t words[8];
    size_t size;

    (void)state;
    attach_cpu(&ev, &s, 2);
    assert_int_equal(perfmon_switchrec_start(&sr, s.sbuf, set, 1), 0);
    hook(2, a, b, true);
    size = perfmon_sbuf_read(sbuf, 2, rec_buf, sizeof(rec_buf));
    assert_int_equal(size, 32);
    memcpy(words, rec_buf, sizeof(words));
    assert_int_equal(words[0] & 0xffff, PERFMON_REC_SWITCH);
    assert_int_equal(words[0] >> 16, 32);
    assert_int_equal(words[1], 0x2000 | 0x4000);
    assert_int_equal(words[2], thread_id(a));
    assert_int_equal(words[3], thread_id(b));
    assert_true(((uint64_t)words[5] << 32 | words[4]) != 0);
    assert_int_equal(words[6], 2);
    assert_int_equal(words[7], 0);

    /* The thread coming in: misc 0, the other one is the thread that left. */
    size = perfmon_sbuf_read(sbuf, 2, rec_buf, sizeof(rec_buf));
    assert_int_equal(size, 32);
    memcpy(words, rec_buf, sizeof(words));
    assert_int_equal(words[1], 0);
    assert_int_equal(words[2], thread_id(b));
    assert_int_equal(words[3], thread_id(a));
    perfmon_switchrec_stop(&sr);
    perfmon_event_detach(&ev);
}

/* ---- thread watches ----------------------------------------------------- */

static void
test_thread_watch(void **state)
{
    struct perfmon_sampling s = make_sampling();
    struct thread *a = fake_thread_create("a"), *b = fake_thread_create("b");
    struct thread *c = fake_thread_create("c");
    struct perfmon_event ev, *set[] = { &ev };
    struct perfmon_switchrec sr;
    struct perfmon_switch sw;
    uint64_t t0;

    (void)state;
    attach_thread(&ev, &s, a);
    assert_int_equal(swevent_nr_active[SWEVENT_CONTEXT_SWITCH], 0);
    assert_int_equal(perfmon_switchrec_start(&sr, s.sbuf, set, 1), 0);
    assert_true(swevent_watched(SWEVENT_CONTEXT_SWITCH));

    /* a leaves, preempted: its OUT names b; b is not watched. */
    hook(1, a, b, true);
    assert_switch(1, true, true, a, b);
    assert_no_switch(1);

    /* a comes back after sleeping in c's place: its IN names c. */
    hook(1, c, a, false);
    assert_true(next_switch(1, &sw));
    t0 = sw.time_ns;
    assert_false(sw.out);
    assert_int_equal(sw.tid, thread_id(a));
    assert_int_equal(sw.other, thread_id(c));

    /* a goes to sleep: OUT, not preempted, later in time. */
    hook(1, a, c, false);
    assert_true(next_switch(1, &sw));
    assert_true(sw.out && !sw.preempt && sw.time_ns > t0);

    /* Threads it does not watch switch without a record. */
    hook(1, b, c, true);
    assert_no_switch(1);

    /* A disabled event watches nothing. */
    perfmon_event_disable(&ev);
    hook(1, a, b, true);
    assert_no_switch(1);

    perfmon_switchrec_stop(&sr);
    assert_false(swevent_watched(SWEVENT_CONTEXT_SWITCH));
    perfmon_switchrec_stop(&sr);                        /* a no-op */
    assert_int_equal(swevent_nr_active[SWEVENT_CONTEXT_SWITCH], 0);
    perfmon_event_enable(&ev);
    hook(1, a, b, true);
    assert_no_switch(1);
    perfmon_event_detach(&ev);
}

/* The chain of the thread leaving is walked on its own stack only. */
static void
test_out_chain_on_its_stack(void **state)
{
    struct perfmon_sampling s = make_sampling();
    struct thread *a = fake_thread_create("a"), *b = fake_thread_create("b");
    struct perfmon_event ev, *set[] = { &ev };
    struct perfmon_switchrec sr;
    uint64_t stack[64];
    struct perfmon_switch sw;

    (void)state;
    attach_thread(&ev, &s, a);
    assert_int_equal(perfmon_switchrec_start(&sr, s.sbuf, set, 1), 0);

    /* A stack that is not the one running: no frame of it is taken. */
    fake_thread_set_stack(a, (uintptr_t)stack, (uintptr_t)&stack[64]);
    hook(0, a, b, true);
    assert_true(next_switch(0, &sw));
    assert_true(sw.out);
    assert_int_equal(sw.nr_ips, 0);
    perfmon_switchrec_stop(&sr);
    perfmon_event_detach(&ev);
}

/* ---- CPU watches -------------------------------------------------------- */

static void
test_cpu_watch(void **state)
{
    struct perfmon_sampling s = make_sampling();
    struct thread *a = fake_thread_create("a"), *b = fake_thread_create("b");
    struct perfmon_event ev[2], *set[] = { &ev[0], &ev[1] };
    struct perfmon_switchrec sr;
    unsigned int calls[NR_CPUS];

    (void)state;
    attach_cpu(&ev[0], &s, 1);
    attach_cpu(&ev[1], &s, 3);
    assert_int_equal(perfmon_switchrec_start(&sr, s.sbuf, set, 2), 0);

    hook(1, a, b, false);
    assert_switch(1, true, false, a, b);
    assert_switch(1, false, false, b, a);
    assert_no_switch(1);
    hook(3, b, a, true);
    assert_switch(3, true, true, b, a);
    assert_switch(3, false, false, a, b);
    hook(0, a, b, true);
    hook(2, a, b, true);
    assert_no_switch(0);
    assert_no_switch(2);

    /* The stop waits for every CPU to leave the hook: one call each. */
    for (unsigned int i = 0; i < NR_CPUS; i++) {
        calls[i] = fake_xcall_nr_on(i);
    }

    perfmon_switchrec_stop(&sr);

    for (unsigned int i = 0; i < NR_CPUS; i++) {
        assert_int_equal(fake_xcall_nr_on(i), calls[i] + 1);
    }

    hook(1, a, b, false);
    assert_no_switch(1);
    perfmon_event_detach(&ev[0]);
    perfmon_event_detach(&ev[1]);
}

/* Two watches of one switch: each writes into its own buffer. */
static void
test_two_watches(void **state)
{
    struct perfmon_sampling s = make_sampling(), s2 = make_sampling();
    struct thread *a = fake_thread_create("a"), *b = fake_thread_create("b");
    struct perfmon_event ev, ev2, *set[] = { &ev }, *set2[] = { &ev2 };
    struct perfmon_switchrec sr, sr2;
    struct perfmon_sbuf *mine = sbuf;

    (void)state;
    assert_int_equal(perfmon_sbuf_create(&s2.sbuf, 4096), 0);
    attach_cpu(&ev, &s, 0);
    attach_cpu(&ev2, &s2, 0);
    assert_int_equal(perfmon_switchrec_start(&sr, s.sbuf, set, 1), 0);
    assert_int_equal(perfmon_switchrec_start(&sr2, s2.sbuf, set2, 1), 0);
    assert_int_equal(swevent_nr_active[SWEVENT_CONTEXT_SWITCH], 2);
    hook(0, a, b, true);
    assert_switch(0, true, true, a, b);
    assert_switch(0, false, false, b, a);
    sbuf = s2.sbuf;
    assert_switch(0, true, true, a, b);
    assert_switch(0, false, false, b, a);
    sbuf = mine;
    perfmon_switchrec_stop(&sr);
    perfmon_switchrec_stop(&sr2);
    assert_int_equal(swevent_nr_active[SWEVENT_CONTEXT_SWITCH], 0);
    perfmon_event_detach(&ev);
    perfmon_event_detach(&ev2);
    perfmon_sbuf_destroy(s2.sbuf);
}

/* A full ring drops the record and counts it, as it does samples. */
static void
test_full_ring_loses(void **state)
{
    struct perfmon_sampling s = make_sampling();
    struct thread *a = fake_thread_create("a"), *b = fake_thread_create("b");
    struct perfmon_event ev, *set[] = { &ev };
    struct perfmon_switchrec sr;
    unsigned int n = 0;

    (void)state;
    attach_cpu(&ev, &s, 0);
    assert_int_equal(perfmon_switchrec_start(&sr, s.sbuf, set, 1), 0);

    for (unsigned int i = 0; i < 65536 / 32 + 8; i++) {
        hook(0, a, b, true);
    }

    assert_true(perfmon_sbuf_lost(sbuf, 0) > 0);

    while (perfmon_sbuf_read(sbuf, 0, rec_buf, sizeof(rec_buf)) != 0) {
        n++;
    }

    assert_int_equal(n + perfmon_sbuf_lost(sbuf, 0), 2 * (65536 / 32 + 8));
    perfmon_switchrec_stop(&sr);
    perfmon_event_detach(&ev);
}

/* ---- refusals ----------------------------------------------------------- */

static void
test_refusals(void **state)
{
    struct perfmon_sampling s = make_sampling(), s2 = make_sampling();
    struct perfmon_event ev[3], loose, counting, *set[3];
    struct perfmon_switchrec sr[PERFMON_SWITCHREC_MAX + 1];
    struct perfmon_sbuf *elsewhere;

    (void)state;
    assert_int_equal(perfmon_sbuf_create(&elsewhere, 4096), 0);
    attach_cpu(&ev[0], &s, 0);
    attach_thread(&ev[1], &s, self);
    attach_cpu(&ev[2], &s2, 1);                         /* same buffer */
    init_ok(&loose, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    init_ok(&counting, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    assert_int_equal(perfmon_event_attach_cpu(&counting, 2), 0);
    set[0] = &ev[0];
    set[1] = &ev[1];

    assert_int_equal(perfmon_switchrec_start(NULL, sbuf, set, 1), -EINVAL);
    assert_int_equal(perfmon_switchrec_start(&sr[0], NULL, set, 1), -EINVAL);
    assert_int_equal(perfmon_switchrec_start(&sr[0], sbuf, set, 0), -EINVAL);
    assert_int_equal(perfmon_switchrec_start(&sr[0], sbuf, set, 2), -EINVAL);
    assert_int_equal(perfmon_switchrec_start(&sr[0], elsewhere, set, 1),
                     -EINVAL);
    set[2] = &loose;
    assert_int_equal(perfmon_switchrec_start(&sr[0], sbuf, &set[2], 1),
                     -EINVAL);
    set[2] = &counting;
    assert_int_equal(perfmon_switchrec_start(&sr[0], sbuf, &set[2], 1),
                     -EINVAL);
    set[2] = NULL;
    assert_int_equal(perfmon_switchrec_start(&sr[0], sbuf, &set[2], 1),
                     -EINVAL);
    assert_int_equal(swevent_nr_active[SWEVENT_CONTEXT_SWITCH], 0);

    /* Events of two samplings into one buffer (several events) are one. */
    set[1] = &ev[2];
    assert_int_equal(perfmon_switchrec_start(&sr[0], sbuf, set, 2), 0);
    perfmon_switchrec_stop(&sr[0]);

    for (unsigned int i = 0; i < PERFMON_SWITCHREC_MAX; i++) {
        assert_int_equal(perfmon_switchrec_start(&sr[i], sbuf, set, 1), 0);
    }

    assert_int_equal(perfmon_switchrec_start(&sr[PERFMON_SWITCHREC_MAX],
                                             sbuf, set, 1), -EBUSY);
    assert_int_equal(swevent_nr_active[SWEVENT_CONTEXT_SWITCH],
                     PERFMON_SWITCHREC_MAX);
    perfmon_switchrec_stop(&sr[PERFMON_SWITCHREC_MAX]);  /* never started */
    perfmon_switchrec_stop(NULL);

    for (unsigned int i = 0; i < PERFMON_SWITCHREC_MAX; i++) {
        perfmon_switchrec_stop(&sr[i]);
    }

    assert_int_equal(swevent_nr_active[SWEVENT_CONTEXT_SWITCH], 0);

    for (unsigned int i = 0; i < 3; i++) {
        perfmon_event_detach(&ev[i]);
    }

    perfmon_event_detach(&counting);
    perfmon_sbuf_destroy(elsewhere);
}

/* ---- decoding ----------------------------------------------------------- */

static size_t
make_rec(uint32_t misc, uint32_t nr_ips)
{
    struct perfmon_switch_rec *rec = (void *)rec_buf;

    memset(rec_buf, 0, 64 * 8);
    rec->hdr.type = PERFMON_REC_SWITCH;
    rec->hdr.size = (uint16_t)(sizeof(*rec) + nr_ips * 8);
    rec->hdr.misc = misc;
    rec->tid = 5;
    rec->other = 6;
    rec->time_ns = 77;
    rec->cpu = 1;
    rec->nr_ips = nr_ips;

    for (uint32_t i = 0; i < nr_ips; i++) {
        rec->ips[i] = 0x1000 + i;
    }

    return rec->hdr.size;
}

static int
decode(void)
{
    struct perfmon_switch sw;

    return perfmon_switch_decode((const void *)rec_buf, &sw);
}

static void
test_decode(void **state)
{
    struct perfmon_rec_hdr *hdr = (void *)rec_buf;
    struct perfmon_switch_rec *rec = (void *)rec_buf;
    struct perfmon_switch sw;
    size_t size;

    (void)state;
    make_rec(PERFMON_SWITCH_OUT | PERFMON_SWITCH_PREEMPT, 3);
    assert_int_equal(perfmon_switch_decode(hdr, &sw), 0);
    assert_true(sw.out && sw.preempt);
    assert_int_equal(sw.tid, 5);
    assert_int_equal(sw.other, 6);
    assert_int_equal(sw.time_ns, 77);
    assert_int_equal(sw.cpu, 1);
    assert_int_equal(sw.nr_ips, 3);
    assert_int_equal(sw.ips[2], 0x1002);
    assert_int_equal(perfmon_switch_decode(NULL, &sw), -EINVAL);
    assert_int_equal(perfmon_switch_decode(hdr, NULL), -EINVAL);

    /* Every prefix, and a record longer than its chain. */
    for (size = 8; size < hdr->size; size += 8) {
        uint16_t full = hdr->size;

        hdr->size = (uint16_t)size;
        assert_int_equal(decode(), -EINVAL);
        hdr->size = full;
    }

    hdr->size += 8;
    assert_int_equal(decode(), -EINVAL);

    make_rec(0, 0);
    hdr->type = PERFMON_REC_SAMPLE;
    assert_int_equal(decode(), -EINVAL);
    make_rec(0x1, 0);                                   /* unknown misc */
    assert_int_equal(decode(), -EINVAL);
    make_rec(PERFMON_SWITCH_PREEMPT, 0);                /* preempt, in */
    assert_int_equal(decode(), -EINVAL);
    make_rec(0, 1);                                     /* a chain, in */
    assert_int_equal(decode(), -EINVAL);
    make_rec(PERFMON_SWITCH_OUT, PERFMON_SWITCH_MAX_IPS + 1);
    assert_int_equal(decode(), -EINVAL);
    make_rec(PERFMON_SWITCH_OUT, 2);
    rec->nr_ips = UINT32_MAX;                           /* no overflow */
    assert_int_equal(decode(), -EINVAL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_record_bytes, sw_setup,
                                        sw_teardown),
        cmocka_unit_test_setup_teardown(test_thread_watch, sw_setup,
                                        sw_teardown),
        cmocka_unit_test_setup_teardown(test_out_chain_on_its_stack, sw_setup,
                                        sw_teardown),
        cmocka_unit_test_setup_teardown(test_cpu_watch, sw_setup,
                                        sw_teardown),
        cmocka_unit_test_setup_teardown(test_two_watches, sw_setup,
                                        sw_teardown),
        cmocka_unit_test_setup_teardown(test_full_ring_loses, sw_setup,
                                        sw_teardown),
        cmocka_unit_test_setup_teardown(test_refusals, sw_setup,
                                        sw_teardown),
        cmocka_unit_test_setup_teardown(test_decode, sw_setup, sw_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
