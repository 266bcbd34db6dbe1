/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Built-in workloads: deterministic shell commands worth counting with
 * `perfmon stat`.  Each validates its arguments, stops early (-EINTR) on
 * Ctrl-C, and prints a one-line summary of what it did:
 *
 *   spin N              N iterations of a loop of exactly
 *                       WORKLOAD_SPIN_INSNS instructions (inline asm)
 *   memwalk SIZE STRIDE [PASSES]
 *                       read every STRIDE-th byte of a SIZE-byte heap
 *                       buffer, PASSES times (default
 *                       WORKLOAD_MEMWALK_PASSES); SIZE and STRIDE take K/M
 *                       suffixes, SIZE is capped at WORKLOAD_MEMWALK_MAX
 *   branchy N           N conditional branches on the bits of a seeded
 *                       xorshift generator: about half are taken, in no
 *                       pattern a predictor can learn
 *   chain N             N calls of a function that calls one that calls
 *                       one, each working a little: samples in them have
 *                       a known call chain
 *   yield N             N thread_yield() calls, each one a real context
 *                       switch: a helper thread pinned to the same CPU
 *                       yields straight back
 *   hop N               N migrations, round-robin over every CPU, by
 *                       changing the caller's own affinity
 *   xcall N             N cross-CPU calls, round-robin over the other CPUs
 *   sleep MS            sleep MS milliseconds
 *
 * The commands run in the calling thread (the shell's, or the thread
 * `perfmon stat` creates) and restore any affinity they change.
 */

#ifndef KERN_WORKLOAD_H
#define KERN_WORKLOAD_H

#include <stdint.h>

/* Instructions in one iteration of the spin loop: add, xor, sub, jnz. */
#define WORKLOAD_SPIN_INSNS         4

#define WORKLOAD_MEMWALK_MAX        (8UL << 20)
#define WORKLOAD_MEMWALK_PASSES     4

/* The seed of the branchy generator, fixed so that runs repeat exactly. */
#define WORKLOAD_BRANCHY_SEED       0x9e3779b97f4a7c15ULL

/*
 * The loops themselves, for code that measures them (`perfmon selftest`),
 * any context, without a look at Ctrl-C:
 *
 * workload_spin_loop: n iterations (n > 0) of exactly WORKLOAD_SPIN_INSNS
 *   instructions, one of them a branch, plus a constant: the counts in
 *   `perfmon stat -e instructions -- spin N` are then predictable.
 * workload_branchy_loop: n conditional branches on the bits of the
 *   xorshift generator whose state is *statep (seed it nonzero); returns
 *   how many were taken.
 */
void workload_spin_loop(uint64_t n);
uint64_t workload_branchy_loop(uint64_t n, uint64_t *statep);

#endif /* KERN_WORKLOAD_H */
