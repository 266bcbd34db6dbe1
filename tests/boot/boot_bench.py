#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Test of `perfmon bench` on 4 CPUs with overflow NMIs from the software
# PMU and the step PMU (perfmon.step=on): `perfmon bench quick` completes
# and prints every row; every row with an instruction budget prints the
# design target below as its budget (a budget is never moved to a count)
# and a verdict that agrees with its count, MET when the count is within
# the budget, MISSED otherwise; and two runs print the same counts.  A
# missed budget fails `make bench`, not this test: the rows missed are
# listed as a TAP comment.  The cycle figures are for `make bench` to
# print, never for pass/fail here (only that a minimum is no larger than
# its median).  A bad argument prints the usage and leaves the prompt working;
# Ctrl-C ends a full run early with one line, and no counter is left in
# use.  Prints TAP.
#

import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402

# Every row, and which have an instruction count (rows 3 and 7 wait on
# another CPU, rows 9 time a loop against sampling interrupts: cycles only)
# and which a budget.
ROWS = ('1', '2a', '2b', '2m', '2n', '3a', '3b', '3c', '4r', '4a', '4b', '4c',
        '4d', '4s', '4h', '4e', '4f', '4g', '5a', '5b', '6a', '6', '6n', '6d',
        '6f', '6s', '6g', '7', '8', '8m', '9', '9a', '9b')
CYCLES_ONLY = ('3a', '3b', '3c', '7', '9', '9a', '9b')
# Row 8m says in words what row 8 costs per event moved: nothing to count.
NOTHING_COUNTED = ('8m',)
# The instruction budgets: the whole row's count each path was designed
# to, which the bench must print as the row's budget.
TARGETS = {'2a': 48, '2b': 56, '2m': 4, '2n': 96, '4h': 3, '4e': 60,
           '4f': 120, '4g': 160, '6f': 55, '6s': 130, '6g': 12, '8': 400}
BUDGETED = tuple(TARGETS)
# Differences of two medians and of two minimums, or no cycles at all:
# nothing orders their min and median.
UNORDERED = ('4h', '4e', '4f', '4g', '6n', '6d', '6f', '6s', '6g', '8m')
ROW = re.compile(r'^(\d[a-z]?)\s+(.+?)\s+(\d+|-)\s+(\d+|-)\s+(MET|MISSED|-)'
                 r'\s+(\d+|-)\s+(\d+|-)\s+(\S+)\s*$', re.M)
SUMMARY = re.compile(r'^perfmon bench: instruction budgets: (\d+) met, '
                     r'(\d+) missed', re.M)
TIMEOUT = 600


def main():
    t = tallyqemu.BootTest(__doc__)
    out = again = bad = stopped = info = None
    with t.shell(timeout=TIMEOUT, smp=4,
                 cmdline='softpmu.overflow=nmi perfmon.step=on') as sh:
        def run_quick():
            nonlocal out
            sh.prompt()
            out = sh.run('perfmon bench quick')
            return None

        def run_again():
            nonlocal again
            again = sh.run('perfmon bench quick')
            return None

        def run_bad():
            nonlocal bad
            bad = sh.run('perfmon bench -n 3')
            return None

        def run_interrupted():
            # Ctrl-C as soon as its table starts must end it after the
            # group of rows under way.  At once, not some seconds in: on a
            # fast, idle machine the whole table takes under 3 seconds.
            nonlocal stopped, info
            stopped = sh.interrupt('perfmon bench', 0, started='row ')
            info = sh.run('perfmon info')
            return None

        t.tap.step('perfmon bench quick completes', run_quick)
        t.tap.step('perfmon bench quick completes again', run_again)
        t.tap.step('perfmon bench -n 3 answers', run_bad)
        t.tap.step('perfmon bench, Ctrl-C: the prompt comes back',
                   run_interrupted)
    if out is None:
        return t.finish()
    tap = t.tap
    rows = {m.group(1): m.groups()[1:] for m in ROW.finditer(out)}
    tap.result('perfmon bench:' in out, 'perfmon bench prints its header',
               out)
    for row in ROWS:
        fields = rows.get(row)
        counted = fields is not None and fields[1] != '-'
        timed = fields is not None and fields[4] != '-'
        ordered = row in UNORDERED or \
            (timed and int(fields[4]) <= int(fields[5]))
        uncounted = CYCLES_ONLY + NOTHING_COUNTED
        tap.result(fields is not None and ordered
                   and counted == (row not in uncounted),
                   'row %s printed%s%s' % (
                       row, '' if row in UNORDERED else ' with min <= median',
                       ', cycles only' if row in CYCLES_ONLY
                       else ', nothing counted' if row in NOTHING_COUNTED
                       else ', with its instructions'),
                   '' if fields is not None else out)
    missed = []
    for row in BUDGETED:
        fields = rows.get(row)
        counted = fields is not None and fields[1] != '-'
        target = fields is not None and fields[2] == str(TARGETS[row])
        tap.result(target, 'row %s: its budget is the target, %d'
                   % (row, TARGETS[row]), '' if target else out)
        consistent = counted and fields[3] == (
            'MET' if int(fields[1]) <= int(fields[2]) else 'MISSED')
        tap.result(consistent, 'row %s: the verdict agrees with the count%s'
                   % (row, ' (%s of %s: %s)' % (fields[1], fields[2],
                                                 fields[3])
                      if fields else ''), '' if consistent else out)
        if consistent and fields[3] == 'MISSED':
            missed.append('%s %s of %s' % (row, fields[1], fields[2]))
    m = SUMMARY.search(out)
    tap.result(m is not None
               and int(m.group(1)) + int(m.group(2)) == len(BUDGETED)
               and int(m.group(2)) == len(missed),
               'summary: every budgeted row judged, as the rows say', out)
    tap.diag('budgets missed (make bench fails on them): %s'
             % (', '.join(missed) if missed else 'none'))
    if again is not None:
        rows2 = {m.group(1): m.groups()[1:] for m in ROW.finditer(again)}
        differ = []
        for row, fields in sorted(rows.items()):
            if fields[1] == '-':
                continue
            other = rows2.get(row)
            a = int(fields[1])
            b = int(other[1]) if other and other[1] != '-' else None
            if b is None or a != b:
                differ.append('%s: %s, then %s' % (row, a, b))
        tap.result(differ == [], 'the instruction counts are the same in '
                   'two runs', '\n'.join(differ))
    # Rows 1h/2h need a hardware PMU; without one, a line says so.
    hw = re.search(r'^1h\s.*(none registered|not counted)', out, re.M)
    tap.result(hw is not None or ('1h' in rows and '2h' in rows),
               'hardware rows printed, or a line saying why not', out)
    if bad is not None:
        tap.result('usage: perfmon bench' in bad,
                   'bad sample count: usage', bad)
    if stopped is not None:
        tap.result('perfmon bench: interrupted' in stopped
                   and SUMMARY.search(stopped) is None
                   and not re.search(r'^9b\s', stopped, re.M),
                   'Ctrl-C: "interrupted", before the last rows', stopped)
        tap.result(re.search(r'counters in use:\s*none', info) is not None
                   and re.search(r'in use: 0 of \d+', info) is not None,
                   'no counter left in use afterwards', info)
    return t.finish()

if __name__ == '__main__':
    sys.exit(main())
