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
# Inside the core the files stack too, in the order of CORE_ORDER (bottom
# first): a file includes the private headers (perfmon_NAME.h, of
# perfmon_NAME.c) of its own file or of files below it only, and uses no
# function or variable that a file above it defines.  perfmon_i.h, the
# base every file shares, counts as the bottom.  Both are read from the
# sources: the includes, and each core file's external definitions
# matched against the names the other files use.
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
    # The fold test checks the per-CPU map from hardware counter to slot,
    # which the overflow interrupt's common path trusts without a test.
    'tests/unit/perfmon_fold_test.c',
    # The thread-count model's test, which reads which slots hold a
    # counter on each CPU (perfmon_cpu_active_slots).
    'tests/unit/perfmon_tdclock_test.c',
    # The turn's test, which sets the scheduler's reference mode.
    'tests/unit/perfmon_turn_test.c',
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
    # The throttle test sets the share again mid-test, as a boot would
    # (perfmon_nmi_setup), with an event attached.
    'tests/unit/perfmon_throttle_test.c',
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
    # The accuracy self-test: its KTAP suite runs it, and the host test
    # feeds its pure measurements counts and addresses with known errors.
    'tests/kernel/pmu_accuracy_test.c',
    'tests/unit/perfmon_accuracy_test.c',
}

# The core's files from the bottom up; each may use only those before it.
# A new file of the core goes in here, where its calls put it.
CORE_ORDER = [
    'perfmon_events',       # the table of generic events
    'perfmon_counters',     # a counter for each slot: the matching
    'perfmon_evtab',        # the CPU models' event tables
    'perfmon_selftest',     # the drivers' self-test contract
    'perfmon_dev',          # devices, the fixed part of the slots
    'perfmon_cpu',          # the per-CPU counter record
    'perfmon_intr',         # overflow-interrupt callbacks
    'perfmon_branch',       # branch-record users
    'perfmon_ring',         # sample rings
    'perfmon_sample',       # sample buffers and records
    'perfmon_nmi',          # the overflow interrupt
    'perfmon_turn',         # a multiplexing turn's selection by share
    'perfmon_sched',        # a slot's users per CPU, multiplexing
    'perfmon_pmc',          # the counter allocator, poll timers
    'perfmon_td',           # per-thread counts, the context switch
    'perfmon_event',        # events
    'perfmon_switchrec_decode',  # reading switch records
    'perfmon_switchrec',    # switch records of events' threads and CPUs
    'perfmon_inherit',      # inherited events
    'perfmon',              # entry points over events and families
    'perfmon_region',       # code regions, counted by CPU events
    'perfmon_region_arm',   # arming them, their copies
]

# The private header every file of the core shares: the bottom.
CORE_BASE_HEADER = CORE + 'perfmon_i.h'

# A definition at file scope that other files can use: a function (its
# name at the start of a line, the return type on the line above) or a
# variable, neither static.
DEFINITION = re.compile(
    r'^(?!static\b)(?:[A-Za-z_][^\n;(){}=]*\n|'
    r'(?:struct |unsigned |const )*[A-Za-z_]\w*[\s*]+)'
    r'(perfmon_\w*)\s*(\(|\[|=|;)', re.M)
# Comments and attributes, dropped before either is looked for.
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*'
                     r'|__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)', re.S)

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


def core_module(path):
    """The CORE_ORDER name of a core file or private header, else None."""
    if not is_core(path) or path == CORE_BASE_HEADER:
        return None
    name = os.path.basename(path)
    return re.sub(r'\.(c|h)$', '', name)


def core_rank(path):
    """Where a core file stands in CORE_ORDER; the base header is -1."""
    if path == CORE_BASE_HEADER:
        return -1
    return CORE_ORDER.index(core_module(path))


def core_definitions(root, sources):
    """{name: file} for what each core .c file defines for the others."""
    out = {}
    for path in sources:
        with open(os.path.join(root, path), encoding='utf-8') as f:
            text = COMMENT.sub('', f.read())
        for m in DEFINITION.finditer(text):
            out.setdefault(m.group(1), path)
    return out


def upward_uses(root, sources):
    """'file: uses name (defined in upper)' for each use against the order."""
    defs = core_definitions(root, sources)
    word = re.compile(r'\b[a-z_]\w*\b')
    bad = []
    for path in sources:
        with open(os.path.join(root, path), encoding='utf-8') as f:
            used = set(word.findall(COMMENT.sub('', f.read())))
        for name in sorted(used):
            where = defs.get(name)
            if where is not None and core_rank(where) > core_rank(path):
                bad.append('%s: uses %s (defined in %s)' % (path, name, where))
    return bad


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

    def core_sources(self):
        return sorted(p for p in self.files
                      if is_core(p) and p.endswith('.c'))

    def test_core_order_lists_every_file(self):
        names = sorted(core_module(p) for p in self.core_sources())
        self.assertEqual(names, sorted(CORE_ORDER),
                         'CORE_ORDER lists the files of kern/perfmon/, each '
                         'once, where its calls put it')

    def test_core_includes_only_below(self):
        self.check(lambda p, i: (is_core(p) and is_core(i)
                                 and p != CORE_BASE_HEADER
                                 and core_module(i) in CORE_ORDER
                                 and core_rank(i) > core_rank(p)),
                   'a file of the core includes the private headers of '
                   'files below it only (CORE_ORDER)')

    def test_core_uses_only_below(self):
        bad = upward_uses(self.root, self.core_sources())
        self.assertEqual(bad, [], 'a file of the core uses only what files '
                         'below it define (CORE_ORDER):\n  '
                         + '\n  '.join(bad))

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
