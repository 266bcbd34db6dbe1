/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Run-time controls of the perfmon core that only `perfmon bench` and the
 * tests use: measuring the switch path without perfmon in it, and taking
 * a turn of the multiplexed events without waiting for the tick.  No
 * user-facing code needs them; they stay out of kern/perfmon.h.
 */

#ifndef KERN_PERFMON_CONTROL_H
#define KERN_PERFMON_CONTROL_H

#include <stdbool.h>

/*
 * Switch the context-switch hook (kern/perfmon.h) on or off at run time.
 * perfmon_set_switch_hook() returns 0, or -EBUSY when switching it off
 * while thread events are attached.  Thread context.
 */
int perfmon_set_switch_hook(bool enabled);
bool perfmon_switch_hook_enabled(void);

/*
 * Make the calling CPU's events that wait for a counter take their turn
 * now, as the tick does.  Thread context; nothing when nothing waits.
 */
void perfmon_rotate_local(void);

/*
 * perfmon_rotate_local(), returning how many events it moved: those that
 * lost their counter, got one, or changed counters.  For the benchmark,
 * which counts the turn alone and divides by this; the comparison is not
 * part of a turn.
 */
unsigned int perfmon_rotate_local_moved(void);

#endif /* KERN_PERFMON_CONTROL_H */
