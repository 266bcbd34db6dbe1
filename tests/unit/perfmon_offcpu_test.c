/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Host tests of the command side of switch records
 * (kern/perfmon/cmd/perfmon_offcpu.c) on a capture filled by hand: the
 * walk in time order merges the CPUs' records, whatever order the drain
 * stored them in; the off-CPU view of a synthetic switch sequence charges
 * each span from a switch out to the next switch in (on any CPU) to the
 * thread and the first function outside the scheduler, skips what it
 * cannot pair, and sorts heaviest first; perfmon script's line is perf's;
 * the report prints its table, or one line when there is nothing, and
 * frees what it took, also when memory runs out.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fakes/fake_kmem.h"
#include "fakes/fake_smp.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_capture.h"
#include "kern/perfmon/cmd/perfmon_offcpu.h"
#include "kern/perfmon/perfmon_i.h"
#include "kern/perfmon_ring.h"
#include "kern/perfmon_switchrec.h"
#include "kern/shell.h"
#include "kern/thread.h"

void fake_symtab_set(const char *name, uint64_t start, uint64_t end);
void fake_symtab_add(const char *name, uint64_t start, uint64_t end);
const char *fake_console_output(void);
void fake_console_reset(void);

/* The functions of the synthetic chains. */
#define F_HOOK      0x1000      /* perfmon_switchrec_write */
#define F_SCHED     0x2000      /* thread_schedule */
#define F_YIELD     0x3000      /* thread_yield */
#define F_WORK_A    0x4000      /* work_a */
#define F_WORK_B    0x5000      /* work_b */
#define F_SIZE      0x100

#define TID_A       11
#define TID_B       12
#define TID_C       13

static struct perfmon_capture *cap;

/* ---- what the capture and the samples need ------------------------------ */

int
thread_name_of(unsigned int tid, char *buf, size_t size)
{
    const char *name = (tid == TID_A) ? "alpha" : (tid == TID_B) ? "beta"
                                                                 : NULL;

    if (name == NULL) {
        return -ENOENT;
    }

    snprintf(buf, size, "%s", name);
    return 0;
}

/* ---- filling a capture -------------------------------------------------- */

/* A switch record into cpu's ring, as the switch hook writes it. */
static void
put_switch(unsigned int cpu, bool out, unsigned int tid, unsigned int other,
           uint64_t time_ns, const uint64_t *ips, unsigned int nr_ips)
{
    struct perfmon_ring *ring =
        perfmon_sbuf_ring(perfmon_capture_sbuf(cap), cpu);
    struct perfmon_switch_rec rec = {
        .tid = tid, .other = other, .time_ns = time_ns, .cpu = cpu,
        .nr_ips = nr_ips,
    };
    struct perfmon_ring_txn txn;

    assert_true(perfmon_ring_begin(ring, PERFMON_REC_SWITCH,
                                   out ? PERFMON_SWITCH_OUT : 0,
                                   sizeof(rec) - sizeof(rec.hdr)
                                   + nr_ips * sizeof(*ips), &txn));
    perfmon_ring_put(ring, &txn, &rec.tid, sizeof(rec) - sizeof(rec.hdr));

    if (nr_ips != 0) {
        perfmon_ring_put(ring, &txn, ips, nr_ips * sizeof(*ips));
    }

    perfmon_ring_commit(ring, &txn);
}

/* A sample with a time and a CPU only, into cpu's ring. */
static void
put_sample(unsigned int cpu, uint64_t time_ns)
{
    struct perfmon_ring *ring =
        perfmon_sbuf_ring(perfmon_capture_sbuf(cap), cpu);
    uint32_t head[2] = { PERFMON_SF_TIME | PERFMON_SF_CPU, 1 };
    uint64_t words[2] = { time_ns, cpu };
    struct perfmon_ring_txn txn;

    assert_true(perfmon_ring_begin(ring, PERFMON_REC_SAMPLE, 0,
                                   sizeof(head) + sizeof(words), &txn));
    perfmon_ring_put(ring, &txn, head, sizeof(head));
    perfmon_ring_put(ring, &txn, words, sizeof(words));
    perfmon_ring_commit(ring, &txn);
}

