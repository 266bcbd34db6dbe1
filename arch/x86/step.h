/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Instruction counting by single-stepping.
 *
 * With RFLAGS.TF set, the processor raises a debug exception (#DB) after
 * each instruction it executes (Intel SDM vol. 3B, 18.3.1.4), under QEMU
 * TCG, KVM and on hardware alike.  This module owns TF and the #DB
 * handler: each single-step trap adds one to the count of its CPU, so a
 * count is exact, and the same on every run and every machine.  It costs
 * a trap per instruction: stepped code runs hundreds of times slower.
 *
 * What is counted.  While stepping is on for a CPU (more step_cpu_start()
 * than step_cpu_stop() calls there), every instruction the CPU retires
 * outside interrupt and NMI handlers: thread code, the idle loop, the
 * scheduler on both sides of a switch.  The CPU clears TF to enter a
 * handler, so handlers are not counted, unless a user asked for NMI
 * handlers (step_cpu_start(true)): then those are stepped too (each pass
 * of trap.c's handler chain, not the instructions that turn stepping on
 * and off), and counted apart (step_cpu_read(true) adds them).  That is how the
 * overflow interrupt a path causes (an NMI) is counted with it; device
 * interrupt handlers are never stepped, so that a count never depends on
 * when the clock ticked.  An instruction that faults does not retire and
 * is not counted, nor is its exception handler; counting goes on at the
 * instruction the handler resumes.  The #DB handler is never counted.
 * A count includes the instructions between starting stepping and the
 * first counted one and between stopping and the last: fixed numbers,
 * which a measurement takes off by measuring nothing once.
 *
 * Counts are per CPU, and a CPU counts whatever runs there outside
 * handlers.  Code that follows a path across CPUs starts and stops
 * stepping at the path's switches: the `step` perfmon device does so for
 * thread events (drivers/pmu/step.h), through the perfmon core's switch
 * hook, so a thread's count follows it across sleeps and migrations.
 * Code that uses this API directly keeps its path on one CPU (preemption
 * disabled): a path that sleeps or migrates is not refused here, it is
 * simply not followed.
 *
 * How TF follows the rule: step_cpu_start() and step_cpu_stop() set or
 * clear TF in place when called outside handlers (thread code with
 * interrupts disabled: the context-switch hook, a thread acting on its own
 * events); from a handler (an xcall), step_intr_return() sets the TF of
 * the interrupted code as the handler returns; and the context switch
 * sets it for the thread switched in (switch.asm), which may be switched
 * to from an interrupt handler's tail (a preemption), where TF is clear.
 *
 * Stepped NMI handlers.  A #DB taken inside an NMI handler ends with
 * IRET, which unblocks NMIs: another NMI may then nest.  Before stepping
 * an NMI handler, this module points the NMI's IST entry at the other of
 * two NMI stacks, so that a nested NMI lands where it overwrites nothing;
 * trap.c latches a nested NMI and runs the handler chain again instead of
 * nesting it (see trap_handle_nmi).  NMIs stay unblocked after the last
 * step, until the stepped handler's own IRET: an NMI that comes in that
 * tail finds both NMI stacks in use (its own, and the tail's), so it is
 * not stepped (nor counted): NMIs stay blocked while it runs, and no third
 * one can land on the tail's stack.
 *
 * Overflow: a user may set deadlines per CPU: when a count reaches one,
 * the #DB handler forgets both and calls the deadline function set with
 * step_enable(), with the frame of the code stepped (interrupts disabled;
 * an NMI may interrupt it: no lock), which sets them again.  It is not
 * called again from within itself.
 *
 * Everything here acts on the calling CPU.  Functions with a frame are
 * trap.c's; the others need interrupts disabled unless stated otherwise.
 */

#ifndef ARCH_X86_STEP_H
#define ARCH_X86_STEP_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/macros.h"

struct trap_frame;

typedef void (*step_deadline_fn_t)(struct trap_frame *frame);

/*
 * Make stepping available (the `step` device, at boot, thread context):
 * fn is the deadline function.  Returns 0, -EEXIST when already done, or
 * -ENOMEM.  Until then the #DB handler claims no trap.
 */
int step_enable(step_deadline_fn_t fn);

/* Whether step_enable() succeeded.  Any context. */
bool step_available(void);

/*
 * Start or stop stepping on this CPU for one user; nmi: that user also
 * counts NMI handlers.
 */
void step_cpu_start(bool nmi);
void step_cpu_stop(bool nmi);

/*
 * Instructions stepped on this CPU since boot: outside handlers, plus
 * in NMI handlers with nmi.  Any context on this CPU (a read from thread
 * code is counted too, and moves by one per instruction as it runs).
 */
uint64_t step_cpu_read(bool nmi);

/*
 * Call the deadline function once step_cpu_read(nmi) reaches count (0:
 * no deadline).  One deadline per kind per CPU; a new one replaces the
 * old.
 */
void step_cpu_set_deadline(bool nmi, uint64_t count);

/* trap.c and switch.asm --------------------------------------------------- */

/* Set once by step_enable(): read on every interrupt. */
extern bool step_enabled;

/* The #DB handler: true when the trap was a single step, handled. */
bool step_handle_debug(struct trap_frame *frame);

bool step_nmi_enter_slow(const struct trap_frame *frame);
void step_nmi_tf_clear(void);
void step_intr_return_slow(struct trap_frame *frame);

/* A context switch is done (switch.asm, when step_enabled): set TF. */
void step_cpu_switched(void);

/*
 * An NMI handler starts (after the nesting count went up): whether to
 * step its passes of the handler chain, when a user of this CPU asked,
 * unless the NMI interrupted code on an NMI stack.
 */
static inline bool
step_nmi_enter(const struct trap_frame *frame)
{
    if (likely(!__atomic_load_n(&step_enabled, __ATOMIC_RELAXED))) {
        return false;
    }

    return step_nmi_enter_slow(frame);
}

/*
 * A pass of the handler chain starts or ends, stepped when
 * step_nmi_enter() said so.  What is counted is the pass itself: POPF
 * that sets TF traps only after the instruction that follows it, and the
 * #DB handler does not count the call that clears it, nor its
 * instructions (step_nmi_tf_clear), only the test of stepped before it.
 * The instrument's own instructions are not the handlers'.
 */
static inline void
step_nmi_pass_begin(bool stepped)
{
    if (unlikely(stepped)) {
        __asm__ __volatile__("pushfq\n\t"
                             "orq %0, (%%rsp)\n\t"
                             "popfq"
                             : : "i"(CPU_RFLAGS_TF) : "memory", "cc");
    }
}

static inline void
step_nmi_pass_end(bool stepped)
{
    if (unlikely(stepped)) {
        step_nmi_tf_clear();
    }
}

/*
 * A device interrupt returns to the code it interrupted (interrupts were
 * enabled there: thread code): set its TF as this CPU's stepping says,
 * which a handler (an xcall) may have changed.
 */
static inline void
step_intr_return(struct trap_frame *frame)
{
    if (unlikely(__atomic_load_n(&step_enabled, __ATOMIC_RELAXED))) {
        step_intr_return_slow(frame);
    }
}

#endif /* ARCH_X86_STEP_H */
