/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fake of the timer module for host tests: scheduled timers are kept in a
 * table, and fire only when the test calls fake_timer_run_due() after
 * moving the fake clock.
 */

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "fakes/fake_smp.h"
#include "kern/assert.h"
#include "kern/clock.h"
#include "kern/timer.h"

#define FAKE_TIMER_MAX          32
#define FAKE_TIMER_IDLE         0
#define FAKE_TIMER_SCHEDULED    1

static struct timer *fake_timers[FAKE_TIMER_MAX];

void
fake_timer_reset(void)
{
    memset(fake_timers, 0, sizeof(fake_timers));
}

void
timer_init(struct timer *timer, timer_fn_t fn, unsigned int flags)
{
    timer->fn = fn;
    timer->flags = flags;
    timer->state = FAKE_TIMER_IDLE;
    timer->ticks = 0;
    timer->next = NULL;
}

static int
fake_timer_find(const struct timer *timer)
{
    for (int i = 0; i < FAKE_TIMER_MAX; i++) {
        if (fake_timers[i] == timer) {
            return i;
        }
    }

    return -1;
}

void
timer_schedule(struct timer *timer, uint64_t ticks)
{
    int i = fake_timer_find(timer);

    assert(timer->fn != NULL);

    if (i < 0) {
        i = fake_timer_find(NULL);
        assert(i >= 0);
        fake_timers[i] = timer;
    }

    timer->ticks = ticks;
    timer->state = FAKE_TIMER_SCHEDULED;
}

bool
timer_cancel(struct timer *timer)
{
    int i = fake_timer_find(timer);

    if (i < 0) {
        return false;
    }

    fake_timers[i] = NULL;
    timer->state = FAKE_TIMER_IDLE;
    return true;
}

bool
timer_scheduled(const struct timer *timer)
{
    return fake_timer_find(timer) >= 0;
}

unsigned int
fake_timer_run_due(void)
{
    unsigned int nr = 0;

    for (;;) {
        int best = -1;

        for (int i = 0; i < FAKE_TIMER_MAX; i++) {
            if (fake_timers[i] != NULL
                && fake_timers[i]->ticks <= clock_get_time()
                && (best < 0 || fake_timers[i]->ticks
                                < fake_timers[best]->ticks)) {
                best = i;
            }
        }

        if (best < 0) {
            return nr;
        }

        struct timer *timer = fake_timers[best];

        fake_timers[best] = NULL;
        timer->state = FAKE_TIMER_IDLE;
        timer->fn(timer);
        nr++;
    }
}
