/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Built-in workloads for `perfmon stat`: spin, memwalk, branchy, chain,
 * yield, hop, xcall and sleep, each a shell command.  See kern/workload.h.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"
#include "kern/clock.h"
#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/num.h"
#include "kern/perfmon_region.h"
#include "kern/shell.h"
#include "kern/string.h"
#include "kern/thread.h"
#include "kern/workload.h"
#include "kern/xcall.h"

/* Iterations between two looks at Ctrl-C in the tight loops. */
#define WORKLOAD_POLL_ITERS     (1UL << 16)


#define WORKLOAD_MAX_COUNT      1000000000000ULL    /* spin, branchy */
#define WORKLOAD_MAX_EVENTS     1000000000ULL       /* yield, hop, xcall */
#define WORKLOAD_MAX_SLEEP_MS   3600000ULL

/* ---- helpers ------------------------------------------------------------ */

static int
workload_usage(const char *cmd, const char *args)
{
    kprintf("usage: %s %s\n", cmd, args);
    return SHELL_ERR_REPORTED;
}

/*
 * Parse argv[index] as a number from min to max (with K/M/G suffixes when
 * size is true).  On error print why and the usage, and return
 * SHELL_ERR_REPORTED.
 */
static int
workload_parse_arg(int argc, char **argv, int index, const char *what,
                   const char *args, bool size, uint64_t min, uint64_t max,
                   uint64_t *valp)
{
    char min_buf[32], max_buf[32];
    int error;

    if (index >= argc) {
        kprintf("%s: missing %s\n", argv[0], what);
        return workload_usage(argv[0], args);
    }

    error = size ? cmdline_parse_size(argv[index], valp)
                 : cmdline_parse_u64(argv[index], valp);

    if ((error == 0) && (*valp >= min) && (*valp <= max)) {
        return 0;
    }

    num_fmt_count(min_buf, sizeof(min_buf), min);
    num_fmt_count(max_buf, sizeof(max_buf), max);
    kprintf("%s: %s must be a number from %s to %s%s, not '%s'\n", argv[0],
            what, min_buf, max_buf, size ? " (K, M suffixes allowed)" : "",
            argv[index]);
    return workload_usage(argv[0], args);
}

static int
workload_check_nargs(int argc, char **argv, int max, const char *args)
{
    if (argc > max) {
        kprintf("%s: too many arguments\n", argv[0]);
        return workload_usage(argv[0], args);
    }

    return 0;
}

/*
 * The arguments of a command that takes exactly one number, from min to
 * max, named args in its usage and its messages.
 */
static int
workload_parse_one(int argc, char **argv, const char *args, uint64_t min,
                   uint64_t max, uint64_t *valp)
{
    int error;

    error = workload_check_nargs(argc, argv, 2, args);

    if (error) {
        return error;
    }

    return workload_parse_arg(argc, argv, 1, args, args, false, min, max,
                              valp);
}

/*
 * The arguments of hop and xcall: a number of events N, as
 * workload_parse_one(); and as they move work between CPUs, they need two
 * at least.
 */
static int
workload_parse_smp(int argc, char **argv, unsigned int nr_cpus,
                   uint64_t *np)
{
    int error;

    error = workload_parse_one(argc, argv, "N", 1, WORKLOAD_MAX_EVENTS, np);

    if (error) {
        return error;
    }

    if (nr_cpus < 2) {
        kprintf("%s: needs at least 2 CPUs, this machine has %u\n", argv[0],
                nr_cpus);
        return SHELL_ERR_REPORTED;
    }

    return 0;
}

/*
 * Whether Ctrl-C stops a loop after done iterations.  The console is
 * read every period iterations only, so that its reads stay a small part
 * of what the loop measures.
 */
static bool
workload_interrupted(uint64_t done, uint64_t period)
{
    return ((done % period) == 0) && shell_interrupted();
}

/* Milliseconds since start (a TSC value), with 3 decimals, into buf. */
static void
workload_fmt_ms(char *buf, size_t size, uint64_t start)
{
    uint64_t ns = tsc_cycles_to_ns(cpu_rdtsc() - start);

    num_fmt_ratio(buf, size, ns, 1000000, 3, true);
}

static int
workload_finish(bool interrupted)
{
    return interrupted ? -EINTR : 0;
}

/* ---- spin --------------------------------------------------------------- */

