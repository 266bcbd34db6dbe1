/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * perfmon microbenchmarks.
 *
 * Cheap operations are timed in batches of PB_BATCH calls per sample, so
 * that the cost of reading the TSC does not swamp what is measured; each
 * row reports the minimum and median of its samples, per operation, and
 * its ratio to the row it is compared with.  The targets those ratios are
 * judged against live in tools/bench alone.  The benchmark pins itself to
 * one CPU and leaves every event and thread it created released.  It uses
 * the core's API only: the software PMU is the device named "soft", its
 * `test` event is fed through kern/swevent.h.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/assert.h"
#include "kern/bench.h"
#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_bench.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/string.h"
#include "kern/swevent.h"
#include "kern/thread.h"
#include "kern/xcall.h"

#define PB_SAMPLES_DEFAULT  2000
#define PB_SAMPLES_QUICK    50
#define PB_SAMPLES_MAX      100000
#define PB_BATCH            16
#define PB_SWITCH_YIELDS    2000
#define PB_SWITCH_ROUNDS    11
#define PB_QUICK_YIELDS     100
#define PB_QUICK_ROUNDS     3
#define PB_SWITCH_MAX_EVS   4

/* The events the context-switch rows attach to each ping-pong thread. */
static const unsigned int pb_switch_events[PB_SWITCH_MAX_EVS] = {
    PERFMON_EV_TEST, PERFMON_EV_CONTEXT_SWITCH, PERFMON_EV_INTERRUPT,
    PERFMON_EV_XCALL,
};

/*
 * Row 4g: one event per thread, on two different counters, so that every
 * switch stops one counter and starts the other.  Neither event fires
 * during the ping-pong.
 */
static const unsigned int pb_switch_split_events[2] = {
    PERFMON_EV_TEST, PERFMON_EV_NMI,
};

/* A counter read raw: the one behind an event of the benchmark's own. */
struct pb_counter {
    struct perfmon_dev *dev;
    uint64_t raw_event;
    unsigned int hw_id;
    bool found;
};

/* State of one run. */
struct pb_run {
    unsigned int self;              /* the CPU the benchmark runs on */
    unsigned int remote;            /* another CPU, or self with one CPU */
    size_t nr_samples;
    uint64_t *samples;
    unsigned int switch_yields;     /* per ping-pong thread and round */
    unsigned int switch_rounds;
    struct pb_counter soft;         /* the soft PMU counter of cpu_event */
    struct perfmon_event cpu_event;     /* `test` on self */
    struct perfmon_event self_event;    /* `test` on this thread */
    struct bench_result raw_read;
    struct bench_result xcall;
    struct bench_result raw_switch_ops; /* stop + read + start, one counter */
};

typedef void (*pb_op_fn_t)(struct pb_run *run, void *arg);

/* Measurement ------------------------------------------------------------ */

static void
pb_measure(struct pb_run *run, pb_op_fn_t fn, void *arg, unsigned int batch,
           bool intr_off, struct bench_result *result)
{
    for (size_t i = 0; i < run->nr_samples + run->nr_samples / 10; i++) {
        unsigned long flags = 0;
        uint64_t start;

        if (intr_off) {
            flags = cpu_intr_save();
        }

        start = cpu_rdtsc();

        for (unsigned int j = 0; j < batch; j++) {
            fn(run, arg);
        }

        /* The first tenth warms caches up and is thrown away. */
        if (i >= run->nr_samples / 10) {
            run->samples[i - run->nr_samples / 10] =
                (cpu_rdtsc() - start) / batch;
        }

        if (intr_off) {
            cpu_intr_restore(flags);
        }
    }

    bench_summarize(run->samples, run->nr_samples, result);
}

static void
pb_print_row(const char *id, const char *what, const struct bench_result *r,
             const struct bench_result *base)
{
    char ratio[16] = "-";

    if (base != NULL && base->median != 0) {
        uint64_t x100 = r->median * 100 / base->median;

        ksnprintf(ratio, sizeof(ratio), "%lu.%02lux", x100 / 100, x100 % 100);
    }

    kprintf("%-4s %-44s %9lu %9lu %8s\n", id, what, r->min, r->median,
            ratio);
}

/* Rows 1-3: reads ---------------------------------------------------------- */

