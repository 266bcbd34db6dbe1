/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The time-stamp counter: the kernel's clock source.
 *
 * tsc_calibrate() measures its frequency against the PIT at boot.  Times
 * before calibration read as 0.
 */

#ifndef ARCH_X86_TSC_H
#define ARCH_X86_TSC_H

#include <stdint.h>

/* Measure the TSC frequency (about 30 ms).  Returns it in Hz. */
uint64_t tsc_calibrate(void);

uint64_t tsc_freq(void);

/* TSC cycles since calibration, converted. */
uint64_t tsc_ns(void);
uint64_t tsc_us(void);

/*
 * Cycles to nanoseconds, floor(cycles * 10^9 / hz), without a division:
 * 10^9 / hz is whole_ns + frac_ns / hz, and mult is floor(2^64 * frac_ns
 * / hz).  The high half of cycles * mult is floor(cycles * frac_ns / hz)
 * or one less (mult is below the exact factor by less than 1, so the
 * product by less than cycles < 2^64, that is less than 1 after the
 * shift by 64); the remainder cycles * frac_ns - q * hz, in [0, 2 hz),
 * says which.  Exact for every 64-bit cycle count, modulo 2^64 as the
 * division was.  Before calibration every factor is 0 and hz 1: 0 ns.
 * Set once by tsc_calibrate() at boot, before other CPUs start and any
 * interrupt reads it; read anywhere, NMI included.
 */
struct tsc_conv {
    uint64_t whole_ns;                  /* 10^9 / hz */
    uint64_t frac_ns;                   /* 10^9 % hz */
    uint64_t mult;                      /* 2^64 * frac_ns / hz */
    uint64_t hz;
};

extern struct tsc_conv tsc_conv;

/* cycles converted by the factors of conv (see struct tsc_conv). */
static inline uint64_t
tsc_conv_cycles_to_ns(const struct tsc_conv *conv, uint64_t cycles)
{
    uint64_t q = (uint64_t)(((unsigned __int128)cycles * conv->mult) >> 64);
    uint64_t rem = cycles * conv->frac_ns - q * conv->hz;

    /* q + (rem >= hz), so written that the compare's borrow subtracts. */
    return cycles * conv->whole_ns + q + 1 - (rem < conv->hz);
}

/*
 * Convert a TSC cycle count into nanoseconds (exactly, floor(cycles *
 * 10^9 / Hz) modulo 2^64, by multiplying: any context, NMI included), and
 * back.  Inline in the kernel, so that a sample's writer calls nothing;
 * host tests link a function (arch/x86/tsc.c or a fake's).
 */
#ifdef TALLY_HOST_TEST
uint64_t tsc_cycles_to_ns(uint64_t cycles);
#else
static inline uint64_t
tsc_cycles_to_ns(uint64_t cycles)
{
    return tsc_conv_cycles_to_ns(&tsc_conv, cycles);
}
#endif

uint64_t tsc_ns_to_cycles(uint64_t ns);

/* Busy-wait (for device timing before timers exist). */
void tsc_delay_us(uint64_t us);

#ifdef TALLY_HOST_TEST
/* Take hz as the calibrated frequency (0: not calibrated). */
void tsc_set_freq(uint64_t hz);
#endif

#endif /* ARCH_X86_TSC_H */
