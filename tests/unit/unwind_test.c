/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of arch/x86/unwind.c on fabricated stacks: a good chain comes out
 * newest first with each return address minus one; the walk stops at a
 * zero return address, the depth limit, a misaligned frame pointer, one
 * outside the stacks or straddling a stack's end, and a chain that loops
 * or goes back down; it moves from an interrupt stack to a thread stack.
 * Nothing outside the stacks is ever read (the memory around them is
 * poisoned, and would show in the chain if it were).
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "arch/x86/unwind.h"

#define POISON      0xdeadbeefdeadbeefULL

/* Two stacks with poisoned guard words around them. */
static uint64_t mem[3][64];
static struct unwind_stack stacks[2];

static uint64_t
addr(unsigned int s, unsigned int word)
{
    return (uint64_t)(uintptr_t)&mem[s][word];
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
}

/* A frame at word w of stack s: caller's frame pointer, return address. */
static void
frame(unsigned int s, unsigned int w, uint64_t next_fp, uint64_t ret)
{
    mem[s][w] = next_fp;
    mem[s][w + 1] = ret;
}

static void
test_good_chain(void **state)
{
    uint64_t ips[8];

    (void)state;
    setup();
    frame(0, 10, addr(0, 20), 0x1001);
    frame(0, 20, addr(0, 30), 0x2001);
    frame(0, 30, 0, 0x3001);
    assert_int_equal(unwind_fp(addr(0, 10), stacks, 1, ips, 8), 3);
    assert_true(ips[0] == 0x1000);
    assert_true(ips[1] == 0x2000);
    assert_true(ips[2] == 0x3000);
}

static void
test_ends_at_zero_return(void **state)
{
    uint64_t ips[8];

    (void)state;
    setup();
    frame(0, 10, addr(0, 20), 0x1001);
    frame(0, 20, addr(0, 30), 0);
    assert_int_equal(unwind_fp(addr(0, 10), stacks, 1, ips, 8), 1);
}

static void
test_depth_limit(void **state)
{
    uint64_t ips[4] = { 0, 0, 0, POISON };

    (void)state;
    setup();

    for (unsigned int w = 8; w < 52; w += 2) {
        frame(0, w, addr(0, w + 2), 0x100 + w);
    }

    assert_int_equal(unwind_fp(addr(0, 8), stacks, 1, ips, 3), 3);
    assert_true(ips[3] == POISON);
    assert_int_equal(unwind_fp(addr(0, 8), stacks, 1, ips, 0), 0);
}

static void
test_misaligned(void **state)
{
    uint64_t ips[8];

    (void)state;
    setup();
    frame(0, 10, addr(0, 20) + 4, 0x1001);
    assert_int_equal(unwind_fp(addr(0, 10), stacks, 1, ips, 8), 1);
    assert_int_equal(unwind_fp(addr(0, 10) + 1, stacks, 1, ips, 8), 0);
}

/* Outside every stack, or a frame whose second word is past the end. */
static void
test_outside(void **state)
{
    uint64_t ips[8];

    (void)state;
    setup();
    frame(0, 10, addr(2, 20), 0x1001);
    assert_int_equal(unwind_fp(addr(0, 10), stacks, 1, ips, 8), 1);
    frame(0, 10, addr(0, 55), 0x1001);
    assert_int_equal(unwind_fp(addr(0, 10), stacks, 1, ips, 8), 1);
    frame(0, 10, addr(0, 7), 0x1001);
    assert_int_equal(unwind_fp(addr(0, 10), stacks, 1, ips, 8), 1);
    assert_int_equal(unwind_fp(0, stacks, 1, ips, 8), 0);
    assert_int_equal(unwind_fp(addr(0, 10), stacks, 0, ips, 8), 0);
}

/* A loop, or a frame pointing back down the stack, ends the chain. */
static void
test_loops(void **state)
{
    uint64_t ips[128];

    (void)state;
    setup();
    frame(0, 10, addr(0, 10), 0x1001);
    assert_int_equal(unwind_fp(addr(0, 10), stacks, 1, ips, 128), 1);

    frame(0, 10, addr(0, 20), 0x1001);
    frame(0, 20, addr(0, 14), 0x2001);
    frame(0, 14, addr(0, 20), 0x3001);
    assert_int_equal(unwind_fp(addr(0, 10), stacks, 1, ips, 128), 2);
}

