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
# and tid, then its chain; `record -e cs -c 1 -- yield` samples every
# switch and names both threads; `perfmon record -a` and `--sort cpu` cover
# every CPU; `perfmon top` redraws until Ctrl-C; every bad input gets one line and
# leaves no counter in use; Ctrl-C during a record keeps its samples.  Call
# chains are true: every chain of `record -g -- chain N` (three levels under
# the command, prologues scheduled by gcc) sampled thousands of times is
# the known one or a prefix of it, and in a `-g` recording of each built-in
# workload every frame `perfmon script` shows after the first is the last
# byte of a call in build/tally.elf to the frame before it (objdump), and
# `report -g` names no raw address.  A second boot with
# softpmu.overflow=poll gets a clear refusal.  Prints TAP; exits 1 on
# failure.
#

import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import elfcalls  # noqa: E402
import tallyqemu  # noqa: E402

SMP = 4
CMD_TIMEOUT = 120
USAGE = 'usage: perfmon record'
SUMMARY_RE = re.compile(r'\[ perfmon record: captured (\d+) samples, '
                        r'(\d+) lost, (\d+) KiB \]')
ROW_RE = re.compile(r'^\s*(\d+\.\d+)%\s+(\S+)\s+\[k\] (\S+)', re.M)
COUNT_RE = re.compile(r'^# Event count \(approx\.\): (\d+)', re.M)


# The chain of every sample in the chain workload, innermost first.
CHAIN = ['workload_chain_inner', 'workload_chain_middle',
         'workload_chain_outer', 'workload_chain_cmd', 'shell_exec_argv',
         'perfmon_cmd_runner_main', 'thread_start', 'thread_start_entry']
CHAIN_MIN_SAMPLES = 2000
YIELDS = 100
# One -g recording of each built-in workload.
WORKLOADS = ('spin 30000000', 'memwalk 4M 64 8', 'branchy 3000000',
             'chain 3000000', 'yield 3000', 'hop 300', 'xcall 300',
             'sleep 300')
SCRIPT_FRAME_RE = re.compile(r'^\t([0-9a-f]{16}) (\S+)', re.M)


def script_chains(out):
    """perfmon script's chains: [[(address, symbol)]], one per sample."""
    chains = []
    for block in out.split('\n\n'):
        frames = [(int(a, 16), sym.split('+')[0])
                  for a, sym in SCRIPT_FRAME_RE.findall(block)]
        if frames:
            chains.append(frames)
    return chains


