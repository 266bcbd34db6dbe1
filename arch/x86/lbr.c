/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * x86 branch-record driver (see arch/x86/lbr.h): the part the three back
 * ends share.  It probes a back end at boot and registers with the perfmon
 * core as its branch-record driver; the core starts it when the first
 * event asking for branch stacks attaches and stops it after the last.
 *
 * Started: its callback is in the core's overflow-interrupt registry and
 * every CPU records.  On each overflow interrupt of the hardware PMU the
 * callback has the back end read the frozen records into this CPU's
 * buffer and hands them to the core, which copies them into the samples
 * that interrupt writes.  Stopped: every CPU stops recording first, then
 * the callback is unregistered, and only once that returns (no CPU can be
 * in the callback any more) are the buffers given up, poisoned: an
 * interrupt that found poison would prove the registry wrong, and is
 * counted (lbr_nr_poisoned()).
 *
 * Branch records follow threads by reset, not save and restore: when a
 * thread whose events record branches is switched in, the records are
 * cleared, so that its samples hold its own branches only (the
 * scheduler's last few included).  A save and restore would keep a
 * thread's history across its sleeps, at the cost of reading and writing
 * every record twice per switch; the samples of a stack that short-lived
 * lose little (perf does the same outside its call-stack mode).  CPU
 * events' stacks hold whatever ran there.
 *
 * Locking: the core serialises start, stop and install (thread context).
 * The per-CPU state is written by its own CPU with interrupts disabled and
 * read by its NMI; the callback takes no lock.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lbr.h"
#include "arch/x86/pmu.h"
#include "arch/x86/smp.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "kern/init.h"
#include "kern/log.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/perfmon.h"
#include "kern/printf.h"
#include "kern/string.h"
#include "kern/xcall.h"

/* A CPU's buffer while the callback may use it, and once given up. */
#define LBR_GUARD_LIVE      0x6c62722d6c697665ULL   /* "lbr-live" */
#define LBR_POISON          0xdeadbeefdeadbeefULL

/*
 * A CPU's capture state.  on: the records run here with the filter in use:
 * written by this CPU with interrupts disabled (set after the back end's
 * cpu_start, cleared before its cpu_stop), read by its NMI.  guard and
 * entries: the callback's buffer on this CPU, LIVE from the start until
 * the callback is unregistered, then POISON.
 */
struct lbr_cpu {
    bool on;
    uint64_t guard;
    struct perfmon_branch entries[LBR_MAX_DEPTH];
} __aligned(CACHE_LINE_SIZE);

static struct lbr_cpu lbr_cpus[CPU_MAX];

/*
 * The driver, written at boot and by lbr_install (thread context, never
 * while started); the callback reads backend, caps and dev.  probed and
 * probed_caps: what the boot probe found (backend NULL: nothing), which
 * lbr_install puts back.
 */
static struct {
    const struct lbr_backend *backend;
    struct lbr_caps caps;
    const struct lbr_backend *probed;
    struct lbr_caps probed_caps;
    struct perfmon_dev *dev;
    bool registered;
    unsigned int filter;                /* while started */
    int handle;                         /* the callback's; -1 when stopped */
} lbr = { .handle = -1 };

static uint64_t lbr_poisoned;           /* atomic */

static const struct perfmon_branch_ops lbr_ops;

static struct perfmon_branch_driver lbr_driver = {
    .name = "lbr",
    .ops = &lbr_ops,
};

/* ---- shared by the back ends -------------------------------------------- */

uint64_t
lbr_sext(uint64_t value, unsigned int bit)
{
    unsigned int shift = 63 - bit;

    assert(bit <= 63);
    return (uint64_t)((int64_t)(value << shift) >> shift);
}

/*
 * LBR_SELECT suppresses what it names: start from everything suppressed
 * and let through what each asked kind needs (any: all of them; the call
 * and return kinds include far branches, which is how interrupts and
 * system calls are recorded), then the privilege levels asked for.
 */
uint64_t
lbr_select(unsigned int filter)
{
    static const struct {
        unsigned int kind;
        uint64_t bits;
    } kinds[] = {
        { PERFMON_BRF_ANY, LBR_SEL_MASK & ~(LBR_SEL_CPL_EQ_0
                                            | LBR_SEL_CPL_NEQ_0) },
        { PERFMON_BRF_ANY_CALL, LBR_SEL_NEAR_REL_CALL | LBR_SEL_NEAR_IND_CALL
                                | LBR_SEL_FAR },
        { PERFMON_BRF_ANY_RET, LBR_SEL_NEAR_RET | LBR_SEL_FAR },
        { PERFMON_BRF_IND_CALL, LBR_SEL_NEAR_IND_CALL },
        { PERFMON_BRF_CALL, LBR_SEL_NEAR_REL_CALL },
        { PERFMON_BRF_COND, LBR_SEL_JCC },
        { PERFMON_BRF_IND_JMP, LBR_SEL_NEAR_IND_JMP },
    };
    uint64_t pass = 0;

    for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
        if (filter & kinds[i].kind) {
            pass |= kinds[i].bits;
        }
    }

    pass |= (filter & PERFMON_BRF_KERN) ? LBR_SEL_CPL_EQ_0 : 0;
    pass |= (filter & PERFMON_BRF_USER) ? LBR_SEL_CPL_NEQ_0 : 0;
    return LBR_SEL_MASK & ~pass;
}

