/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * In-kernel tests of instruction counting by single-stepping, with the
 * boot option perfmon.step=on (they skip without it):
 *
 *   - the #DB counter (arch/x86/step.h) on fixed sequences of known
 *     length: straight code, a loop, calls and returns, an instruction
 *     that faults and is fixed up: exact;
 *   - the same loop while another CPU floods this one with xcalls and
 *     NMIs: the count outside handlers does not move by one, also with
 *     NMI handlers stepped (and counted apart);
 *   - a stepped NMI handler that raises an NMI: the nested NMI is
 *     latched and handled after, and nothing breaks;
 *   - the `step` perfmon device: a 4-instruction loop (spin's) counted
 *     exactly for several lengths; the count across thousands of counter
 *     wraps (run at steppmu.width=16 by tests/boot/boot_step.py) exact;
 *     sampling every P instructions landing on the same instruction of
 *     the loop every time; a thread that sleeps and migrates while
 *     stepped, counted exactly on every CPU (a path that leaves its CPU is
 *     handled: the count follows the thread); two stepped threads at once
 *     on different CPUs; an event detached while its thread runs, which
 *     then runs unstepped.
 *
 * Exact means compared with another count of the same code: a
 * measurement's own overhead (the reads around it) is a fixed number,
 * taken off by measuring a sequence of another length the same way.
 * Each measurement is repeated and the smallest kept: anything that
 * disturbs one (the thread switched out and back) only adds.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/step.h"
#include "arch/x86/trap.h"
#include "kern/error.h"
#include "kern/ktest.h"
#include "kern/macros.h"
#include "kern/perfmon.h"
#include "kern/perfmon_ring.h"
#include "kern/string.h"
#include "kern/symtab.h"
#include "kern/syscnt.h"
#include "kern/thread.h"
#include "kern/xcall.h"
#include "tests/kernel/ktest_util.h"

#define STT_TRIES       3
#define STT_STORM_BURST 4
#define STT_WAIT_MS     10000

/*
 * Fixed sequences, called as functions; the numbers are the instructions
 * each runs, its ret included:
 *   stt_seq_ret            1
 *   stt_seq_straight       11
 *   stt_seq_call           7     (two calls of a leaf of two)
 *   stt_seq_fault          4     (the load faults: #GP, non-canonical
 *                                 address; the fixup's 2 count, the load
 *                                 does not)
 *   stt_loop2(n)           2n + 2
 *   stt_loop4(n)           4n + 1 (spin's loop: add, xor, sub, jnz)
 */
void stt_seq_ret(void);
void stt_seq_straight(void);
void stt_seq_call(void);
void stt_seq_fault(void);
void stt_loop2(uint64_t n);
void stt_loop4(uint64_t n);

__asm__(".pushsection .text\n"
        ".type stt_seq_ret, @function\n"
        "stt_seq_ret:\n\t"
        "ret\n"
        ".type stt_seq_straight, @function\n"
        "stt_seq_straight:\n\t"
        "nop\n\t"
        "nop\n\t"
        "xorl %eax, %eax\n\t"
        "incl %eax\n\t"
        "addl $2, %eax\n\t"
        "leaq 1(%rax), %rdx\n\t"
        "movq %rdx, %rcx\n\t"
        "shlq $3, %rcx\n\t"
        "subq %rax, %rcx\n\t"
        "nop\n\t"
        "ret\n"
        ".type stt_seq_call, @function\n"
        "stt_seq_call:\n\t"
        "call stt_seq_leaf\n\t"
        "call stt_seq_leaf\n\t"
        "ret\n"
        "stt_seq_leaf:\n\t"
        "nop\n\t"
        "ret\n"
        ".type stt_seq_fault, @function\n"
        "stt_seq_fault:\n\t"
        "movabsq $0x8000000000000000, %rax\n"
        "1:\n\t"
        "movq (%rax), %rax\n"
        "2:\n\t"
        "ret\n"
        ".pushsection ex_fixup, \"a\"\n\t"
        ".quad 1b, 3f\n"
        ".popsection\n"
        ".pushsection .text.fixup, \"ax\"\n"
        "3:\n\t"
        "xorl %eax, %eax\n\t"
        "jmp 2b\n"
        ".popsection\n"
        ".type stt_loop2, @function\n"
        "stt_loop2:\n\t"
        "movq %rdi, %rcx\n"
        "4:\n\t"
        "decq %rcx\n\t"
        "jnz 4b\n\t"
        "ret\n"
        ".type stt_loop4, @function\n"
        "stt_loop4:\n"
        "5:\n\t"
        "addq $1, %rax\n\t"
        "xorq %rdi, %rax\n\t"
        "subq $1, %rdi\n\t"
        "jnz 5b\n\t"
        "ret\n"
        ".popsection");

static struct perfmon_dev *
stt_dev(void)
{
    return perfmon_dev_find("step");
}

static bool
stt_available(void)
{
    if (!step_available() || stt_dev() == NULL) {
        ktest_skip_reason("no step device (boot with perfmon.step=on)");
        return false;
    }

    return true;
}

/* ---- the #DB counter ----------------------------------------------------- */

/* Start or stop stepping this CPU (preemption disabled by the caller). */
static void
stt_cpu_step(bool on, bool nmi)
{
    unsigned long flags = cpu_intr_save();

    if (on) {
        step_cpu_start(nmi);
    } else {
        step_cpu_stop(nmi);
    }

    cpu_intr_restore(flags);
}

/*
 * The instructions counted on this CPU, outside handlers (*handlersp: in
 * NMI handlers, with nmi), around one call of seq(n), stepping on
 * meanwhile.
 * Preemption disabled: the path stays on this CPU.  Interrupts stay on.
 */
static uint64_t
stt_count_seq(void (*seq)(uint64_t), uint64_t n, bool nmi,
              uint64_t *handlersp)
{
    uint64_t before, before_all, after, after_all;

    thread_preempt_disable();
    stt_cpu_step(true, nmi);
    before_all = step_cpu_read(true);
    before = step_cpu_read(false);
    seq(n);
    after = step_cpu_read(false);
    after_all = step_cpu_read(true);
    stt_cpu_step(false, nmi);
    thread_preempt_enable();

    if (handlersp != NULL) {
        *handlersp = (after_all - after) - (before_all - before);
    }

    return after - before;
}

static uint64_t
stt_count_min(void (*seq)(uint64_t), uint64_t n)
{
    uint64_t best = UINT64_MAX;

    for (unsigned int i = 0; i < STT_TRIES; i++) {
        best = MIN(best, stt_count_seq(seq, n, false, NULL));
    }

    return best;
}

static int
stt_db_sequences(void)
{
    static const struct {
        const char *name;
        void (*seq)(void);
        uint64_t insns;
    } seqs[] = {
        { "straight line", stt_seq_straight, 11 },
        { "call/ret", stt_seq_call, 7 },
        { "fault fixed up", stt_seq_fault, 4 },
    };
    uint64_t base, count;

    if (!stt_available()) {
        return KTEST_SKIP;
    }

    /* Called with an argument they ignore: one way to call them all. */
    base = stt_count_min((void (*)(uint64_t))stt_seq_ret, 0);

    for (size_t i = 0; i < ARRAY_SIZE(seqs); i++) {
        count = stt_count_min((void (*)(uint64_t))seqs[i].seq, 0);
        ktest_diag("%s: %llu counted, %llu with the measurement",
                   seqs[i].name, (unsigned long long)(count - base + 1),
                   (unsigned long long)count);
        KTEST_CHECK_EQ(count - base + 1, seqs[i].insns);
    }

    /* A loop: 2n + 2 instructions, whatever n. */
    count = stt_count_min(stt_loop2, 1000) - stt_count_min(stt_loop2, 1);
    KTEST_CHECK_EQ(count, 2 * 999);
    count = stt_count_min(stt_loop4, 1000) - stt_count_min(stt_loop4, 10);
    KTEST_CHECK_EQ(count, 4 * 990);

out:
    return ktest_result();
}

KTEST_DEFINE(step, db_sequences, stt_db_sequences);

/*
 * Interrupts and NMIs sent to a CPU as fast as another CPU can: an xcall
 * (a round trip), then NMI IPIs a few at a time, without waiting, so that
 * some land while the NMI handler runs (stepped, it lets them nest).
 */
struct stt_storm {
    unsigned int target;
    volatile bool stop;
    unsigned int sent;
};

static void
stt_storm_nop(void *arg)
{
    (void)arg;
}

static void
stt_storm_fn(void *arg)
{
    struct stt_storm *st = arg;

    while (!st->stop) {
        xcall_call(stt_storm_nop, NULL, st->target);

        for (unsigned int i = 0; i < STT_STORM_BURST; i++) {
            lapic_ipi_nmi(cpu_table[st->target].apic_id);

            for (volatile unsigned int j = 0; j < 100; j++) {
                cpu_pause();
            }
        }

        st->sent++;
    }
}

static bool
stt_storm_started(void *arg)
{
    const struct stt_storm *st = arg;

    return READ_ONCE(st->sent) != 0;
}

#define STT_STORM_LOOP      40000

static int
stt_db_interrupts(void)
{
    struct stt_storm storm = { .stop = false };
    uint64_t affinity, base, count, handlers = 0, xcalls, nmis, latched;
    uint64_t tails;
    struct thread *sender = NULL;
    unsigned int cpu;

    if (!stt_available()) {
        return KTEST_SKIP;
    }

    if (cpu_count() < 2) {
        ktest_skip_reason("needs 2 CPUs");
        return KTEST_SKIP;
    }

    affinity = ktest_pin_self(&cpu);
    base = stt_count_min(stt_loop2, 1);
    storm.target = cpu;
    KTEST_CHECK_EQ(thread_create(&sender, "stt_storm", stt_storm_fn, &storm,
                                 THREAD_CPUMASK((cpu + 1) % cpu_count())),
                   0);
    KTEST_CHECK(ktest_wait_until(stt_storm_started, &storm, STT_WAIT_MS));
    xcalls = ktest_syscnt_read_cpu("xcall_received", cpu);
    nmis = ktest_syscnt_read_cpu("nmi", cpu);
    latched = ktest_syscnt_read_cpu("nmi_latched", cpu);
    tails = ktest_syscnt_read_cpu("step_nmi_tail", cpu);

    /* Handlers are not counted... */
    count = stt_count_seq(stt_loop2, STT_STORM_LOOP, false, NULL);
    KTEST_CHECK_EQ(count - base, 2 * (STT_STORM_LOOP - 1));

    /* ...unless asked, NMI handlers, and then apart. */
    count = stt_count_seq(stt_loop2, STT_STORM_LOOP, true, &handlers);
    KTEST_CHECK_EQ(count - base, 2 * (STT_STORM_LOOP - 1));
    xcalls = ktest_syscnt_read_cpu("xcall_received", cpu) - xcalls;
    nmis = ktest_syscnt_read_cpu("nmi", cpu) - nmis;
    latched = ktest_syscnt_read_cpu("nmi_latched", cpu) - latched;
    tails = ktest_syscnt_read_cpu("step_nmi_tail", cpu) - tails;
    ktest_diag("meanwhile %llu xcalls and %llu NMIs (%llu latched, %llu in "
               "a stepped NMI's tail) came; %llu handler instructions "
               "stepped", (unsigned long long)xcalls,
               (unsigned long long)nmis, (unsigned long long)latched,
               (unsigned long long)tails, (unsigned long long)handlers);
    KTEST_CHECK(xcalls > 0);
    KTEST_CHECK(nmis > 0);
    KTEST_CHECK(handlers > 0);

out:
    storm.stop = true;

    if (sender != NULL) {
        thread_join(sender);
    }

    ktest_unpin_self(affinity);
    return ktest_result();
}

KTEST_DEFINE(step, db_interrupts_nmis, stt_db_interrupts);

/*
 * An NMI handler that, armed, raises an NMI of its own: blocked while
 * the first runs, it comes at the IRET of the first #DB when the handler
 * is stepped.
 */
static bool stt_nmi_armed;              /* atomic */
static unsigned int stt_nmi_calls;      /* atomic */

static bool
stt_nmi_handler(void *arg, struct trap_frame *frame)
{
    (void)arg;
    (void)frame;

    if (!__atomic_exchange_n(&stt_nmi_armed, false, __ATOMIC_RELAXED)) {
        return false;
    }

    __atomic_fetch_add(&stt_nmi_calls, 1, __ATOMIC_RELAXED);
    lapic_send_self_nmi();
    return true;
}

#define STT_NMI_WAIT    1000000

/*
 * A stepped NMI handler lets NMIs in: the nested one is latched
 * (nmi_latched/N) and handled by another run of the handler chain, on
 * the NMI stack the first did not use, and nothing breaks.
 */
static int
stt_db_nmi_nested(void)
{
    static bool registered;
    uint64_t affinity, nmis, latched;
    unsigned int cpu;

    if (!stt_available()) {
        return KTEST_SKIP;
    }

    /* NMI handlers cannot be unregistered: the first run adds it. */
    if (!registered) {
        trap_nmi_register(stt_nmi_handler, NULL);
        registered = true;
    }

    affinity = ktest_pin_self(&cpu);
    nmis = ktest_syscnt_read_cpu("nmi", cpu);
    latched = ktest_syscnt_read_cpu("nmi_latched", cpu);
    stt_nmi_calls = 0;
    thread_preempt_disable();
    stt_cpu_step(true, true);
    __atomic_store_n(&stt_nmi_armed, true, __ATOMIC_RELAXED);
    lapic_send_self_nmi();

    for (unsigned int i = 0; i < STT_NMI_WAIT
                             && ktest_syscnt_read_cpu("nmi", cpu) < nmis + 2;
         i++) {
        cpu_pause();
    }

    stt_cpu_step(false, true);
    thread_preempt_enable();
    nmis = ktest_syscnt_read_cpu("nmi", cpu) - nmis;
    latched = ktest_syscnt_read_cpu("nmi_latched", cpu) - latched;
    ktest_diag("%llu NMIs, %llu of them latched", (unsigned long long)nmis,
               (unsigned long long)latched);
    KTEST_CHECK_EQ(stt_nmi_calls, 1);
    KTEST_CHECK_EQ(nmis, 2);
    KTEST_CHECK_EQ(latched, 1);

out:
    __atomic_store_n(&stt_nmi_armed, false, __ATOMIC_RELAXED);
    ktest_unpin_self(affinity);
    return ktest_result();
}

KTEST_DEFINE(step, db_nmi_nested, stt_db_nmi_nested);

/* ---- the step device ----------------------------------------------------- */

/* Steps no user asked for (TF left set), on every CPU. */
static uint64_t
stt_stray_steps(void)
{
    uint64_t sum = 0;

    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        sum += ktest_syscnt_read_cpu("step_stray", cpu);
    }

    return sum;
}

