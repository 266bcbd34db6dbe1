#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Scripted shell fuzzer: one boot of the user image on 2 CPUs, with the
# software PMU's width and overflow mode drawn from the seed, then a
# bounded number of random command lines: `perfmon stat` with random
# valid and invalid -e lists (names, aliases, raw codes, modifiers), CPU
# lists, -r, -x, -a, -A, -j, -I, --interval-count, --timeout, -t,
# --per-thread, around small workloads or none (ending by themselves or at
# Ctrl-C); short `perfmon record`s with and without --switch-events and
# bad values; `perfmon list`, `info`, `report` (--sort offcpu too),
# `script`, `bench` with bad
# options; workloads with bad arguments; short background commands,
# `jobs` and `kill` with bad arguments; overlong lines, too many words, open quotes, control
# characters and bytes >= 0x80; `perfmon regions` arming, show, reset
# and off with valid and invalid options, names and events; Ctrl-C while
# typing and while a command runs.  The seed is printed first; TALLY_FUZZ_SEED=N replays a run.
#
# Checked: every line gets the prompt back (no hang), the kernel never
# panics or fails an assertion, and afterwards no counter is in use and
# the heap holds what it held before the first command (the same
# recording kept: RECORD_PRIME at both ends).
#

import os
import random
import re
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402

SMP = 2
NR_LINES = 150
BUDGET_S = 120              # stop sending new lines after this long
CMD_TIMEOUT = 60

EVENTS = ('cycles', 'instructions', 'task-clock', 'cpu-clock', 'cs',
          'context-switches', 'cpu-migrations', 'migrations', 'interrupts',
          'xcalls', 'nmis', 'test', 'branches', 'branch-misses', 'cyclez',
          'r2', 'r7', 'r01c2', 'rffffffffffffffffff', 'r', 'r-1', '', 'x' * 40,
          '{cycles}', 'cpu/event=1/', 'cs/period=3/', 'cs/freq=0/',
          'task-clock/freq=99,period=1/', '{cs,interrupts}:S', '{cs}:SS',
          'cycles/period=99999999999999999999/', 'cs:S')
MODS = ('', '', '', ':u', ':k', ':uk', ':ku', ':', ':x', ':uu', ':p')
WORKLOADS = ('spin 2000', 'spin 0', 'spin -1', 'spin 99999999999999999999',
             'yield 5', 'hop 3', 'xcall 3', 'sleep 5', 'branchy 1000',
             'memwalk 16K 64', 'memwalk 4K 0', 'memwalk 1G 64', 'memwalk',
             'nosuchcommand', 'help', 'perfmon info', 'spin 1000 extra')
GARBAGE = '\x01\x02\x07\x0b\x0c\x1b\x7f\x80\xa0\xff"\'\\ \t'


def event_list(rnd):
    items = [rnd.choice(EVENTS) + rnd.choice(MODS)
             for _ in range(rnd.randint(1, 4))]
    return ','.join(items)


def cpu_list(rnd):
    return rnd.choice(('0', '1', '0-1', '0,1', '1-0', '5', '0-63', '', 'a',
                       '0,,1', '-1', '99999999999'))


def stat_line(rnd):
    words = ['perfmon', 'stat']
    for _ in range(rnd.randint(0, 4)):
        opt = rnd.choice(('-e', '-a', '-C', '-A', '-r', '-x', '-q', '--bogus',
                          '-j', '-I', '--interval-count', '--timeout', '-t',
                          '--per-thread'))
        words.append(opt)
        if opt == '-e':
            words.append(event_list(rnd))
        elif opt == '-C':
            words.append(cpu_list(rnd))
        elif opt == '-r':
            words.append(rnd.choice(('1', '2', '3', '0', '101', 'x', '')))
        elif opt == '-x':
            words.append(rnd.choice((',', ';', '""', ':')))
        elif opt == '-t':
            words.append(rnd.choice(('0', '1', '8', '1,1', '0,1,2', '999',
                                     'x', ',', '1,')))
        elif opt in ('-I', '--interval-count', '--timeout'):
            words.append(rnd.choice(('1', '10', '50', '5', '0', 'x', '-1',
                                     '99999999999999999999')))
    if rnd.random() < 0.7:
        words.append('--')
    words.append(rnd.choice(WORKLOADS))
    return ' '.join(words)


