#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of the panic report: the boot option crashtest=KIND makes the
# kernel fail on purpose (kern/main.c).  For a page fault, a failed
# assertion and a division by zero, the console must show what a user
# needs to read the crash (the exception's vector and name or the failed
# expression with file and line, RIP, CR2 for a page fault, the registers,
# the CPU, a backtrace naming the kernel functions involved), and QEMU must
# exit with the panic status 37 (panic=exit) instead of hanging.  Two more
# kinds check that the locking assertions fire: a spinlock that an
# interrupt handler took, taken again with interrupts enabled, and a sleep
# with a spinlock held.  Prints TAP.
#

import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402

TIMEOUT = 120

CASES = (
    ('pagefault', [
        r'panic: cpu0: exception 14 \(page fault\), error code 0x2',
        r'rip: \[<ffffffff[0-9a-f]{8}>\] main_crash_test\+0x[0-9a-f]+',
        r'cr2: 0000000000000010 \(page fault address\)',
        r'rax [0-9a-f]{16} rbx [0-9a-f]{16}',
        r'rflags [0-9a-f]{16} cs 0008',
        r'backtrace:\n(.*\n)*\s+\[<[0-9a-f]+>\] boot_main\+0x[0-9a-f]+',
    ]),
    ('assert', [
        r"panic: cpu0: assertion failed: kind\[0\] == '\\0'",
        r'at kern/main\.c:\d+ in main_crash_test\(\)',
        r'backtrace:\n\s+\[<[0-9a-f]+>\] assert_fail\+0x[0-9a-f]+\n'
        r'\s+\[<[0-9a-f]+>\] main_crash_test\+0x[0-9a-f]+',
        # The walk ends at the boot entry, whose frame pointer is 0.
        r'\] boot_main\+0x[0-9a-f]+\n\s+\[<[0-9a-f]+>\] '
        r'boot_high_entry\+0x[0-9a-f]+\n(?!\s+\[<)',
    ]),
    ('divide', [
        r'panic: cpu0: exception 0 \(divide error\)',
        r'rip: \[<ffffffff[0-9a-f]{8}>\] main_crash_test\+0x[0-9a-f]+',
    ]),
    # A lock an interrupt handler took, then taken with interrupts enabled.
    ('spinlock', [
        r'assertion failed: !lock->intr_taken \|\| !cpu_intr_enabled\(\)',
        r'\] spinlock_lock\+0x[0-9a-f]+\n\s+\[<[0-9a-f]+>\] '
        r'main_crash_test\+0x[0-9a-f]+',
    ]),
    # A sleep with a spinlock held.
    ('sleep', [
        r'assertion failed: thread_preempt_enabled\(\)',
        r'\] thread_sleep\+0x[0-9a-f]+\n\s+\[<[0-9a-f]+>\] '
        r'main_crash_test\+0x[0-9a-f]+',
    ]),
)


def main():
    t = tallyqemu.BootTest(__doc__)
    for kind, patterns in CASES:
        run = t.run_to_exit(kind, smp=2, cmdline='crashtest=' + kind,
                            timeout=TIMEOUT)
        run.report_exit(t.tap, '%s: QEMU exits' % kind, tallyqemu.EXIT_PANIC)
        out = run.text
        for pattern in patterns:
            t.tap.result(re.search(pattern, out) is not None,
                         '%s: report shows /%s/'
                         % (kind, pattern.split('\n')[0]), out[-1500:])
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
