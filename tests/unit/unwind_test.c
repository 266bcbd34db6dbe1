/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of arch/x86/unwind.c on fabricated stacks and code: a good chain
 * comes out newest first with each return address minus one; the walk
 * stops at a return address that follows no call (or a direct call to
 * another function), the depth limit, a misaligned frame pointer, one
 * outside the stacks or straddling a stack's end, and a chain that loops
 * or goes back down; it moves from an interrupt stack to a thread stack.
 * An interrupted function is found wherever it stands in its frame setup
 * (no frame, frame pointer pushed, own frame; prologues scheduled as gcc
 * does), and where the stack cannot tell, the chain is its address alone.
 * Nothing outside the stacks is ever read (the memory around them is
 * poisoned, and would show in the chain if it were).  With a function
 * map, a chain of direct calls is walked without naming a function
 * (func_start() is not called), a map entry that does not tell sends the
 * frame through the general checks, and every chain is the one the
 * reference gives, whatever the map leaves untold and however the
 * stacks' ends are aligned.  The raw walk the overflow NMI makes keeps
 * the rules of memory and none of the callers, and the check the sample
 * reader runs on its chains later, the stacks gone, gives the reference's
 * chain again, cut where the reference stops.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "arch/x86/unwind.h"
#include "unwind_ref.h"

#define POISON      0xdeadbeefdeadbeefULL

/* Two stacks with poisoned guard words around them. */
static uint64_t mem[3][64];
static struct unwind_stack stacks[2];

/*
 * The text: four functions of 64 bytes, a at 0, b, c, d, each calling as
 * the chain d -> a -> b -> c does (d calls a through a pointer).
 */
#define FN_SIZE     64
#define FN_A        0
#define FN_B        64
#define FN_C        128
#define FN_D        192

static uint8_t text[4 * FN_SIZE] __attribute__((aligned(16)));
static struct unwind_env env;

/* The text's function map (16-byte granules): every one tells. */
static uint32_t fmap[sizeof(text) >> UNWIND_MAP_SHIFT];

/* How many times the walk named a function (fake_func_start()). */
static unsigned int nr_func_start;

static uint64_t
addr(unsigned int s, unsigned int word)
{
    return (uint64_t)(uintptr_t)&mem[s][word];
}

/* An address in the text, or past its end: integer arithmetic, no index. */
static uint64_t
code(unsigned int offset)
{
    return (uint64_t)(uintptr_t)text + offset;
}

static uint64_t
fake_func_start(uint64_t a)
{
    nr_func_start++;
    return code((unsigned int)(a - code(0)) / FN_SIZE * FN_SIZE);
}

/* The map of the fixture's functions, as tools/gensyms makes one. */
static void
fmap_setup(void)
{
    for (unsigned int g = 0; g < sizeof(fmap) / sizeof(fmap[0]); g++) {
        fmap[g] = (g << UNWIND_MAP_SHIFT) / FN_SIZE * FN_SIZE;
    }
}

static void
put(unsigned int offset, const uint8_t *bytes, size_t size)
{
    memcpy(&text[offset], bytes, size);
}

/* call rel32 at offset, to target. */
static void
put_call(unsigned int offset, unsigned int target)
{
    int32_t rel = (int32_t)target - (int32_t)(offset + 5);

    text[offset] = 0xe8;
    memcpy(&text[offset + 1], &rel, sizeof(rel));
}

/* Return addresses: after each call. */
#define RET_A_B         (FN_A + 21)     /* call b (direct) */
#define RET_A_PTR       (FN_A + 34)     /* call *%rax */
#define RET_A_SIB       (FN_A + 45)     /* call *0x8(%r12) */
#define RET_A_RIP       (FN_A + 54)     /* call *disp32(%rip) */
#define RET_B_C         (FN_B + 21)     /* call c (direct) */
#define RET_D_C         (FN_D + 21)     /* call c (direct) */
#define RET_D_PTR       (FN_D + 34)     /* call *%rax: to a */
#define B_BODY          (FN_B + 30)     /* a nop in b's body */
#define B_RET           (FN_B + 40)     /* b's ret */