static void
pb_op_raw_read(struct pb_run *run, void *arg)
{
    const struct pb_counter *counter = arg;

    (void)run;
    counter->dev->ops->read(counter->dev, counter->hw_id);
}

static void
pb_op_event_read(struct pb_run *run, void *arg)
{
    (void)run;
    perfmon_event_read(arg);
}

static void
pb_nop(void *arg)
{
    (void)arg;
}

static void
pb_op_xcall(struct pb_run *run, void *arg)
{
    (void)arg;
    xcall_call(pb_nop, NULL, run->remote);
}

/* Fill in the hardware counter of a struct pb_counter. */
static void
pb_find_counter(const struct perfmon_pmc_info *info, void *arg)
{
    struct pb_counter *counter = arg;

    if (info->dev == counter->dev && info->raw_event == counter->raw_event) {
        counter->hw_id = info->hw_id;
        counter->found = true;
    }
}

static int
pb_attach_test_event(struct perfmon_event *event, struct thread *thread,
                     int cpu)
{
    int error = perfmon_event_init(event, PERFMON_EV_TEST, PERFMON_EF_KERN);

    if (error) {
        return error;
    }

    return thread != NULL ? perfmon_event_attach(event, thread)
                          : perfmon_event_attach_cpu(event, cpu);
}

static void
pb_rows_local(struct pb_run *run)
{
    struct bench_result r;

    pb_measure(run, pb_op_raw_read, &run->soft, PB_BATCH, true,
               &run->raw_read);
    pb_print_row("1", "raw device read (soft PMU)", &run->raw_read, NULL);
    pb_measure(run, pb_op_event_read, &run->cpu_event, PB_BATCH, false, &r);
    pb_print_row("2a", "perfmon_event_read: local CPU event", &r,
                 &run->raw_read);
    pb_measure(run, pb_op_event_read, &run->self_event, PB_BATCH, false, &r);
    pb_print_row("2b", "perfmon_event_read: own thread event", &r,
                 &run->raw_read);

    /* No thread event may remain while the hook-off row runs. */
    perfmon_event_detach(&run->self_event);
}

/* The first registered PMU other than the software one, or NULL. */
static struct perfmon_dev *
pb_hardware_dev(const struct pb_run *run)
{
    for (unsigned int i = 0; i < perfmon_nr_devs(); i++) {
        struct perfmon_dev *dev = perfmon_dev_get(i);

        if (dev != run->soft.dev) {
            return dev;
        }
    }

    return NULL;
}

/*
 * Rows 1h and 2h: rows 1 and 2a again on a hardware PMU, counting cycles
 * on this CPU, when one is registered; a line saying why not otherwise.
 */
static void
pb_rows_hardware(struct pb_run *run)
{
    struct pb_counter counter = { .dev = pb_hardware_dev(run) };
    struct bench_result raw, r;
    struct perfmon_event event;
    char what[48];
    int error;

    if (counter.dev == NULL) {
        kprintf("%-4s %s\n", "1h", "raw device read (hardware PMU): none "
                "registered");
        return;
    }

    error = perfmon_dev_translate(counter.dev, PERFMON_EV_CYCLE,
                                  &counter.raw_event);

    if (!error) {
        error = perfmon_event_init(&event, PERFMON_EV_CYCLE, PERFMON_EF_KERN);
    }

    if (!error) {
        error = perfmon_event_set_dev(&event, counter.dev);
    }

    if (!error) {
        error = perfmon_event_attach_cpu(&event, run->self);
    }

    if (error) {
        kprintf("%-4s raw device read (%s PMU): cycles not counted: %s\n",
                "1h", counter.dev->name, error_str(error));
        return;
    }

    perfmon_pmc_foreach(pb_find_counter, &counter);
    assert(counter.found);
    pb_measure(run, pb_op_raw_read, &counter, PB_BATCH, true, &raw);
    ksnprintf(what, sizeof(what), "raw device read (%s PMU)",
              counter.dev->name);
    pb_print_row("1h", what, &raw, NULL);
    pb_measure(run, pb_op_event_read, &event, PB_BATCH, false, &r);
    ksnprintf(what, sizeof(what), "perfmon_event_read: local CPU event, %s",
              counter.dev->name);
    pb_print_row("2h", what, &r, &raw);
    perfmon_event_detach(&event);
}