/*
 * n iterations (n > 0) of exactly WORKLOAD_SPIN_INSNS instructions: the
 * counts in `perfmon stat -e instructions -- spin N` are then predictable.
 */
void __attribute__((noinline))
workload_spin_loop(uint64_t n)
{
    uint64_t acc = 0;

    __asm__ __volatile__("1:\n\t"
                         "addq $1, %[acc]\n\t"
                         "xorq %[n], %[acc]\n\t"
                         "subq $1, %[n]\n\t"
                         "jnz 1b"
                         : [acc] "+r"(acc), [n] "+r"(n)
                         :
                         : "cc");
}

/* spin's loop: a call of workload_spin_loop() (chunks of the count). */
PERFMON_REGION_DEFINE(spin, "spin");

static int
workload_spin_cmd(int argc, char **argv)
{
    static const char args[] = "N";
    char n_buf[32], insn_buf[32], ms_buf[32];
    uint64_t n, done = 0, start;
    bool interrupted = false;
    int error;

    error = workload_parse_one(argc, argv, args, 1, WORKLOAD_MAX_COUNT,
                               &n);

    if (error) {
        return error;
    }

    start = cpu_rdtsc();

    while (done < n) {
        uint64_t chunk = MIN(n - done, (uint64_t)WORKLOAD_POLL_ITERS * 16);

        PERFMON_REGION_BEGIN(spin);
        workload_spin_loop(chunk);
        PERFMON_REGION_END(spin);
        done += chunk;

        if ((done < n) && shell_interrupted()) {
            interrupted = true;
            break;
        }
    }

    workload_fmt_ms(ms_buf, sizeof(ms_buf), start);
    num_fmt_count(n_buf, sizeof(n_buf), done);
    num_fmt_count(insn_buf, sizeof(insn_buf), done * WORKLOAD_SPIN_INSNS);
    kprintf("spin: %s iterations of %u instructions (%s in the loop) in %s "
            "ms%s\n", n_buf, WORKLOAD_SPIN_INSNS, insn_buf, ms_buf,
            interrupted ? ", interrupted" : "");
    return workload_finish(interrupted);
}

SHELL_COMMAND(spin, "spin", "N",
              "workload: N iterations of a 4-instruction loop", workload_spin_cmd);

/* ---- memwalk ------------------------------------------------------------ */

static int
workload_memwalk_cmd(int argc, char **argv)
{
    static const char args[] = "SIZE STRIDE [PASSES]";
    char size_buf[32], acc_buf[32], ms_buf[32];
    uint64_t size, stride, passes = WORKLOAD_MEMWALK_PASSES, start;
    uint64_t accesses = 0, sum = 0, done_passes = 0;
    bool interrupted = false;
    volatile uint8_t *buf;
    int error;

    error = workload_check_nargs(argc, argv, 4, args);

    if (error == 0) {
        error = workload_parse_arg(argc, argv, 1, "SIZE", args, true, 1,
                                   UINT64_MAX, &size);
    }

    if (error == 0) {
        error = workload_parse_arg(argc, argv, 2, "STRIDE", args, true, 1,
                                   WORKLOAD_MEMWALK_MAX, &stride);
    }

    if ((error == 0) && (argc > 3)) {
        error = workload_parse_arg(argc, argv, 3, "PASSES", args, false, 1,
                                   1000000, &passes);
    }

    if (error) {
        return error;
    }

    if (size > WORKLOAD_MEMWALK_MAX) {
        kprintf("memwalk: SIZE capped at %lu MiB\n",
                WORKLOAD_MEMWALK_MAX >> 20);
        size = WORKLOAD_MEMWALK_MAX;
    }

    if (stride > size) {
        kprintf("memwalk: STRIDE must not exceed SIZE\n");
        return workload_usage(argv[0], args);
    }

    buf = kmem_alloc(size);

    if (buf == NULL) {
        num_fmt_count(size_buf, sizeof(size_buf), size);
        kprintf("memwalk: cannot allocate %s bytes\n", size_buf);
        return SHELL_ERR_REPORTED;
    }

    /* Touch it all once, outside the timed walk. */
    memset((void *)buf, 1, size);
    start = cpu_rdtsc();

    for (; done_passes < passes; done_passes++) {
        for (uint64_t off = 0; off < size; off += stride) {
            sum += buf[off];
            accesses++;

            if (workload_interrupted(accesses, WORKLOAD_POLL_ITERS)) {
                interrupted = true;
                break;
            }
        }

        if (interrupted) {
            break;
        }
    }

    workload_fmt_ms(ms_buf, sizeof(ms_buf), start);
    kmem_free((void *)buf, size);
    num_fmt_count(size_buf, sizeof(size_buf), size);
    num_fmt_count(acc_buf, sizeof(acc_buf), accesses);
    kprintf("memwalk: %llu passes over %s bytes, stride %llu: %s reads "
            "(sum %llu) in %s ms%s\n", (unsigned long long)done_passes,
            size_buf, (unsigned long long)stride, acc_buf,
            (unsigned long long)sum, ms_buf,
            interrupted ? ", interrupted" : "");
    return workload_finish(interrupted);
}