static void
text_setup(void)
{
    static const uint8_t prologue[] = { 0x55, 0x48, 0x89, 0xe5 };
    /* push %rbp; mov $1,%ecx; mov %rsp,%rbp: scheduled as gcc does. */
    static const uint8_t scheduled[] = { 0x55, 0xb9, 0x01, 0x00, 0x00, 0x00,
                                         0x48, 0x89, 0xe5 };
    static const uint8_t leaf[] = { 0x31, 0xc0, 0x90, 0xc3 };
    static const uint8_t call_reg[] = { 0xff, 0xd0 };
    static const uint8_t call_sib[] = { 0x41, 0xff, 0x54, 0x24, 0x08 };
    static const uint8_t call_rip[] = { 0xff, 0x15, 0x10, 0x20, 0x00, 0x00 };

    memset(text, 0xcc, sizeof(text));
    put(FN_A, prologue, sizeof(prologue));
    put_call(FN_A + 16, FN_B);
    put(FN_A + 32, call_reg, sizeof(call_reg));
    put(FN_A + 40, call_sib, sizeof(call_sib));
    put(FN_A + 48, call_rip, sizeof(call_rip));
    put(FN_B, scheduled, sizeof(scheduled));
    put_call(FN_B + 16, FN_C);
    text[B_BODY] = 0x90;
    text[B_RET] = 0xc3;
    put(FN_C, leaf, sizeof(leaf));
    put(FN_D, prologue, sizeof(prologue));
    put_call(FN_D + 16, FN_C);
    put(FN_D + 32, call_reg, sizeof(call_reg));
}

static void
setup(void)
{
    for (unsigned int s = 0; s < 3; s++) {
        for (unsigned int w = 0; w < 64; w++) {
            mem[s][w] = POISON;
        }
    }

    /* Stack 0 is mem[0][8..56), stack 1 mem[1][8..56). */
    stacks[0] = (struct unwind_stack){ addr(0, 8), addr(0, 56) };
    stacks[1] = (struct unwind_stack){ addr(1, 8), addr(1, 56) };
    text_setup();
    fmap_setup();
    nr_func_start = 0;
    env = (struct unwind_env){
        .stacks = stacks,
        .nr_stacks = 1,
        .text_lo = code(0),
        .text_hi = code(sizeof(text)),
        .func_start = fake_func_start,
    };
}

/* A frame at word w of stack s: caller's frame pointer, return address. */
static void
frame(unsigned int s, unsigned int w, uint64_t next_fp, uint64_t ret)
{
    mem[s][w] = next_fp;
    mem[s][w + 1] = ret;
}

/* The frames of d -> a -> b, fp at b's: the walk b's frame starts. */
static void
test_good_chain(void **state)
{
    uint64_t ips[8];

    (void)state;
    setup();
    frame(0, 10, addr(0, 20), code(RET_A_B));
    frame(0, 20, addr(0, 30), code(RET_D_PTR));
    frame(0, 30, 0, 0);
    assert_int_equal(unwind_fp(&env, addr(0, 10), code(FN_B), ips, 8), 2);
    assert_true(ips[0] == code(RET_A_B) - 1);
    assert_true(ips[1] == code(RET_D_PTR) - 1);

    /* Without knowing the callee, a direct call is not taken. */
    assert_int_equal(unwind_fp(&env, addr(0, 10), 0, ips, 8), 0);
}

/*
 * Each form of call: direct to the callee (to another function it is no
 * return), through a register, a SIB operand with REX, RIP-relative.
 */
static void
test_call_forms(void **state)
{
    static const unsigned int indirect[] = { RET_A_PTR, RET_A_SIB,
                                             RET_A_RIP, RET_D_PTR };
    uint64_t ips[8];

    (void)state;
    setup();

    for (unsigned int i = 0; i < 4; i++) {
        frame(0, 10, 0, code(indirect[i]));
        assert_int_equal(unwind_fp(&env, addr(0, 10), code(FN_C), ips, 8), 1);
        assert_true(ips[0] == code(indirect[i]) - 1);
    }

    frame(0, 10, 0, code(RET_B_C));
    assert_int_equal(unwind_fp(&env, addr(0, 10), code(FN_C), ips, 8), 1);
    assert_int_equal(unwind_fp(&env, addr(0, 10), code(FN_A), ips, 8), 0);
}

/*
 * What follows no call is no return address: zero, a word in the middle
 * of an instruction, an address outside the text.
 */
static void
test_ends_at_non_return(void **state)
{
    uint64_t ips[8];

    (void)state;
    setup();
    frame(0, 20, 0, code(RET_A_PTR));
    frame(0, 10, addr(0, 20), 0);
    assert_int_equal(unwind_fp(&env, addr(0, 10), 0, ips, 8), 0);
    frame(0, 10, addr(0, 20), code(RET_A_PTR) + 1);
    assert_int_equal(unwind_fp(&env, addr(0, 10), 0, ips, 8), 0);
    frame(0, 10, addr(0, 20), code(FN_A + 2));
    assert_int_equal(unwind_fp(&env, addr(0, 10), 0, ips, 8), 0);
    frame(0, 10, addr(0, 20), code(0));
    assert_int_equal(unwind_fp(&env, addr(0, 10), 0, ips, 8), 0);
    frame(0, 10, addr(0, 20), code(sizeof(text)) + 2);
    assert_int_equal(unwind_fp(&env, addr(0, 10), 0, ips, 8), 0);
    frame(0, 10, addr(0, 20), 0x1001);
    assert_int_equal(unwind_fp(&env, addr(0, 10), 0, ips, 8), 0);
    frame(0, 10, addr(0, 20), code(RET_A_SIB));
    assert_int_equal(unwind_fp(&env, addr(0, 10), 0, ips, 8), 2);
}