/* From an interrupt stack to the thread stack, then up that one. */
static void
test_two_stacks(void **state)
{
    uint64_t ips[8];

    (void)state;
    setup();
    frame(1, 40, addr(0, 12), 0xa001);      /* on the interrupt stack */
    frame(0, 12, addr(0, 30), 0xb001);
    frame(0, 30, 0, 0xc001);
    assert_int_equal(unwind_fp(addr(1, 40), stacks, 2, ips, 8), 3);
    assert_true(ips[0] == 0xa000 && ips[1] == 0xb000 && ips[2] == 0xc000);

    /* Back to the first stack, lower: allowed once, then bounded. */
    frame(0, 30, addr(1, 10), 0xc001);
    frame(1, 10, addr(0, 12), 0xd001);
    assert_int_equal(unwind_fp(addr(1, 40), stacks, 2, ips, 8), 8);
}

/* Code of the interrupted function: with the frame prologue, or without. */
static const uint8_t framed_code[] = { 0x55, 0x48, 0x89, 0xe5, 0x90, 0xc3 };
static const uint8_t leaf_code[] = { 0x31, 0xc0, 0x90, 0xc3 };

static uint64_t
code_addr(const uint8_t *code, unsigned int offset)
{
    return (uint64_t)(uintptr_t)code + offset;
}

/*
 * A leaf without frame: its caller's return address is on top of the
 * stack, and fp is still the caller's frame.
 */
static void
test_interrupted_leaf(void **state)
{
    uint64_t ips[8];

    (void)state;
    setup();
    mem[0][9] = 0x5001;                     /* rsp: return into the caller */
    frame(0, 20, addr(0, 30), 0x6001);      /* the caller's frame */
    frame(0, 30, 0, 0x7001);
    assert_int_equal(unwind_interrupted(code_addr(leaf_code, 2), addr(0, 9),
                                        addr(0, 20),
                                        code_addr(leaf_code, 0), stacks, 1,
                                        ips, 8), 4);
    assert_true(ips[0] == code_addr(leaf_code, 2));
    assert_true(ips[1] == 0x5000 && ips[2] == 0x6000 && ips[3] == 0x7000);

    /* Without knowing the function, the caller is lost, nothing else. */
    assert_int_equal(unwind_interrupted(code_addr(leaf_code, 2), addr(0, 9),
                                        addr(0, 20), 0, stacks, 1, ips, 8),
                     3);
    assert_true(ips[1] == 0x6000);

    /* A stack pointer outside the stack is not read. */
    assert_int_equal(unwind_interrupted(code_addr(leaf_code, 2), addr(2, 9),
                                        addr(0, 20),
                                        code_addr(leaf_code, 0), stacks, 1,
                                        ips, 8), 3);
    assert_int_equal(unwind_interrupted(code_addr(leaf_code, 2), addr(0, 9),
                                        addr(0, 20),
                                        code_addr(leaf_code, 0), stacks, 1,
                                        ips, 1), 1);
}

/* A framed function: in its prologue, and after it. */
static void
test_interrupted_framed(void **state)
{
    uint64_t ips[8];

    (void)state;
    setup();
    frame(0, 20, addr(0, 30), 0x6001);
    frame(0, 30, 0, 0x7001);

    /* At the first instruction: the return address is at rsp. */
    mem[0][10] = 0x5001;
    assert_int_equal(unwind_interrupted(code_addr(framed_code, 0),
                                        addr(0, 10), addr(0, 20),
                                        code_addr(framed_code, 0), stacks, 1,
                                        ips, 8), 4);
    assert_true(ips[1] == 0x5000);

    /* After push %rbp: under the pushed word. */
    mem[0][9] = addr(0, 20);
    assert_int_equal(unwind_interrupted(code_addr(framed_code, 1),
                                        addr(0, 9), addr(0, 20),
                                        code_addr(framed_code, 0), stacks, 1,
                                        ips, 8), 4);
    assert_true(ips[1] == 0x5000);

    /* In the body: fp is its own frame. */
    frame(0, 12, addr(0, 20), 0x5001);
    assert_int_equal(unwind_interrupted(code_addr(framed_code, 4),
                                        addr(0, 8), addr(0, 12),
                                        code_addr(framed_code, 0), stacks, 1,
                                        ips, 8), 4);
    assert_true(ips[1] == 0x5000 && ips[2] == 0x6000 && ips[3] == 0x7000);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_chain),
        cmocka_unit_test(test_ends_at_zero_return),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_misaligned),
        cmocka_unit_test(test_outside),
        cmocka_unit_test(test_loops),
        cmocka_unit_test(test_two_stacks),
        cmocka_unit_test(test_interrupted_leaf),
        cmocka_unit_test(test_interrupted_framed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