uint64_t
lbr_flags(bool known, bool mispred, uint64_t cycles, unsigned int type)
{
    uint64_t flags = 0;

    if (known) {
        flags = mispred ? PERFMON_BR_MISPRED : PERFMON_BR_PREDICTED;
    }

    flags |= MIN(cycles, PERFMON_BR_CYCLES_MAX) << PERFMON_BR_CYCLES_SHIFT;
    flags |= ((uint64_t)type << PERFMON_BR_TYPE_SHIFT) & PERFMON_BR_TYPE_MASK;
    return flags;
}

unsigned int
lbr_pmu_version(void)
{
    uint32_t regs[4];

    pmu_cpuid(0, 0, regs);

    if (regs[0] < 0xa) {
        return 0;
    }

    pmu_cpuid(0xa, 0, regs);
    return PMU_CPUID_0A_VERSION(regs[0]);
}

/*
 * DEBUGCTL must keep our bits: a hypervisor that does not pass LBRs
 * through drops LBR silently, and faults on the freeze bit.
 */
const char *
lbr_debugctl_holds(uint64_t bits)
{
    uint64_t saved, back;

    if (msr_read_safe(MSR_IA32_DEBUGCTL, &saved) != 0) {
        return "IA32_DEBUGCTL faults";
    }

    if (msr_write_safe(MSR_IA32_DEBUGCTL, saved | bits) != 0) {
        return "IA32_DEBUGCTL faults on the LBR bits";
    }

    if (msr_read_safe(MSR_IA32_DEBUGCTL, &back) != 0
        || (back & bits) != bits) {
        msr_write_safe(MSR_IA32_DEBUGCTL, saved);
        return "IA32_DEBUGCTL drops the LBR bits (a hypervisor without LBR?)";
    }

    msr_write_safe(MSR_IA32_DEBUGCTL, saved & ~bits);
    return NULL;
}

/* The patterns an LBR_SELECT must keep: complementary, each bit once. */
static const uint64_t lbr_select_patterns[] = { 0x0c5, 0x13a };

bool
lbr_select_holds(uint32_t msr)
{
    return pmu_msr_holds(msr, lbr_select_patterns,
                         ARRAY_SIZE(lbr_select_patterns));
}

void
lbr_set_freeze(bool on)
{
    uint64_t debugctl = pmu_msr_read(MSR_IA32_DEBUGCTL);

    debugctl &= ~LBR_DEBUGCTL_FREEZE_LBRS;
    pmu_msr_write(MSR_IA32_DEBUGCTL,
                  debugctl | (on ? LBR_DEBUGCTL_FREEZE_LBRS : 0));
}

void
lbr_unfreeze_stale(uint32_t status_msr, uint32_t clr_msr)
{
    if (pmu_msr_read(status_msr) & LBR_STATUS_FROZEN) {
        pmu_msr_write(clr_msr, LBR_STATUS_FROZEN);
    }
}

/* ---- the interrupt callback (NMI context) ------------------------------- */

static void
lbr_intr(struct perfmon_dev *dev, unsigned int cpu, uint64_t ovf_mask,
         struct trap_frame *frame, void *arg)
{
    struct lbr_cpu *lc = &lbr_cpus[cpu];
    unsigned int nr;

    (void)ovf_mask;
    (void)frame;
    (void)arg;

    if (READ_ONCE(lc->guard) != LBR_GUARD_LIVE) {
        __atomic_fetch_add(&lbr_poisoned, 1, __ATOMIC_RELAXED);
        return;
    }

    /* Only the hardware PMU's interrupt froze the records. */
    if (!READ_ONCE(lc->on) || (!lbr.caps.any_dev && dev != lbr.dev)) {
        return;
    }

    nr = lbr.backend->capture(lc->entries);
    perfmon_intr_set_branches(lc->entries, nr);

    /* Given up while we used it: the unregistration did not wait. */
    if (READ_ONCE(lc->guard) != LBR_GUARD_LIVE) {
        __atomic_fetch_add(&lbr_poisoned, 1, __ATOMIC_RELAXED);
    }
}

