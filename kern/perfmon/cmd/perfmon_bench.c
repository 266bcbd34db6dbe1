/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * perfmon microbenchmarks, in two views of each row: path length, the
 * instructions the operation executes, and TSC cycles.
 *
 * Path length is counted exactly by the step PMU (drivers/pmu/step.h, boot
 * option perfmon.step=on): a step event of the benchmark's own thread is
 * read before and after one call of the operation, and the same count for
 * an operation that does nothing is taken off, so a row is what its
 * operation runs beyond an empty call.  It is the same on every run and
 * every machine: anything that disturbs a measurement (an interrupt's
 * section, a switch) only adds, and the smallest of a few is kept.  Rows
 * that run in an interrupt handler (the overflow NMI, a sample) are
 * counted with NMI handlers stepped too (instructions-nmi).  The
 * context-switch rows count everything their CPU runs, with a CPU event.
 * Rows that wait on another CPU (xcall round trips) have cycles only:
 * their spin loops run as long as the other CPU takes.
 *
 * Budgets, in instructions, are in perfmon_bench_budgets[]: the design
 * target of each row, a whole-row count.  A row that exceeds its budget
 * is MISSED, and `make bench` fails.  The switch rows
 * are in kern/perfmon/cmd/perfmon_bench_switch.c, the interrupt rows in
 * kern/perfmon/cmd/perfmon_bench_intr.c, the turn in
 * kern/perfmon/cmd/perfmon_bench_turn.c; this file keeps the harness
 * (counting, timing, printing, the budgets) and the other rows, which share
 * it.
 *
 * Cycles: cheap operations are timed in batches of PERFMON_BENCH_BATCH calls
 * per sample, so that the cost of reading the TSC does not swamp what is
 * measured; each row reports the minimum and median of its samples, per
 * operation, and its ratio to the row it is compared with (the targets
 * those ratios are judged against live in tools/bench).
 *
 * The benchmark pins itself to one CPU and leaves every event and thread
 * it created released.  It uses the core's API only: the software PMU is
 * the device named "soft", its `test` event is fed through kern/swevent.h,
 * the step PMU is the device named "step".
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
#include "kern/perfmon_control.h"
#include "kern/perfmon/cmd/perfmon_bench.h"
#include "kern/perfmon/cmd/perfmon_bench_i.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/spinlock.h"
#include "kern/string.h"
#include "kern/swevent.h"
#include "kern/syscnt.h"
#include "kern/thread.h"
#include "kern/workload.h"
#include "kern/xcall.h"

/* Printing ---------------------------------------------------------------- */

static void
perfmon_bench_fmt_u64(char *buf, size_t size, uint64_t v)
{
    if (v == PERFMON_BENCH_NONE) {
        strlcpy(buf, "-", size);
    } else {
        ksnprintf(buf, size, "%lu", v);
    }
}

/*
 * The budgets: whole-row instruction counts, the targets the design was
 * set to, never raised to meet a count.  BENCH.md beside this file says
 * what each bounds.
 */
static const unsigned int perfmon_bench_budgets[PERFMON_BENCH_NR_BUDGETS] = {
    [PERFMON_BENCH_BUDGET_READ_CPU] = 48,
    [PERFMON_BENCH_BUDGET_READ_THREAD] = 56,
    [PERFMON_BENCH_BUDGET_HOOK] = 3,
    [PERFMON_BENCH_BUDGET_SWITCH_1] = 60,
    [PERFMON_BENCH_BUDGET_SWITCH_4] = 120,
    [PERFMON_BENCH_BUDGET_SWITCH_SPLIT] = 160,
    [PERFMON_BENCH_BUDGET_FOLD] = 55,
    [PERFMON_BENCH_BUDGET_SAMPLE] = 130,
    [PERFMON_BENCH_BUDGET_FRAME] = 12,
    [PERFMON_BENCH_BUDGET_TURN] = 400,
    /* A marker with nothing armed: a compare and a branch, begin and end. */
    [PERFMON_BENCH_BUDGET_REGION_OFF] = 4,
    /* Armed with one event: two local reads of a CPU event (2a's 48 each). */
    [PERFMON_BENCH_BUDGET_REGION_ARMED] = 96,
};

uint64_t
perfmon_bench_budget(unsigned int budget)
{
    assert(budget < PERFMON_BENCH_NR_BUDGETS);
    return perfmon_bench_budgets[budget];
}

