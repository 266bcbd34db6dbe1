/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel tests of the branch-record driver (arch/x86/lbr.c), with a
 * fake back end that exists in the test image only, put in place of the
 * probed one (lbr_install()) for the duration of a test.  The fake
 * captures on the software PMU's overflow NMIs (caps.any_dev): each
 * capture hands over a stack that says which CPU took it and the how
 * many'th capture of that CPU it is.
 *
 *   - fake_race: while sampling NMIs fire on every CPU (the `test` event
 *     sampled on every CPU, bumped by threads hopping across them, and
 *     cpu-clock), events asking for branch stacks are attached and
 *     detached in a loop, so that the driver's callback is registered and
 *     unregistered under NMI load and its buffers poisoned after each
 *     unregistration: no NMI ever finds the poison, and every sample of
 *     those events carries a whole stack, of its own CPU, newer than the
 *     previous sample's there (the stack current at its interrupt);
 *   - fake_record: `perfmon record -b` through the shell, then `perfmon
 *     report --branch` and `perfmon script` (their output is checked by
 *     tests/boot/boot_lbr.py): every sample carries the fake stack;
 *   - hw_loop (real LBR only, for tools/hwcheck; skipped elsewhere): the
 *     4-instruction spin loop sampled with branch stacks on cycles: its
 *     own backward branch dominates the stacks.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lbr.h"
#include "kern/error.h"
#include "kern/ktest.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_capture.h"
#include "kern/perfmon_ring.h"
#include "kern/shell.h"
#include "kern/string.h"
#include "kern/swevent.h"
#include "kern/symtab.h"
#include "kern/thread.h"
#include "kern/workload.h"
#include "tests/kernel/ktest_util.h"

#define LT_DEPTH        4
#define LT_ROUNDS       40
#define LT_MOVERS       2
#define LT_FIELDS       (PERFMON_SF_IP | PERFMON_SF_CPU | PERFMON_SF_BRANCH)
#define LT_FILTER       (PERFMON_BRF_ANY | PERFMON_BRF_MODE)

/* A race stack's from: a tag, the CPU, the capture's number there. */
#define LT_TAG          0xf1ULL
#define LT_FROM(cpu, seq) ((LT_TAG << 56) | ((uint64_t)(cpu) << 40) | (seq))
#define LT_CPU_OF(from) ((unsigned int)(((from) >> 40) & 0xffff))
#define LT_SEQ_OF(from) ((from) & ((1ULL << 40) - 1))

/*
 * The fake back end's state.  demo: hand over a stack of real kernel
 * addresses (for report and script) rather than the race's tags.  seq:
 * captures per CPU, each CPU's written by its own NMIs only.
 */
static struct {
    bool demo;
    uint64_t seq[CPU_MAX];
    unsigned int nr_starts;             /* atomic: cpu_start calls */
} lt;

static int
lt_probe(struct lbr_caps *caps)
{
    (void)caps;
    return -ENODEV;                     /* installed, never probed */
}

static const char *
lt_cpu_check(void)
{
    return NULL;
}

static const char *
lt_check_filter(unsigned int filter)
{
    (void)filter;
    return NULL;
}

static void
lt_cpu_start(unsigned int filter)
{
    (void)filter;
    __atomic_fetch_add(&lt.nr_starts, 1, __ATOMIC_RELAXED);
}

static void
lt_cpu_nop(void)
{
}

/*
 * The demo stack: the spin loop's backward branch (its jnz at +0xd, back
 * to its add at +0x2) three times in four, a mispredicted exit once.
 */
#define LT_LOOP_JNZ     0xd
#define LT_LOOP_TOP     0x2
#define LT_LOOP_RET     0xf

