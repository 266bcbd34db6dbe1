#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of the profiling commands on 4 CPUs, as a user drives them:
# `perfmon report` before any recording says so; `perfmon record -F 1000 --
# spin N` ends with perf's summary line; `perfmon report` puts the spin
# loop first with more than 80%; `report -g` shows its callers; `report
# --folded` prints folded stacks whose weights add up to the report's event
# count; `perfmon script` prints a line per sample with the command's name
# and tid, then its chain; `perfmon record -a` and `--sort cpu` cover every
# CPU; `perfmon top` redraws until Ctrl-C; every bad input gets one line and
# leaves no counter in use; Ctrl-C during a record keeps its samples.  A
# second boot with softpmu.overflow=poll gets a clear refusal.  Prints TAP;
# exits 1 on failure.
#

import os
import re
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402

SMP = 4
CMD_TIMEOUT = 120
USAGE = 'usage: perfmon record'
SUMMARY_RE = re.compile(r'\[ perfmon record: captured (\d+) samples, '
                        r'(\d+) lost, (\d+) KiB \]')
ROW_RE = re.compile(r'^\s*(\d+\.\d+)%\s+(\S+)\s+\[k\] (\S+)', re.M)
COUNT_RE = re.compile(r'^# Event count \(approx\.\): (\d+)', re.M)


