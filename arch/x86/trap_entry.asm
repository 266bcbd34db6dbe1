; Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
;
;
; Interrupt and exception entry stubs, one per IDT vector.
;
; Contract with trap.c: each stub makes the stack look the same whatever the
; vector (a zero error code is pushed where the CPU pushes none), pushes the
; vector number and the general registers, and calls trap_dispatch(frame)
; with frame pointing at struct trap_frame (trap.h).  The C handler may
; change the frame (an exception fixup rewrites RIP).  Kernel only: there is
; no user mode, so no SWAPGS.

bits 64
section .text

extern trap_dispatch

%macro TRAP_STUB_NOERR 1
trap_stub_%1:
    push qword 0
    push qword %1
    jmp trap_common
%endmacro

%macro TRAP_STUB_ERR 1
trap_stub_%1:
    push qword %1
    jmp trap_common
%endmacro

; Vectors for which the CPU pushes an error code (SDM vol. 3A, table 6-1).
%assign v 0
%rep 256
%if v == 8 || v == 10 || v == 11 || v == 12 || v == 13 || v == 14 || v == 17 || v == 21 || v == 29 || v == 30
    TRAP_STUB_ERR v
%else
    TRAP_STUB_NOERR v
%endif
%assign v v + 1
%endrep

trap_common:
    push rax
    push rbx
    push rcx
    push rdx
    push rsi
    push rdi
    push rbp
    push r8
    push r9
    push r10
    push r11
    push r12
    push r13
    push r14
    push r15
    cld
    mov rdi, rsp
    ; The frame is 8 bytes off a 16-byte boundary; align for the C ABI and
    ; chain a frame pointer so backtraces walk into the interrupted code.
    mov rbp, rsp
    and rsp, -16
    call trap_dispatch
    mov rsp, rbp
    pop r15
    pop r14
    pop r13
    pop r12
    pop r11
    pop r10
    pop r9
    pop r8
    pop rbp
    pop rdi
    pop rsi
    pop rdx
    pop rcx
    pop rbx
    pop rax
    add rsp, 16
    iretq

section .rodata
align 8
global trap_stubs
trap_stubs:
%assign v 0
%rep 256
    dq trap_stub_%+v
%assign v v + 1
%endrep