static void
lt_demo_stack(struct perfmon_branch *entries, uint64_t seq)
{
    uint64_t loop = (uintptr_t)workload_spin_loop;

    for (unsigned int i = 0; i < LT_DEPTH; i++) {
        bool exit = i == LT_DEPTH - 1;

        entries[i] = (struct perfmon_branch){
            .from = loop + (exit ? LT_LOOP_RET : LT_LOOP_JNZ),
            .to = exit ? (uintptr_t)shell_exec_argv : loop + LT_LOOP_TOP,
            .flags = (exit ? PERFMON_BR_MISPRED : PERFMON_BR_PREDICTED)
                     | ((seq & 0xff) + 1) << PERFMON_BR_CYCLES_SHIFT,
        };
    }
}

static unsigned int
lt_capture(struct perfmon_branch *entries)
{
    unsigned int cpu = cpu_id();
    uint64_t seq = ++lt.seq[cpu];

    if (lt.demo) {
        lt_demo_stack(entries, seq);
        return LT_DEPTH;
    }

    for (unsigned int i = 0; i < LT_DEPTH; i++) {
        entries[i] = (struct perfmon_branch){
            .from = LT_FROM(cpu, seq),
            .to = LT_FROM(cpu, seq) + i,
            .flags = PERFMON_BR_PREDICTED,
        };
    }

    return LT_DEPTH;
}

static const struct lbr_backend lt_backend = {
    .probe = lt_probe,
    .cpu_check = lt_cpu_check,
    .check_filter = lt_check_filter,
    .cpu_start = lt_cpu_start,
    .cpu_stop = lt_cpu_nop,
    .cpu_reset = lt_cpu_nop,
    .capture = lt_capture,
};

static const struct lbr_caps lt_caps = {
    .name = "fake",
    .what = "fake branch records (test image)",
    .depth = LT_DEPTH,
    .kinds = PERFMON_BRF_KINDS,
    .modes = true,
    .any_dev = true,
};

/* The soft PMU samples through its overflow NMI. */
static bool
lt_can_sample(void)
{
    struct perfmon_dev *soft = perfmon_dev_find("soft");
    struct perfmon_dev_info info;

    if (soft == NULL || perfmon_dev_get_info(soft, &info) != 0
        || !info.overflow_intr) {
        ktest_skip_reason("the soft PMU is polled (softpmu.overflow=poll)");
        return false;
    }

    return true;
}

static int
lt_install(bool demo)
{
    memset(&lt, 0, sizeof(lt));
    lt.demo = demo;
    return lbr_install(&lt_backend, &lt_caps);
}

/* ---- fake_race ---------------------------------------------------------- */

struct lt_mover {
    volatile bool stop;
};

/* Bump the `test` event on every CPU in turn: its sampling NMIs follow. */
static void
lt_mover_fn(void *arg)
{
    struct lt_mover *m = arg;
    unsigned int n = cpu_count();

    for (unsigned int i = 0; !m->stop; i++) {
        thread_set_affinity(thread_self(), THREAD_CPUMASK(i % n));

        for (unsigned int j = 0; j < 50; j++) {
            swevent_add(SWEVENT_TEST, 1 + (i + j) % 13);
        }
    }
}

/* CPU events on every CPU (all attached, or none: -error). */
static int
lt_attach_cpus(struct perfmon_event *evs, unsigned int id,
               const struct perfmon_sampling *s)
{
    struct perfmon_event *set[CPU_MAX];
    unsigned int nr = cpu_count();
    int error = 0;

    for (unsigned int cpu = 0; cpu < nr && error == 0; cpu++) {
        set[cpu] = &evs[cpu];
        error = perfmon_event_init(&evs[cpu], id, PERFMON_EF_KERN
                                               | PERFMON_EF_DISABLED);

        if (error == 0) {
            error = perfmon_event_set_sampling(&evs[cpu], s);
        }

        if (error == 0) {
            error = perfmon_event_attach_cpu(&evs[cpu], cpu);
        }

        if (error != 0) {
            for (unsigned int c = 0; c < cpu; c++) {
                perfmon_event_detach(&evs[c]);
            }
        }
    }

    return (error == 0) ? perfmon_events_enable(set, nr) : error;
}

