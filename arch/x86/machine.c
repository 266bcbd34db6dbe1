/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * Reboot, power off and QEMU exit.
 */

#include <stdint.h>

#include "arch/x86/acpi.h"
#include "arch/x86/cpu.h"
#include "arch/x86/io.h"
#include "arch/x86/machine.h"
#include "kern/shell.h"

#define MACHINE_KBC_STATUS      0x64
#define MACHINE_KBC_CMD_RESET   0xfe
#define MACHINE_PCI_RESET_PORT  0xcf9

void
machine_qemu_exit(unsigned int code)
{
    cpu_intr_disable();
    io_write32(MACHINE_DEBUG_EXIT_PORT, code);
    cpu_halt_forever();
}

void
machine_reboot(void)
{
    cpu_intr_disable();
    machine_stop_others();

    /* Wait for the keyboard controller's input buffer, then pulse reset. */
    for (unsigned int i = 0; i < 100000; i++) {
        if ((io_read8(MACHINE_KBC_STATUS) & 0x02) == 0) {
            break;
        }
    }

    io_write8(MACHINE_KBC_STATUS, MACHINE_KBC_CMD_RESET);
    io_write8(MACHINE_PCI_RESET_PORT, 0x02);
    io_write8(MACHINE_PCI_RESET_PORT, 0x06);

    /* Last resort: an empty IDT makes the next exception a triple fault. */
    struct {
        uint16_t limit;
        uint64_t base;
    } __packed empty = { 0, 0 };
    __asm__ __volatile__("lidt %0; int3" : : "m"(empty));
    cpu_halt_forever();
}

void
machine_poweroff(void)
{
    cpu_intr_disable();
    machine_stop_others();
    io_write32(MACHINE_DEBUG_EXIT_PORT, MACHINE_EXIT_SUCCESS);
    acpi_poweroff();
    cpu_halt_forever();
}

__attribute__((weak)) void
machine_stop_others(void)
{
}

static int
machine_cmd_reboot(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    machine_reboot();
}

static int
machine_cmd_poweroff(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    machine_poweroff();
}

SHELL_COMMAND(reboot, "reboot", "", "reset the machine", machine_cmd_reboot);
SHELL_COMMAND(poweroff, "poweroff", "", "power the machine off (exits QEMU)",
              machine_cmd_poweroff);
