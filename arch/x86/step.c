/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Instruction counting by single-stepping: TF, the #DB handler, the
 * per-CPU counts and deadlines, stepped NMI handlers.  See
 * arch/x86/step.h.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/step.h"
#include "arch/x86/trap.h"
#include "kern/assert.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/macros.h"
#include "kern/param.h"
#include "kern/syscnt.h"

/*
 * Stepping on one CPU, used by that CPU only.  The counts are incremented
 * by the #DB handler, which an NMI may interrupt, and whose NMI handler
 * may be stepped in turn: each increment is one atomic instruction, so
 * that none is lost.  The user counts and deadlines change with
 * interrupts disabled, and the #DB handler only reads them (it clears the
 * deadlines before calling the deadline function).
 *
 * nmi_stack: the second NMI stack, for nested NMIs (see step.h).
 * in_deadline: the deadline function runs; a step taken meanwhile (in a
 * stepped NMI) does not call it again.
 * nr_nmi_tail: NMIs that came in a stepped NMI's tail, not stepped.
 */
struct step_cpu {
    uint64_t count;                     /* outside handlers */
    uint64_t count_nmi;                 /* in NMI handlers */
    uint64_t deadline;                  /* on count, 0: none */
    uint64_t deadline_nmi;              /* on count + count_nmi, 0: none */
    unsigned int nr_users;
    unsigned int nr_nmi_users;          /* of nr_users, those of NMIs */
    bool in_deadline;
    void *nmi_stack;
    struct syscnt nr_stray;             /* steps no user asked for */
    struct syscnt nr_nmi_tail;
} __aligned(CACHE_LINE_SIZE);

bool step_enabled;

static struct step_cpu step_cpus[CPU_MAX];
static step_deadline_fn_t step_deadline_fn;     /* set once, at enable */

static struct step_cpu *
step_cpu_local(void)
{
    return &step_cpus[cpu_id()];
}

/*
 * TF in place.  POPF that sets TF traps only after the instruction that
 * follows it; POPF that clears it is itself trapped (it started with TF
 * set): both fixed numbers of counted instructions.
 */
static inline void
step_tf_set(void)
{
    __asm__ __volatile__("pushfq\n\t"
                         "orq %0, (%%rsp)\n\t"
                         "popfq"
                         : : "i"(CPU_RFLAGS_TF) : "memory", "cc");
}

static inline void
step_tf_clear(void)
{
    __asm__ __volatile__("pushfq\n\t"
                         "andq %0, (%%rsp)\n\t"
                         "popfq"
                         : : "i"(~(long)CPU_RFLAGS_TF) : "memory", "cc");
}

bool
step_available(void)
{
    return __atomic_load_n(&step_enabled, __ATOMIC_ACQUIRE);
}

int
step_enable(step_deadline_fn_t fn)
{
    unsigned int nr_cpus = cpu_count();

    assert(fn != NULL);

    if (step_available()) {
        return -EEXIST;
    }

    for (unsigned int i = 0; i < nr_cpus; i++) {
        step_cpus[i].nmi_stack = kmem_alloc_aligned(CPU_IST_STACK_SIZE, 16);

        if (step_cpus[i].nmi_stack == NULL) {
            while (i-- > 0) {
                kmem_free(step_cpus[i].nmi_stack, CPU_IST_STACK_SIZE);
                step_cpus[i].nmi_stack = NULL;
            }

            return -ENOMEM;
        }
    }

    for (unsigned int i = 0; i < nr_cpus; i++) {
        syscnt_register_cpu(&step_cpus[i].nr_stray, "step_stray", i);
        syscnt_register_cpu(&step_cpus[i].nr_nmi_tail, "step_nmi_tail", i);
    }

    step_deadline_fn = fn;
    __atomic_store_n(&step_enabled, true, __ATOMIC_RELEASE);
    return 0;
}

/*
 * TF changes in place only outside handlers: the CPU sets the interrupted
 * code's TF from the frame when a handler returns, which
 * step_intr_return() keeps right.  Set after the first user counts, and
 * cleared before the last one leaves: no step finds no user.
 */
void
step_cpu_start(bool nmi)
{
    struct step_cpu *c;

    assert(!cpu_intr_enabled());
    assert(step_available());
    c = step_cpu_local();
    c->nr_users++;
    c->nr_nmi_users += nmi;

    if (!cpu_in_intr()) {
        step_tf_set();
    }
}

void
step_cpu_stop(bool nmi)
{
    struct step_cpu *c;

    assert(!cpu_intr_enabled());
    c = step_cpu_local();
    assert(c->nr_users != 0);
    assert(!nmi || c->nr_nmi_users != 0);

    if (c->nr_users == 1 && !cpu_in_intr()) {
        step_tf_clear();
    }

    c->nr_users--;
    c->nr_nmi_users -= nmi;
}

uint64_t
step_cpu_read(bool nmi)
{
    const struct step_cpu *c = step_cpu_local();
    uint64_t count = __atomic_load_n(&c->count, __ATOMIC_RELAXED);

    if (nmi) {
        count += __atomic_load_n(&c->count_nmi, __ATOMIC_RELAXED);
    }

    return count;
}

void
step_cpu_set_deadline(bool nmi, uint64_t count)
{
    struct step_cpu *c;

    assert(!cpu_intr_enabled());
    c = step_cpu_local();

    if (nmi) {
        c->deadline_nmi = count;
    } else {
        c->deadline = count;
    }
}

/* ---- the #DB handler ----------------------------------------------------- */

static bool
step_cpu_deadline_due(const struct step_cpu *c)
{
    uint64_t count = step_cpu_read(false);

    return (c->deadline != 0 && count >= c->deadline)
           || (c->deadline_nmi != 0
               && count + c->count_nmi >= c->deadline_nmi);
}