def summary(out):
    m = SUMMARY_RE.search(out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def main():
    t = tallyqemu.BootTest(__doc__)
    with t.shell(timeout=CMD_TIMEOUT, smp=SMP) as sh:
        q, run = sh.q, sh.run
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

        def chain_known():
            out = run('perfmon record -g -F 10000 -- chain 10000000')
            if summary(out) is None:
                return 'no summary:\n' + out
            out = run('perfmon script')
            inside = 0
            for frames in script_chains(out):
                syms = [sym for _, sym in frames]
                if syms[0] not in CHAIN:
                    continue
                inside += 1
                k = CHAIN.index(syms[0])
                if syms != CHAIN[k:k + len(syms)]:
                    return 'a chain not the known one or a prefix: %r' % syms
            if inside < CHAIN_MIN_SAMPLES:
                return 'only %d samples in the chain' % inside
            t.tap.diag('%d chains of the chain workload, all true' % inside)
            return None

        def no_invented_frame():
            calls = elfcalls.Calls(os.path.splitext(t.args.iso)[0] + '.elf')
            for w in WORKLOADS:
                out = run('perfmon record -g -F 2000 -- ' + w)
                if summary(out) is None:
                    return '%s: no summary:\n%s' % (w, out)
                chains = script_chains(run('perfmon script'))
                for frames in chains:
                    err = calls.check_chain([a for a, _ in frames])
                    if err:
                        return '%s: %s in %r' % (w, err, frames)
                rep = run('perfmon report -g')
                raw = re.search(r'^[ |\-\d.%]*(ffffffff[0-9a-f]{8}|'
                                r'\[unknown\])\s*$', rep, re.M)
                if raw:
                    return '%s: report -g shows %s:\n%s' \
                        % (w, raw.group(1), rep)
                t.tap.diag('%s: %d chains, every frame a caller'
                           % (w, len(chains)))
            return None

        def every_switch():
            # The soft PMU keeps -c 1; a thread meets one switch a run, and
            # its short-lived helper is named though gone by the first drain.
            out = run('perfmon record -e cs -c 1 -- yield %d' % YIELDS)
            s = summary(out)
            if s is None or s[0] < 2 * YIELDS:
                return 'want a sample per switch, at least %d:\n%s' \
                    % (2 * YIELDS, out)
            out = run('perfmon report --sort comm')
            comms = re.findall(r'^\s*\d+\.\d+%\s+(\S+)\s*$', out, re.M)
            if sorted(comms) != ['yield', 'yield-helper']:
                return 'want the two threads by name:\n' + out
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
            sh.reply()
            if '\x1b[H\x1b[2J' not in q.output:
                return 'top did not redraw in place'
            return None

        def top_stdio():
            out = run('perfmon top -d 1 -n 2 --stdio')
            if out.count('# Overhead') != 2 or '\x1b[' in out:
                return 'not two plain tables:\n' + out
            return None

        def ctrl_c_keeps():
            out = sh.interrupt('perfmon record -F 1000 -- spin 100000000000',
                               2)
            s = summary(out)
            if s is None or s[0] == 0 or 'interrupted' not in out:
                return 'no samples kept after Ctrl-C:\n' + out
            rep = run('perfmon report')
            if 'workload_spin_loop' not in rep:
                return 'the kept samples do not report:\n' + rep
            return None

        sh.step('reaches the prompt', sh.prompt)
        sh.step('report before any record says so',
                sh.expect('perfmon report', ['no recording',
                                             "perfmon record' first"]))
        sh.step('record -F 1000 -- spin prints the summary', record_spin)
        sh.step('report: the spin loop first, over 80%', report_first)
        sh.step('record -g, report -g: the callers in order', record_g)
        sh.step('report --folded adds up to the event count', folded)
        sh.step('script: a line per sample with comm, tid, chain', script)
        sh.step('record -g -- chain: each chain the known one or a prefix',
                chain_known)
        sh.step('record -g of each workload: every frame a real caller',
                no_invented_frame)
        sh.step('record -e cs -c 1 -- yield: a sample per switch, both '
                'threads named', every_switch)
        sh.step('record -a: report --sort cpu has every CPU', system_wide)
        sh.step('no counter in use after the records', sh.no_leak)
        sh.step('top redraws until Ctrl-C', top)
        sh.step('top --stdio -n 2 prints two plain tables', top_stdio)
        sh.step('Ctrl-C during record keeps the samples', ctrl_c_keeps)
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
            ('a group with an event no device counts',
             'perfmon record -e {cs,branch-misses}:S -- spin 1',
             ['branch-misses: no device here counts it']),
            ('nine events', 'perfmon record -e cs,cs,cs,cs,cs,cs,cs,cs,cs '
             '-- spin 1', ['-e: at most 8 events in one recording']),
            ('-b without branch records', 'perfmon record -b -- spin 1',
             ['-b: no branch records on this machine (no LBR: ']),
            ('-j with an unknown filter',
             'perfmon record -j any,foo -- spin 1',
             ["-j any,foo: unknown filter 'foo'", USAGE]),
            ('-j with a filter of perf\'s Tally lacks',
             'perfmon record -j hv -- spin 1',
             ["'hv' is perf's, but means nothing here", USAGE]),
            ('report --branch with -g', 'perfmon report --branch -g',
             ['--branch goes with --percent-limit alone',
              'usage: perfmon report']),
            ('missing command', 'perfmon record -F 10',
             ['missing command', USAGE]),
            ('unknown command', 'perfmon record frobnicate',
             ["unknown command 'frobnicate'", USAGE]),
            ('unknown option', 'perfmon record -q -- spin 1',
             ["unknown option '-q'", USAGE]),
            ('a value for a flag', 'perfmon record --switch-events=1 -- spin 1',
             ["option --switch-events takes no argument", USAGE]),
            ('bad --sort', 'perfmon report --sort dso',
             ["unknown keys 'dso'", 'usage: perfmon report']),
            ('bad --percent-limit', 'perfmon report --percent-limit 101',
             ['not a percentage', 'usage: perfmon report']),
            ('bad top delay', 'perfmon top -d 0',
             ['-d: \'0\'', 'usage: perfmon top']),
        ]
        for name, line, needles in bad:
            sh.step('%s is reported' % name, sh.expect(line, needles))
        sh.step('no counter in use after the bad inputs', sh.no_leak)
        sh.step('poweroff exits with 33', sh.poweroff)

    with t.shell('poll', CMD_TIMEOUT, smp=2,
                 cmdline='softpmu.overflow=poll') as sh:

        def refused():
            out = sh.run('perfmon record -- spin 1000')
            if 'cannot sample' not in out or 'spin: ' in out:
                return 'not refused, or the command ran:\n' + out
            return None

        sh.step('poll mode: reaches the prompt', sh.prompt)
        sh.step('poll mode: record refused in one line, command not run',
                refused)
        sh.step('poll mode: no counter in use after the refusal', sh.no_leak)
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
