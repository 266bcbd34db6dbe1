#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Unit tests of the parts of tools/tallyqemu.py that the boot tests share
# and that need no QEMU: how a boot that ran to its end is judged
# (BootRun), how an in-kernel KTAP run's tests become TAP lines
# (report_leaves), where a boot test's serial logs go (BootTest.log_path)
# and the checks of a shell session (Shell), against a stand-in for Qemu;
# and, on a fake host (a cpuinfo, an MSR and a CPUID file of our own), the
# QEMU options for branch records and the PMU, `make run`'s vCPUs and the
# host's part of hwcheck's bug report.  A boot test trusts these to fail
# what must fail: each test here makes sure they do.
#

import io
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'tools'))

import tallyqemu  # noqa: E402

PASSING = '''KTAP version 1
1..2
    KTAP version 1
    # Subtest: perfmon
    1..2
    # 5 overflows
    ok 1 counts
    ok 2 wraps # SKIP no PMU
ok 1 perfmon
ok 2 alone
'''

FAILING = '''KTAP version 1
1..2
# it went wrong
not ok 1 first
ok 2 second
'''

CUT_SHORT = '''KTAP version 1
1..3
ok 1 first
panic: cpu0: assertion failed
'''


def run(output, code=tallyqemu.EXIT_SUCCESS, why=''):
    return tallyqemu.BootRun(code, why, output, '    | last line')


def tap_lines(report, **kw):
    out = io.StringIO()
    tap = tallyqemu.Tap(out)
    tallyqemu.report_leaves(tap, report, **kw)
    return out.getvalue().split('\n')[:-1], tap


class BootRunTest(unittest.TestCase):

    def test_all_well(self):
        r = run(PASSING)
        self.assertIsNone(r.exit_problem())
        self.assertEqual(r.problems(), [])
        self.assertEqual([p for p, _ in r.leaves()],
                         ['perfmon.counts', 'perfmon.wraps', 'alone'])

    def test_exit_status(self):
        r = run(PASSING, code=tallyqemu.EXIT_PANIC)
        self.assertIn('kernel panic (exit 37)', r.exit_problem())
        self.assertIn('| last line', r.exit_problem())
        self.assertEqual(len(r.problems()), 1)
        self.assertIsNone(r.exit_problem(tallyqemu.EXIT_PANIC))

    def test_timeout(self):
        r = run(PASSING, code=None, why='timeout after 3s')
        self.assertEqual(r.exit_problem(), 'timeout after 3s')
        self.assertEqual(r.exit_problem(tallyqemu.EXIT_TEST_FAILURE),
                         'timeout after 3s')

    def test_report_exit(self):
        out = io.StringIO()
        tap = tallyqemu.Tap(out)
        self.assertTrue(run(PASSING).report_exit(tap, 'it exits'))
        self.assertTrue(run(PASSING, code=tallyqemu.EXIT_PANIC)
                        .report_exit(tap, 'it exits'))
        self.assertFalse(run(PASSING, code=None, why='timeout after 3s')
                         .report_exit(tap, 'it exits',
                                      tallyqemu.EXIT_PANIC))
        lines = out.getvalue().split('\n')
        self.assertEqual(lines[0], 'ok 1 - it exits with 33')
        self.assertEqual(lines[1], 'not ok 2 - it exits with 33')
        self.assertIn('not ok 3 - it exits', lines)
        self.assertIn('# timeout after 3s', lines)
        self.assertEqual(tap.failed, 2)

    def test_failures(self):
        r = run(FAILING, code=tallyqemu.EXIT_TEST_FAILURE)
        self.assertEqual(r.failures(), ['not ok first\nit went wrong'])
        self.assertEqual(r.problems(tallyqemu.EXIT_TEST_FAILURE,
                                    failures=False), [])
        self.assertEqual(len(r.problems()), 2)

    def test_cut_short(self):
        r = run(CUT_SHORT, code=tallyqemu.EXIT_PANIC)
        problems = r.report_problems()
        self.assertTrue(problems)
        self.assertEqual(len(r.problems(tallyqemu.EXIT_PANIC)),
                         len(problems))

    def test_no_report(self):
        self.assertTrue(run('GRUB loading...\r\n').report_problems())

    def test_empty_plan(self):
        self.assertEqual(run('KTAP version 1\n1..0\n').report_problems(),
                         ['the plan is 1..0: no kernel test ran'])

    def test_text(self):
        self.assertEqual(run('a\r\nb\r\n').text, 'a\nb\n')