void
perfmon_bench_print(struct perfmon_bench_run *run, const char *id,
                    const char *what, uint64_t insns, uint64_t budget,
                    const struct bench_result *cycles,
                    const struct bench_result *base)
{
    char insns_buf[24], budget_buf[24], min[24] = "-", median[24] = "-";
    char ratio[16] = "-";
    const char *verdict = "-";

    if (insns == PERFMON_BENCH_NONE) {
        budget = PERFMON_BENCH_NONE;
    }

    perfmon_bench_fmt_u64(insns_buf, sizeof(insns_buf), insns);
    perfmon_bench_fmt_u64(budget_buf, sizeof(budget_buf), budget);

    if (budget != PERFMON_BENCH_NONE) {
        verdict = (insns <= budget) ? "MET" : "MISSED";
        run->nr_met += (insns <= budget);
        run->nr_missed += (insns > budget);
    }

    if (cycles != NULL) {
        perfmon_bench_fmt_u64(min, sizeof(min), cycles->min);
        perfmon_bench_fmt_u64(median, sizeof(median), cycles->median);

        if (base != NULL && base->median != 0) {
            uint64_t x100 = cycles->median * 100 / base->median;

            ksnprintf(ratio, sizeof(ratio), "%lu.%02lux", x100 / 100,
                      x100 % 100);
        }
    }

    kprintf("%-4s %-44s %7s %7s %7s %9s %9s %8s\n", id, what, insns_buf,
            budget_buf, verdict, min, median, ratio);
}

/* Cycles ------------------------------------------------------------------ */

void
perfmon_bench_measure(struct perfmon_bench_run *run, perfmon_bench_op_fn_t fn,
                      void *arg, unsigned int batch, bool intr_off,
                      struct bench_result *result)
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

/* Instructions -------------------------------------------------------------
 */

/* What every instruction count takes off: a call that does nothing. */
void
perfmon_bench_op_nop(struct perfmon_bench_run *run, void *arg)
{
    (void)run;
    (void)arg;
}

/*
 * Initialise a step event: instructions, or with nmis instructions-nmi,
 * which steps NMI handlers too.
 */
int
perfmon_bench_step_init(const struct perfmon_bench_run *run,
                        struct perfmon_event *event, bool nmis)
{
    uint64_t id = PERFMON_EV_INSTRUCTION;
    unsigned int flags = 0;
    int error = 0;

    if (nmis) {
        error = perfmon_lookup_event(run->step, "instructions-nmi", &id,
                                     &flags);
    }

    if (!error) {
        error = perfmon_event_init(event, id, flags | PERFMON_EF_KERN);
    }

    if (!error) {
        error = perfmon_event_set_dev(event, run->step);
    }

    return error;
}

uint64_t
perfmon_bench_insns_once(struct perfmon_bench_run *run,
                         struct perfmon_event *steps, perfmon_bench_op_fn_t fn,
                         void *arg, bool intr_off)
{
    uint64_t count = perfmon_event_read(steps);
    unsigned long flags = 0;

    if (intr_off) {
        flags = cpu_intr_save();
    }

    fn(run, arg);

    if (intr_off) {
        cpu_intr_restore(flags);
    }

    return perfmon_event_read(steps) - count;
}

/*
 * perfmon_bench_insns()'s tries, out of line: the code around what they
 * count is the same whatever checks the caller makes around them.
 */
static uint64_t __attribute__((noinline))
perfmon_bench_insns_tries(struct perfmon_bench_run *run,
                          perfmon_bench_op_fn_t fn, void *arg, bool intr_off,
                          bool nmis)
{
    uint64_t base = PERFMON_BENCH_NONE, count = PERFMON_BENCH_NONE;
    struct perfmon_event steps;

    if (run->step == NULL || perfmon_bench_step_init(run, &steps, nmis) != 0
        || perfmon_event_attach(&steps, thread_self()) != 0) {
        return PERFMON_BENCH_NONE;
    }

    for (unsigned int i = 0; i < run->insn_tries; i++) {
        /*
         * Stepped, an overflow interrupt takes milliseconds: spaced out,
         * a sample per try is far from what throttling allows a CPU.
         */
        if (nmis) {
            thread_msleep(PERFMON_BENCH_INSN_PAUSE_MS);
        }

        base = MIN(base, perfmon_bench_insns_once(run, &steps,
                                                  perfmon_bench_op_nop, NULL,
                                                  intr_off));
        count = MIN(count,
                    perfmon_bench_insns_once(run, &steps, fn, arg, intr_off));
    }

    perfmon_event_detach(&steps);
    return (count > base) ? count - base : 0;
}