static int
setup(void **state)
{
    (void)state;
    fake_cpu_reset(3);
    fake_kmem_reset();
    fake_console_reset();
    fake_symtab_set("perfmon_switchrec_write", F_HOOK, F_HOOK + F_SIZE);
    fake_symtab_add("thread_schedule", F_SCHED, F_SCHED + F_SIZE);
    fake_symtab_add("thread_yield", F_YIELD, F_YIELD + F_SIZE);
    fake_symtab_add("work_a", F_WORK_A, F_WORK_A + F_SIZE);
    fake_symtab_add("work_b", F_WORK_B, F_WORK_B + F_SIZE);
    assert_int_equal(perfmon_capture_create(&cap, 4096, 128 * 1024,
                                            "cpu-clock", "yield 3"), 0);
    return 0;
}

static int
teardown(void **state)
{
    (void)state;
    perfmon_capture_destroy(cap);
    fake_symtab_set(NULL, 0, 0);
    assert_int_equal(fake_kmem_live(), 0);
    return 0;
}

/* ---- the walk in time order --------------------------------------------- */

struct seen {
    uint64_t times[32];
    unsigned int cpus[32];
    unsigned int nr;
    unsigned int stop_after;
};

static bool
see(const struct perfmon_rec_hdr *hdr, void *arg)
{
    struct seen *s = arg;
    struct perfmon_sample sample;
    struct perfmon_switch sw;

    assert_true(s->nr < ARRAY_SIZE(s->times));

    if (perfmon_switch_decode(hdr, &sw) == 0) {
        s->times[s->nr] = sw.time_ns;
        s->cpus[s->nr] = sw.cpu;
    } else if (perfmon_sample_decode(hdr, hdr->size, &sample) == 0) {
        s->times[s->nr] = sample.time_ns;
        s->cpus[s->nr] = sample.cpu;
    } else {
        s->times[s->nr] = UINT64_MAX;                   /* a name */
        s->cpus[s->nr] = UINT32_MAX;
    }

    return ++s->nr != s->stop_after;
}

/* Two CPUs' records interleaved in time come out in time order. */
static void
test_walk_merges_cpus(void **state)
{
    struct seen s = { .nr = 0 };

    (void)state;
    put_sample(0, 10);
    put_switch(0, true, 99, 98, 20, NULL, 0);           /* no name */
    put_sample(0, 30);
    put_sample(0, 40);
    put_sample(1, 5);
    put_sample(1, 15);
    put_switch(1, false, 97, 96, 25, NULL, 0);
    put_sample(2, 0);
    perfmon_capture_drain(cap);
    perfmon_offcpu_foreach_timed(cap, see, &s);

    /*
     * The timed records in time order, each CPU's own in its order; the
     * names of threads gone (no time, no CPU: the first CPU's) where the
     * first CPU's turn reaches them.
     */
    {
        static const uint64_t times[] = { 0, 5, 10, 15, 20, 25, 30, 40 };
        static const unsigned int cpus[] = { 2, 1, 0, 1, 0, 1, 0, 0 };
        unsigned int k = 0, names = 0;

        assert_int_equal(s.nr, 8 + 4);

        for (unsigned int i = 0; i < s.nr; i++) {
            if (s.cpus[i] == UINT32_MAX) {
                names++;
                continue;
            }

            assert_int_equal(s.times[i], times[k]);
            assert_int_equal(s.cpus[i], cpus[k]);
            k++;
        }

        assert_int_equal(names, 4);
        assert_int_equal(s.cpus[5], UINT32_MAX);        /* after its OUT */
    }

    /* Stopped by fn; without memory for the cursors, the store's order. */
    s = (struct seen){ .stop_after = 3 };
    perfmon_offcpu_foreach_timed(cap, see, &s);
    assert_int_equal(s.nr, 3);
    s = (struct seen){ .nr = 0 };
    fake_kmem_fail_after_n(0);
    perfmon_offcpu_foreach_timed(cap, see, &s);
    fake_kmem_fail_after_n(UINT32_MAX);
    assert_int_equal(s.times[0], 10);
    assert_int_equal(s.nr, 12);
}

/* ---- the off-CPU view --------------------------------------------------- */

static struct perfmon_switch
sw_out(unsigned int tid, uint64_t time_ns, const uint64_t *ips,
       unsigned int nr_ips)
{
    return (struct perfmon_switch){
        .out = true, .tid = tid, .time_ns = time_ns, .ips = ips,
        .nr_ips = nr_ips,
    };
}

static struct perfmon_switch
sw_in(unsigned int tid, uint64_t time_ns)
{
    return (struct perfmon_switch){ .tid = tid, .time_ns = time_ns };
}

