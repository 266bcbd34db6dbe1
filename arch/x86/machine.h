/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Whole-machine operations: reboot, power off, leaving QEMU with a status,
 * stopping the other CPUs on panic.
 */

#ifndef ARCH_X86_MACHINE_H
#define ARCH_X86_MACHINE_H

#include "kern/macros.h"

/*
 * QEMU's isa-debug-exit device (iobase 0xf4): writing V makes QEMU exit
 * with status (V << 1) | 1.  Without the device the write does nothing.
 */
#define MACHINE_DEBUG_EXIT_PORT     0xf4
#define MACHINE_EXIT_SUCCESS        0x10    /* QEMU exits 33 */
#define MACHINE_EXIT_FAILURE        0x11    /* 35 */
#define MACHINE_EXIT_PANIC          0x12    /* 37 */

/* Exit QEMU through isa-debug-exit; halts if the device is absent. */
void machine_qemu_exit(unsigned int code) __noreturn;

/* Reset the machine (keyboard controller, then PCI reset, then triple fault). */
void machine_reboot(void) __noreturn;

/* Power off: QEMU exit, then ACPI S5, then halt. */
void machine_poweroff(void) __noreturn;

/*
 * Stop every other CPU (NMI IPI) so a panic report is not disturbed.
 * Safe to call before SMP is up.
 */
void machine_stop_others(void);

#endif /* ARCH_X86_MACHINE_H */