static void
lt_detach_cpus(struct perfmon_event *evs)
{
    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        if (perfmon_event_attached(&evs[cpu])) {
            perfmon_event_detach(&evs[cpu]);
        }
    }
}

/* What the branch events' samples held. */
struct lt_checked {
    unsigned int nr_samples;
    unsigned int nr_bad;                /* no whole stack, or not theirs */
    uint64_t last_seq[CPU_MAX];
};

static uint64_t lt_rec[PERFMON_RING_MAX_REC / sizeof(uint64_t)];

/* A race sample: a whole stack of its own CPU, newer than the last one. */
static bool
lt_sample_ok(const struct perfmon_sample *s, struct lt_checked *c)
{
    uint64_t from, seq;

    if (s->nr_branches != LT_DEPTH || s->cpu >= CPU_MAX) {
        return false;
    }

    from = s->branches[0].from;
    seq = LT_SEQ_OF(from);

    if ((from >> 56) != LT_TAG || LT_CPU_OF(from) != s->cpu
        || seq <= c->last_seq[s->cpu]) {
        return false;
    }

    for (unsigned int i = 0; i < LT_DEPTH; i++) {
        if (s->branches[i].from != from || s->branches[i].to != from + i) {
            return false;
        }
    }

    c->last_seq[s->cpu] = seq;
    return true;
}

static void
lt_check_samples(struct perfmon_sbuf *sbuf, struct lt_checked *c)
{
    for (unsigned int cpu = 0; cpu < perfmon_sbuf_nr_cpus(sbuf); cpu++) {
        size_t size;

        while ((size = perfmon_sbuf_read(sbuf, cpu, lt_rec, sizeof(lt_rec)))
               != 0) {
            struct perfmon_sample s;

            if (perfmon_sample_decode(lt_rec, size, &s) != 0) {
                continue;       /* throttle records */
            }

            c->nr_samples++;
            c->nr_bad += !lt_sample_ok(&s, c);
        }
    }
}

static int
lt_fake_race(void)
{
    struct perfmon_sampling load = { .period = 53,
                                     .fields = PERFMON_SF_IP };
    struct perfmon_sampling clock = { .freq = 4000,
                                      .fields = PERFMON_SF_IP };
    struct perfmon_sampling br = { .period = 89, .fields = LT_FIELDS,
                                   .branch_filter = LT_FILTER };
    static struct perfmon_event load_evs[CPU_MAX], clock_evs[CPU_MAX];
    static struct perfmon_event br_evs[CPU_MAX];
    struct lt_mover movers[LT_MOVERS] = { 0 };
    struct thread *threads[LT_MOVERS];
    unsigned int nr_threads = 0, nr_rounds = 0;
    struct lt_checked checked = { 0 };
    uint64_t poisoned = lbr_nr_poisoned();
    bool installed = false;

    if (!lt_can_sample()) {
        return KTEST_SKIP;
    }

    memset(load_evs, 0, sizeof(load_evs));
    memset(clock_evs, 0, sizeof(clock_evs));
    memset(br_evs, 0, sizeof(br_evs));
    KTEST_ASSERT_EQ(perfmon_sbuf_create(&load.sbuf, 65536), 0);
    KTEST_CHECK_EQ(perfmon_sbuf_create(&clock.sbuf, 65536), 0);
    KTEST_CHECK_EQ(perfmon_sbuf_create(&br.sbuf, 262144), 0);
    KTEST_CHECK_EQ(lt_install(false), 0);
    installed = true;
    KTEST_CHECK_EQ(lt_attach_cpus(load_evs, PERFMON_EV_TEST, &load), 0);
    KTEST_CHECK_EQ(lt_attach_cpus(clock_evs, PERFMON_EV_TASK_CLOCK, &clock),
                   0);

    for (unsigned int i = 0; i < LT_MOVERS; i++) {
        KTEST_CHECK_EQ(thread_create(&threads[i], "lbr-mover", lt_mover_fn,
                                     &movers[i], THREAD_CPUMASK_ALL), 0);
        nr_threads++;
    }

    /*
     * Each round registers the callback (the first branch event) and
     * unregisters it (the last), the NMIs going on all along.
     */
    for (unsigned int round = 0; round < LT_ROUNDS; round++) {
        KTEST_CHECK_EQ(lt_attach_cpus(br_evs, PERFMON_EV_TEST, &br), 0);

        if (round % 4 != 0) {
            thread_msleep(2);
        }

        lt_detach_cpus(br_evs);
        nr_rounds++;
        KTEST_CHECK_EQ(lbr_nr_poisoned(), poisoned);
    }

    lt_check_samples(br.sbuf, &checked);
    ktest_diag("%u rounds, %u branch-stack samples, %u bad; %u starts",
               nr_rounds, checked.nr_samples, checked.nr_bad, lt.nr_starts);
    KTEST_CHECK(checked.nr_samples > 0);
    KTEST_CHECK_EQ(checked.nr_bad, 0);
    KTEST_CHECK_EQ(lt.nr_starts, LT_ROUNDS * cpu_count());

out:
    for (unsigned int i = 0; i < nr_threads; i++) {
        movers[i].stop = true;
        thread_join(threads[i]);
    }

    lt_detach_cpus(br_evs);
    lt_detach_cpus(clock_evs);
    lt_detach_cpus(load_evs);

    if (installed) {
        KTEST_CHECK_EQ(lbr_install(NULL, NULL), 0);
    }

    perfmon_sbuf_destroy(br.sbuf);
    perfmon_sbuf_destroy(clock.sbuf);
    perfmon_sbuf_destroy(load.sbuf);
    return ktest_result();
}

