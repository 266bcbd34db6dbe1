/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * TSC calibration against PIT channel 2 (Intel 8254 data sheet), which
 * counts at 1.193182 MHz and whose output is readable through port 0x61
 * without any interrupt.
 */

#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/io.h"
#include "arch/x86/tsc.h"
#include "kern/macros.h"

#define TSC_PIT_FREQ        1193182
#define TSC_PIT_PORT_CH2    0x42
#define TSC_PIT_PORT_CMD    0x43
#define TSC_PIT_PORT_GATE   0x61
#define TSC_PIT_GATE_CH2    0x01
#define TSC_PIT_SPEAKER     0x02
#define TSC_PIT_OUT2        0x20
#define TSC_PIT_CMD_CH2_MODE0 0xb0  /* channel 2, lobyte/hibyte, mode 0 */

#define TSC_CALIB_MS        10
#define TSC_CALIB_ROUNDS    3

#define TSC_NS_PER_S        1000000000ULL

static uint64_t tsc_hz;
static uint64_t tsc_base;

/* The conversion's factors (arch/x86/tsc.h), not calibrated yet. */
struct tsc_conv tsc_conv = { .hz = 1 };

/* floor((hi * 2^64) / d), for hi < d: the divide instruction's own form. */
static uint64_t
tsc_div_shifted(uint64_t hi, uint64_t d)
{
    uint64_t q, r;

    __asm__("divq %4" : "=a"(q), "=d"(r) : "a"(0ULL), "d"(hi), "rm"(d));
    return q;
}

static void
tsc_conv_set(uint64_t hz)
{
    tsc_conv.whole_ns = TSC_NS_PER_S / hz;
    tsc_conv.frac_ns = TSC_NS_PER_S % hz;
    tsc_conv.mult = tsc_div_shifted(tsc_conv.frac_ns, hz);
    tsc_conv.hz = hz;
}

/* One measurement: TSC cycles during TSC_CALIB_MS of PIT time. */
static uint64_t
tsc_measure(void)
{
    uint16_t count = TSC_PIT_FREQ * TSC_CALIB_MS / 1000;
    uint8_t gate;
    uint64_t start;

    gate = io_read8(TSC_PIT_PORT_GATE);
    gate = (gate & ~TSC_PIT_SPEAKER) | TSC_PIT_GATE_CH2;
    io_write8(TSC_PIT_PORT_GATE, gate & ~TSC_PIT_GATE_CH2);
    io_write8(TSC_PIT_PORT_CMD, TSC_PIT_CMD_CH2_MODE0);
    io_write8(TSC_PIT_PORT_CH2, count & 0xff);
    io_write8(TSC_PIT_PORT_CH2, count >> 8);

    /* Mode 0: OUT2 goes high when the count reaches zero. */
    io_write8(TSC_PIT_PORT_GATE, gate);
    start = cpu_rdtsc();

    while ((io_read8(TSC_PIT_PORT_GATE) & TSC_PIT_OUT2) == 0) {
        cpu_pause();
    }

    return cpu_rdtsc() - start;
}

uint64_t
tsc_calibrate(void)
{
    uint64_t best = UINT64_MAX;
    unsigned long flags = cpu_intr_save();

    /* The shortest round is the one least disturbed (by a hypervisor). */
    for (unsigned int i = 0; i < TSC_CALIB_ROUNDS; i++) {
        best = MIN(best, tsc_measure());
    }

    cpu_intr_restore(flags);
    tsc_base = cpu_rdtsc();
    best *= 1000 / TSC_CALIB_MS;

    if (best != 0) {
        tsc_conv_set(best);
    }

    __atomic_store_n(&tsc_hz, best, __ATOMIC_RELEASE);
    return tsc_hz;
}

#ifdef TALLY_HOST_TEST
void
tsc_set_freq(uint64_t hz)
{
    if (hz == 0) {
        tsc_conv = (struct tsc_conv){ .hz = 1 };
    } else {
        tsc_conv_set(hz);
    }

    tsc_hz = hz;
}
#endif /* TALLY_HOST_TEST */

uint64_t
tsc_freq(void)
{
    return __atomic_load_n(&tsc_hz, __ATOMIC_ACQUIRE);
}

uint64_t
cpu_tsc_freq(void)
{
    return tsc_freq();
}

#ifdef TALLY_HOST_TEST
uint64_t
tsc_cycles_to_ns(uint64_t cycles)
{
    return tsc_conv_cycles_to_ns(&tsc_conv, cycles);
}
#endif

uint64_t
tsc_ns_to_cycles(uint64_t ns)
{
    uint64_t hz = tsc_freq();

    return ns / 1000000000UL * hz + ns % 1000000000UL * hz / 1000000000UL;
}

uint64_t
tsc_ns(void)
{
    if (tsc_freq() == 0) {
        return 0;
    }

    return tsc_cycles_to_ns(cpu_rdtsc() - tsc_base);
}

uint64_t
tsc_us(void)
{
    return tsc_ns() / 1000;
}

void
tsc_delay_us(uint64_t us)
{
    uint64_t end = cpu_rdtsc() + tsc_ns_to_cycles(us * 1000);

    while (cpu_rdtsc() < end) {
        cpu_pause();
    }
}
