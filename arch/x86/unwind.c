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

/* The prologue that sets a frame up: push %rbp; mov %rsp, %rbp. */
static const uint8_t unwind_prologue[] = { 0x55, 0x48, 0x89, 0xe5 };

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

/* The word at addr, when inside a stack. */
static bool
unwind_read(uint64_t addr, const struct unwind_stack *stacks,
            unsigned int nr_stacks, uint64_t *valuep)
{
    for (unsigned int i = 0; i < nr_stacks; i++) {
        if ((addr & 7) == 0 && addr >= stacks[i].lo && addr < stacks[i].hi
            && stacks[i].hi - addr >= sizeof(uint64_t)) {
            *valuep = *(const uint64_t *)(uintptr_t)addr;
            return true;
        }
    }

    return false;
}

unsigned int
unwind_interrupted(uint64_t rip, uint64_t rsp, uint64_t fp, uint64_t func,
                   const struct unwind_stack *stacks, unsigned int nr_stacks,
                   uint64_t *ips, unsigned int max)
{
    const uint8_t *code = (const uint8_t *)(uintptr_t)func;
    uint64_t ret, top = 0;
    unsigned int n;
    bool framed;

    if (max == 0) {
        return 0;
    }

    ips[0] = rip;
    n = 1;

    if (func != 0 && rip >= func) {
        framed = true;

        for (unsigned int i = 0; i < sizeof(unwind_prologue); i++) {
            framed &= (code[i] == unwind_prologue[i]);
        }

        /*
         * Where the return address is while fp is still the caller's: on
         * top of the stack in a frameless function or before the push,
         * under the pushed rbp after it.
         */
        if (!framed || rip == func) {
            top = rsp;
        } else if (rip == func + 1) {
            top = rsp + 8;
        }
    }

    if (top != 0 && n < max && unwind_read(top, stacks, nr_stacks, &ret)
        && ret != 0) {
        ips[n++] = ret - 1;
    }

    return n + unwind_fp(fp, stacks, nr_stacks, &ips[n], max - n);
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
