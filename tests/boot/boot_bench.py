#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Smoke test of `perfmon bench` (the numbers themselves are for `make
# bench` to print, never for pass/fail here): on 4 CPUs with overflow NMIs
# from the software PMU, `perfmon bench quick` completes, prints every row
# (with a minimum no larger than its median where both are measured), and a bad argument prints the
# usage and leaves the prompt working.  Prints TAP.
#

import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402

ROWS = ('1', '2a', '2b', '3a', '3b', '3c', '4r', '4a', '4b', '4c', '4d',
        '4e', '4f', '4g', '5a', '5b', '6', '7')
ADDED = ('4e', '4f', '4g')
ROW = re.compile(r'^(\d[a-z]?)\s+(.+?)\s+(\d+)\s+(\d+)\s+(\S+)', re.M)
TIMEOUT = 300


def main():
    args = tallyqemu.boot_test_args(__doc__)
    tap = tallyqemu.Tap()
    log = args.log or os.path.join(tallyqemu.BUILD, 'logs',
                                   'serial-boot_bench.txt')
    with tallyqemu.Qemu(log=log, name='boot_bench') as q:
        try:
            q.start(args.iso, smp=4, kvm=args.kvm_mode,
                    cmdline='softpmu.overflow=nmi')
            q.wait_prompt()
            out = q.command('perfmon bench quick', TIMEOUT)
            bad = q.command('perfmon bench -n 3', 30)
            info = q.command('perfmon info', 30)
        except (TimeoutError, tallyqemu.QemuExited) as e:
            tap.fail('perfmon bench quick completes', str(e))
            return tap.finish()
    rows = {m.group(1): (int(m.group(3)), int(m.group(4)))
            for m in ROW.finditer(out)}
    tap.result('perfmon bench:' in out, 'perfmon bench prints its header',
               out)
    for row in ROWS:
        # 4e-4g are differences of two medians and of two minimums:
        # nothing orders them.
        ordered = row in ADDED or \
            (row in rows and rows[row][0] <= rows[row][1])
        tap.result(row in rows and ordered,
                   'row %s printed%s' % (row, '' if row in ADDED
                                         else ' with min <= median'),
                   '' if row in rows else out)
    # Rows 1h/2h need a hardware PMU; without one, a line says so.
    hw = re.search(r'^1h\s.*(none registered|not counted)', out, re.M)
    tap.result(hw is not None or ('1h' in rows and '2h' in rows),
               'hardware rows printed, or a line saying why not', out)
    tap.result('usage: perfmon bench' in bad, 'bad sample count: usage', bad)
    tap.result(re.search(r'counters in use:\s*none', info) is not None,
               'no counter left in use afterwards', info)
    return tap.finish()


if __name__ == '__main__':
    sys.exit(main())