/* A thread that spins on the remote CPU while its event is read. */
static volatile bool pb_spin_stop;

static void
pb_spinner(void *arg)
{
    (void)arg;

    while (!READ_ONCE(pb_spin_stop)) {
        cpu_pause();
    }
}

static int
pb_rows_remote(struct pb_run *run)
{
    struct perfmon_event remote_cpu, remote_thread;
    struct thread *spinner;
    struct bench_result r;
    int error;

    pb_measure(run, pb_op_xcall, NULL, 1, false, &run->xcall);
    pb_print_row("3a", "bare xcall round trip", &run->xcall, NULL);

    error = pb_attach_test_event(&remote_cpu, NULL, run->remote);

    if (error) {
        return error;
    }

    pb_measure(run, pb_op_event_read, &remote_cpu, 1, false, &r);
    pb_print_row("3b", "perfmon_event_read: remote CPU event", &r,
                 &run->xcall);
    perfmon_event_detach(&remote_cpu);

    pb_spin_stop = false;
    error = thread_create(&spinner, "bench-spin", pb_spinner, NULL,
                          THREAD_CPUMASK(run->remote));

    if (error) {
        return error;
    }

    error = pb_attach_test_event(&remote_thread, spinner, 0);

    if (!error) {
        thread_msleep(5);   /* let it start running there */
        pb_measure(run, pb_op_event_read, &remote_thread, 1, false, &r);
        pb_print_row("3c", "perfmon_event_read: thread on another CPU", &r,
                     &run->xcall);
        perfmon_event_detach(&remote_thread);
    }

    WRITE_ONCE(pb_spin_stop, true);
    thread_join(spinner);
    return error;
}

/* Row 4: context switches ---------------------------------------------- */

/*
 * Two threads pinned to one CPU yield to each other; the first measures
 * the time of its yields, each of which is two switches.
 */
struct pb_pingpong {
    volatile bool go;
    uint64_t cycles;
    unsigned int yields;
};

static void
pb_pingpong_main(void *arg)
{
    struct pb_pingpong *pp = arg;
    uint64_t start;

    while (!READ_ONCE(pp->go)) {
        thread_yield();
    }

    start = cpu_rdtsc();

    for (unsigned int i = 0; i < pp->yields; i++) {
        thread_yield();
    }

    pp->cycles = cpu_rdtsc() - start;
}

static void
pb_detach_all(struct perfmon_event *events, unsigned int n)
{
    for (unsigned int i = 0; i < n; i++) {
        if (perfmon_event_attached(&events[i])) {
            perfmon_event_detach(&events[i]);
        }
    }
}

static int
pb_attach_switch_events(struct perfmon_event *events, const unsigned int *ids,
                        unsigned int nr_events, struct thread *thread)
{
    for (unsigned int i = 0; i < nr_events; i++) {
        int error = perfmon_event_init(&events[i], ids[i], PERFMON_EF_KERN);

        if (!error) {
            error = perfmon_event_attach(&events[i], thread);
        }

        if (error) {
            pb_detach_all(events, i);
            return error;
        }
    }

    return 0;
}

/*
 * One round: cycles per switch with nr_events events on each thread (split:
 * one event per thread, a different one on each).
 */
static int
pb_switch_round(struct pb_run *run, unsigned int nr_events, bool split,
                uint64_t *cyclesp)
{
    struct perfmon_event events[2][PB_SWITCH_MAX_EVS];
    struct pb_pingpong pp[2];
    struct thread *threads[2];
    int error = 0;

    memset(events, 0, sizeof(events));

    for (unsigned int i = 0; i < 2; i++) {
        pp[i].go = false;
        pp[i].yields = run->switch_yields;
        error = thread_create(&threads[i], "bench-pingpong", pb_pingpong_main,
                              &pp[i], THREAD_CPUMASK(run->remote));

        if (error) {
            if (i == 1) {
                WRITE_ONCE(pp[0].go, true);
                thread_join(threads[0]);
            }

            return error;
        }
    }

    for (unsigned int i = 0; i < 2 && !error; i++) {
        error = pb_attach_switch_events(events[i],
                                        split ? &pb_switch_split_events[i]
                                              : pb_switch_events,
                                        nr_events, threads[i]);
    }

    WRITE_ONCE(pp[0].go, true);
    WRITE_ONCE(pp[1].go, true);
    thread_join(threads[0]);
    thread_join(threads[1]);
    pb_detach_all(events[0], nr_events);
    pb_detach_all(events[1], nr_events);
    *cyclesp = pp[0].cycles / (2 * run->switch_yields);
    return error;
}

