/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Integer arithmetic and number formatting for what commands print (the
 * kernel has no floating point): a 128-bit multiply-divide, an integer
 * square root, the mean and relative standard deviation of repeated
 * measurements, thousands grouping and fixed-point ratios.  See
 * kern/num.h.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "kern/error.h"
#include "kern/macros.h"
#include "kern/num.h"
#include "kern/printf.h"

int
num_fmt_count(char *buf, size_t size, uint64_t v)
{
    return ksnprintf(buf, size, "%'llu", (unsigned long long)v);
}

/*
 * 128-by-64-bit division, saturating.  The compiler's own 128-bit
 * division calls libgcc, which the kernel does not have; the processor
 * divides 128 bits by 64 in one instruction (cpu_div128) when the
 * quotient fits in 64 bits, which is exactly when the high half is below
 * the divisor, so the other case saturates first.  The multiplexing
 * scheduler takes a share per waiting slot on each turn, so this is on a
 * hot path.
 */
static uint64_t
num_div128(unsigned __int128 n, uint64_t d)
{
    uint64_t hi = (uint64_t)(n >> 64), lo = (uint64_t)n;

    if (hi >= d) {
        return UINT64_MAX;
    }

    return (hi == 0) ? lo / d : cpu_div128(hi, lo, d);
}

uint64_t
num_muldiv(uint64_t num, uint64_t scale, uint64_t den)
{
    if (den == 0) {
        return 0;
    }

    return num_div128((unsigned __int128)num * scale, den);
}

static uint64_t
num_pow10(unsigned int n)
{
    uint64_t p = 1;

    while (n-- > 0) {
        p *= 10;
    }

    return p;
}

int
num_fmt_ratio(char *buf, size_t size, uint64_t num, uint64_t den,
              unsigned int decimals, bool group)
{
    uint64_t q = 0, frac = 0, unit;

    decimals = MIN(decimals, 9U);
    unit = num_pow10(decimals);

    if (den != 0) {
        q = num / den;

        /* Twice the fraction, to round half up. */
        frac = num_muldiv(num % den, 2 * unit, den);
        frac = (frac + 1) / 2;

        if (frac >= unit) {
            frac -= unit;

            if (q != UINT64_MAX) {
                q++;
            }
        }
    }

    if (decimals == 0) {
        return ksnprintf(buf, size, group ? "%'llu" : "%llu",
                         (unsigned long long)q);
    }

    return ksnprintf(buf, size, group ? "%'llu.%0*llu" : "%llu.%0*llu",
                     (unsigned long long)q, (int)decimals,
                     (unsigned long long)frac);
}

int
num_fmt_percent(char *buf, size_t size, uint64_t part, uint64_t whole,
                bool group)
{
    return num_fmt_ratio(buf, size, num_muldiv(part, 10000, whole), 100, 2,
                         group);
}

uint64_t
num_isqrt(uint64_t v)
{
    uint64_t r = 0;

    /* Bit by bit from the top: r stays the root of the bits seen so far. */
    for (int bit = 31; bit >= 0; bit--) {
        uint64_t t = r | (1ULL << bit);

        if (t * t <= v) {
            r = t;
        }
    }

    return r;
}

int
num_stats(const uint64_t *values, unsigned int nr, uint64_t *meanp,
          uint64_t *rsd_bpp)
{
    uint64_t mean = 0, rem = 0, max_dev = 0, sumsq = 0, var, limit, sd, rsd;
    unsigned int shift = 0, frac_bits = 0;

    if ((values == NULL) || (nr == 0) || (meanp == NULL) || (rsd_bpp == NULL)) {
        return -EINVAL;
    }

    /* The mean without summing: the sum of nr values can overflow. */
    for (unsigned int i = 0; i < nr; i++) {
        mean += values[i] / nr;
        rem += values[i] % nr;
    }

    mean += rem / nr;
    *meanp = mean;
    *rsd_bpp = 0;

    if ((nr < 2) || (mean == 0)) {
        return 0;
    }

    for (unsigned int i = 0; i < nr; i++) {
        uint64_t dev = (values[i] > mean) ? values[i] - mean : mean - values[i];

        max_dev = MAX(max_dev, dev);
    }

    /* Scale the deviations down so that the sum of squares cannot wrap. */
    limit = num_isqrt(UINT64_MAX / nr);

    while ((max_dev >> shift) > limit) {
        shift++;
    }

    for (unsigned int i = 0; i < nr; i++) {
        uint64_t dev = (values[i] > mean) ? values[i] - mean : mean - values[i];

        dev >>= shift;
        sumsq += dev * dev;
    }

    /* Variance of the mean, with up to 30 fraction bits kept in the root. */
    var = sumsq / ((uint64_t)nr * (nr - 1));

    while ((frac_bits < 30) && (var < (1ULL << (62 - 2 * (frac_bits + 1))))) {
        frac_bits++;
    }

    var = num_muldiv(sumsq, 1ULL << (2 * frac_bits),
                         (uint64_t)nr * (nr - 1));
    sd = num_isqrt(var);

    /*
     * sd is the deviation times 2^(frac_bits - shift).  Scale it back
     * before dividing by the mean where possible, not after, to keep the
     * low digits.
     */
    if (frac_bits >= shift) {
        rsd = num_muldiv(sd, 10000, mean) >> (frac_bits - shift);
    } else {
        unsigned int up = shift - frac_bits;
        unsigned int now = MIN(up, 50U);

        rsd = num_muldiv(sd, 10000ULL << now, mean);
        up -= now;
        rsd = (rsd > (UINT64_MAX >> up)) ? UINT64_MAX : rsd << up;
    }

    *rsd_bpp = rsd;
    return 0;
}
