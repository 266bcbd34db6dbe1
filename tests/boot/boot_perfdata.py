#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of profiles leaving the guest as perf data.  On 2 CPUs with a
# COM2: `perfmon record -g -F 2000 -- spin N` streams to COM2 and says so,
# `perfmon report` and `--folded` give the guest's view, a second record
# (-g, the chain workload) follows in the same capture, a third with rings too small for
# its rate loses samples, and a fourth is cut short by killing QEMU during
# it.  On the host, tools/perfdata lists four recordings with the sample
# and lost counts the guest printed, the build the ELF is, and the last one
# cut short; perf report counts the third's lost samples as the guest did;
# then the real perf reads the
# first with build/tally.elf: `perf script` and `perf report --stdio` exit
# 0 with nothing on stderr, every sample is the spin thread with its
# callers in the chain, the spin loop is the top symbol, perf report's
# percentages are the guest's to within rounding, its sample, lost and
# event counts are the guest's, the folded stacks are the guest's and add
# up to the event count, `perf annotate` shows the loop's instructions, and
# perf reads the cut-short recording too; in the second, thousands of
# samples of the chain workload, `perf script` shows each chain as the known
# one or a prefix, no [unknown] and no frame that does not follow a call to
# the frame before it (objdump), and `perf report -g` names no unknown
# caller.  A second boot without COM2:
# record keeps the samples in memory and says so.  Prints TAP; exits 1 on
# failure.  Without perf, the checks that run it are skipped, saying why.
#

import os
import re
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import elfcalls  # noqa: E402
import tallyqemu  # noqa: E402

SMP = 2
CMD_TIMEOUT = 120
SPIN = 'perfmon record -g -F 2000 -- spin 200000000'
CHAIN = 'perfmon record -g -F 10000 -- chain 10000000'
# The chain of every sample in the chain workload, innermost first.
CHAIN_SYMS = ['workload_chain_inner', 'workload_chain_middle',
              'workload_chain_outer', 'workload_chain_cmd', 'shell_exec_argv',
              'perfmon_cmd_runner_main', 'thread_start', 'thread_start_entry']
CHAIN_MIN_SAMPLES = 2000
LOSSY = 'perfmon record -g -F 50000 -m 4K -- spin 100000000'
LONG = 'perfmon record -g -F 2000 -- spin 100000000000'
PERFDATA = os.path.join(tallyqemu.ROOT, 'tools', 'perfdata')
SUMMARY_RE = re.compile(r'\[ perfmon record: captured (\d+) samples, '
                        r'(\d+) lost, \d+ KiB \]')
ROW_RE = re.compile(r'^\s*(\d+\.\d+)%\s+(\S+)\s+\[k\] (\S+)\s*$', re.M)
# perf report -n: a sample count per row (its header says "1K" past 999).
PERF_ROW_RE = re.compile(r'^\s*(\d+\.\d+)%\s+(\d+)\s+(\S+)\s+\[k\] (\S+)\s*$',
                         re.M)
COUNT_RE = re.compile(r'^# Event count \(approx\.\): (\d+)', re.M)
SCRIPT_HEAD_RE = re.compile(r'^\s*(\S+)\s+(\d+)\s+\[(\d{3})\]\s+(\d+\.\d+):'
                            r'\s+(\d+) cpu-clock:\s*$')


def summary(out):
    m = SUMMARY_RE.search(out)
    return (int(m.group(1)), int(m.group(2))) if m else None


def run(argv):
    """(status, stdout, stderr) of a host command."""
    r = subprocess.run(argv, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, cwd=tallyqemu.ROOT)
    return r.returncode, r.stdout, r.stderr


def clean_run(argv):
    """stdout of a command that must succeed quietly; else an error."""
    code, out, err = run(argv)
    if code != 0 or err.strip():
        raise AssertionError('%s: status %d, stderr:\n%s'
                             % (' '.join(argv), code, err))
    return out


# perf's warning when over 5% of a recording's samples were lost: the
# recording says so itself, and the samples kept are still to be judged.
PERF_LOST_WARNING_RE = re.compile(
    r'^Warning:\s*\nProcessed \d+ samples and lost [\d.]+%!\s*$', re.M)