static int
stt_attach(struct perfmon_event *ev, struct thread *thread,
           const struct perfmon_sampling *sampling)
{
    int error = perfmon_event_init(ev, PERFMON_EV_INSTRUCTION,
                                   PERFMON_EF_KERN);

    if (error == 0) {
        error = perfmon_event_set_dev(ev, stt_dev());
    }

    if (error == 0) {
        error = perfmon_event_set_sampling(ev, sampling);
    }

    if (error == 0) {
        error = perfmon_event_attach(ev, thread);
    }

    return error;
}

static void
stt_detach(struct perfmon_event *ev)
{
    if (perfmon_event_attached(ev)) {
        perfmon_event_detach(ev);
    }
}

/*
 * The count of an event of the calling thread attached, stt_loop4(n) run,
 * and detached: the loop and fixed paths around it (the smallest of
 * STT_TRIES).  Returns 0 when the event cannot be attached.
 */
static uint64_t
stt_span_loop4(uint64_t n)
{
    uint64_t best = UINT64_MAX;

    for (unsigned int i = 0; i < STT_TRIES; i++) {
        struct perfmon_event ev;

        if (stt_attach(&ev, thread_self(), NULL) != 0) {
            return 0;
        }

        stt_loop4(n);
        perfmon_event_detach(&ev);
        best = MIN(best, perfmon_event_read(&ev));
    }

    return best;
}

