/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fake of the system clock for host tests: time moves only when the test
 * says so.
 */

#include <stdint.h>

#include "fakes/fake_smp.h"
#include "kern/clock.h"

static uint64_t fake_clock_ticks;

void
fake_clock_set(uint64_t ticks)
{
    fake_clock_ticks = ticks;
}

void
fake_clock_advance_ms(uint64_t ms)
{
    fake_clock_ticks += clock_ticks_from_ms(ms);
}

uint64_t
clock_get_time(void)
{
    return fake_clock_ticks;
}
