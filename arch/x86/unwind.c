/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Frame-pointer unwinding: see arch/x86/unwind.h.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/unwind.h"

/* A frame: the saved frame pointer, then the return address. */
#define UNWIND_FRAME_SIZE       16

/* The longest call form: REX, 0xff, ModRM, SIB, disp32. */
#define UNWIND_CALL_MAX_LEN     7

#define UNWIND_OP_CALL_REL32    0xe8
#define UNWIND_OP_GROUP5        0xff    /* /2: call r/m64 */
#define UNWIND_OP_RET           0xc3

/* The longest text the function map is used for (unwind_chain_check()). */
#define UNWIND_MAP_TEXT_MAX     (1ULL << 31)

#define UNWIND_MAP_MASK         ((1ULL << UNWIND_MAP_SHIFT) - 1)

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

/* Whether the code before ret is an indirect call, a call r/m64 of any form. */
static enum unwind_call
unwind_call_indirect_before(const struct unwind_env *env, uint64_t ret)
{
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

/* What the code before ret says of it as a return from a call to callee. */
static enum unwind_call __attribute__((noinline))
unwind_call_before(const struct unwind_env *env, uint64_t ret,
                   uint64_t callee)
{
    if (ret == 0 || !unwind_in_text(env, ret - 1)) {
        return UNWIND_CALL_NONE;
    }

    if (callee != 0 && ret - 5 >= env->text_lo
        && unwind_code(ret - 5) == UNWIND_OP_CALL_REL32) {
        int32_t rel;

        /* One load (unaligned: x86 allows it). */
        __builtin_memcpy(&rel, (const void *)(uintptr_t)(ret - 4),
                         sizeof(rel));

        if (ret + (uint64_t)(int64_t)rel == callee) {
            return UNWIND_CALL_DIRECT;
        }
    }

    return unwind_call_indirect_before(env, ret);
}

static uint64_t
unwind_func_start(const struct unwind_env *env, uint64_t addr)
{
    return unwind_in_text(env, addr) ? env->func_start(addr) : 0;
}

/* The highest frame pointer a whole frame of stack fits above, or 0. */
static uint64_t
unwind_stack_top(const struct unwind_env *env, int stack)
{
    const struct unwind_stack *s = &env->stacks[stack];

    return (s->hi - s->lo >= UNWIND_FRAME_SIZE) ? s->hi - UNWIND_FRAME_SIZE
                                                : 0;
}

/*
 * x rotated right by 3 bits: an 8-byte aligned address divided by 8, any
 * other address above every quotient, so that one range check of it also
 * checks the alignment.
 */
static inline uint64_t
unwind_ror3(uint64_t x)
{
    return (x >> 3) | (x << 61);
}

static inline uint64_t
unwind_rol3(uint64_t x)
{
    return (x << 3) | (x >> 61);
}

/*
 * The frame pointers a walk takes on a stack, rotated (unwind_ror3()):
 * those at lo (not 0) and above that a whole frame fits above, [*lop,
 * *hip], none when no frame fits (*hip 0).
 */
static void
unwind_stack_range(const struct unwind_env *env, int stack, uint64_t lo,
                   uint64_t *lop, uint64_t *hip)
{
    *lop = (lo >> 3) + ((lo & 7) != 0);
    *hip = unwind_stack_top(env, stack) >> 3;
}

/*
 * The stack a frame at fp lies on when it is not the one whose rotated
 * frame pointers end at hi, or -1.  Out of line: a walk seldom changes
 * stacks.
 */
static int __attribute__((noinline))
unwind_stack_next(const struct unwind_env *env, uint64_t fp, uint64_t hi)
{
    int s = unwind_stack_find(env, fp, UNWIND_FRAME_SIZE);

    return (s < 0 || unwind_stack_top(env, s) >> 3 == hi) ? -1 : s;
}

/*
 * The function start the common frame check compares a call's target
 * with for the frame above a return into the text at ret, as an offset
 * from text_lo: by the map, UNWIND_FUNC_MIXED where the map does not say.
 */
static uint64_t
unwind_map_callee(const struct unwind_env *env, uint64_t ret)
{
    if (env->func_map == NULL) {
        return UNWIND_FUNC_MIXED;
    }

    return env->func_map[(ret - 1 - env->text_lo) >> UNWIND_MAP_SHIFT];
}

/*
 * The general checks of a return to ret the common one does not take:
 * the callee is callee for the first frame (first), else the function
 * holding prev - 1, the return address before, named only where a rel32
 * call ends at ret.
 */
static enum unwind_call
unwind_chain_call(const struct unwind_env *env, uint64_t ret, uint64_t callee,
                  bool first, uint64_t prev)
{
    uint64_t text_len = env->text_hi - env->text_lo;

    if (!first) {
        callee = 0;

        if (text_len > 4 && ret - 5 - env->text_lo < text_len - 4
            && unwind_code(ret - 5) == UNWIND_OP_CALL_REL32) {
            callee = unwind_func_start(env, prev - 1);
        }
    }

    return unwind_call_before(env, ret, callee);
}

/*
 * The first of the return addresses rets[k] to rets[nr - 1] that is not
 * the common frame, or nr: a return from a direct call to the callee (an
 * offset from text_lo in *wantp, updated), the five bytes of the call
 * inside the text, the next callee read from the map.  The callee is
 * UNWIND_FUNC_MIXED where the map does not name it or it is unknown: with
 * a text shorter than 2 GiB, a rel32 call in it reaches offsets -2 GiB to
 * 4 GiB - 2 (64-bit), so that no frame passes.  No call: the loop keeps
 * all it needs in registers.
 */
static inline __attribute__((always_inline)) unsigned int
unwind_chain_direct(const struct unwind_env *env, const uint64_t *rets,
                    unsigned int k, unsigned int nr, uint64_t *wantp)
{
    const uint64_t text_lo = env->text_lo;
    const uint64_t text_len = env->text_hi - text_lo;
    const uint32_t *map = env->func_map;
    /* ret - (text_lo + 5) below it: ret - 5 to ret - 1 in the text. */
    const uint64_t call_span = (map != NULL && text_len > 4
                                && text_len < UNWIND_MAP_TEXT_MAX
                                && (text_lo & UNWIND_MAP_MASK) == 0)
                               ? text_len - 4 : 0;
    /* Minus the lowest return address a call in the text pushes. */
    const uint64_t minus_base = -(text_lo + 5);
    const uint64_t *p = &rets[k], *end = &rets[nr];
    uint64_t want = *wantp;

    for (; p != end; p++) {
        uint64_t ret = *p, at = ret + minus_base;     /* of the call */
        int32_t rel;

        if (at >= call_span || unwind_code(ret - 5) != UNWIND_OP_CALL_REL32) {
            break;
        }

        /* One load (unaligned: x86 allows it). */
        __builtin_memcpy(&rel, (const void *)(uintptr_t)(ret - 4),
                         sizeof(rel));

        if (at + 5 + (uint64_t)(int64_t)rel != want) {
            break;
        }

        /* The function holding ret - 1. */
        want = map[(at + 4) >> UNWIND_MAP_SHIFT];
    }

    *wantp = want;
    return (unsigned int)(p - rets);
}

/*
 * How many of the nr return addresses at rets, newest first, the first
 * one from a function starting at callee (0: unknown, then only an
 * indirect call is taken for it), are real callers: the chain ends at the
 * first that is not.  Reads only the text and the map.  A frame the
 * common check (unwind_chain_direct()) does not take goes through the
 * general ones: a call whose callee the map does not name, an indirect
 * call, a call outside the map.
 */
static unsigned int
unwind_chain_check(const struct unwind_env *env, uint64_t callee,
                   const uint64_t *rets, unsigned int nr)
{
    uint64_t want = (callee != 0) ? callee - env->text_lo : UNWIND_FUNC_MIXED;
    unsigned int k = 0;

    for (;;) {
        k = unwind_chain_direct(env, rets, k, nr, &want);

        if (k == nr) {
            return nr;
        }

        if (unwind_chain_call(env, rets[k], callee, k == 0,
                              (k == 0) ? 0 : rets[k - 1])
            == UNWIND_CALL_NONE) {
            return k;
        }

        want = unwind_map_callee(env, rets[k]);
        k++;
    }
}

/*
 * The walk from frame fp, storing the return address of each frame at
 * rets, up to max, unchecked: the overflow NMI's, one range check per
 * frame.  The frame must lie above floor when on floor_stack (the place
 * the newer return address came from): within a stack, older frames are
 * at higher addresses, and a chain that does not move up is corrupt, or
 * loops.  Moving to another stack (out of an interrupt stack) is allowed;
 * the depth bound ends any cycle between stacks.
 *
 * The range check is of the frame pointer rotated: 8-byte aligned, above
 * the newer frame, a whole frame below the end of the stack being
 * walked.  Out of line, so that every caller runs these very
 * instructions (the bench measures them through unwind_fp_raw()).
 */
static unsigned int __attribute__((noinline))
unwind_walk_raw(const struct unwind_env *env, uint64_t fp, uint64_t floor,
                int floor_stack, uint64_t *rets, unsigned int max)
{
    uint64_t lo = 1, hi = 0, *end = rets + max;
    /* The next address goes to end[i]: the chain is full at 0. */
    intptr_t i = -(intptr_t)max;

    /* Stacks are told apart by their tops (they do not overlap). */
    if (floor_stack >= 0) {
        unwind_stack_range(env, floor_stack, floor + 8, &lo, &hi);
    }

    fp = unwind_ror3(fp);

    while (i < 0) {
        int s;

        /* The frames on this stack, each above the one before. */
        while (fp >= lo && fp <= hi) {
            const uint64_t *frame = (const uint64_t *)(uintptr_t)(fp << 3);

            end[i] = frame[1];
            lo = fp + 1;
            fp = unwind_ror3(frame[0]);

            if (++i == 0) {
                return max;
            }
        }

        /* Off this stack: onto another one, never back to it. */
        s = unwind_stack_next(env, unwind_rol3(fp), hi);

        if (s < 0) {
            break;
        }

        unwind_stack_range(env, s, env->stacks[s].lo, &lo, &hi);
    }

    return (unsigned int)(i + (intptr_t)max);
}

unsigned int
unwind_fp_raw(const struct unwind_env *env, uint64_t fp, uint64_t *rets,
              unsigned int max)
{
    return unwind_walk_raw(env, fp, 0, -1, rets, max);
}

unsigned int
unwind_fp(const struct unwind_env *env, uint64_t fp, uint64_t callee,
          uint64_t *ips, unsigned int max)
{
    unsigned int nr = unwind_walk_raw(env, fp, 0, -1, ips, max);

    nr = unwind_chain_check(env, callee, ips, nr);

    for (unsigned int k = 0; k < nr; k++) {
        ips[k]--;
    }

    return nr;
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
unwind_interrupted_raw(const struct unwind_env *env, uint64_t rip,
                       uint64_t rsp, uint64_t fp, uint64_t *ips,
                       unsigned int max)
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

    _Static_assert(UNWIND_INTERRUPTED_PROVEN == 2,
                   "the interrupted address and its caller's are proven");
    ips[1] = best.ret - 1;
    return 2 + unwind_walk_raw(env, best.next_fp, best.slot,
                               unwind_stack_find(env, best.slot, 8), &ips[2],
                               max - 2);
}

unsigned int
unwind_interrupted_check(const struct unwind_env *env, const uint64_t *ips,
                         unsigned int nr)
{
    if (nr <= UNWIND_INTERRUPTED_PROVEN) {
        return nr;
    }

    /* ips[1] is the return address minus one, in the text. */
    return UNWIND_INTERRUPTED_PROVEN
           + unwind_chain_check(env, unwind_func_start(env, ips[1]),
                                &ips[UNWIND_INTERRUPTED_PROVEN],
                                nr - UNWIND_INTERRUPTED_PROVEN);
}

unsigned int
unwind_interrupted(const struct unwind_env *env, uint64_t rip, uint64_t rsp,
                   uint64_t fp, uint64_t *ips, unsigned int max)
{
    unsigned int nr = unwind_interrupted_raw(env, rip, rsp, fp, ips, max);

    nr = unwind_interrupted_check(env, ips, nr);

    for (unsigned int k = 0; k < nr; k++) {
        ips[k] = unwind_interrupted_ip(ips, k);
    }

    return nr;
}
