/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Run-time controls of the perfmon core that only `perfmon bench` and the
 * tests use: measuring the switch path without perfmon in it, taking a
 * turn of the multiplexed events without waiting for the tick, and the
 * throttle's share.  No
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

/*
 * Set the most percent of a CPU's time sampling may take before it is
 * throttled (what perfmon.max_sample_share sets at boot), 1 to 100;
 * returns the share it replaces.  For a test that must make a storm
 * exceed it whatever the machine's speed.  Thread context.
 */
unsigned int perfmon_set_max_sample_share(unsigned int percent);

#endif /* KERN_PERFMON_CONTROL_H */
