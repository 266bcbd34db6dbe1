#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of the perfmon core with a narrow software PMU: the in-kernel
# perfmon suite on 4 CPUs with softpmu.width=16, once with the poll timer
# catching wraps and once with overflow NMIs, so that counts of millions
# stay exact across thousands of wraps in both modes (the default 32-bit
# configuration runs in boot_ktap).  Prints TAP.
#

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import ktap  # noqa: E402
import tallyqemu  # noqa: E402

SMP = 4
TIMEOUT_TCG = 400
TIMEOUT_KVM = 600
CONFIGS = (
    ('poll', 'test=perfmon softpmu.width=16 softpmu.overflow=poll'),
    ('nmi', 'test=perfmon softpmu.width=16 softpmu.overflow=nmi'),
)


def run(tap, args, mode, cmdline):
    log = os.path.join(tallyqemu.BUILD, 'logs',
                       'serial-boot_softpmu-%s.txt' % mode)
    detail = ''
    with tallyqemu.Qemu(log=log, name='boot_softpmu') as q:
        q.start(args.test_iso, smp=SMP, kvm=args.kvm_mode, cmdline=cmdline)
        try:
            code = q.wait_exit(TIMEOUT_KVM if q.kvm else TIMEOUT_TCG)
        except TimeoutError as e:
            code = None
            detail = str(e)
        report = ktap.parse(q.output)
        tail = q.tail()
    for path, r in report.leaves():
        tap.result(r.passed, 'width=16 %s: %s' % (mode, path),
                   '\n'.join(r.diagnostics) if not r.passed else '')
    if code is not None and code != tallyqemu.EXIT_SUCCESS:
        detail = tallyqemu.describe_exit(code) + '\n' + tail
    tap.result(code == tallyqemu.EXIT_SUCCESS and report.ok
               and len(report.leaves()) > 0,
               'width=16 %s: perfmon suite completes with exit 33' % mode,
               detail + '\n'.join(report.errors))


def main():
    args = tallyqemu.boot_test_args(__doc__)
    tap = tallyqemu.Tap()
    for mode, cmdline in CONFIGS:
        run(tap, args, mode, cmdline)
    return tap.finish()


if __name__ == '__main__':
    sys.exit(main())
