#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of the `perfmon` shell command and the built-in workloads on 4
# CPUs: `perfmon list` shows the software events (and, under TCG, that the
# hardware events are not available); `perfmon stat` counts at least 100
# migrations for `hop 100` and 1000 context switches for `yield 1000`,
# sums cpu-clock over all CPUs with -a, prints one row per CPU with -A, a
# relative deviation with -r, and CSV lines with a constant field count
# with -x; bad event names get a suggestion, and every error (bad CPU list,
# bad number, missing command, unknown option, unknown command, bad
# modifier, -A alone), a counter shortage and Ctrl-C leave a working prompt
# and no counter in use (`perfmon info`).  Prints TAP; exits 1 on failure.
#

import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402

SMP = 4
CMD_TIMEOUT = 90
USAGE = 'usage: perfmon stat'


count_of = tallyqemu.stat_count
msec_of = tallyqemu.stat_msec
elapsed_of = tallyqemu.stat_elapsed


def main():
    t = tallyqemu.BootTest(__doc__)
    with t.shell(timeout=CMD_TIMEOUT, smp=SMP) as sh:
        q, run = sh.q, sh.run

        def perfmon_list():
            out = run('perfmon list')
            missing = [e for e in ('task-clock', 'context-switches',
                                   'cpu-migrations', 'interrupts', 'xcalls',
                                   'test') if not re.search(
                                       r'^\s+' + e + r'\s.*\br[0-9a-f]+\b',
                                       out, re.M)]
            if missing:
                return 'software events missing or without raw code: %s\n%s' \
                    % (missing, out)
            if not re.search(r'^\s+task-clock\s+cpu-clock\b', out, re.M):
                return 'alias cpu-clock not shown for task-clock:\n' + out
            if not q.kvm:
                # TCG has no PMU: the hardware events are listed as absent.
                if 'hardware events: <not available>' not in out:
                    return 'no hardware-absence line under TCG:\n' + out
                if not re.search(r'^\s+cycles\s.*<not available>', out, re.M):
                    return 'cycles not marked <not available>:\n' + out
            return None

        def hop():
            out = run('perfmon stat -e test,context-switches,cpu-migrations '
                      '-- hop 100')
            if "Performance counter stats for 'hop 100'" not in out:
                return 'no perf-style header:\n' + out
            n = count_of(out, 'cpu-migrations')
            if n is None or n < 100:
                return 'cpu-migrations %r < 100:\n%s' % (n, out)
            if count_of(out, 'test') is None or elapsed_of(out) is None:
                return 'test count or elapsed time missing:\n' + out
            return None

        def yield_():
            out = run('perfmon stat -i -e context-switches -- yield 1000')
            n = count_of(out, 'context-switches')
            if n is None or n < 1000:
                return 'context-switches %r < 1000:\n%s' % (n, out)
            if not re.search(r'^\s+1,\d{3}\s+context-switches', out, re.M):
                return 'count not grouped in thousands:\n' + out
            return None

        def system_wide():
            out = run('perfmon stat -a sleep 200')
            if '(system wide, %d CPUs)' % SMP not in out:
                return 'header lacks system wide, %d CPUs:\n%s' % (SMP, out)
            clock, elapsed = msec_of(out, 'cpu-clock'), elapsed_of(out)
            if clock is None or elapsed is None or elapsed < 0.2:
                return 'cpu-clock or elapsed missing or short:\n' + out
            # Every CPU's clock runs while the sleep does, and no longer
            # than the command: SMP times the sleep at least, SMP times
            # the elapsed time at most.  (Not about SMP times the elapsed
            # time: a host that stalls a CPU while the others enable or
            # disable their events shortens that CPU's part.)
            slept = tallyqemu.slept_ms(out)
            if slept is None:
                return 'no sleep:\n' + out
            if not 0.99 * SMP * slept <= clock \
                    <= 1.01 * SMP * elapsed * 1000:
                return 'cpu-clock %.2f msec is not between %d x the sleep ' \
                    'and %d x %.3f s:\n%s' % (clock, SMP, SMP, elapsed, out)
            utilized = tallyqemu.stat_utilized(out)
            if len(utilized) != 1 or \
                    abs(utilized[0] - clock / (elapsed * 1000)) > 0.01:
                return 'no "CPUs utilized" of cpu-clock over the elapsed ' \
                    'time:\n' + out
            return None

        def per_cpu():
            out = run('perfmon stat -a -A -e cpu-clock,interrupts sleep 50')
            rows = re.findall(r'^CPU(\d+)\s+[\d,]+\s+interrupts', out, re.M)
            if sorted(int(c) for c in rows) != list(range(SMP)):
                return 'interrupts rows %r, expected CPU0..%d:\n%s' \
                    % (rows, SMP - 1, out)
            rows = re.findall(r'^CPU(\d+)\s+[\d,.]+ msec cpu-clock', out, re.M)
            if len(rows) != SMP:
                return '%d cpu-clock rows:\n%s' % (len(rows), out)
            return None

        def repeat():
            out = run('perfmon stat -r 5 -e task-clock,cs spin 20000')
            if len(re.findall(r'^spin: 20,000 iterations', out, re.M)) != 5:
                return 'spin did not run 5 times:\n' + out
            if '(5 runs)' not in out:
                return 'header lacks (5 runs):\n' + out
            devs = re.findall(r'\( \+-\s+\d+\.\d\d% \)', out)
            if len(devs) != 3:  # two events and the elapsed time
                return '%d deviations, expected 3:\n%s' % (len(devs), out)
            return None

        def csv():
            events = ['task-clock', 'cs', 'cpu-migrations', 'test', 'cycles']
            out = run('perfmon stat -x , -e %s -- yield 20' % ','.join(events))
            lines = [ln for ln in out.split('\n') if ln.strip()]
            if len(lines) < len(events) + 1 or \
                    not lines[0].startswith('yield:'):
                return 'expected the yield summary and %d lines:\n%s' \
                    % (len(events), out)
            rows = [ln.split(',') for ln in lines[-len(events):]]
            counts = set(len(r) for r in rows)
            if len(counts) != 1:
                return 'field counts differ %r:\n%s' % (counts, out)
            if rows[0][:3] != [rows[0][0], 'msec', 'task-clock']:
                return 'bad task-clock line %r' % rows[0]
            for r, ev in zip(rows, events):
                if r[2] != ev:
                    return 'event field %r, expected %r' % (r[2], ev)
                if r[0] not in ('<not supported>', '<not counted>'):
                    float(r[0])
                    int(r[3])
            if int(rows[1][0]) < 20:
                return 'cs %s < 20 in %r' % (rows[1][0], rows[1])
            if not q.kvm and rows[4][0] != '<not supported>':
                return 'cycles under TCG: %r' % rows[4]
            # perf's share for an event never enabled: run == enabled == 0.
            if not q.kvm and rows[4][3:5] != ['0', '100.00']:
                return 'cycles under TCG: runtime and pcnt %r, want 0 and ' \
                    '100.00 as perf' % rows[4][3:5]
            return None

        def ctrl_c():
            out = sh.interrupt('perfmon stat spin 100000000000', 1.5)
            if 'interrupted' not in out or msec_of(out, 'task-clock') is None:
                return 'no counts after Ctrl-C:\n' + out
            return None

        sh.step('reaches the prompt with -smp %d' % SMP, sh.prompt)
        sh.step('perfmon list shows software events, hardware absence',
                perfmon_list)
        sh.step('hop 100 counts at least 100 cpu-migrations', hop)
        sh.step('yield 1000 counts at least 1000 context-switches', yield_)
        sh.step('-a sleep 200 sums cpu-clock over all CPUs', system_wide)
        sh.step('-A prints one row per CPU', per_cpu)
        sh.step('-r 5 prints relative deviations', repeat)
        sh.step('-x , lines have a constant field count', csv)
        sh.step('no counter in use after the runs', sh.no_leak)
        bad = [
            ('unknown event suggests', 'perfmon stat -e cyclez spin 1',
             ["unknown event 'cyclez'", "did you mean 'cycles'"]),
            ('bad CPU list', 'perfmon stat -C 0,2-x sleep 1',
             ['bad CPU list', USAGE]),
            ('CPU out of range', 'perfmon stat -C 0-%d sleep 1' % SMP,
             ['CPUs 0 to %d' % (SMP - 1), USAGE]),
            ('bad number', 'perfmon stat -r 1x sleep 1',
             ["'1x' is not a number", USAGE]),
            ('missing command', 'perfmon stat -e cs',
             ['missing command', USAGE]),
            ('unknown option', 'perfmon stat -q sleep 1',
             ["unknown option '-q'", USAGE]),
            ('unknown command', 'perfmon stat frobnicate',
             ["unknown command 'frobnicate'", USAGE]),
            ('bad modifier', 'perfmon stat -e cycles:p sleep 1',
             ['bad modifier', USAGE]),
            ('-A without -a', 'perfmon stat -A sleep 1',
             ['-A needs -a or -C', USAGE]),
            ('bad workload argument', 'perfmon stat spin 0',
             ['spin: N must be a number', 'usage: spin N']),
            ('pinned counter shortage', 'perfmon stat -e cs:uD,cs:kD,'
             'cs:D,cpu-migrations:uD,cpu-migrations:kD,'
             'cpu-migrations:D,test:uD,test:kD,test:D,interrupts:D '
             '-- yield 5',
             ['<not counted>', 'counters of soft are reserved']),
        ]
        for name, line, needles in bad:
            sh.step('%s is reported' % name, sh.expect(line, needles))
            sh.step('no counter leaked after %s' % name, sh.no_leak)
        sh.step('Ctrl-C stops the command and prints the counts', ctrl_c)
        sh.step('no counter leaked after Ctrl-C', sh.no_leak)
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
