/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Trap dispatch: the IDT, exception reports, exception fixups for safe
 * MSR access, device interrupt handlers and the NMI handler chain.
 */

#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/msr.h"
#include "arch/x86/step.h"
#include "arch/x86/trap.h"
#include "kern/assert.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/panic.h"
#include "kern/printf.h"
#include "kern/swevent.h"
#include "kern/syscnt.h"

#define TRAP_NMI_MAX_HANDLERS   8

#define TRAP_GATE_INTR          0x8e    /* present, DPL 0, 64-bit interrupt gate */

struct trap_gate {
    uint16_t offset_low;
    uint16_t selector;
    uint8_t ist;
    uint8_t type;
    uint16_t offset_mid;
    uint32_t offset_high;
    uint32_t reserved;
} __packed;

/*
 * An exception fixup: a faulting instruction the code expects may fault,
 * and where to resume.  Entries are emitted next to the instruction (see
 * msr_read_safe) into the ex_fixup section.
 */
struct trap_fixup {
    uint64_t fault_rip;
    uint64_t fixup_rip;
};

extern const uint64_t trap_stubs[TRAP_NR_VECTORS];
extern const struct trap_fixup __start_ex_fixup[];
extern const struct trap_fixup __stop_ex_fixup[];

static struct trap_gate trap_idt[TRAP_NR_VECTORS] __aligned(16);

/* An NMI handler of the chain, with the argument it is called with. */
struct trap_nmi_handler {
    trap_nmi_fn_t fn;
    void *arg;
};

/* Written at boot only, before the vectors can fire. */
static trap_handler_fn_t trap_handlers[TRAP_NR_VECTORS];
static struct trap_nmi_handler trap_nmi_handlers[TRAP_NMI_MAX_HANDLERS];
static unsigned int trap_nr_nmi_handlers;

static uint64_t trap_unclaimed_nmis;

/*
 * Set once by trap_nmi_halt_all(), read by every NMI: a CPU that sees it
 * halts, before the handlers (which need no test of their own for it).
 */
static bool trap_nmi_halting;

/* NMIs received per CPU (all sources), registered as each CPU starts. */
static struct syscnt trap_sc_nmis[CPU_MAX];

/* Of those, the ones that nested in a single-stepped NMI handler. */
static struct syscnt trap_sc_nmis_latched[CPU_MAX];


static const char *const trap_names[TRAP_NR_EXCEPTIONS] = {
    [0] = "divide error",
    [1] = "debug",
    [2] = "non-maskable interrupt",
    [3] = "breakpoint",
    [4] = "overflow",
    [5] = "bound range exceeded",
    [6] = "invalid opcode",
    [7] = "device not available",
    [8] = "double fault",
    [9] = "coprocessor segment overrun",
    [10] = "invalid TSS",
    [11] = "segment not present",
    [12] = "stack-segment fault",
    [13] = "general protection fault",
    [14] = "page fault",
    [16] = "x87 floating-point error",
    [17] = "alignment check",
    [18] = "machine check",
    [19] = "SIMD floating-point exception",
    [20] = "virtualization exception",
    [21] = "control protection exception",
    [28] = "hypervisor injection exception",
    [29] = "VMM communication exception",
    [30] = "security exception",
};

const char *
trap_name(unsigned int vector)
{
    if (vector >= ARRAY_SIZE(trap_names)) {
        return NULL;
    }

    return trap_names[vector];
}

static void
trap_set_gate(unsigned int vector, uint64_t handler, unsigned int ist)
{
    struct trap_gate *gate = &trap_idt[vector];

    gate->offset_low = handler & 0xffff;
    gate->selector = CPU_SEL_KCODE;
    gate->ist = ist;
    gate->type = TRAP_GATE_INTR;
    gate->offset_mid = (handler >> 16) & 0xffff;
    gate->offset_high = handler >> 32;
    gate->reserved = 0;
}

void
trap_setup(void)
{
    for (unsigned int i = 0; i < TRAP_NR_VECTORS; i++) {
        trap_set_gate(i, trap_stubs[i], 0);
    }

    /*
     * An NMI can arrive anywhere, including on a nearly full stack or at the
     * first instruction of another handler: give it, the double fault and
     * the machine check stacks of their own.
     */
    trap_set_gate(TRAP_NMI, trap_stubs[TRAP_NMI], CPU_IST_NMI);
    trap_set_gate(TRAP_DF, trap_stubs[TRAP_DF], CPU_IST_DF);
    trap_set_gate(TRAP_MC, trap_stubs[TRAP_MC], CPU_IST_MC);
}

