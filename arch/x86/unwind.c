/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Frame-pointer unwinding: see arch/x86/unwind.h.
 */

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/unwind.h"

/* A frame: the saved frame pointer, then the return address. */
#define UNWIND_FRAME_SIZE       16

/* The stack holding the whole frame at fp, or -1. */
static int
unwind_stack_of(uint64_t fp, const struct unwind_stack *stacks,
                unsigned int nr_stacks)
{
    for (unsigned int i = 0; i < nr_stacks; i++) {
        if (fp >= stacks[i].lo && fp < stacks[i].hi
            && stacks[i].hi - fp >= UNWIND_FRAME_SIZE) {
            return (int)i;
        }
    }

    return -1;
}

unsigned int
unwind_fp(uint64_t fp, const struct unwind_stack *stacks,
          unsigned int nr_stacks, uint64_t *ips, unsigned int max)
{
    uint64_t prev_fp = 0;
    int prev_stack = -1;
    unsigned int n = 0;

    while (n < max && (fp & 7) == 0) {
        const uint64_t *frame = (const uint64_t *)(uintptr_t)fp;
        int stack = unwind_stack_of(fp, stacks, nr_stacks);

        if (stack < 0) {
            break;
        }

        /*
         * Within a stack, older frames are at higher addresses: a chain
         * that does not move up is corrupt, or loops.  Moving to another
         * stack (out of an interrupt stack) is allowed; the depth bound
         * ends any cycle between stacks.
         */
        if (stack == prev_stack && fp <= prev_fp) {
            break;
        }

        if (frame[1] == 0) {
            break;
        }

        ips[n++] = frame[1] - 1;
        prev_fp = fp;
        prev_stack = stack;
        fp = frame[0];
    }

    return n;
}
