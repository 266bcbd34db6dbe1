/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The processor: identification (CPUID), control registers, interrupt
 * state, and the per-CPU descriptor tables.
 *
 * Each CPU has a struct cpu; its GS base points at it for the CPU's whole
 * life (there is no user mode, so GS is never swapped), which makes
 * cpu_id() and cpu_self() a single load.
 *
 * Host unit tests (TALLY_HOST_TEST) see plain declarations of cpu_id(),
 * cpu_self(), cpu_count() and the interrupt-state functions, which their
 * fakes define.
 */

#ifndef ARCH_X86_CPU_H
#define ARCH_X86_CPU_H

#include <stdbool.h>
#include <stdint.h>

#include "kern/macros.h"
#include "kern/param.h"

#define CPU_RFLAGS_TF       (1UL << 8)     /* trap flag: single-step */
#define CPU_RFLAGS_IF       (1UL << 9)

#define CPU_CR0_PG          (1UL << 31)
#define CPU_CR0_CD          (1UL << 30)
#define CPU_CR0_NW          (1UL << 29)
#define CPU_CR0_WP          (1UL << 16)
#define CPU_CR4_PAE         (1UL << 5)
#define CPU_CR4_PGE         (1UL << 7)
#define CPU_CR4_PCE         (1UL << 8)

/* CPUID leaf 1 (Intel SDM vol. 2A, CPUID, tables 3-10 and 3-11). */
#define CPU_FEAT1_ECX_X2APIC        (1U << 21)
#define CPU_FEAT1_ECX_TSC_DEADLINE  (1U << 24)
#define CPU_FEAT1_ECX_HYPERVISOR    (1U << 31)
#define CPU_FEAT1_EDX_MSR           (1U << 5)
#define CPU_FEAT1_EDX_APIC          (1U << 9)
#define CPU_FEAT1_EDX_TSC           (1U << 4)
/* CPUID leaf 0x80000001 (AMD APM vol. 3, appendix E). */
#define CPU_FEATX_ECX_PERFCTR_CORE  (1U << 23)
#define CPU_FEATX_EDX_LM            (1U << 29)
/* CPUID leaf 0x80000007 EDX: invariant TSC. */
#define CPU_FEAT_APM_EDX_INVTSC     (1U << 8)

/* Segment selectors of the per-CPU GDT. */
#define CPU_SEL_KCODE       0x08
#define CPU_SEL_KDATA       0x10
#define CPU_SEL_TSS         0x18

/* Interrupt stack table slots (1-based, as in the IDT gate). */
#define CPU_IST_NMI         1
#define CPU_IST_DF          2
#define CPU_IST_MC          3
#define CPU_NR_IST          3
#define CPU_IST_STACK_SIZE  8192

#define CPU_VENDOR_UNKNOWN  0
#define CPU_VENDOR_INTEL    1
#define CPU_VENDOR_AMD      2

struct cpu_tss {
    uint32_t reserved0;
    uint64_t rsp[3];
    uint64_t reserved1;
    uint64_t ist[7];
    uint64_t reserved2;
    uint16_t reserved3;
    uint16_t iomap_base;
} __packed;

/*
 * Identification of the boot CPU, filled once by cpu_identify(); all CPUs
 * of a system are assumed to match it.
 */
struct cpu_info {
    unsigned int vendor;
    char vendor_str[13];
    char brand[49];
    unsigned int family;
    unsigned int model;
    unsigned int stepping;
    unsigned int max_leaf;
    unsigned int max_ext_leaf;
    uint32_t feat1_ecx;
    uint32_t feat1_edx;
    uint32_t featx_ecx;
    uint32_t featx_edx;
    bool invariant_tsc;
};

/*
 * Per-CPU state owned by the arch code.  The first two fields are read
 * through GS by cpu_self() and cpu_id(): keep them first.
 */
struct cpu {
    struct cpu *self;
    unsigned int id;
    unsigned int preempt_count;     /* kern/thread.c, through GS */
    unsigned int need_resched;      /* kern/thread.c, through GS */
    void *thread;                   /* current thread (kern/thread.c) */
    void *perfmon;                  /* its perfmon state (kern/perfmon) */
    uint32_t apic_id;
    volatile bool online;           /* set by the CPU itself, once */
    volatile bool idle;             /* in the idle loop (for `cpus`) */
    unsigned int nmi_nesting;
    bool nmi_latched;               /* a nested NMI to handle (trap.c) */
    unsigned int intr_nesting;      /* device interrupt handlers running */
    uint64_t gdt[7];
    struct cpu_tss tss;
    void *ist_stacks[CPU_NR_IST];
} __aligned(CACHE_LINE_SIZE);