def perf_run(argv):
    """stdout of a perf command that must succeed with nothing on stderr
    but its lost-samples warning; else an error."""
    code, out, err = run(argv)
    if code != 0 or PERF_LOST_WARNING_RE.sub('', err).strip():
        raise AssertionError('%s: status %d, stderr:\n%s'
                             % (' '.join(argv), code, err))
    return out


def folded_lines(text):
    return sorted(ln.strip() for ln in text.strip().split('\n')
                  if ln.strip())


def script_samples(text):
    """perf script's samples: [(comm, tid, period, [chain symbols])]."""
    samples = []
    for block in text.strip().split('\n\n'):
        lines = block.split('\n')
        m = SCRIPT_HEAD_RE.match(lines[0])
        if m is None:
            raise AssertionError('not a sample line: %r' % lines[0])
        syms = [ln.split()[1].split('+')[0] for ln in lines[1:]]
        samples.append((m.group(1), int(m.group(2)), int(m.group(5)), syms))
    return samples


class Session:
    """What the guest said, for the host checks."""

    def __init__(self):
        self.spin = None            # (samples, lost)
        self.chain = None
        self.lossy = None
        self.report = ''
        self.folded = ''


def guest_session(t, com2):
    """The guest's part; a Session, or None if a step stopped it."""
    s = Session()
    with t.shell(timeout=CMD_TIMEOUT, smp=SMP, com2=com2) as sh:
        q, cmd = sh.q, sh.run
        t.tap.diag('COM2 %s' % com2)

        def record_spin():
            out = cmd(SPIN)
            s.spin = summary(out)
            if s.spin is None or s.spin[0] < 100:
                return 'no or too few samples:\n' + out
            if "streamed to COM2 in perf's format" not in out:
                return 'record does not say it streamed:\n' + out
            return None

        def guest_views():
            s.report = cmd('perfmon report')
            s.folded = cmd('perfmon report --folded')
            if not ROW_RE.search(s.report) or ';' not in s.folded:
                return 'no report or folded stacks:\n%s\n%s' \
                    % (s.report, s.folded)
            return None

        def record_chain():
            out = cmd(CHAIN)
            s.chain = summary(out)
            return None if s.chain else 'no summary:\n' + out

        def record_lossy():
            out = cmd(LOSSY)
            s.lossy = summary(out)
            if s.lossy is None:
                return 'no summary:\n' + out
            t.tap.diag('the small rings lost %d samples' % s.lossy[1])
            return None

        def cut_short():
            # Kill QEMU once the recording has streamed a few KiB.
            q.skip_output()
            q.send_line(LONG)
            start = os.path.getsize(com2)
            deadline = time.monotonic() + CMD_TIMEOUT
            while os.path.getsize(com2) < start + 16384:
                if time.monotonic() > deadline:
                    return 'the long recording streamed nothing'
                time.sleep(0.05)
            q.kill()
            return None

        sh.step('reaches the prompt', sh.prompt)
        sh.step('record -g -F 2000 -- spin streams to COM2', record_spin)
        sh.step('the guest reports it', guest_views)
        sh.step('a second record (-g, chain) follows', record_chain)
        sh.step('a third record, rings too small, loses samples',
                record_lossy)
        sh.step('a fourth record is cut short by killing QEMU', cut_short)
        return s
    return None


