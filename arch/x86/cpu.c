/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * CPU identification and per-CPU descriptor tables.
 */

#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/msr.h"
#include "arch/x86/trap.h"
#include "kern/error.h"
#include "kern/kmem.h"
#include "kern/string.h"

struct cpu_info cpu_info;
struct cpu cpu_table[CPU_MAX];

/* The boot CPU's IST stacks are static: they are needed before the heap. */
static char cpu_boot_ist_stacks[CPU_NR_IST][CPU_IST_STACK_SIZE] __aligned(16);

/* GDT descriptors (Intel SDM vol. 3A, 3.4.5 and 7.2.3). */
#define CPU_GDT_KCODE       0x00af9a000000ffffUL
#define CPU_GDT_KDATA       0x00cf92000000ffffUL
#define CPU_GDT_TSS_TYPE    0x89UL      /* present, available 64-bit TSS */

static void
cpu_identify_brand(void)
{
    uint32_t *brand = (uint32_t *)cpu_info.brand;

    if (cpu_info.max_ext_leaf < 0x80000004) {
        strlcpy(cpu_info.brand, "unknown", sizeof(cpu_info.brand));
        return;
    }

    for (uint32_t leaf = 0x80000002; leaf <= 0x80000004; leaf++) {
        cpu_cpuid(leaf, 0, &brand[0], &brand[1], &brand[2], &brand[3]);
        brand += 4;
    }

    cpu_info.brand[48] = '\0';
}

static void
cpu_identify(void)
{
    uint32_t eax, ebx, ecx, edx, *vendor = (uint32_t *)cpu_info.vendor_str;

    cpu_cpuid(0, 0, &eax, &vendor[0], &vendor[2], &vendor[1]);
    cpu_info.max_leaf = eax;
    cpu_info.vendor_str[12] = '\0';

    if (strcmp(cpu_info.vendor_str, "GenuineIntel") == 0) {
        cpu_info.vendor = CPU_VENDOR_INTEL;
    } else if (strcmp(cpu_info.vendor_str, "AuthenticAMD") == 0
               || strcmp(cpu_info.vendor_str, "HygonGenuine") == 0) {
        cpu_info.vendor = CPU_VENDOR_AMD;
    }

    cpu_cpuid(1, 0, &eax, &ebx, &cpu_info.feat1_ecx, &cpu_info.feat1_edx);
    cpu_info.family = (eax >> 8) & 0xf;
    cpu_info.model = (eax >> 4) & 0xf;
    cpu_info.stepping = eax & 0xf;

    /* Extended family and model (SDM vol. 2A, CPUID leaf 1, figure 3-6). */
    if (cpu_info.family == 0xf) {
        cpu_info.family += (eax >> 20) & 0xff;
    }

    if (cpu_info.family >= 6) {
        cpu_info.model |= ((eax >> 16) & 0xf) << 4;
    }

    cpu_cpuid(0x80000000, 0, &cpu_info.max_ext_leaf, &ebx, &ecx, &edx);

    if (cpu_info.max_ext_leaf >= 0x80000001) {
        cpu_cpuid(0x80000001, 0, &eax, &ebx, &cpu_info.featx_ecx,
                  &cpu_info.featx_edx);
    }

    if (cpu_info.max_ext_leaf >= 0x80000007) {
        cpu_cpuid(0x80000007, 0, &eax, &ebx, &ecx, &edx);
        cpu_info.invariant_tsc = (edx & CPU_FEAT_APM_EDX_INVTSC) != 0;
    }

    cpu_identify_brand();
}

static void
cpu_build_gdt(struct cpu *cpu)
{
    uint64_t tss = (uint64_t)&cpu->tss;
    uint64_t limit = sizeof(cpu->tss) - 1;

    cpu->gdt[0] = 0;
    cpu->gdt[1] = CPU_GDT_KCODE;
    cpu->gdt[2] = CPU_GDT_KDATA;
    cpu->gdt[3] = (limit & 0xffff) | ((tss & 0xffffff) << 16)
                  | (CPU_GDT_TSS_TYPE << 40) | (((limit >> 16) & 0xf) << 48)
                  | (((tss >> 24) & 0xff) << 56);
    cpu->gdt[4] = tss >> 32;
}

static void
cpu_build_tss(struct cpu *cpu)
{
    memset(&cpu->tss, 0, sizeof(cpu->tss));

    for (unsigned int i = 0; i < CPU_NR_IST; i++) {
        cpu->tss.ist[i] = (uint64_t)cpu->ist_stacks[i] + CPU_IST_STACK_SIZE;
    }

    cpu->tss.iomap_base = sizeof(cpu->tss);
}

void
cpu_load(struct cpu *cpu)
{
    struct {
        uint16_t limit;
        uint64_t base;
    } __packed desc = { sizeof(cpu->gdt) - 1, (uint64_t)cpu->gdt };

    cpu->self = cpu;
    cpu_build_gdt(cpu);
    cpu_build_tss(cpu);

    __asm__ __volatile__("lgdt %0\n"
                         "pushq %1\n"
                         "leaq 1f(%%rip), %%rax\n"
                         "pushq %%rax\n"
                         "lretq\n"
                         "1:\n"
                         "movl %2, %%eax\n"
                         "movl %%eax, %%ds\n"
                         "movl %%eax, %%es\n"
                         "movl %%eax, %%ss\n"
                         "xorl %%eax, %%eax\n"
                         "movl %%eax, %%fs\n"
                         "movl %%eax, %%gs\n"
                         : : "m"(desc), "i"(CPU_SEL_KCODE), "i"(CPU_SEL_KDATA)
                         : "rax", "memory");
    __asm__ __volatile__("ltr %w0" : : "r"(CPU_SEL_TSS));
    msr_write(MSR_GS_BASE, (uint64_t)cpu);
    trap_load();
}

int
cpu_alloc_stacks(struct cpu *cpu)
{
    for (unsigned int i = 0; i < CPU_NR_IST; i++) {
        cpu->ist_stacks[i] = kmem_alloc_aligned(CPU_IST_STACK_SIZE, 16);

        if (cpu->ist_stacks[i] == NULL) {
            while (i-- > 0) {
                kmem_free(cpu->ist_stacks[i], CPU_IST_STACK_SIZE);
                cpu->ist_stacks[i] = NULL;
            }

            return -ENOMEM;
        }
    }

    return 0;
}

void
cpu_bootstrap(void)
{
    struct cpu *cpu = &cpu_table[0];

    cpu_identify();
    cpu->id = 0;

    for (unsigned int i = 0; i < CPU_NR_IST; i++) {
        cpu->ist_stacks[i] = cpu_boot_ist_stacks[i];
    }

    trap_setup();
    cpu_load(cpu);
    cpu->online = true;
}

void
cpu_halt_forever(void)
{
    for (;;) {
        cpu_intr_disable();
        cpu_halt();
    }
}

/* Number of CPUs online; raised by SMP bring-up, never lowered. */
static unsigned int cpu_nr_online = 1;

unsigned int
cpu_count(void)
{
    return __atomic_load_n(&cpu_nr_online, __ATOMIC_ACQUIRE);
}

void
cpu_set_count(unsigned int count)
{
    __atomic_store_n(&cpu_nr_online, count, __ATOMIC_RELEASE);
}