KTEST_DEFINE(lbr, fake_race, lt_fake_race);

/* ---- fake_record -------------------------------------------------------- */

struct lt_rec_check {
    unsigned int nr_samples;
    unsigned int nr_bad;
};

static bool
lt_rec_sample(const struct perfmon_rec_hdr *hdr, void *arg)
{
    struct lt_rec_check *c = arg;
    struct perfmon_branch want[LT_DEPTH];
    struct perfmon_sample s;

    if (hdr->type != PERFMON_REC_SAMPLE
        || perfmon_sample_decode(hdr, hdr->size, &s) != 0) {
        return true;
    }

    c->nr_samples++;

    if (s.nr_branches != LT_DEPTH) {
        c->nr_bad++;
        return true;
    }

    lt_demo_stack(want, 0);

    for (unsigned int i = 0; i < LT_DEPTH; i++) {
        if (s.branches[i].from != want[i].from
            || s.branches[i].to != want[i].to) {
            c->nr_bad++;
            break;
        }
    }

    return true;
}

static int
lt_fake_record(void)
{
    struct lt_rec_check check = { 0 };
    struct perfmon_branch_info info;

    if (!lt_can_sample()) {
        return KTEST_SKIP;
    }

    KTEST_ASSERT_EQ(lt_install(true), 0);
    perfmon_branch_get_info(&info);
    KTEST_CHECK(info.present);
    KTEST_CHECK_EQ(shell_exec("perfmon info"), 0);
    KTEST_CHECK_EQ(shell_exec("perfmon record -b -e cpu-clock -F 1000 -- "
                              "spin 30000000"), 0);
    KTEST_CHECK(perfmon_capture_last() != NULL);
    perfmon_capture_foreach(perfmon_capture_last(), lt_rec_sample, &check);
    ktest_diag("%u samples, %u without the fake stack", check.nr_samples,
               check.nr_bad);
    KTEST_CHECK(check.nr_samples > 0);
    KTEST_CHECK_EQ(check.nr_bad, 0);
    KTEST_CHECK_EQ(shell_exec("perfmon report --branch"), 0);
    KTEST_CHECK_EQ(shell_exec("perfmon script"), 0);

    /* A filter too: any_call,k; and the same refusals as without. */
    KTEST_CHECK_EQ(shell_exec("perfmon record -j any_call,k -e cpu-clock "
                              "-F 1000 -- spin 1000000"), 0);
    KTEST_CHECK(shell_exec("perfmon record -j in_tx -- spin 1") != 0);

out:
    /* The recordings are the test's: none is left behind. */
    perfmon_capture_keep(NULL);
    KTEST_CHECK_EQ(lbr_install(NULL, NULL), 0);
    return ktest_result();
}