SHELL_COMMAND(memwalk, "memwalk", "SIZE STRIDE [PASSES]",
              "workload: strided reads over a heap buffer",
              workload_memwalk_cmd);

/* ---- branchy ------------------------------------------------------------ */

static inline uint64_t
workload_xorshift(uint64_t *statep)
{
    uint64_t x = *statep;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *statep = x;
    return x;
}

/*
 * One conditional branch on bit 0 of x, in asm so that the compiler cannot
 * turn it into a conditional move.
 */
static inline uint64_t
workload_branch(uint64_t x, uint64_t taken)
{
    __asm__ __volatile__("testq $1, %[x]\n\t"
                         "jz 1f\n\t"
                         "addq $1, %[taken]\n"
                         "1:"
                         : [taken] "+r"(taken)
                         : [x] "r"(x)
                         : "cc");
    return taken;
}

uint64_t
workload_branchy_loop(uint64_t n, uint64_t *statep)
{
    uint64_t taken = 0;

    for (uint64_t i = 0; i < n; i++) {
        /* The top bits of xorshift are the better ones. */
        taken = workload_branch(workload_xorshift(statep) >> 40, taken);
    }

    return taken;
}

static int
workload_branchy_cmd(int argc, char **argv)
{
    static const char args[] = "N";
    char n_buf[32], taken_buf[32], ms_buf[32];
    uint64_t n, i, state = WORKLOAD_BRANCHY_SEED, taken = 0, start;
    bool interrupted = false;
    int error;

    error = workload_parse_one(argc, argv, args, 1, WORKLOAD_MAX_COUNT,
                               &n);

    if (error) {
        return error;
    }

    start = cpu_rdtsc();

    for (i = 0; i < n;) {
        uint64_t chunk = MIN(n - i, (uint64_t)WORKLOAD_POLL_ITERS);

        taken += workload_branchy_loop(chunk, &state);
        i += chunk;

        if ((i < n) && shell_interrupted()) {
            interrupted = true;
            break;
        }
    }

    workload_fmt_ms(ms_buf, sizeof(ms_buf), start);
    num_fmt_count(n_buf, sizeof(n_buf), i);
    num_fmt_count(taken_buf, sizeof(taken_buf), taken);
    kprintf("branchy: %s random branches, %s taken (seed %#llx) in %s ms%s\n",
            n_buf, taken_buf, (unsigned long long)WORKLOAD_BRANCHY_SEED,
            ms_buf, interrupted ? ", interrupted" : "");
    return workload_finish(interrupted);
}

SHELL_COMMAND(branchy, "branchy", "N",
              "workload: N data-dependent branches, half mispredicted",
              workload_branchy_cmd);

/* ---- chain -------------------------------------------------------------- */

/*
 * Three levels of calls under the command, each working a little itself,
 * so that samples land at every level and in every prologue and epilogue:
 * the call chain of any sample taken in them is known.  Called through
 * noipa so that gcc keeps each a function of its own, built as the rest
 * of the kernel (prologues scheduled).
 */
#define WORKLOAD_CHAIN_FANOUT   4

static uint64_t __attribute__((noipa))
workload_chain_inner(uint64_t x)
{
    for (unsigned int i = 0; i < WORKLOAD_CHAIN_FANOUT; i++) {
        x = workload_branch(workload_xorshift(&x) >> 40, x);
    }

    return x;
}

static uint64_t __attribute__((noipa))
workload_chain_middle(uint64_t x, uint64_t mask)
{
    uint64_t acc = x ^ mask;

    for (unsigned int i = 0; i < WORKLOAD_CHAIN_FANOUT; i++) {
        acc += workload_chain_inner(acc + i) & mask;
    }

    return acc;
}

