#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test running the in-kernel test suite: boots with the option "test"
# on four CPUs, waits for QEMU to exit, parses the KTAP report out of the
# serial log with tools/ktap.py and re-emits one TAP line per kernel test
# ("ok N - ktap: suite.test").  Fails on an exit status other than 33, on
# any failing kernel test, and on a malformed or missing report (no version
# line, no plan, fewer results than planned, no tests at all).
#

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402

SMP = 4
# The whole suite, boot included; generous for TCG with four vCPUs on a
# loaded two-core machine.
RUN_TIMEOUT_TCG = 420
RUN_TIMEOUT_KVM = 480


def main():
    t = tallyqemu.BootTest(__doc__)
    run = t.run_suites('test', smp=SMP, timeout=RUN_TIMEOUT_TCG,
                       kvm_timeout=RUN_TIMEOUT_KVM)
    run.report_exit(t.tap, 'kernel test run exits')
    problems = run.report_problems()
    t.tap.result(not problems, 'KTAP report is complete', '\n'.join(problems))
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