KTEST_DEFINE(lbr, fake_record, lt_fake_record);

/* ---- hw_loop ------------------------------------------------------------ */

/* Whether addr is inside the function named as fn's start is. */
static bool
lt_in_fn(uint64_t addr, const void *fn)
{
    uint64_t off;
    const char *name = symtab_lookup(addr, &off);

    return name != NULL && name == symtab_lookup((uintptr_t)fn, &off);
}

struct lt_loop_check {
    uint64_t nr_branches;
    uint64_t nr_loop;                   /* the loop's backward branch */
};

static bool
lt_loop_sample(struct perfmon_sbuf *sbuf, unsigned int cpu,
               struct lt_loop_check *c)
{
    size_t size = perfmon_sbuf_read(sbuf, cpu, lt_rec, sizeof(lt_rec));
    struct perfmon_sample s;

    if (size == 0) {
        return false;
    }

    if (perfmon_sample_decode(lt_rec, size, &s) == 0) {
        for (unsigned int i = 0; i < s.nr_branches; i++) {
            const struct perfmon_branch *b = &s.branches[i];

            c->nr_branches++;
            c->nr_loop += b->to < b->from
                          && lt_in_fn(b->from, workload_spin_loop)
                          && lt_in_fn(b->to, workload_spin_loop);
        }
    }

    return true;
}

static int
lt_hw_loop(void)
{
    struct perfmon_sampling s = { .period = 100003, .fields = LT_FIELDS,
                                  .branch_filter = LT_FILTER };
    struct lt_loop_check c = { 0 };
    struct perfmon_branch_info info;
    struct perfmon_event ev;
    int error;

    perfmon_branch_get_info(&info);

    if (!info.present) {
        ktest_skip_reason(info.text);
        return KTEST_SKIP;
    }

    memset(&ev, 0, sizeof(ev));
    KTEST_ASSERT_EQ(perfmon_sbuf_create(&s.sbuf, 262144), 0);
    KTEST_CHECK_EQ(perfmon_event_init(&ev, PERFMON_EV_CYCLE, PERFMON_EF_KERN),
                   0);
    KTEST_CHECK_EQ(perfmon_event_set_sampling(&ev, &s), 0);
    error = perfmon_event_attach(&ev, thread_self());

    if (error == -ENOENT || error == -EOPNOTSUPP) {
        ktest_skip_reason("no hardware cycles event to sample with");
        perfmon_sbuf_destroy(s.sbuf);
        return KTEST_SKIP;
    }

    KTEST_CHECK_EQ(error, 0);
    workload_spin_loop(30000000);
    perfmon_event_detach(&ev);

    for (unsigned int cpu = 0; cpu < perfmon_sbuf_nr_cpus(s.sbuf); cpu++) {
        while (lt_loop_sample(s.sbuf, cpu, &c)) {
        }
    }

    ktest_diag("%s: %llu branches, %llu of them the spin loop's backward "
               "branch", info.text, (unsigned long long)c.nr_branches,
               (unsigned long long)c.nr_loop);
    KTEST_CHECK(c.nr_branches > 0);
    KTEST_CHECK(c.nr_loop * 10 >= c.nr_branches * 9);

out:
    if (perfmon_event_attached(&ev)) {
        perfmon_event_detach(&ev);
    }

    perfmon_sbuf_destroy(s.sbuf);
    return ktest_result();
}

KTEST_DEFINE(lbr, hw_loop, lt_hw_loop);
