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
 * Convert a TSC cycle count into nanoseconds (exactly, floor(cycles *
 * 10^9 / Hz) modulo 2^64, by multiplying: any context, NMI included), and
 * back.
 */
uint64_t tsc_cycles_to_ns(uint64_t cycles);
uint64_t tsc_ns_to_cycles(uint64_t ns);

/* Busy-wait (for device timing before timers exist). */
void tsc_delay_us(uint64_t us);

#ifdef TALLY_HOST_TEST
/* Take hz as the calibrated frequency (0: not calibrated). */
void tsc_set_freq(uint64_t hz);
#endif

#endif /* ARCH_X86_TSC_H */