static void
test_depth_limit(void **state)
{
    uint64_t ips[4] = { 0, 0, 0, POISON };

    (void)state;
    setup();

    for (unsigned int w = 8; w < 52; w += 2) {
        frame(0, w, addr(0, w + 2), code(RET_A_PTR));
    }

    assert_int_equal(unwind_fp(&env, addr(0, 8), 0, ips, 3), 3);
    assert_true(ips[3] == POISON);
    assert_int_equal(unwind_fp(&env, addr(0, 8), 0, ips, 0), 0);
}

static void
test_misaligned(void **state)
{
    uint64_t ips[8];

    (void)state;
    setup();
    frame(0, 10, addr(0, 20) + 4, code(RET_A_PTR));
    assert_int_equal(unwind_fp(&env, addr(0, 10), 0, ips, 8), 1);
    assert_int_equal(unwind_fp(&env, addr(0, 10) + 1, 0, ips, 8), 0);
}

/* Outside every stack, or a frame whose second word is past the end. */
static void
test_outside(void **state)
{
    uint64_t ips[8];

    (void)state;
    setup();
    frame(0, 10, addr(2, 20), code(RET_A_PTR));
    assert_int_equal(unwind_fp(&env, addr(0, 10), 0, ips, 8), 1);
    frame(0, 10, addr(0, 55), code(RET_A_PTR));
    assert_int_equal(unwind_fp(&env, addr(0, 10), 0, ips, 8), 1);
    frame(0, 10, addr(0, 7), code(RET_A_PTR));
    assert_int_equal(unwind_fp(&env, addr(0, 10), 0, ips, 8), 1);
    assert_int_equal(unwind_fp(&env, 0, 0, ips, 8), 0);
    env.nr_stacks = 0;
    assert_int_equal(unwind_fp(&env, addr(0, 10), 0, ips, 8), 0);
}

/* A loop, or a frame pointing back down the stack, ends the chain. */
static void
test_loops(void **state)
{
    uint64_t ips[128];

    (void)state;
    setup();
    frame(0, 10, addr(0, 10), code(RET_A_PTR));
    assert_int_equal(unwind_fp(&env, addr(0, 10), 0, ips, 128), 1);

    frame(0, 10, addr(0, 20), code(RET_A_PTR));
    frame(0, 20, addr(0, 14), code(RET_A_SIB));
    frame(0, 14, addr(0, 20), code(RET_A_RIP));
    assert_int_equal(unwind_fp(&env, addr(0, 10), 0, ips, 128), 2);
}

/* From an interrupt stack to the thread stack, then up that one. */
static void
test_two_stacks(void **state)
{
    uint64_t ips[8];

    (void)state;
    setup();
    env.nr_stacks = 2;
    frame(1, 40, addr(0, 12), code(RET_A_PTR));     /* the interrupt stack */
    frame(0, 12, addr(0, 30), code(RET_A_SIB));
    frame(0, 30, 0, code(RET_A_RIP));
    assert_int_equal(unwind_fp(&env, addr(1, 40), 0, ips, 8), 3);
    assert_true(ips[0] == code(RET_A_PTR) - 1
                && ips[1] == code(RET_A_SIB) - 1
                && ips[2] == code(RET_A_RIP) - 1);

    /* Back to the first stack, lower: allowed once, then bounded. */
    frame(0, 30, addr(1, 10), code(RET_A_RIP));
    frame(1, 10, addr(0, 12), code(RET_D_PTR));
    assert_int_equal(unwind_fp(&env, addr(1, 40), 0, ips, 8), 8);
}

/*
 * The stack of d -> a -> b -> c: d's frame at word 50 (the outermost),
 * a's at 40, b's at 30, and b's return address into a at 31.  c is a leaf
 * without a frame; its return address into b is at 29.
 */
static void
chain_setup(void)
{
    setup();
    frame(0, 50, 0, 0);
    frame(0, 40, addr(0, 50), code(RET_D_PTR));
    frame(0, 30, addr(0, 40), code(RET_A_B));
    mem[0][29] = code(RET_B_C);
    mem[0][27] = 0x1234;                /* b's locals under its frame */
    mem[0][28] = 5;
}

static void
assert_chain(const uint64_t *ips, unsigned int n, const unsigned int *rets)
{
    for (unsigned int i = 1; i < n; i++) {
        assert_true(ips[i] == code(rets[i - 1]) - 1);
    }
}

/*
 * A return address on a stack too small for a frame (8 bytes): taken, and
 * the walk goes on from the frame it names on the other stack.
 */
