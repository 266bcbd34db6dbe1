#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of `perfmon selftest` as a user runs it, on 2 CPUs: the first
# line says what hardware PMU there is (under TCG or this nested KVM: none,
# and that only the software-PMU checks run), every other line is a check
# with its verdict, what it measured and, for PASS and FAIL, the range it
# expected; no check fails; the summary counts the lines; the run leaves no
# counter in use.  A stray argument gets one line and the usage, and
# `perfmon help` lists the subcommand.  Prints TAP; exits 1 on failure.
#

import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402

SMP = 2
CMD_TIMEOUT = 120
FIRST_RE = re.compile(r'^perfmon selftest: hardware PMU: (.*)$')
RANGE_RE = re.compile(r'\(expected [^)]+\)$')
SUMMARY_RE = re.compile(r'^perfmon selftest: (\d+) checks: (\d+) PASS, '
                        r'(\d+) FAIL, (\d+) SKIP$')
SOFT_CHECKS = ('soft: task-clock', 'soft: context-switches',
               'soft: cpu-migrations', 'soft: test event')


def check_run(out):
    """None, or what is wrong with one `perfmon selftest` output."""
    lines = [ln for ln in out.split('\n') if ln.strip()]
    if len(lines) < 3:
        return 'too few lines:\n' + out
    m = FIRST_RE.match(lines[0])
    if not m:
        return 'first line is not the hardware PMU line: %r' % lines[0]
    if m.group(1).startswith('none') \
            and not m.group(1).endswith(': software-PMU checks only'):
        return 'no PMU, but not said that only software checks run: %r' \
            % lines[0]
    summary = SUMMARY_RE.match(lines[-1])
    if not summary:
        return 'last line is not the summary: %r' % lines[-1]
    counts = {'PASS': 0, 'FAIL': 0, 'SKIP': 0}
    for ln in lines[1:-1]:
        verdict = ln[:4]
        if verdict not in counts or ln[4:6] != '  ':
            return 'not a check line: %r' % ln
        counts[verdict] += 1
        if verdict != 'SKIP' and not RANGE_RE.search(ln):
            return 'a %s without its expected range: %r' % (verdict, ln)
    total, npass, nfail, nskip = (int(g) for g in summary.groups())
    if (npass, nfail, nskip) != (counts['PASS'], counts['FAIL'],
                                 counts['SKIP']) \
            or total != npass + nfail + nskip:
        return 'summary %r does not count the lines (%r)' % (lines[-1],
                                                             counts)
    if nfail:
        return 'failed checks:\n' + '\n'.join(ln for ln in lines
                                             if ln.startswith('FAIL'))
    missing = [c for c in SOFT_CHECKS if c not in out]
    if missing:
        return 'software checks missing: %r' % missing
    return None


def main():
    t = tallyqemu.BootTest(__doc__)
    with t.shell(timeout=CMD_TIMEOUT, smp=SMP) as sh:

        def selftest():
            out = sh.run('perfmon selftest')
            t.tap.diag(out)
            return check_run(out)

        def twice():
            return check_run(sh.run('perfmon selftest'))

        def stray_argument():
            out = sh.run('perfmon selftest now')
            want = ["perfmon: selftest: no arguments expected, not 'now'",
                    'usage: perfmon selftest [-j]']
            if out.strip().split('\n') != want:
                return 'expected %r, got:\n%s' % (want, out)
            return None

        sh.q.wait_prompt()
        sh.step('perfmon selftest: lines, verdicts, summary', selftest)
        sh.step('no counter left in use', sh.no_leak)
        sh.step('a second run passes too', twice)
        sh.step('a stray argument: one line and the usage', stray_argument)
        sh.step('perfmon help lists selftest',
                sh.expect('perfmon help', ['perfmon selftest']))
        sh.step('poweroff exits with 33', sh.poweroff)
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
