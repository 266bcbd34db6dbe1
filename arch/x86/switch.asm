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

bits 64
section .text

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
    pop r15
    pop r14
    pop r13
    pop r12
    pop rbx
    pop rbp
    ret

global thread_start_entry
thread_start_entry:
    xor rbp, rbp            ; end of the backtrace chain
    call rbx
    ud2                     ; thread_start never returns
