/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Frame-pointer unwinding of kernel stacks, for call chains taken in NMI
 * context.  The kernel is built with frame pointers and without sibling-call
 * optimisation (see the Makefile), so each frame starts with the caller's
 * frame pointer followed by the return address into the caller.
 *
 * A chain holds only real callers.  A return address is taken only when it
 * lies in the kernel's text right after a call instruction that could have
 * made the call: a direct call to the start of the callee (the function
 * holding the newer address), or an indirect call.  The first frame is the
 * hard one: the interrupted function may have no frame yet (at its first
 * instruction, before a scheduled or shrink-wrapped prologue, at its ret,
 * or in a leaf with none), have pushed the caller's frame pointer without
 * making it its own, or be in its body.  Each of the three places of its
 * return address is checked, and the one the stack proves is taken: a
 * direct call to the function beats an indirect one; when no place, or
 * more than one equally, fits, the chain is the interrupted address alone
 * (a prefix of the truth, never a guessed frame).  A frame that fails a
 * check ends the chain.
 *
 * A sample must never fault, whatever the interrupted code did to its
 * stack: every word is checked to be 8-byte aligned and to lie wholly
 * inside one of the stacks the caller names before it is read, code bytes
 * to lie inside the text, and the walk only goes towards older frames.
 */

#ifndef ARCH_X86_UNWIND_H
#define ARCH_X86_UNWIND_H

#include <stdint.h>

/* A stack the walk may read: addresses lo (included) to hi (excluded). */
struct unwind_stack {
    uint64_t lo;
    uint64_t hi;
};

/* The function map's granules: 16 bytes. */
#define UNWIND_MAP_SHIFT        4

/*
 * A function map entry that names no start: a function starts inside the
 * granule (after its first byte), or none holds it.
 */
#define UNWIND_FUNC_MIXED       UINT32_MAX

/*
 * What a walk may read, and how it names functions: the stacks, the
 * kernel's text [text_lo, text_hi), and func_start(addr), the start of the
 * function holding addr (0 when unknown).  func_start is called in NMI
 * context: it takes no lock.
 *
 * func_map, when not NULL, names most functions without a call: for each
 * granule of 1 << UNWIND_MAP_SHIFT bytes of the text from text_lo (the
 * last one may be partial), the offset from text_lo of func_start() of
 * all of the granule's bytes in the text, or UNWIND_FUNC_MIXED.  It must
 * agree with func_start(), and is used only for a text shorter than
 * 2 GiB that starts on a granule (text_lo a multiple of its size).
 */
struct unwind_env {
    const struct unwind_stack *stacks;
    unsigned int nr_stacks;
    uint64_t text_lo;
    uint64_t text_hi;
    uint64_t (*func_start)(uint64_t addr);
    const uint32_t *func_map;
};

/*
 * The call chain of interrupted code (its rip, rsp and rbp): rip itself,
 * then its callers, newest first, each return address minus one so that
 * it names the call instruction (a call to a function that never returns
 * may be the last instruction of its caller).  Any context.  Returns the
 * number of addresses stored (at least 1 when max is not 0).
 */
unsigned int unwind_interrupted(const struct unwind_env *env, uint64_t rip,
                                uint64_t rsp, uint64_t fp, uint64_t *ips,
                                unsigned int max);

/*
 * Walk the frames from frame pointer fp, the frame of a function starting
 * at callee (0: unknown, then only an indirect call is taken for its
 * return), storing up to max addresses as unwind_interrupted() does.  Any
 * context.  Returns the number stored.
 */
unsigned int unwind_fp(const struct unwind_env *env, uint64_t fp,
                       uint64_t callee, uint64_t *ips, unsigned int max);

#endif /* ARCH_X86_UNWIND_H */