/*
 * A segment: the reads of the thread's own event around stt_loop4(n), on
 * whatever CPU it runs.
 */
static uint64_t
stt_segment(struct perfmon_event *ev, uint64_t n)
{
    uint64_t before = perfmon_event_read(ev);

    stt_loop4(n);
    return perfmon_event_read(ev) - before;
}

static uint64_t
stt_segment_min(struct perfmon_event *ev, uint64_t n)
{
    uint64_t best = UINT64_MAX;

    for (unsigned int i = 0; i < STT_TRIES; i++) {
        best = MIN(best, stt_segment(ev, n));
    }

    return best;
}

/*
 * Whether reads of a thread's own event run the same path whatever the
 * counter's position: the core's local read folds instead once the counter
 * is 1/16 of a period past its last fold (kern/perfmon/perfmon.c), every 4096
 * instructions at steppmu.width=16, so tests that compare segments of
 * reads run at the default width.
 */
static bool
stt_reads_steady(void)
{
    struct perfmon_dev_info info;

    perfmon_dev_get_info(stt_dev(), &info);

    if (info.width < 32) {
        ktest_skip_reason("reads fold every 2^(width-4) instructions at "
                          "this width: boot with the default steppmu.width");
        return false;
    }

    return true;
}

/* spin's loop, counted by the device: 4 instructions an iteration. */
static int
stt_spin_exact(void)
{
    static const uint64_t lengths[] = { 10, 1000, 2000, 5000 };
    uint64_t base, count, strays = stt_stray_steps();

    if (!stt_available()) {
        return KTEST_SKIP;
    }

    base = stt_span_loop4(1);
    KTEST_CHECK(base != 0);
    ktest_diag("attach, stt_loop4(1), detach: %llu instructions",
               (unsigned long long)base);

    for (size_t i = 0; i < ARRAY_SIZE(lengths); i++) {
        count = stt_span_loop4(lengths[i]);
        KTEST_CHECK_EQ(count - base, 4 * (lengths[i] - 1));
    }

    /* Stepping stopped with the last detach: TF went with it. */
    KTEST_CHECK_EQ(stt_stray_steps(), strays);

out:
    return ktest_result();
}

