#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Unit tests of tools/ktap.py, the parser that turns the kernel's noisy
# serial log into test results for the boot tests.  Each fixture under
# tests/tools/data/ is a log the kernel could plausibly print: clean runs,
# failures, skips, nested suites, crashes in the middle, missing or empty
# plans, and KTAP lines interleaved with other console output.
#

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'tools'))

import ktap  # noqa: E402


def load(name):
    with open(os.path.join(HERE, 'data', name), encoding='utf-8') as f:
        return ktap.parse(f.read())


def summary(report):
    return [(path, r.ok, r.skip) for path, r in report.leaves()]


class FixtureTest(unittest.TestCase):

    def test_all_ok(self):
        rep = load('all_ok.log')
        self.assertEqual(rep.version, 'KTAP version 1')
        self.assertEqual(rep.errors, [])
        self.assertEqual(summary(rep), [('string_basic', True, False),
                                        ('error_names', True, False),
                                        ('spinlock_nesting', True, False)])
        self.assertTrue(rep.ok)

    def test_one_failure_keeps_its_diagnostics(self):
        rep = load('one_failure.log')
        self.assertEqual(rep.errors, [])
        self.assertFalse(rep.ok)
        self.assertEqual([r.ok for r in rep.results], [True, False, True])
        failed = rep.results[1]
        self.assertEqual(failed.name, 'pmm_free')
        self.assertEqual(failed.number, 2)
        self.assertEqual(failed.diagnostics,
                         ['pmm_free: expected 0, got -22',
                          'at kern/pmm_test.c:88'])
        self.assertEqual(rep.results[0].diagnostics, [])

    def test_skip_is_not_a_failure(self):
        rep = load('skip.log')
        self.assertEqual(rep.errors, [])
        self.assertTrue(rep.ok)
        r = rep.results[1]
        self.assertEqual((r.name, r.ok, r.skip, r.skip_reason),
                         ('perfmon_counters', True, True, 'no PMU'))
        # "not ok ... # SKIP" (cmocka's spelling) is a skip as well.
        r = rep.results[2]
        self.assertEqual((r.name, r.ok, r.skip, r.skip_reason),
                         ('apic_x2', False, True, 'x2APIC not available'))
        self.assertTrue(r.passed)

    def test_nested_suites(self):
        rep = load('nested.log')
        self.assertEqual(rep.errors, [])
        self.assertEqual([r.name for r in rep.results], ['string', 'sched'])
        self.assertEqual(len(rep.results[0].subtests), 2)
        self.assertEqual(summary(rep), [
            ('string.strlen_empty', True, False),
            ('string.strlcpy_truncates', True, False),
            ('sched.yield', True, False),
            ('sched.wakeup', False, False),
            ('sched.migrate', True, True),
        ])
        wakeup = rep.results[1].subtests[1]
        self.assertEqual(wakeup.diagnostics,
                         ['wakeup lost: thread 3 still sleeping'])
        self.assertFalse(rep.ok)

    def test_crash_mid_run(self):
        rep = load('crash.log')
        self.assertEqual(len(rep.results), 2)
        self.assertTrue(all(r.ok for r in rep.results))
        self.assertEqual(rep.errors, ['crashed after test 2 of 4'])
        self.assertFalse(rep.ok)
        # The panic's diagnostics are kept for the report.
        self.assertIn('backtrace: vm_map_enter+0x1c', rep.diagnostics)

    def test_crash_inside_nested_suite(self):
        rep = load('nested_crash.log')
        self.assertFalse(rep.ok)
        self.assertIn('vm: crashed after test 1 of 3', rep.errors)
        self.assertIn('vm: subtest without a result line', rep.errors)
        self.assertIn('crashed after test 0 of 2', rep.errors)

    def test_missing_plan(self):
        rep = load('missing_plan.log')
        self.assertEqual(rep.errors, ['missing plan'])
        self.assertEqual(len(rep.results), 2)
        self.assertFalse(rep.ok)

    def test_no_tests(self):
        rep = load('no_tests.log')
        self.assertEqual(rep.errors, [])
        self.assertEqual(rep.results, [])
        # An empty plan is a valid report; callers decide whether zero
        # tests is acceptable.
        self.assertTrue(rep.ok)

    def test_garbage_interleaved_with_timestamps_and_crlf(self):
        rep = load('garbage.log')
        self.assertEqual(rep.errors, [])
        self.assertEqual(summary(rep), [('smp_boot', True, False),
                                        ('xcall_broadcast', False, False),
                                        ('kmem_cache', True, False)])
        self.assertEqual(rep.results[1].diagnostics, ['diag for xcall'])

    def test_no_version_line(self):
        rep = load('no_ktap.log')
        self.assertEqual(rep.errors, ['no KTAP/TAP version line found'])
        self.assertEqual(rep.results, [])
        self.assertFalse(rep.ok)

    def test_out_of_order_numbers(self):
        rep = load('out_of_order.log')
        self.assertEqual(rep.errors,
                         ['top: test number 3 out of order (expected 2)',
                          'top: test number 2 out of order (expected 3)'])
        self.assertFalse(rep.ok)

    def test_second_top_level_version_stops_parsing(self):
        rep = load('restart.log')
        self.assertEqual(len(rep.results), 1)
        self.assertIn('second version line at top level (guest restarted?)',
                      rep.errors)
        self.assertIn('crashed after test 1 of 2', rep.errors)


