/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * `perfmon selftest --accuracy` where there is a hardware PMU (see
 * kern/perfmon/cmd/perfmon_accuracy.h): the over-count of the hardware
 * instructions event, and its skid.  Both compare the hardware with the
 * step PMU on the same code, in separate passes: while the step PMU
 * steps, the hardware would count the trap handler of every instruction.
 * The step PMU's counts and samples are the same on every pass, so one
 * of its passes stands for the hardware's.  What the numbers mean is
 * perfmon_accuracy_calc.c's.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon/cmd/perfmon_accuracy_calc.h"
#include "kern/perfmon/cmd/perfmon_accuracy_i.h"
#include "kern/thread.h"
#include "kern/workload.h"

/*
 * Over-count: calls of a spin of PERFMON_ACCURACY_OC_SPIN iterations.  The
 * step PMU counts 1 and 11 calls (the region is the same each call, so
 * its count is linear in them); the hardware the short and the long run,
 * the long one some milliseconds, so that clock ticks arrive in it.
 */
#define PERFMON_ACCURACY_OC_SPIN    1000ULL
#define PERFMON_ACCURACY_OC_SHORT   1ULL
#define PERFMON_ACCURACY_OC_CAL     11ULL
#define PERFMON_ACCURACY_OC_LONG    10001ULL
#define PERFMON_ACCURACY_OC_ROUNDS  5

/*
 * Skid: samples every PERFMON_ACCURACY_SKID_PERIOD instructions (prime:
 * they walk round the loop) of PERFMON_ACCURACY_SKID_ITERS iterations of
 * the loop below, PERFMON_ACCURACY_SKID_LEN instructions long.
 */
#define PERFMON_ACCURACY_SKID_PERIOD    10007ULL
#define PERFMON_ACCURACY_SKID_ITERS     5000ULL
#define PERFMON_ACCURACY_SKID_LEN       130
#define PERFMON_ACCURACY_SKID_MAX       128
#define PERFMON_ACCURACY_SBUF_SIZE      65536

/*
 * The skid loop: 128 adds of 4 bytes, a sub of 4 bytes, the branch back;
 * its instructions are at known addresses (perfmon_accuracy_skid_addrs()).
 */
void perfmon_accuracy_skid_loop(uint64_t n);
extern const char perfmon_accuracy_skid_branch[];

__asm__(".text\n"
        ".globl perfmon_accuracy_skid_loop\n"
        ".type perfmon_accuracy_skid_loop, @function\n"
        "perfmon_accuracy_skid_loop:\n"
        "1:\n"
        ".rept 128\n"
        "addq $1, %rax\n"
        ".endr\n"
        "subq $1, %rdi\n"
        ".globl perfmon_accuracy_skid_branch\n"
        "perfmon_accuracy_skid_branch:\n"
        "jnz 1b\n"
        "ret\n"
        ".size perfmon_accuracy_skid_loop, . - perfmon_accuracy_skid_loop\n");

/* ---- 2: over-count -------------------------------------------------------- */

static void
perfmon_accuracy_oc_region(uint64_t calls)
{
    for (uint64_t i = 0; i < calls; i++) {
        workload_spin_loop(PERFMON_ACCURACY_OC_SPIN);
    }
}

/*
 * The step PMU's count of calls calls of the region, interrupts off: a
 * switch in it would be counted (the debug trap steps on regardless).
 */
static int
perfmon_accuracy_oc_exact(struct perfmon_accuracy *acc,
                          struct perfmon_accuracy_set *set, uint64_t calls,
                          uint64_t *countp)
{
    unsigned long flags;
    int error = perfmon_accuracy_set_attach(acc, set, acc->step,
                                            PERFMON_EV_INSTRUCTION, 0);

    if (error) {
        return error;
    }

    perfmon_events_enable(set->all, set->nr_all);
    flags = cpu_intr_save();
    perfmon_accuracy_oc_region(calls);
    cpu_intr_restore(flags);
    perfmon_events_disable(set->all, set->nr_all);
    *countp = perfmon_event_read(&set->ref);
    perfmon_accuracy_detach(set);
    return 0;
}

/*
 * The hardware's counts of calls calls, by two pinned instructions events
 * at once (the first takes the fixed counter where there is one, the
 * second a general-purpose one), interrupts on or off in the region.
 */
