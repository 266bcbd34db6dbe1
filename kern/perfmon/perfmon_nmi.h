/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The overflow interrupt (perfmon_nmi.c), private to the core: its part
 * of perfmon_setup (perfmon.max_sample_share).  The interrupt itself,
 * perfmon_overflow_intr(), is in kern/perfmon.h.
 */

#ifndef KERN_PERFMON_NMI_H
#define KERN_PERFMON_NMI_H

void perfmon_nmi_setup(void);

#ifdef TALLY_HOST_TEST
void perfmon_nmi_reset(void);
#endif

#endif /* KERN_PERFMON_NMI_H */
