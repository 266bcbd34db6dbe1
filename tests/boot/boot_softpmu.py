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

import tallyqemu  # noqa: E402

SMP = 4
TIMEOUT_TCG = 400
TIMEOUT_KVM = 600
CONFIGS = (
    ('poll', 'test=perfmon softpmu.width=16 softpmu.overflow=poll'),
    ('nmi', 'test=perfmon softpmu.width=16 softpmu.overflow=nmi'),
)


def main():
    t = tallyqemu.BootTest(__doc__)
    for mode, cmdline in CONFIGS:
        run = t.run_suites(cmdline, mode, prefix='width=16 %s: ' % mode,
                           smp=SMP, timeout=TIMEOUT_TCG,
                           kvm_timeout=TIMEOUT_KVM)
        problems = run.problems()
        t.tap.result(not problems, 'width=16 %s: perfmon suite completes '
                     'with exit 33' % mode, '\n'.join(problems))
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