static void
perfmon_accuracy_oc_hw(struct perfmon_accuracy_set *set, uint64_t calls,
                       bool intr, uint64_t *counts)
{
    uint64_t before[2], flags = 0;

    for (unsigned int i = 0; i < 2; i++) {
        before[i] = perfmon_event_read(&set->flex[i]);
    }

    perfmon_events_enable(set->all, 2);

    if (!intr) {
        flags = cpu_intr_save();
    }

    perfmon_accuracy_oc_region(calls);

    if (!intr) {
        cpu_intr_restore(flags);
    }

    perfmon_events_disable(set->all, 2);

    for (unsigned int i = 0; i < 2; i++) {
        counts[i] = perfmon_event_read(&set->flex[i]) - before[i];
    }
}

int
perfmon_accuracy_overcount_run(struct perfmon_accuracy *acc,
                               struct perfmon_accuracy_set *set)
{
    static const char *const names[] = { "first counter",
                                         "second counter" };
    uint64_t hw_short[2][PERFMON_ACCURACY_OC_ROUNDS];
    uint64_t hw_long[2][PERFMON_ACCURACY_OC_ROUNDS];
    uint64_t e_short, e_cal, per_call, counts[2];
    struct perfmon_accuracy_oc oc;
    int error;

    error = perfmon_accuracy_oc_exact(acc, set, PERFMON_ACCURACY_OC_SHORT,
                                      &e_short);

    if (!error) {
        error = perfmon_accuracy_oc_exact(acc, set, PERFMON_ACCURACY_OC_CAL,
                                          &e_cal);
    }

    if (error) {
        return error;
    }

    per_call = (e_cal - e_short)
               / (PERFMON_ACCURACY_OC_CAL - PERFMON_ACCURACY_OC_SHORT);
    set->nr_all = 0;

    for (unsigned int i = 0; !error && i < 2; i++) {
        error = perfmon_accuracy_attach(set, &set->flex[i], NULL,
                                        PERFMON_EV_INSTRUCTION,
                                        PERFMON_EF_PINNED, true);
    }

    if (error) {
        perfmon_accuracy_detach(set);
        return error;
    }

    perfmon_accuracy_oc_head(acc->out);

    for (unsigned int intr = 0; intr < 2; intr++) {
        for (unsigned int r = 0; r < PERFMON_ACCURACY_OC_ROUNDS; r++) {
            perfmon_accuracy_oc_hw(set, PERFMON_ACCURACY_OC_SHORT, intr,
                                   counts);
            hw_short[0][r] = counts[0];
            hw_short[1][r] = counts[1];
            perfmon_accuracy_oc_hw(set, PERFMON_ACCURACY_OC_LONG, intr,
                                   counts);
            hw_long[0][r] = counts[0];
            hw_long[1][r] = counts[1];
        }

        for (unsigned int c = 0; c < 2; c++) {
            struct perfmon_accuracy_oc_in in = {
                .calls_short = PERFMON_ACCURACY_OC_SHORT,
                .calls_long = PERFMON_ACCURACY_OC_LONG,
                .exact_short = e_short,
                .exact_long = e_short + per_call * (PERFMON_ACCURACY_OC_LONG
                                                    - PERFMON_ACCURACY_OC_SHORT),
                .hw_short = hw_short[c], .hw_long = hw_long[c],
                .nr = PERFMON_ACCURACY_OC_ROUNDS,
            };

            if (perfmon_accuracy_overcount(&in, &oc) == 0) {
                perfmon_accuracy_oc_print(acc->out, names[c],
                                          intr ? "on" : "off", &oc);
            }
        }
    }

    perfmon_accuracy_detach(set);
    return 0;
}

/* ---- 3: skid -------------------------------------------------------------- */

static void
perfmon_accuracy_skid_addrs(uint64_t *addrs)
{
    uint64_t top = (uintptr_t)perfmon_accuracy_skid_loop;

    for (unsigned int i = 0; i < PERFMON_ACCURACY_SKID_LEN - 1; i++) {
        addrs[i] = top + 4 * i;
    }

    addrs[PERFMON_ACCURACY_SKID_LEN - 1] = (uintptr_t)perfmon_accuracy_skid_branch;
}

/*
 * Sample the loop on dev (NULL: the default device) every period
 * instructions; the IPs of up to PERFMON_ACCURACY_SKID_MAX samples, in
 * order, into ips, their number in *nrp.  With hold, a pinned counting
 * instructions event holds the first counter meanwhile.  The loop runs
 * with interrupts disabled (the overflow comes as an NMI or a debug
 * trap all the same): a switch away and back would be counted in the
 * thread's progress to its next sample, moving the samples that follow
 * round the loop.
 */