KTEST_DEFINE(step, device_spin_exact, stt_spin_exact);

#define STT_WRAPS   8

/*
 * Across wraps of the counter: two spans STT_WRAPS periods apart count
 * exactly that much apart (their ends sit at the same place of a period,
 * so the code around them runs the same way).  Wraps need a narrow
 * counter: tests/boot/boot_step.py runs this at steppmu.width=16.
 */
static int
stt_wraps_exact(void)
{
    struct perfmon_dev_info info;
    uint64_t affinity, overflows, span, count, n, period;
    unsigned int cpu;

    if (!stt_available()) {
        return KTEST_SKIP;
    }

    perfmon_dev_get_info(stt_dev(), &info);

    if (info.width > 24) {
        ktest_skip_reason("counters too wide to wrap here "
                          "(boot with steppmu.width=16)");
        return KTEST_SKIP;
    }

    affinity = ktest_pin_self(&cpu);
    period = 1ULL << info.width;
    n = STT_WRAPS * period / 4;
    overflows = ktest_syscnt_read_cpu("perfmon_nr_overflows", cpu);
    span = stt_span_loop4(1000);
    count = stt_span_loop4(1000 + n);
    overflows = ktest_syscnt_read_cpu("perfmon_nr_overflows", cpu)
                - overflows;
    ktest_diag("%llu instructions, %llu overflows folded at width %u",
               (unsigned long long)count, (unsigned long long)overflows,
               info.width);
    KTEST_CHECK_EQ(count - span, 4 * n);
    KTEST_CHECK(overflows >= STT_TRIES * STT_WRAPS);

out:
    ktest_unpin_self(affinity);
    return ktest_result();
}