static void
test_interrupted_tiny_stack(void **state)
{
    static const unsigned int rets[] = { RET_B_C, RET_A_B, RET_D_PTR };
    uint64_t ips[8], ref[8];

    (void)state;
    chain_setup();
    env.nr_stacks = 2;
    stacks[1] = (struct unwind_stack){ addr(1, 20), addr(1, 21) };
    mem[1][20] = code(RET_B_C);
    assert_int_equal(unwind_interrupted(&env, code(FN_C), addr(1, 20),
                                        addr(0, 30), ips, 8), 4);
    assert_chain(ips, 4, rets);
    assert_int_equal(ref_unwind_interrupted(&env, code(FN_C), addr(1, 20),
                                            addr(0, 30), ref, 8), 4);
    assert_memory_equal(ips, ref, 4 * sizeof(ips[0]));
}

/*
 * A leaf without frame: its caller's return address on top of the stack,
 * fp still the caller's frame; at its first instruction, in its body, at
 * its ret.
 */
static void
test_interrupted_leaf(void **state)
{
    static const unsigned int rets[] = { RET_B_C, RET_A_B, RET_D_PTR };
    uint64_t ips[8];

    (void)state;
    chain_setup();

    for (unsigned int at = 0; at < 4; at++) {
        assert_int_equal(unwind_interrupted(&env, code(FN_C + at),
                                            addr(0, 29), addr(0, 30), ips, 8),
                         4);
        assert_true(ips[0] == code(FN_C + at));
        assert_chain(ips, 4, rets);
    }

    /* A stack pointer outside the stack is not read. */
    assert_int_equal(unwind_interrupted(&env, code(FN_C + 2), addr(2, 29),
                                        addr(0, 30), ips, 8), 1);
    assert_int_equal(unwind_interrupted(&env, code(FN_C + 2), addr(0, 29),
                                        addr(0, 30), ips, 1), 1);
    assert_int_equal(unwind_interrupted(&env, code(FN_C + 2), addr(0, 29),
                                        addr(0, 30), ips, 0), 0);
}

/*
 * b, whose prologue is scheduled (an instruction between the push and the
 * move of the frame pointer): at its first instruction, after the push,
 * in its body, at its ret.  Never a frame that is not its caller.
 */
static void
test_interrupted_scheduled_prologue(void **state)
{
    static const unsigned int rets[] = { RET_A_B, RET_D_PTR };
    uint64_t ips[8];

    (void)state;
    chain_setup();

    /* Entry and ret: the return address at rsp, fp a's frame. */
    assert_int_equal(unwind_interrupted(&env, code(FN_B), addr(0, 31),
                                        addr(0, 40), ips, 8), 3);
    assert_chain(ips, 3, rets);
    assert_int_equal(unwind_interrupted(&env, code(B_RET), addr(0, 31),
                                        addr(0, 40), ips, 8), 3);
    assert_chain(ips, 3, rets);

    /* After the push, before and at the move: a's frame pointer at rsp. */
    for (unsigned int at = 1; at <= 6; at += 5) {
        assert_int_equal(unwind_interrupted(&env, code(FN_B + at),
                                            addr(0, 30), addr(0, 40), ips, 8),
                         3);
        assert_true(ips[0] == code(FN_B + at));
        assert_chain(ips, 3, rets);
    }

    /* In the body: its own frame, locals on top of the stack. */
    assert_int_equal(unwind_interrupted(&env, code(B_BODY), addr(0, 27),
                                        addr(0, 30), ips, 8), 3);
    assert_chain(ips, 3, rets);
}

/*
 * A framed function called through a pointer (a, from d), after its push:
 * the only return address found follows an indirect call, and is taken.
 */
static void
test_interrupted_indirect(void **state)
{
    static const unsigned int rets[] = { RET_D_PTR };
    uint64_t ips[8];

    (void)state;
    chain_setup();
    assert_int_equal(unwind_interrupted(&env, code(FN_A + 1), addr(0, 40),
                                        addr(0, 50), ips, 8), 2);
    assert_chain(ips, 2, rets);
    assert_int_equal(unwind_interrupted(&env, code(FN_A + 8), addr(0, 38),
                                        addr(0, 40), ips, 8), 2);
    assert_chain(ips, 2, rets);
}

/*
 * A direct call to the function beats an indirect one: c called by b,
 * which a called through a pointer, so that b's frame also looks like c's.
 */
static void
test_interrupted_direct_wins(void **state)
{
    static const unsigned int rets[] = { RET_B_C, RET_A_PTR, RET_D_PTR };
    uint64_t ips[8];

    (void)state;
    chain_setup();
    frame(0, 30, addr(0, 40), code(RET_A_PTR));
    assert_int_equal(unwind_interrupted(&env, code(FN_C + 2), addr(0, 29),
                                        addr(0, 30), ips, 8), 4);
    assert_chain(ips, 4, rets);
}

