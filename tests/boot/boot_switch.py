#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of switch records, on 2 CPUs with a COM2: `perfmon record
# --switch-events -- yield N` records the switches of the yield threads,
# `perfmon script` prints them among the samples in time order, as perf
# script --show-switch-events does: each OUT (preempt: a yield leaves the
# thread runnable) names the thread coming in, whose IN on the same CPU
# names it back (or, when another kernel thread ran there meanwhile, the
# next IN names a thread not recorded); `perfmon report --sort offcpu` charges the time switched
# out to both threads, in the workload's functions, not the scheduler's; a
# CPU-wide recording (-C 1) has the switches of that CPU only; bad values
# get one line; Ctrl-C during a recording leaves nothing attached and the
# heap as it was.  On the host, the real perf reads the stream: perf
# script --show-switch-events shows exactly the guest's switch lines as
# PERF_RECORD_SWITCH_CPU_WIDE.  Prints TAP; exits 1 on failure.  Without
# perf, the checks that run it are skipped, saying why.
#

import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402

SMP = 2
CMD_TIMEOUT = 120
YIELDS = 2000
RECORD = 'perfmon record --switch-events -m 1M -F 1000 -- yield %d' % YIELDS
CPU_WIDE = 'perfmon record --switch-events -C 1 -F 100 --timeout 300'
PERFDATA = os.path.join(tallyqemu.ROOT, 'tools', 'perfdata')

# A line of perfmon script or perf script: comm, tid, cpu, time, the rest.
LINE_RE = re.compile(r'^\s*(\S+)\s+(\d+)\s+\[(\d{3})\]\s+(\d+)\.(\d{6}):\s+'
                     r'(.*)$')
# The rest of a switch line.
SWITCH_RE = re.compile(r'^PERF_RECORD_SWITCH_CPU_WIDE (IN|OUT)\s*(preempt)?'
                       r'\s+(next|prev) pid/tid:\s*(\d+)/(\d+)\s*$')


def timeline(text):
    """[(time_us, cpu, tid, comm, switch)] of every sample or switch line;
    switch is (kind, preempt, next_or_prev, other) or None."""
    lines = []
    for ln in text.split('\n'):
        m = LINE_RE.match(ln)
        if m is None:
            continue
        us = int(m.group(4)) * 1000000 + int(m.group(5))
        sw = SWITCH_RE.match(m.group(6))
        if 'PERF_RECORD_SWITCH' in m.group(6) and sw is None:
            raise AssertionError('a switch line not in perf\'s form: %r' % ln)
        switch = None
        if sw:
            if sw.group(4) != sw.group(5):
                raise AssertionError('pid and tid differ: %r' % ln)
            switch = (sw.group(1), bool(sw.group(2)), sw.group(3),
                      int(sw.group(5)))
        lines.append((us, int(m.group(3)), int(m.group(2)), m.group(1),
                      switch))
    return lines


def switches(lines):
    return [ln for ln in lines if ln[4] is not None]


def check_pairs(sw):
    """None, or what is wrong with the OUT/IN pairs of one CPU's switches:
    an OUT naming next N is followed on its CPU by N's IN naming it, or,
    when N is not a recorded thread (another thread of the kernel ran
    there meanwhile), by an IN naming a thread not recorded."""
    recorded = {ln[2] for ln in sw}
    by_cpu = {}
    for ln in sw:
        by_cpu.setdefault(ln[1], []).append(ln)
    for cpu, seq in by_cpu.items():
        for a, b in zip(seq, seq[1:]):
            if a[4][0] != 'OUT':
                continue
            nxt = a[4][3]
            if nxt in recorded:
                good = b[4] == ('IN', False, 'prev', a[2]) and b[2] == nxt
            else:
                good = b[4][:3] == ('IN', False, 'prev') \
                    and b[4][3] not in recorded
            if not good:
                return 'CPU %d: %r is followed by %r' % (cpu, a, b)
    return None


def run(argv):
    r = subprocess.run(argv, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, cwd=tallyqemu.ROOT)
    return r.returncode, r.stdout, r.stderr


class Session:
    def __init__(self):
        self.script = ''
        self.cpu_wide = ''
        self.nr_switches = None