/* The context switches of cpu, a system counter of the scheduler's. */
const struct syscnt *
perfmon_bench_switches(unsigned int cpu)
{
    char name[SYSCNT_NAME_SIZE];

    ksnprintf(name, sizeof(name), "thread_switches/%u", cpu);
    return syscnt_lookup(name);
}

uint64_t
perfmon_bench_insns(struct perfmon_bench_run *run, perfmon_bench_op_fn_t fn,
                    void *arg, bool intr_off, bool nmis)
{
    const struct syscnt *switches = perfmon_bench_switches(run->self);
    uint64_t count = PERFMON_BENCH_NONE;

    for (unsigned int i = 0; i <= PERFMON_BENCH_INSN_RETAKES; i++) {
        uint64_t nr_switches = (switches != NULL) ? syscnt_read(switches) : 0;
        unsigned long spins = spinlock_contended(run->self);

        count = perfmon_bench_insns_tries(run, fn, arg, intr_off, nmis);

        /* The pauses between NMI tries sleep: those switches are theirs. */
        if (count == PERFMON_BENCH_NONE || nmis
            || ((switches == NULL || syscnt_read(switches) == nr_switches)
                && spinlock_contended(run->self) == spins)) {
            break;
        }
    }

    return count;
}

/* Of the instructions of fn, those of the NMI handlers it caused. */
uint64_t
perfmon_bench_insns_handlers(struct perfmon_bench_run *run,
                             perfmon_bench_op_fn_t fn, void *arg)
{
    uint64_t all = perfmon_bench_insns(run, fn, arg, false, true);
    uint64_t thread = perfmon_bench_insns(run, fn, arg, false, false);

    if (all == PERFMON_BENCH_NONE || thread == PERFMON_BENCH_NONE) {
        return PERFMON_BENCH_NONE;
    }

    return (all > thread) ? all - thread : 0;
}

/* a - b, unless either was not measured. */
uint64_t
perfmon_bench_sub(uint64_t a, uint64_t b)
{
    if (a == PERFMON_BENCH_NONE || b == PERFMON_BENCH_NONE) {
        return PERFMON_BENCH_NONE;
    }

    return (a > b) ? a - b : 0;
}

/* Rows 1-3: reads ----------------------------------------------------------
 */

static void
perfmon_bench_op_raw_read(struct perfmon_bench_run *run, void *arg)
{
    const struct perfmon_bench_counter *counter = arg;

    (void)run;
    counter->dev->ops->read(counter->dev, counter->hw_id);
}

static void
perfmon_bench_op_event_read(struct perfmon_bench_run *run, void *arg)
{
    (void)run;
    perfmon_event_read(arg);
}

static void
perfmon_bench_nop(void *arg)
{
    (void)arg;
}

static void
perfmon_bench_op_xcall(struct perfmon_bench_run *run, void *arg)
{
    (void)arg;
    xcall_call(perfmon_bench_nop, NULL, run->remote);
}

/* Fill in the hardware counter of a struct perfmon_bench_counter. */
static void
perfmon_bench_find_counter(const struct perfmon_pmc_info *info, void *arg)
{
    struct perfmon_bench_counter *counter = arg;

    if (info->dev == counter->dev && info->raw_event == counter->raw_event) {
        counter->hw_id = info->hw_id;
        counter->found = true;
    }
}

static int
perfmon_bench_attach_test_event(struct perfmon_event *event,
                                struct thread *thread, int cpu)
{
    int error = perfmon_event_init(event, PERFMON_EV_TEST, PERFMON_EF_KERN);

    if (error) {
        return error;
    }

    return thread != NULL ? perfmon_event_attach(event, thread)
                          : perfmon_event_attach_cpu(event, cpu);
}