/*
 * When the stack cannot tell (two places fit equally, or none), the chain
 * is the interrupted address alone; the same for an address outside the
 * text or of no known function.
 */
static void
test_interrupted_unknown(void **state)
{
    uint64_t ips[8];

    (void)state;
    chain_setup();

    /* a in its body, a stale-looking return on top of its stack. */
    mem[0][38] = code(RET_A_SIB);
    assert_int_equal(unwind_interrupted(&env, code(FN_A + 8), addr(0, 38),
                                        addr(0, 40), ips, 8), 1);
    assert_true(ips[0] == code(FN_A + 8));

    /* b in its body, its frame's return into a not after a call to it. */
    frame(0, 30, addr(0, 40), code(RET_D_C));
    assert_int_equal(unwind_interrupted(&env, code(B_BODY), addr(0, 27),
                                        addr(0, 30), ips, 8), 1);

    assert_int_equal(unwind_interrupted(&env, 0x1000, addr(0, 27),
                                        addr(0, 30), ips, 8), 1);
    assert_true(ips[0] == 0x1000);
    env.func_start = NULL;
    env.text_hi = env.text_lo;
    assert_int_equal(unwind_interrupted(&env, code(B_BODY), addr(0, 27),
                                        addr(0, 30), ips, 8), 1);
}

/* ---- the function map --------------------------------------------------- */

/*
 * d -> a -> b -> c, c's frame at word 20 (c calls through a pointer from
 * its body: a frame of its own): b's and a's frames follow direct calls,
 * d's an indirect one.
 */
static void
map_chain_setup(void)
{
    setup();
    frame(0, 20, addr(0, 30), code(RET_B_C));
    frame(0, 30, addr(0, 40), code(RET_A_B));
    frame(0, 40, addr(0, 50), code(RET_D_PTR));
    frame(0, 50, 0, 0);
}

static void
assert_map_chain(unsigned int n, const uint64_t *ips)
{
    assert_int_equal(n, 3);
    assert_true(ips[0] == code(RET_B_C) - 1);
    assert_true(ips[1] == code(RET_A_B) - 1);
    assert_true(ips[2] == code(RET_D_PTR) - 1);
}

/*
 * With the map, the direct calls are taken without naming a function.
 * Without it, a direct call after the first frame names its callee; an
 * indirect call, and the end of the chain, never do.
 */
static void
test_map_direct_calls(void **state)
{
    uint64_t ips[8];

    (void)state;
    map_chain_setup();
    env.func_map = fmap;
    assert_map_chain(unwind_fp(&env, addr(0, 20), code(FN_C), ips, 8), ips);
    assert_int_equal(nr_func_start, 0);

    env.func_map = NULL;
    assert_map_chain(unwind_fp(&env, addr(0, 20), code(FN_C), ips, 8), ips);
    assert_int_equal(nr_func_start, 1);
}

/*
 * An entry that does not tell (a function starts inside its granule, or
 * none holds it) sends the frame above through the general checks, which
 * find the same callers; a direct call to another function than the one
 * named is still no return.
 */
static void
test_map_mixed(void **state)
{
    uint64_t ips[8];

    (void)state;
    map_chain_setup();
    env.func_map = fmap;
    fmap[(RET_B_C - 1) >> UNWIND_MAP_SHIFT] = UNWIND_FUNC_MIXED;
    assert_map_chain(unwind_fp(&env, addr(0, 20), code(FN_C), ips, 8), ips);
    assert_int_equal(nr_func_start, 1);

    for (unsigned int g = 0; g < sizeof(fmap) / sizeof(fmap[0]); g++) {
        fmap[g] = UNWIND_FUNC_MIXED;
    }

    assert_map_chain(unwind_fp(&env, addr(0, 20), code(FN_C), ips, 8), ips);

    /* a's frame returning from a direct call to c, not b: the end. */
    fmap_setup();
    frame(0, 30, addr(0, 40), code(RET_D_C));
    assert_int_equal(unwind_fp(&env, addr(0, 20), code(FN_C), ips, 8), 1);
}

/*
 * The callee above a frame is the function holding its return address
 * minus one, not the call's first byte: a rel32 "call" whose bytes run
 * from b into c (given its own target as callee, so that it passes)
 * returns into c, and a direct call to b above it is no return.
 */
static void
test_map_callee_of_last_byte(void **state)
{
    uint64_t ips[8];
    int32_t rel;

    (void)state;
    setup();
    env.func_map = fmap;
    text[FN_C - 2] = 0xe8;
    memcpy(&rel, &text[FN_C - 1], sizeof(rel));
    frame(0, 20, addr(0, 30), code(FN_C + 3));
    frame(0, 30, addr(0, 40), code(RET_A_B));
    assert_int_equal(unwind_fp(&env, addr(0, 20),
                               code(FN_C + 3) + (uint64_t)(int64_t)rel, ips,
                               8), 1);
    assert_int_equal(ref_unwind_fp(&env, addr(0, 20),
                                   code(FN_C + 3) + (uint64_t)(int64_t)rel,
                                   ips, 8), 1);
}