/* The configurations of row 4, measured in turn within each round. */
enum pb_switch_config {
    PB_SWITCH_OFF,                  /* perfmon hook off, no event */
    PB_SWITCH_NONE,                 /* hook on, no event */
    PB_SWITCH_ONE,                  /* 1 event per thread */
    PB_SWITCH_FOUR,                 /* PB_SWITCH_MAX_EVS events per thread */
    PB_SWITCH_SPLIT,                /* 1 event per thread, not shared */
    PB_SWITCH_NR_CONFIGS,
};

static int
pb_switch_config_round(struct pb_run *run, enum pb_switch_config config,
                       uint64_t *cyclesp)
{
    static const unsigned int nr_events[PB_SWITCH_NR_CONFIGS] = {
        0, 0, 1, PB_SWITCH_MAX_EVS, 1,
    };
    bool hook = perfmon_switch_hook_enabled();
    int error;

    if (config != PB_SWITCH_OFF) {
        return pb_switch_round(run, nr_events[config],
                               config == PB_SWITCH_SPLIT, cyclesp);
    }

    /* Refused while some thread has an event: its counts would be wrong. */
    error = perfmon_set_switch_hook(false);

    if (!error) {
        error = pb_switch_round(run, 0, false, cyclesp);
        perfmon_set_switch_hook(hook);
    }

    return error;
}

/*
 * Every configuration once per round, in turn, so that a slow phase of the
 * host (QEMU's vCPU threads share its cores) weighs on all of them alike.
 */
static int
pb_switch_measure(struct pb_run *run,
                  struct bench_result results[PB_SWITCH_NR_CONFIGS])
{
    uint64_t samples[PB_SWITCH_NR_CONFIGS][PB_SWITCH_ROUNDS];

    for (unsigned int i = 0; i < run->switch_rounds; i++) {
        for (unsigned int c = 0; c < PB_SWITCH_NR_CONFIGS; c++) {
            int error = pb_switch_config_round(run, c, &samples[c][i]);

            if (error) {
                return error;
            }
        }
    }

    for (unsigned int c = 0; c < PB_SWITCH_NR_CONFIGS; c++) {
        bench_summarize(samples[c], run->switch_rounds, &results[c]);
    }

    return 0;
}

/* The counter work a switch cannot avoid: stop, read and start, per counter. */
static void
pb_op_raw_switch(struct pb_run *run, void *arg)
{
    const struct pb_counter *counter = &run->soft;
    struct perfmon_dev *dev = counter->dev;

    (void)arg;
    dev->ops->stop(dev, counter->hw_id);
    dev->ops->read(dev, counter->hw_id);
    dev->ops->start(dev, counter->hw_id, counter->raw_event, PERFMON_EF_KERN);
}

static void
pb_print_added(const char *id, const char *what,
               const struct bench_result *with, const struct bench_result *none,
               unsigned int nr_counters, const struct bench_result *raw)
{
    struct bench_result added, unavoidable;

    added.min = with->min > none->min ? with->min - none->min : 0;
    added.median = with->median > none->median
                   ? with->median - none->median : 0;
    unavoidable.min = raw->min * nr_counters;
    unavoidable.median = raw->median * nr_counters;
    pb_print_row(id, what, &added, &unavoidable);
}

