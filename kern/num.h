/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Integer arithmetic and number formatting for what commands print, in a
 * kernel without floating point.  Every function is pure and reentrant:
 * any context, the caller's buffers only.
 */

#ifndef KERN_NUM_H
#define KERN_NUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Write v with thousands grouping ("1,234,567") into buf.  Returns what
 * ksnprintf() returns (the length it needed).
 */
int num_fmt_count(char *buf, size_t size, uint64_t v);

/*
 * floor(num * scale / den) without overflow in the intermediate product,
 * saturated to UINT64_MAX; 0 when den is 0.
 */
uint64_t num_muldiv(uint64_t num, uint64_t scale, uint64_t den);

/*
 * Write num / den rounded to decimals (0..9) digits, the integer part
 * grouped in thousands when group is true ("1,234.57", else "1234.57").
 * den 0 writes "0" with the decimals.  Returns what ksnprintf() returns.
 */
int num_fmt_ratio(char *buf, size_t size, uint64_t num, uint64_t den,
                  unsigned int decimals, bool group);

/*
 * Write part as a percentage of whole, truncated to hundredths, then
 * rounded to two decimals as num_fmt_ratio() writes them ("12.34"; "0.00"
 * for a whole of 0).  Returns what ksnprintf() returns.
 */
int num_fmt_percent(char *buf, size_t size, uint64_t part, uint64_t whole,
                    bool group);

/* Integer square root: the largest r with r * r <= v. */
uint64_t num_isqrt(uint64_t v);

/*
 * Statistics of nr repeated measurements, as `perf stat -r` shows them:
 * the mean (rounded down), and the relative standard deviation of the
 * mean, sqrt(sum((v - mean)^2) / (nr - 1) / nr) / mean, in hundredths of
 * a percent (123 = 1.23%), rounded down (from a root of at least 31
 * significant bits: with huge deviations the last digit may be one low).
 * With nr < 2 or a zero mean the deviation is 0.
 * Returns 0, or -EINVAL for a NULL argument or nr 0.
 */
int num_stats(const uint64_t *values, unsigned int nr, uint64_t *meanp,
              uint64_t *rsd_bpp);

#endif /* KERN_NUM_H */
