#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of the in-kernel test runner's safety nets (kern/ktest.h).
#
# Cleanup: the perfmon suite on 4 CPUs with ktest.fail making three tests
# fail on purpose at a check where they hold events, threads or their
# affinity.  Each must be reported "not ok", say what it held when it
# failed, and leave no leak; every other test of the suite, run after them
# on the same counters, must pass.
#
# Leak check: the hidden tests of suite ktest leak on purpose (a counter,
# a thread, the test thread's affinity); each must be reported "not ok"
# with the leak named.
#
# Prints TAP; each boot fails on an exit status other than 35 (failures
# reported) and on a malformed report.
#

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402

SMP = 4
TIMEOUT_TCG = 300
TIMEOUT_KVM = 400

# (test, check that fails, what it must hold then).  The checks are counted
# in tests/kernel/perfmon_test.c (thread_migrating_exact's with 4 CPUs):
# the torture's third torturer is not created, wrap_exact's thread event
# not attached, thread_migrating_exact's thread event not attached.
FAILS = (
    ('perfmon.torture', 5, ('heap',)),
    ('perfmon.wrap_exact', 6, ('perfmon soft', 'test thread affinity')),
    ('perfmon.thread_migrating_exact', 12, ('perfmon soft', 'heap')),
)

# Hidden test: the start of the leak line it must get.
LEAKS = (
    ('ktest.leak_event', 'leak: perfmon soft: counters in use: 1, before '
     'the test: 0'),
    ('ktest.leak_thread', 'leak: heap: '),
    ('ktest.leak_affinity', 'leak: test thread affinity: 0x1, '),
)


def boot(t, what, cmdline):
    """Boot the test image with cmdline; return the parsed report."""
    run = t.run_suites(cmdline, what, prefix=None, smp=SMP,
                       timeout=TIMEOUT_TCG, kvm_timeout=TIMEOUT_KVM)
    problems = run.problems(tallyqemu.EXIT_TEST_FAILURE, failures=False)
    t.tap.result(not problems, '%s: the run completes, failures reported '
                 '(exit 35)' % what, '\n'.join(problems))
    return run.report


def leaks_in(r):
    return [d for d in r.diagnostics if d.startswith('leak:')]


def check_cleanup(t):
    cmdline = 'test=perfmon ktest.fail=' + ','.join(
        '%s@%d' % (name, check) for name, check, _ in FAILS)
    tap = t.tap
    results = dict(boot(t, 'cleanup', cmdline).leaves())
    for name, check, held in FAILS:
        r = results.get(name)
        if r is None:
            tap.fail('cleanup: %s ran' % name)
            continue
        diags = '\n'.join(r.diagnostics)
        problems = []
        if r.passed:
            problems.append('reported ok')
        if 'check %d fails on purpose' % check not in diags:
            problems.append('no failure on purpose at check %d' % check)
        for kind in held:
            if 'held: %s' % kind not in diags:
                problems.append('held no %s when it failed: the test '
                                'changed, choose another check' % kind)
        problems += leaks_in(r)
        tap.result(not problems, 'cleanup: %s fails at check %d holding %s, '
                   'and leaks nothing' % (name, check, ', '.join(held)),
                   '\n'.join(problems + ['diagnostics:', diags])
                   if problems else '')
    others = [(path, r) for path, r in results.items()
              if path not in [f[0] for f in FAILS]]
    bad = ['%s: %s' % (path, '\n'.join(r.diagnostics))
           for path, r in others if not r.passed]
    tap.result(others and not bad,
               'cleanup: the %d other perfmon tests pass after them'
               % len(others), '\n'.join(bad))


def check_leaks(t):
    cmdline = 'test=' + ','.join(name for name, _ in LEAKS)
    tap = t.tap
    results = dict(boot(t, 'leaks', cmdline).leaves())
    for name, leak in LEAKS:
        r = results.get(name)
        diags = '\n'.join(r.diagnostics) if r is not None else ''
        found = any(d.startswith(leak) for d in leaks_in(r)) \
            if r is not None else False
        ok = r is not None and not r.passed and found
        tap.result(ok, 'leak check: %s reported, "%s..."' % (name, leak),
                   '' if ok else 'not run' if r is None else
                   ('reported ok\n' if r.passed else '') + diags)


def main():
    t = tallyqemu.BootTest(__doc__)
    check_cleanup(t)
    check_leaks(t)
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