/*
 * The map is not used for a text of 2 GiB or more, where a call could
 * reach the offset that stands for an untold entry (the text's end is
 * never read: only the fixture's bytes are return addresses here).
 */
static void
test_map_long_text(void **state)
{
    uint64_t ips[8];

    (void)state;
    map_chain_setup();
    env.func_map = fmap;
    env.text_hi = env.text_lo + (1ULL << 31);
    assert_map_chain(unwind_fp(&env, addr(0, 20), code(FN_C), ips, 8), ips);
    assert_int_equal(nr_func_start, 1);
}

/*
 * Nor for a text that does not start on a granule: the walk finds a
 * return's map entry from the address itself, which needs the granules
 * aligned.  The map here must not be read: each entry names b as seen
 * from the shifted start, so that, read, it would take b's frame without
 * a look-up.
 */
static void
test_map_unaligned_text(void **state)
{
    uint64_t ips[8];

    (void)state;
    map_chain_setup();
    env.func_map = fmap;
    env.text_lo = code(8);

    for (unsigned int g = 0; g < sizeof(fmap) / sizeof(fmap[0]); g++) {
        fmap[g] = FN_B - 8;
    }

    assert_map_chain(unwind_fp(&env, addr(0, 20), code(FN_C), ips, 8), ips);
    assert_int_equal(nr_func_start, 1);
}

/* ---- the same chains as the reference unwinder ------------------------------ */

static uint64_t
rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/*
 * A word as frames hold them: a word of either stack (aligned or not,
 * near its ends too), a return address after a call form or anywhere in
 * the text, 0 or poison.
 */
static uint64_t
rnd_word(uint64_t *s)
{
    static const unsigned int rets[] = { RET_A_B, RET_A_PTR, RET_A_SIB,
                                         RET_A_RIP, RET_B_C, RET_D_C,
                                         RET_D_PTR, 0, 1, 5 };
    uint64_t r = rnd(s);

    switch (r % 6) {
    case 0:
    case 1:
        return addr((unsigned int)(r >> 8) % 2, (unsigned int)(r >> 16) % 64)
               + ((r >> 24) % 8 == 0 ? (r >> 28) % 8 : 0);
    case 2:
    case 3:
        return code(rets[(r >> 8) % 10]);
    case 4:
        return code((unsigned int)(r >> 8) % (sizeof(text) + 8));
    default:
        return (r & 0x100) ? 0 : POISON;
    }
}

/* Random words in both stacks' frames (words 8 to 55). */
static void
rnd_stack_words(uint64_t *seed)
{
    for (unsigned int s = 0; s < 2; s++) {
        for (unsigned int w = 8; w < 56; w++) {
            mem[s][w] = rnd_word(seed);
        }
    }
}

/*
 * A random world for a walk: random stack words, one stack or two, the
 * function map or none, and now and then a map entry that does not tell.
 */
static void
rnd_world(uint64_t *seed)
{
    rnd_stack_words(seed);
    env.nr_stacks = 1 + (unsigned int)(rnd(seed) % 2);
    env.func_map = (rnd(seed) % 4 == 0) ? NULL : fmap;
    fmap_setup();

    for (unsigned int g = 0; g < sizeof(fmap) / sizeof(fmap[0]); g++) {
        if (rnd(seed) % 8 == 0) {
            fmap[g] = UNWIND_FUNC_MIXED;
        }
    }
}

/*
 * Random stacks over the fixture's code, one or two of them: from any
 * interrupted place and frame pointer, the new walk gives the chain the
 * reference gives, address for address, at every depth bound.
 */
static void
test_random_same_as_reference(void **state)
{
    uint64_t seed = 0x2545f4914f6cdd1dULL;

    (void)state;
    setup();

    for (unsigned int trial = 0; trial < 200000; trial++) {
        uint64_t ips[12], ref[12], rip, rsp, fp, callee;
        unsigned int max = (unsigned int)(rnd(&seed) % 13), n, ref_n;

        rnd_world(&seed);

        /* Now and then a stack's ends not 8-byte aligned. */
        for (unsigned int s = 0; s < 2; s++) {
            uint64_t r = rnd(&seed);

            stacks[s].lo = addr(s, 8) + ((r % 4 == 0) ? (r >> 8) % 8 : 0);
            stacks[s].hi = addr(s, 56) - ((r % 4 == 1) ? (r >> 8) % 8 : 0);
        }

        rip = code((unsigned int)(rnd(&seed) % sizeof(text)));
        rsp = rnd_word(&seed);
        fp = rnd_word(&seed);
        callee = (rnd(&seed) % 4 == 0) ? 0 : fake_func_start(rip);

        memset(ips, 0, sizeof(ips));
        memset(ref, 0, sizeof(ref));
        n = unwind_interrupted(&env, rip, rsp, fp, ips, max);
        ref_n = ref_unwind_interrupted(&env, rip, rsp, fp, ref, max);
        assert_int_equal(n, ref_n);
        assert_memory_equal(ips, ref, n * sizeof(ips[0]));

        n = unwind_fp(&env, fp, callee, ips, max);
        ref_n = ref_unwind_fp(&env, fp, callee, ref, max);
        assert_int_equal(n, ref_n);
        assert_memory_equal(ips, ref, n * sizeof(ips[0]));
    }
}