def host_checks(tap, s, com2, elf):
    data = os.path.join(tallyqemu.BUILD, 'logs', 'boot_perfdata.perf.data')
    cut = os.path.join(tallyqemu.BUILD, 'logs', 'boot_perfdata-cut.perf.data')
    perfdata = [sys.executable, PERFDATA]
    where = ['--capture', com2, '--elf', elf]

    def check(name, fn):
        try:
            err = fn()
        except AssertionError as e:
            err = str(e)
        tap.result(not err, name, err or '')

    def listing():
        out = clean_run(perfdata + ['list'] + where)
        rows = re.findall(r'^\s+(\d+)\s+(\d+)\s+(\d+)\s+\S+\s+cpu-clock\s+'
                          r'(\S+)\s+(.*)$', out, re.M)
        want = [(str(i), str(n), str(lost), 'this', line)
                for i, ((n, lost), line) in enumerate(
                    ((s.spin, SPIN), (s.chain, CHAIN),
                     (s.lossy, LOSSY)))]
        if rows[:3] != want or len(rows) != 4 or rows[3][4] != LONG:
            return 'list shows %r, the guest said %r:\n%s' % (rows, want, out)
        if not re.search(r'^\s+cut short', out, re.M) \
                or out.count('cut short') != 1:
            return 'the last recording is not the one cut short:\n' + out
        return None

    check('perfdata list: 4 recordings, the guest\'s counts, this build, '
          'the last cut short', listing)

    if shutil.which('perf') is None:
        tap.result(True, 'perf checks # SKIP perf not installed (Debian '
                   'linux-perf; tools/deps installs it as root)')
        return
    clean_run(perfdata + ['convert', '--index', '0', '-o', data] + where)
    state = {}

    def script():
        out = clean_run(['perf', 'script', '-i', data, '-k', elf])
        samples = script_samples(out)
        if len(samples) != s.spin[0]:
            return 'perf script shows %d samples, the guest captured %d' \
                % (len(samples), s.spin[0])
        threads = {(c, t) for c, t, _, _ in samples}
        if len(threads) != 1 or next(iter(threads))[0] != 'spin':
            return 'samples of other threads than spin: %r' % threads
        # Samples of the loop (not those of the thread at its start gate).
        loop = [syms for _, _, _, syms in samples
                if syms[:1] == ['workload_spin_loop']]
        if len(loop) < 0.8 * len(samples):
            return 'only %d of %d samples in the loop' % (len(loop),
                                                          len(samples))
        want = ['workload_spin_loop', 'workload_spin_cmd', 'shell_exec_argv']
        bad = [syms for syms in loop if syms[:3] != want]
        if bad:
            return '%d chains in the loop do not start %r, e.g. %r' \
                % (len(bad), want, bad[0])
        state['periods'] = sum(p for _, _, p, _ in samples)
        return None

    def report():
        out = clean_run(['perf', 'report', '-i', data, '-k', elf, '--stdio',
                         '--no-children', '--sort', 'comm,sym', '-n'])
        state['report'] = out
        rows = PERF_ROW_RE.findall(out)
        if not rows or rows[0][2:] != ('spin', 'workload_spin_loop'):
            return 'the top row is not spin in workload_spin_loop:\n' + out
        if sum(int(n) for _, n, _, _ in rows) != s.spin[0] \
                or '# Total Lost Samples: %d\n' % s.spin[1] not in out:
            return 'sample or lost counts are not %r:\n%s' % (s.spin, out)
        guest = {(c, sym): float(p) for p, c, sym in ROW_RE.findall(s.report)}
        host = {(c, sym): float(p) for p, _, c, sym in rows}
        if set(guest) != set(host):
            return 'rows differ: guest %r, perf %r' % (guest, host)
        worst = max(abs(guest[k] - host[k]) for k in guest)
        if worst > 0.011:
            return 'percentages differ by up to %.2f:\n%s\n%s' \
                % (worst, s.report, out)
        return None

    def totals():
        counts = [COUNT_RE.search(t) for t in (state.get('report', ''),
                                               s.report)]
        if None in counts:
            return 'no event count in the reports'
        counts = [int(m.group(1)) for m in counts]
        out = clean_run(perfdata + ['folded', '--index', '0'] + where)
        total = sum(int(ln.rpartition(' ')[2]) for ln in out.split('\n')
                    if ln)
        want = [total, state.get('periods')]
        if counts != want[:1] * 2 or want[1] != total:
            return 'folded adds up to %d, perf script\'s periods to %s, the ' \
                'event counts are %r' % (total, want[1], counts)
        if folded_lines(out) != folded_lines(s.folded):
            return 'folded stacks differ from the guest\'s:\n%s\n---\n%s' \
                % (out, s.folded)
        return None

    def annotate():
        out = clean_run(['perf', 'annotate', '-i', data, '-k', elf,
                         '--stdio', 'workload_spin_loop'])
        if 'workload_spin_loop' not in out \
                or not re.search(r'^\s+\d+\.\d+ +:\s+[0-9a-f]+:\s+\w+', out,
                                 re.M):
            return 'no annotated instructions:\n' + out
        return None

    def lost():
        # perf warns on stderr when over 5% were lost: only stdout counts.
        code, out, err = run(perfdata + ['report', '--index', '2'] + where
                             + ['--', '--no-children', '--sort', 'comm,sym',
                                '-n'])
        want = '# Total Lost Samples: %d\n' % s.lossy[1]
        nr = sum(int(n) for _, n, _, _ in PERF_ROW_RE.findall(out))
        if code != 0 or want not in out or nr != s.lossy[0]:
            return 'status %d, not %r:\n%s%s' % (code, s.lossy, out, err)
        return None

    def chain():
        cdata = os.path.join(tallyqemu.BUILD, 'logs',
                             'boot_perfdata-chain.perf.data')
        clean_run(perfdata + ['convert', '--index', '1', '-o', cdata] + where)
        out = perf_run(['perf', 'script', '-i', cdata, '-k', elf])
        if '[unknown]' in out:
            return 'perf script shows [unknown]:\n' + out[:3000]
        calls = elfcalls.Calls(elf)
        inside = 0
        for block in out.strip().split('\n\n'):
            frames = [ln.split()[:2] for ln in block.split('\n')[1:]]
            err = calls.check_chain([int(a, 16) for a, _ in frames])
            if err:
                return '%s:\n%s' % (err, block)
            syms = [sym.split('+')[0] for _, sym in frames]
            if syms[:1] and syms[0] in CHAIN_SYMS:
                inside += 1
                k = CHAIN_SYMS.index(syms[0])
                if syms != CHAIN_SYMS[k:k + len(syms)]:
                    return 'not the known chain or a prefix:\n' + block
        if inside < CHAIN_MIN_SAMPLES:
            return 'only %d samples in the chain' % inside
        rep = perf_run(['perf', 'report', '-i', cdata, '-k', elf, '--stdio',
                        '-g', 'caller', '--percent-limit', '0'])
        if '[unknown]' in rep or 'workload_chain_middle' not in rep:
            return 'perf report -g:\n' + rep[:3000]
        tap.diag('%d chains of the chain workload, all true' % inside)
        return None

    def tool_report():
        code, out, err = run(perfdata + ['report', '--index', '0'] + where)
        if code != 0 or 'workload_spin_loop' not in out:
            return 'status %d:\n%s%s' % (code, out, err)
        return None

    def cut_short():
        code, out, err = run(perfdata + ['convert', '-o', cut] + where)
        if code != 0 or not re.search(r'recording 3 was cut short .*: kept '
                                      r'.*\d+ (complete )?records', err):
            return 'status %d:\n%s%s' % (code, out, err)
        n = int(re.search(r'\((\d+) samples', out).group(1))
        rep = clean_run(['perf', 'report', '-i', cut, '-k', elf, '--stdio',
                         '--no-children', '--sort', 'comm,sym', '-n'])
        if sum(int(r[1]) for r in PERF_ROW_RE.findall(rep)) != n:
            return 'perf report does not show the %d samples kept:\n%s' \
                % (n, rep)
        return None

    check('perf script: every sample of spin, its callers in each chain',
          script)
    check('perf report: spin loop on top, the guest\'s counts and '
          'percentages', report)
    check('folded stacks are the guest\'s and add up to the event count',
          totals)
    check('perf annotate shows the spin loop\'s instructions', annotate)
    check('perf script and report -g of chain: only real callers', chain)
    check('perfdata report runs perf report', tool_report)
    check('perf report counts the lost samples the guest counted', lost)
    check('the recording cut short is said and read', cut_short)


def no_com2_session(t):
    with t.shell('nocom2', CMD_TIMEOUT, smp=1, com2=None) as sh:

        def record():
            out = sh.run('perfmon record -F 1000 -- spin 20000000')
            if summary(out) is None \
                    or 'kept in memory only (no COM2' not in out:
                return 'no summary, or not said to be kept in memory:\n' \
                    + out
            return None

        sh.step('no COM2: reaches the prompt', sh.prompt)
        sh.step('no COM2: record keeps the samples and says so', record)
        sh.step('no COM2: perfmon report reads them',
                sh.expect('perfmon report', ['workload_spin_loop']))
        sh.step('no COM2: poweroff exits with 33', sh.poweroff)


def main():
    t = tallyqemu.BootTest(__doc__)
    com2 = os.path.join(tallyqemu.BUILD, 'logs', 'boot_perfdata.perf.stream')
    elf = os.path.splitext(t.args.iso)[0] + '.elf'
    s = guest_session(t, com2)
    if s is not None:
        host_checks(t.tap, s, com2, elf)
    no_com2_session(t)
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