KTEST_DEFINE(step, device_wraps_exact, stt_wraps_exact);

/* One record at a time, drained into this. */
static uint64_t stt_rec[PERFMON_RING_MAX_REC / sizeof(uint64_t)];

#define STT_SAMPLE_PERIOD   (4 * 1001)
#define STT_SAMPLE_LOOP     40000

/*
 * Sampling every P instructions, P a multiple of the loop's 4: every
 * sample taken in the loop is at the same instruction of it.
 */
static int
stt_sampling_exact(void)
{
    struct perfmon_sampling s = { .period = STT_SAMPLE_PERIOD,
                                  .fields = PERFMON_SF_IP };
    struct perfmon_event ev = { .state = 0 };
    unsigned int in_loop = 0, elsewhere = 0, other_ip = 0;
    uint64_t first_ip = 0, offset;
    size_t size;

    if (!stt_available()) {
        return KTEST_SKIP;
    }

    KTEST_ASSERT_EQ(perfmon_sbuf_create(&s.sbuf, 65536), 0);
    KTEST_CHECK_EQ(stt_attach(&ev, thread_self(), &s), 0);
    stt_loop4(STT_SAMPLE_LOOP);
    perfmon_event_detach(&ev);

    for (unsigned int cpu = 0; cpu < perfmon_sbuf_nr_cpus(s.sbuf); cpu++) {
        while ((size = perfmon_sbuf_read(s.sbuf, cpu, stt_rec,
                                         sizeof(stt_rec))) != 0) {
            struct perfmon_sample sample;
            const char *name;

            KTEST_CHECK_EQ(perfmon_sample_decode(stt_rec, size, &sample), 0);
            name = symtab_lookup(sample.ip, &offset);

            if (name == NULL || strcmp(name, "stt_loop4") != 0) {
                elsewhere++;
            } else if (in_loop++ == 0) {
                first_ip = sample.ip;
            } else {
                other_ip += (sample.ip != first_ip);
            }
        }
    }

    ktest_diag("%u samples in the loop at %#llx, %u at another place of it, "
               "%u elsewhere", in_loop, (unsigned long long)first_ip,
               other_ip, elsewhere);
    KTEST_CHECK(in_loop >= 4 * STT_SAMPLE_LOOP / STT_SAMPLE_PERIOD - 1);
    KTEST_CHECK_EQ(other_ip, 0);

out:
    stt_detach(&ev);
    perfmon_sbuf_destroy(s.sbuf);
    return ktest_result();
}

