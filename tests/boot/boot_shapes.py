#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of the shapes of `perfmon stat` beyond one command counted
# once, on 4 CPUs: -I 100 -a -- sleep 1000 prints about ten intervals
# whose cpu-clock per ms of run is a plain run's, the last ending with
# the command, -A and -x give one line per CPU and interval, --interval-count
# stops them; -a and -C count with no command, until --timeout or Ctrl-C,
# and leave nothing attached, and `perfmon record` likewise; -j prints
# objects Python's json reads, with perf stat's field names, and `perfmon
# list -j`, `info -j` and `selftest -j` parse too; a command run with '&'
# is counted by -t (and not the shell), recorded by record -t, listed by
# jobs, stopped by kill with nothing left behind, and a thread that exits
# while counted says so; bad values of the new options get one line
# naming the option.  Prints TAP; exits 1 on
# failure.
#

import json
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402
from tallyqemu import slept_ms, stat_elapsed, stat_msec  # noqa: E402

SMP = 4
CMD_TIMEOUT = 120

# One -I row in perf's default format: time, count, unit, event.
INTERVAL_RE = re.compile(r'^\s*(\d+\.\d{9})\s+(?:CPU(\d+)\s+)?([\d,.]+)\s+'
                         r'(msec\s+)?(\S+)', re.M)

# The fields of every -j object, as perf stat -j names them.
JSON_FIELDS = ('counter-value', 'unit', 'event', 'event-runtime',
               'pcnt-running', 'metric-value', 'metric-unit')


def intervals(out, event):
    """{time: value} of event's rows in -I output (summed over CPUs)."""
    rows = {}
    for m in INTERVAL_RE.finditer(out):
        if m.group(5) == event:
            v = float(m.group(3).replace(',', ''))
            rows[m.group(1)] = rows.get(m.group(1), 0.0) + v
    return rows


def json_lines(out):
    """Every line that starts an object, parsed; or the first that fails
    to parse, as a string."""
    objs = []
    for line in out.split('\n'):
        if line.startswith('{'):
            try:
                objs.append(json.loads(line))
            except ValueError as e:
                return '%s: %r' % (e, line)
    return objs


