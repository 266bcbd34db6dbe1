/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Frame-pointer unwinding of kernel stacks, for call chains taken in NMI
 * context.  The kernel is built with frame pointers and without sibling-call
 * optimisation (see the Makefile), so each frame starts with the caller's
 * frame pointer followed by the return address into the caller.
 *
 * A sample must never fault, whatever the interrupted code did to its
 * stack: every frame is checked to be 8-byte aligned and to lie wholly
 * inside one of the stacks the caller names before it is read, and the
 * walk only goes towards older frames.  A frame that fails a check ends
 * the chain.
 */

#ifndef ARCH_X86_UNWIND_H
#define ARCH_X86_UNWIND_H

#include <stdint.h>

/* A stack the walk may read: addresses lo (included) to hi (excluded). */
struct unwind_stack {
    uint64_t lo;
    uint64_t hi;
};

/*
 * The call chain of interrupted code: rip itself, then its callers.  The
 * interrupted function may have no frame of its own (a leaf that uses no
 * stack: the compiler sets none up even with frame pointers) or be in its
 * prologue; then its caller's return address is on top of the stack (rsp),
 * not in a frame.  func is the start of the function holding rip (0 when
 * unknown): its first instructions tell which case it is.  Reads code only
 * at func, and stack only inside the stacks given.  Returns the number of
 * addresses stored (at least 1 when max is not 0).
 */
unsigned int unwind_interrupted(uint64_t rip, uint64_t rsp, uint64_t fp,
                                uint64_t func,
                                const struct unwind_stack *stacks,
                                unsigned int nr_stacks, uint64_t *ips,
                                unsigned int max);

/*
 * Walk the chain from frame pointer fp, storing up to max return
 * addresses, newest first, each minus one so that it names the call
 * instruction (a call to a function that never returns may be the last
 * instruction of its caller).  Any context; reads only inside the
 * nr_stacks stacks.  Returns the number stored.
 */
unsigned int unwind_fp(uint64_t fp, const struct unwind_stack *stacks,
                       unsigned int nr_stacks, uint64_t *ips,
                       unsigned int max);

#endif /* ARCH_X86_UNWIND_H */
