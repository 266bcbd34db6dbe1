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
