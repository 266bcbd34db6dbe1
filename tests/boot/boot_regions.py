#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of code regions (`perfmon regions`) on 2 CPUs under TCG: the
# in-kernel `region` suite with the step PMU (perfmon.step=on); then a
# shell session with the step PMU: the kernel's regions are listed, and
# the spin loop's region, armed alone, counts exactly 4N plus a constant
# for three N, each N run twice with the same count, the constant the
# same for all three; armed all at once, the regions an xcall, a context
# switch and the heap go through count their calls (xcall: as many as
# were made, on the sender's side), --self and -j answer, reset empties
# the counts; bad input gets one line and leaves nothing armed; after
# `perfmon regions off` no counter is in use.  Prints TAP.
#

import json
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402

SMP = 2
CMD_TIMEOUT = 180
RUN_TIMEOUT = 400
SPINS = (1000, 4000, 16000)
REGIONS = ('spin', 'xcall', 'switch', 'kmem_alloc', 'kmem_free', 'pmi',
           'sample')


def csv_rows(out):
    """The -x , rows of `perfmon regions show`: (region, cpu) -> fields."""
    rows = {}
    for line in out.splitlines():
        f = line.strip().split(',')
        if len(f) == 13 and f[3].isdigit():
            rows[(f[0], f[1])] = {
                'event': f[2], 'calls': int(f[3]), 'seen': int(f[4]),
                'sum': int(f[5]), 'min': int(f[6]), 'max': int(f[7]),
                'worst': [int(x) for x in f[10:13]]}
    return rows


def suite(t):
    run = t.run_suites('test=region perfmon.step=on', smp=SMP,
                       timeout=RUN_TIMEOUT)
    results = dict(run.leaves())
    problems = run.problems()
    step = results.get('region.step_spin')
    t.tap.result(not problems and len(results) == 5
                 and step is not None and not step.skip,
                 'the region suite runs its 5 tests, step_spin not skipped, '
                 'and exits with 33',
                 '\n'.join(problems + ['tests: %r' % sorted(results)]))


def session(t):
    with t.shell(timeout=CMD_TIMEOUT, smp=SMP,
                 cmdline='perfmon.step=on') as sh:
        def listed():
            out = sh.run('perfmon regions list')
            missing = [r for r in REGIONS
                       if not re.search(r'^%s\s+-$' % r, out, re.M)]
            return 'not listed: %s\n%s' % (missing, out) if missing else None

        def exact():
            out = sh.run('perfmon regions spin')
            if 'perfmon regions: 1 armed on CPUs 0-1, 1 event' not in out:
                return 'not armed:\n' + out
            constants = []
            for n in SPINS:
                sh.run('perfmon regions reset')
                sh.run('spin %d' % n)
                sh.run('spin %d' % n)
                out = sh.run('perfmon regions show -x ,')
                row = csv_rows(out).get(('spin', 'all'))
                if row is None or row['event'] != 'step/instructions/':
                    return 'no spin row for %d:\n%s' % (n, out)
                if row['calls'] != 2 or row['min'] != row['max'] \
                        or row['sum'] != 2 * row['min']:
                    return 'spin %d twice: counts differ: %r' % (n, row)
                constants.append(row['min'] - 4 * n)
            t.tap.diag('region spin: 4N + %s' % constants)
            if len(set(constants)) != 1 or not 0 < constants[0] < 1000:
                return 'constants %s: not one small constant' % constants
            return None

        def everything():
            sh.run('perfmon regions off')
            out = sh.run('perfmon regions')
            if 'armed on CPUs 0-1' not in out:
                return 'not armed:\n' + out
            sh.run('xcall 5')
            sh.run('yield 5')
            rows = csv_rows(sh.run('perfmon regions show -x ,'))
            xcall = rows.get(('xcall', 'all'))
            if xcall is None or xcall['calls'] < 5 or xcall['min'] == 0:
                return 'xcall row: %r\n%r' % (xcall, rows)
            for r in ('switch', 'kmem_alloc', 'kmem_free'):
                row = rows.get((r, 'all'))
                if row is None or row['calls'] == 0 or row['min'] == 0:
                    return '%s row: %r' % (r, row)
            out = sh.run('perfmon regions show -j')
            objs = [json.loads(line) for line in out.splitlines()
                    if line.startswith('{')]
            if not any(o['region'] == 'xcall' and o['cpu'] == 'all'
                       and o['calls'] >= 5 for o in objs):
                return 'no xcall object in -j:\n' + out
            out = sh.run('perfmon regions show --self')
            if 'self: less the regions nested' not in out or \
                    not re.search(r'^xcall\s+all\s+\d', out, re.M):
                return 'show --self:\n' + out
            sh.run('perfmon regions reset')
            rows = csv_rows(sh.run('perfmon regions show -x ,'))
            spin = rows.get(('spin', 'all'))
            if spin is None or spin['calls'] != 0:
                return 'after reset: %r' % spin
            return None

        def bad_input():
            sh.run('perfmon regions off')
            for line, text in (
                    ('perfmon regions nope', "no region 'nope'"),
                    ('perfmon regions -e bogus', "unknown event 'bogus'"),
                    ('perfmon regions --every 0', '--every 0: not a number'),
                    ('perfmon regions -C 5', '-C 5: this machine has CPUs'),
                    ('perfmon regions show', 'nothing armed'),
                    ('perfmon regions off', 'nothing armed'),
                    ('perfmon regions reset 1', "unexpected '1'")):
                out = sh.run(line)
                if text not in out or 'armed on CPUs' in out:
                    return '%s: expected "%s":\n%s' % (line, text, out)
            out = sh.run('perfmon regions list')
            if re.search(r'\sarmed$', out, re.M):
                return 'left armed:\n' + out
            return None

        sh.step('boots to the prompt', sh.prompt)
        sh.step('perfmon regions list names the kernel\'s regions', listed)
        sh.step('spin\'s region: exactly 4N + one constant, for 3 N, twice',
                exact)
        sh.step('all regions: xcall, switch, heap counted; -j, --self, reset',
                everything)
        sh.step('bad input: one line each, nothing armed', bad_input)
        sh.step('off: no counter left in use',
                lambda: sh.run('perfmon regions off') and sh.no_leak())
        sh.step('poweroff', sh.poweroff)


def main():
    t = tallyqemu.BootTest(__doc__)
    suite(t)
    session(t)
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
