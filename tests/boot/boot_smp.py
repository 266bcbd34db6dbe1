#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of the SMP core on several CPU counts: under TCG with 1, 2 and 4
# CPUs, the shell's `cpus` lists exactly that many online CPUs and
# `threads` lists the idle thread of each plus the shell thread, and
# `xcallbench` times a round trip to each; then the
# in-kernel smp and xcall suites pass on 2 CPUs.  When KVM is usable, the
# same suites also run once under KVM (GRUB alone takes about a minute in
# this nested setup); otherwise that run is reported as skipped.  The
# `smp=N` boot option limits the CPUs started.  Prints TAP.
#

import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import ktap  # noqa: E402
import tallyqemu  # noqa: E402

CMD_TIMEOUT = 30
SUITE_TIMEOUT_TCG = 300
SUITE_TIMEOUT_KVM = 600


def check_shell(tap, iso, smp, cmdline='', expect=None):
    """Boot to the prompt and check `cpus` and `threads`."""
    expect = smp if expect is None else expect
    name = 'smp=%d%s' % (smp, ' ' + cmdline if cmdline else '')
    log = os.path.join(tallyqemu.BUILD, 'logs',
                       'serial-boot_smp-%d%s.txt'
                       % (smp, '-limited' if cmdline else ''))
    with tallyqemu.Qemu(log=log, name='boot_smp') as q:
        try:
            q.start(iso, smp=smp, kvm=False, cmdline=cmdline)
            q.wait_prompt()
            cpus = q.command('cpus', CMD_TIMEOUT)
            threads = q.command('threads', CMD_TIMEOUT)
            bench = q.command('xcallbench 50', CMD_TIMEOUT)
        except (TimeoutError, tallyqemu.QemuExited) as e:
            tap.fail('%s: boots to the prompt' % name, str(e))
            return
    online = re.findall(r'^\s*(\d+)\s+\d+\s+online\b', cpus, re.M)
    tap.result(online == [str(i) for i in range(expect)],
               '%s: cpus lists %d online CPUs' % (name, expect), cpus)
    rows = re.findall(r'to cpu(\d+)\s+\((local|remote)\)\s+min\s+(\d+)'
                      r'\s+median\s+(\d+)', bench)
    tap.result(sorted(int(r[0]) for r in rows) == list(range(expect))
               and [r[1] for r in rows].count('local') == 1
               and all(int(r[2]) > 0 and int(r[3]) >= int(r[2]) for r in rows),
               '%s: xcallbench reports min <= median for each CPU' % name,
               bench)
    idles = set(re.findall(r'\bidle/(\d+)\b', threads))
    tap.result(idles == set(str(i) for i in range(expect))
               and re.search(r'\bshell\b', threads) is not None,
               '%s: threads lists idle/0..%d and the shell'
               % (name, expect - 1), threads)


def check_give_up(tap, iso, smp):
    """Boot with smp.timeout_ms=0, so that each AP's start races the boot
    CPU giving up on it: every CPU either comes online or is left out (and
    says so), and none that was left out brings the machine down later."""
    name = 'smp=%d smp.timeout_ms=0' % smp
    log = os.path.join(tallyqemu.BUILD, 'logs',
                       'serial-boot_smp-%d-give-up.txt' % smp)
    with tallyqemu.Qemu(log=log, name='boot_smp') as q:
        try:
            q.start(iso, smp=smp, kvm=False, cmdline='smp.timeout_ms=0')
            q.wait_prompt()
            before = q.command('cpus', CMD_TIMEOUT)
            q.command('sleep 500', CMD_TIMEOUT)
            bench = q.command('xcallbench 10', CMD_TIMEOUT)
            after = q.command('cpus', CMD_TIMEOUT)
            boot_log = q.output
        except (TimeoutError, tallyqemu.QemuExited) as e:
            tap.fail('%s: boots and stays up' % name, str(e))
            return
    online = re.findall(r'^\s*(\d+)\s+\d+\s+online\b', before, re.M)

    def states(table):
        # CPU, APIC ID and state; the activity column says which CPU ran
        # the shell at that moment, which may change.
        return re.findall(r'^\s*(\d+)\s+(\d+)\s+(\S+)', table, re.M)

    left_out = re.findall(r'did not start \(.*\), left out', boot_log)
    remote = re.findall(r'to cpu\d+\s+\(remote\)', bench)
    tap.result(1 <= len(online) <= smp
               and len(online) + len(left_out) == smp
               and states(after) == states(before)
               and len(remote) == len(online) - 1,
               '%s: %d online, %d left out, machine stays up'
               % (name, len(online), len(left_out)),
               '\n'.join([before, bench, after]))


def check_suites(tap, iso, smp, kvm, limit=None):
    """Run the smp and xcall in-kernel suites; report each test.  limit:
    boot with smp=limit, leaving CPUs out (smp.late_answer_parks starts
    one of them late)."""
    mode = 'KVM' if kvm else 'TCG'
    detail = ''
    cmdline = 'test=smp,xcall' + (' smp=%d' % limit if limit else '')
    log = os.path.join(tallyqemu.BUILD, 'logs', 'serial-boot_smp-suites-%s%s.txt'
                       % (mode.lower(), '-limited' if limit else ''))
    with tallyqemu.Qemu(log=log, name='boot_smp') as q:
        q.start(iso, smp=smp, kvm=kvm, cmdline=cmdline)
        try:
            code = q.wait_exit(SUITE_TIMEOUT_KVM if q.kvm
                               else SUITE_TIMEOUT_TCG)
        except TimeoutError as e:
            code = None
            detail = str(e)
        report = ktap.parse(q.output)
    suites = set(path.split('.')[0] for path, r in report.leaves())
    ok = code == tallyqemu.EXIT_SUCCESS and report.ok and \
        suites == {'smp', 'xcall'}
    if code is not None and code != tallyqemu.EXIT_SUCCESS:
        detail = tallyqemu.describe_exit(code) + '\n' + q.tail()
    for path, r in report.leaves():
        if not r.passed:
            detail += '\nnot ok %s\n%s' % (path, '\n'.join(r.diagnostics))
    if limit:
        # The late start must have run, not been skipped.
        late = [r for path, r in report.leaves()
                if path == 'smp.late_answer_parks']
        ok = ok and len(late) == 1 and late[0].ok and not late[0].skip
    tap.result(ok, '%s -smp %d%s: smp and xcall suites pass (%d tests)'
               % (mode, smp, ' smp=%d' % limit if limit else '',
                  len(report.leaves())), detail)


def main():
    args = tallyqemu.boot_test_args(__doc__)
    tap = tallyqemu.Tap()
    for smp in (1, 2, 4):
        check_shell(tap, args.iso, smp)
    check_shell(tap, args.iso, 4, cmdline='smp=2', expect=2)
    check_give_up(tap, args.iso, 4)
    check_suites(tap, args.test_iso, 2, kvm=False)
    check_suites(tap, args.test_iso, 4, kvm=False, limit=2)
    if tallyqemu.kvm_usable():
        check_suites(tap, args.test_iso, 2, kvm=True)
    else:
        tap.ok('KVM -smp 2: smp and xcall suites # SKIP KVM not usable here')
    return tap.finish()


if __name__ == '__main__':
    sys.exit(main())
