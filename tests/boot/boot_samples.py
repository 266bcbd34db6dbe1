#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of recordings of several sampled events.  On 2 CPUs with a
# COM2, under TCG (the soft PMU's events): `perfmon record -e
# cpu-clock,interrupts/period=2/ -- spin N` samples both, each at its own
# rate; `perfmon report` prints a section per event whose sample counts
# add up to the summary's, `--sort event` a row per event, and every line
# of `perfmon script` names its event.  `-e {cpu-clock,interrupts}:S`
# (leader sampling) samples cpu-clock alone and each sample reads the
# group: the report shows interrupts counted with the samples of the
# leader, and script names both.  A system-wide two-event recording is
# stopped by Ctrl-C and leaves no counter in use; a second one leaves the
# heap as the first did (each keeps its recording, the last one alone).  Bad period and freq
# terms, and a bad group modifier, are refused in one line.  On the host,
# tools/perfdata lists each recording with its events, and the real perf
# reads them: `perf report --stdio` has a section per event with the
# guest's sample counts, `perf script -F event,ip,sym` names each sample's
# event with the same counts (the leader-sampled group's members counted
# from the reads, as perf splits them), and `perfdata flamegraph` writes a
# graph per event.  Prints TAP; exits 1 on failure.  Without perf, the
# checks that run it are skipped, saying why.
#

import os
import re
import shutil
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402
from boot_perfdata import clean_run  # noqa: E402

SMP = 2
CMD_TIMEOUT = 120
TWO = 'perfmon record -e cpu-clock,interrupts/period=2/ -- spin 100000000'
TWO_EVENTS = ('cpu-clock', 'interrupts/period=2/')
GROUP = 'perfmon record -e {cpu-clock,interrupts}:S -- spin 100000000'
GROUP_EVENTS = ('cpu-clock', 'interrupts')
WIDE = 'perfmon record -a -e cpu-clock/freq=500/,cs'
MIN_SAMPLES = 20
PERFDATA = os.path.join(tallyqemu.ROOT, 'tools', 'perfdata')
SUMMARY_RE = re.compile(r'\[ perfmon record: captured (\d+) samples, '
                        r'(\d+) lost, \d+ KiB \]')
THROTTLED_RE = re.compile(r'^perfmon: record: sampling was throttled', re.M)
HEAP_RE = re.compile(r'^heap:\s+(\d+) objects, (\d+) bytes', re.M)
SECTION_RE = re.compile(r"^# Samples: (\d+)\s+of event '([^']+)'", re.M)
# perfmon script's and perf script -F event,ip,sym's event field.
SCRIPT_EVENT_RE = re.compile(r':\s+\d+ (\S+): [0-9a-f]{16} ')
PERF_EVENT_RE = re.compile(r'^\s*(\S+):\s', re.M)


def sections(report):
    """{event: samples} of a report's per-event sections."""
    return {name: int(n) for n, name in SECTION_RE.findall(report)}


def script_counts(text, regex):
    counts = {}
    for name in regex.findall(text):
        counts[name] = counts.get(name, 0) + 1
    return counts


class Session:
    def __init__(self):
        self.two = None             # {event: samples} of the guest report
        self.group = None
        self.captured = 0           # the last record's summary


