/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Tests of the conversion of TSC cycles to nanoseconds (inline in
 * arch/x86/tsc.h, here through tsc.c's host function), which multiplies
 * by factors tsc.c sets at calibration: for TSC frequencies from 1 Hz
 * to past 8 GHz, it equals the exact floor(cycles * 10^9 / Hz) (modulo
 * 2^64, as a 128-bit division gives it) at every power of two and its
 * neighbours, at the multiples of the frequency and their neighbours,
 * and at random counts over the whole 64-bit range; before calibration
 * every count is 0 ns.  The calibration itself (the PIT) is not run.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>

#include <cmocka.h>

#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"

/* What tsc.c calls of the CPU: never reached by the conversion. */
uint64_t
cpu_rdtsc(void)
{
    return 0;
}

unsigned long
cpu_intr_save(void)
{
    return 0;
}

void
cpu_intr_restore(unsigned long flags)
{
    (void)flags;
}

void
cpu_pause(void)
{
}

static uint64_t
exact_ns(uint64_t cycles, uint64_t hz)
{
    return (uint64_t)((unsigned __int128)cycles * 1000000000ULL / hz);
}

static void
check(uint64_t cycles, uint64_t hz)
{
    uint64_t got = tsc_cycles_to_ns(cycles), want = exact_ns(cycles, hz);

    if (got != want) {
        fail_msg("%" PRIu64 " cycles at %" PRIu64 " Hz: %" PRIu64
                 " ns, not %" PRIu64, cycles, hz, got, want);
    }
}

static uint64_t
xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void
test_exact_everywhere(void **state)
{
    static const uint64_t freqs[] = {
        1, 3, 1000, 1193182, 999999999, 1000000000, 1000000001,
        1999999999, 2000000000, 2994000000ULL, 2999999999ULL, 3000000000ULL,
        3400000000ULL, 4200000000ULL, 8589934591ULL, 8589934592ULL,
        12345678901ULL,
    };
    uint64_t seed = 0x9e3779b97f4a7c15ULL;

    (void)state;

    for (size_t f = 0; f < sizeof(freqs) / sizeof(freqs[0]); f++) {
        uint64_t hz = freqs[f];

        tsc_set_freq(hz);
        assert_true(tsc_freq() == hz);
        check(0, hz);
        check(UINT64_MAX, hz);

        for (unsigned int k = 0; k < 64; k++) {
            for (int d = -2; d <= 2; d++) {
                check((1ULL << k) + (uint64_t)(int64_t)d, hz);
            }
        }

        /* Around multiples of the frequency: the remainder's edges. */
        for (uint64_t m = 1; m < 1000000 && m <= UINT64_MAX / hz / 2;
             m = m * 3 + 1) {
            for (int d = -2; d <= 2; d++) {
                check(m * hz + (uint64_t)(int64_t)d, hz);
            }
        }

        for (unsigned int i = 0; i < 200000; i++) {
            uint64_t c = xorshift(&seed);

            check(c, hz);
            check(c >> (i % 64), hz);
        }
    }
}

/* Not calibrated: every count is 0 ns. */
static void
test_before_calibration(void **state)
{
    (void)state;
    tsc_set_freq(0);
    assert_true(tsc_freq() == 0);
    assert_true(tsc_cycles_to_ns(0) == 0);
    assert_true(tsc_cycles_to_ns(123456789) == 0);
    assert_true(tsc_cycles_to_ns(UINT64_MAX) == 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_everywhere),
        cmocka_unit_test(test_before_calibration),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