void
trap_load(void)
{
    struct {
        uint16_t limit;
        uint64_t base;
    } __packed desc = { sizeof(trap_idt) - 1, (uint64_t)trap_idt };

    __asm__ __volatile__("lidt %0" : : "m"(desc));
}

void
trap_register(unsigned int vector, trap_handler_fn_t fn)
{
    assert(vector >= TRAP_NR_EXCEPTIONS && vector < TRAP_NR_VECTORS);
    assert(trap_handlers[vector] == NULL);
    trap_handlers[vector] = fn;
}

void
trap_nmi_register(trap_nmi_fn_t fn, void *arg)
{
    assert(trap_nr_nmi_handlers < ARRAY_SIZE(trap_nmi_handlers));
    trap_nmi_handlers[trap_nr_nmi_handlers].fn = fn;
    trap_nmi_handlers[trap_nr_nmi_handlers].arg = arg;
    __atomic_store_n(&trap_nr_nmi_handlers, trap_nr_nmi_handlers + 1,
                     __ATOMIC_RELEASE);
}

void
trap_setup_cpu(void)
{
    syscnt_register_cpu(&trap_sc_nmis[cpu_id()], "nmi", cpu_id());
    syscnt_register_cpu(&trap_sc_nmis_latched[cpu_id()], "nmi_latched",
                        cpu_id());
}

void
trap_nmi_halt_all(void)
{
    __atomic_store_n(&trap_nmi_halting, true, __ATOMIC_RELEASE);
}

uint64_t
trap_nr_unclaimed_nmis(void)
{
    return __atomic_load_n(&trap_unclaimed_nmis, __ATOMIC_RELAXED);
}

static bool
trap_fixup_apply(struct trap_frame *frame)
{
    for (const struct trap_fixup *f = __start_ex_fixup; f < __stop_ex_fixup;
         f++) {
        if (f->fault_rip == frame->rip) {
            frame->rip = f->fixup_rip;
            return true;
        }
    }

    return false;
}

/*
 * An NMI.  NMIs do not nest, except when a single-stepped NMI handler
 * unblocked them (the IRET of each #DB does: arch/x86/step.h); such a
 * nested NMI only latches itself, on the stack step.c set aside for it,
 * and the outer NMI runs the handler chain once more for it, until none
 * latched during a pass (one may also latch after a pass's last step,
 * the IRET of the #DB that stops stepping).  A CPU told to stop
 * (trap_nmi_halt_all) halts first of all.
 */
static void
trap_handle_nmi(struct trap_frame *frame)
{
    unsigned int n = __atomic_load_n(&trap_nr_nmi_handlers, __ATOMIC_ACQUIRE);
    const struct trap_nmi_handler *end = &trap_nmi_handlers[n];
    struct cpu *cpu = cpu_self();
    bool claimed = false, stepped;

    if (unlikely(__atomic_load_n(&trap_nmi_halting, __ATOMIC_ACQUIRE))) {
        cpu_halt_forever();
    }

    syscnt_inc(&trap_sc_nmis[cpu_id()]);

    if (cpu->nmi_nesting != 0) {
        syscnt_inc(&trap_sc_nmis_latched[cpu_id()]);
        WRITE_ONCE(cpu->nmi_latched, true);
        return;
    }

    cpu->nmi_nesting++;
    swevent_add(SWEVENT_NMI, 1);
    stepped = step_nmi_enter(frame);

    /*
     * Every handler sees every NMI: several sources may have fired at once.
     * Each pass is stepped when the NMI is; one more pass for an NMI that
     * latched during the last, until none did.
     */
    do {
        step_nmi_pass_begin(stepped);
        WRITE_ONCE(cpu->nmi_latched, false);
        barrier();

        for (const struct trap_nmi_handler *h = trap_nmi_handlers; h < end;
             h++) {
            claimed |= h->fn(h->arg, frame);
        }

        step_nmi_pass_end(stepped);
        barrier();
    } while (READ_ONCE(cpu->nmi_latched));

    if (!claimed) {
        __atomic_fetch_add(&trap_unclaimed_nmis, 1, __ATOMIC_RELAXED);
    }

    cpu->nmi_nesting--;
}