def summary(out):
    m = SUMMARY_RE.search(out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def main():
    args = tallyqemu.boot_test_args(__doc__)
    tap = tallyqemu.Tap()
    log = args.log or os.path.join(tallyqemu.BUILD, 'logs',
                                   'serial-boot_record.txt')
    with tallyqemu.Qemu(log=log, name='boot_record') as q:
        q.start(args.iso, smp=SMP, kvm=args.kvm_mode)
        tap.diag('qemu: %s; serial log %s'
                 % ('KVM' if q.kvm else 'TCG', q.log_path))

        def run(line):
            return q.command(line, CMD_TIMEOUT)

        def no_leak():
            out = run('perfmon info')
            if 'counters in use: none' not in out:
                return 'perfmon info shows counters in use:\n' + out
            return None

        def expect(line, needles):
            def check():
                out = run(line)
                for n in needles:
                    if n not in out:
                        return '%r not in the reply to %r:\n%s' \
                            % (n, line, out)
                return None
            return check

        state = {}

        def record_spin():
            out = run('perfmon record -F 1000 -- spin 300000000')
            s = summary(out)
            if s is None or s[0] < 50:
                return 'no or too few samples:\n' + out
            state['samples'] = s[0]
            return None

        def report_first():
            out = run('perfmon report')
            rows = ROW_RE.findall(out)
            if not rows:
                return 'no rows:\n' + out
            pct, comm, sym = rows[0]
            if sym != 'workload_spin_loop' or float(pct) <= 80.0 \
                    or comm != 'spin':
                return 'first row is %r:\n%s' % (rows[0], out)
            m = COUNT_RE.search(out)
            state['total'] = int(m.group(1)) if m else None
            if ('# Samples: %d ' % state['samples']) not in out:
                return 'the report does not count %d samples:\n%s' \
                    % (state['samples'], out)
            return None

        def record_g():
            out = run('perfmon record -g -F 1000 -- spin 300000000')
            if summary(out) is None:
                return 'no summary:\n' + out
            out = run('perfmon report -g --percent-limit 5')
            lines = [ln.strip(' |-0123456789.%') for ln in out.splitlines()]
            want = ['shell_exec_argv', 'workload_spin_cmd',
                    'workload_spin_loop']
            pos = [lines.index(w) if w in lines else -1 for w in want]
            if -1 in pos or pos != sorted(pos):
                return 'callers not shown in order %r:\n%s' % (want, out)
            return None

        def folded():
            report = run('perfmon report')
            m = COUNT_RE.search(report)
            out = run('perfmon report --folded')
            total = 0
            for line in out.strip().splitlines():
                stack, _, weight = line.rpartition(' ')
                if not stack.startswith('spin;') and ';' not in stack:
                    return 'bad folded line %r' % line
                total += int(weight)
            if m is None or total != int(m.group(1)):
                return 'folded weights add up to %d, the report says %s' \
                    % (total, m.group(1) if m else None)
            if 'workload_spin_cmd;workload_spin_loop ' not in out:
                return 'the spin stack is missing:\n' + out
            return None

        def script():
            out = run('perfmon script')
            first = re.search(r'^\s*spin\s+(\d+) \[(\d{3})\]\s+\d+\.\d{6}:\s+'
                              r'\d+ cpu-clock: ([0-9a-f]{16}) (\S+)', out,
                              re.M)
            if first is None:
                return 'no sample line:\n' + out[:2000]
            if '\tffffffff' not in out or 'workload_spin_cmd+0x' not in out:
                return 'no call chain:\n' + out[:2000]
            return None

        def system_wide():
            out = run('perfmon record -a -F 500 -- sleep 300')
            s = summary(out)
            if s is None or s[0] == 0:
                return 'no samples:\n' + out
            out = run('perfmon report --sort cpu')
            cpus = re.findall(r'^\s*\d+\.\d+%\s+(\d{3})\s*$', out, re.M)
            if sorted(cpus) != ['%03d' % c for c in range(SMP)]:
                return 'not one row per CPU:\n' + out
            return None

        def top():
            q.skip_output()
            q.send_line('perfmon top -d 1')
            q.wait_for(re.escape('perfmon top: cpu-clock'), CMD_TIMEOUT)
            q.wait_for(re.escape('interval 2 of 1 s'), CMD_TIMEOUT)
            q.send(b'\x03')
            m = q.wait_for(re.compile(r'(.*?)' + re.escape(tallyqemu.PROMPT),
                                      re.DOTALL), CMD_TIMEOUT)
            if '\x1b[H\x1b[2J' not in q.output:
                return 'top did not redraw in place'
            return None if m else 'no prompt after Ctrl-C'

        def top_stdio():
            out = run('perfmon top -d 1 -n 2 --stdio')
            if out.count('# Overhead') != 2 or '\x1b[' in out:
                return 'not two plain tables:\n' + out
            return None

        def ctrl_c_keeps():
            q.skip_output()
            q.send_line('perfmon record -F 1000 -- spin 100000000000')
            q.wait_for(re.escape('spin 100000000000'), CMD_TIMEOUT)
            time.sleep(2)
            q.send(b'\x03')
            m = q.wait_for(re.compile(r'(.*?)' + re.escape(tallyqemu.PROMPT),
                                      re.DOTALL), CMD_TIMEOUT)
            out = m.group(1).replace('\r', '')
            s = summary(out)
            if s is None or s[0] == 0 or 'interrupted' not in out:
                return 'no samples kept after Ctrl-C:\n' + out
            rep = run('perfmon report')
            if 'workload_spin_loop' not in rep:
                return 'the kept samples do not report:\n' + rep
            return None

        try:
            tap.step('reaches the prompt', lambda: q.wait_prompt() and None)
            tap.step('report before any record says so',
                     expect('perfmon report', ['no recording',
                                               "perfmon record' first"]))
            tap.step('record -F 1000 -- spin prints the summary', record_spin)
            tap.step('report: the spin loop first, over 80%', report_first)
            tap.step('record -g, report -g: the callers in order', record_g)
            tap.step('report --folded adds up to the event count', folded)
            tap.step('script: a line per sample with comm, tid, chain',
                     script)
            tap.step('record -a: report --sort cpu has every CPU',
                     system_wide)
            tap.step('no counter in use after the records', no_leak)
            tap.step('top redraws until Ctrl-C', top)
            tap.step('top --stdio -n 2 prints two plain tables', top_stdio)
            tap.step('Ctrl-C during record keeps the samples', ctrl_c_keeps)
            bad = [
                ('-c 0', 'perfmon record -c 0 -- spin 1',
                 ["-c: '0' is not a number", USAGE]),
                ('-F 0', 'perfmon record -F 0 -- spin 1',
                 ["-F: '0' is not a number", USAGE]),
                ('-F above the maximum', 'perfmon record -F 200000 -- spin 1',
                 ['from 1 to 100000', USAGE]),
                ('-c with -F', 'perfmon record -c 10 -F 10 -- spin 1',
                 ['exclude each other', USAGE]),
                ('-m too small', 'perfmon record -m 1K -- spin 1',
                 ['power of two from 4K to 16M', USAGE]),
                ('-m not a power of two', 'perfmon record -m 5K -- spin 1',
                 ['power of two from 4K to 16M', USAGE]),
                ('unknown event', 'perfmon record -e cyclez -- spin 1',
                 ["unknown event 'cyclez'"]),
                ('event no device counts',
                 'perfmon record -e branch-misses -- spin 1',
                 ['no device here counts it']),
                ('two events', 'perfmon record -e cs,test -- spin 1',
                 ['one event at a time']),
                ('-b without branch records', 'perfmon record -b -- spin 1',
                 ['-b: no branch records on this machine (no LBR: ']),
                ('-j with an unknown filter',
                 'perfmon record -j any,foo -- spin 1',
                 ["-j any,foo: unknown filter 'foo'", USAGE]),
                ('-j with a filter of perf\'s Tally lacks',
                 'perfmon record -j hv -- spin 1',
                 ["'hv' is perf's, but means nothing here", USAGE]),
                ('report --branch with -g',
                 'perfmon report --branch -g',
                 ['--branch goes with --percent-limit alone',
                  'usage: perfmon report']),
                ('missing command', 'perfmon record -F 10',
                 ['missing command', USAGE]),
                ('unknown command', 'perfmon record frobnicate',
                 ["unknown command 'frobnicate'", USAGE]),
                ('unknown option', 'perfmon record -q -- spin 1',
                 ["unknown option '-q'", USAGE]),
                ('bad --sort', 'perfmon report --sort dso',
                 ["unknown keys 'dso'", 'usage: perfmon report']),
                ('bad --percent-limit', 'perfmon report --percent-limit 101',
                 ['not a percentage', 'usage: perfmon report']),
                ('bad top delay', 'perfmon top -d 0',
                 ['-d: \'0\'', 'usage: perfmon top']),
            ]
            for name, line, needles in bad:
                tap.step('%s is reported' % name, expect(line, needles))
            tap.step('no counter in use after the bad inputs', no_leak)
            tap.step('poweroff exits with 33', lambda: tallyqemu.poweroff(q))
        except tallyqemu.Stop:
            pass

    log = os.path.join(tallyqemu.BUILD, 'logs', 'serial-boot_record-poll.txt')
    with tallyqemu.Qemu(log=log, name='boot_record') as q:
        q.start(args.iso, smp=2, kvm=args.kvm_mode,
                cmdline='softpmu.overflow=poll')
        try:
            tap.step('poll mode: reaches the prompt',
                     lambda: q.wait_prompt() and None)
            out = q.command('perfmon record -- spin 1000', CMD_TIMEOUT)
            tap.result('cannot sample' in out and 'spin: ' not in out,
                       'poll mode: record refused in one line, command not '
                       'run', out)
            out = q.command('perfmon info', CMD_TIMEOUT)
            tap.result('counters in use: none' in out,
                       'poll mode: no counter in use after the refusal', out)
        except (tallyqemu.Stop, TimeoutError, tallyqemu.QemuExited) as e:
            tap.fail('poll mode session', str(e))
    return tap.finish()


if __name__ == '__main__':
    sys.exit(main())