uint64_t
lbr_nr_poisoned(void)
{
    return __atomic_load_n(&lbr_poisoned, __ATOMIC_RELAXED);
}

/* ---- the core's operations ---------------------------------------------- */

static const char *
lbr_check(const struct perfmon_dev *dev, unsigned int filter)
{
    if (!lbr.caps.any_dev && dev != NULL && dev != lbr.dev) {
        return "branch stacks need a hardware event: the LBR freezes on the "
               "hardware PMU's interrupt";
    }

    return lbr.backend->check_filter(filter);
}

static void
lbr_cpu_start_xcall(void *arg)
{
    struct lbr_cpu *lc = &lbr_cpus[cpu_id()];

    (void)arg;
    lbr.backend->cpu_start(lbr.filter);
    barrier();
    WRITE_ONCE(lc->on, true);
}

static void
lbr_cpu_stop_xcall(void *arg)
{
    struct lbr_cpu *lc = &lbr_cpus[cpu_id()];

    (void)arg;
    WRITE_ONCE(lc->on, false);
    barrier();
    lbr.backend->cpu_stop();
}

/* Every CPU in turn (CPUs never go offline). */
static void
lbr_on_each_cpu(void (*fn)(void *arg))
{
    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        int error = xcall_call(fn, NULL, cpu);

        assert(error == 0);
        (void)error;
    }
}

/* The buffers, live for the callback or given up (poisoned). */
static void
lbr_buffers_set(uint64_t guard, uint64_t fill)
{
    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        struct lbr_cpu *lc = &lbr_cpus[cpu];

        for (unsigned int i = 0; i < LBR_MAX_DEPTH; i++) {
            lc->entries[i] = (struct perfmon_branch){ fill, fill, fill };
        }

        __atomic_store_n(&lc->guard, guard, __ATOMIC_RELEASE);
    }
}

/*
 * The callback goes in first: a CPU recording without it would freeze on
 * the next interrupt with nobody to let it record again.
 */
static int
lbr_start(unsigned int filter)
{
    int handle;

    assert(lbr.handle < 0);
    lbr_buffers_set(LBR_GUARD_LIVE, 0);
    handle = perfmon_intr_register(lbr_intr, NULL);

    if (handle < 0) {
        lbr_buffers_set(LBR_POISON, LBR_POISON);
        return handle;
    }

    lbr.handle = handle;
    lbr.filter = filter;
    lbr_on_each_cpu(lbr_cpu_start_xcall);
    return 0;
}

static void
lbr_stop(void)
{
    int error;

    assert(lbr.handle >= 0);
    lbr_on_each_cpu(lbr_cpu_stop_xcall);
    error = perfmon_intr_unregister(lbr.handle);
    assert(error == 0);
    (void)error;
    lbr.handle = -1;
    lbr_buffers_set(LBR_POISON, LBR_POISON);
}

static void
lbr_sched_in(void)
{
    if (READ_ONCE(lbr_cpus[cpu_id()].on)) {
        lbr.backend->cpu_reset();
    }
}

static const struct perfmon_branch_ops lbr_ops = {
    .check = lbr_check,
    .start = lbr_start,
    .stop = lbr_stop,
    .sched_in = lbr_sched_in,
};

/* ---- probe and registration --------------------------------------------- */

/* The vendor of CPUID leaf 0 (EBX, EDX, ECX spell it). */
static bool
lbr_vendor_is(const char *name)
{
    uint32_t regs[4];
    char vendor[13];

    pmu_cpuid(0, 0, regs);
    memcpy(&vendor[0], &regs[1], 4);
    memcpy(&vendor[4], &regs[3], 4);
    memcpy(&vendor[8], &regs[2], 4);
    vendor[12] = '\0';
    return strcmp(vendor, name) == 0;
}

/* Intel's records are Architectural LBR where CPUID says so, else legacy. */
static const struct lbr_backend *
lbr_choose(void)
{
    uint32_t regs[4];

    if (lbr_vendor_is("GenuineIntel")) {
        pmu_cpuid(0, 0, regs);

        if (regs[0] >= 7) {
            pmu_cpuid(7, 0, regs);

            if (regs[3] & LBR_CPUID_7_EDX_ARCH_LBR) {
                return &lbr_arch_backend;
            }
        }

        return &lbr_intel_backend;
    }

    if (lbr_vendor_is("AuthenticAMD") || lbr_vendor_is("HygonGenuine")) {
        return &lbr_amd_backend;
    }

    return NULL;
}