static int
perfmon_bench_rows_local(struct perfmon_bench_run *run)
{
    struct bench_result r;
    uint64_t insns, budget;

    perfmon_bench_measure(run, perfmon_bench_op_raw_read, &run->soft,
                          PERFMON_BENCH_BATCH, true, &run->raw_read);
    run->insns_raw_read = perfmon_bench_insns(run, perfmon_bench_op_raw_read,
                                              &run->soft, true, false);
    perfmon_bench_print(run, "1", "raw device read (soft PMU)",
                        run->insns_raw_read, PERFMON_BENCH_NONE,
                        &run->raw_read, NULL);
    perfmon_bench_measure(run, perfmon_bench_op_event_read, &run->cpu_event,
                          PERFMON_BENCH_BATCH, false, &r);
    insns = perfmon_bench_insns(run, perfmon_bench_op_event_read,
                                &run->cpu_event, false, false);
    budget = perfmon_bench_budget(PERFMON_BENCH_BUDGET_READ_CPU);
    perfmon_bench_print(run, "2a", "perfmon_event_read: local CPU event",
                        insns, budget, &r, &run->raw_read);
    perfmon_bench_measure(run, perfmon_bench_op_event_read, &run->self_event,
                          PERFMON_BENCH_BATCH, false, &r);
    insns = perfmon_bench_insns(run, perfmon_bench_op_event_read,
                                &run->self_event, false, false);
    budget = perfmon_bench_budget(PERFMON_BENCH_BUDGET_READ_THREAD);
    perfmon_bench_print(run, "2b", "perfmon_event_read: own thread event",
                        insns, budget, &r, &run->raw_read);

    /* No thread event may remain while the hook-off row runs. */
    perfmon_event_detach(&run->self_event);

    return 0;
}

/*
 * The first registered PMU other than the software ones (the soft PMU,
 * and the step PMU, which counts only when named), or NULL.
 */
static struct perfmon_dev *
perfmon_bench_hardware_dev(const struct perfmon_bench_run *run)
{
    for (unsigned int i = 0; i < perfmon_nr_devs(); i++) {
        struct perfmon_dev *dev = perfmon_dev_get(i);

        if (dev != run->soft.dev && !dev->named_only) {
            return dev;
        }
    }

    return NULL;
}

/*
 * Rows 1h and 2h: rows 1 and 2a again on a hardware PMU, counting cycles
 * on this CPU, when one is registered; a line saying why not otherwise.
 */
static int
perfmon_bench_rows_hardware(struct perfmon_bench_run *run)
{
    struct perfmon_bench_counter counter = {
        .dev = perfmon_bench_hardware_dev(run)};
    struct bench_result raw, r;
    struct perfmon_event event;
    uint64_t raw_insns, insns;
    char what[48];
    int error;

    if (counter.dev == NULL) {
        kprintf("%-4s %s\n", "1h", "raw device read (hardware PMU): none "
                "registered");
        return 0;
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
        return 0;
    }

    perfmon_pmc_foreach(perfmon_bench_find_counter, &counter);
    assert(counter.found);
    perfmon_bench_measure(run, perfmon_bench_op_raw_read, &counter,
                          PERFMON_BENCH_BATCH, true, &raw);
    raw_insns = perfmon_bench_insns(run, perfmon_bench_op_raw_read, &counter,
                                    true, false);
    ksnprintf(what, sizeof(what), "raw device read (%s PMU)",
              counter.dev->name);
    perfmon_bench_print(run, "1h", what, raw_insns, PERFMON_BENCH_NONE, &raw,
                        NULL);
    perfmon_bench_measure(run, perfmon_bench_op_event_read, &event,
                          PERFMON_BENCH_BATCH, false, &r);
    insns = perfmon_bench_insns(run, perfmon_bench_op_event_read, &event,
                                false, false);
    ksnprintf(what, sizeof(what), "perfmon_event_read: local CPU event, %s",
              counter.dev->name);
    perfmon_bench_print(
        run, "2h", what, insns,
        perfmon_bench_budget(PERFMON_BENCH_BUDGET_READ_CPU), &r,
        &raw);
    perfmon_event_detach(&event);

    return 0;
}

/* A thread that spins on the remote CPU while its event is read. */
static volatile bool perfmon_bench_spin_stop;

static void
perfmon_bench_spinner(void *arg)
{
    (void)arg;

    while (!READ_ONCE(perfmon_bench_spin_stop)) {
        cpu_pause();
    }
}

