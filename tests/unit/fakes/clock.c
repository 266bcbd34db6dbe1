/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fake of the system clock for host tests: time moves only when the test
 * says so, or when code waits for console input (which never comes).
 */

#include <stdbool.h>
#include <stdint.h>

#include "fakes/fake_smp.h"
#include "kern/clock.h"
#include "kern/console.h"

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

/*
 * Waiting for console input (kern/console.h): none ever comes on the host,
 * and the time passes.
 */
bool
console_wait_input(uint64_t ms)
{
    fake_clock_ticks += clock_ticks_from_ms(ms);
    return false;
}

/* As the kernel's: the fake's ticks are whole, but waits end as there. */
uint64_t
clock_deadline_from_ms(uint64_t ms)
{
    return fake_clock_ticks + clock_ticks_from_ms(ms) + 1;
}
