/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fake of arch/x86/tsc.c's conversion for host tests: TSC cycles at the
 * fake CPU's frequency (fakes/cpu.c) to nanoseconds.
 */

#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/tsc.h"

uint64_t
tsc_cycles_to_ns(uint64_t cycles)
{
    uint64_t hz = cpu_tsc_freq();

    return (hz == 0) ? 0
                     : (uint64_t)((unsigned __int128)cycles * 1000000000 / hz);
}
