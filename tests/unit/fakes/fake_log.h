/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * What the log fake (fakes/log.c) lets a test see: the last message logged
 * and how many were logged at each level since the last reset.
 */

#ifndef TESTS_UNIT_FAKES_FAKE_LOG_H
#define TESTS_UNIT_FAKES_FAKE_LOG_H

void fake_log_reset(void);
const char *fake_log_last(void);
unsigned int fake_log_count(unsigned int level);

#endif /* TESTS_UNIT_FAKES_FAKE_LOG_H */