def guest_session(t, com2):
    s = Session()
    with t.shell(timeout=CMD_TIMEOUT, smp=SMP, com2=com2) as sh:
        cmd = sh.run

        def record():
            out = cmd(RECORD)
            m = re.search(r'^perfmon: record: (\d+) switch records', out,
                          re.M)
            if not re.search(r'captured [1-9]\d* samples', out) or not m \
                    or "streamed to COM2 in perf's format" not in out:
                return 'no samples or switch records, or not streamed:\n' \
                    + out
            s.nr_switches = int(m.group(1))
            return None

        def script():
            s.script = cmd('perfmon script')
            lines = timeline(s.script)
            sw = switches(lines)
            names = {ln[3] for ln in sw}
            if len(sw) < YIELDS or not {'yield', 'yield-helper'} <= names:
                return 'want %d+ switches of yield and yield-helper, got ' \
                    '%d of %r:\n%s' % (YIELDS, len(sw), names,
                                       s.script[:3000])
            if len(sw) == len(lines):
                return 'no samples among the switches'
            if len(sw) != s.nr_switches:
                return 'record said %d switch records, script shows %d' \
                    % (s.nr_switches, len(sw))
            times = [ln[0] for ln in lines]
            if times != sorted(times):
                bad = next(i for i in range(1, len(times))
                           if times[i] < times[i - 1])
                return 'not in time order at line %d:\n%r\n%r' \
                    % (bad, lines[bad - 1], lines[bad])
            outs = [ln for ln in sw if ln[4][0] == 'OUT']
            if not all(ln[4][1] for ln in outs if ln[3] == 'yield-helper'):
                return 'a yield-helper OUT is not "preempt" (it yields)'
            t.tap.diag('%d switch lines among %d samples' % (len(sw),
                                                            len(lines)
                                                            - len(sw)))
            return check_pairs(sw)

        def offcpu():
            out = cmd('perfmon report --sort offcpu')
            rows = re.findall(r'^\s*(\d+\.\d+)%\s+(\d+\.\d+)\s+(\d+)\s+(\S+)'
                              r'\s+(\d+)\s+\[k\] (\S+)\s*$', out, re.M)
            got = {(r[3], r[5]) for r in rows}
            want = {('yield', 'workload_yield_cmd'),
                    ('yield-helper', 'workload_yield_helper')}
            if not want <= got:
                return 'want rows %r, got %r:\n%s' % (want, got, out)
            if any(f.startswith('thread_') for _, f in got
                   if _ in ('yield', 'yield-helper')):
                return 'a yield thread charged to the scheduler:\n' + out
            spans = {r[3]: int(r[2]) for r in rows
                     if (r[3], r[5]) in want}
            if min(spans.values()) < YIELDS // 2:
                return 'too few spans: %r\n%s' % (spans, out)
            return None

        def cpu_wide():
            out = cmd(CPU_WIDE)
            if 'captured' not in out:
                return 'no summary:\n' + out
            s.cpu_wide = cmd('perfmon script')
            sw = switches(timeline(s.cpu_wide))
            cpus = {ln[1] for ln in sw}
            if not sw or cpus != {1}:
                return 'want switches of CPU 1 only, got CPUs %r:\n%s' \
                    % (cpus, s.cpu_wide[:3000])
            return check_pairs(sw)

        def bad_values():
            for line, needle in (
                    ('perfmon record --switch-events=1 -- yield 1',
                     'switch-events'),
                    ('perfmon report --sort offcpus', "unknown keys "
                     "'offcpus'"),
                    ('perfmon report --sort offcpu -g', '--sort offcpu '
                     'goes with --percent-limit alone')):
                out = cmd(line)
                first = out.strip().split('\n')[0] if out.strip() else ''
                if needle not in first or not first.startswith('perfmon'):
                    return '%r: want one line naming %r:\n%s' \
                        % (line, needle, out)
            return None

        def ctrl_c():
            before = cmd('mem')
            out = sh.interrupt('perfmon record --switch-events -C 1 -F 100',
                               0.5)
            if 'captured' not in out:
                return 'want a recording ended by Ctrl-C:\n' + out
            after = cmd('mem')
            if after != before:
                return 'the heap is not as before:\n%s\n%s' % (before, after)
            return sh.no_leak()

        sh.step('reaches the prompt', sh.prompt)
        sh.step('record --switch-events -- yield streams to COM2', record)
        sh.step('perfmon script: switch lines among the samples, in time '
                'order, each OUT followed by the IN it names', script)
        sh.step('report --sort offcpu: both threads, in the workload\'s '
                'functions', offcpu)
        sh.step('-C 1: the switches of CPU 1 only', cpu_wide)
        sh.step('bad values get one line', bad_values)
        sh.step('Ctrl-C leaves nothing attached, the heap as before', ctrl_c)
        return s
    return None


def host_checks(tap, s, com2, elf):
    data = os.path.join(tallyqemu.BUILD, 'logs', 'boot_switch.perf.data')
    where = ['--capture', com2, '--elf', elf]

    if shutil.which('perf') is None:
        tap.result(True, 'perf checks # SKIP perf not installed (Debian '
                   'linux-perf; tools/deps installs it as root)')
        return

    def show(index, guest):
        code, out, err = run([sys.executable, PERFDATA, 'convert', '--index',
                              str(index), '-o', data] + where)
        if code != 0:
            return 'convert: status %d:\n%s%s' % (code, out, err)
        code, out, err = run(['perf', 'script', '--show-switch-events', '-i',
                              data, '-k', elf, '-F', 'comm,tid,cpu,time'])
        if code != 0 or err.strip():
            return 'perf script: status %d, stderr:\n%s' % (code, err)
        try:
            host = switches(timeline(out))
            want = switches(timeline(guest))
        except AssertionError as e:
            return str(e)
        if not host or host != want:
            return 'perf shows %d switches, the guest %d; first apart: ' \
                '%r:\n%s' % (len(host), len(want),
                             next((p for p in zip(host, want)
                                   if p[0] != p[1]), None), out[:3000])
        tap.diag('perf script shows the %d switches' % len(host))
        return None

    for index, name, guest in ((0, 'yield', s.script),
                               (1, '-C 1', s.cpu_wide)):
        try:
            err = show(index, guest)
        except AssertionError as e:
            err = str(e)
        tap.result(not err, 'perf script --show-switch-events: the guest\'s '
                   'switches of the %s recording' % name, err or '')


def main():
    t = tallyqemu.BootTest(__doc__)
    com2 = os.path.join(tallyqemu.BUILD, 'logs', 'boot_switch.perf.stream')
    elf = os.path.splitext(t.args.iso)[0] + '.elf'
    s = guest_session(t, com2)
    if s is not None:
        host_checks(t.tap, s, com2, elf)
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