KTEST_DEFINE(step, device_sampling_exact, stt_sampling_exact);

#define STT_SEGMENT     100

/*
 * A path that sleeps and migrates is followed: the thread's count goes
 * with it.  The same segment counts the same on every CPU, before and
 * after a sleep and a move, and the count between segments (the switches)
 * only adds.
 */
static int
stt_sleep_migrate(void)
{
    struct perfmon_event ev = { .state = 0 };
    uint64_t affinity, ref, seg, last, now, strays = stt_stray_steps();
    unsigned int cpu, moved = 0;

    if (!stt_available() || !stt_reads_steady()) {
        return KTEST_SKIP;
    }

    affinity = ktest_pin_self(&cpu);
    KTEST_CHECK_EQ(stt_attach(&ev, thread_self(), NULL), 0);
    ref = stt_segment_min(&ev, STT_SEGMENT);
    last = perfmon_event_read(&ev);

    for (unsigned int i = 0; i < 2 * cpu_count(); i++) {
        unsigned int next = (cpu + 1 + i) % cpu_count();

        thread_msleep(1);
        thread_set_affinity(thread_self(), THREAD_CPUMASK(next));
        moved += (ktest_cpu_now() != cpu);
        seg = stt_segment_min(&ev, STT_SEGMENT);
        KTEST_CHECK_EQ(seg, ref);
        now = perfmon_event_read(&ev);
        KTEST_CHECK(now - last >= STT_TRIES * seg);
        last = now;
    }

    ktest_diag("segment of %llu instructions, on %u CPUs, %u moves",
               (unsigned long long)ref, cpu_count(), moved);
    KTEST_CHECK(cpu_count() == 1 || moved > 0);

    /* No thread switched in after it ran stepped. */
    KTEST_CHECK_EQ(stt_stray_steps(), strays);

out:
    stt_detach(&ev);
    ktest_unpin_self(affinity);
    return ktest_result();
}

