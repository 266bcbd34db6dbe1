; Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
;
;
; Thread context switch.
;
; void thread_switch_context(uint64_t *prev_sp, uint64_t next_sp)
;   Saves the callee-saved registers on the current stack, stores the stack
;   pointer in *prev_sp, switches to next_sp and restores the registers
;   saved there.  Everything else is saved by the C caller (System V ABI).
;
; A new thread's stack is prepared by thread.c to look like a switched-out
; thread whose return address is thread_start_entry, with RBX = the C entry
; function to call (thread_start).
;
; RFLAGS carry over from the thread switched out, but for TF, which belongs
; to the CPU (arch/x86/step.h): a switch from an interrupt handler (a
; preemption) carries the handler's TF, clear, so when single-stepping is
; in use step_cpu_switched() sets it as the CPU's users say.  It runs on
; the new stack, which is 8 bytes off a 16-byte boundary there, as at any
; call's entry; only registers the caller saved are clobbered.

bits 64
section .text

extern step_enabled
extern step_cpu_switched

global thread_switch_context
thread_switch_context:
    push rbp
    push rbx
    push r12
    push r13
    push r14
    push r15
    mov [rdi], rsp
    mov rsp, rsi
    cmp byte [rel step_enabled], 0
    jne .step
.restore:
    pop r15
    pop r14
    pop r13
    pop r12
    pop rbx
    pop rbp
    ret
.step:
    sub rsp, 8
    call step_cpu_switched
    add rsp, 8
    jmp .restore

global thread_start_entry
thread_start_entry:
    xor rbp, rbp            ; end of the backtrace chain
    call rbx
    ud2                     ; thread_start never returns
