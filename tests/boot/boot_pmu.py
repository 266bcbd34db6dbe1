#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of the x86 hardware PMU glue (arch/x86/pmu.c) on a machine
# without a PMU (QEMU TCG, or this nested KVM which shows none): the boot
# log says so in exactly one "pmu:" line, the software PMU still registers,
# the kernel reaches the prompt without a crash and powers off cleanly.
# A second boot with perfmon.hw=off must log that the hardware driver was
# skipped, and probe nothing.  Where the guest does have a PMU (--kvm on a
# host that passes one through), the first boot accepts the driver's
# summary line instead of the absence line.  Both TCG and KVM set the
# hypervisor bit, so an absence line also says, in the same line, what
# would expose a PMU.  Prints TAP; exits 1 on any failure.
#

import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402

CMD_TIMEOUT = 30
ABSENT_RE = re.compile(r'pmu: no hardware PMU \(([^)\r\n]+)\), '
                       r'software events only')
PRESENT_RE = re.compile(r'pmu: (intel|amd) version \d+, \d+ counters')
OFF_LINE = 'pmu: hardware PMU disabled by perfmon.hw=off'
SOFT_RE = re.compile(r'softpmu: \d+ counters')
PMU_LINE_RE = re.compile(r'\bpmu: [^\r\n]*')
BAD_RE = re.compile(r'panic: |backtrace:|unclaimed NMI')


def boot(t, name, cmdline, checks):
    with t.shell(name, CMD_TIMEOUT, smp=2, cmdline=cmdline) as sh:

        def step(desc, fn):
            sh.step('%s: %s' % (name, desc), fn)

        def boot_log():
            return sh.q.output.replace('\r', '')

        step('reaches the prompt', sh.prompt)
        for desc, fn in checks:
            step(desc, lambda fn=fn: fn(boot_log()))
        step('no crash or fault reported',
             lambda: ('found %r' % BAD_RE.search(boot_log()).group(0))
             if BAD_RE.search(boot_log()) else None)
        step('the pmu line is in the `log` buffer',
             lambda: None if 'pmu: ' in sh.run('log')
             else '`log` shows no "pmu:" line')
        step('poweroff exits with 33', sh.poweroff)


def pmu_lines(text):
    return PMU_LINE_RE.findall(text)


def one_pmu_line(text):
    lines = pmu_lines(text)
    if len(lines) != 1:
        return 'expected one "pmu:" line, got %d: %r' % (len(lines), lines)
    return None


def absence_or_driver(text):
    if ABSENT_RE.search(text) or PRESENT_RE.search(text):
        return None
    return 'neither the absence line nor a driver line: %r' % pmu_lines(text)


HINT = ('the hypervisor hides it: try QEMU pmu=on, kvm.enable_pmu=1, a '
        'non-hybrid host')


def absence_says_what_to_try(text):
    if PRESENT_RE.search(text):
        return None
    m = ABSENT_RE.search(text)
    line = text[m.start():].split('\n')[0] if m else ''
    return None if HINT in line else 'no %r in %r' % (HINT, line)


def soft_registered(text):
    return None if SOFT_RE.search(text) else 'no "softpmu: N counters" line'


def off_honoured(text):
    if OFF_LINE not in text:
        return 'no %r line; pmu lines: %r' % (OFF_LINE, pmu_lines(text))
    if ABSENT_RE.search(text) or PRESENT_RE.search(text):
        return 'the driver was probed anyway: %r' % pmu_lines(text)
    return None


def main():
    t = tallyqemu.BootTest(__doc__)
    boot(t, 'default', '', [
        ('one "pmu:" line in the boot log', one_pmu_line),
        ('absence (or driver) line', absence_or_driver),
        ('the absence line says what to try', absence_says_what_to_try),
        ('software PMU registered', soft_registered),
    ])
    boot(t, 'hw-off', 'perfmon.hw=off', [
        ('one "pmu:" line in the boot log', one_pmu_line),
        ('perfmon.hw=off honoured', off_honoured),
        ('software PMU registered', soft_registered),
    ])
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
