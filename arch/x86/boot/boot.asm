; Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
;
;
; Boot entry: the multiboot2 header, the 32-bit entry point GRUB jumps to,
; the switch to long mode and the jump to the higher half.
;
; Contract with the loader (Multiboot2 specification, section 3.3):
;   EAX = 0x36d76289, EBX = physical address of the boot information,
;   32-bit protected mode, flat segments, paging and interrupts off, no stack.
;
; Contract with C: boot_main(magic, info_pa, firmware_cr0) is called in
; 64-bit mode on boot_stack, caches enabled (CR0.CD and NW clear: firmware
; may leave them set, firmware_cr0 says how it was), with the page tables
; below loaded:
;   - virtual 0 .. 1 GiB identity-mapped (the AP trampoline and early code
;     still need it; pmap removes it later),
;   - KERNEL_VMA .. +1 GiB mapped to physical 0 .. 1 GiB (the kernel image),
;   - DIRECT_MAP_BASE .. +4 GiB mapped to physical 0 .. 4 GiB,
; all with 2 MiB pages.  The tables live in .boot, at their physical address.

%define KERNEL_VMA          0xffffffff80000000
%define MB2_MAGIC           0xe85250d6
%define MB2_BOOT_MAGIC      0x36d76289
%define MB2_ARCH_I386       0
%define COM1                0x3f8

%define PTE_P               0x001
%define PTE_W               0x002
%define PTE_PS              0x080

%define CR0_PG              (1 << 31)
%define CR0_CD              (1 << 30)
%define CR0_NW              (1 << 29)
%define CR0_WP              (1 << 16)
%define CR4_PAE             (1 << 5)
%define MSR_EFER            0xc0000080
%define EFER_LME            (1 << 8)
%define EFER_NXE            (1 << 11)

%define BOOT_STACK_SIZE     16384

section .multiboot2
align 8
mb2_header:
    dd MB2_MAGIC
    dd MB2_ARCH_I386
    dd mb2_header_end - mb2_header
    dd -(MB2_MAGIC + MB2_ARCH_I386 + (mb2_header_end - mb2_header))
    ; end tag
    dw 0
    dw 0
    dd 8
mb2_header_end:

section .boot
bits 32

global boot_start
boot_start:
    mov esp, boot_stack32_top
    mov edi, eax                ; keep magic and info for boot_main
    mov esi, ebx

    cmp eax, MB2_BOOT_MAGIC
    jne .no_multiboot

    ; Long mode: CPUID leaf 0x80000001, EDX bit 29.
    mov eax, 0x80000000
    cpuid
    cmp eax, 0x80000001
    jb .no_long_mode
    mov eax, 0x80000001
    cpuid
    test edx, 1 << 29
    jz .no_long_mode

    mov eax, cr4
    or eax, CR4_PAE
    mov cr4, eax

    mov eax, boot_pml4
    mov cr3, eax

    mov ecx, MSR_EFER
    rdmsr
    or eax, EFER_LME
    wrmsr

    ; Caches on, whatever the firmware left (CD set: no cache fills).
    mov eax, cr0
    mov edx, eax                ; for boot_main
    and eax, ~(CR0_CD | CR0_NW)
    or eax, CR0_PG | CR0_WP
    mov cr0, eax

    lgdt [boot_gdt_desc]
    jmp 0x08:boot_long_entry

.no_multiboot:
    mov ebx, msg_no_multiboot
    jmp boot_fail
.no_long_mode:
    mov ebx, msg_no_long_mode
    jmp boot_fail

; Print the NUL-terminated string at EBX on COM1 and halt.  The UART is not
; programmed yet; QEMU and most firmware leave it usable at 115200 8N1.
boot_fail:
    mov dx, COM1 + 5
.wait:
    in al, dx
    test al, 0x20
    jz .wait
    mov al, [ebx]
    test al, al
    jz .halt
    mov dx, COM1
    out dx, al
    inc ebx
    jmp boot_fail
.halt:
    cli
    hlt
    jmp .halt

bits 64
boot_long_entry:
    mov ax, 0x10
    mov ds, ax
    mov es, ax
    mov ss, ax
    xor ax, ax
    mov fs, ax
    mov gs, ax
    mov rax, boot_high_entry
    jmp rax

msg_no_multiboot:
    db "tally: not loaded by a multiboot2 loader, halting", 13, 10, 0
msg_no_long_mode:
    db "tally: this CPU has no 64-bit long mode, halting", 13, 10, 0

align 16
boot_gdt:
    dq 0
    dq 0x00af9a000000ffff       ; 0x08: 64-bit code, ring 0
    dq 0x00cf92000000ffff       ; 0x10: data, ring 0
boot_gdt_end:
boot_gdt_desc:
    dw boot_gdt_end - boot_gdt - 1
    dq boot_gdt

; Page tables (see the contract above).
align 4096
global boot_pml4
boot_pml4:
    dq boot_pdpt_low + PTE_P + PTE_W        ; 0: identity
    times 255 dq 0
    dq boot_pdpt_direct + PTE_P + PTE_W     ; 256: DIRECT_MAP_BASE
    times 254 dq 0
    dq boot_pdpt_high + PTE_P + PTE_W       ; 511: KERNEL_VMA

align 4096
boot_pdpt_low:
    dq boot_pd0 + PTE_P + PTE_W
    times 511 dq 0

align 4096
boot_pdpt_high:
    times 510 dq 0
    dq boot_pd0 + PTE_P + PTE_W             ; 510: 0xffffffff80000000
    dq 0

align 4096
boot_pdpt_direct:
    dq boot_pd0 + PTE_P + PTE_W
    dq boot_pd1 + PTE_P + PTE_W
    dq boot_pd2 + PTE_P + PTE_W
    dq boot_pd3 + PTE_P + PTE_W
    times 508 dq 0

; Four page directories of 2 MiB pages: physical 0 .. 4 GiB.
align 4096
%assign i 0
%rep 4
boot_pd %+ i:
%assign j 0
%rep 512
    dq ((i * 512 + j) << 21) | PTE_P | PTE_W | PTE_PS
%assign j j + 1
%endrep
%assign i i + 1
%endrep

align 16
boot_stack32:
    times 256 db 0
boot_stack32_top:

section .text
bits 64
extern boot_main
boot_high_entry:
    mov rsp, boot_stack + BOOT_STACK_SIZE
    xor rbp, rbp
    ; RDI = magic, RSI = info physical address, RDX = firmware's CR0
    ; (zero-extended by the 32-bit moves).
    mov edi, edi
    mov esi, esi
    mov edx, edx
    call boot_main
.hang:
    cli
    hlt
    jmp .hang

section .bss
align 4096
global boot_stack
boot_stack:
    resb BOOT_STACK_SIZE
