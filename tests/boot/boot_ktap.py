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

import ktap  # noqa: E402
import tallyqemu  # noqa: E402

SMP = 4
# The whole suite, boot included; generous for TCG with four vCPUs on a
# loaded two-core machine.
RUN_TIMEOUT_TCG = 420
RUN_TIMEOUT_KVM = 480


def main():
    args = tallyqemu.boot_test_args(__doc__)
    tap = tallyqemu.Tap()
    log = args.log or os.path.join(tallyqemu.BUILD, 'logs',
                                   'serial-boot_ktap.txt')
    with tallyqemu.Qemu(log=log, name='boot_ktap') as q:
        q.start(args.test_iso, smp=SMP, kvm=args.kvm_mode, cmdline='test')
        tap.diag('qemu: %s, -smp %d; serial log %s'
                 % ('KVM' if q.kvm else 'TCG', SMP, q.log_path))
        timeout = RUN_TIMEOUT_KVM if q.kvm else RUN_TIMEOUT_TCG
        try:
            code = q.wait_exit(timeout)
            why = None
        except TimeoutError as e:
            code = None
            why = str(e)
        output = q.output

    report = ktap.parse(output)
    for path, r in report.leaves():
        name = 'ktap: ' + path
        if r.skip:
            name += ' # SKIP ' + r.skip_reason
        tap.result(r.passed, name, '\n'.join(r.diagnostics)
                   if not r.passed else '')

    tail = q.tail()
    if code is None:
        tap.fail('kernel test run ends', why)
    else:
        tap.result(code == tallyqemu.EXIT_SUCCESS,
                   'kernel test run exits with 33',
                   '' if code == tallyqemu.EXIT_SUCCESS else
                   '%s; last serial lines:\n%s'
                   % (tallyqemu.describe_exit(code), tail))
    problems = list(report.errors)
    if report.version and not report.errors and not report.results:
        problems.append('the plan is 1..0: no kernel test ran')
    detail = '\n'.join(problems)
    if problems and report.diagnostics:
        detail += '\ndiagnostics after the last result:\n' + \
            '\n'.join(report.diagnostics)
    tap.result(not problems, 'KTAP report is complete', detail)
    return tap.finish()


if __name__ == '__main__':
    sys.exit(main())
