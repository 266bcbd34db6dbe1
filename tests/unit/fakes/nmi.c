/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fake of the local APIC's self-NMI, of the NMI path and of the clock's
 * deadline (fake_nmi.h).  One host thread plays every CPU (fake_smp.h):
 * the state here is per fake CPU.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arch/x86/cpu.h"
#include "arch/x86/lapic.h"
#include "arch/x86/trap.h"
#include "fakes/fake_nmi.h"
#include "kern/assert.h"
#include "kern/clock.h"
#include "kern/param.h"

#define FAKE_NMI_MAX_HANDLERS   4

static trap_nmi_fn_t fake_nmi_handlers[FAKE_NMI_MAX_HANDLERS];
static void *fake_nmi_args[FAKE_NMI_MAX_HANDLERS];
static unsigned int fake_nmi_nr_handlers;
static bool fake_nmi_pending[CPU_MAX];
static unsigned int fake_nmi_sent, fake_nmi_sent_in_nmi;
static unsigned int fake_nmi_delivered, fake_nmi_unclaimed;

static clock_deadline_fn_t fake_clock_handler;
static uint64_t fake_clock_deadlines[CPU_MAX];

void
fake_nmi_reset(void)
{
    memset(fake_nmi_handlers, 0, sizeof(fake_nmi_handlers));
    fake_nmi_nr_handlers = 0;
    memset(fake_nmi_pending, 0, sizeof(fake_nmi_pending));
    fake_nmi_sent = 0;
    fake_nmi_sent_in_nmi = 0;
    fake_nmi_delivered = 0;
    fake_nmi_unclaimed = 0;
    fake_clock_handler = NULL;
    memset(fake_clock_deadlines, 0, sizeof(fake_clock_deadlines));
}

void
lapic_send_self_nmi(void)
{
    fake_nmi_sent++;

    if (cpu_self()->nmi_nesting != 0) {
        fake_nmi_sent_in_nmi++;
    }

    fake_nmi_pending[cpu_id()] = true;
}

void
trap_nmi_register(trap_nmi_fn_t fn, void *arg)
{
    assert(fake_nmi_nr_handlers < FAKE_NMI_MAX_HANDLERS);
    fake_nmi_args[fake_nmi_nr_handlers] = arg;
    fake_nmi_handlers[fake_nmi_nr_handlers++] = fn;
}

void
fake_nmi_deliver(void)
{
    struct cpu *cpu = cpu_self();
    bool claimed = false;

    if (!fake_nmi_pending[cpu_id()] || cpu->nmi_nesting != 0) {
        return;
    }

    fake_nmi_pending[cpu_id()] = false;
    fake_nmi_delivered++;
    cpu->nmi_nesting++;

    for (unsigned int i = 0; i < fake_nmi_nr_handlers; i++) {
        claimed |= fake_nmi_handlers[i](fake_nmi_args[i], NULL);
    }

    cpu->nmi_nesting--;

    if (!claimed) {
        fake_nmi_unclaimed++;
    }
}

unsigned int
fake_nmi_nr_sent(void)
{
    return fake_nmi_sent;
}

unsigned int
fake_nmi_nr_sent_in_nmi(void)
{
    return fake_nmi_sent_in_nmi;
}

unsigned int
fake_nmi_nr_pending(void)
{
    unsigned int n = 0;

    for (unsigned int i = 0; i < CPU_MAX; i++) {
        n += fake_nmi_pending[i];
    }

    return n;
}

unsigned int
fake_nmi_nr_delivered(void)
{
    return fake_nmi_delivered;
}

unsigned int
fake_nmi_nr_unclaimed(void)
{
    return fake_nmi_unclaimed;
}

void
clock_set_deadline_handler(clock_deadline_fn_t fn)
{
    fake_clock_handler = fn;
}

void
clock_set_deadline(uint64_t tsc)
{
    assert(!cpu_intr_enabled());
    fake_clock_deadlines[cpu_id()] = tsc;
}

uint64_t
fake_clock_deadline(void)
{
    return fake_clock_deadlines[cpu_id()];
}

void
fake_clock_deadline_fire(void)
{
    assert(fake_clock_handler != NULL);
    fake_clock_handler(NULL);
}
