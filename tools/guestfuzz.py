#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# The guest API fuzzer's driver (tests/kernel/perfmon_fuzz.c, the hidden
# test perfmon.fuzz): boots the test image under QEMU with
# `test=perfmon.fuzz fuzz.seconds=S fuzz.seed=N` and the software PMU's
# width and overflow mode, and prints one TAP line for the run, with the
# command that replays it.  Behind `make fuzz` (GUEST_FUZZ_SECONDS) and
# the boot test tests/boot/boot_fuzz.py, which imports run().
#
#   tools/guestfuzz.py [--seconds S] [--seed N] [--width W]
#                      [--overflow nmi|poll] [--counters C] [--smp N]
#                      [--iso ISO] [--kvm]
#
# Without --seed a seed is drawn and printed; without --width,
# --overflow and --counters they follow from the seed, so that the seed
# alone replays a run.
#

import argparse
import os
import random
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ktap  # noqa: E402
import tallyqemu  # noqa: E402

# Boot, setup and the end of the run take this much beyond the fuzzing.
MARGIN_TCG = 240
MARGIN_KVM = 300


def pmu_of(seed):
    """The software PMU's width, overflow mode and counters a seed stands
    for (2 or 4 counters make the events take turns)."""
    widths = (16, 20, 24, 26, 32, 40, 48, 64)
    return (widths[seed % len(widths)], ('nmi', 'poll')[seed // 8 % 2],
            (8, 2, 4)[seed // 16 % 3])


def replay_line(seconds, seed, width, overflow, counters, smp):
    return ('tools/guestfuzz.py --seconds %d --seed %d --width %d '
            '--overflow %s --counters %d --smp %d'
            % (seconds, seed, width, overflow, counters, smp))


def run(tap, iso, seconds, seed=None, width=None, overflow=None, smp=4,
        kvm=False, log=None, counters=None):
    """Boot one fuzzing run; one TAP line.  Returns whether it passed."""
    if seed is None:
        seed = random.SystemRandom().randrange(1, 1 << 31)
    w, o, c = pmu_of(seed)
    width = w if width is None else width
    overflow = o if overflow is None else overflow
    counters = c if counters is None else counters
    what = 'perfmon fuzz, seed %d, %d s, softpmu.width=%d ' \
        'softpmu.overflow=%s softpmu.counters=%d, %d CPUs' \
        % (seed, seconds, width, overflow, counters, smp)
    tap.diag('guest fuzz: seed %d; replay: %s'
             % (seed, replay_line(seconds, seed, width, overflow, counters,
                                  smp)))
    cmdline = ('test=perfmon.fuzz fuzz.seconds=%d fuzz.seed=%d '
               'softpmu.width=%d softpmu.overflow=%s softpmu.counters=%d'
               % (seconds, seed, width, overflow, counters))
    if log is None:
        log = os.path.join(tallyqemu.BUILD, 'logs',
                           'serial-guestfuzz-%d.txt' % seed)
    detail = ''
    with tallyqemu.Qemu(log=log, name='guestfuzz') as q:
        q.start(iso, smp=smp, kvm=kvm, cmdline=cmdline)
        margin = MARGIN_KVM if q.kvm else MARGIN_TCG
        try:
            code = q.wait_exit(seconds + margin)
        except TimeoutError as e:
            code = None
            detail = str(e)
        report = ktap.parse(q.output)
        tail = q.tail()
    results = dict(report.leaves())
    r = results.get('perfmon.fuzz')
    ok = (code == tallyqemu.EXIT_SUCCESS and r is not None and r.passed
          and not report.errors)
    if not ok:
        if code is not None and code != tallyqemu.EXIT_SUCCESS:
            detail += tallyqemu.describe_exit(code) + '\n'
        if r is not None:
            detail += '\n'.join(r.diagnostics) + '\n'
        detail += '\n'.join(report.errors) + '\n' + tail
        detail += '\nreplay: ' + replay_line(seconds, seed, width, overflow,
                                             counters, smp)
    elif r is not None:
        detail = '\n'.join(r.diagnostics)
    tap.result(ok, what, detail)
    return ok


def main():
    p = argparse.ArgumentParser(prog='tools/guestfuzz.py',
                                description='Run the guest perfmon API '
                                'fuzzer under QEMU.')
    p.add_argument('--seconds', type=int, default=60)
    p.add_argument('--seed', type=int, default=None)
    p.add_argument('--width', type=int, default=None)
    p.add_argument('--overflow', choices=('nmi', 'poll'), default=None)
    p.add_argument('--counters', type=int, default=None,
                   help='software PMU counters (default: from the seed)')
    p.add_argument('--smp', type=int, default=4)
    p.add_argument('--iso', default=tallyqemu.DEFAULT_TEST_ISO)
    p.add_argument('--kvm', action='store_true',
                   help='KVM when usable (default TCG)')
    args = p.parse_args()
    tallyqemu.install_sigterm_exit()
    tap = tallyqemu.Tap()
    run(tap, args.iso, args.seconds, args.seed, args.width, args.overflow,
        args.smp, 'auto' if args.kvm else False, counters=args.counters)
    return tap.finish()


if __name__ == '__main__':
    sys.exit(main())