/*
 * A stack of frames going up from c's interrupted leaf (the chain_setup()
 * place of c, b's frame at word 30), each frame's next one a few words up
 * (now and then a random word), each return address one of the fixture's
 * or a random word: chains whose frames stop being callers at any depth,
 * while the walk goes on.
 */
static void
rnd_chain(uint64_t *s, uint64_t *ripp, uint64_t *rspp, uint64_t *fpp)
{
    static const unsigned int rets[] = { RET_A_B, RET_A_PTR, RET_A_SIB,
                                         RET_A_RIP, RET_B_C, RET_D_C,
                                         RET_D_PTR };
    unsigned int w = 30;

    mem[0][29] = code(RET_B_C);

    while (w < 54) {
        unsigned int next = w + 2 + (unsigned int)(rnd(s) % 5);
        uint64_t r = rnd(s);

        mem[0][w] = (r % 16 == 0) ? rnd_word(s)
                                  : addr(0, (next < 63) ? next : 63);
        mem[0][w + 1] = (r % 7 == 1) ? rnd_word(s)
                                     : code(rets[(r >> 8) % 7]);
        w = next;
    }

    *ripp = code(FN_C + (unsigned int)(rnd(s) % 4));
    *rspp = addr(0, 29);
    *fpp = addr(0, 30);
}

/*
 * The split the overflow NMI and the sample reader make: on random
 * stacks, the raw walk then the check (later, the stacks gone: poisoned
 * before it) give the reference's chain, address for address, at every
 * depth bound; the raw walk stores the frames the check cuts, so that a
 * read without the check would differ (and does, in many trials).  The
 * raw walk of unwind_fp_raw() is unwind_fp()'s before its check.
 */
static void
test_random_raw_then_check(void **state)
{
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    unsigned int nr_cut = 0, nr_cut_deep = 0;

    (void)state;
    setup();

    for (unsigned int trial = 0; trial < 200000; trial++) {
        uint64_t raw[12], ips[12], ref[12], rip, rsp, fp;
        unsigned int max = (unsigned int)(rnd(&seed) % 13), n, nr_raw, ref_n;

        rnd_world(&seed);

        rip = code((unsigned int)(rnd(&seed) % sizeof(text)));
        rsp = rnd_word(&seed);
        fp = rnd_word(&seed);

        if (trial % 2 == 0) {
            rnd_chain(&seed, &rip, &rsp, &fp);
        }

        ref_n = ref_unwind_interrupted(&env, rip, rsp, fp, ref, max);
        nr_raw = unwind_interrupted_raw(&env, rip, rsp, fp, raw, max);

        /* The check reads no stack. */
        for (unsigned int s = 0; s < 2; s++) {
            for (unsigned int w = 0; w < 64; w++) {
                mem[s][w] = POISON;
            }
        }

        n = unwind_interrupted_check(&env, raw, nr_raw);
        assert_true(n <= nr_raw);
        assert_int_equal(n, ref_n);

        for (unsigned int k = 0; k < n; k++) {
            ips[k] = unwind_interrupted_ip(raw, k);
        }

        assert_memory_equal(ips, ref, n * sizeof(ips[0]));
        nr_cut += (n < nr_raw);
        nr_cut_deep += (n > UNWIND_INTERRUPTED_PROVEN && n < nr_raw);

        /* unwind_fp(): the same raw walk, each address minus one. */
        rnd_stack_words(&seed);

        fp = rnd_word(&seed);
        nr_raw = unwind_fp_raw(&env, fp, raw, max);
        n = unwind_fp(&env, fp, 0, ips, max);
        assert_true(n <= nr_raw);

        for (unsigned int k = 0; k < n; k++) {
            assert_true(ips[k] == raw[k] - 1);
        }
    }

    assert_true(nr_cut > 10000 && nr_cut_deep > 10000);
}

/*
 * The raw walk keeps every rule of memory safety and none of the callers:
 * it stores frames whose return addresses follow no call, and stops only
 * where the stack ends, goes down, is misaligned, or at the depth bound.
 */