class ReportLeavesTest(unittest.TestCase):

    def test_lines(self):
        lines, tap = tap_lines(run(PASSING).report)
        self.assertEqual(lines, ['ok 1 - ktap: perfmon.counts',
                                 '# 5 overflows',
                                 'ok 2 - ktap: perfmon.wraps # SKIP no PMU',
                                 'ok 3 - ktap: alone'])
        self.assertEqual(tap.failed, 0)

    def test_failure_and_prefix(self):
        lines, tap = tap_lines(run(FAILING).report, prefix='x: ')
        self.assertEqual(lines, ['not ok 1 - x: first', '# it went wrong',
                                 'ok 2 - x: second'])
        self.assertEqual(tap.failed, 1)

    def test_skip_fails(self):
        lines, tap = tap_lines(run(PASSING).report, skip_fails=True)
        self.assertIn('not ok 2 - ktap: perfmon.wraps', lines)
        self.assertIn('# skipped: no PMU', lines)
        self.assertNotIn('SKIP', '\n'.join(lines))
        self.assertEqual(tap.failed, 1)


class LogPathTest(unittest.TestCase):

    def test_paths(self):
        t = tallyqemu.BootTest('doc', argv=[])
        self.assertEqual(t.name, os.path.splitext(os.path.basename(
            sys.argv[0]))[0])
        t = tallyqemu.BootTest('doc', name='boot_x', argv=[])
        logs = os.path.join(tallyqemu.BUILD, 'logs')
        self.assertEqual(t.log_path(), os.path.join(logs,
                                                    'serial-boot_x.txt'))
        self.assertEqual(t.log_path('poll'),
                         os.path.join(logs, 'serial-boot_x-poll.txt'))
        t = tallyqemu.BootTest('doc', name='boot_x', argv=['--log', 'l.txt'])
        self.assertEqual(t.log_path(), 'l.txt')
        self.assertEqual(t.log_path('poll'),
                         os.path.join(logs, 'serial-boot_x-poll.txt'))


class FakeQemu:
    """Answers command() from a table, as the shell would."""

    def __init__(self, replies):
        self.replies = replies
        self.lines = []

    def command(self, line, timeout):
        self.lines.append((line, timeout))
        return self.replies[line]

    def wait_prompt(self, timeout=None):
        raise TimeoutError('no prompt')


class ShellTest(unittest.TestCase):

    def shell(self, replies):
        out = io.StringIO()
        return tallyqemu.Shell(FakeQemu(replies), tallyqemu.Tap(out), 7), out

    def test_run_timeout(self):
        sh, _ = self.shell({'mem': 'free'})
        self.assertEqual(sh.run('mem'), 'free')
        self.assertEqual(sh.run('mem', 99), 'free')
        self.assertEqual(sh.q.lines, [('mem', 7), ('mem', 99)])

    def test_expect(self):
        sh, _ = self.shell({'x': 'usage: x\nbad x'})
        self.assertIsNone(sh.expect('x', ['bad x', 'usage: x'])())
        err = sh.expect('x', ['bad x', 'nope', 'never'])()
        self.assertIn("['nope', 'never'] not in the reply to 'x'", err)

    def test_no_leak(self):
        clean = ('device soft: 8 counters x 32 bits, overflow: interrupt, '
                 'in use: 0 of 8\ncounters in use: none\n')
        sh, _ = self.shell({'perfmon info': clean})
        self.assertIsNone(sh.no_leak())
        sh, _ = self.shell({'perfmon info': clean.replace('none', '1')})
        self.assertIn('counters in use', sh.no_leak())
        sh, _ = self.shell({'perfmon info': clean.replace('0 of', '1 of')})
        self.assertIn('allocated', sh.no_leak())

    def test_step(self):
        sh, out = self.shell({})
        sh.step('fine', lambda: None)
        sh.step('broken', lambda: 'why')
        self.assertEqual(out.getvalue(), 'ok 1 - fine\nnot ok 2 - broken\n'
                         '# why\n')
        with self.assertRaises(tallyqemu.Stop):
            sh.step('gone', sh.prompt)


INTEL_CPUINFO = '''processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz
stepping\t: 4
flags\t\t: fpu msr pdcm arch_perfmon

processor\t: 1
vendor_id\t: GenuineIntel
flags\t\t: fpu msr pdcm arch_perfmon
'''


