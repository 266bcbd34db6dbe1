/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Linked into a test program of the core, the fake devices it adds give
 * the core RDPMC as their read method (fdev.h): perfmon_rdpmc_test runs
 * every test of perfmon_test.c so, each fold and local read through
 * msr_rdpmc(), with the read op's checks and hooks.
 */

#include "fdev.h"
#include "kern/perfmon.h"

unsigned int fdev_read_how = PERFMON_READ_RDPMC;