static uint64_t __attribute__((noipa))
workload_chain_outer(uint64_t x, uint64_t mask, uint64_t rounds)
{
    uint64_t acc = x * WORKLOAD_BRANCHY_SEED;

    for (uint64_t i = 0; i < rounds; i++) {
        acc ^= workload_chain_middle(acc + i, mask) + (acc >> 7);
    }

    return acc;
}

static int
workload_chain_cmd(int argc, char **argv)
{
    static const char args[] = "N";
    char n_buf[32], ms_buf[32];
    uint64_t n, i, acc = WORKLOAD_BRANCHY_SEED, start;
    bool interrupted = false;
    int error;

    error = workload_parse_one(argc, argv, args, 1, WORKLOAD_MAX_COUNT,
                               &n);

    if (error) {
        return error;
    }

    start = cpu_rdtsc();

    for (i = 0; i < n;) {
        uint64_t chunk = MIN(n - i, (uint64_t)WORKLOAD_POLL_ITERS / 64);

        acc = workload_chain_outer(acc, ~(uint64_t)i, chunk);
        i += chunk;

        if ((i < n) && shell_interrupted()) {
            interrupted = true;
            break;
        }
    }

    workload_fmt_ms(ms_buf, sizeof(ms_buf), start);
    num_fmt_count(n_buf, sizeof(n_buf), i);
    kprintf("chain: %s calls of three levels (sum %#llx) in %s ms%s\n",
            n_buf, (unsigned long long)acc, ms_buf,
            interrupted ? ", interrupted" : "");
    return workload_finish(interrupted);
}

SHELL_COMMAND(chain, "chain", "N",
              "workload: N calls three levels deep (a known call chain)",
              workload_chain_cmd);

/* ---- yield -------------------------------------------------------------- */

/* Shared with the helper thread of `yield`. */
struct workload_yield {
    bool stop;                          /* set by the command, READ_ONCE */
    uint64_t nr_yields;                 /* the helper's, read after join */
};

static void
workload_yield_helper(void *arg)
{
    struct workload_yield *yield = arg;

    while (!READ_ONCE(yield->stop)) {
        thread_yield();
        yield->nr_yields++;
    }
}

static int
workload_yield_cmd(int argc, char **argv)
{
    static const char args[] = "N";
    struct workload_yield yield = { .stop = false, .nr_yields = 0 };
    char n_buf[32], ms_buf[32];
    struct thread *self = thread_self(), *helper;
    uint64_t n, i, affinity, start;
    bool interrupted = false;
    unsigned int cpu;
    int error;

    error = workload_parse_one(argc, argv, args, 1, WORKLOAD_MAX_EVENTS,
                               &n);

    if (error) {
        return error;
    }

    /* Pin both threads to one CPU, so that each yield switches to the other. */
    affinity = thread_get_affinity(self);
    cpu = thread_cpu(self);
    error = thread_set_affinity(self, THREAD_CPUMASK(cpu));

    if (error) {
        kprintf("yield: cannot pin to CPU %u: %s\n", cpu, error_str(error));
        return SHELL_ERR_REPORTED;
    }

    error = thread_create(&helper, "yield-helper", workload_yield_helper,
                          &yield, THREAD_CPUMASK(cpu));

    if (error) {
        thread_set_affinity(self, affinity);
        kprintf("yield: cannot create the helper thread: %s\n",
                error_str(error));
        return SHELL_ERR_REPORTED;
    }

    start = cpu_rdtsc();

    for (i = 0; (i < n) && !interrupted; i++) {
        thread_yield();
        interrupted = workload_interrupted(i + 1, 256);
    }

    workload_fmt_ms(ms_buf, sizeof(ms_buf), start);
    WRITE_ONCE(yield.stop, true);
    thread_join(helper);
    thread_set_affinity(self, affinity);

    num_fmt_count(n_buf, sizeof(n_buf), i);
    kprintf("yield: %s yields on CPU %u against a helper thread (which "
            "yielded %llu times) in %s ms%s\n", n_buf, cpu,
            (unsigned long long)yield.nr_yields, ms_buf,
            interrupted ? ", interrupted" : "");
    return workload_finish(interrupted);
}

SHELL_COMMAND(yield, "yield", "N", "workload: N context switches",
              workload_yield_cmd);

/* ---- hop ---------------------------------------------------------------- */