def guest_session(t, com2):
    s = Session()
    with t.shell(timeout=CMD_TIMEOUT, smp=SMP, com2=com2) as sh:
        cmd = sh.run

        def record(line, events, key):
            """Record; the sections of the report, and the samples
            captured, or what is wrong."""
            out = cmd(line)
            m = SUMMARY_RE.search(out)
            # Under TCG on a loaded host the clock interrupt behind
            # cpu-clock comes late: a few dozen samples, not thousands.
            if m is None or int(m.group(1)) < MIN_SAMPLES:
                return 'no or too few samples:\n' + out
            rep = cmd('perfmon report')
            secs = sections(rep)
            if tuple(secs) != events or min(secs.values()) == 0:
                return 'not a section with samples per event %r:\n%s' \
                    % (events, rep)
            setattr(s, key, secs)
            s.captured = int(m.group(1))
            s.throttled = THROTTLED_RE.search(out) is not None
            return None

        def two():
            err = record(TWO, TWO_EVENTS, 'two')
            if err is None and sum(s.two.values()) != s.captured:
                err = 'the sections add up to %d samples, not the %d ' \
                    'captured' % (sum(s.two.values()), s.captured)
            return err

        def script_names(want):
            """Check: perfmon script's lines name the events as often as
            the report's sections count them."""
            counts = script_counts(cmd('perfmon script'), SCRIPT_EVENT_RE)
            if counts != want:
                return 'script names %r, the report counted %r' \
                    % (counts, want)
            return None

        def own_period():
            # interrupts samples every 2 (its term), cpu-clock at -F's
            # default frequency (periods of about a 4000th of a second).
            out = cmd('perfmon script')
            # A loaded host can make the throttle double it: then the
            # recording said so, and each period is 2 doubled.
            periods = re.findall(r':\s+(\d+) interrupts/period=2/: ', out)
            allowed = ({str(2 << k) for k in range(8)} if s.throttled
                       else {'2'})
            if not periods or periods[0] != '2' \
                    or not set(periods) <= allowed:
                return 'interrupts/period=2/ periods: %r%s' \
                    % (set(periods), ' (throttled)' if s.throttled else '')
            return None

        def sort_event():
            out = cmd('perfmon report --sort event')
            rows = re.findall(r'^\s*\d+\.\d+%\s+(\d+)\s+(\S+)\s*$', out, re.M)
            got = {name: int(n) for n, name in rows}
            if got != s.two or "of event 'each, by samples'" not in out:
                return 'not a row per event with %r:\n%s' % (s.two, out)
            return None

        def group():
            # The leader's samples alone; each stands for the events the
            # group counted since the one before on its CPU.
            err = record(GROUP, GROUP_EVENTS, 'group')
            if err is None and (s.group['cpu-clock'] != s.captured
                                or s.group['interrupts'] > s.captured):
                err = '%r of %d samples captured' % (s.group, s.captured)
            return err or script_names(s.group)

        def heap():
            m = HEAP_RE.search(cmd('mem'))
            return m.groups() if m else None

        def wide_interrupted():
            # Twice: the second recording replaces the first one kept, so
            # the heap holds as much after it as after the first.
            held = []
            for _ in range(2):
                out = sh.interrupt(WIDE, 1.5)
                if SUMMARY_RE.search(out) is None:
                    return 'no summary after Ctrl-C:\n' + out
                held.append(heap())
            if None in held or held[0] != held[1]:
                return 'the heap held %r, then %r' % tuple(held)
            return sh.no_leak()

        sh.step('reaches the prompt', sh.prompt)
        sh.step('record -e cpu-clock,interrupts/period=2/: a report section '
                'per event', two)
        sh.step('script names each sample\'s event, as many as the report',
                lambda: script_names(s.two))
        sh.step('interrupts/period=2/ samples every 2 interrupts',
                own_period)
        sh.step('report --sort event: a row per event', sort_event)
        sh.step('record -e {cpu-clock,interrupts}:S: both events in report '
                'and script', group)
        sh.step('record -a of two events, Ctrl-C: nothing left in use, the '
                'heap as before', wide_interrupted)
        sh.step('period= and freq= together are refused', sh.expect(
            'perfmon record -e cs/period=1,freq=2/ -- spin 1',
            ['period= and freq= exclude each other', 'usage: perfmon record']))
        sh.step('a bad freq= is refused', sh.expect(
            'perfmon record -e cs/freq=0/ -- spin 1',
            ["freq must be above 0 ('freq=0')"]))
        sh.step('S twice is refused', sh.expect(
            'perfmon record -e {cs,interrupts}:SS -- spin 1',
            ['bad group modifier (u, k, D and S']))
        sh.step('too many events are refused', sh.expect(
            'perfmon record -e ' + ','.join(['cs'] * 9) + ' -- spin 1',
            ['-e: at most 8 events in one recording']))
        sh.step('no counter in use after the refusals', sh.no_leak)
        return s
    return None


def host_checks(tap, s, com2, elf):
    perfdata = [sys.executable, PERFDATA]
    where = ['--capture', com2, '--elf', elf]
    logs = os.path.join(tallyqemu.BUILD, 'logs')

    def check(name, fn):
        try:
            err = fn()
        except AssertionError as e:
            err = str(e)
        tap.result(not err, name, err or '')

    def listing():
        out = clean_run(perfdata + ['list'] + where)
        for i, events in enumerate((TWO_EVENTS, GROUP_EVENTS)):
            if not re.search(r'^\s+%d\s+\d+\s+\d+\s+\S+\s+%s\s' % (
                    i, re.escape(','.join(events))), out, re.M):
                return 'recording %d is not listed with %r:\n%s' \
                    % (i, events, out)
        return None

    check('perfdata list names each recording\'s events', listing)

    if shutil.which('perf') is None:
        tap.result(True, 'perf checks # SKIP perf not installed (Debian '
                   'linux-perf; tools/deps installs it as root)')
        return

    def perf_reads(index, want):
        data = os.path.join(logs, 'boot_samples-%d.perf.data' % index)
        clean_run(perfdata + ['convert', '--index', str(index), '-o', data]
                  + where)
        rep = clean_run(['perf', 'report', '-i', data, '-k', elf, '--stdio',
                         '--no-children'])
        if sections(rep) != want:
            return 'perf report sections %r, the guest %r:\n%s' \
                % (sections(rep), want, rep)
        out = clean_run(['perf', 'script', '-i', data, '-k', elf, '-F',
                         'event,ip,sym'])
        counts = script_counts(out, PERF_EVENT_RE)
        if counts != want:
            return 'perf script -F event,ip,sym names %r, the guest %r' \
                % (counts, want)
        return None

    check('perf report and perf script -F event,ip,sym: each of the two '
          'events, the guest\'s counts', lambda: perf_reads(0, s.two))
    check('perf reads the leader-sampled group: both events, the guest\'s '
          'counts', lambda: perf_reads(1, s.group))

    def flamegraphs():
        svg = os.path.join(logs, 'boot_samples.svg')
        out = clean_run(perfdata + ['flamegraph', '--index', '0', '-o', svg]
                        + where)
        for name in TWO_EVENTS:
            path = os.path.join(logs, 'boot_samples-%s.svg'
                                % re.sub(r'[^A-Za-z0-9._-]', '_', name))
            if not os.path.isfile(path) or \
                    '%d samples' % s.two[name] not in out:
                return 'no graph of %s with its %d samples:\n%s' \
                    % (name, s.two[name], out)
        return None

    check('perfdata flamegraph: a graph per event', flamegraphs)


def main():
    t = tallyqemu.BootTest(__doc__)
    com2 = os.path.join(tallyqemu.BUILD, 'logs', 'boot_samples.perf.stream')
    elf = os.path.splitext(t.args.iso)[0] + '.elf'
    s = guest_session(t, com2)
    if s is not None and s.two and s.group:
        host_checks(t.tap, s, com2, elf)
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