static int
pb_rows_switch(struct pb_run *run)
{
    struct bench_result r[PB_SWITCH_NR_CONFIGS];
    int error;

    pb_measure(run, pb_op_raw_switch, NULL, PB_BATCH, true,
               &run->raw_switch_ops);
    pb_print_row("4r", "raw stop+read+start, one counter",
                 &run->raw_switch_ops, NULL);
    error = pb_switch_measure(run, r);

    if (error) {
        return error;
    }

    pb_print_row("4a", "context switch, perfmon hook off", &r[PB_SWITCH_OFF],
                 NULL);
    pb_print_row("4b", "context switch, no event anywhere",
                 &r[PB_SWITCH_NONE], &r[PB_SWITCH_OFF]);
    pb_print_row("4c", "context switch, 1 event per thread", &r[PB_SWITCH_ONE],
                 NULL);
    pb_print_row("4d", "context switch, 4 events per thread",
                 &r[PB_SWITCH_FOUR], NULL);
    pb_print_added("4e", "added per switch, 1 event", &r[PB_SWITCH_ONE],
                   &r[PB_SWITCH_NONE], 1, &run->raw_switch_ops);
    pb_print_added("4f", "added per switch, 4 events", &r[PB_SWITCH_FOUR],
                   &r[PB_SWITCH_NONE], PB_SWITCH_MAX_EVS,
                   &run->raw_switch_ops);
    pb_print_added("4g", "added per switch, 1 event, not shared",
                   &r[PB_SWITCH_SPLIT], &r[PB_SWITCH_NONE], 1,
                   &run->raw_switch_ops);
    return 0;
}

/* Row 5: attach and detach ------------------------------------------------ */

static void
pb_op_attach_detach(struct pb_run *run, void *arg)
{
    struct perfmon_event event;

    if (pb_attach_test_event(&event, arg, run->self) == 0) {
        perfmon_event_detach(&event);
    }
}

static void
pb_rows_attach(struct pb_run *run)
{
    struct bench_result r;

    pb_measure(run, pb_op_attach_detach, thread_self(), 1, false, &r);
    pb_print_row("5a", "attach + detach, thread event", &r, NULL);
    pb_measure(run, pb_op_attach_detach, NULL, 1, false, &r);
    pb_print_row("5b", "attach + detach, CPU event", &r, NULL);
}

/* Row 6: the overflow NMI ------------------------------------------------- */

/*
 * An add of a whole period to the `test` event, which wraps its counter
 * exactly once; with overflow NMIs the software PMU raises its self-NMI
 * and waits for the core to fold the wrap, so the add's time is the NMI's
 * round trip (send, entry, fold, callbacks, return) seen by the code that
 * caused it.
 */
static void
pb_op_add(struct pb_run *run, void *arg)
{
    const uint64_t *amount = arg;

    (void)run;
    swevent_add(SWEVENT_TEST, *amount);
}

static void
pb_row_nmi(struct pb_run *run)
{
    struct perfmon_dev_info info;
    struct bench_result plain, wrap;
    uint64_t one = 1, period;

    perfmon_dev_get_info(run->soft.dev, &info);

    if (!info.overflow_intr) {
        kprintf("%-4s %-44s %9s %9s %8s  %s\n", "6",
                "soft PMU overflow NMI round trip", "-", "-", "-",
                "(boot with softpmu.overflow=nmi)");
        return;
    }

    period = (info.width >= 64) ? UINT64_MAX : 1ULL << info.width;
    pb_measure(run, pb_op_add, &one, 1, false, &plain);
    pb_print_row("6a", "add to the test event, no wrap", &plain, NULL);
    pb_measure(run, pb_op_add, &period, 1, false, &wrap);
    pb_print_row("6", "add that wraps: soft PMU NMI round trip", &wrap,
                 &plain);
}

/* Row 7: remote read at this boot's CPU count ---------------------------- */

static int
pb_row_scaling(struct pb_run *run)
{
    struct perfmon_event event;
    struct bench_result r;
    char what[48];
    int error;

    error = pb_attach_test_event(&event, NULL, run->remote);

    if (error) {
        return error;
    }

    pb_measure(run, pb_op_event_read, &event, 1, false, &r);
    perfmon_event_detach(&event);
    ksnprintf(what, sizeof(what), "remote CPU event read, %u CPUs online",
              cpu_count());
    pb_print_row("7", what, &r, NULL);
    return 0;
}

/* Driver ------------------------------------------------------------------ */

static int
pb_setup(struct pb_run *run)
{
    int error;

    run->soft.dev = perfmon_dev_find("soft");

    if (run->soft.dev == NULL) {
        return -ENODEV;
    }

    error = perfmon_dev_translate(run->soft.dev, PERFMON_EV_TEST,
                                  &run->soft.raw_event);

    if (error) {
        return error;
    }

    error = pb_attach_test_event(&run->cpu_event, NULL, run->self);

    if (error) {
        return error;
    }

    error = pb_attach_test_event(&run->self_event, thread_self(), 0);

    if (error) {
        perfmon_event_detach(&run->cpu_event);
        return error;
    }

    perfmon_pmc_foreach(pb_find_counter, &run->soft);
    assert(run->soft.found);
    return 0;
}

