/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Control interface of nmi.c: the local APIC's self-NMI, the NMI path of
 * arch/x86/trap.c (registered handlers, called in turn until one claims
 * the NMI), and the clock's one-shot deadline (kern/clock.h), for host
 * tests of code that raises its own NMIs, the software PMU's.
 *
 * An NMI sent with lapic_send_self_nmi() is pending on its CPU until
 * fake_nmi_deliver() runs it, as the CPU would at its next instruction
 * boundary: the tests deliver it from cpu_pause() (what a waiting loop
 * calls), or by hand.  NMIs do not nest: one sent during an NMI stays
 * pending until that one returns, as on hardware.  Sending a self-NMI
 * from NMI context is counted apart: the xAPIC's ICR may be half-written
 * by the code the NMI interrupted.
 */

#ifndef TESTS_UNIT_FAKES_FAKE_NMI_H
#define TESTS_UNIT_FAKES_FAKE_NMI_H

#include <stdint.h>

void fake_nmi_reset(void);

/* Run the pending NMI of the current CPU, if any, with nmi_nesting set. */
void fake_nmi_deliver(void);

/* Self-NMIs sent, those sent from NMI context, those still pending. */
unsigned int fake_nmi_nr_sent(void);
unsigned int fake_nmi_nr_sent_in_nmi(void);
unsigned int fake_nmi_nr_pending(void);

/* NMIs delivered, and those no handler claimed. */
unsigned int fake_nmi_nr_delivered(void);
unsigned int fake_nmi_nr_unclaimed(void);

/* The last deadline asked of the clock on this CPU (0: none). */
uint64_t fake_clock_deadline(void);

/* The deadline interrupt: call the handler set, as the clock would. */
void fake_clock_deadline_fire(void);

#endif /* TESTS_UNIT_FAKES_FAKE_NMI_H */
