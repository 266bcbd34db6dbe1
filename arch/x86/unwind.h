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
 *
 * The walk and the proof of each caller are apart.  The raw walk
 * (unwind_interrupted_raw(), unwind_fp_raw()) does only what memory
 * safety needs: one range check per frame against the stack being
 * walked, and it stores each frame's return address unchecked.  Whether
 * those are real callers depends only on the addresses stored and the
 * kernel's text and function map, which never change: the check
 * (unwind_interrupted_check()) can run later, once, anywhere.  The
 * overflow NMI stores raw chains into samples, and the sample buffer's
 * reader checks them as each record leaves the ring
 * (perfmon_sbuf_read()), so that no reader ever sees a raw chain.
 * unwind_interrupted() and unwind_fp() do both at once.
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
 * number of addresses stored (at least 1 when max is not 0); the entries
 * past it, up to max, may have been written.
 */
unsigned int unwind_interrupted(const struct unwind_env *env, uint64_t rip,
                                uint64_t rsp, uint64_t fp, uint64_t *ips,
                                unsigned int max);

/*
 * The first UNWIND_INTERRUPTED_PROVEN entries of a raw chain are final:
 * the interrupted address, and its caller's, which the stack and the code
 * proved as unwind_interrupted() proves it (the frame setup it stands in
 * is guessed there, and nowhere else).
 */
#define UNWIND_INTERRUPTED_PROVEN       2

/*
 * unwind_interrupted() without the check of the callers past the first:
 * from entry UNWIND_INTERRUPTED_PROVEN on, the raw return addresses of
 * the frames walked, as they are, of which only a prefix may be real
 * callers.  Any context: the overflow NMI's walk.  Returns how many
 * entries it stored.
 */
unsigned int unwind_interrupted_raw(const struct unwind_env *env,
                                    uint64_t rip, uint64_t rsp, uint64_t fp,
                                    uint64_t *ips, unsigned int max);

/*
 * How many of the nr entries unwind_interrupted_raw() stored at ips make
 * the chain unwind_interrupted() would have given (a prefix: the first
 * frame that is no real caller ends it).  Reads only the addresses, the
 * text and the map (env's stacks are not used).  Any context.
 */
unsigned int unwind_interrupted_check(const struct unwind_env *env,
                                      const uint64_t *ips, unsigned int nr);

/*
 * Entry k of the chain unwind_interrupted() gives, from the raw one at
 * ips whose first k + 1 entries unwind_interrupted_check() kept.
 */
static inline uint64_t
unwind_interrupted_ip(const uint64_t *ips, unsigned int k)
{
    return (k < UNWIND_INTERRUPTED_PROVEN) ? ips[k] : ips[k] - 1;
}

/*
 * Walk the frames from frame pointer fp, the frame of a function starting
 * at callee (0: unknown, then only an indirect call is taken for its
 * return), storing up to max addresses as unwind_interrupted() does.  Any
 * context.  Returns the number stored; the entries past it, up to max,
 * may have been written.
 */
unsigned int unwind_fp(const struct unwind_env *env, uint64_t fp,
                       uint64_t callee, uint64_t *ips, unsigned int max);

/*
 * The raw walk of unwind_fp(): the return addresses of the frames from
 * fp, up to max, unchecked, with the very instructions the overflow NMI
 * runs per frame (for the bench).  Any context.  Returns how many.
 */
unsigned int unwind_fp_raw(const struct unwind_env *env, uint64_t fp,
                           uint64_t *rets, unsigned int max);

#endif /* ARCH_X86_UNWIND_H */
