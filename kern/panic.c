/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Panics and assertion failures.
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/machine.h"
#include "kern/assert.h"
#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/panic.h"
#include "kern/string.h"
#include "kern/symtab.h"

#define PANIC_MAX_FRAMES    24

static unsigned int panic_owner = ~0U;

void
panic_begin(void)
{
    unsigned int expected = ~0U;

    cpu_intr_disable();

    if (!__atomic_compare_exchange_n(&panic_owner, &expected, cpu_id(), false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        if (expected == cpu_id()) {
            console_write_nmi("panic: nested panic, halting\n", 29);
            panic_end();
        }

        cpu_halt_forever();
    }

    console_panic();
    machine_stop_others();
}

void
panic_print_symbol(const char *prefix, uint64_t addr)
{
    uint64_t offset;
    const char *name = symtab_lookup(addr, &offset);

    if (name == NULL) {
        kprintf("%s[<%016lx>] ?\n", prefix, addr);
    } else {
        kprintf("%s[<%016lx>] %s+0x%lx\n", prefix, addr, name, offset);
    }
}

static bool
panic_frame_valid(uint64_t rbp)
{
    /* Kernel stacks live in the kernel image or the direct map. */
    return rbp != 0 && (rbp & 7) == 0 && rbp >= DIRECT_MAP_BASE;
}

void
panic_backtrace(uint64_t rip, uint64_t rbp)
{
    kprintf("backtrace:\n");
    panic_print_symbol("  ", rip);

    for (unsigned int i = 0; i < PANIC_MAX_FRAMES && panic_frame_valid(rbp);
         i++) {
        const uint64_t *frame = (const uint64_t *)rbp;
        uint64_t ret = frame[1];

        if (ret == 0) {
            break;
        }

        /* The return address follows the call: name the call itself. */
        panic_print_symbol("  ", ret - 1);

        if (frame[0] <= rbp) {
            break;      /* stacks grow down: a frame above is corrupt */
        }

        rbp = frame[0];
    }
}

void
panic_end(void)
{
    const char *mode = cmdline_get("panic");

    if ((mode != NULL && strcmp(mode, "exit") == 0) || cmdline_has("test")) {
        machine_qemu_exit(MACHINE_EXIT_PANIC);
    }

    kprintf("panic: system halted\n");
    cpu_halt_forever();
}

void
panic(const char *fmt, ...)
{
    const uint64_t *fp;
    va_list ap;

    panic_begin();
    kprintf("\npanic: cpu%u: ", cpu_id());
    va_start(ap, fmt);
    kvprintf(fmt, ap);
    va_end(ap);
    kprintf("\n");
    fp = __builtin_frame_address(0);
    panic_backtrace(fp[1] - 1, fp[0]);
    panic_end();
}

void
assert_fail(const char *expr, const char *file, int line, const char *func)
{
    panic("assertion failed: %s\n  at %s:%d in %s()", expr, file, line, func);
}