KTEST_DEFINE(step, device_sleep_migrate, stt_sleep_migrate);

/* A thread that counts its segments with an event the test attached. */
struct stt_worker {
    struct perfmon_event ev;
    volatile bool go;
    volatile bool stop;
    volatile bool detached;
    bool tf_after_detach;
    uint64_t segs[STT_TRIES];
    volatile bool done;
};

static void
stt_worker_segments(void *arg)
{
    struct stt_worker *w = arg;

    ktest_wait_flag(&w->go, STT_WAIT_MS);

    for (unsigned int i = 0; i < STT_TRIES; i++) {
        w->segs[i] = stt_segment(&w->ev, STT_SEGMENT);
    }

    w->done = true;
}

/* A thread that sleeps, then counts a loop with its CPU's event. */
struct stt_sleeper {
    struct perfmon_event *cpu_ev;
    uint64_t count;
    volatile bool done;
};

static void
stt_sleeper_fn(void *arg)
{
    struct stt_sleeper *sl = arg;
    uint64_t before;

    /* Woken by the clock: switched in from the tail of its interrupt. */
    thread_msleep(2);
    before = perfmon_event_read(sl->cpu_ev);
    stt_loop4(STT_SEGMENT);
    sl->count = perfmon_event_read(sl->cpu_ev) - before;
    sl->done = true;
}

/*
 * A CPU event steps whatever its CPU runs: also a thread switched in by a
 * preemption, from an interrupt handler, where TF is clear.
 */
static int
stt_cpu_event(void)
{
    struct stt_sleeper sl = { .done = false };
    struct perfmon_event ev = { .state = 0 };
    struct thread *t = NULL;
    unsigned int cpu;
    int error;

    if (!stt_available()) {
        return KTEST_SKIP;
    }

    cpu = (ktest_cpu_now() + 1) % cpu_count();
    error = perfmon_event_init(&ev, PERFMON_EV_INSTRUCTION, PERFMON_EF_KERN);

    if (error == 0) {
        error = perfmon_event_set_dev(&ev, stt_dev());
    }

    KTEST_CHECK_EQ(error, 0);
    KTEST_CHECK_EQ(perfmon_event_attach_cpu(&ev, cpu), 0);
    sl.cpu_ev = &ev;
    KTEST_CHECK_EQ(thread_create(&t, "stt_sleeper", stt_sleeper_fn, &sl,
                                 THREAD_CPUMASK(cpu)), 0);
    KTEST_CHECK(ktest_wait_flag(&sl.done, STT_WAIT_MS));
    ktest_diag("%llu instructions counted around a loop of %u",
               (unsigned long long)sl.count, 4 * STT_SEGMENT);
    KTEST_CHECK(sl.count >= 4 * STT_SEGMENT);
    KTEST_CHECK(sl.count < 4 * STT_SEGMENT + 1000);

out:
    if (t != NULL) {
        thread_join(t);
    }

    stt_detach(&ev);
    return ktest_result();
}

