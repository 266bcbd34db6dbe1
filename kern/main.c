/*
 * Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
 *
 *
 * The kernel's entry from boot.asm.
 *
 * boot_main() brings up only what is needed to report anything (the serial
 * console, this CPU's descriptor tables, the boot information and the
 * command line); every other module starts as an init operation, in
 * dependency order.  Then the kernel runs the in-kernel tests (`test` on the
 * command line) or the shell.
 */

#include <stdint.h>

#include "arch/x86/cpu.h"
#include "arch/x86/fwcfg.h"
#include "arch/x86/machine.h"
#include "arch/x86/multiboot2.h"
#include "arch/x86/tsc.h"
#include "arch/x86/uart.h"
#include "kern/assert.h"
#include "kern/cmdline.h"
#include "kern/console.h"
#include "kern/error.h"
#include "kern/init.h"
#include "kern/ktest.h"
#include "kern/log.h"
#include "kern/panic.h"
#include "kern/pmem.h"
#include "kern/printf.h"
#include "kern/shell.h"
#include "kern/spinlock.h"
#include "kern/string.h"
#include "kern/thread.h"
#include "kern/xcall.h"

#define MAIN_CMDLINE_MAX    1024

void boot_main(uint32_t magic, uint64_t info_pa, uint32_t firmware_cr0)
    __noreturn;

static char main_cmdline[MAIN_CMDLINE_MAX];

/*
 * The command line is GRUB's, followed by the options QEMU passes through
 * fw_cfg (later options win over earlier ones with the same key).
 */
static void
main_setup_cmdline(void)
{
    char extra[MAIN_CMDLINE_MAX];
    int n, error;

    n = fwcfg_read_file(FWCFG_CMDLINE_FILE, extra, sizeof(extra));
    ksnprintf(main_cmdline, sizeof(main_cmdline), "%s%s%s",
              multiboot2_info.cmdline,
              n > 0 && multiboot2_info.cmdline[0] != '\0' ? " " : "",
              n > 0 ? extra : "");
    error = cmdline_parse(main_cmdline);

    if (error) {
        log_error("cmdline: ignored (%s): %s", error_str(error), main_cmdline);
    }
}

static void
main_run_tests(void *arg)
{
    unsigned int failed;

    (void)arg;

    /*
     * An empty KTAP report would read as a pass to anyone who only looks
     * at the exit status: say what happened instead, and fail.
     */
    if (ktest_count() == 0) {
        log_error("ktest: this kernel has no in-kernel tests; "
                  "boot build/tally-test.iso to run them");
        machine_qemu_exit(MACHINE_EXIT_FAILURE);
    }

    failed = ktest_run_all();
    machine_qemu_exit(failed == 0 ? MACHINE_EXIT_SUCCESS
                                  : MACHINE_EXIT_FAILURE);
}

static void
main_run_shell(void *arg)
{
    (void)arg;
    shell_run();
}

/*
 * The boot option crashtest=KIND makes the kernel fail on purpose once it
 * is up, so that tests can check the panic report a user would read:
 * pagefault (a write to an unmapped address), assert (a failed assertion),
 * divide (a division by zero), spinlock (a lock an interrupt handler took,
 * then taken with interrupts enabled), or sleep (a sleep with a spinlock
 * held).  The last two check that the locking assertions fire.
 */
static volatile unsigned int main_crash_divisor;
static struct spinlock main_crash_lock = SPINLOCK_INITIALIZER;

/* Runs in the xcall interrupt handler of another CPU. */
static void
main_crash_lock_in_intr(void *arg)
{
    (void)arg;
    spinlock_lock(&main_crash_lock);
    spinlock_unlock(&main_crash_lock);
}
static volatile uintptr_t main_crash_address = 0x10;   /* unmapped after SMP */

static void __attribute__((noinline))
main_crash_test(const char *kind)
{
    if (strcmp(kind, "pagefault") == 0) {
        *(volatile uint64_t *)main_crash_address = 1;
    } else if (strcmp(kind, "assert") == 0) {
        assert(kind[0] == '\0');
    } else if (strcmp(kind, "divide") == 0) {
        log_info("crashtest: %u", 1000 / main_crash_divisor);
    } else if (strcmp(kind, "spinlock") == 0 && cpu_count() > 1) {
        xcall_call(main_crash_lock_in_intr, NULL, 1);
        spinlock_lock(&main_crash_lock);
    } else if (strcmp(kind, "sleep") == 0) {
        spinlock_lock(&main_crash_lock);
        thread_sleep();
    }

    log_warning("crashtest: unknown kind '%s' (pagefault, assert, divide, "
                "spinlock with 2 CPUs or more, sleep)", kind);
}

/* Start the first thread: the test runner or the shell. */
static void
main_start(void)
{
    struct thread *thread;
    bool test = cmdline_has("test");
    int error;

    error = thread_create(&thread, test ? "ktest" : "shell",
                          test ? main_run_tests : main_run_shell, NULL,
                          THREAD_CPUMASK_ALL);

    if (error) {
        panic("main: cannot start the %s thread: %s", test ? "test" : "shell",
              error_str(error));
    }

    thread_unref(thread);
}

static int
main_cmd_cmdline(int argc, char **argv)
{
    const char *key, *value;

    (void)argv;

    if (argc != 1) {
        kprintf("usage: cmdline\n");
        return SHELL_ERR_REPORTED;
    }

    kprintf("%s\n", cmdline_raw());

    for (unsigned int i = 0; i < cmdline_nr_opts(); i++) {
        cmdline_opt(i, &key, &value);
        kprintf("  %s%s%s\n", key, value != NULL ? " = " : "",
                value != NULL ? value : "");
    }

    return 0;
}

SHELL_COMMAND(cmdline, "cmdline", "", "show the kernel command line options",
              main_cmd_cmdline);

void
boot_main(uint32_t magic, uint64_t info_pa, uint32_t firmware_cr0)
{
    int error;

    uart_setup();
    cpu_bootstrap();

    if (magic != MULTIBOOT2_BOOT_MAGIC) {
        panic("boot: bad multiboot2 magic 0x%x", magic);
    }

    error = multiboot2_parse(pmem_va(info_pa), info_pa);

    if (error) {
        panic("boot: unusable multiboot2 information");
    }

    main_setup_cmdline();
    tsc_calibrate();
    log_info("tally: booting on %s (%s family 0x%x model 0x%x)",
             cpu_info.brand, cpu_info.vendor_str, cpu_info.family,
             cpu_info.model);
    log_info("tsc: %lu.%03lu MHz%s", tsc_freq() / 1000000,
             tsc_freq() / 1000 % 1000,
             cpu_info.invariant_tsc ? ", invariant" : "");
    log_info("cmdline: %s", cmdline_raw());

    if (firmware_cr0 & CPU_CR0_CD) {
        log_warning("cpu: the firmware left CR0.CD set (caches off): "
                    "cleared; memory types still come from its MTRRs");
    }

    if (init_run_all() != 0) {
        log_warning("init: some modules failed to start (see above)");
    }

    if (cmdline_get("crashtest") != NULL) {
        main_crash_test(cmdline_get("crashtest"));
    }

    main_start();
    thread_run_idle();
}
