/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The frame-pointer unwinder as it was before its walk was made shorter
 * (one range check per frame, the direct call in line), kept as the
 * reference unwind_test.c compares arch/x86/unwind.c with on random
 * stacks and code: ref_unwind_fp() and ref_unwind_interrupted() are
 * unwind_fp() and unwind_interrupted() of then.
 */

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/unwind.h"
#include "unwind_ref.h"

/* A frame: the saved frame pointer, then the return address. */
#define UNWIND_FRAME_SIZE       16

/* The longest call form: REX, 0xff, ModRM, SIB, disp32. */
#define UNWIND_CALL_MAX_LEN     7

#define UNWIND_OP_CALL_REL32    0xe8
#define UNWIND_OP_GROUP5        0xff    /* /2: call r/m64 */
#define UNWIND_OP_RET           0xc3

/*
 * What the bytes before a return address say of the call that pushed it,
 * weakest first: none (not a return address), an indirect call (any
 * callee), a direct call to the callee's start.
 */
enum unwind_call {
    UNWIND_CALL_NONE,
    UNWIND_CALL_INDIRECT,
    UNWIND_CALL_DIRECT,
};

/* The stack holding [addr, addr + size) with addr 8-byte aligned, or -1. */
static int
unwind_stack_find(const struct unwind_env *env, uint64_t addr, uint64_t size)
{
    if ((addr & 7) != 0) {
        return -1;
    }

    for (unsigned int i = 0; i < env->nr_stacks; i++) {
        const struct unwind_stack *s = &env->stacks[i];

        if (addr >= s->lo && addr < s->hi && s->hi - addr >= size) {
            return (int)i;
        }
    }

    return -1;
}

/* The word at addr, when inside a stack. */
static bool
unwind_read(const struct unwind_env *env, uint64_t addr, uint64_t *valuep)
{
    if (unwind_stack_find(env, addr, sizeof(uint64_t)) < 0) {
        return false;
    }

    *valuep = *(const uint64_t *)(uintptr_t)addr;
    return true;
}

static bool
unwind_in_text(const struct unwind_env *env, uint64_t addr)
{
    return addr >= env->text_lo && addr < env->text_hi;
}

static uint8_t
unwind_code(uint64_t addr)
{
    return *(const uint8_t *)(uintptr_t)addr;
}

/*
 * The length of the operand of a call r/m64 (0xff /2) whose ModRM byte is
 * at addr, ModRM included; 0 when the byte is not one (SDM vol. 2A, 2.1.5).
 * The caller has checked that the bytes up to the return address are text.
 */
static unsigned int
unwind_call_operand_len(uint64_t addr)
{
    uint8_t modrm = unwind_code(addr);
    unsigned int mod = modrm >> 6, rm = modrm & 7, len = 1;

    if (((modrm >> 3) & 7) != 2) {
        return 0;
    }

    if (mod == 3) {
        return len;
    }

    if (rm == 4) {
        len++;                                  /* SIB */

        if (mod == 0 && (unwind_code(addr + 1) & 7) == 5) {
            len += 4;                           /* no base: disp32 */
        }
    } else if (mod == 0 && rm == 5) {
        len += 4;                               /* RIP-relative */
    }

    if (mod == 1) {
        len += 1;
    } else if (mod == 2) {
        len += 4;
    }

    return len;
}

/* What the code before ret says of it as a return from a call to callee. */
static enum unwind_call
unwind_call_before(const struct unwind_env *env, uint64_t ret,
                   uint64_t callee)
{
    if (ret == 0 || !unwind_in_text(env, ret - 1)) {
        return UNWIND_CALL_NONE;
    }

    if (callee != 0 && ret - 5 >= env->text_lo
        && unwind_code(ret - 5) == UNWIND_OP_CALL_REL32) {
        uint32_t rel = 0;

        for (unsigned int i = 0; i < 4; i++) {
            rel |= (uint32_t)unwind_code(ret - 4 + i) << (8 * i);
        }

        if (ret + (uint64_t)(int64_t)(int32_t)rel == callee) {
            return UNWIND_CALL_DIRECT;
        }
    }

    /* An optional REX prefix comes before the opcode: it changes no end. */
    for (unsigned int len = 2; len < UNWIND_CALL_MAX_LEN; len++) {
        uint64_t op = ret - len;

        if (op < env->text_lo) {
            break;
        }

        if (unwind_code(op) == UNWIND_OP_GROUP5
            && unwind_call_operand_len(op + 1) == len - 1) {
            return UNWIND_CALL_INDIRECT;
        }
    }

    return UNWIND_CALL_NONE;
}

