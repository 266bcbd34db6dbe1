#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of branch stacks end to end.  QEMU has no LBR, so the test
# image's in-kernel suite `lbr` puts a fake back end in place of the
# driver's (tests/kernel/lbr_test.c): it registers and unregisters the
# driver's callback under sampling NMIs on 4 CPUs, then records `spin`
# with -b through the shell and runs `perfmon report --branch` and
# `perfmon script`.  Checked here, in the serial log: every test of the
# suite passes (hw_loop skipped, saying there is no LBR); `perfmon info`
# names the fake records, their depth and filters; report --branch puts
# the spin loop's backward branch first at 75% with no mispredicts and the
# exit second at 25% all mispredicted; script prints each sample's stack
# with symbols, predicted or mispredicted and its cycles.  On COM2 the
# recordings carry BRANCH_STACK: tools/perfdata lists them and, with the
# real perf, perf script shows the same branches (brstacksym) and perf
# evlist the filters as branch_sample_type (any,u,k then any_call,k).
# A second boot, the user image: the boot log says why there is no LBR in
# one line, `perfmon info` says it too, and `-b`, `-j` are refused
# clearly, leaving nothing allocated.  Prints TAP; exits 1 on failure.
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

SMP = 4
RUN_TIMEOUT = 420
CMD_TIMEOUT = 120
PERFDATA = os.path.join(tallyqemu.ROOT, 'tools', 'perfdata')
TEST_ELF = os.path.join(tallyqemu.BUILD, 'tally-test.elf')

INFO_RE = re.compile(r'branch records: fake branch records \(test image\); '
                     r'4 entries; filters any,any_call,any_ret,ind_call,'
                     r'call,cond,ind_jmp,u,k; in use: no')
ROW_RE = re.compile(r'^\s*(\d+\.\d+)%\s+(\S+)\s+(\S+)\s+(\S+)\s*$', re.M)
SCRIPT_RE = re.compile(r'^\tbranch [0-9a-f]{16} workload_spin_loop\+0xd -> '
                       r'[0-9a-f]{16} workload_spin_loop\+0x2 predicted '
                       r'\d+ cycles$', re.M)
SCRIPT_EXIT_RE = re.compile(r'^\tbranch [0-9a-f]{16} workload_spin_loop\+0xf'
                            r' -> [0-9a-f]{16} shell_exec_argv\+0x0 '
                            r'mispredicted \d+ cycles$', re.M)
LBR_LOG_RE = re.compile(r'lbr: (no LBR: .*)')


def check(tap, ok, name, detail=''):
    """One TAP line; the detail only when it failed."""
    return tap.result(ok, name, '' if ok else detail)


def host(argv):
    r = subprocess.run(argv, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, cwd=tallyqemu.ROOT)
    return r.returncode, r.stdout, r.stderr


def suite(t):
    """The test image with test=lbr: the suite, then what it printed."""
    run = t.run_suites('test=lbr', smp=SMP, timeout=RUN_TIMEOUT)
    results = dict(run.leaves())
    hw = results.get('lbr.hw_loop')
    check(t.tap, hw is not None and (not hw.skip
                                     or 'no LBR' in hw.skip_reason),
          'lbr.hw_loop ran, or skipped saying there is no LBR',
          hw.skip_reason if hw else 'not run')
    problems = run.problems()
    check(t.tap, not problems and len(results) == 3,
          'the lbr suite runs its 3 tests and exits with 33',
          '\n'.join(problems + ['tests: %r' % sorted(results)]))
    return run.text


def views(tap, out):
    check(tap, INFO_RE.search(out) is not None,
          'perfmon info names the branch records, depth and filters')
    start = out.find('# perfmon report --branch')
    rows = ROW_RE.findall(out[start:start + 2000]) if start >= 0 else []
    want = [('75.00', '0.00%', 'workload_spin_loop+0xd',
             'workload_spin_loop+0x2'),
            ('25.00', '100.00%', 'workload_spin_loop+0xf',
             'shell_exec_argv+0x0')]
    check(tap, rows[:2] == want,
          'report --branch: the loop first, its exit second, mispredicts',
          'rows: %r' % rows[:4])
    check(tap, len(SCRIPT_RE.findall(out)) >= 3 * 10
          and len(SCRIPT_EXIT_RE.findall(out)) >= 10,
          'script prints each stack with symbols, flags, cycles')


def stream(tap, com2):
    code, out, err = host([PERFDATA, 'list', '--capture', com2, '--elf',
                           TEST_ELF])
    check(tap, code == 0 and re.search(r'^\s+0\s+\d+\s+0\s.*-b -e cpu-clock',
                                       out, re.M) is not None,
          'perfdata lists the branch recordings', out + err)
    if shutil.which('perf') is None:
        tap.ok('perf script shows the branch stacks # SKIP no perf')
        tap.ok('perf evlist shows the filters # SKIP no perf')
        return
    code, out, err = host([PERFDATA, 'script', '--capture', com2, '--elf',
                           TEST_ELF, '--index', '0', '--', '-F',
                           'brstacksym'])
    check(tap, code == 0 and 'workload_spin_loop+0xd/workload_spin_loop+0x2'
          '/P/' in out and '/shell_exec_argv+0x0/M/' in out,
          'perf script shows the branch stacks', (out + err)[:2000])
    evlist = []
    for index in ('0', '1'):
        data = os.path.join(tallyqemu.BUILD, 'logs', 'boot_lbr-%s.data'
                            % index)
        host([PERFDATA, 'convert', '--capture', com2, '--elf', TEST_ELF,
              '--index', index, '-o', data])
        evlist.append(host(['perf', 'evlist', '-v', '-i', data])[1])
    check(tap, 'branch_sample_type: USER|KERNEL|ANY' in evlist[0]
          and 'branch_sample_type: KERNEL|ANY_CALL' in evlist[1],
          'perf evlist shows the filters', '\n'.join(evlist))


def absence(t):
    """The user image, no LBR: one log line, info, refusals."""
    with t.shell('user', CMD_TIMEOUT, smp=2) as sh:
        sh.step('reaches the prompt', sh.prompt)
        boot_log = sh.run('log')
        lines = LBR_LOG_RE.findall(boot_log)
        check(t.tap, len(lines) == 1, 'the boot log says why there is no '
              'LBR, in one line', boot_log)
        why = lines[0].strip() if lines else '?'
        sh.step('perfmon info says it too',
                sh.expect('perfmon info', ['branch records: ' + why]))
        sh.step('-b is refused in one line',
                sh.expect('perfmon record -b -- spin 1',
                          ['perfmon: record: -b: no branch records on this '
                           'machine (%s)' % why]))
        sh.step('-j is refused in one line',
                sh.expect('perfmon record -j cond,k -- spin 1',
                          ['perfmon: record: -j: no branch records on this '
                           'machine (%s)' % why]))
        sh.step('the refusals leave nothing allocated', sh.no_leak)
        sh.step('poweroff exits with 33', sh.poweroff)


def main():
    t = tallyqemu.BootTest(__doc__)
    out = suite(t)
    views(t.tap, out)
    stream(t.tap, tallyqemu.com2_path_for(t.log_path()))
    absence(t)
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
