#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# The layers of the tree, as rules on what each file may include, read
# from the tracked sources themselves (every `#include "..."`):
#
#   drivers/, arch/      the hardware (x86 PMUs and LBRs, the soft and step
#                        PMUs), under the core's device contract
#   kern/perfmon/        the perfmon core: counter state, scheduling, NMI
#                        rules; its public headers are kern/perfmon*.h
#   kern/perfmon/cmd/    the `perfmon` shell command, on the core's API
#
# Layers only go down: the command does not reach into the core's private
# header, the core knows nothing of the command, drivers know nothing of
# the command, and the rest of kern/ knows no driver.  Headers inside
# kern/perfmon/ are private to that folder; the tests that open them up
# are listed below, each with why.
#
# A last rule checks the build itself: shell commands, init operations and
# in-kernel tests register through linker sections, so a .c file that no
# source pattern of the Makefile matches vanishes without a link error.
# make is asked for KSRCS, as the build expands it.
#

import os
import re
import subprocess
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

CORE = 'kern/perfmon/'
CMD = 'kern/perfmon/cmd/'

# Files outside kern/perfmon/ that may include its private headers.
PRIVATE_ALLOWED = {
    # The fake devices build perfmon_dev internals the core keeps private.
    'tests/unit/fdev.c',
    # Host tests of the core that inspect its per-CPU and per-thread state.
    'tests/unit/perfmon_enable_test.c',
    'tests/unit/perfmon_mux_test.c',
    # The stream test drives a capture by hand and checks the core's
    # sample layout.
    'tests/unit/perfmon_stream_test.c',
    # The off-CPU test fills a capture's rings with switch records by hand.
    'tests/unit/perfmon_offcpu_test.c',
    # Stand-ins for what the core's sample writer calls, for the tests
    # that link it to read records only.
    'tests/unit/fakes/sample_none.c',
    # Host tests of the command's dispatcher, option and event parsers.
    'tests/unit/perfmon_cmd_test.c',
    'tests/unit/perfmon_parse_test.c',
    # Host tests of the -j output (JSON strings, list and info) and of
    # the -t lists the command's shared part resolves.
    'tests/unit/perfmon_json_test.c',
    # The sample tests compare the core's sample writer (private) with a
    # reference copy of the byte-copy writer it replaced.
    'tests/unit/perfmon_sample_test.c',
    'tests/unit/perfmon_sample_ref.c',
    # Stand-ins for the subcommands the dispatcher test does not link.
    'tests/unit/fakes/perfmon_cmd_deps.c',
    # Fuzz targets of the option and event parsers.
    'tests/fuzz/perfmon_opts_fuzz.c',
    'tests/fuzz/perfmon_parse_fuzz.c',
    # The metric evaluator's host test and fuzz target, and the test of
    # stat -M, which builds a stat invocation's state by hand.
    'tests/unit/perfmon_metric_test.c',
    'tests/unit/perfmon_stat_metric_test.c',
    'tests/fuzz/perfmon_metric_fuzz.c',
    # The ring test compiles the ring's code itself, with a hooked
    # WRITE_ONCE, to stop a producer between its publish and its exit.
    'tests/unit/perfmon_ring_test.c',
    # In-kernel tests that run a capture or the self-test checks.
    'tests/kernel/lbr_test.c',
    'tests/kernel/pmu_selftest_test.c',
}

# Hardware a kern/ file may not include: the x86 PMU and LBR drivers and
# the drivers/ tree.  kern/ reaches them through the core's device ops.
HARDWARE = re.compile(r'^(arch/x86/pmu|arch/x86/lbr|drivers/)')

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE = re.compile(r'\.(c|h)$')


def tracked_files(root):
    out = subprocess.run(['git', 'ls-files', '-z'], cwd=root,
                         capture_output=True, text=True, check=True).stdout
    return [p for p in out.split('\0') if p]


def includes(root, files):
    """{file: [included paths]} for the tracked C files."""
    out = {}
    for path in files:
        if not SOURCE.search(path):
            continue
        with open(os.path.join(root, path), encoding='utf-8',
                  errors='replace') as f:
            out[path] = INCLUDE.findall(f.read())
    return out


def build_sources(root):
    """The kernel's .c files as the Makefile's KSRCS expands them."""
    env = {k: v for k, v in os.environ.items()
           if k not in ('MAKEFLAGS', 'MFLAGS', 'MAKELEVEL')}
    res = subprocess.run(
        ['make', '--no-print-directory', '-s', '-f', 'Makefile', '-f', '-',
         'layers-print-ksrcs'],
        cwd=root, env=env, capture_output=True, text=True,
        input='layers-print-ksrcs:\n\t@echo $(KSRCS)\n')
    if res.returncode != 0:
        raise AssertionError('make could not print KSRCS: ' + res.stderr)
    return set(res.stdout.split())


def offenders(incs, rule):
    """'file: #include "x"' for each include rule(file, x) refuses."""
    return sorted('%s: #include "%s"' % (path, inc)
                  for path, lst in incs.items() for inc in lst
                  if rule(path, inc))


def is_core(path):
    return path.startswith(CORE) and not path.startswith(CMD)


class LayersTest(unittest.TestCase):

    root = ROOT

    @classmethod
    def setUpClass(cls):
        cls.files = tracked_files(cls.root)
        cls.incs = includes(cls.root, cls.files)

    def check(self, rule, why):
        bad = offenders(self.incs, rule)
        self.assertEqual(bad, [], why + ':\n  ' + '\n  '.join(bad))

    def test_private_headers_stay_inside(self):
        self.check(lambda p, i: (i.startswith(CORE)
                                 and not p.startswith(CORE)
                                 and p not in PRIVATE_ALLOWED),
                   'a header inside kern/perfmon/ is private to it (a test '
                   'that needs one goes on PRIVATE_ALLOWED, with why)')

    def test_allowed_list_is_current(self):
        # An entry that no longer includes a private header is stale.
        stale = sorted(p for p in PRIVATE_ALLOWED
                       if not any(i.startswith(CORE)
                                  for i in self.incs.get(p, [])))
        self.assertEqual(stale, [], 'PRIVATE_ALLOWED lists files that '
                         'include no private header (or do not exist)')

    def test_command_uses_no_core_private_header(self):
        self.check(lambda p, i: p.startswith(CMD) and is_core(i),
                   'kern/perfmon/cmd/ reaches the core through '
                   'kern/perfmon*.h only')

    def test_core_knows_no_command(self):
        self.check(lambda p, i: is_core(p) and i.startswith(CMD),
                   'the core includes nothing from kern/perfmon/cmd/')

    def test_drivers_know_no_command(self):
        self.check(lambda p, i: (p.startswith(('arch/', 'drivers/'))
                                 and i.startswith(CMD)),
                   'arch/ and drivers/ include nothing from '
                   'kern/perfmon/cmd/')

    def test_kern_knows_no_driver(self):
        self.check(lambda p, i: p.startswith('kern/') and HARDWARE.match(i),
                   'kern/ includes no arch/x86/pmu*, arch/x86/lbr* or '
                   'drivers/ header')

    def test_every_kernel_source_is_built(self):
        built = build_sources(self.root)
        missed = sorted(p for p in self.files
                        if p.endswith('.c')
                        and p.startswith(('kern/', 'arch/', 'drivers/'))
                        and p not in built)
        self.assertEqual(missed, [], 'tracked kernel sources no KSRCS '
                         'pattern of the Makefile matches')


if __name__ == '__main__':
    unittest.main()
