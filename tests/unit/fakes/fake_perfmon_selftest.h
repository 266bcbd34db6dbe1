/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * What the self-test fake (fakes/perfmon_selftest.c) lets a test see: the
 * lines a run printed through fake_perfmon_selftest_print() since the
 * last reset, as the kernel's report formats them ("PASS  name  measured
 * (expected ...)", the name padded), and the modelled spin loop's cycles
 * per iteration.
 */

#ifndef TESTS_UNIT_FAKES_FAKE_PERFMON_SELFTEST_H
#define TESTS_UNIT_FAKES_FAKE_PERFMON_SELFTEST_H

#define FAKE_SELFTEST_MAX_LINES         128
#define FAKE_SELFTEST_CYCLES_PER_ITER   2

/* A run's print callback (struct perfmon_selftest): keeps line. */
void fake_perfmon_selftest_print(void *arg, const char *line);

void fake_perfmon_selftest_reset(void);
unsigned int fake_perfmon_selftest_nr_lines(void);
const char *fake_perfmon_selftest_line(unsigned int i);

/* The first line containing text, or NULL. */
const char *fake_perfmon_selftest_find(const char *text);

#endif /* TESTS_UNIT_FAKES_FAKE_PERFMON_SELFTEST_H */