def main():
    t = tallyqemu.BootTest(__doc__)
    with t.shell(timeout=CMD_TIMEOUT, smp=SMP) as sh:
        run = sh.run

        def interval_sums():
            plain = run('perfmon stat -a -e cpu-clock -- sleep 1000')
            out = run('perfmon stat -I 100 -a -e cpu-clock -- sleep 1000')
            total = stat_msec(plain, 'cpu-clock')
            rows = intervals(out, 'cpu-clock')
            # Ten intervals and the last, shorter one; under TCG a late
            # timer may merge two.
            if total is None or not 9 <= len(rows) <= 12:
                return 'want about 10 intervals and a total:\n%s\n%s' \
                    % (plain, out)
            s = sum(rows.values())
            last = max(float(tm) for tm in rows) * 1000
            elapsed = stat_elapsed(plain) * 1000
            # The intervals add up to their run's total exactly (each is a
            # difference of totals).  Between two runs, CPU-wide cpu-clock
            # is 4 CPUs times the run's length, and that length is not the
            # code's: sleep 1000 ends on a 1 ms tick, or later when the host
            # holds the guest (seen: 1.01 to 1.04 s, and once two runs over 6%
            # apart).  So the counts per ms of run must agree within 2%,
            # and the last interval, the short one, must end no earlier
            # than the command, as long as sleep says it slept: without
            # it the rate would still agree.
            slept = slept_ms(out)
            t.tap.diag('cpu-clock: %.2f ms in %d intervals over %.1f ms, '
                       '%.2f ms plain over %.1f ms'
                       % (s, len(rows), last, total, elapsed))
            if abs(s / last - total / elapsed) > 0.02 * total / elapsed:
                return 'intervals add up to %.2f ms in %.1f ms, a plain ' \
                    'run %.2f in %.1f:\n%s\n%s' \
                    % (s, last, total, elapsed, plain, out)
            if slept is None:
                return 'no sleep:\n' + out
            if last < slept:
                return 'the last interval ends at %.1f ms, before the ' \
                    'command did:\n%s' % (last, out)
            if not re.search(r'^# \d+ intervals of 100 ms; reading the '
                             r'counters took at most [\d,.]+ us', out, re.M):
                return 'the intervals\' cost is not stated:\n' + out
            return None

        def interval_per_cpu_csv():
            out = run('perfmon stat -I 100 -A -C 0-1 -x , -e cs,cpu-clock '
                      '-- sleep 250')
            rows = re.findall(r'^\s*(\d+\.\d{9}),CPU(\d),([\d.]+),(\w*),'
                              r'([\w-]+),', out, re.M)
            times = sorted(set(r[0] for r in rows))
            # Two intervals and the last: 3 times, 2 CPUs, 2 events.
            if len(times) != 3 or len(rows) != 12:
                return 'want 3 intervals of 4 lines:\n' + out
            for tm in times:
                got = sorted((r[1], r[4]) for r in rows if r[0] == tm)
                if got != [('0', 'cpu-clock'), ('0', 'cs'),
                           ('1', 'cpu-clock'), ('1', 'cs')]:
                    return 'interval %s has %r:\n%s' % (tm, got, out)
            return None

        def interval_count():
            out = run('perfmon stat -a -I 50 --interval-count 3 -e cs')
            rows = intervals(out, 'cs')
            if len(rows) != 3:
                return 'want 3 intervals:\n' + out
            return None

        def no_command_timeout():
            out = run('perfmon stat -a --timeout 300 -e cpu-clock')
            ms = stat_msec(out, 'cpu-clock')
            if "for 'system wide' (4 CPUs)" not in out or ms is None \
                    or not 0.9 * 1200 <= ms <= 1.2 * 1200:
                return 'want about 1200 ms on 4 CPUs, system wide:\n' + out
            return None

        def no_command_ctrl_c():
            out = sh.interrupt('perfmon stat -C 1 -e cpu-clock', 0.5)
            ms = stat_msec(out, 'cpu-clock')
            if "for 'CPU(s) 1'" not in out or ms is None or ms < 50 \
                    or 'interrupted' in out:
                return 'want a summary of CPU 1 at Ctrl-C:\n' + out
            out = sh.interrupt('perfmon stat -a -I 100 -e cs', 0.5)
            if len(intervals(out, 'cs')) < 2:
                return 'want intervals until Ctrl-C:\n' + out
            return sh.no_leak()

        def record_no_command():
            out = run('perfmon record -a --timeout 300 -F 1000')
            m = re.search(r'captured (\d+) samples', out)
            if not m or int(m.group(1)) < 100:
                return 'want samples of 4 CPUs for 300 ms:\n' + out
            out = run('perfmon report --sort cpu')
            cpus = re.findall(r'^\s*[\d.]+%\s+(\d{3})$', out, re.M)
            if "of 'system wide'" not in out \
                    or sorted(cpus) != ['000', '001', '002', '003']:
                return 'want every CPU in the report:\n' + out
            out = sh.interrupt('perfmon record -C 1', 0.5)
            if not re.search(r'captured \d+ samples', out) \
                    or 'interrupted' in out:
                return 'want a recording of CPU 1 ended by Ctrl-C:\n' + out
            out = run('perfmon script')
            if not re.search(r'\[001\]', out) or re.search(r'\[00[023]\]',
                                                          out):
                return 'want samples of CPU 1 only:\n' + out[:2000]
            for line, needle in (
                    ('perfmon record --timeout 10 spin 1',
                     '--timeout samples without a command'),
                    ('perfmon record -a --timeout x',
                     "--timeout: 'x' is not a number"),
                    ('perfmon record', 'missing command (or -a, -C or -t')):
                out = run(line)
                if needle not in out or 'usage: perfmon record' not in out:
                    return '%r: want %r and the usage:\n%s' \
                        % (line, needle, out)
            return sh.no_leak()

        def json_stat():
            out = run('perfmon stat -j -a -A -e cpu-clock,cs -- sleep 100')
            objs = json_lines(out)
            if isinstance(objs, str) or len(objs) != 2 * SMP:
                return 'want %d objects: %s\n%s' % (2 * SMP, objs, out)
            for o in objs:
                missing = [f for f in JSON_FIELDS + ('cpu',) if f not in o]
                if missing:
                    return 'missing %r in %r' % (missing, o)
            clock = [o for o in objs if o['event'] == 'cpu-clock']
            if sorted(o['cpu'] for o in clock) != ['0', '1', '2', '3'] \
                    or any(o['unit'] != 'msec'
                           or o['metric-unit'] != 'CPUs utilized'
                           or not 0 < float(o['counter-value']) < 1000
                           or o['pcnt-running'] != 100 for o in clock):
                return 'cpu-clock objects wrong: %r' % clock
            out = run('perfmon stat --json -a -I 100 --interval-count 2 '
                      '-e cs')
            objs = json_lines(out)
            if isinstance(objs, str) or len(objs) != 2 \
                    or not all(isinstance(o.get('interval'), float)
                               and o['event'] == 'cs' for o in objs):
                return 'want 2 interval objects: %s\n%s' % (objs, out)
            out = run('perfmon stat -j -r 2 -e task-clock,cycles spin 1')
            objs = json_lines(out)
            if isinstance(objs, str) or len(objs) != 2 \
                    or 'variance' not in objs[0] \
                    or objs[1]['counter-value'] not in ('<not supported>',
                                                        '<not counted>'):
                return 'want task-clock with its variance, cycles not ' \
                    'counted: %s\n%s' % (objs, out)
            return None

        def json_others():
            out = run('perfmon list -j')
            try:
                events = json.loads(out)
            except ValueError as e:
                return 'perfmon list -j: %s:\n%s' % (e, out)
            names = {e['EventName']: e for e in events}
            cs = names.get('context-switches')
            if cs is None or cs['Unit'] != 'soft' or cs['EventAlias'] != 'cs' \
                    or not cs['Encoding'].startswith('r') \
                    or 'BriefDescription' not in cs:
                return 'perfmon list -j: no soft context-switches: %r' % cs
            out = run('perfmon list --json xcall')
            try:
                names = sorted(e['EventName'] for e in json.loads(out))
            except ValueError as e:
                return 'perfmon list --json xcall: %s:\n%s' % (e, out)
            if names != ['xcalls', 'xcalls-sent']:
                return 'perfmon list -j xcall lists %r' % names
            out = run('perfmon info -j')
            try:
                info = json.loads(out)
            except ValueError as e:
                return 'perfmon info -j: %s:\n%s' % (e, out)
            soft = [d for d in info['devices'] if d['name'] == 'soft']
            if not soft or soft[0]['counters'] < 1 \
                    or info['counters-in-use'] != [] \
                    or 'vendor' not in info['cpu'] \
                    or not isinstance(info['hardware-pmu'], str):
                return 'perfmon info -j: %r' % info
            out = run('perfmon selftest -j')
            objs = json_lines(out)
            if isinstance(objs, str) or len(objs) < 2:
                return 'perfmon selftest -j: %s\n%s' % (objs, out)
            checks, total = objs[:-1], objs[-1]
            if any(o.get('verdict') not in ('PASS', 'FAIL', 'SKIP')
                   or 'check' not in o for o in checks) \
                    or total.get('checks') != len(checks) \
                    or total.get('pass') != sum(o['verdict'] == 'PASS'
                                                for o in checks):
                return 'perfmon selftest -j: %r' % objs
            return None

        def job_tid(out):
            m = re.search(r'^\[(\d+)\] (\d+)$', out, re.M)
            return int(m.group(2)) if m else None

        def attach_threads():
            before = run('mem')
            out = run('spin 3000000000 &')
            tid = job_tid(out)
            if tid is None:
                return 'no "[N] TID" for a background command:\n' + out
            threads = run('threads')
            m = re.search(r'^\s*(\d+) shell\s', threads, re.M)
            if not m or not re.search(r'^\s*%d spin\s' % tid, threads, re.M):
                return 'threads shows no shell or spin %d:\n%s' \
                    % (tid, threads)
            shell = int(m.group(1))
            out = run('jobs')
            if not re.search(r'^\[\d+\] %d running: spin 3000000000$'
                             % tid, out, re.M):
                return 'jobs does not list it:\n' + out
            out = run('perfmon stat -t %d,%d --per-thread --timeout 500 '
                      '-e task-clock' % (tid, shell))
            spin = stat_msec(out, 'task-clock')
            rows = re.findall(r'^\s*(\S+)-(\d+)\s+([\d,.]+) msec task-clock',
                              out, re.M)
            got = {int(r[1]): float(r[2].replace(',', '')) for r in rows}
            # The spin runs all the time on a CPU of its own; the shell
            # only wakes now and then while it waits.
            if "thread id '%d,%d'" % (tid, shell) not in out \
                    or set(got) != {tid, shell} or got[tid] < 300 \
                    or got[shell] > 0.2 * got[tid]:
                return 'want spin counted, the shell barely: %r\n%s' \
                    % (got, out)
            out = run('perfmon stat -t %d -j --timeout 200 -e task-clock'
                      % tid)
            objs = json_lines(out)
            if isinstance(objs, str) or len(objs) != 1 \
                    or float(objs[0]['counter-value']) < 100:
                return 'want one object for the thread: %s\n%s' % (objs, out)
            out = run('perfmon record -t %d --timeout 300 -F 1000' % tid)
            if not re.search(r'captured [1-9]\d* samples', out):
                return 'record -t: no samples:\n' + out
            out = run('perfmon report --sort comm')
            if "of 'thread id %d'" % tid not in out \
                    or not re.search(r'^\s*100\.00%\s+spin$', out, re.M):
                return 'record -t: the report is not all spin:\n' + out
            out = run('kill %d' % tid)
            if not re.search(r'^\[\d+\] %d killed: spin 3000000000$' % tid,
                             out, re.M) or 'interrupted' not in out:
                return 'kill did not stop it cleanly:\n' + out
            out = run('jobs')
            if out.strip():
                return 'jobs still lists:\n' + out
            if run('mem') != before:
                return 'the heap is not as before:\n%s\n%s' \
                    % (before, run('mem'))
            return sh.no_leak()

        def attach_exiting():
            out = run('spin 600000000 &')
            tid = job_tid(out)
            if tid is None:
                return 'no "[N] TID" for a background command:\n' + out
            out = run('perfmon stat -t %d -e task-clock' % tid)
            ms = stat_msec(out, 'task-clock')
            if ms is None or 'thread %d (spin) exited while counted' % tid \
                    not in out:
                return 'want its count and that it exited:\n' + out
            out = run('jobs')
            for line, needle in (
                    ('perfmon stat -t %d' % tid, '-t: no thread %d' % tid),
                    ('perfmon stat -t 1,1', '-t: thread 1 is named twice'),
                    ('perfmon stat -t x', "-t: 'x' is not a thread id"),
                    ('perfmon stat -t 1 -a', '-t and -a exclude'),
                    ('perfmon stat --per-thread -a', '--per-thread needs -t'),
                    ('perfmon record -t %d' % tid, '-t: no thread %d' % tid)):
                out = run(line)
                if needle not in out or 'usage: perfmon' not in out:
                    return '%r: want %r and the usage:\n%s' \
                        % (line, needle, out)
            for line, needle in (
                    ('kill %d' % tid, 'is not a background command'),
                    ('kill', 'usage: kill TID'),
                    ('&', "'&' runs a command in the background"),
                    ('nosuch &', "unknown command 'nosuch'")):
                out = run(line)
                if needle not in out:
                    return '%r: want %r:\n%s' % (line, needle, out)
            return sh.no_leak()

        def bad_values():
            for line, needle in (
                    ('perfmon stat -I 5 -a', "-I: '5' is not a number"),
                    ('perfmon stat -I x -a', "-I: 'x' is not a number"),
                    ('perfmon stat -a --interval-count 2',
                     '--interval-count needs -I'),
                    ('perfmon stat -a -I 100 --interval-count 0',
                     "--interval-count: '0' is not a number"),
                    ('perfmon stat --timeout 100 sleep 1',
                     '--timeout counts without a command'),
                    ('perfmon stat -a --timeout=-1',
                     "--timeout: '-1' is not a number"),
                    ('perfmon stat -j -x , -a', '-j and -x exclude'),
                    ('perfmon stat -I 100 -r 2 sleep 1', '-I and -r exclude'),
                    ('perfmon stat -e cs', 'missing command (or -a, -C or -t'),
                    ('perfmon list -q', "list: unknown option '-q'"),
                    ('perfmon info -j x', "info: no arguments expected"),
                    ('perfmon selftest --jsn',
                     "selftest: unknown option '--jsn'")):
                out = run(line)
                lines = [l for l in out.split('\n') if l.startswith('perfmon')]
                if len(lines) != 1 or needle not in lines[0] \
                        or 'usage: perfmon ' + line.split()[1] not in out:
                    return '%r: want one line with %r and the usage:\n%s' \
                        % (line, needle, out)
            return sh.no_leak()

        sh.step('reaches the prompt with -smp %d' % SMP, sh.prompt)
        sh.step('-I 100 -a -- sleep 1000: about 10 intervals at the rate of '
                'a plain run', interval_sums)
        sh.step('-I -A -x: one line per CPU, event and interval',
                interval_per_cpu_csv)
        sh.step('--interval-count 3 stops after 3 intervals', interval_count)
        sh.step('-a --timeout 300 with no command', no_command_timeout)
        sh.step('-C 1 and -I with no command end at Ctrl-C, nothing left',
                no_command_ctrl_c)
        sh.step('record -a --timeout and -C until Ctrl-C, with no command',
                record_no_command)
        sh.step('-j: objects with perf stat\'s fields', json_stat)
        sh.step('list, info and selftest -j parse', json_others)
        sh.step('spin &, -t counts it and not the shell, record -t, kill',
                attach_threads)
        sh.step('-t on a thread that exits; bad -t, kill, &', attach_exiting)
        sh.step('bad values: one line naming the option', bad_values)
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
