#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of what `perfmon stat` counts, on 4 CPUs: a CPU-wide run of a
# command that fails at once, or of a short one, never shows more CPUs
# utilized than it counted (all events start and stop together, after and
# before the clock); `spin 1` never migrates over 300 runs; the threads a
# command creates are counted (yield's helper) unless -i; :u counts 0 on
# kernel work; xcalls-sent counts what a thread sends; an interrupted -r
# run is left out of the means; long options, tabs and `perfmon list`
# filters work; Ctrl-C typed during a command does not cancel the next
# line.  Prints TAP; exits 1 on failure.
#

import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402
from tallyqemu import stat_count, stat_elapsed, stat_utilized  # noqa: E402

SMP = 4
CMD_TIMEOUT = 120


def main():
    t = tallyqemu.BootTest(__doc__)
    with t.shell(timeout=CMD_TIMEOUT, smp=SMP) as sh:
        q, run = sh.q, sh.run

        def utilized_at_most(line, most, nr):
            def check():
                out = run(line)
                figures = stat_utilized(out)
                if len(figures) != nr or max(figures) > most:
                    return 'want %d figures <= %g CPUs utilized:\n%s' \
                        % (nr, most, out)
                return None
            return check

        def never_migrates():
            for i in range(3):
                out = run('perfmon stat -r 100 -e cpu-migrations spin 1')
                if '(100 runs)' not in out or \
                        stat_count(out, 'cpu-migrations') != 0:
                    return 'round %d: not 0 migrations over 100 runs:\n%s' \
                        % (i + 1, out)
            return None

        def children_counted():
            both = run('perfmon stat -e cs yield 1000')
            alone = run('perfmon stat -i -e cs yield 1000')
            b, a = stat_count(both, 'cs'), stat_count(alone, 'cs')
            # Each yield switches the thread and its helper: about 2000
            # switches for both, about 1000 for the thread alone.
            if b is None or a is None or not 2000 <= b <= 2200 \
                    or not 1000 <= a <= 1100:
                return 'cs: %r with the helper, %r without:\n%s\n%s' \
                    % (b, a, both, alone)
            return None

        def modes():
            out = run('perfmon stat -e cs:u,cs:k,cs,task-clock:u '
                      'yield 10')
            u, k = stat_count(out, 'cs:u'), stat_count(out, 'cs:k')
            if u != 0 or k is None or k < 10 or stat_count(out, 'cs') != k:
                return ':u must count 0, :k and none alike:\n' + out
            if not re.search(r'msec task-clock:u', out):
                return 'the clock counts in any mode:\n' + out
            bad = run('perfmon stat -e cs:uu spin 1')
            if 'each at most once' not in bad:
                return 'cs:uu not refused:\n' + bad
            return None

        def xcalls():
            out = run('perfmon stat -i -e xcalls-sent,xcalls xcall 100')
            sent, served = stat_count(out, 'xcalls-sent'), \
                stat_count(out, 'xcalls')
            if sent is None or sent < 100 or served is None or served > 10:
                return 'xcalls-sent %r (>= 100), served %r:\n%s' \
                    % (sent, served, out)
            return None

        def interrupted_repeat():
            out = sh.interrupt('perfmon stat -r 50 -e cs sleep 200', 0.4,
                               started='sleep: asked 200 ms')
            m = re.search(r"\((\d+) of 50 runs\)", out)
            if not m or 'the unfinished run left out' not in out:
                return 'no "N of 50 runs" with the run left out:\n' + out
            if not re.search(r'means of %s of 50 runs' % m.group(1), out):
                return 'header and message disagree:\n' + out
            return None

        def long_options():
            out = run('perfmon stat --event=cs --repeat=2 '
                      '--field-separator=, --no-inherit spin 1')
            lines = [l for l in out.split('\n') if l.endswith(',')
                     or re.match(r'^\d+,', l)]
            if not lines or not lines[0].startswith('0,,cs,'):
                return 'no CSV line for cs:\n' + out
            return None

        def csv_after_command():
            out = run('perfmon stat -x , -e cs hop 8')
            at = out.find('hop: 8 hops')
            csv = out.find(',cs,')
            if at < 0 or csv < 0 or csv < at:
                return 'the CSV lines are not after the output:\n' + out
            return None

        def csv_running_is_mean():
            # -x's running-time column is the mean over the runs, as the
            # count is: task-clock's msec and its running ns agree.
            out = run('perfmon stat -r 4 -x , -e task-clock spin 2000000')
            m = re.search(r'^([\d.]+),msec,task-clock,[\d.]*%,(\d+),', out,
                          re.M)
            if not m:
                return 'no CSV line for task-clock:\n' + out
            msec, running_ms = float(m.group(1)), int(m.group(2)) / 1e6
            if msec <= 0 or not 0.5 <= running_ms / msec <= 2:
                return 'running %g ms for a mean of %g ms:\n%s' \
                    % (running_ms, msec, out)
            return None

        def tabs():
            # Echoed and run with blanks in place of the tabs.
            q.skip_output()
            q.send_line('perfmon\tstat\t-e\tcs\tspin 1')
            m = q.wait_for(re.compile(re.escape('perfmon stat -e cs spin 1')
                                      + r'\r*\n(.*?)'
                                      + re.escape(tallyqemu.PROMPT),
                                      re.DOTALL), CMD_TIMEOUT)
            out = m.group(1).replace('\r', '')
            if stat_count(out, 'cs') is None:
                return 'a tab-separated command did not run:\n' + out
            return None

        def list_filter():
            out = run('perfmon list xcall')
            names = re.findall(r'^  (\S+)\s', out, re.M)
            names = [n for n in names if n != 'event']
            if sorted(names) != ['xcalls', 'xcalls-sent']:
                return 'perfmon list xcall lists %r:\n%s' % (names, out)
            out = run('perfmon list nothing-like-this')
            if "no event matches 'nothing-like-this'" not in out:
                return 'no-match message missing:\n' + out
            return None

        def ctrl_c_does_not_leak():
            # Typed at once: a command that never looks for Ctrl-C, a
            # Ctrl-C meant for it, and the next command.  The Ctrl-C must
            # not reach the next prompt (no "^C" there); the next command
            # runs.
            q.skip_output()
            q.send(b'xcallbench 200\r\x03perfmon stat -e cs spin 1\r')
            m = q.wait_for(re.compile(r'(xcall round trip.*?)seconds time '
                                      r'elapsed', re.DOTALL), CMD_TIMEOUT)
            out = m.group(1).replace('\r', '')
            q.wait_prompt(CMD_TIMEOUT)
            if '^C' in out or stat_count(out, 'cs') is None:
                return 'the Ctrl-C reached the next prompt:\n' + out
            return None

        sh.step('reaches the prompt with -smp %d' % SMP, sh.prompt)
        sh.step('-a on a failing command: at most %d CPUs utilized' % SMP,
                utilized_at_most('perfmon stat -a hop 1.5', SMP, 1))
        sh.step('-C 0-3 hop 56: at most %d CPUs utilized' % SMP,
                utilized_at_most('perfmon stat -C 0-3 hop 56', SMP, 1))
        sh.step('-a -A: at most 1 CPU utilized per CPU',
                utilized_at_most('perfmon stat -a -A -e cpu-clock sleep 50',
                                 1.0, SMP))
        sh.step('spin 1 never migrates over 300 runs', never_migrates)
        sh.step('yield 1000: the helper is counted, -i leaves it out',
                children_counted)
        sh.step(':u counts 0 on kernel work, cs:uu is refused', modes)
        sh.step('xcalls-sent counts the calls a thread sends', xcalls)
        sh.step('Ctrl-C in -r 50: the unfinished run is left out',
                interrupted_repeat)
        sh.step('long options', long_options)
        sh.step('-x lines come after the command\'s output',
                csv_after_command)
        sh.step('-r 4 -x: the running time is the mean of the runs\'',
                csv_running_is_mean)
        sh.step('tabs separate words', tabs)
        sh.step('perfmon list FILTER', list_filter)
        sh.step('a Ctrl-C typed during a command does not leak',
                ctrl_c_does_not_leak)
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
