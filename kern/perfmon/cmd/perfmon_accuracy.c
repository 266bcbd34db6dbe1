/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon selftest --accuracy` (see kern/perfmon/cmd/perfmon_accuracy.h):
 * the runs, and the counts and sample addresses they take; what the
 * counts mean is computed and printed by perfmon_accuracy_calc.c.
 *
 * Every count here is of the run's own thread, pinned to one CPU.  The
 * step PMU counts what the thread executes outside interrupt handlers,
 * one trap an instruction, so its count of a span is the same on every
 * run: the exact reference.  The clock tick makes flexible events take
 * turns from its handler, which the step PMU does not count, so that the
 * turns change no exact count.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/num.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_accuracy.h"
#include "kern/perfmon/cmd/perfmon_accuracy_i.h"
#include "kern/perfmon/cmd/perfmon_cmd.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/string.h"
#include "kern/thread.h"
#include "kern/workload.h"

/* Runs of each workload. */
#define PERFMON_ACCURACY_RUNS       3

/*
 * Workload sizes: about a million stepped instructions each, which under
 * TCG (a few hundred nanoseconds a stepped instruction) is some hundreds
 * of milliseconds: about a hundred turns at the default perfmon.mux_ms.
 */
#define PERFMON_ACCURACY_SPIN       250000ULL
#define PERFMON_ACCURACY_BRANCHY    80000ULL
#define PERFMON_ACCURACY_YIELDS     150ULL
#define PERFMON_ACCURACY_WALK_READS 160000ULL
#define PERFMON_ACCURACY_WALK_SIZE  (256UL << 10)
#define PERFMON_ACCURACY_WALK_LINE  64UL

/* What the flexible events count: on which device, which event. */
struct perfmon_accuracy_kind {
    const char *dev;
    const char *name;
    unsigned int id;
};

static const struct perfmon_accuracy_kind perfmon_accuracy_kinds[] = {
    { "step", "instructions", PERFMON_EV_INSTRUCTION },
    { "soft", "interrupts", PERFMON_EV_INTERRUPT },
};

struct perfmon_accuracy_work {
    const char *name;
    void (*fn)(struct perfmon_accuracy *acc, uint64_t n);
    uint64_t n;
};

static bool
perfmon_accuracy_text(const struct perfmon_accuracy *acc)
{
    return acc->out->sep == NULL && !acc->out->json;
}

bool
perfmon_accuracy_go(struct perfmon_accuracy *acc)
{
    if (!acc->stopped && acc->stop != NULL && acc->stop()) {
        acc->stopped = true;
    }

    return !acc->stopped;
}

/* ---- workloads ------------------------------------------------------------ */

static void
perfmon_accuracy_spin(struct perfmon_accuracy *acc, uint64_t n)
{
    (void)acc;
    workload_spin_loop(n);
}

static void
perfmon_accuracy_branchy(struct perfmon_accuracy *acc, uint64_t n)
{
    uint64_t state = WORKLOAD_BRANCHY_SEED;

    (void)acc;
    workload_branchy_loop(n, &state);
}

/* n reads, a cache line apart, round the buffer. */
static void
perfmon_accuracy_memwalk(struct perfmon_accuracy *acc, uint64_t n)
{
    size_t off = 0;
    uint8_t sum = 0;

    for (uint64_t i = 0; i < n; i++) {
        sum += acc->walk[off];
        off = (off + PERFMON_ACCURACY_WALK_LINE)
              & (PERFMON_ACCURACY_WALK_SIZE - 1);
    }

    (void)sum;
}

/* The helper yields straight back (pinned to the run's CPU). */
static void
perfmon_accuracy_yield_helper(void *arg)
{
    struct perfmon_accuracy *acc = arg;

    while (!READ_ONCE(acc->yield_stop)) {
        thread_yield();
    }
}

static void
perfmon_accuracy_yield(struct perfmon_accuracy *acc, uint64_t n)
{
    (void)acc;

    for (uint64_t i = 0; i < n; i++) {
        thread_yield();
    }
}

static const struct perfmon_accuracy_work perfmon_accuracy_works[] = {
    { "spin", perfmon_accuracy_spin, PERFMON_ACCURACY_SPIN },
    { "branchy", perfmon_accuracy_branchy, PERFMON_ACCURACY_BRANCHY },
    { "yield", perfmon_accuracy_yield, PERFMON_ACCURACY_YIELDS },
    { "memwalk", perfmon_accuracy_memwalk, PERFMON_ACCURACY_WALK_READS },
};

/* ---- event sets ----------------------------------------------------------- */

/* Attach event (initialised) to this thread on dev, its own group. */
int
perfmon_accuracy_attach(struct perfmon_accuracy_set *set,
                        struct perfmon_event *event, struct perfmon_dev *dev,
                        unsigned int id, unsigned int flags, bool group)
{
    int error = perfmon_event_init(event, id, flags | PERFMON_EF_KERN
                                   | PERFMON_EF_DISABLED);

    if (!error) {
        error = perfmon_event_set_dev(event, dev);
    }

    if (!error && group) {
        error = perfmon_event_set_group(event, event);
    }

    if (!error) {
        error = perfmon_event_attach(event, thread_self());
    }

    if (!error) {
        set->all[set->nr_all++] = event;
    }

    return error;
}

void
perfmon_accuracy_detach(struct perfmon_accuracy_set *set)
{
    for (unsigned int i = 0; i < set->nr_all; i++) {
        perfmon_event_detach(set->all[i]);
    }

    set->nr_all = 0;
}

/*
 * The pinned step reference, then for dev other than the step PMU its
 * own pinned reference, then nr_flex flexible events of id, each its own
 * group (events of one kind in one group would share one counter).
 */
int
perfmon_accuracy_set_attach(struct perfmon_accuracy *acc,
                            struct perfmon_accuracy_set *set,
                            struct perfmon_dev *dev, unsigned int id,
                            unsigned int nr_flex)
{
    int error;

    set->nr_all = 0;
    error = perfmon_accuracy_attach(set, &set->ref, acc->step,
                                    PERFMON_EV_INSTRUCTION, PERFMON_EF_PINNED,
                                    false);

    if (!error && dev != acc->step) {
        error = perfmon_accuracy_attach(set, &set->dev_ref, dev, id,
                                        PERFMON_EF_PINNED, false);
    }

    for (unsigned int i = 0; !error && i < nr_flex; i++) {
        error = perfmon_accuracy_attach(set, &set->flex[i], dev, id, 0, true);
    }

    if (error) {
        perfmon_accuracy_detach(set);
    }

    return error;
}

/* ---- 1: multiplexing ------------------------------------------------------ */

/* perfmon.mux_ms as the core takes it: 1..1000, else its default. */
static unsigned int
perfmon_accuracy_mux_ms(void)
{
    uint64_t ms;

    if (cmdline_get_u64("perfmon.mux_ms", &ms) != 0 || ms < 1 || ms > 1000) {
        return PERFMON_MUX_MS_DEFAULT;
    }

    return (unsigned int)ms;
}

/* The results of one kind and workload over its runs. */
struct perfmon_accuracy_mux {
    unsigned int nr_flex;
    unsigned int nr_counters;
    uint64_t exact_min;
    uint64_t exact_max;
    uint64_t share_sum;                 /* ppm, summed */
    unsigned int nr_share;
    uint64_t cover_sum;                 /* ppm a run, summed */
    unsigned int nr_cover;
    struct perfmon_accuracy_err per_event[PERFMON_ACCURACY_MAX_FLEX];
};

/*
 * One span: enable every event at once, run the workload, disable them
 * at once, so that all count the same instructions.  The workloads that
 * need no switch run with preemption disabled: a switch away and back
 * is the run's own code, counted (some thousands of instructions with a
 * set this size), when another thread wants the CPU; the tick still
 * comes, and rotates the events from its handler.  Returns the exact
 * count (the step reference, or the device's own), and adds each flexible
 * event's error and share to mux when it is not NULL.
 */
static uint64_t
perfmon_accuracy_mux_span(struct perfmon_accuracy *acc,
                          struct perfmon_accuracy_set *set, bool dev_ref,
                          unsigned int nr_flex,
                          const struct perfmon_accuracy_work *work, uint64_t n,
                          struct perfmon_accuracy_mux *mux)
{
    uint64_t exact, total = 0;

    perfmon_events_enable(set->all, set->nr_all);

    if (work->fn == perfmon_accuracy_yield) {
        work->fn(acc, n);
    } else {
        thread_preempt_disable();
        work->fn(acc, n);
        thread_preempt_enable();
    }

    perfmon_events_disable(set->all, set->nr_all);
    exact = perfmon_event_read(dev_ref ? &set->dev_ref : &set->ref);

    for (unsigned int i = 0; mux != NULL && i < nr_flex; i++) {
        uint64_t enabled, running, count;

        count = perfmon_event_read_times(&set->flex[i], &enabled, &running);
        total += count;

        if (running == 0) {
            perfmon_accuracy_err_uncounted(&mux->per_event[i]);
            continue;
        }

        perfmon_accuracy_err_add(&mux->per_event[i],
                                 perfmon_accuracy_ppm(
                                     perfmon_accuracy_scale(count, enabled,
                                                            running),
                                     exact));
        mux->share_sum += num_muldiv(running, PERFMON_ACCURACY_PPM, enabled);
        mux->nr_share++;
    }

    if (mux != NULL) {
        mux->cover_sum += num_muldiv(total, PERFMON_ACCURACY_PPM,
                                     exact * mux->nr_counters);
        mux->nr_cover++;
    }

    return exact;
}

/*
 * One measured run: a fresh set attached, one span, the set detached (a
 * run's turns start from the same state every time).
 */
static int
perfmon_accuracy_mux_run(struct perfmon_accuracy *acc,
                         struct perfmon_accuracy_set *set,
                         struct perfmon_dev *dev, unsigned int id,
                         unsigned int nr_flex,
                         const struct perfmon_accuracy_work *work, uint64_t n,
                         struct perfmon_accuracy_mux *mux, uint64_t *exactp)
{
    int error = perfmon_accuracy_set_attach(acc, set, dev, id, nr_flex);

    if (error) {
        return error;
    }

    *exactp = perfmon_accuracy_mux_span(acc, set, dev != acc->step, nr_flex,
                                        work, n, mux);
    perfmon_accuracy_detach(set);
    return 0;
}

static void
perfmon_accuracy_mux_rows(struct perfmon_accuracy *acc,
                          const struct perfmon_accuracy_kind *kind,
                          const struct perfmon_accuracy_work *work,
                          unsigned int nr_counters,
                          const struct perfmon_accuracy_mux *mux,
                          uint64_t loop)
{
    struct perfmon_accuracy_mux_row row = {
        .dev = kind->dev, .event_name = kind->name, .workload = work->name,
        .event = -1, .mux_ms = perfmon_accuracy_mux_ms(),
        .runs = PERFMON_ACCURACY_RUNS, .nr_events = mux->nr_flex,
        .nr_counters = nr_counters, .exact_min = mux->exact_min,
        .exact_max = mux->exact_max, .loop = loop,
        .share_ppm = (mux->nr_share == 0) ? 0
                     : mux->share_sum / mux->nr_share,
        .cover_ppm = (mux->nr_cover == 0) ? 0
                     : mux->cover_sum / mux->nr_cover,
    };

    perfmon_accuracy_err_init(&row.err);

    for (unsigned int i = 0; i < mux->nr_flex; i++) {
        perfmon_accuracy_err_merge(&row.err, &mux->per_event[i]);
    }

    perfmon_accuracy_mux_print(acc->out, &row);

    /* Each event's own line, for scripts. */
    for (unsigned int i = 0; !perfmon_accuracy_text(acc) && i < mux->nr_flex;
         i++) {
        row.event = (int)i;
        row.err = mux->per_event[i];
        perfmon_accuracy_mux_print(acc->out, &row);
    }
}

/*
 * One kind of event on one workload: PERFMON_ACCURACY_RUNS runs, twice
 * as many flexible events as the device has counters left beside its
 * reference (each holds one about half the time).  For spin, one more
 * run of a single iteration: the loop's own instructions are the
 * difference.
 */
static int
perfmon_accuracy_mux_work(struct perfmon_accuracy *acc,
                          struct perfmon_accuracy_set *set,
                          const struct perfmon_accuracy_kind *kind,
                          const struct perfmon_accuracy_work *work)
{
    struct perfmon_dev *dev = perfmon_dev_find(kind->dev);
    struct perfmon_accuracy_mux mux;
    uint64_t exact, loop = 0;
    unsigned int nr_counters;
    int error;

    if (dev == NULL || dev->nr_pmcs < 2) {
        return -ENODEV;
    }

    nr_counters = dev->nr_pmcs - 1;
    memset(&mux, 0, sizeof(mux));
    mux.nr_flex = MIN(2 * nr_counters, PERFMON_ACCURACY_MAX_FLEX);
    mux.nr_counters = nr_counters;
    mux.exact_min = UINT64_MAX;

    for (unsigned int i = 0; i < mux.nr_flex; i++) {
        perfmon_accuracy_err_init(&mux.per_event[i]);
    }

    for (unsigned int run = 0; run < PERFMON_ACCURACY_RUNS; run++) {
        if (!perfmon_accuracy_go(acc)) {
            return -EINTR;
        }

        error = perfmon_accuracy_mux_run(acc, set, dev, kind->id,
                                         mux.nr_flex, work, work->n, &mux,
                                         &exact);

        if (error) {
            return error;
        }

        mux.exact_min = MIN(mux.exact_min, exact);
        mux.exact_max = MAX(mux.exact_max, exact);
    }

    if (work->fn == perfmon_accuracy_spin && dev == acc->step) {
        error = perfmon_accuracy_mux_run(acc, set, dev, kind->id,
                                         mux.nr_flex, work, 1, NULL, &exact);

        if (error) {
            return error;
        }

        loop = mux.exact_min - exact;
    }

    perfmon_accuracy_mux_rows(acc, kind, work, nr_counters, &mux, loop);
    return 0;
}

/*
 * The yield workload's helper thread exists only while that workload
 * runs: anywhere else a thread always ready on the run's CPU would take
 * it away at ticks, and the run's side of those switches would count.
 */
static int
perfmon_accuracy_mux_helped(struct perfmon_accuracy *acc,
                            struct perfmon_accuracy_set *set,
                            const struct perfmon_accuracy_kind *kind,
                            const struct perfmon_accuracy_work *work)
{
    struct thread *helper;
    int error;

    if (work->fn != perfmon_accuracy_yield) {
        return perfmon_accuracy_mux_work(acc, set, kind, work);
    }

    acc->yield_stop = false;
    error = thread_create(&helper, "accuracy-yield",
                          perfmon_accuracy_yield_helper, acc,
                          THREAD_CPUMASK(acc->cpu));

    if (error) {
        return error;
    }

    error = perfmon_accuracy_mux_work(acc, set, kind, work);
    WRITE_ONCE(acc->yield_stop, true);
    thread_join(helper);
    return error;
}

static int
perfmon_accuracy_mux(struct perfmon_accuracy *acc,
                     struct perfmon_accuracy_set *set)
{
    int error = 0;

    perfmon_accuracy_mux_head(acc->out, perfmon_accuracy_mux_ms(),
                              PERFMON_ACCURACY_RUNS);

    for (unsigned int k = 0; !error && k < ARRAY_SIZE(perfmon_accuracy_kinds);
         k++) {
        for (unsigned int w = 0;
             !error && w < ARRAY_SIZE(perfmon_accuracy_works); w++) {
            error = perfmon_accuracy_mux_helped(acc, set,
                                                &perfmon_accuracy_kinds[k],
                                                &perfmon_accuracy_works[w]);

            if (error == -ENODEV) {
                perfmon_accuracy_fail(acc->out, perfmon_accuracy_kinds[k].dev,
                                      "no such device with 2 counters or "
                                      "more");
                error = 0;
                break;
            }
        }
    }

    return error;
}

/* ---- the run -------------------------------------------------------------- */

static int
perfmon_accuracy_report(struct perfmon_accuracy *acc, const char *what,
                        int error)
{
    if (error && error != -EINTR) {
        perfmon_accuracy_fail(acc->out, what, error_str(error));
    }

    return error;
}

static int
perfmon_accuracy_all(struct perfmon_accuracy *acc,
                     struct perfmon_accuracy_set *set)
{
    bool present;
    const char *hw = perfmon_hw_status(&present);
    int error;

    error = perfmon_accuracy_report(acc, "multiplexing",
                                    perfmon_accuracy_mux(acc, set));

    if (error) {
        return error;
    }

    if (!present) {
        perfmon_accuracy_need_pmu(acc->out, "overcount", hw);
        error = perfmon_accuracy_report(acc, "skid",
                                        perfmon_accuracy_skid_run(acc, set,
                                                                  false));
        perfmon_accuracy_need_pmu(acc->out, "skid", hw);
        return error;
    }

    if (!perfmon_accuracy_go(acc)) {
        return -EINTR;
    }

    error = perfmon_accuracy_report(acc, "overcount",
                                    perfmon_accuracy_overcount_run(acc, set));

    if (error || !perfmon_accuracy_go(acc)) {
        return error ? error : -EINTR;
    }

    return perfmon_accuracy_report(acc, "skid",
                                   perfmon_accuracy_skid_run(acc, set, true));
}

int
perfmon_accuracy_run(const struct perfmon_accuracy_out *out,
                     bool (*stop)(void))
{
    struct perfmon_accuracy acc = { .out = out, .stop = stop };
    struct thread *self = thread_self();
    uint64_t affinity = thread_get_affinity(self);
    struct perfmon_accuracy_set *set;
    int error;

    acc.step = perfmon_dev_find("step");

    if (acc.step == NULL) {
        perfmon_accuracy_printf(acc.out, "perfmon selftest --accuracy: needs "
                                "the step PMU (boot with perfmon.step=on)");
        return -ENODEV;
    }

    set = kmem_zalloc(sizeof(*set));
    acc.walk = kmem_zalloc(PERFMON_ACCURACY_WALK_SIZE);

    if (set == NULL || acc.walk == NULL) {
        error = -ENOMEM;
        perfmon_accuracy_report(&acc, "perfmon selftest --accuracy", error);
    } else {
        thread_set_affinity(self, THREAD_CPUMASK(thread_cpu(self)));
        acc.cpu = thread_cpu(self);

        if (perfmon_accuracy_text(&acc)) {
            perfmon_accuracy_printf(acc.out, "perfmon selftest --accuracy: on "
                                    "cpu%u, against the step PMU's exact "
                                    "count", acc.cpu);
        }

        error = perfmon_accuracy_all(&acc, set);
        thread_set_affinity(self, affinity);
    }

    if (acc.walk != NULL) {
        kmem_free((void *)acc.walk, PERFMON_ACCURACY_WALK_SIZE);
    }

    if (set != NULL) {
        kmem_free(set, sizeof(*set));
    }

    return error;
}

/* ---- the shell ------------------------------------------------------------ */

static void
perfmon_accuracy_kprint(void *arg, const char *line)
{
    (void)arg;
    kprintf("%s\n", line);
}

bool
perfmon_accuracy_asked(int argc, char **argv)
{
    for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--accuracy") == 0) {
            return true;
        }
    }

    return false;
}

static const struct perfmon_cmd_longopt perfmon_accuracy_longopts[] = {
    { "accuracy", 'A', false },
    { "field-separator", 'x', true },
    { "json", 'j', false },
    { NULL, 0, false },
};

static const char perfmon_accuracy_usage[] =
    "usage: perfmon selftest --accuracy [-x SEP | -j]\n";

static int
perfmon_accuracy_option(void *arg, int opt, const char *val)
{
    struct perfmon_accuracy_out *out = arg;

    if (opt == 'x') {
        if (val[0] == '\0') {
            return perfmon_cmd_error("selftest", perfmon_accuracy_usage,
                                     "-x needs a separator");
        }

        out->sep = val;
    } else if (opt == 'j') {
        out->json = true;
    }

    return 0;
}

int
perfmon_accuracy_main(int argc, char **argv)
{
    struct perfmon_accuracy_out out = { .print = perfmon_accuracy_kprint };
    struct perfmon_cmd_opts opts;
    int error;

    perfmon_cmd_opts_init(&opts, argc, argv, 2, "jx:",
                          perfmon_accuracy_longopts);
    error = perfmon_cmd_options(&opts, "selftest", perfmon_accuracy_usage,
                                perfmon_accuracy_option, &out);

    if (error) {
        return error;
    }

    if (out.sep != NULL && out.json) {
        return perfmon_cmd_error("selftest", perfmon_accuracy_usage,
                                 "-x and -j do not go together");
    }

    if (opts.index < argc) {
        return perfmon_cmd_error("selftest", perfmon_accuracy_usage,
                                 "no arguments expected, not '%s'",
                                 argv[opts.index]);
    }

    error = perfmon_accuracy_run(&out, shell_interrupted);
    return (error == -ENODEV || (error != 0 && error != -EINTR))
           ? SHELL_ERR_REPORTED : error;
}