/* Rows 3 and 7 wait on another CPU: cycles only. */
static int
perfmon_bench_rows_remote(struct perfmon_bench_run *run)
{
    struct perfmon_event remote_cpu, remote_thread;
    struct thread *spinner;
    struct bench_result r;
    int error;

    perfmon_bench_measure(run, perfmon_bench_op_xcall, NULL, 1, false,
                          &run->xcall);
    perfmon_bench_print(run, "3a", "bare xcall round trip", PERFMON_BENCH_NONE,
                        PERFMON_BENCH_NONE, &run->xcall, NULL);

    error = perfmon_bench_attach_test_event(&remote_cpu, NULL, run->remote);

    if (error) {
        return error;
    }

    perfmon_bench_measure(run, perfmon_bench_op_event_read, &remote_cpu, 1,
                          false, &r);
    perfmon_bench_print(run, "3b", "perfmon_event_read: remote CPU event",
                        PERFMON_BENCH_NONE, PERFMON_BENCH_NONE, &r,
                        &run->xcall);
    perfmon_event_detach(&remote_cpu);

    perfmon_bench_spin_stop = false;
    error = thread_create(&spinner, "bench-spin", perfmon_bench_spinner, NULL,
                          THREAD_CPUMASK(run->remote));

    if (error) {
        return error;
    }

    error = perfmon_bench_attach_test_event(&remote_thread, spinner, 0);

    if (!error) {
        thread_msleep(5);   /* let it start running there */
        perfmon_bench_measure(run, perfmon_bench_op_event_read, &remote_thread,
                              1, false, &r);
        perfmon_bench_print(run, "3c",
                            "perfmon_event_read: thread on "
                            "another CPU",
                            PERFMON_BENCH_NONE, PERFMON_BENCH_NONE, &r,
                            &run->xcall);
        perfmon_event_detach(&remote_thread);
    }

    WRITE_ONCE(perfmon_bench_spin_stop, true);
    thread_join(spinner);
    return error;
}

/* Row 5: attach and detach ------------------------------------------------ */

static void
perfmon_bench_op_attach_detach(struct perfmon_bench_run *run, void *arg)
{
    struct perfmon_event event;

    if (perfmon_bench_attach_test_event(&event, arg, run->self) == 0) {
        perfmon_event_detach(&event);
    }
}

static int
perfmon_bench_rows_attach(struct perfmon_bench_run *run)
{
    struct bench_result r;

    uint64_t insns;

    perfmon_bench_measure(run, perfmon_bench_op_attach_detach, thread_self(),
                          1, false, &r);
    insns = perfmon_bench_insns(run, perfmon_bench_op_attach_detach,
                                thread_self(), false, false);
    perfmon_bench_print(run, "5a", "attach + detach, thread event", insns,
                        PERFMON_BENCH_NONE, &r, NULL);
    perfmon_bench_measure(run, perfmon_bench_op_attach_detach, NULL, 1, false,
                          &r);
    insns = perfmon_bench_insns(run, perfmon_bench_op_attach_detach, NULL,
                                false, false);
    perfmon_bench_print(run, "5b", "attach + detach, CPU event", insns,
                        PERFMON_BENCH_NONE, &r, NULL);

    return 0;
}

/*
 * Rows 9: what recording costs a loop, in cycles (on the TSC): spin with
 * its thread sampled, against spin alone.  A ratio on a real PMU; under
 * emulation the sampling interrupts' cost is the emulator's.
 */
#define PERFMON_BENCH_SPIN_ITERATIONS  2000000

static void
perfmon_bench_op_spin(struct perfmon_bench_run *run, void *arg)
{
    (void)run;
    (void)arg;
    workload_spin_loop(PERFMON_BENCH_SPIN_ITERATIONS);
}

static void
perfmon_bench_row_recording(struct perfmon_bench_run *run, const char *id,
                 unsigned int freq, bool chains,
                 const struct bench_result *base)
{
    struct perfmon_sampling s = {
        .freq = freq,
        .fields =
            PERFMON_BENCH_SAMPLE_FIELDS | (chains ? PERFMON_SF_CALLCHAIN : 0),
    };
    struct perfmon_event ev;
    struct bench_result r;
    char what[48];

    if (perfmon_sbuf_create(&s.sbuf, PERFMON_BENCH_SBUF_SIZE) != 0) {
        return;
    }

    if (perfmon_event_init(&ev, PERFMON_EV_TASK_CLOCK, PERFMON_EF_KERN) == 0
        && perfmon_event_set_sampling(&ev, &s) == 0
        && perfmon_event_attach(&ev, thread_self()) == 0) {
        perfmon_bench_measure(run, perfmon_bench_op_spin, NULL, 1, false, &r);
        perfmon_event_detach(&ev);
        ksnprintf(what, sizeof(what), "spin, cpu-clock sampled at %u Hz%s",
                  freq, chains ? " -g" : "");
        perfmon_bench_print(run, id, what, PERFMON_BENCH_NONE,
                            PERFMON_BENCH_NONE, &r, base);
    }

    perfmon_sbuf_destroy(s.sbuf);
}