static uint64_t
unwind_func_start(const struct unwind_env *env, uint64_t addr)
{
    return unwind_in_text(env, addr) ? env->func_start(addr) : 0;
}

/*
 * The walk from frame fp of the function starting at callee.  The frame
 * must lie above floor when on floor_stack (the place the newer return
 * address came from): within a stack, older frames are at higher
 * addresses, and a chain that does not move up is corrupt, or loops.
 * Moving to another stack (out of an interrupt stack) is allowed; the
 * depth bound ends any cycle between stacks.
 */
static unsigned int
unwind_walk(const struct unwind_env *env, uint64_t fp, uint64_t floor,
            int floor_stack, uint64_t callee, uint64_t *ips,
            unsigned int max)
{
    unsigned int n = 0;

    while (n < max) {
        int stack = unwind_stack_find(env, fp, UNWIND_FRAME_SIZE);
        const uint64_t *frame = (const uint64_t *)(uintptr_t)fp;

        if (stack < 0 || (stack == floor_stack && fp <= floor)
            || unwind_call_before(env, frame[1], callee) == UNWIND_CALL_NONE) {
            break;
        }

        ips[n++] = frame[1] - 1;
        callee = unwind_func_start(env, frame[1] - 1);
        floor = fp;
        floor_stack = stack;
        fp = frame[0];
    }

    return n;
}

unsigned int
ref_unwind_fp(const struct unwind_env *env, uint64_t fp, uint64_t callee,
          uint64_t *ips, unsigned int max)
{
    return unwind_walk(env, fp, 0, -1, callee, ips, max);
}

/*
 * A place the interrupted function's return address may be: the slot
 * holding it and the caller's frame pointer then.
 */
struct unwind_guess {
    uint64_t slot;
    uint64_t next_fp;
    uint64_t ret;
    enum unwind_call call;
};

/*
 * The best of the places tried so far: the strongest call wins, and a
 * second place as strong as the best leaves none (nr_best 2).
 */
static void
unwind_guess_try(const struct unwind_env *env, uint64_t slot,
                 uint64_t next_fp, uint64_t func, struct unwind_guess *best,
                 unsigned int *nr_bestp)
{
    struct unwind_guess g = { .slot = slot, .next_fp = next_fp };

    if (!unwind_read(env, slot, &g.ret)) {
        return;
    }

    g.call = unwind_call_before(env, g.ret, func);

    if (g.call == UNWIND_CALL_NONE || g.call < best->call) {
        return;
    }

    if (g.call == best->call) {
        (*nr_bestp)++;
        return;
    }

    *best = g;
    *nr_bestp = 1;
}

unsigned int
ref_unwind_interrupted(const struct unwind_env *env, uint64_t rip, uint64_t rsp,
                   uint64_t fp, uint64_t *ips, unsigned int max)
{
    struct unwind_guess best = { .call = UNWIND_CALL_NONE };
    unsigned int nr_best = 0;
    uint64_t func, saved;

    if (max == 0) {
        return 0;
    }

    ips[0] = rip;
    func = unwind_func_start(env, rip);

    if (max == 1 || func == 0 || rip < func) {
        return 1;
    }

    /*
     * No frame of its own yet, or none any more: the return address on top
     * of the stack, fp the caller's frame.  At the first instruction or a
     * ret, that is all it can be.
     */
    unwind_guess_try(env, rsp, fp, func, &best, &nr_best);

    if (rip != func && unwind_code(rip) != UNWIND_OP_RET) {
        /* The caller's frame pointer pushed, fp not yet moved. */
        if (unwind_read(env, rsp, &saved) && saved == fp) {
            unwind_guess_try(env, rsp + 8, fp, func, &best, &nr_best);
        }

        /* Its own frame at fp. */
        if (fp >= rsp && unwind_read(env, fp, &saved)) {
            unwind_guess_try(env, fp + 8, saved, func, &best, &nr_best);
        }
    }

    if (nr_best != 1) {
        return 1;
    }

    ips[1] = best.ret - 1;
    return 2 + unwind_walk(env, best.next_fp, best.slot,
                           unwind_stack_find(env, best.slot, 8),
                           unwind_func_start(env, best.ret - 1), &ips[2],
                           max - 2);
}