static void
test_offcpu_spans(void **state)
{
    /* Return addresses minus one, newest first, as the unwinder gives. */
    static const uint64_t chain_a[] = { F_HOOK + 0x10, F_SCHED + 0x20,
                                        F_YIELD + 0x8, F_WORK_A + 0x30,
                                        F_WORK_B + 0x40 };
    static const uint64_t chain_b[] = { F_SCHED + 0x20, 0x9999,
                                        F_WORK_B + 0x10 };
    static const uint64_t chain_sched[] = { F_HOOK + 0x10, F_SCHED + 0x20,
                                            F_YIELD + 0x4 };
    static const uint64_t chain_unknown[] = { 0x7777 };
    struct perfmon_offcpu_row rows[8];
    struct perfmon_offcpu *o;
    struct perfmon_switch sw;

    (void)state;
    assert_int_equal(perfmon_offcpu_create(&o), 0);

    /* A out for 250, back on another CPU; then again for 50. */
    sw = sw_out(TID_A, 100, chain_a, ARRAY_SIZE(chain_a));
    perfmon_offcpu_add(o, &sw);
    sw = sw_out(TID_B, 120, chain_b, ARRAY_SIZE(chain_b));
    perfmon_offcpu_add(o, &sw);
    sw = sw_in(TID_A, 350);
    perfmon_offcpu_add(o, &sw);
    sw = sw_in(TID_A, 360);                             /* no OUT before */
    perfmon_offcpu_add(o, &sw);
    sw = sw_out(TID_A, 400, chain_a, ARRAY_SIZE(chain_a));
    perfmon_offcpu_add(o, &sw);
    sw = sw_in(TID_A, 450);
    perfmon_offcpu_add(o, &sw);

    /* B back after 1000; C out in the scheduler only, then unknown. */
    sw = sw_in(TID_B, 1120);
    perfmon_offcpu_add(o, &sw);
    sw = sw_out(TID_C, 2000, chain_sched, ARRAY_SIZE(chain_sched));
    perfmon_offcpu_add(o, &sw);
    sw = sw_in(TID_C, 2010);
    perfmon_offcpu_add(o, &sw);
    sw = sw_out(TID_C, 3000, chain_unknown, ARRAY_SIZE(chain_unknown));
    perfmon_offcpu_add(o, &sw);
    sw = sw_in(TID_C, 3005);
    perfmon_offcpu_add(o, &sw);

    /* Out at the end: nothing. */
    sw = sw_out(TID_A, 5000, chain_a, ARRAY_SIZE(chain_a));
    perfmon_offcpu_add(o, &sw);

    assert_int_equal(perfmon_offcpu_nr_rows(o), 4);
    assert_int_equal(perfmon_offcpu_total_ns(o), 250 + 50 + 1000 + 10 + 5);
    assert_int_equal(perfmon_offcpu_sorted(o, rows, ARRAY_SIZE(rows)), 4);
    assert_int_equal(rows[0].tid, TID_B);
    assert_int_equal(rows[0].func, F_WORK_B);
    assert_int_equal(rows[0].ns, 1000);
    assert_int_equal(rows[0].nr_spans, 1);
    assert_int_equal(rows[1].tid, TID_A);
    assert_int_equal(rows[1].func, F_WORK_A);
    assert_int_equal(rows[1].ns, 300);
    assert_int_equal(rows[1].nr_spans, 2);
    assert_int_equal(rows[2].tid, TID_C);
    assert_int_equal(rows[2].func, F_YIELD);            /* outermost */
    assert_int_equal(rows[2].ns, 10);
    assert_int_equal(rows[3].func, 0);                  /* unknown */
    assert_int_equal(rows[3].ns, 5);
    assert_int_equal(perfmon_offcpu_sorted(o, rows, 1), 1);
    assert_int_equal(rows[0].tid, TID_B);
    perfmon_offcpu_destroy(o);
    perfmon_offcpu_destroy(NULL);
}

/* More threads or rows than the view keeps: counted, never written past. */
static void
test_offcpu_full(void **state)
{
    static const uint64_t chain[] = { F_WORK_A + 1 };
    struct perfmon_offcpu *o;
    struct perfmon_switch sw;

    (void)state;
    assert_int_equal(perfmon_offcpu_create(&o), 0);

    for (unsigned int tid = 1; tid <= 600; tid++) {
        sw = sw_out(tid, 10, chain, 1);
        perfmon_offcpu_add(o, &sw);
        sw = sw_in(tid, 20);
        perfmon_offcpu_add(o, &sw);
    }

    assert_int_equal(perfmon_offcpu_nr_rows(o), 256);
    assert_int_equal(perfmon_offcpu_total_ns(o), 256 * 10);
    perfmon_offcpu_destroy(o);
}

