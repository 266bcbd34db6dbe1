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

import tallyqemu  # noqa: E402

CMD_TIMEOUT = 30
SUITE_TIMEOUT_TCG = 300
SUITE_TIMEOUT_KVM = 600


def check_shell(t, smp, cmdline='', expect=None):
    """Boot to the prompt and check `cpus` and `threads`."""
    tap = t.tap
    expect = smp if expect is None else expect
    name = 'smp=%d%s' % (smp, ' ' + cmdline if cmdline else '')
    try:
        with t.shell('%d%s' % (smp, '-limited' if cmdline else ''),
                     CMD_TIMEOUT, smp=smp, kvm=False, cmdline=cmdline) as sh:
            sh.q.wait_prompt()
            cpus = sh.run('cpus')
            threads = sh.run('threads')
            bench = sh.run('xcallbench 50')
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


def check_give_up(t, smp):
    """Boot with smp.timeout_ms=0, so that each AP's start races the boot
    CPU giving up on it: every CPU either comes online or is left out (and
    says so), and none that was left out brings the machine down later."""
    tap = t.tap
    name = 'smp=%d smp.timeout_ms=0' % smp
    try:
        with t.shell('%d-give-up' % smp, CMD_TIMEOUT, smp=smp, kvm=False,
                     cmdline='smp.timeout_ms=0') as sh:
            sh.q.wait_prompt()
            before = sh.run('cpus')
            sh.run('sleep 500')
            bench = sh.run('xcallbench 10')
            after = sh.run('cpus')
            boot_log = sh.q.output
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


def check_suites(t, smp, kvm, limit=None):
    """Run the smp and xcall in-kernel suites: one TAP line, the failing
    tests in its detail.  limit: boot with smp=limit, leaving CPUs out
    (smp.late_answer_parks starts one of them late)."""
    mode = 'KVM' if kvm else 'TCG'
    cmdline = 'test=smp,xcall' + (' smp=%d' % limit if limit else '')
    run = t.run_suites(cmdline, 'suites-%s%s' % (mode.lower(),
                                                 '-limited' if limit else ''),
                       prefix=None, smp=smp, kvm=kvm,
                       timeout=SUITE_TIMEOUT_TCG, kvm_timeout=SUITE_TIMEOUT_KVM)
    problems = run.problems()
    suites = set(path.split('.')[0] for path, r in run.leaves())
    if suites != {'smp', 'xcall'}:
        problems.append('suites run: %s' % sorted(suites))
    if limit:
        # The late start must have run, not been skipped.
        late = [r for path, r in run.leaves()
                if path == 'smp.late_answer_parks']
        if len(late) != 1 or not late[0].ok or late[0].skip:
            problems.append('smp.late_answer_parks did not run and pass')
    t.tap.result(not problems, '%s -smp %d%s: smp and xcall suites pass '
                 '(%d tests)' % (mode, smp, ' smp=%d' % limit if limit else '',
                                 len(run.leaves())), '\n'.join(problems))


def main():
    t = tallyqemu.BootTest(__doc__)
    for smp in (1, 2, 4):
        check_shell(t, smp)
    check_shell(t, 4, cmdline='smp=2', expect=2)
    check_give_up(t, 4)
    check_suites(t, 2, kvm=False)
    check_suites(t, 4, kvm=False, limit=2)
    if tallyqemu.kvm_usable():
        check_suites(t, 2, kvm=True)
    else:
        t.tap.ok('KVM -smp 2: smp and xcall suites # SKIP KVM not usable '
                 'here')
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