/* Make the driver what backend and caps describe, and register it. */
static int
lbr_register(const struct lbr_backend *backend, const struct lbr_caps *caps)
{
    lbr.backend = backend;
    lbr.caps = *caps;
    lbr_driver.desc = caps->what;
    lbr_driver.depth = caps->depth;
    lbr_driver.filters = caps->kinds | (caps->modes ? PERFMON_BRF_MODE : 0);
    lbr.registered = perfmon_branch_register(&lbr_driver) == 0;
    return lbr.registered ? 0 : -EEXIST;
}

static int __format_printf(1, 2)
lbr_absent(const char *fmt, ...)
{
    static const char prefix[] = "no LBR: ";
    char why[PERFMON_HW_STATUS_SIZE];
    va_list ap;

    memcpy(why, prefix, sizeof(prefix));
    va_start(ap, fmt);
    kvsnprintf(&why[sizeof(prefix) - 1], sizeof(why) - sizeof(prefix) + 1,
               fmt, ap);
    va_end(ap);
    perfmon_branch_set_absent(why);
    log_info("lbr: %s", why);
    return -ENODEV;
}

/* What each CPU's check found. */
struct lbr_cpu_found {
    const struct lbr_backend *backend;
    const char *reason;
};

static void
lbr_cpu_check_fn(void *arg)
{
    struct lbr_cpu_found *found = arg;

    found->reason = found->backend->cpu_check();
}

/* The first CPU whose records differ from the boot CPU's, or -1. */
static int
lbr_check_cpus(const struct lbr_backend *backend, pmu_run_on_fn_t run_on,
               const char **reasonp)
{
    for (unsigned int cpu = 0; cpu < cpu_count(); cpu++) {
        struct lbr_cpu_found found = { .backend = backend };
        int error = run_on(lbr_cpu_check_fn, &found, cpu);

        if (error) {
            *reasonp = "cannot be asked";
            return (int)cpu;
        }

        if (found.reason != NULL) {
            *reasonp = found.reason;
            return (int)cpu;
        }
    }

    return -1;
}

/* Why dev (the hardware PMU, or NULL) gives no interrupt to capture on. */
static const char *
lbr_no_interrupt(const struct perfmon_dev *dev)
{
    if (dev == NULL) {
        return "no hardware PMU registered (perfmon info says why)";
    }

    return dev->overflow_intr ? NULL : "the hardware PMU raises no overflow "
                                       "interrupt (perfmon.nmi=off)";
}

int
lbr_probe(struct perfmon_dev *dev, pmu_run_on_fn_t run_on)
{
    const struct lbr_backend *backend = lbr_choose();
    struct lbr_caps caps = { 0 };
    const char *reason;
    int cpu;

    if (backend == NULL) {
        return lbr_absent("not an Intel or AMD CPU");
    }

    if (backend->probe(&caps) != 0) {
        return lbr_absent("%s", caps.reason);
    }

    cpu = lbr_check_cpus(backend, run_on, &reason);

    if (cpu >= 0) {
        return lbr_absent("%s on cpu%d: %s", caps.what, cpu, reason);
    }

    reason = lbr_no_interrupt(dev);

    if (reason != NULL) {
        return lbr_absent("%s found, but %s", caps.what, reason);
    }

    assert(caps.depth > 0 && caps.depth <= LBR_MAX_DEPTH);
    lbr.probed = backend;
    lbr.probed_caps = caps;
    lbr.dev = dev;

    if (lbr_register(backend, &caps) != 0) {
        return lbr_absent("another branch-record driver is registered");
    }

    log_info("lbr: %s, %u entries", caps.what, caps.depth);
    return 0;
}

int
lbr_install(const struct lbr_backend *backend, const struct lbr_caps *caps)
{
    if (lbr.registered) {
        int error = perfmon_branch_unregister(&lbr_driver);

        if (error) {
            return error;
        }

        lbr.registered = false;
    }

    if (backend == NULL) {
        backend = lbr.probed;
        caps = &lbr.probed_caps;
    }

    if (backend == NULL) {
        lbr.backend = NULL;
        return 0;
    }

    assert(caps->depth > 0 && caps->depth <= LBR_MAX_DEPTH);
    return lbr_register(backend, caps);
}

#ifndef TALLY_HOST_TEST
static int
lbr_setup(void)
{
    return lbr_probe(pmu_get_dev(), xcall_call);
}

INIT_OP_DEFINE(lbr_setup, INIT_OP_DEP(pmu_setup, false),
               INIT_OP_DEP(perfmon_setup, true),
               INIT_OP_DEP(smp_setup, true));
#endif

#ifdef TALLY_HOST_TEST
void
lbr_reset(void)
{
    memset(&lbr, 0, sizeof(lbr));
    lbr.handle = -1;
    memset(lbr_cpus, 0, sizeof(lbr_cpus));
    lbr_poisoned = 0;
    lbr_driver.desc = NULL;
}
#endif
