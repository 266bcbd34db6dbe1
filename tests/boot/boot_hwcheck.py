#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of tools/hwcheck as a user with only QEMU would run it: the
# three files it reads (hwcheck, tallyqemu.py, ktap.py) copied alone into
# a scratch directory, run with a PATH that holds python3 and
# qemu-system-x86_64 and nothing else, under TCG (--tcg: no PMU here).
# With the test image: the PMU identity lines, `perfmon selftest`'s lines
# and summary, the hardware suites' results (the branch-stack check skipped,
# saying there is no LBR), a PASS verdict, status 0.  With the user image:
# the same through the shell, the branch-stack check skipped alike.  Each
# run ends naming the one file for a bug report, which holds the host's
# CPU, the QEMU used, the run as printed and the serial log.  The user
# image taken for a test image fails (status 1), a missing image says so
# (status 2).
# Prints TAP; exits 1 on failure.
#

import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                     'tools')
sys.path.insert(0, TOOLS)

import tallyqemu  # noqa: E402

RUN_TIMEOUT = 300


def sandbox(tmp):
    """tmp/tools with hwcheck's three files, tmp/bin with its two programs."""
    tools = os.path.join(tmp, 'tools')
    bindir = os.path.join(tmp, 'bin')
    os.makedirs(tools)
    os.makedirs(bindir)
    for name in ('hwcheck', 'tallyqemu.py', 'ktap.py'):
        shutil.copy2(os.path.join(TOOLS, name), tools)
    os.symlink(sys.executable, os.path.join(bindir, 'python3'))
    qemu = shutil.which(tallyqemu.QEMU)
    if qemu is None:
        raise OSError('%s not found' % tallyqemu.QEMU)
    os.symlink(qemu, os.path.join(bindir, tallyqemu.QEMU))
    return tools, bindir


def hwcheck(tmp, tools, bindir, *argv):
    """Run the copy of hwcheck; returns (status, output)."""
    env = {'PATH': bindir, 'HOME': tmp, 'PYTHONDONTWRITEBYTECODE': '1'}
    try:
        r = subprocess.run([os.path.join(bindir, 'python3'),
                            os.path.join(tools, 'hwcheck'),
                            '--log', os.path.join(tmp, 'serial.txt')]
                           + list(argv), cwd=tmp, env=env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        return None, (e.output or b'').decode('utf-8', 'replace')
    return r.returncode, r.stdout.decode('utf-8', 'replace')


def expect(status, out, want_status, lines):
    if status != want_status:
        return 'exit status %r, expected %d; output:\n%s' % (status,
                                                             want_status, out)
    missing = [ln for ln in lines if ln not in out]
    if missing:
        return 'missing %r in:\n%s' % (missing, out)
    return None


def check_report(tmp, out, want):
    """The run named its bug-report file, which holds want."""
    path = os.path.join(tmp, 'build', 'hwcheck-report.txt')
    if ('hwcheck: attach %s to a bug report' % path) not in out:
        return 'no line naming %s in:\n%s' % (path, out)
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        return 'cannot read the report: %s' % e
    missing = [w for w in want if w not in text]
    return 'report lacks %r' % missing if missing else None


def main():
    t = tallyqemu.BootTest(__doc__)
    args, tap = t.args, t.tap
    common = ['hwcheck: cpu: ', 'hwcheck: pmu: ',
              'perfmon selftest: hardware PMU: ',
              'PASS  soft: test event across 2 wraps',
              'hwcheck: the guest sees no hardware PMU']
    tmp = tempfile.mkdtemp(prefix='tally-hwcheck.')
    try:
        tools, bindir = sandbox(tmp)

        status, out = hwcheck(tmp, tools, bindir, '--tcg', '--iso',
                              os.path.abspath(args.test_iso))
        tap.diag(out)
        err = expect(status, out, 0, common + [
            ', test image ', 'ok pmu_selftest.run', 'ok pmu.caps',
            'ok lbr.hw_loop # SKIP no LBR: ',
            'hwcheck: qemu success (exit 33)', 'hwcheck: PASS'])
        tap.result(err is None, 'test image: identity, selftest, suites, '
                   'PASS', err or '')
        err = check_report(tmp, out, [
            '== host', 'host vendor_id: ', 'qemu: QEMU emulator version',
            'accelerator: TCG', 'hwcheck: PASS', '== serial log',
            'ok pmu_selftest.run'])
        tap.result(err is None, 'test image: one file for a bug report',
                   err or '')

        status, out = hwcheck(tmp, tools, bindir, '--tcg', '--iso',
                              os.path.abspath(args.iso))
        err = expect(status, out, 0, common + [
            ', user image ', 'tally> perfmon info', 'hardware PMU: ',
            'SKIP  branch stacks: no LBR: ', 'hwcheck: PASS'])
        tap.result(err is None, 'user image: identity, selftest, PASS',
                   err or '')
        err = check_report(tmp, out, ['tally> perfmon info',
                                      'perfmon selftest: '])
        tap.result(err is None, 'user image: one file for a bug report',
                   err or '')

        status, out = hwcheck(tmp, tools, bindir, '--tcg', '--image', 'test',
                              '--iso', os.path.abspath(args.iso))
        err = expect(status, out, 1, ['hwcheck: FAIL'])
        tap.result(err is None, 'an image without tests taken for one: FAIL',
                   err or '')

        status, out = hwcheck(tmp, tools, bindir, '--tcg', '--iso',
                              os.path.join(tmp, 'none.iso'))
        err = expect(status, out, 2, ['none.iso not found'])
        tap.result(err is None, 'a missing image: status 2 and why',
                   err or '')
    except OSError as e:
        tap.fail('sandbox for hwcheck', str(e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