static void
test_raw_walk(void **state)
{
    uint64_t rets[8] = { 0 }, ips[8];

    (void)state;
    setup();
    frame(0, 10, addr(0, 20), code(RET_A_PTR));
    frame(0, 20, addr(0, 30), 0);
    frame(0, 30, addr(0, 40) + 4, 0x1001);
    assert_int_equal(unwind_fp_raw(&env, addr(0, 10), rets, 8), 3);
    assert_true(rets[0] == code(RET_A_PTR) && rets[1] == 0
                && rets[2] == 0x1001);
    assert_int_equal(unwind_fp(&env, addr(0, 10), 0, ips, 8), 1);

    frame(0, 30, addr(0, 24), 0x1001);      /* down the stack */
    frame(0, 24, addr(0, 40), 7);
    assert_int_equal(unwind_fp_raw(&env, addr(0, 10), rets, 8), 3);
    frame(0, 30, addr(0, 55), 0x1001);      /* straddling the end */
    assert_int_equal(unwind_fp_raw(&env, addr(0, 10), rets, 8), 3);
    frame(0, 30, addr(2, 20), 0x1001);      /* outside */
    assert_int_equal(unwind_fp_raw(&env, addr(0, 10), rets, 8), 3);
    frame(0, 30, addr(0, 40), 0x1001);
    frame(0, 40, addr(0, 50), 9);
    frame(0, 50, addr(0, 10), 11);          /* a loop */
    assert_int_equal(unwind_fp_raw(&env, addr(0, 10), rets, 8), 5);
    rets[2] = POISON;
    assert_int_equal(unwind_fp_raw(&env, addr(0, 10), rets, 2), 2);
    assert_true(rets[2] == POISON);
    assert_int_equal(unwind_fp_raw(&env, addr(0, 10), rets, 0), 0);
}

/*
 * The check of an interrupted chain: the first two entries are the NMI's
 * (kept whatever they hold), the third on are raw return addresses, cut
 * at the first that is no caller of the function before it, each kept
 * one made minus one; a chain of one or two is kept whole.
 */
static void
test_interrupted_check(void **state)
{
    uint64_t raw[6] = { code(FN_C + 2), code(RET_B_C) - 1, code(RET_A_B),
                        code(RET_D_PTR), code(RET_A_B), 0 };

    (void)state;
    setup();
    assert_int_equal(unwind_interrupted_check(&env, raw, 0), 0);
    assert_int_equal(unwind_interrupted_check(&env, raw, 1), 1);
    assert_int_equal(unwind_interrupted_check(&env, raw, 2), 2);
    assert_int_equal(unwind_interrupted_check(&env, raw, 3), 3);
    assert_int_equal(unwind_interrupted_check(&env, raw, 4), 4);

    /* d is no caller of b (RET_A_B follows a call to b, from a). */
    assert_int_equal(unwind_interrupted_check(&env, raw, 6), 4);
    assert_true(unwind_interrupted_ip(raw, 0) == code(FN_C + 2));
    assert_true(unwind_interrupted_ip(raw, 1) == code(RET_B_C) - 1);
    assert_true(unwind_interrupted_ip(raw, 2) == code(RET_A_B) - 1);
    assert_true(unwind_interrupted_ip(raw, 3) == code(RET_D_PTR) - 1);

    /* Cut at the first raw entry: a return from b is no caller of a. */
    raw[1] = code(RET_A_B) - 1;
    assert_int_equal(unwind_interrupted_check(&env, raw, 4), 2);
    raw[1] = 0;
    assert_int_equal(unwind_interrupted_check(&env, raw, 2), 2);
    assert_int_equal(unwind_interrupted_check(&env, raw, 3), 2);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_chain),
        cmocka_unit_test(test_call_forms),
        cmocka_unit_test(test_ends_at_non_return),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_misaligned),
        cmocka_unit_test(test_outside),
        cmocka_unit_test(test_loops),
        cmocka_unit_test(test_two_stacks),
        cmocka_unit_test(test_interrupted_leaf),
        cmocka_unit_test(test_interrupted_tiny_stack),
        cmocka_unit_test(test_interrupted_scheduled_prologue),
        cmocka_unit_test(test_interrupted_indirect),
        cmocka_unit_test(test_interrupted_direct_wins),
        cmocka_unit_test(test_interrupted_unknown),
        cmocka_unit_test(test_map_direct_calls),
        cmocka_unit_test(test_map_mixed),
        cmocka_unit_test(test_map_callee_of_last_byte),
        cmocka_unit_test(test_map_long_text),
        cmocka_unit_test(test_map_unaligned_text),
        cmocka_unit_test(test_random_same_as_reference),
        cmocka_unit_test(test_random_raw_then_check),
        cmocka_unit_test(test_raw_walk),
        cmocka_unit_test(test_interrupted_check),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
