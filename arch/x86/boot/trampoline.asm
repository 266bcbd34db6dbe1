; Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
;
;
; Application processor start-up trampoline.
;
; smp.c copies trampoline_start..trampoline_end to physical SMP_TRAMPOLINE_PA
; (0x8000, page-aligned below 1 MiB: a SIPI vector is a page number), fills
; the parameter block at its end, and sends INIT-SIPI-SIPI.  The AP starts
; here in real mode at 0800:0000 and goes to protected mode, then long mode
; with the kernel's page tables (whose identity map of low memory covers
; this page), then calls
;   tramp_entry(tramp_cpu)     on the stack tramp_stack
; in 64-bit mode.  Interrupts stay disabled.  The code runs at an address
; other than its link address: every reference is computed from TRAMP_BASE.
;
;
; In protected mode, before touching memory other than its own page, an AP
; claims the parameter block: it swaps tramp_apic_id from its own APIC id
; to TRAMP_NOBODY with one locked compare-exchange.  A CPU that finds another
; id there is a late answer to a start the boot CPU gave up on (or to one
; already finished): it parks, rather than run on the stack and struct cpu
; now meant for another CPU, or after the identity map is gone.
;
; Parameter block (written by smp.c through these symbols):
;   tramp_cr3     dd  physical address of the PML4
;   tramp_apic_id dd  the APIC id of the CPU being started, or TRAMP_NOBODY
;   tramp_parked  dd  CPUs that found another id there and parked (count)
;   tramp_stack   dq  top of the AP's first stack
;   tramp_cpu     dq  its struct cpu
;   tramp_entry   dq  64-bit C entry point

%define TRAMP_BASE      0x8000
%define TRAMP_NOBODY    0xffffffff      ; SMP_TRAMP_NOBODY in smp.c
%define REL(x)          (TRAMP_BASE + (x) - trampoline_start)

section .rodata
align 16

global trampoline_start
global trampoline_end
global tramp_cr3
global tramp_apic_id
global tramp_parked
global tramp_stack
global tramp_cpu
global tramp_entry

bits 16
trampoline_start:
    cli
    cld
    xor ax, ax
    mov ds, ax
    lgdt [REL(tramp_gdt_desc)]

    ; Protected mode, caches on: CR0.CD and NW keep their value through
    ; INIT, which is set at power-on unless firmware cleared them.
    mov eax, cr0
    and eax, ~((1 << 30) | (1 << 29))   ; CD, NW
    or eax, 1                           ; PE
    mov cr0, eax
    jmp dword 0x08:REL(tramp_pm32)

bits 32
tramp_pm32:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax

    ; This CPU's APIC id, from its local APIC as lapic_id() reads it (the
    ; firmware's tables list those ids): the x2APIC ID MSR in x2APIC mode,
    ; else bits 31:24 of the xAPIC ID register (paging is off: physical).
    mov ecx, 0x1b                   ; IA32_APIC_BASE
    rdmsr
    test eax, 1 << 10               ; EXTD: x2APIC mode
    jz .xapic
    mov ecx, 0x802                  ; x2APIC ID
    rdmsr
    jmp .claim
.xapic:
    and eax, 0xfffff000
    mov eax, [eax + 0x20]           ; ID register
    shr eax, 24
.claim:
    mov edx, TRAMP_NOBODY
    lock cmpxchg [REL(tramp_apic_id)], edx
    jne tramp_park
    mov eax, cr4
    or eax, 1 << 5                  ; PAE
    mov cr4, eax
    mov eax, [REL(tramp_cr3)]
    mov cr3, eax
    mov ecx, 0xc0000080             ; EFER
    rdmsr
    or eax, 1 << 8                  ; LME
    wrmsr
    mov eax, cr0
    or eax, (1 << 31) | (1 << 16)   ; PG, WP
    mov cr0, eax
    jmp 0x18:REL(tramp_lm64)

bits 64
tramp_lm64:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    mov rsp, [REL(tramp_stack)]
    mov rdi, [REL(tramp_cpu)]
    mov rax, [REL(tramp_entry)]
    xor rbp, rbp
    call rax
.hang:
    cli
    hlt
    jmp .hang

bits 32
tramp_park:
    lock inc dword [REL(tramp_parked)]
.loop:
    cli
    hlt
    jmp .loop

align 8
tramp_gdt:
    dq 0
    dq 0x00cf9a000000ffff           ; 0x08: 32-bit code
    dq 0x00cf92000000ffff           ; 0x10: data
    dq 0x00af9a000000ffff           ; 0x18: 64-bit code
tramp_gdt_desc:
    dw tramp_gdt_desc - tramp_gdt - 1
    dd REL(tramp_gdt)

align 8
tramp_cr3:
    dd 0
tramp_apic_id:
    dd TRAMP_NOBODY
tramp_stack:
    dq 0
tramp_cpu:
    dq 0
tramp_entry:
    dq 0
tramp_parked:
    dd 0
trampoline_end:
