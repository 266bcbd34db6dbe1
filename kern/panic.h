/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Fatal errors.
 *
 * panic() prints its message, the CPU number and a symbolized backtrace on
 * the console, stops the other CPUs and halts.  With the boot option
 * `panic=exit` (always given by the test harness, implied by `test`) it
 * makes QEMU exit with the panic status instead, so tests never hang.
 *
 * The pieces are exported for the arch code, whose exception report adds
 * the registers: panic_begin(), then any printing, then panic_end().
 */

#ifndef KERN_PANIC_H
#define KERN_PANIC_H

#include <stdint.h>

#include "kern/macros.h"

void panic(const char *fmt, ...) __noreturn __format_printf(1, 2);

/*
 * Enter the panic state: only the first CPU to panic reports; any other
 * (or a nested panic) halts here.  Disables interrupts.
 */
void panic_begin(void);

/* Print the backtrace that starts at the frame pointer rbp. */
void panic_backtrace(uint64_t rip, uint64_t rbp);

void panic_end(void) __noreturn;

/* Report "  [<address>] symbol+offset" on the console. */
void panic_print_symbol(const char *prefix, uint64_t addr);

#endif /* KERN_PANIC_H */