static void
pb_header(const struct pb_run *run)
{
    struct perfmon_dev_info info;

    perfmon_dev_get_info(run->soft.dev, &info);
    kprintf("perfmon bench: %u CPUs, cpu%u -> cpu%u, TSC %lu MHz, soft PMU "
            "%u-bit, overflow by %s, %zu samples\n", cpu_count(), run->self,
            run->remote, cpu_tsc_freq() / 1000000, info.width,
            info.overflow_intr ? "nmi" : "poll", run->nr_samples);
    kprintf("%-4s %-44s %9s %9s %8s\n", "row", "operation (TSC cycles)",
            "min", "median", "ratio");
}

static int
pb_run_selected(struct pb_run *run, const char *what)
{
    int error;

    pb_header(run);
    pb_rows_local(run);
    pb_rows_hardware(run);

    if (strcmp(what, "remote") == 0) {
        error = pb_rows_remote(run);
        return error ? error : pb_row_scaling(run);
    }

    error = pb_rows_remote(run);

    if (!error) {
        error = pb_rows_switch(run);
    }

    if (!error) {
        pb_rows_attach(run);
        pb_row_nmi(run);
        error = pb_row_scaling(run);
    }

    return error;
}

static int
pb_parse(int argc, char **argv, size_t *nr_samplesp, const char **whatp)
{
    uint64_t n = PB_SAMPLES_DEFAULT;
    int i = 1;

    *whatp = "all";

    if (argc > i + 1 && strcmp(argv[i], "-n") == 0) {
        if (cmdline_parse_u64(argv[i + 1], &n) != 0 || n < 10
            || n > PB_SAMPLES_MAX) {
            return -EINVAL;
        }

        i += 2;
    }

    if (i < argc) {
        *whatp = argv[i++];

        if (strcmp(*whatp, "quick") == 0) {
            n = MIN(n, (uint64_t)PB_SAMPLES_QUICK);
        } else if (strcmp(*whatp, "all") != 0
                   && strcmp(*whatp, "remote") != 0) {
            return -EINVAL;
        }
    }

    *nr_samplesp = n;
    return i == argc ? 0 : -EINVAL;
}

int
perfmon_bench_main(int argc, char **argv)
{
    struct pb_run run;
    uint64_t affinity;
    const char *what;
    int error;

    memset(&run, 0, sizeof(run));

    if (pb_parse(argc, argv, &run.nr_samples, &what) != 0) {
        kprintf("usage: perfmon bench [-n SAMPLES] [all|quick|remote]\n"
                "  SAMPLES: 10..%u (default %u; quick: %u)\n",
                PB_SAMPLES_MAX, PB_SAMPLES_DEFAULT, PB_SAMPLES_QUICK);
        return SHELL_ERR_REPORTED;
    }

    run.samples = kmem_alloc(run.nr_samples * sizeof(*run.samples));

    if (run.samples == NULL) {
        return -ENOMEM;
    }

    affinity = thread_get_affinity(thread_self());
    thread_preempt_disable();
    run.self = cpu_id();
    thread_preempt_enable();
    thread_set_affinity(thread_self(), THREAD_CPUMASK(run.self));
    run.remote = cpu_count() > 1 ? (run.self + 1) % cpu_count() : run.self;
    run.switch_yields = PB_SWITCH_YIELDS;
    run.switch_rounds = PB_SWITCH_ROUNDS;

    if (strcmp(what, "quick") == 0) {
        run.switch_yields = PB_QUICK_YIELDS;
        run.switch_rounds = PB_QUICK_ROUNDS;
    }

    error = pb_setup(&run);

    if (!error) {
        error = pb_run_selected(&run, what);

        if (perfmon_event_attached(&run.self_event)) {
            perfmon_event_detach(&run.self_event);
        }

        perfmon_event_detach(&run.cpu_event);
    }

    thread_set_affinity(thread_self(), affinity);
    kmem_free(run.samples, run.nr_samples * sizeof(*run.samples));

    if (error) {
        kprintf("perfmon bench: %s\n", error_str(error));
        return SHELL_ERR_REPORTED;
    }

    return 0;
}