/* The panic report of an unexpected exception. */
static void __noreturn
trap_panic(const struct trap_frame *frame)
{
    const char *name = trap_name(frame->vector);

    panic_begin();
    kprintf("\npanic: cpu%u: exception %lu (%s), error code 0x%lx\n",
            cpu_id(), frame->vector, name != NULL ? name : "reserved",
            frame->error);
    panic_print_symbol("rip: ", frame->rip);

    if (frame->vector == TRAP_PF) {
        kprintf("cr2: %016lx (page fault address)\n", cpu_get_cr2());
    }

    kprintf("rax %016lx rbx %016lx rcx %016lx rdx %016lx\n"
            "rsi %016lx rdi %016lx rbp %016lx rsp %016lx\n"
            "r8  %016lx r9  %016lx r10 %016lx r11 %016lx\n"
            "r12 %016lx r13 %016lx r14 %016lx r15 %016lx\n"
            "rflags %016lx cs %04lx ss %04lx\n",
            frame->rax, frame->rbx, frame->rcx, frame->rdx, frame->rsi,
            frame->rdi, frame->rbp, frame->rsp, frame->r8, frame->r9,
            frame->r10, frame->r11, frame->r12, frame->r13, frame->r14,
            frame->r15, frame->rflags, frame->cs, frame->ss);
    panic_backtrace(frame->rip, frame->rbp);
    panic_end();
}

__attribute__((weak)) void
trap_intr_exit(struct trap_frame *frame)
{
    (void)frame;
}

void trap_dispatch(struct trap_frame *frame);

void
trap_dispatch(struct trap_frame *frame)
{
    unsigned int vector = frame->vector;

    if (vector == TRAP_NMI) {
        trap_handle_nmi(frame);
        return;
    }

    if (vector < TRAP_NR_EXCEPTIONS) {
        if (vector == TRAP_DB && step_handle_debug(frame)) {
            return;
        }

        /* #UD: the safe RDPMC where the instruction is missing (TCG). */
        if ((vector == TRAP_GP || vector == TRAP_UD)
            && trap_fixup_apply(frame)) {
            return;
        }

        trap_panic(frame);
    }

    if (vector >= TRAP_VEC_PIC_BASE && vector < TRAP_VEC_PIC_BASE + 16) {
        return;     /* legacy PIC: masked, only spurious IRQs 7/15 land here */
    }

    if (trap_handlers[vector] == NULL) {
        panic("trap: unexpected interrupt on vector %u", vector);
    }

    cpu_local_add(intr_nesting, 1);
    trap_handlers[vector](frame);
    cpu_local_add(intr_nesting, -1);
    trap_intr_exit(frame);
    step_intr_return(frame);
}

/*
 * Safe MSR and RDPMC access: insn, with a fixup entry for it that
 * resumes after it with %[error] set to %[eio] (-EIO).
 */
#define TRAP_SAFE_ASM(insn)                                             \
    "1: " insn "\n"                                                     \
    "2:\n"                                                              \
    ".pushsection ex_fixup, \"a\"\n"                                    \
    ".quad 1b, 3f\n"                                                    \
    ".popsection\n"                                                     \
    ".pushsection .text.fixup, \"ax\"\n"                                \
    "3: movl %[eio], %[error]\n"                                        \
    "jmp 2b\n"                                                          \
    ".popsection\n"

int
msr_read_safe(uint32_t msr, uint64_t *valuep)
{
    uint32_t low = 0, high = 0;
    int error = 0;

    __asm__ __volatile__(TRAP_SAFE_ASM("rdmsr")
                         : "+a"(low), "+d"(high), [error] "+r"(error)
                         : [eio] "i"(-EIO), "c"(msr));
    *valuep = ((uint64_t)high << 32) | low;
    return error;
}

int
msr_write_safe(uint32_t msr, uint64_t value)
{
    int error = 0;

    __asm__ __volatile__(TRAP_SAFE_ASM("wrmsr")
                         : [error] "+r"(error)
                         : [eio] "i"(-EIO), "c"(msr), "a"((uint32_t)value),
                           "d"((uint32_t)(value >> 32))
                         : "memory");
    return error;
}

int
msr_rdpmc_safe(uint32_t index, uint64_t *valuep)
{
    uint32_t low = 0, high = 0;
    int error = 0;

    __asm__ __volatile__(TRAP_SAFE_ASM("rdpmc")
                         : "+a"(low), "+d"(high), [error] "+r"(error)
                         : [eio] "i"(-EIO), "c"(index));
    *valuep = ((uint64_t)high << 32) | low;
    return error;
}