/*
 * Call the deadline function while a deadline is due: it sets the next
 * ones.  A step it takes itself (in a stepped NMI) finds in_deadline set.
 * Not from a stepped NMI handler: the function is an overflow interrupt,
 * which NMI handlers (another PMU's) may be in the middle of; the first
 * step after the NMI calls it (a few instructions late, as a PMI is).
 */
static void
step_cpu_check_deadlines(struct step_cpu *c, struct trap_frame *frame)
{
    if (c->in_deadline || cpu_self()->nmi_nesting != 0) {
        return;
    }

    while (step_cpu_deadline_due(c)) {
        c->deadline = 0;
        c->deadline_nmi = 0;
        c->in_deadline = true;
        barrier();
        step_deadline_fn(frame);
        barrier();
        c->in_deadline = false;
    }
}

/*
 * TF cleared after a stepped pass of the NMI handler chain.  Its steps
 * are the instrument's, not the handlers': the #DB handler counts none
 * that stops at step_nmi_tf_clear_start (the call's) up to
 * step_nmi_tf_clear_end (the POPF's, the last one).
 */
extern const char step_nmi_tf_clear_start[], step_nmi_tf_clear_end[];

__asm__(".text\n"
        ".globl step_nmi_tf_clear\n"
        ".type step_nmi_tf_clear, @function\n"
        "step_nmi_tf_clear:\n"
        "step_nmi_tf_clear_start:\n"
        "    pushfq\n"
        "    andq $~0x100, (%rsp)\n"
        "    popfq\n"
        "step_nmi_tf_clear_end:\n"
        "    ret\n"
        ".size step_nmi_tf_clear, . - step_nmi_tf_clear\n");

static bool
step_is_nmi_tf_clear(uint64_t rip)
{
    return rip - (uint64_t)step_nmi_tf_clear_start
           <= (uint64_t)(step_nmi_tf_clear_end - step_nmi_tf_clear_start);
}

bool
step_handle_debug(struct trap_frame *frame)
{
    struct step_cpu *c;
    bool nmi;

    /*
     * Nothing else raises #DB here (no breakpoint in DR7, no INT1), so it
     * is a step.  DR6.BS would say so, but cannot be trusted: a stepped
     * NMI that comes as the CPU enters this handler takes #DBs of its
     * own, each of which would clear the flag first.
     */
    if (!step_available()) {
        return false;
    }

    c = step_cpu_local();
    nmi = cpu_self()->nmi_nesting != 0;

    if (nmi ? (c->nr_nmi_users == 0) : (c->nr_users == 0)) {
        /*
         * No user: an NMI handler's stepping was stopped under it, or TF
         * leaked (a bug, counted): stop stepping that code.
         */
        if (!nmi && (frame->rflags & CPU_RFLAGS_TF)) {
            syscnt_inc(&c->nr_stray);
        }

        frame->rflags &= ~CPU_RFLAGS_TF;
        return true;
    }

    if (nmi && step_is_nmi_tf_clear(frame->rip)) {
        return true;
    }

    __atomic_fetch_add(nmi ? &c->count_nmi : &c->count, 1, __ATOMIC_RELAXED);
    step_cpu_check_deadlines(c, frame);
    return true;
}

/* ---- NMI handlers ----------------------------------------------------- */

/*
 * A stepped NMI handler is about to unblock NMIs (the IRET of its first
 * #DB): point the NMI's IST entry at the stack this one does not run on,
 * so that a nested NMI overwrites nothing of it.  Later NMIs use whichever
 * stack the entry names; both are whole NMI stacks.
 */
static void
step_nmi_stack_switch(const struct step_cpu *c)
{
    struct cpu *cpu = cpu_self();
    uint64_t sp = (uint64_t)__builtin_frame_address(0);
    uint64_t alt = (uint64_t)c->nmi_stack;
    uint64_t primary = (uint64_t)cpu->ist_stacks[CPU_IST_NMI - 1];
    bool on_alt = (sp >= alt) && (sp < alt + CPU_IST_STACK_SIZE);

    WRITE_ONCE(cpu->tss.ist[CPU_IST_NMI - 1],
               (on_alt ? primary : alt) + CPU_IST_STACK_SIZE);
    barrier();
}

/*
 * Whether sp is on one of this CPU's NMI stacks: then the NMI interrupted
 * another NMI's handler (its tail, past its last step: see step.h).
 */
static bool
step_on_nmi_stack(const struct step_cpu *c, uint64_t sp)
{
    uint64_t alt = (uint64_t)c->nmi_stack;
    uint64_t primary = (uint64_t)cpu_self()->ist_stacks[CPU_IST_NMI - 1];

    return (sp >= alt && sp - alt < CPU_IST_STACK_SIZE)
           || (sp >= primary && sp - primary < CPU_IST_STACK_SIZE);
}

bool
step_nmi_enter_slow(const struct trap_frame *frame)
{
    struct step_cpu *c = step_cpu_local();

    if (c->nr_nmi_users == 0) {
        return false;
    }

    if (step_on_nmi_stack(c, frame->rsp)) {
        syscnt_inc(&c->nr_nmi_tail);
        return false;
    }

    step_nmi_stack_switch(c);
    return true;
}

void
step_cpu_switched(void)
{
    if (step_cpu_local()->nr_users != 0) {
        step_tf_set();
    } else {
        step_tf_clear();
    }
}

void
step_intr_return_slow(struct trap_frame *frame)
{
    if (step_cpu_local()->nr_users != 0) {
        frame->rflags |= CPU_RFLAGS_TF;
    } else {
        frame->rflags &= ~CPU_RFLAGS_TF;
    }
}