static int
workload_hop_cmd(int argc, char **argv)
{
    char n_buf[32], ms_buf[32];
    struct thread *self = thread_self();
    unsigned int nr_cpus = cpu_count(), moved = 0;
    uint64_t n, i, affinity, start;
    bool interrupted = false;
    int error;

    error = workload_parse_smp(argc, argv, nr_cpus, &n);

    if (error) {
        return error;
    }

    affinity = thread_get_affinity(self);
    start = cpu_rdtsc();

    for (i = 0; (i < n) && !interrupted; i++) {
        unsigned int from = thread_cpu(self);
        unsigned int to = (from + 1) % nr_cpus;

        error = thread_set_affinity(self, THREAD_CPUMASK(to));

        if (error) {
            break;
        }

        if (thread_cpu(self) != from) {
            moved++;
        }

        interrupted = workload_interrupted(i + 1, 64);
    }

    workload_fmt_ms(ms_buf, sizeof(ms_buf), start);
    thread_set_affinity(self, affinity);

    if (error) {
        kprintf("hop: thread_set_affinity: %s\n", error_str(error));
        return SHELL_ERR_REPORTED;
    }

    num_fmt_count(n_buf, sizeof(n_buf), i);
    kprintf("hop: %s hops over %u CPUs (%u changed CPU) in %s ms%s\n", n_buf,
            nr_cpus, moved, ms_buf, interrupted ? ", interrupted" : "");
    return workload_finish(interrupted);
}

SHELL_COMMAND(hop, "hop", "N", "workload: migrate over all CPUs N times",
              workload_hop_cmd);

/* ---- xcall -------------------------------------------------------------- */

static void
workload_xcall_fn(void *arg)
{
    __atomic_fetch_add((uint64_t *)arg, 1, __ATOMIC_RELAXED);
}

static int
workload_xcall_cmd(int argc, char **argv)
{
    char n_buf[32], ms_buf[32];
    unsigned int nr_cpus = cpu_count();
    uint64_t n, i, served = 0, start;
    bool interrupted = false;
    int error;

    error = workload_parse_smp(argc, argv, nr_cpus, &n);

    if (error) {
        return error;
    }

    start = cpu_rdtsc();

    for (i = 0; (i < n) && !interrupted; i++) {
        /* Skip our own CPU (the thread may move meanwhile: harmless). */
        unsigned int cpu = (unsigned int)(i % (nr_cpus - 1));

        if (cpu >= cpu_id()) {
            cpu++;
        }

        error = xcall_call(workload_xcall_fn, &served, cpu);

        if (error) {
            break;
        }

        interrupted = workload_interrupted(i + 1, 256);
    }

    workload_fmt_ms(ms_buf, sizeof(ms_buf), start);

    if (error) {
        kprintf("xcall: xcall_call: %s\n", error_str(error));
        return SHELL_ERR_REPORTED;
    }

    num_fmt_count(n_buf, sizeof(n_buf), i);
    kprintf("xcall: %s calls to %u other CPUs (%llu served) in %s ms%s\n",
            n_buf, nr_cpus - 1,
            (unsigned long long)__atomic_load_n(&served, __ATOMIC_RELAXED),
            ms_buf, interrupted ? ", interrupted" : "");
    return workload_finish(interrupted);
}

SHELL_COMMAND(xcall, "xcall", "N", "workload: N cross-CPU calls",
              workload_xcall_cmd);

/* ---- sleep -------------------------------------------------------------- */

static int
workload_sleep_cmd(int argc, char **argv)
{
    static const char args[] = "MS";
    char ms_buf[32];
    uint64_t ms, start, end;
    bool interrupted = false;
    int error;

    error = workload_parse_one(argc, argv, args, 0, WORKLOAD_MAX_SLEEP_MS,
                               &ms);

    if (error) {
        return error;
    }

    start = cpu_rdtsc();
    end = clock_deadline_from_ms(ms);

    /* One sleep, cut short by Ctrl-C (or kill), not by other keys. */
    interrupted = shell_wait_interrupt(end);

    workload_fmt_ms(ms_buf, sizeof(ms_buf), start);
    kprintf("sleep: asked %llu ms, slept %s ms%s\n", (unsigned long long)ms,
            ms_buf, interrupted ? ", interrupted" : "");
    return workload_finish(interrupted);
}

SHELL_COMMAND(sleep, "sleep", "MS", "sleep MS milliseconds", workload_sleep_cmd);