static int
perfmon_bench_rows_recording(struct perfmon_bench_run *run)
{
    struct bench_result base;

    perfmon_bench_measure(run, perfmon_bench_op_spin, NULL, 1, false, &base);
    perfmon_bench_print(run, "9", "spin, 2M iterations, not sampled",
                        PERFMON_BENCH_NONE, PERFMON_BENCH_NONE, &base, NULL);
    perfmon_bench_row_recording(run, "9a", 1000, false, &base);
    perfmon_bench_row_recording(run, "9b", 4000, true, &base);

    return 0;
}

/* Row 7: remote read at this boot's CPU count ---------------------------- */

static int
perfmon_bench_row_scaling(struct perfmon_bench_run *run)
{
    struct perfmon_event event;
    struct bench_result r;
    char what[48];
    int error;

    error = perfmon_bench_attach_test_event(&event, NULL, run->remote);

    if (error) {
        return error;
    }

    perfmon_bench_measure(run, perfmon_bench_op_event_read, &event, 1, false,
                          &r);
    perfmon_event_detach(&event);
    ksnprintf(what, sizeof(what), "remote CPU event read, %u CPUs online",
              cpu_count());
    perfmon_bench_print(run, "7", what, PERFMON_BENCH_NONE, PERFMON_BENCH_NONE,
                        &r, NULL);
    return 0;
}

/* Driver ------------------------------------------------------------------ */

static int
perfmon_bench_setup(struct perfmon_bench_run *run)
{
    int error;

    run->soft.dev = perfmon_dev_find("soft");
    run->step = perfmon_dev_find("step");
    run->insns_raw_read = PERFMON_BENCH_NONE;
    run->insns_raw_switch_ops = PERFMON_BENCH_NONE;
    run->insns_overflow = PERFMON_BENCH_NONE;

    if (run->soft.dev == NULL) {
        return -ENODEV;
    }

    error = perfmon_dev_translate(run->soft.dev, PERFMON_EV_TEST,
                                  &run->soft.raw_event);

    if (error) {
        return error;
    }

    error = perfmon_bench_attach_test_event(&run->cpu_event, NULL, run->self);

    if (error) {
        return error;
    }

    error =
        perfmon_bench_attach_test_event(&run->self_event, thread_self(), 0);

    if (error) {
        perfmon_event_detach(&run->cpu_event);
        return error;
    }

    perfmon_pmc_foreach(perfmon_bench_find_counter, &run->soft);
    assert(run->soft.found);
    return 0;
}

static void
perfmon_bench_header(const struct perfmon_bench_run *run)
{
    struct perfmon_dev_info info;

    perfmon_dev_get_info(run->soft.dev, &info);
    kprintf("perfmon bench: %u CPUs, cpu%u -> cpu%u, TSC %lu MHz, soft PMU "
            "%u-bit, overflow by %s, %zu samples\n", cpu_count(), run->self,
            run->remote, cpu_tsc_freq() / 1000000, info.width,
            info.overflow_intr ? "nmi" : "poll", run->nr_samples);
    kprintf("instructions: %s; rows 3 and 7 wait on another CPU, 9 on "
            "interrupts: cycles only\n",
            run->step != NULL ? "exact, by the step PMU"
                              : "not counted (boot with perfmon.step=on)");
    kprintf("%-4s %-44s %7s %7s %7s %9s %9s %8s\n", "row", "operation",
            "instr", "budget", "verdict", "min cyc", "med cyc", "ratio");
}

/* The last line: how the instruction budgets fared. */
static void
perfmon_bench_footer(const struct perfmon_bench_run *run)
{
    if (run->step == NULL) {
        kprintf("perfmon bench: instruction budgets not judged (no step "
                "PMU)\n");
        return;
    }

    kprintf("perfmon bench: instruction budgets: %u met, %u missed\n",
            run->nr_met, run->nr_missed);
}