KTEST_DEFINE(step, device_cpu_event, stt_cpu_event);

/* Two stepped threads at once, on two CPUs, each counted exactly. */
static int
stt_two_threads(void)
{
    struct stt_worker w[2];
    struct thread *t[2] = { NULL, NULL };
    struct perfmon_event ev = { .state = 0 };
    uint64_t ref = 0;

    if (!stt_available() || !stt_reads_steady()) {
        return KTEST_SKIP;
    }

    if (cpu_count() < 3) {
        ktest_skip_reason("needs 3 CPUs");
        return KTEST_SKIP;
    }

    memset(w, 0, sizeof(w));
    KTEST_CHECK_EQ(stt_attach(&ev, thread_self(), NULL), 0);
    ref = stt_segment_min(&ev, STT_SEGMENT);
    perfmon_event_detach(&ev);

    for (unsigned int i = 0; i < 2; i++) {
        KTEST_CHECK_EQ(thread_create(&t[i], "stt_worker", stt_worker_segments,
                                     &w[i], THREAD_CPUMASK(1 + i)), 0);
        KTEST_CHECK_EQ(stt_attach(&w[i].ev, t[i], NULL), 0);
    }

    w[0].go = true;
    w[1].go = true;

    for (unsigned int i = 0; i < 2; i++) {
        KTEST_CHECK(ktest_wait_flag(&w[i].done, STT_WAIT_MS));

        /* The smallest: a switch may add to the others. */
        KTEST_CHECK_EQ(MIN(w[i].segs[0], MIN(w[i].segs[1], w[i].segs[2])),
                       ref);
    }

out:
    for (unsigned int i = 0; i < 2; i++) {
        w[i].go = true;

        if (t[i] != NULL) {
            thread_join(t[i]);
        }

        stt_detach(&w[i].ev);
    }

    stt_detach(&ev);
    return ktest_result();
}

KTEST_DEFINE(step, device_two_threads, stt_two_threads);

static void
stt_worker_spin(void *arg)
{
    struct stt_worker *w = arg;

    while (!w->stop) {
        stt_loop4(100);

        if (w->detached) {
            w->tf_after_detach |= (cpu_get_rflags() & CPU_RFLAGS_TF) != 0;
        }
    }
}

static bool
stt_counted_some(void *arg)
{
    return perfmon_event_read(arg) > 10000;
}

/*
 * Attached to a thread running on another CPU, then detached while it
 * still runs: it is stepped in between, and not after (no TF left, no
 * stray step anywhere).
 */
static int
stt_detach_running(void)
{
    struct stt_worker w;
    struct thread *t = NULL;
    uint64_t strays = stt_stray_steps(), value;

    if (!stt_available()) {
        return KTEST_SKIP;
    }

    if (cpu_count() < 2) {
        ktest_skip_reason("needs 2 CPUs");
        return KTEST_SKIP;
    }

    memset(&w, 0, sizeof(w));
    KTEST_CHECK_EQ(thread_create(&t, "stt_spinner", stt_worker_spin, &w,
                                 THREAD_CPUMASK((ktest_cpu_now() + 1)
                                                % cpu_count())), 0);
    thread_msleep(5);
    KTEST_CHECK_EQ(stt_attach(&w.ev, t, NULL), 0);
    KTEST_CHECK(ktest_wait_until(stt_counted_some, &w.ev, STT_WAIT_MS));
    KTEST_CHECK_EQ(perfmon_event_detach(&w.ev), 0);
    value = perfmon_event_read(&w.ev);
    w.detached = true;
    thread_msleep(5);
    KTEST_CHECK_EQ(perfmon_event_read(&w.ev), value);
    KTEST_CHECK(!w.tf_after_detach);
    KTEST_CHECK_EQ(stt_stray_steps(), strays);

out:
    w.stop = true;

    if (t != NULL) {
        thread_join(t);
    }

    stt_detach(&w.ev);
    return ktest_result();
}

KTEST_DEFINE(step, device_detach_running, stt_detach_running);
