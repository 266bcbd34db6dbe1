/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon selftest` (see kern/perfmon/cmd/perfmon_selftest.h): the run
 * and the checks that need nothing but the core's API; each check's line
 * is written by the core's report (kern/perfmon_selftest.h).  Counts of
 * the hardware are taken on the spin loop of kern/workload.c, whose
 * iterations are exactly WORKLOAD_SPIN_INSNS instructions and one branch:
 * every count is the smallest of a few runs with interrupts disabled (an interrupt, or an
 * SMI, only ever adds), and per-iteration figures are the difference
 * between a long and a short run, so that the constant cost of reading
 * the counters cancels out.  The ranges are those of a healthy PMU with
 * some room for machines; the comment at each says why.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_accuracy.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/perfmon/cmd/perfmon_json.h"
#include "kern/perfmon/cmd/perfmon_selftest.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/string.h"
#include "kern/swevent.h"
#include "kern/thread.h"
#include "kern/workload.h"

/* The short and the long run of the spin loop, and runs of each. */
#define PERFMON_SELFTEST_SHORT      100000ULL
#define PERFMON_SELFTEST_LONG       300000ULL
#define PERFMON_SELFTEST_ROUNDS     5

/* The branchy run, and the memory walk: larger than most L2 caches. */
#define PERFMON_SELFTEST_BRANCHY    200000ULL
#define PERFMON_SELFTEST_WALK_SIZE  (8UL << 20)
#define PERFMON_SELFTEST_WALK_LINE  64UL

/* Software checks: yields, hops, and the busy wait (ms). */
#define PERFMON_SELFTEST_YIELDS     10
#define PERFMON_SELFTEST_HOPS       10
#define PERFMON_SELFTEST_BUSY_MS    20

/* ---- the run's own lines ------------------------------------------------ */

static void
perfmon_selftest_printf(struct perfmon_selftest *st, const char *fmt, ...)
{
    char line[PERFMON_SELFTEST_LINE_SIZE];
    va_list ap;

    va_start(ap, fmt);
    kvsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    st->print(st->arg, line);
}

/* Whether the run goes on: false once asked to stop (Ctrl-C). */
static bool
perfmon_selftest_go(struct perfmon_selftest *st)
{
    if (!st->stopped && st->stop != NULL && st->stop()) {
        st->stopped = true;
    }

    return !st->stopped;
}

/* ---- measuring ---------------------------------------------------------- */

/*
 * An event of this thread counting generic event id in mode flags, or
 * why not: a SKIP when the machine cannot count it (no device can, no
 * counter is free), a FAIL otherwise.  Returns whether it is attached.
 * With thread events refused (perfmon.hook=off) a CPU event on the run's
 * CPU counts the same where the measurement runs with interrupts off
 * (cpu_view), else the check is skipped.
 */
static bool
perfmon_selftest_attach_view(struct perfmon_selftest *st, const char *name,
                             struct perfmon_event *event, unsigned int id,
                             unsigned int flags, bool cpu_view)
{
    char why[64];
    int error;

    error = perfmon_event_init(event, id, flags);

    if (error == 0) {
        error = perfmon_event_attach(event, thread_self());
    }

    if (error == -EBUSY && cpu_view) {
        error = perfmon_event_attach_cpu(event, st->cpu);
    }

    if (error == 0) {
        return true;
    }

    if (error == -ENOENT) {
        perfmon_selftest_skip(st, name, "no device counts this event");
    } else if (error == -EAGAIN) {
        perfmon_selftest_skip(st, name, "every counter that could is in use");
    } else if (error == -EBUSY) {
        perfmon_selftest_skip(st, name, "thread events are off "
                              "(perfmon.hook=off)");
    } else {
        ksnprintf(why, sizeof(why), "cannot count it: %s", error_str(error));
        perfmon_selftest_fail(st, name, why);
    }

    return false;
}

static bool
perfmon_selftest_attach(struct perfmon_selftest *st, const char *name,
                        struct perfmon_event *event, unsigned int id,
                        unsigned int flags)
{
    return perfmon_selftest_attach_view(st, name, event, id, flags, true);
}

/*
 * Whether the check of one event begins: the run goes on, and the event
 * is attached (perfmon_selftest_attach()).
 */
static bool
perfmon_selftest_begin(struct perfmon_selftest *st, const char *name,
                       struct perfmon_event *event, unsigned int id,
                       unsigned int flags)
{
    return perfmon_selftest_go(st)
           && perfmon_selftest_attach(st, name, event, id, flags);
}

/*
 * The smallest count of event over PERFMON_SELFTEST_ROUNDS runs of fn(n),
 * interrupts disabled around fn (the reads need them enabled), and in
 * *tscp the TSC cycles of that run.
 */
static uint64_t
perfmon_selftest_min(struct perfmon_event *event, uint64_t (*fn)(uint64_t),
                     uint64_t n, uint64_t *tscp)
{
    uint64_t best = UINT64_MAX, best_tsc = 0;

    for (unsigned int round = 0; round < PERFMON_SELFTEST_ROUNDS; round++) {
        uint64_t before, after, tsc;
        unsigned long flags;

        before = perfmon_event_read(event);
        flags = cpu_intr_save();
        tsc = fn(n);
        cpu_intr_restore(flags);
        after = perfmon_event_read(event);

        if (after - before < best) {
            best = after - before;
            best_tsc = tsc;
        }
    }

    if (tscp != NULL) {
        *tscp = best_tsc;
    }

    return best;
}

/*
 * Events of generic id per spin iteration, in thousandths: the difference
 * of the long and the short run, the cost of the reads cancelled.
 */
static void
perfmon_selftest_per_iter(struct perfmon_selftest *st, const char *name,
                          unsigned int id, uint64_t lo, uint64_t hi)
{
    struct perfmon_event event;
    uint64_t shorter, longer;

    if (!perfmon_selftest_begin(st, name, &event, id, PERFMON_EF_KERN)) {
        return;
    }

    shorter = perfmon_selftest_min(&event, perfmon_selftest_spin,
                                   PERFMON_SELFTEST_SHORT, NULL);
    longer = perfmon_selftest_min(&event, perfmon_selftest_spin,
                                  PERFMON_SELFTEST_LONG, NULL);
    perfmon_event_detach(&event);
    perfmon_selftest_milli(st, name,
                           (longer > shorter)
                           ? perfmon_selftest_ratio(longer - shorter,
                                                    PERFMON_SELFTEST_LONG
                                                    - PERFMON_SELFTEST_SHORT)
                           : 0, lo, hi);
}

/* Events of generic id per TSC cycle of the long spin, in thousandths. */
static void
perfmon_selftest_per_tsc(struct perfmon_selftest *st, const char *name,
                         unsigned int id, uint64_t lo, uint64_t hi)
{
    struct perfmon_event event;
    uint64_t count, tsc;

    if (!perfmon_selftest_begin(st, name, &event, id, PERFMON_EF_KERN)) {
        return;
    }

    count = perfmon_selftest_min(&event, perfmon_selftest_spin,
                                 PERFMON_SELFTEST_LONG, &tsc);
    perfmon_event_detach(&event);
    perfmon_selftest_milli(st, name, perfmon_selftest_ratio(count, tsc), lo,
                           hi);
}

static uint64_t
perfmon_selftest_branchy(uint64_t n)
{
    uint64_t state = WORKLOAD_BRANCHY_SEED, start = cpu_rdtsc();

    workload_branchy_loop(n, &state);
    return cpu_rdtsc() - start;
}

/* ---- hardware checks through the core ----------------------------------- */

/*
 * Counting mode bits: the kernel runs everything in ring 0, so a :u event
 * counts nothing of a kernel loop, and a :k one all of it (plus the reads).
 */
static void
perfmon_selftest_modes(struct perfmon_selftest *st)
{
    static const char name_u[] = "instructions:u of a kernel spin";
    static const char name_k[] = "instructions:k of a kernel spin";
    struct perfmon_event event;
    uint64_t n = PERFMON_SELFTEST_LONG, insns = n * WORKLOAD_SPIN_INSNS;

    if (perfmon_selftest_begin(st, name_u, &event, PERFMON_EV_INSTRUCTION,
                               PERFMON_EF_USER)) {
        perfmon_selftest_range(st, name_u,
                               perfmon_selftest_min(&event,
                                                    perfmon_selftest_spin, n,
                                                    NULL), 0, 0);
        perfmon_event_detach(&event);
    }

    /* The reads add a few thousand instructions at most. */
    if (perfmon_selftest_begin(st, name_k, &event, PERFMON_EV_INSTRUCTION,
                               PERFMON_EF_KERN)) {
        perfmon_selftest_range(st, name_k,
                               perfmon_selftest_min(&event,
                                                    perfmon_selftest_spin, n,
                                                    NULL),
                               insns, insns + insns / 100 + 20000);
        perfmon_event_detach(&event);
    }
}

/*
 * Random branches: a predictor cannot do much better than half of them
 * wrong (the loop's own branch it predicts).
 */
static void
perfmon_selftest_branch_misses(struct perfmon_selftest *st)
{
    static const char name[] = "branch-misses per branchy branch";
    struct perfmon_event event;
    uint64_t misses;

    if (!perfmon_selftest_begin(st, name, &event, PERFMON_EV_BRANCH_MISS,
                                PERFMON_EF_KERN)) {
        return;
    }

    misses = perfmon_selftest_min(&event, perfmon_selftest_branchy,
                                  PERFMON_SELFTEST_BRANCHY, NULL);
    perfmon_event_detach(&event);
    perfmon_selftest_milli(st, name,
                           perfmon_selftest_ratio(misses,
                                                  PERFMON_SELFTEST_BRANCHY),
                           200, 800);
}

/*
 * Last-level cache references of a walk, one read per line, over a buffer
 * larger than most L2 caches: at least some go to the LLC (prefetchers
 * take many, so the floor is low), and not many more than one per line.
 */
static void
perfmon_selftest_cache(struct perfmon_selftest *st)
{
    static const char name[] = "cache-references per line of an 8 MiB walk";
    size_t size = PERFMON_SELFTEST_WALK_SIZE;
    uint64_t before, after, lines = 0, sum = 0;
    struct perfmon_event event;
    volatile uint8_t *buf;

    if (!perfmon_selftest_go(st)) {
        return;
    }

    buf = kmem_alloc(size);

    if (buf == NULL) {
        perfmon_selftest_skip(st, name, "cannot allocate 8 MiB");
        return;
    }

    if (!perfmon_selftest_attach(st, name, &event, PERFMON_EV_CACHE_REF,
                                 PERFMON_EF_KERN)) {
        kmem_free((void *)buf, size);
        return;
    }

    for (size_t off = 0; off < size; off += PERFMON_SELFTEST_WALK_LINE) {
        buf[off] = (uint8_t)off;
    }

    before = perfmon_event_read(&event);

    for (unsigned int pass = 0; pass < 2; pass++) {
        for (size_t off = 0; off < size; off += PERFMON_SELFTEST_WALK_LINE) {
            sum += buf[off];
            lines++;
        }
    }

    after = perfmon_event_read(&event);
    perfmon_event_detach(&event);
    kmem_free((void *)buf, size);
    (void)sum;
    perfmon_selftest_milli(st, name,
                           perfmon_selftest_ratio(after - before, lines),
                           10, 4000);
}

static void
perfmon_selftest_hw(struct perfmon_selftest *st)
{
    /*
     * Exactly 4 and 1 per iteration: 1% for SMIs and hypervisors (a
     * guest's counters are the host's, switched at each VM entry and
     * exit; kvm-unit-tests allows 2%).
     */
    perfmon_selftest_per_iter(st, "instructions per spin iteration",
                              PERFMON_EV_INSTRUCTION, 3960, 4040);
    perfmon_selftest_per_iter(st, "branches per spin iteration",
                              PERFMON_EV_BRANCH, 990, 1010);
    perfmon_selftest_per_iter(st, "branch-misses per spin iteration",
                              PERFMON_EV_BRANCH_MISS, 0, 10);
    perfmon_selftest_branch_misses(st);

    /*
     * Core cycles against the TSC: anything from a throttled core to
     * turbo, with room; reference cycles tick at the TSC's rate while the
     * core runs (less when a hypervisor takes the CPU away, off a little
     * where it scales the guest's TSC).
     */
    perfmon_selftest_per_tsc(st, "cycles per TSC cycle, spin",
                             PERFMON_EV_CYCLE, 200, 5000);
    perfmon_selftest_per_tsc(st, "ref-cycles per TSC cycle, spin",
                             PERFMON_EV_REF_CYCLE, 300, 1500);
    perfmon_selftest_cache(st);
    perfmon_selftest_modes(st);
}

/* ---- software checks ---------------------------------------------------- */

/*
 * task-clock counts TSC cycles while the thread runs.  A busy wait with
 * interrupts off (nothing else runs on its CPU meanwhile: in a slow
 * virtual machine ticks and other threads took a third of a wait with them
 * on), measured on the TSC, is all of it: the count is at least the wait.
 * It is at most the TSC time from before the first read to after the
 * second, however long the host held the virtual CPU in between: that
 * bounds the ratio above, with a little for rounding.
 */
static void
perfmon_selftest_task_clock(struct perfmon_selftest *st)
{
    static const char name[] = "soft: task-clock per TSC cycle, busy wait";
    uint64_t before, after, start, end, span, outer_start, outer_end;
    struct perfmon_event event;
    unsigned long flags;

    if (!perfmon_selftest_begin(st, name, &event, PERFMON_EV_TASK_CLOCK,
                                PERFMON_EF_KERN)) {
        return;
    }

    span = tsc_freq() / 1000 * PERFMON_SELFTEST_BUSY_MS;
    outer_start = cpu_rdtsc();
    before = perfmon_event_read(&event);
    flags = cpu_intr_save();
    start = cpu_rdtsc();

    do {
        end = cpu_rdtsc();
    } while (end - start < span);

    cpu_intr_restore(flags);
    after = perfmon_event_read(&event);
    outer_end = cpu_rdtsc();
    perfmon_event_detach(&event);
    perfmon_selftest_milli(st, name,
                           perfmon_selftest_ratio(after - before, end - start),
                           990,
                           perfmon_selftest_ratio(outer_end - outer_start,
                                                  end - start) + 10);
}

/* The helper of the context-switch check: yields back until told. */
struct perfmon_selftest_yield {
    bool stop;                          /* READ_ONCE: set by the test */
};

static void
perfmon_selftest_yield_helper(void *arg)
{
    struct perfmon_selftest_yield *yield = arg;

    while (!READ_ONCE(yield->stop)) {
        thread_yield();
    }
}

/*
 * With a helper thread pinned to the same CPU, each yield is a real
 * switch out and back: one context switch each (and the reads may add
 * one), as `yield N` counts them.
 */
static void
perfmon_selftest_switches(struct perfmon_selftest *st, unsigned int cpu)
{
    static const char name[] = "soft: context-switches of 10 yields";
    struct perfmon_selftest_yield yield = { .stop = false };
    struct perfmon_event event;
    struct thread *helper;
    uint64_t before, after;
    char why[64];
    int error;

    if (!perfmon_selftest_go(st)) {
        return;
    }

    error = thread_create(&helper, "selftest-yield",
                          perfmon_selftest_yield_helper, &yield,
                          THREAD_CPUMASK(cpu));

    if (error) {
        ksnprintf(why, sizeof(why), "no helper thread: %s", error_str(error));
        perfmon_selftest_fail(st, name, why);
        return;
    }

    if (perfmon_selftest_attach_view(st, name, &event,
                                     PERFMON_EV_CONTEXT_SWITCH,
                                     PERFMON_EF_KERN, false)) {
        before = perfmon_event_read(&event);

        for (unsigned int i = 0; i < PERFMON_SELFTEST_YIELDS; i++) {
            thread_yield();
        }

        after = perfmon_event_read(&event);
        perfmon_event_detach(&event);
        perfmon_selftest_range(st, name, after - before,
                               PERFMON_SELFTEST_YIELDS,
                               PERFMON_SELFTEST_YIELDS + 2);
    }

    WRITE_ONCE(yield.stop, true);
    thread_join(helper);
}

/* Each hop to the next CPU is a migration; pinned again at the end. */
static void
perfmon_selftest_migrations(struct perfmon_selftest *st, unsigned int cpu)
{
    static const char name[] = "soft: cpu-migrations of 10 hops";
    struct thread *self = thread_self();
    struct perfmon_event event;
    uint64_t before, after;
    unsigned int nr_cpus = cpu_count();

    if (!perfmon_selftest_go(st)) {
        return;
    }

    if (nr_cpus < 2) {
        perfmon_selftest_skip(st, name, "one CPU");
        return;
    }

    if (!perfmon_selftest_attach_view(st, name, &event, PERFMON_EV_MIGRATION,
                                      PERFMON_EF_KERN, false)) {
        return;
    }

    before = perfmon_event_read(&event);

    for (unsigned int i = 1; i <= PERFMON_SELFTEST_HOPS; i++) {
        thread_set_affinity(self, THREAD_CPUMASK((cpu + i) % nr_cpus));
    }

    after = perfmon_event_read(&event);
    perfmon_event_detach(&event);
    thread_set_affinity(self, THREAD_CPUMASK(cpu));
    perfmon_selftest_range(st, name, after - before, PERFMON_SELFTEST_HOPS,
                           PERFMON_SELFTEST_HOPS);
}

/*
 * The software PMU's test event, added to in steps of half its period:
 * the count crosses the counter's wrap twice and must come out exact,
 * whether the wraps arrive by NMI or by polling.
 */
static void
perfmon_selftest_wraps(struct perfmon_selftest *st, unsigned int cpu)
{
    static const char name[] = "soft: test event across 2 wraps";
    struct perfmon_dev *soft = perfmon_dev_find("soft");
    struct perfmon_event event;
    uint64_t before, after, step;
    int error;

    if (!perfmon_selftest_go(st)) {
        return;
    }

    if (soft == NULL) {
        perfmon_selftest_skip(st, name, "no software PMU");
        return;
    }

    step = (soft->width > 32) ? (1ULL << 31) : (1ULL << (soft->width - 1));
    error = perfmon_event_init(&event, PERFMON_EV_TEST, PERFMON_EF_KERN);

    if (error == 0) {
        error = perfmon_event_attach_cpu(&event, cpu);
    }

    if (error) {
        perfmon_selftest_fail(st, name, error_str(error));
        return;
    }

    before = perfmon_event_read(&event);

    for (unsigned int i = 0; i < 4; i++) {
        swevent_add(SWEVENT_TEST, step + 1);
        perfmon_event_read(&event);
    }

    after = perfmon_event_read(&event);
    perfmon_event_detach(&event);
    perfmon_selftest_range(st, name, after - before, 4 * (step + 1),
                           4 * (step + 1));
}

/* ---- the run ------------------------------------------------------------ */

unsigned int
perfmon_selftest_run(struct perfmon_selftest *st)
{
    struct thread *self = thread_self();
    uint64_t affinity = thread_get_affinity(self);
    unsigned int cpu = thread_cpu(self);
    bool present;
    const char *hw = perfmon_hw_status(&present);

    st->nr_pass = st->nr_fail = st->nr_skip = 0;
    st->stopped = false;
    thread_set_affinity(self, THREAD_CPUMASK(cpu));
    cpu = thread_cpu(self);
    st->cpu = cpu;

    if (present) {
        perfmon_selftest_printf(st, "perfmon selftest: hardware PMU: %s; on "
                                "cpu%u", hw, cpu);
    } else {
        perfmon_selftest_printf(st, "perfmon selftest: hardware PMU: %s: "
                                "software-PMU checks only", hw);
    }

    perfmon_selftest_task_clock(st);
    perfmon_selftest_switches(st, cpu);
    perfmon_selftest_migrations(st, cpu);
    perfmon_selftest_wraps(st, cpu);

    if (present) {
        perfmon_selftest_hw(st);
    }

    for (unsigned int i = 0; i < perfmon_nr_devs(); i++) {
        struct perfmon_dev *dev = perfmon_dev_get(i);

        if (dev->ops->selftest != NULL && perfmon_selftest_go(st)) {
            dev->ops->selftest(dev, st);
        }
    }

    thread_set_affinity(self, affinity);
    perfmon_selftest_printf(st, "perfmon selftest: %u checks: %u PASS, %u "
                            "FAIL, %u SKIP%s",
                            st->nr_pass + st->nr_fail + st->nr_skip,
                            st->nr_pass, st->nr_fail, st->nr_skip,
                            st->stopped ? ", interrupted" : "");
    return st->nr_fail;
}

/* ---- the shell ---------------------------------------------------------- */

static void
perfmon_selftest_kprint(void *arg, const char *line)
{
    (void)arg;
    kprintf("%s\n", line);
}

/* -j: the lines between the checks are left out, the totals said last. */
static void
perfmon_selftest_print_none(void *arg, const char *line)
{
    (void)arg;
    (void)line;
}

/* -j: one JSON object a check. */
static void
perfmon_selftest_print_json(void *arg, const char *verdict, const char *name,
                            const char *measured, const char *expected)
{
    struct perfmon_cmd_line line;

    (void)arg;
    perfmon_cmd_line_init(&line);
    perfmon_cmd_line_add(&line, "{\"verdict\" : ");
    perfmon_json_add_string(&line, verdict);
    perfmon_cmd_line_add(&line, ", \"check\" : ");
    perfmon_json_add_string(&line, name);
    perfmon_cmd_line_add(&line, ", \"%s\" : ",
                         (strcmp(verdict, "SKIP") == 0) ? "why" : "measured");
    perfmon_json_add_string(&line, measured);

    if (expected != NULL) {
        perfmon_cmd_line_add(&line, ", \"expected\" : ");
        perfmon_json_add_string(&line, expected);
    }

    perfmon_cmd_line_add(&line, "}");
    perfmon_cmd_line_print(&line);
}

const char perfmon_selftest_usage[] =
    "usage: perfmon selftest [-j]\n"
    "       perfmon selftest --accuracy [-x SEP | -j]\n";

static const struct perfmon_cmd_longopt perfmon_selftest_longopts[] = {
    { "json", 'j', false },
    { NULL, 0, false },
};

static int
perfmon_selftest_option(void *arg, int opt, const char *val)
{
    struct perfmon_selftest *st = arg;

    (void)val;

    if (opt == 'j') {
        st->print = perfmon_selftest_print_none;
        st->check = perfmon_selftest_print_json;
    }

    return 0;
}

int
perfmon_selftest_main(int argc, char **argv)
{
    struct perfmon_selftest st = {
        .print = perfmon_selftest_kprint,
        .stop = shell_interrupted,
    };
    struct perfmon_cmd_opts opts;
    unsigned int failed;
    int error;

    if (perfmon_accuracy_asked(argc, argv)) {
        return perfmon_accuracy_main(argc, argv);
    }

    perfmon_cmd_opts_init(&opts, argc, argv, 2, "j",
                          perfmon_selftest_longopts);
    error = perfmon_cmd_options(&opts, "selftest", perfmon_selftest_usage,
                                perfmon_selftest_option, &st);

    if (error) {
        return error;
    }

    if (opts.index < argc) {
        return perfmon_cmd_error("selftest", perfmon_selftest_usage,
                                 "no arguments expected, not '%s'",
                                 argv[opts.index]);
    }

    failed = perfmon_selftest_run(&st);

    /* The totals, as the text's last line gives them. */
    if (st.check != NULL) {
        kprintf("{\"checks\" : %u, \"pass\" : %u, \"fail\" : %u, "
                "\"skip\" : %u, \"interrupted\" : %s}\n",
                st.nr_pass + st.nr_fail + st.nr_skip, st.nr_pass, st.nr_fail,
                st.nr_skip, st.stopped ? "true" : "false");
    }

    if (st.stopped) {
        return -EINTR;
    }

    return (failed != 0) ? SHELL_ERR_REPORTED : 0;
}