class InlineTest(unittest.TestCase):

    def test_tap_version_and_dash_names(self):
        rep = ktap.parse('TAP version 13\n1..2\nok 1 - a b\nnot ok 2 - c\n')
        self.assertEqual(rep.version, 'TAP version 13')
        self.assertEqual([(r.name, r.ok) for r in rep.results],
                         [('a b', True), ('c', False)])

    def test_literal_prefix_is_stripped_and_others_ignored(self):
        text = ('cpu0| KTAP version 1\n'
                'cpu0| 1..2\n'
                'cpu1| ok 1 not_ours\n'
                'cpu0| ok 1 first\n'
                'cpu0| ok 2 second\n')
        rep = ktap.parse(text)
        self.assertEqual(rep.errors, [])
        self.assertEqual([r.name for r in rep.results], ['first', 'second'])

    def test_timestamp_then_constant_prefix(self):
        text = ('[    0.10] cpu0: KTAP version 1\n'
                '[    0.11] cpu0: 1..2\n'
                '[    0.12] cpu1: ok 1 other_cpu_noise\n'
                '[    0.13] cpu0:   KTAP version 1\n'
                '[    0.14] cpu0:   1..1\n'
                '[    0.15] cpu0:   ok 1 inner\n'
                '[    0.16] cpu0: ok 1 outer\n'
                '[    9.99] cpu0: not ok 2 second\n')
        rep = ktap.parse(text)
        self.assertEqual(rep.errors, [])
        self.assertEqual(summary(rep), [('outer.inner', True, False),
                                        ('second', False, False)])

    def test_indented_report_ignores_less_indented_results(self):
        text = '  KTAP version 1\n  1..1\nok 7 bogus\n  ok 1 real\n'
        rep = ktap.parse(text)
        self.assertEqual(rep.errors, [])
        self.assertEqual([r.name for r in rep.results], ['real'])

    def test_more_results_than_planned(self):
        rep = ktap.parse('KTAP version 1\n1..1\nok 1 a\nok 2 b\n')
        self.assertEqual(rep.errors, ['2 results but the plan says 1'])

    def test_trailing_plan_is_accepted(self):
        rep = ktap.parse('KTAP version 1\nok 1 a\nok 2 b\n1..2\n')
        self.assertEqual(rep.errors, [])
        self.assertTrue(rep.ok)

    def test_duplicate_plan(self):
        rep = ktap.parse('KTAP version 1\n1..1\n1..1\nok 1 a\n')
        self.assertEqual(rep.errors, ['top: second plan line'])

    def test_suite_failing_without_failing_subtest_is_reported(self):
        text = ('KTAP version 1\n1..1\n'
                '  KTAP version 1\n  # Subtest: s\n  1..1\n  ok 1 t\n'
                'not ok 1 s\n')
        rep = ktap.parse(text)
        self.assertEqual(summary(rep), [('s.t', True, False),
                                        ('s', False, False)])
        self.assertFalse(rep.ok)

    def test_nested_with_subtest_header_only(self):
        text = ('KTAP version 1\n1..1\n'
                '    # Subtest: mm\n    1..2\n    ok 1 a\n    ok 2 b\n'
                'ok 1\n')
        rep = ktap.parse(text)
        self.assertEqual(rep.errors, [])
        self.assertEqual(summary(rep), [('mm.a', True, False),
                                        ('mm.b', True, False)])

    def test_nested_without_header(self):
        text = 'KTAP version 1\n1..1\n  1..1\n  not ok 1 deep\nnot ok 1 s\n'
        rep = ktap.parse(text)
        self.assertEqual(rep.errors, [])
        self.assertEqual(summary(rep), [('s.deep', False, False)])

    def test_empty_input(self):
        rep = ktap.parse('')
        self.assertFalse(rep.ok)
        self.assertEqual(rep.errors, ['no KTAP/TAP version line found'])

    def test_binary_garbage_does_not_crash(self):
        noise = bytes(range(256)).decode('latin-1')
        rep = ktap.parse(noise + '\nKTAP version 1\n' + noise +
                         '\n1..1\nok 1 x\n' + noise)
        self.assertEqual(rep.errors, [])
        self.assertEqual([r.name for r in rep.results], ['x'])


if __name__ == '__main__':
    unittest.main()