/*
 * (hi:lo) / d, in one divq.  The quotient must fit in 64 bits (hi < d):
 * the instruction faults (#DE) otherwise.  An ordinary instruction, so
 * host tests run it as it is.
 */
static inline uint64_t
cpu_div128(uint64_t hi, uint64_t lo, uint64_t d)
{
    uint64_t q, r;

    __asm__("divq %4" : "=a"(q), "=d"(r) : "a"(lo), "d"(hi), "rm"(d));
    (void)r;
    return q;
}

/*
 * The index of the lowest set bit of x, which must not be 0 (BSF leaves
 * its output undefined then), as a 64-bit value: an index into an array
 * with no sign or zero extension after it, which __builtin_ctzll's int
 * result takes.  Ordinary, like cpu_div128().
 */
static inline uint64_t
cpu_ctz64(uint64_t x)
{
    uint64_t index;

    __asm__("bsfq %1, %0" : "=r"(index) : "rm"(x) : "cc");
    return index;
}

/*
 * The same, x maybe 0: false then (*indexp undefined), BSF's zero flag
 * the test, where testing x first takes two instructions more.
 */
static inline bool
cpu_ctz64_test(uint64_t x, uint64_t *indexp)
{
    bool zero;

    __asm__("bsfq %2, %0" : "=r"(*indexp), "=@ccz"(zero) : "rm"(x));
    return !zero;
}

/*
 * A step of a loop over the set bits of *x, index the one just handled:
 * that bit is cleared, and the lowest left goes to *indexp, or false says
 * none is (*indexp then undefined).  BTR and BSF, whose zero flag is the
 * loop's test: three instructions a bit with the branch, where clearing
 * the lowest bit by x & (x - 1) and testing x take four.
 */
static inline bool
cpu_ctz64_next(uint64_t *x, uint64_t *indexp)
{
    bool zero;

    __asm__("btrq %1, %0\n\tbsfq %0, %1"
            : "+r"(*x), "+r"(*indexp), "=@ccz"(zero));
    return !zero;
}

#ifdef TALLY_HOST_TEST

unsigned int cpu_id(void);
struct cpu *cpu_self(void);
void cpu_set_perfmon(unsigned int cpu, void *perfmon);
uint64_t cpu_rdtsc(void);
bool cpu_intr_enabled(void);
unsigned long cpu_intr_save(void);
void cpu_intr_restore(unsigned long flags);
void cpu_pause(void);

#else /* TALLY_HOST_TEST */

static inline void
cpu_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t *eax, uint32_t *ebx,
          uint32_t *ecx, uint32_t *edx)
{
    __asm__ __volatile__("cpuid"
                         : "=a"(*eax), "=b"(*ebx), "=c"(*ecx), "=d"(*edx)
                         : "a"(leaf), "c"(subleaf));
}

/* In 64-bit mode RDTSC clears the upper halves of RAX and RDX: no widening. */
static inline uint64_t
cpu_rdtsc(void)
{
    uint64_t low, high;

    __asm__ __volatile__("rdtsc" : "=a"(low), "=d"(high));
    return (high << 32) | low;
}

static inline void
cpu_pause(void)
{
    __asm__ __volatile__("pause" : : : "memory");
}

static inline unsigned long
cpu_get_rflags(void)
{
    unsigned long rflags;

    __asm__ __volatile__("pushfq; popq %0" : "=r"(rflags) : : "memory");
    return rflags;
}

static inline bool
cpu_intr_enabled(void)
{
    return (cpu_get_rflags() & CPU_RFLAGS_IF) != 0;
}

static inline void
cpu_intr_enable(void)
{
    __asm__ __volatile__("sti" : : : "memory");
}

static inline void
cpu_intr_disable(void)
{
    __asm__ __volatile__("cli" : : : "memory");
}

static inline unsigned long
cpu_intr_save(void)
{
    unsigned long flags = cpu_get_rflags();

    cpu_intr_disable();
    return flags;
}

static inline void
cpu_intr_restore(unsigned long flags)
{
    if (flags & CPU_RFLAGS_IF) {
        cpu_intr_enable();
    }
}

static inline void
cpu_halt(void)
{
    __asm__ __volatile__("hlt" : : : "memory");
}

/* Enable interrupts and halt, with no window for a wakeup to be missed. */
static inline void
cpu_idle_wait(void)
{
    __asm__ __volatile__("sti; hlt" : : : "memory");
}

static inline struct cpu *
cpu_self(void)
{
    struct cpu *cpu;

    __asm__ __volatile__("movq %%gs:0, %0" : "=r"(cpu));
    return cpu;
}