class FakeHost(unittest.TestCase):
    """The host's files, made up: cpuinfo, /dev/cpu/0/msr, .../cpuid."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='tally-fakehost.')
        self.cpuinfo = os.path.join(self.dir, 'cpuinfo')
        self.msr = os.path.join(self.dir, 'msr')
        self.cpuid = os.path.join(self.dir, 'cpuid')
        self.host(INTEL_CPUINFO, perf_cap=0x33c5)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def host(self, cpuinfo, perf_cap=None):
        with open(self.cpuinfo, 'w') as f:
            f.write(cpuinfo)
        if os.path.exists(self.msr):
            os.unlink(self.msr)
        if perf_cap is not None:
            # The msr driver's file: offset is the MSR number.
            with open(self.msr, 'wb') as f:
                f.seek(tallyqemu.MSR_IA32_PERF_CAPABILITIES)
                f.write(perf_cap.to_bytes(8, 'little'))

    def lbr(self):
        return tallyqemu.host_lbr(self.cpuinfo, self.msr)

    def test_lbr_format_read(self):
        self.assertEqual(self.lbr(), (5, 'lbr-fmt=0x5, the host\'s LBR '
                                         'format'))

    def test_lbr_none_to_pass(self):
        cases = (
            (INTEL_CPUINFO.replace(' arch_perfmon', ' arch_perfmon '
                                   'arch_lbr'), 0x33c5,
             'Architectural LBR, which KVM does not pass'),
            (INTEL_CPUINFO.replace(' pdcm', ''), 0x33c5, 'PDCM clear'),
            (INTEL_CPUINFO, None, 'cannot read the host\'s LBR format'),
            (INTEL_CPUINFO, 0x3300, 'LBR format 0'),
            (INTEL_CPUINFO.replace('GenuineIntel', 'AuthenticAMD'), 0x33c5,
             'AMD host'),
        )
        for cpuinfo, perf_cap, why in cases:
            self.host(cpuinfo, perf_cap)
            fmt, note = self.lbr()
            self.assertIsNone(fmt, why)
            self.assertIn(why, note)

    def test_unreadable_msr_says_how(self):
        self.host(INTEL_CPUINFO, None)
        os.mkdir(self.msr)          # EISDIR: as unreadable as EACCES
        self.assertIn('modprobe msr', self.lbr()[1])

    def test_cpu_candidates(self):
        self.assertEqual(tallyqemu.kvm_cpu_candidates(5),
                         ['host,pmu=on,lbr-fmt=0x5', 'host',
                          'host,-arch-capabilities,pmu=on,lbr-fmt=0x5',
                          'host,-arch-capabilities'])
        self.assertEqual(tallyqemu.kvm_cpu_candidates(None),
                         ['host', 'host,-arch-capabilities'])

    def test_choose_cpu_falls_back(self):
        tried = []

        def probe(model):
            tried.append(model)
            return 'lbr-fmt' not in model

        cands = tallyqemu.kvm_cpu_candidates(5)
        self.assertEqual(tallyqemu.choose_cpu(cands, probe), 'host')
        self.assertEqual(tried, cands[:2])
        self.assertIsNone(tallyqemu.choose_cpu(cands, lambda m: False))

    def test_qemu_args_pass_the_format(self):
        cpu = tallyqemu.kvm_cpu_candidates(self.lbr()[0])[0]
        args = tallyqemu.qemu_args('x.iso', kvm=cpu)
        self.assertEqual(args[args.index('-cpu') + 1],
                         'host,pmu=on,lbr-fmt=0x5')
        self.assertIn('-enable-kvm', args)

    def test_branch_records_note(self):
        lbr = self.lbr()
        self.assertEqual(tallyqemu.branch_records_note(
            'host,pmu=on,lbr-fmt=0x5', lbr),
            'branch records: lbr-fmt=0x5, the host\'s LBR format')
        self.assertIn('refused lbr-fmt=0x5',
                      tallyqemu.branch_records_note('host', lbr))
        self.host(INTEL_CPUINFO, None)
        self.assertIn('none (cannot read',
                      tallyqemu.branch_records_note('host', self.lbr()))

    def test_run_smp(self):
        self.assertEqual(tallyqemu.run_smp('host', None, 2),
                         (2, '2 CPUs, as many as the host has (SMP= sets '
                             'more)'))
        self.assertEqual(tallyqemu.run_smp('host', None, 1)[0], 1)
        self.assertEqual(tallyqemu.run_smp('host', None, 16),
                         (4, '4 CPUs'))
        self.assertEqual(tallyqemu.run_smp('host', 4, 2), (4, '4 CPUs'))
        self.assertEqual(tallyqemu.run_smp(False, None, 2), (4, '4 CPUs'))

    def test_host_report(self):
        with open(self.cpuid, 'wb') as f:
            for leaf, regs in ((0xa, (0x07300404, 0, 0, 0x603)),
                               (0x80000022, (1, 0x16, 0, 0))):
                f.seek(leaf)
                f.write(b''.join(r.to_bytes(4, 'little') for r in regs))
        self.assertEqual(tallyqemu.host_cpuid(0xa, path=self.cpuid),
                         (0x07300404, 0, 0, 0x603))
        lines = tallyqemu.host_report(self.cpuinfo, self.cpuid, self.msr)
        self.assertIn('host vendor_id: GenuineIntel', lines)
        self.assertIn('host model: 85', lines)
        self.assertIn('host flags: arch_perfmon pdcm', lines)
        self.assertIn('host cpuid 0x0000000a: eax=0x07300404 ebx=0x00000000 '
                      'ecx=0x00000000 edx=0x00000603', lines)
        self.assertIn('host LBR: lbr-fmt=0x5, the host\'s LBR format', lines)
        lines = tallyqemu.host_report(self.cpuinfo,
                                      os.path.join(self.dir, 'none'),
                                      self.msr)
        self.assertTrue(any('modprobe cpuid' in ln for ln in lines))


if __name__ == '__main__':
    unittest.main()