# What a fuzzed recording may be: short, on one CPU or a small workload,
# default rings.  The capture the last one keeps may hold no store chunk
# (nothing sampled: 0 KiB) or one; the heap check re-primes to compare.
RECORD_OPTS = ('--switch-events', '--switch-events', '--switch-events=1',
               '-F 100', '-F 0', '-c 0', '-t x', '-m 3K', '-g', '-i',
               '--bogus')
# The recording kept while the heap is measured.  Its store is one chunk
# whatever the timing: the yields' switch records are always there, and
# far fewer than a chunk holds (a capture's store grows a 128 KiB chunk at
# its first record, so an empty one holds an object fewer).  Its event is
# context-switches, which every configuration that samples has (a narrow
# soft PMU refuses cpu-clock: then a fuzzed recording of another event
# would be kept at the end and none at the start).
RECORD_PRIME = 'perfmon record -e cs -c 1 --switch-events -- yield 5'
# A recording that keeps nothing: no sample at this period, no switch
# records.
RECORD_EMPTY = 'perfmon record -e cs -c 1000000 -- spin 10'


def record_line(rnd):
    words = ['perfmon', 'record']
    words += [rnd.choice(RECORD_OPTS) for _ in range(rnd.randint(0, 3))]
    if rnd.random() < 0.5:
        words += ['-C', rnd.choice(('0', '1')), '--timeout',
                  rnd.choice(('10', '20', '0', 'x'))]
    else:
        words += ['--', rnd.choice(('yield 5', 'sleep 5', 'spin 2000',
                                    'nosuchcommand'))]
    return ' '.join(words)


def other_line(rnd):
    return rnd.choice((
        'perfmon', 'perfmon list', 'perfmon info', 'perfmon bogus',
        'perfmon report', 'perfmon report --sort nothing', 'perfmon script',
        'perfmon report --sort offcpu', 'perfmon report --sort offcpu -g',
        'perfmon report --sort offcpu --percent-limit 5',
        'perfmon bench -n x', 'perfmon top -F 0', 'perfmon stat',
        'perfmon stat -e', 'perfmon stat -C', 'cpus', 'threads', 'syscnt perf',
        'help perfmon', 'cmdline', 'log',
        # With no command: each ends by itself.
        'perfmon stat -a --timeout 50', 'perfmon stat -C 1 -j --timeout 20',
        'perfmon stat -a -A -I 10 --interval-count 3 -x ,',
        # (Records: record_line, which keeps the heap's shape.)
        'perfmon stat -t 0,1 --per-thread --timeout 20',
        'jobs', 'kill', 'kill 1',
        'kill x', '&', 'spin 1000 &', 'nosuchcommand &',
    ))


REGION_NAMES = ('spin', 'xcall', 'switch', 'kmem_alloc', 'kmem_free', 'pmi',
                'sample', 'bench', 'nope', 'SPIN', '')


def regions_line(rnd):
    kind = rnd.randrange(3)
    if kind == 0:
        words = ['perfmon', 'regions']
        for _ in range(rnd.randint(0, 3)):
            opt = rnd.choice(('-e', '-C', '--every', '--bogus', '-x'))
            words.append(opt)
            if opt == '-e':
                words.append(event_list(rnd))
            elif opt == '-C':
                words.append(cpu_list(rnd))
            elif opt == '--every':
                words.append(rnd.choice(('1', '3', '0', '1000001', 'x',
                                         '-1', '')))
        words += [rnd.choice(REGION_NAMES) for _ in range(rnd.randint(0, 2))]
        return ' '.join(words)
    if kind == 1:
        words = ['perfmon', 'regions', 'show']
        for _ in range(rnd.randint(0, 3)):
            opt = rnd.choice(('--self', '-x', '-j', '-e', 'extra'))
            words.append(opt)
            if opt == '-x':
                words.append(rnd.choice((',', ';', '""', 'toolongsep')))
        return ' '.join(words)
    return rnd.choice(('perfmon regions reset', 'perfmon regions off',
                       'perfmon regions list', 'perfmon regions off x',
                       'perfmon regions reset x', 'perfmon help regions',
                       'xcall 3', 'yield 3', 'spin 100'))