static inline unsigned int
cpu_id(void)
{
    unsigned int id;

    __asm__ __volatile__("movl %%gs:8, %0" : "=r"(id));
    return id;
}

/*
 * Add to or read a 32-bit field of the calling CPU's struct cpu in one
 * instruction, so that an interrupt (and a migration) cannot split it.
 */
#define cpu_local_add(field, delta)                                     \
    __asm__ __volatile__("addl %1, %%gs:%c0"                            \
                         : : "i"(__builtin_offsetof(struct cpu, field)), \
                             "ir"(delta) : "memory", "cc")

#define cpu_local_read(field)                                           \
    ({                                                                  \
        unsigned int cpu_local_v_;                                      \
        __asm__ __volatile__("movl %%gs:%c1, %0" : "=r"(cpu_local_v_)   \
                             : "i"(__builtin_offsetof(struct cpu, field)) \
                             : "memory");                              \
        cpu_local_v_;                                                   \
    })

#define cpu_local_read_ptr(field)                                       \
    ({                                                                  \
        void *cpu_local_p_;                                             \
        __asm__ __volatile__("movq %%gs:%c1, %0" : "=r"(cpu_local_p_)   \
                             : "i"(__builtin_offsetof(struct cpu, field)) \
                             : "memory");                              \
        cpu_local_p_;                                                   \
    })

#define cpu_local_write_ptr(field, value)                               \
    __asm__ __volatile__("movq %1, %%gs:%c0"                            \
                         : : "i"(__builtin_offsetof(struct cpu, field)), \
                             "r"((void *)(value)) : "memory")

#define cpu_local_write(field, value)                                   \
    __asm__ __volatile__("movl %1, %%gs:%c0"                            \
                         : : "i"(__builtin_offsetof(struct cpu, field)), \
                             "ir"(value) : "memory")

/* True inside a device interrupt or NMI handler. */
static inline bool
cpu_in_intr(void)
{
    return cpu_local_read(intr_nesting) != 0
           || cpu_local_read(nmi_nesting) != 0;
}

static inline uint64_t
cpu_get_cr0(void)
{
    uint64_t value;

    __asm__ __volatile__("mov %%cr0, %0" : "=r"(value));
    return value;
}

static inline uint64_t
cpu_get_cr2(void)
{
    uint64_t value;

    __asm__ __volatile__("mov %%cr2, %0" : "=r"(value));
    return value;
}

static inline uint64_t
cpu_get_cr3(void)
{
    uint64_t value;

    __asm__ __volatile__("mov %%cr3, %0" : "=r"(value));
    return value;
}

static inline void
cpu_set_cr3(uint64_t value)
{
    __asm__ __volatile__("mov %0, %%cr3" : : "r"(value) : "memory");
}

static inline uint64_t
cpu_get_cr4(void)
{
    uint64_t value;

    __asm__ __volatile__("mov %%cr4, %0" : "=r"(value));
    return value;
}

static inline void
cpu_set_cr4(uint64_t value)
{
    __asm__ __volatile__("mov %0, %%cr4" : : "r"(value) : "memory");
}

static inline void
cpu_invlpg(uintptr_t va)
{
    __asm__ __volatile__("invlpg (%0)" : : "r"(va) : "memory");
}

extern struct cpu cpu_table[CPU_MAX];

/* Set cpu's perfmon pointer (kern/perfmon, at its setup). */
static inline void
cpu_set_perfmon(unsigned int cpu, void *perfmon)
{
    cpu_table[cpu].perfmon = perfmon;
}

/* Halt this CPU for good, interrupts disabled. */
void cpu_halt_forever(void) __noreturn;

/*
 * Identify the boot CPU (fills cpu_info), then set up its descriptor tables
 * (GDT, TSS with IST stacks, IDT) and GS base.  Called first thing in
 * boot_main, before anything that can fault usefully.
 */
void cpu_bootstrap(void);

/*
 * Set up the descriptor tables and GS base of the calling CPU, described by
 * cpu (an AP during SMP bring-up).  The IST stacks must be allocated.
 */
void cpu_load(struct cpu *cpu);

/* Publish the number of CPUs online (SMP bring-up, once). */
void cpu_set_count(unsigned int count);

/* Allocate the IST stacks of an AP.  Returns 0 or -ENOMEM. */
int cpu_alloc_stacks(struct cpu *cpu);

#endif /* TALLY_HOST_TEST */

/* The boot CPU's identification (host tests: the CPU fake's). */
extern struct cpu_info cpu_info;

/* Number of CPUs online (1 until SMP bring-up). */
unsigned int cpu_count(void);

/* Measured TSC frequency in Hz (0 before calibration). */
uint64_t cpu_tsc_freq(void);

#endif /* ARCH_X86_CPU_H */