static int
perfmon_accuracy_skid_sample(struct perfmon_accuracy *acc,
                             struct perfmon_accuracy_set *set,
                             struct perfmon_dev *dev, bool hold,
                             uint64_t *ips, unsigned int *nrp)
{
    struct perfmon_sampling sampling = {
        .period = PERFMON_ACCURACY_SKID_PERIOD, .fields = PERFMON_SF_IP,
    };
    unsigned long flags;
    uint64_t rec[64];
    size_t size;
    int error;

    *nrp = 0;
    set->nr_all = 0;
    error = perfmon_sbuf_create(&sampling.sbuf, PERFMON_ACCURACY_SBUF_SIZE);

    if (error) {
        return error;
    }

    if (hold) {
        error = perfmon_accuracy_attach(set, &set->dev_ref, dev,
                                        PERFMON_EV_INSTRUCTION,
                                        PERFMON_EF_PINNED, false);
    }

    if (!error) {
        error = perfmon_event_init(&set->ref, PERFMON_EV_INSTRUCTION,
                                   PERFMON_EF_KERN | PERFMON_EF_DISABLED);
    }

    if (!error) {
        error = perfmon_event_set_dev(&set->ref, dev);
    }

    if (!error) {
        error = perfmon_event_set_sampling(&set->ref, &sampling);
    }

    if (!error) {
        error = perfmon_event_attach(&set->ref, thread_self());
    }

    if (!error) {
        set->all[set->nr_all++] = &set->ref;
        perfmon_event_enable(&set->ref);
        flags = cpu_intr_save();
        perfmon_accuracy_skid_loop(PERFMON_ACCURACY_SKID_ITERS);
        cpu_intr_restore(flags);
        perfmon_event_disable(&set->ref);
    }

    perfmon_accuracy_detach(set);

    while (!error && (size = perfmon_sbuf_read(sampling.sbuf, acc->cpu, rec,
                                               sizeof(rec))) != 0) {
        struct perfmon_sample s;

        if (perfmon_sample_decode(rec, size, &s) == 0
            && *nrp < PERFMON_ACCURACY_SKID_MAX) {
            ips[(*nrp)++] = s.ip;
        }
    }

    perfmon_sbuf_destroy(sampling.sbuf);
    return error;
}

/*
 * Where the step PMU's samples should be: every period instructions on
 * from its first one, round the loop.  Its samples against it check the
 * reference itself (every distance 0), on any machine.
 */
static void
perfmon_accuracy_skid_grid(const uint64_t *addrs, const uint64_t *exact,
                           unsigned int nr, uint64_t *grid)
{
    int first = (nr == 0) ? -1
                : perfmon_accuracy_loop_index(addrs, PERFMON_ACCURACY_SKID_LEN,
                                              exact[0]);

    for (unsigned int k = 0; k < nr; k++) {
        grid[k] = (first < 0) ? 0
                  : addrs[((uint64_t)first
                           + k * PERFMON_ACCURACY_SKID_PERIOD)
                          % PERFMON_ACCURACY_SKID_LEN];
    }
}

int
perfmon_accuracy_skid_run(struct perfmon_accuracy *acc,
                          struct perfmon_accuracy_set *set, bool hw_present)
{
    static const char *const names[] = { "first counter",
                                         "second counter" };
    uint64_t addrs[PERFMON_ACCURACY_SKID_LEN];
    uint64_t exact[PERFMON_ACCURACY_SKID_MAX], hw[PERFMON_ACCURACY_SKID_MAX];
    unsigned int nr_exact, nr_hw;
    struct perfmon_accuracy_skid skid;
    int error;

    perfmon_accuracy_skid_addrs(addrs);
    error = perfmon_accuracy_skid_sample(acc, set, acc->step, false, exact,
                                         &nr_exact);

    if (!error) {
        perfmon_accuracy_skid_grid(addrs, exact, nr_exact, hw);
        perfmon_accuracy_skid(addrs, PERFMON_ACCURACY_SKID_LEN, hw, exact,
                              nr_exact, &skid);
        perfmon_accuracy_skid_print(acc->out, "step PMU against its grid",
                                    PERFMON_ACCURACY_SKID_PERIOD, &skid);
    }

    for (unsigned int c = 0; !error && hw_present && c < 2; c++) {
        error = perfmon_accuracy_skid_sample(acc, set, NULL, c == 1, hw,
                                             &nr_hw);

        if (!error) {
            perfmon_accuracy_skid(addrs, PERFMON_ACCURACY_SKID_LEN, exact, hw,
                                  MIN(nr_exact, nr_hw), &skid);
            perfmon_accuracy_skid_print(acc->out, names[c],
                                        PERFMON_ACCURACY_SKID_PERIOD, &skid);
        }
    }

    return error;
}
