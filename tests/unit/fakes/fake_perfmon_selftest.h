/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * What the self-test fake (fakes/perfmon_selftest.c) lets a test see: the
 * lines reported since the last reset ("PASS  name: measured (expected
 * ...)"), and the modelled spin loop's cycles per iteration.
 */

#ifndef TESTS_UNIT_FAKES_FAKE_PERFMON_SELFTEST_H
#define TESTS_UNIT_FAKES_FAKE_PERFMON_SELFTEST_H

#define FAKE_SELFTEST_MAX_LINES         128
#define FAKE_SELFTEST_CYCLES_PER_ITER   2

void fake_perfmon_selftest_reset(void);
unsigned int fake_perfmon_selftest_nr_lines(void);
const char *fake_perfmon_selftest_line(unsigned int i);

/* The first line containing text, or NULL. */
const char *fake_perfmon_selftest_find(const char *text);

#endif /* TESTS_UNIT_FAKES_FAKE_PERFMON_SELFTEST_H */