/* ---- what the user reads ------------------------------------------------ */

static bool
script(const struct perfmon_rec_hdr *hdr, void *arg)
{
    (void)arg;

    if (hdr->type == PERFMON_REC_SWITCH) {
        perfmon_offcpu_script(cap, hdr);
    }

    return true;
}

/* As perf script --show-switch-events prints them (a thread is its pid). */
static void
test_script_line_is_perfs(void **state)
{
    static const uint64_t chain[] = { F_WORK_A + 1 };

    (void)state;
    put_switch(1, true, TID_A, TID_B, 1234567890123ULL, chain, 1);
    put_switch(1, false, TID_B, TID_A, 1234567890999ULL, NULL, 0);
    put_switch(0, false, TID_C, TID_A, 2000000000000ULL, NULL, 0);
    perfmon_capture_drain(cap);
    fake_console_reset();
    perfmon_offcpu_foreach_timed(cap, script, NULL);
    assert_string_equal(fake_console_output(),
        "           alpha     11 [001]   1234.567890: "
        "PERF_RECORD_SWITCH_CPU_WIDE OUT          next pid/tid:    12/12   \n"
        "            beta     12 [001]   1234.567890: "
        "PERF_RECORD_SWITCH_CPU_WIDE IN           prev pid/tid:    11/11   \n"
        "             :13     13 [000]   2000.000000: "
        "PERF_RECORD_SWITCH_CPU_WIDE IN           prev pid/tid:    11/11   \n");

    /* A damaged record prints nothing. */
    fake_console_reset();
    perfmon_offcpu_script(cap, &(struct perfmon_rec_hdr){
                                   .type = PERFMON_REC_SWITCH, .size = 8 });
    assert_string_equal(fake_console_output(), "");
}

static void
test_report(void **state)
{
    static const uint64_t chain_a[] = { F_SCHED + 1, F_WORK_A + 1 };
    static const uint64_t chain_b[] = { 0x9999 };
    struct perfmon_capture_info info;
    const char *out;

    (void)state;
    assert_int_equal(perfmon_offcpu_report(cap, 0), SHELL_ERR_REPORTED);
    assert_non_null(strstr(fake_console_output(), "--sort offcpu: no thread "
                           "was seen switching out and back in"));
    put_switch(0, true, TID_A, TID_B, 1000, chain_a, 2);
    put_switch(0, false, TID_B, TID_A, 1001, NULL, 0);
    put_switch(0, true, TID_B, TID_A, 1500, chain_b, 1);
    put_switch(0, false, TID_A, TID_B, 3000000, NULL, 0);
    put_switch(0, true, TID_A, TID_B, 3000100, chain_a, 2);
    put_switch(0, false, TID_B, TID_A, 3000101, NULL, 0);
    put_switch(1, false, TID_A, TID_B, 3000200, NULL, 0);
    perfmon_capture_drain(cap);
    perfmon_capture_get_info(cap, &info);
    assert_int_equal(info.nr_switches, 7);
    assert_int_equal(info.nr_samples, 0);
    fake_console_reset();
    assert_int_equal(perfmon_offcpu_report(cap, 0), 0);
    out = fake_console_output();
    assert_non_null(strstr(out, "# perfmon report of 'yield 3': time "
                           "switched out"));
    assert_non_null(strstr(out, "# Off-CPU total: 5.997 ms over 2 threads"));
    assert_non_null(strstr(out, "\n   50.00%         2.999         2  alpha"
                           "                11  [k] work_a\n"));
    assert_non_null(strstr(out, "\n   49.99%         2.998         1  beta"
                           "                 12  [k] [unknown]\n"));

    /* Down to a limit: the rows under it are left out. */
    fake_console_reset();
    assert_int_equal(perfmon_offcpu_report(cap, 5000), 0);
    out = fake_console_output();
    assert_non_null(strstr(out, "[k] work_a"));
    assert_null(strstr(out, "[k] [unknown]"));

    /* Out of memory: one line, nothing kept. */
    for (unsigned int n = 0; n < 2; n++) {
        fake_console_reset();
        fake_kmem_fail_after_n(n);
        assert_int_equal(perfmon_offcpu_report(cap, 0), SHELL_ERR_REPORTED);
        fake_kmem_fail_after_n(UINT32_MAX);
        assert_string_equal(fake_console_output(),
                            "perfmon: report: out of memory\n");
    }
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_walk_merges_cpus, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_offcpu_spans, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offcpu_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_script_line_is_perfs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_report, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
