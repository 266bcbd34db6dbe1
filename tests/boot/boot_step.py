#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of instruction counting by single-stepping (the `step` PMU,
# perfmon.step=on) on 4 CPUs under TCG: the in-kernel `step` suite at the
# default counter width and at steppmu.width=16 (wraps, sampling); then a
# shell session: `perfmon list` names the device and how to name its
# events, `perfmon stat -e step/instructions/ -- spin N` counts 4 per
# iteration plus the command's constant for several N, the device is never
# a default (`perfmon stat` without -e counts no instructions, a plain
# `instructions-nmi` is refused with how to name it), and bad device
# names get one line each, leaving no counter in use.  Without the boot
# option there is no such device.  Prints TAP.
#

import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import ktap  # noqa: E402
import tallyqemu  # noqa: E402

SMP = 4
TIMEOUT_TCG = 400
TIMEOUT_KVM = 600
CMD_TIMEOUT = 120
CONFIGS = (
    ('width=48', 'test=step perfmon.step=on'),
    ('width=16', 'test=step perfmon.step=on steppmu.width=16'),
)
SPINS = (1000, 2000, 3000)
# What `spin N` runs besides its loop: the shell's dispatch, reading N,
# timing the loop and printing its line (measured: 6,530 to 6,630 at
# these N, since the 128-bit divide behind the printed times became one
# instruction).  The numbers it prints move it by tens of instructions.
SPIN_CONSTANT = (5000, 8000)
SPIN_CONSTANT_SPREAD = 200


def run_suite(tap, args, name, cmdline):
    log = os.path.join(tallyqemu.BUILD, 'logs',
                       'serial-boot_step-%s.txt' % name)
    detail = ''
    with tallyqemu.Qemu(log=log, name='boot_step') as q:
        q.start(args.test_iso, smp=SMP, kvm=args.kvm_mode, cmdline=cmdline)
        try:
            code = q.wait_exit(TIMEOUT_KVM if q.kvm else TIMEOUT_TCG)
        except TimeoutError as e:
            code = None
            detail = str(e)
        report = ktap.parse(q.output)
        tail = q.tail()
    for path, r in report.leaves():
        tap.result(r.passed, '%s: %s' % (name, path),
                   '\n'.join(r.diagnostics) if not r.passed else '')
    if code is not None and code != tallyqemu.EXIT_SUCCESS:
        detail = tallyqemu.describe_exit(code) + '\n' + tail
    tap.result(code == tallyqemu.EXIT_SUCCESS and report.ok
               and len(report.leaves()) > 0,
               '%s: step suite completes with exit 33' % name,
               detail + '\n'.join(report.errors))


def csv_count(out, event):
    m = re.search(r'^(\d+),[^,]*,' + re.escape(event) + r',', out, re.M)
    return int(m.group(1)) if m else None


def shell_session(tap, args):
    log = os.path.join(tallyqemu.BUILD, 'logs', 'serial-boot_step-shell.txt')
    with tallyqemu.Qemu(log=log, name='boot_step') as q:
        q.start(args.iso, smp=SMP, kvm=args.kvm_mode,
                cmdline='perfmon.step=on')

        def run(line):
            return q.command(line, CMD_TIMEOUT)

        def listed():
            out = run('perfmon list')
            if not re.search(r'^step: \d+ counters, 48 bits, counts only '
                             r'events named step/EVENT/', out, re.M):
                return 'no step device line:\n' + out
            if not re.search(r'^\s+instructions-nmi\s', out, re.M):
                return 'instructions-nmi not listed:\n' + out
            return None

        def spins():
            constants = []
            for n in SPINS:
                out = run('perfmon stat -x , -e step/instructions/ -- spin %d'
                          % n)
                count = csv_count(out, 'step/instructions/')
                if count is None:
                    return 'no count for spin %d:\n%s' % (n, out)
                constants.append(count - 4 * n)
            tap.diag('spin N counts 4N + %s' % constants)
            lo, hi = SPIN_CONSTANT
            if not all(lo <= c <= hi for c in constants) or \
                    max(constants) - min(constants) > SPIN_CONSTANT_SPREAD:
                return 'constants %s, expected %d..%d within %d' % (
                    constants, lo, hi, SPIN_CONSTANT_SPREAD)
            return None

        def not_default():
            out = run('perfmon stat -- spin 10')
            if re.search(r'^\s+\S+\s+instructions', out, re.M):
                return 'the step device counted by default:\n' + out
            out = run('perfmon stat -e instructions -- spin 10')
            if not re.search(r'<not supported>\s+instructions', out):
                return 'plain instructions not <not supported>:\n' + out
            out = run('perfmon stat -e instructions-nmi -- spin 10')
            if "'instructions-nmi' is counted by PMU 'step' only, when " \
                    "named: step/instructions-nmi/" not in out:
                return 'no hint to name the device:\n' + out
            return None

        def bad_names():
            for spec, text in (
                    ('nope/instructions/', "no PMU named 'nope'"),
                    ('step/cycles/', "PMU 'step' does not count 'cycles'"),
                    ('step/instructions', 'bad PMU item'),
                    ('cpu/event=0x3c,bogus/', 'unknown term')):
                out = run('perfmon stat -e %s -- spin 10' % spec)
                if text not in out or 'spin:' in out:
                    return '%s: expected "%s":\n%s' % (spec, text, out)
            return None

        def no_leak():
            out = run('perfmon info')
            if 'counters in use: none' not in out:
                return 'counters left in use:\n' + out
            return None

        try:
            q.wait_prompt()
            tap.step('perfmon list names the step device', listed)
            tap.step('spin N: 4 instructions an iteration plus a constant',
                     spins)
            tap.step('never a default device', not_default)
            tap.step('bad device names: one line each', bad_names)
            tap.step('no counter left in use', no_leak)
        except tallyqemu.Stop:
            pass


def without_option(tap, args):
    log = os.path.join(tallyqemu.BUILD, 'logs', 'serial-boot_step-off.txt')
    with tallyqemu.Qemu(log=log, name='boot_step') as q:
        q.start(args.iso, smp=SMP, kvm=args.kvm_mode)

        def absent():
            out = q.command('perfmon list', CMD_TIMEOUT)
            if re.search(r'^step:', out, re.M):
                return 'step device without perfmon.step=on:\n' + out
            out = q.command('perfmon stat -e step/instructions/ -- spin 10',
                            CMD_TIMEOUT)
            if "no PMU named 'step'" not in out:
                return 'step/instructions/ accepted:\n' + out
            return None

        try:
            q.wait_prompt()
            tap.step('off without perfmon.step=on', absent)
        except tallyqemu.Stop:
            pass


def main():
    args = tallyqemu.boot_test_args(__doc__)
    tap = tallyqemu.Tap()
    for name, cmdline in CONFIGS:
        run_suite(tap, args, name, cmdline)
    shell_session(tap, args)
    without_option(tap, args)
    return tap.finish()


if __name__ == '__main__':
    sys.exit(main())