def hostile_line(rnd):
    kind = rnd.randrange(5)
    if kind == 0:
        return 'x' * rnd.randint(250, 600)
    if kind == 1:
        return ' '.join(['a'] * rnd.randint(30, 80))
    if kind == 2:
        return 'perfmon stat -e "cycles -- spin 10'
    if kind == 3:
        return ''.join(rnd.choice(GARBAGE + 'abc') for _ in range(30))
    return 'perfmon stat -e ' + ','.join(['cs'] * rnd.randint(10, 40)) + \
        ' spin 10'


def make_line(rnd):
    r = rnd.random()
    if r < 0.5:
        return stat_line(rnd)
    if r < 0.58:
        return record_line(rnd)
    if r < 0.68:
        return regions_line(rnd)
    if r < 0.8:
        return other_line(rnd)
    return hostile_line(rnd)


def heap_line(q):
    out = q.command('mem', CMD_TIMEOUT)
    m = re.search(r'^heap:\s+(\d+) objects, (\d+) bytes', out, re.M)
    return (int(m.group(1)), int(m.group(2))) if m else out


def send_and_wait(q, rnd, line):
    """Type the line (maybe with a Ctrl-C) and wait for the prompt."""
    q.skip_output()
    how = rnd.random()
    if how < 0.08:
        # Ctrl-C while typing: the line is dropped.
        q.send(line[:len(line) // 2] + '\x03')
    elif how < 0.16:
        # Ctrl-C while the command runs (the long ones stop for it).
        q.send(rnd.choice(('perfmon stat -- spin 300000000\r',
                           'perfmon stat -a -I 20\r', 'perfmon stat -C 0\r',
                           'perfmon record --switch-events -C 1 -F 100\r')))
        time.sleep(rnd.uniform(0.05, 0.5))
        q.send('\x03')
    else:
        q.send(line + '\r')
    q.wait_prompt(CMD_TIMEOUT)


def main():
    t = tallyqemu.BootTest(__doc__)
    tap = t.tap
    seed = int(os.environ.get('TALLY_FUZZ_SEED', '0')) or \
        random.SystemRandom().randrange(1, 1 << 31)
    rnd = random.Random(seed)
    width = rnd.choice((16, 24, 32, 64))
    overflow = rnd.choice(('nmi', 'poll'))
    cmdline = 'softpmu.width=%d softpmu.overflow=%s' % (width, overflow)
    tap.diag('shell fuzz: seed %d (replay: TALLY_FUZZ_SEED=%d %s), %s'
             % (seed, seed, os.path.relpath(__file__), cmdline))
    sent = []
    with t.shell(timeout=CMD_TIMEOUT, smp=SMP, cmdline=cmdline) as sh:
        q = sh.q
        try:
            q.wait_prompt()
            # A recording kept from the start: those the lines make replace
            # it with one of its size.
            q.command(RECORD_PRIME, CMD_TIMEOUT)
            before = heap_line(q)
            start = time.monotonic()
            for _ in range(NR_LINES):
                if time.monotonic() - start > BUDGET_S:
                    break
                line = make_line(rnd)
                sent.append(line)
                send_and_wait(q, rnd, line)
            tap.ok('%d fuzzed lines, each answered with a prompt'
                   % len(sent))
        except (TimeoutError, tallyqemu.QemuExited) as e:
            tap.fail('fuzzed lines answered with a prompt',
                     'last line sent: %r\n%s' % (sent[-1] if sent else '',
                                                 e))
            return t.finish()
        bad = re.findall(r'(?m)^.*(?:panic: |assertion failed).*$', q.output)
        tap.result(not bad, 'no panic, no failed assertion', '\n'.join(bad))

        def heap_back():
            after = heap_line(q)
            for _ in range(10):     # exited threads are freed shortly after
                if after == before:
                    break
                sh.run('sleep 100')
                after = heap_line(q)
            return None if after == before \
                else 'before %s, after %s' % (before, after)

        # Armed regions hold their events and counts until turned off.
        q.command('perfmon regions off', CMD_TIMEOUT)
        # The last recording kept may be empty (a short one that sampled
        # nothing); an empty one for sure, then the prime again: the capture
        # kept is then the one measured before, and a leak still shows.
        q.command(RECORD_EMPTY, CMD_TIMEOUT)
        q.command(RECORD_PRIME, CMD_TIMEOUT)
        sh.step('no counter in use afterwards', sh.no_leak)
        sh.step('heap back to where it started', heap_back)
        sh.step('poweroff', sh.poweroff)
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