/* The rows of `perfmon bench` and of `perfmon bench remote`, in order. */
static int (*const perfmon_bench_rows_all[])(struct perfmon_bench_run *) = {
    perfmon_bench_rows_local,     perfmon_bench_rows_region,
    perfmon_bench_rows_hardware,
    perfmon_bench_rows_remote,    perfmon_bench_rows_switch,
    perfmon_bench_rows_attach,    perfmon_bench_rows_intr,
    perfmon_bench_row_scaling,    perfmon_bench_row_rotation,
    perfmon_bench_rows_recording,
};

static int (*const perfmon_bench_rows_remote_only[])(
    struct perfmon_bench_run *) = {
    perfmon_bench_rows_local,
    perfmon_bench_rows_hardware,
    perfmon_bench_rows_remote,
    perfmon_bench_row_scaling,
};

/*
 * Each group of rows in turn; Ctrl-C ends the run after the group it
 * came in (a group measures with events of its own attached, which it
 * detaches before returning), an error at once.
 */
static int
perfmon_bench_run_selected(struct perfmon_bench_run *run, const char *what)
{
    int (*const *rows)(struct perfmon_bench_run *) = perfmon_bench_rows_all;
    size_t nr = ARRAY_SIZE(perfmon_bench_rows_all);

    if (strcmp(what, "remote") == 0) {
        rows = perfmon_bench_rows_remote_only;
        nr = ARRAY_SIZE(perfmon_bench_rows_remote_only);
    }

    perfmon_bench_header(run);

    for (size_t i = 0; i < nr; i++) {
        int error = rows[i](run);

        if (error == 0 && shell_interrupted()) {
            error = -EINTR;
        }

        if (error) {
            return error;
        }
    }

    perfmon_bench_footer(run);
    return 0;
}

static int
perfmon_bench_parse(int argc, char **argv, size_t *nr_samplesp,
                    const char **whatp)
{
    uint64_t n = PERFMON_BENCH_SAMPLES_DEFAULT;
    int i = 1;

    *whatp = "all";

    if (argc > i + 1 && strcmp(argv[i], "-n") == 0) {
        if (cmdline_parse_u64(argv[i + 1], &n) != 0 || n < 10
            || n > PERFMON_BENCH_SAMPLES_MAX) {
            return -EINVAL;
        }

        i += 2;
    }

    if (i < argc) {
        *whatp = argv[i++];

        if (strcmp(*whatp, "quick") == 0) {
            n = MIN(n, (uint64_t)PERFMON_BENCH_SAMPLES_QUICK);
        } else if (strcmp(*whatp, "all") != 0
                   && strcmp(*whatp, "remote") != 0) {
            return -EINVAL;
        }
    }

    *nr_samplesp = n;
    return i == argc ? 0 : -EINVAL;
}

const char perfmon_bench_usage[] =
    "usage: perfmon bench [-n SAMPLES] [all|quick|remote]\n"
    "  SAMPLES: 10.." STRINGIFY(PERFMON_BENCH_SAMPLES_MAX) " (default "
    STRINGIFY(PERFMON_BENCH_SAMPLES_DEFAULT) "; quick: "
    STRINGIFY(PERFMON_BENCH_SAMPLES_QUICK) ")\n";

int
perfmon_bench_main(int argc, char **argv)
{
    struct perfmon_bench_run run;
    uint64_t affinity;
    const char *what;
    int error;

    memset(&run, 0, sizeof(run));

    if (perfmon_bench_parse(argc - 1, argv + 1, &run.nr_samples, &what) != 0) {
        kprintf("%s", perfmon_bench_usage);
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
    run.switch_yields = PERFMON_BENCH_SWITCH_YIELDS;
    run.switch_rounds = PERFMON_BENCH_SWITCH_ROUNDS;
    run.insn_tries = PERFMON_BENCH_INSN_TRIES;
    run.insn_rounds = PERFMON_BENCH_INSN_ROUNDS;

    if (strcmp(what, "quick") == 0) {
        run.switch_yields = PERFMON_BENCH_QUICK_YIELDS;
        run.switch_rounds = PERFMON_BENCH_QUICK_ROUNDS;
        run.insn_tries = PERFMON_BENCH_QUICK_INSN_TRIES;
        run.insn_rounds = PERFMON_BENCH_QUICK_INSN_ROUNDS;
    }

    error = perfmon_bench_setup(&run);

    if (!error) {
        error = perfmon_bench_run_selected(&run, what);

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
