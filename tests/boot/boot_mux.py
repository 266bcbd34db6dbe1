#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of multiplexing, with the software PMU limited to 2 counters
# (softpmu.counters=2) on 4 CPUs: the in-kernel mux suite passes (six
# events on a steady stream, groups, pinned, torture), and through the
# shell `perfmon stat` with more events than counters prints each one's
# share below 100% and estimates within tolerance (cpu-clock against
# its enabled time, interrupts against the clock ticks the CPUs took), a
# group's members run for the same share, a pinned event counts exactly
# with no share shown, a group larger than the counters and bad group
# syntax are refused with one clear line, -x lines keep one field count
# and tell the share, and nothing is left in use.  Prints TAP; exits 1 on
# failure.
#

import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402
from tallyqemu import (slept_ms, stat_count, stat_elapsed,  # noqa: E402
                       stat_msec)

SMP = 4
CMDLINE = 'softpmu.counters=2'
CMD_TIMEOUT = 120
SUITE_TIMEOUT = 300
TICK_RE = re.compile(r'^clock_ticks/\d+\s+([\d,]+)\s*$', re.M)


def share_of(out, event):
    """The (xx.xx%) share printed on event's line, or None (100%)."""
    m = re.search(r'^[^\n]*[ \t]' + re.escape(event)
                  + r'[ \t][^\n]*\((\d+\.\d+)%\)[ \t]*$', out, re.M)
    return float(m.group(1)) if m else None


def suite(t):
    run = t.run_suites('test=mux ' + CMDLINE, 'suite', skip_fails=True,
                       smp=SMP, timeout=SUITE_TIMEOUT)
    names = [path for path, r in run.leaves()]
    problems = run.problems()
    if len(names) != 3:
        problems.append('tests: %r' % names)
    t.tap.result(not problems, 'the mux suite runs its 3 tests and exits '
                 'with 33', '\n'.join(problems))


def shell(t):
    with t.shell(timeout=CMD_TIMEOUT, smp=SMP, cmdline=CMDLINE) as sh:
        run = sh.run

        def ticks():
            return sum(int(v.replace(',', ''))
                       for v in TICK_RE.findall(run('syscnt clock_ticks')))

        def estimates():
            before = ticks()
            out = run('perfmon stat -a -e cpu-clock,cs,interrupts,xcalls,'
                      'test sleep 300')
            taken = ticks() - before
            shares = [share_of(out, e) for e in
                      ('cpu-clock', 'cs', 'interrupts', 'xcalls', 'test')]
            if None in shares or max(shares) >= 100:
                return 'not every share below 100%%: %r\n%s' % (shares, out)
            clock, elapsed = stat_msec(out, 'cpu-clock'), stat_elapsed(out)
            intrs = stat_count(out, 'interrupts')
            if clock is None or elapsed is None or intrs is None:
                return 'cpu-clock, interrupts or elapsed missing:\n' + out
            # A time event's estimate is its enabled time, whatever share
            # it ran for, and every CPU's event was enabled over the whole
            # sleep.  (Against the elapsed time a host stall around the
            # command's start made a right estimate look wrong.)
            csv = run('perfmon stat -x , -a -e cpu-clock,cs,interrupts,'
                      'xcalls,test sleep 300')
            row = [l.split(',') for l in csv.split('\n')
                   if l.split(',')[2:3] == ['cpu-clock']]
            slept = slept_ms(csv)
            if len(row) != 1 or not float(row[0][4]) or slept is None:
                return 'no cpu-clock line with a share, or no sleep:\n' + csv
            est, running, pcnt = (float(row[0][0]), int(row[0][3]),
                                  float(row[0][4]))
            enabled = running * 100 / pcnt / 1e6
            if not 0.98 * enabled <= est <= 1.02 * enabled:
                return 'cpu-clock estimate %.2f msec, not its enabled ' \
                    'time %.2f msec within 2%%:\n%s' % (est, enabled, csv)
            if enabled < SMP * slept:
                return 'cpu-clock enabled %.2f msec, less than %d x the ' \
                    'sleep:\n%s' % (enabled, SMP, csv)
            # The ticks the CPUs took, not those of the elapsed time: a
            # CPU the host stalls takes one tick for all it missed.
            if not 0.75 * taken <= intrs <= 1.25 * taken:
                return 'interrupts %d, not about the %d ticks taken:\n%s' \
                    % (intrs, taken, out)
            return None

        def group_shares():
            out = run('perfmon stat -e {cs,migrations},test,interrupts '
                      'hop 100')
            a, b = share_of(out, 'cs'), share_of(out, 'migrations')
            if a is None or a != b:
                return 'group shares differ: %r %r\n%s' % (a, b, out)
            return None

        def pinned_exact():
            out = run('perfmon stat -e cs:D,test,interrupts,xcalls hop 50')
            if stat_count(out, 'cs:D') != 50 or share_of(out, 'cs:D'):
                return 'cs:D not exactly 50, or with a share:\n' + out
            if share_of(out, 'test') is None:
                return 'the others did not take turns:\n' + out
            return None

        def csv():
            out = run('perfmon stat -x , -e test,cs,migrations,interrupts '
                      'hop 100')
            rows = [l.split(',') for l in out.split('\n')
                    if re.match(r'^(\d+|<not counted>),', l)]
            if len(rows) != 4 or len(set(len(r) for r in rows)) != 1:
                return 'want 4 lines of one field count:\n' + out
            if any(float(r[4]) >= 100 for r in rows):
                return 'a percent field says 100 while taking turns:\n' + out
            return None

        sh.step('reaches the prompt with %s' % CMDLINE, sh.prompt)
        sh.step('five events on two counters: shares below 100%, '
                'estimates within tolerance', estimates)
        sh.step('a group\'s members run for the same share', group_shares)
        sh.step('a pinned event counts exactly beside others', pinned_exact)
        sh.step('-x: one field count, the share in the percent field', csv)
        sh.step('a group larger than the counters is refused',
                sh.expect('perfmon stat -e {cs,migrations,test} hop 10',
                          ["the group of 'cs' has 3 events, but soft has "
                           "2 counters", 'usage: perfmon stat']))
        sh.step('bad group syntax is refused with its position',
                sh.expect('perfmon stat -e cs,{migrations,test spin 1',
                          ["a group without its '}'", 'at character',
                           'usage: perfmon stat']))
        sh.step('nothing left in use', sh.no_leak)


def main():
    t = tallyqemu.BootTest(__doc__)
    suite(t)
    shell(t)
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
