/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Traps: exceptions, device interrupts and NMIs.
 *
 * Every vector enters through trap_entry.asm and trap_dispatch().  An
 * exception with no registered handler and no fixup is fatal: it prints a
 * panic report; the debug exception of a single step goes to
 * arch/x86/step.c, which also decides whether an NMI handler is stepped.
 * Device vectors run their registered handler with interrupts disabled.
 * NMIs are offered to every registered NMI handler
 * (PMI, NMI IPIs, the software PMU); one that no handler claims is counted,
 * not fatal.  Per CPU, syscnt nmi/N counts NMIs and nmi_latched/N those
 * that came while a single-stepped NMI handler ran (see trap_handle_nmi).
 */

#ifndef ARCH_X86_TRAP_H
#define ARCH_X86_TRAP_H

#include <stdbool.h>
#include <stdint.h>

/* Exceptions (Intel SDM vol. 3A, table 6-1). */
#define TRAP_DE             0
#define TRAP_DB             1
#define TRAP_NMI            2
#define TRAP_BP             3
#define TRAP_UD             6
#define TRAP_DF             8
#define TRAP_GP             13
#define TRAP_PF             14
#define TRAP_MC             18
#define TRAP_NR_EXCEPTIONS  32

/*
 * Device vectors.  The legacy PIC is remapped to 0x20..0x2f and masked; its
 * spurious interrupts land there and are ignored.
 */
#define TRAP_VEC_PIC_BASE   0x20
#define TRAP_VEC_SERIAL     0x30
#define TRAP_VEC_XCALL      0xe0
#define TRAP_VEC_RESCHED    0xe1
#define TRAP_VEC_TIMER      0xe2
#define TRAP_VEC_TEST       0xe3
#define TRAP_VEC_LAPIC_ERR  0xfe
#define TRAP_VEC_SPURIOUS   0xff
#define TRAP_NR_VECTORS     256

/* Saved state of the interrupted code, as built by trap_entry.asm. */
struct trap_frame {
    uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
    uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
    uint64_t vector;
    uint64_t error;
    uint64_t rip, cs, rflags, rsp, ss;
};

typedef void (*trap_handler_fn_t)(struct trap_frame *frame);

/*
 * An NMI handler returns true when the NMI was its own; arg is what it
 * was registered with (a PMU's device: its handler is called with no
 * wrapper).  Handlers run in NMI context: no locks, no allocation, only
 * per-CPU data and atomics.
 */
typedef bool (*trap_nmi_fn_t)(void *arg, struct trap_frame *frame);

/* Build the IDT (once, shared by all CPUs). */
void trap_setup(void);

/* Register the calling CPU's NMI counter (nmi/N). */
void trap_setup_cpu(void);

/* Load the IDT on the calling CPU. */
void trap_load(void);

/* Install the handler of a device vector (at boot, before it can fire). */
void trap_register(unsigned int vector, trap_handler_fn_t fn);

/*
 * Add an NMI handler to the chain (at boot).  Handlers are called in
 * registration order, all of them for each NMI.
 */
void trap_nmi_register(trap_nmi_fn_t fn, void *arg);

/*
 * From now on, every CPU's next NMI halts it, before anything else of the
 * NMI runs (machine_stop_others(): panic, reboot, power off).  Any
 * context.
 */
void trap_nmi_halt_all(void);

/* Number of NMIs no handler claimed, on all CPUs. */
uint64_t trap_nr_unclaimed_nmis(void);


/* Name of an exception vector ("page fault"), or NULL. */
const char *trap_name(unsigned int vector);

/*
 * Called by trap_dispatch() after a device interrupt handler returns with
 * interrupts still disabled: the scheduler hooks its preemption point here.
 */
void trap_intr_exit(struct trap_frame *frame);

#endif /* ARCH_X86_TRAP_H */
