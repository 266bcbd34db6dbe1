#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Tests of tools/perfdata, which turns the recordings a guest streamed on
# COM2 into perf.data files.  Two kinds of captures: one the kernel made
# (data/two-recordings.perf.stream: `perfmon record -g -F 1000 -- spin
# 20000000`, then `perfmon record -a -F 200 -- sleep 30`, on 2 CPUs), and
# small ones built here record by record in the layout of
# kern/perfmon/cmd/perfmon_stream.h, whole or broken on purpose: cut short in a record
# or between records, two recordings, lost samples, no samples, a guest
# restarted during a recording, garbage, another kernel build.  The kernel
# for these is a small ELF built here too, with three functions at known
# addresses.  Where the real perf is installed, every perf.data written
# must be read by `perf report` and `perf script` with status 0 and
# nothing on stderr; without it those tests are skipped with a message.
#

import importlib.machinery
import importlib.util
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PERFDATA = os.path.join(ROOT, 'tools', 'perfdata')
REAL_CAPTURE = os.path.join(HERE, 'data', 'two-recordings.perf.stream')
PERF = shutil.which('perf')


def load_perfdata():
    loader = importlib.machinery.SourceFileLoader('perfdata', PERFDATA)
    spec = importlib.util.spec_from_loader('perfdata', loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


pd = load_perfdata()

# ---- a small kernel ELF -----------------------------------------------------

TEXT_ADDR = 0xffffffff80200000
TEXT = bytes(range(64)) * 2                 # 128 bytes of "code"
FUNCS = (('outer', 0x00), ('middle', 0x20), ('leaf', 0x40))
OUTER, MIDDLE, LEAF = (TEXT_ADDR + off for _, off in FUNCS)


def build_elf(text=TEXT):
    """An x86-64 ELF with .text at TEXT_ADDR, FUNCS and two linker
    markers in its symbol table: _text_start, which perf needs, and one
    inside leaf, which must not name its samples."""
    shstr = b'\0.text\0.symtab\0.strtab\0.shstrtab\0'
    strtab = b'\0'
    syms = [struct.pack('<IBBHQQ', 0, 0, 0, 0, 0, 0)]
    for name, off, info in [(n, o, 0x12) for n, o in FUNCS] \
            + [('_text_start', 0, 0x10), ('_text_mark', 0x42, 0x10)]:
        syms.append(struct.pack('<IBBHQQ', len(strtab), info, 0, 1,
                                TEXT_ADDR + off, 0x20))
        strtab += name.encode() + b'\0'
    symtab = b''.join(syms)
    body = text + symtab + strtab + shstr
    text_off = 64
    symtab_off = text_off + len(text)
    strtab_off = symtab_off + len(symtab)
    shstr_off = strtab_off + len(strtab)
    shoff = 64 + len(body)
    shoff += -shoff % 8
    sections = [
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
        (1, 1, 0x6, TEXT_ADDR, text_off, len(text), 0, 0, 16, 0),
        (7, 2, 0, 0, symtab_off, len(symtab), 3, 1, 8, 24),
        (15, 3, 0, 0, strtab_off, len(strtab), 0, 0, 1, 0),
        (23, 3, 0, 0, shstr_off, len(shstr), 0, 0, 1, 0),
    ]
    ehdr = b'\x7fELF\x02\x01\x01' + b'\0' * 9
    ehdr += struct.pack('<HHIQQQIHHHHHH', 2, 62, 1, TEXT_ADDR, 0, shoff, 0,
                        64, 0, 0, 64, len(sections), 4)
    out = ehdr + body
    out += b'\0' * (shoff - len(out))
    for s in sections:
        out += struct.pack('<IIQQQQIIQQ', *s)
    return out


def fnv(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) % (1 << 64)
    return '%016x' % h


# ---- captures, record by record (kern/perfmon/cmd/perfmon_stream.h) ---------------------

CONTEXT_KERNEL = (1 << 64) - 128


def record(rtype, misc, payload):
    payload += b'\0' * (-len(payload) % 8)
    return struct.pack('<IHH', rtype, misc, 8 + len(payload)) + payload


def padded(text, align):
    raw = text.encode() + b'\0'
    return raw + b'\0' * (-len(raw) % align)


def feature(feat, payload):
    return record(80, 0, struct.pack('<Q', feat) + payload)


def string(text):
    raw = padded(text, 64)
    return struct.pack('<I', len(raw)) + raw


def trailer(pid, tid, time, cpu):
    return struct.pack('<IIQII', pid, tid, time, cpu, 0)


def attr(branches=False):
    sample_type = 0x1a7 | (0x800 if branches else 0)
    a = struct.pack('<IIQQQQQ', 1, 128, 1, 2000, sample_type, 0, 0x140701)
    a += b'\0' * (72 - len(a)) + struct.pack('<Q', 0xa if branches else 0)
    return a + b'\0' * (128 - len(a))


def sample(ip, tid, time, period, chain, cpu=0, branches=None):
    p = struct.pack('<QIIQIIQ', ip, tid, tid, time, cpu, 0, period)
    chain = [CONTEXT_KERNEL] + list(chain)
    p += struct.pack('<Q%dQ' % len(chain), len(chain), *chain)
    if branches is not None:
        p += struct.pack('<Q', len(branches))
        p += b''.join(struct.pack('<QQQ', *b) for b in branches)
    return record(9, 1, p)


def comm(tid, name):
    return record(3, 0, struct.pack('<II', tid, tid) + padded(name, 8)
                  + trailer(tid, tid, 0, 0))


def lost(nr, cpu=0):
    return record(13, 0, struct.pack('<Q', nr) + trailer(0, 0, 0, cpu))


# Three stacks: outer -> middle -> leaf (period 100, four times), outer ->
# middle (period 50), and leaf on its own (period 7, thread 4, no name).
SAMPLES = [(LEAF + 4, 3, 1000 + i, 100, [LEAF + 4, MIDDLE + 8, OUTER + 8])
           for i in range(4)] \
    + [(MIDDLE + 2, 3, 2000, 50, [MIDDLE + 2, OUTER + 8]),
       (LEAF, 4, 1500, 7, [LEAF])]
FOLDED = {'work;outer;middle;leaf': 400, 'work;outer;middle': 50,
          ':4;leaf': 7}


def recording(samples=SAMPLES, build=None, end=True, lost_samples=0,
              branches=False, name='cpu-clock', comms=((3, 'work'),)):
    """One recording's bytes, as the kernel streams it."""
    out = b'PERFILE2' + struct.pack('<Q', 16)
    out += record(64, 0, attr(branches) + struct.pack('<Q', 1))
    out += record(78, 0, struct.pack('<QQ', 2, 1) + padded(name, 8))
    out += feature(3, string('tally')) + feature(4, string('tally 0.1'))
    out += feature(5, string('tally 0.1 (build %s)' % (build or fnv(TEXT))))
    out += feature(6, string('x86_64'))
    out += feature(7, struct.pack('<II', 2, 2))
    args = ['perfmon', 'record', '-g', '--', 'work']
    out += feature(11, struct.pack('<I', len(args))
                   + b''.join(string(a) for a in args))
    if branches:
        out += feature(15, b'')
    out += record(1, 1, struct.pack('<IIQQQ', 0xffffffff, 0,
                                    0xffffffff80000000, 0x7fffffff, TEXT_ADDR)
                  + padded('[kernel.kallsyms]_text_start', 8)
                  + trailer(0xffffffff, 0, 0, 0))
    for tid, cname in comms:
        out += comm(tid, cname)
    for ip, tid, time, period, chain in samples:
        out += sample(ip, tid, time, period, chain,
                      branches=[(OUTER, LEAF, 1)] if branches else None)
    if lost_samples:
        out += lost(lost_samples, cpu=1)
    if end:
        times = [s[2] for s in samples] or [0]
        out += feature(21, struct.pack('<QQ', min(times), max(times)))
    return out


# Several events (kern/perfmon/cmd/perfmon_stream.h): on 2 CPUs, event E
# on CPU C has id 1 + 2 * E + C.  cpu-clock leads {cpu-clock,cs}:S, its
# samples reading both; interrupts samples on its own.
GROUP_EVENTS = (('cpu-clock', 1, 0, 0xc), ('cs', 1, 3, 0xc),
                ('interrupts', 4, 4, 0))
ST_GROUP = 0x1a7 | 0x10 | 0x10000
ST_ALONE = 0x1a7 | 0x10000
# (id, cpu, period, reads [(value, id)]) of each sample, in stream order.
GROUP_SAMPLES = [(1, 0, 1000, [(1000, 1), (3, 3)]),
                 (5, 0, 3, []),
                 (1, 0, 2000, [(3000, 1), (3, 3)]),     # cs counted nothing
                 (2, 1, 500, [(500, 2), (2, 4)]),
                 (5, 0, 3, [])]
# What perf and the tool deliver: (samples, event count) per event.
GROUP_DELIVERED = {'cpu-clock': (3, 3500), 'cs': (2, 5),
                   'interrupts': (2, 6)}


def group_attr(etype, config, sample_type, read_format):
    a = struct.pack('<IIQQQQQ', etype, 128, config, 2000, sample_type,
                    read_format, 0x140701)
    return a + b'\0' * (128 - len(a))


def group_recording():
    """A recording of three events, one group read by its leader."""
    out = b'PERFILE2' + struct.pack('<Q', 16)
    for e, (name, etype, config, fmt) in enumerate(GROUP_EVENTS):
        out += record(64, 0, group_attr(etype, config, ST_GROUP if fmt
                                         else ST_ALONE, fmt)
                      + struct.pack('<QQ', 1 + 2 * e, 2 + 2 * e))
        out += record(78, 0, struct.pack('<QQ', 2, 1 + 2 * e)
                      + padded(name, 8))
    out += feature(5, string('tally 0.1 (build %s)' % fnv(TEXT)))
    out += feature(7, struct.pack('<II', 2, 2))
    out += record(1, 1, struct.pack('<IIQQQ', 0xffffffff, 0,
                                    0xffffffff80000000, 0x7fffffff, TEXT_ADDR)
                  + padded('[kernel.kallsyms]_text_start', 8)
                  + trailer(0xffffffff, 0, 0, 0) + struct.pack('<Q', 0))
    out += record(3, 0, struct.pack('<II', 3, 3) + padded('work', 8)
                  + trailer(3, 3, 0, 0) + struct.pack('<Q', 0))
    for i, (sid, cpu, period, reads) in enumerate(GROUP_SAMPLES):
        p = struct.pack('<QQIIQIIQ', sid, LEAF + 4, 3, 3, 1000 + i, cpu, 0,
                        period)
        if reads:
            p += struct.pack('<Q', len(reads))
            p += b''.join(struct.pack('<QQ', *v) for v in reads)
        chain = [CONTEXT_KERNEL, LEAF + 4, MIDDLE + 8, OUTER + 8]
        p += struct.pack('<Q%dQ' % len(chain), len(chain), *chain)
        out += record(9, 1, p)
    out += feature(21, struct.pack('<QQ', 1000, 1004))
    return out


class Workspace(unittest.TestCase):
    """A folder with the small kernel in it; helpers to run the tool."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='test_perfdata.')
        self.elf = self.path('tally.elf')
        self.write('tally.elf', build_elf())

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def write(self, name, data):
        with open(self.path(name), 'wb') as f:
            f.write(data)
        return self.path(name)

    def run_tool(self, *argv, capture=None):
        cmd = [sys.executable, PERFDATA] + list(argv)
        if argv and argv[0] != '--help':
            cmd += ['--elf', self.elf]
            if capture is not None:
                cmd += ['--capture', capture]
        return subprocess.run(cmd, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, cwd=self.tmp)

    def assert_one_line_error(self, r, *needles):
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertNotIn('Traceback', r.stderr)
        lines = r.stderr.strip().split('\n')
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith('perfdata: '), r.stderr)
        for n in needles:
            self.assertIn(n, lines[0])


class ParseTest(unittest.TestCase):

    def test_fnv_vectors_as_the_kernel(self):
        # The vectors of tests/unit/perfmon_stream_test.c.
        self.assertEqual(pd.fnv1a64(b''), 0xcbf29ce484222325)
        self.assertEqual(pd.fnv1a64(b'a'), 0xaf63dc4c8601ec8c)
        self.assertEqual(pd.fnv1a64(b'foobar'), 0x85944171f73967e8)

    def test_whole_recording(self):
        recs = pd.parse_capture(recording(lost_samples=3))
        self.assertEqual(len(recs), 1)
        r = recs[0]
        self.assertTrue(r.complete)
        self.assertIsNone(r.problem)
        self.assertEqual(len(r.samples), 6)
        self.assertEqual(r.nr_lost, 3)
        self.assertEqual(r.name, 'cpu-clock')
        self.assertEqual(r.comms, {3: 'work'})
        self.assertEqual(r.cmdline, ['perfmon', 'record', '-g', '--', 'work'])
        self.assertEqual(r.build_id, fnv(TEXT))
        self.assertEqual(r.sample_time(), (1000, 2000))
        self.assertEqual(r.samples[0]['chain'][0], CONTEXT_KERNEL)

    def test_two_recordings(self):
        recs = pd.parse_capture(recording() + recording(samples=SAMPLES[:1]))
        self.assertEqual([len(r.samples) for r in recs], [6, 1])
        self.assertTrue(all(r.complete and not r.problem for r in recs))

    def test_cut_in_a_record_keeps_the_complete_ones(self):
        whole = recording(end=False)
        for cut in (3, 8, 17):
            r = pd.parse_capture(whole[:-cut])[0]
            self.assertEqual(len(r.samples), 5)
            self.assertFalse(r.complete)
            self.assertEqual(r.problem, 'cut short')
            self.assertEqual(r.dropped, len(sample(*SAMPLES[-1])) - cut)

    def test_cut_between_records(self):
        r = pd.parse_capture(recording(end=False))[0]
        self.assertEqual(len(r.samples), 6)
        self.assertFalse(r.complete)
        self.assertEqual(r.dropped, 0)

    def test_guest_restarted_during_a_recording(self):
        first = recording()[:-20]              # cut inside SAMPLE_TIME
        recs = pd.parse_capture(first + recording())
        self.assertEqual(len(recs), 2)
        self.assertFalse(recs[0].complete)
        self.assertEqual(recs[0].dropped, 32 - 20)
        self.assertEqual(len(recs[0].samples), 6)
        self.assertTrue(recs[1].complete)

    def test_bad_record_inside_stops_the_recording_there(self):
        data = bytearray(recording())
        at = data.index(sample(*SAMPLES[2]))
        struct.pack_into('<I', data, at, 0x4747)  # an unknown type
        r = pd.parse_capture(bytes(data))[0]
        self.assertEqual(len(r.samples), 2)
        self.assertIn('unknown record type 18247', r.problem)
        self.assertEqual(r.dropped, len(data) - at)

    def test_sample_with_wrong_length_is_bad(self):
        data = recording()
        good = sample(*SAMPLES[0])
        bad = good[:6] + struct.pack('<H', len(good) + 8) + good[8:] \
            + b'\0' * 8
        r = pd.parse_capture(data.replace(good, bad, 1))[0]
        self.assertIn('left after the fields', r.problem)

    def test_garbage_and_empty(self):
        for data in (b'', b'\x7fELF' + b'\0' * 100, os.urandom(4096)):
            with self.assertRaises(pd.PerfdataError):
                pd.parse_capture(data)

    def test_any_cut_or_damage_parses_without_exception(self):
        # Whatever QEMU's death or a bad cable leaves, the parser answers
        # with recordings or one PerfdataError, never anything else.
        with open(REAL_CAPTURE, 'rb') as f:
            whole = f.read()
        rng = random.Random(17)
        for cut in range(0, len(whole), 5):
            self.parses(whole[:cut])
        for _ in range(300):
            data = bytearray(whole)
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            self.parses(bytes(data))

    def parses(self, data):
        try:
            recs = pd.parse_capture(data)
        except pd.PerfdataError:
            return
        for r in recs:
            if r.attr is not None:
                pd.perf_data_bytes(r)
            self.assertLessEqual(r.dropped, r.size)


class RealCaptureTest(unittest.TestCase):
    """What the kernel streamed (see the head of this file)."""

    @classmethod
    def setUpClass(cls):
        with open(REAL_CAPTURE, 'rb') as f:
            cls.recs = pd.parse_capture(f.read())

    def test_two_whole_recordings(self):
        self.assertEqual(len(self.recs), 2)
        for r in self.recs:
            self.assertTrue(r.complete and not r.problem, pd.state_of(r))
            self.assertEqual(r.name, 'cpu-clock')
            self.assertRegex(r.build_id or '', '^[0-9a-f]{16}$')
        self.assertEqual(self.recs[0].cmdline[-2:], ['spin', '20000000'])
        self.assertEqual(self.recs[1].cmdline[2:4], ['-a', '-F'])

    def test_spin_samples(self):
        r = self.recs[0]
        self.assertEqual(len(r.samples), 41)
        self.assertEqual(set(r.comms.values()), {'spin'})
        for s in r.samples:
            self.assertEqual(s['tid'], 3 + 2)
            self.assertEqual(s['chain'][:2], [CONTEXT_KERNEL, s['ip']])
            self.assertGreater(len(s['chain']), 4)

    def test_system_wide_samples_name_the_idle_threads(self):
        r = self.recs[1]
        self.assertEqual(len(r.samples), 12)
        self.assertEqual(r.comms, {0: 'idle/0', 1: 'idle/1'})

    def test_file_mode_layout(self):
        # The header and sections of perf's file mode, sizes exact.
        blob = pd.perf_data_bytes(self.recs[0])
        magic, size, attr_size = struct.unpack_from('<8sQQ', blob, 0)
        self.assertEqual((magic, size, attr_size), (b'PERFILE2', 104, 144))
        a_off, a_size, d_off, d_size, e_off, e_size = struct.unpack_from(
            '<6Q', blob, 24)
        self.assertEqual((a_off, a_size, e_off, e_size), (104, 144, 0, 0))
        self.assertEqual(d_off, 104 + 144)
        self.assertEqual(blob[104 + 128:104 + 144], b'\0' * 16)
        bits = struct.unpack_from('<4Q', blob, 72)
        feats = [i for i in range(256) if bits[i // 64] >> (i % 64) & 1]
        self.assertEqual(feats, [3, 4, 5, 6, 7, 11, 12, 21])
        pos = d_off + d_size
        end = pos + 16 * len(feats)
        for feat in feats:
            off, fsize = struct.unpack_from('<QQ', blob, pos)
            self.assertEqual(off, end, 'feature %d not packed' % feat)
            end += fsize
            pos += 16
        self.assertEqual(end, len(blob))
        # The data section holds the data records only, whole.
        data = blob[d_off:d_off + d_size]
        types = []
        while data:
            rtype, _, rsize = struct.unpack_from('<IHH', data, 0)
            types.append(rtype)
            data = data[rsize:]
        self.assertEqual(set(types), {1, 3, 9})
        self.assertEqual(types.count(9), 41)


class ToolTest(Workspace):

    def test_help_on_each_command(self):
        for cmd in ([], ['list'], ['convert'], ['report'], ['script'],
                    ['annotate'], ['folded'], ['flamegraph']):
            r = subprocess.run([sys.executable, PERFDATA] + cmd + ['--help'],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn('usage: perfdata', r.stdout)

    def test_list(self):
        cap = self.write('c', recording(lost_samples=2)
                         + recording(end=False)[:-5])
        r = self.run_tool('list', capture=cap)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.split('\n')
        self.assertIn('2 recordings', lines[0])
        self.assertRegex(lines[2], r'^\s+0\s+6\s+2\s+0\.000\s+cpu-clock\s+this'
                         r'\s+perfmon record -g -- work$')
        self.assertRegex(lines[3], r'^\s+1\s+5\s+0\s+')
        self.assertIn('cut short (%d bytes dropped)'
                      % (len(sample(*SAMPLES[-1])) - 5), lines[4])

    def test_convert_index_and_default(self):
        cap = self.write('c', recording() + recording(samples=SAMPLES[:2]))
        for index, want in ((None, 2), ('0', 6), ('1', 2), ('-2', 6)):
            argv = ['convert', '-o', self.path('out.data')]
            if index is not None:
                argv += ['--index', index]
            r = self.run_tool(*argv, capture=cap)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn('(%d samples, 0 lost)' % want, r.stdout)

    def test_convert_all(self):
        cap = self.write('c', recording() + recording(samples=[]))
        r = self.run_tool('convert', '--all', '-o', self.path('x/perf.data'),
                          capture=cap)
        self.assertEqual(r.returncode, 0, r.stderr)
        for i in (0, 1):
            self.assertTrue(os.path.isfile(self.path('x/perf-%d.data' % i)))

    def test_bad_index(self):
        cap = self.write('c', recording())
        r = self.run_tool('convert', '--index', '3', capture=cap)
        self.assert_one_line_error(r, 'no recording 3', 'holds 1')

    def test_cut_short_is_said_and_converted(self):
        cut = len(sample(*SAMPLES[-1])) - 11
        cap = self.write('c', recording(end=False)[:-11])
        r = self.run_tool('convert', '-o', self.path('out.data'), capture=cap)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('recording 0 was cut short', r.stderr)
        self.assertIn('dropped the last %d bytes' % cut, r.stderr)
        self.assertIn('(5 samples, 0 lost)', r.stdout)

    def test_cut_before_the_event_is_described(self):
        cap = self.write('c', recording() + recording()[:100])
        for cmd in ('convert', 'folded', 'report'):
            self.assert_one_line_error(self.run_tool(cmd, capture=cap),
                                       'recording 1 has no event '
                                       'description', '100 bytes in')
        r = self.run_tool('convert', '--all', '-o', self.path('perf.data'),
                          capture=cap)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('recording 1 left out', r.stderr)
        self.assertTrue(os.path.isfile(self.path('perf-0.data')))
        self.assertFalse(os.path.exists(self.path('perf-1.data')))

    def test_not_a_capture(self):
        for name, data, needle in (
                ('empty', b'', 'empty'),
                ('garbage', b'hello, world\n' * 10, 'not a Tally capture'),
                ('elf', build_elf(), 'not a Tally capture')):
            cap = self.write(name, data)
            for cmd in ('list', 'convert', 'folded', 'report'):
                self.assert_one_line_error(self.run_tool(cmd, capture=cap),
                                           needle)

    def test_missing_files(self):
        r = self.run_tool('list', capture=self.path('nope'))
        self.assert_one_line_error(r, 'cannot read capture', 'nope')
        cap = self.write('c', recording())
        self.elf = self.path('no.elf')
        r = self.run_tool('folded', capture=cap)
        self.assert_one_line_error(r, 'cannot read the kernel', 'no.elf')

    def test_bad_elf(self):
        cap = self.write('c', recording())
        self.elf = self.write('bad.elf', b'\x7fELF\x02\x01' + b'\xff' * 20)
        r = self.run_tool('folded', capture=cap)
        self.assert_one_line_error(r, 'not a kernel ELF')

    def test_another_build_is_refused(self):
        cap = self.write('c', recording(build='0123456789abcdef'))
        r = self.run_tool('folded', capture=cap)
        self.assert_one_line_error(r, 'another kernel build',
                                   'build 0123456789abcdef', fnv(TEXT))
        r = self.run_tool('folded', '--force', capture=cap)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('going on (--force)', r.stderr)

    def test_the_real_capture_is_another_build(self):
        # Real bytes from a kernel that is not the small ELF of this test.
        r = self.run_tool('convert', '-o', self.path('x.data'),
                          capture=REAL_CAPTURE)
        self.assert_one_line_error(r, 'recording 1 was made by another '
                                   'kernel build')

    def test_another_build_names_the_elf_that_matches(self):
        other = TEXT[::-1]
        self.write('tally-test.elf', build_elf(other))
        cap = self.write('c', recording(build=fnv(other)))
        r = self.run_tool('folded', capture=cap)
        self.assert_one_line_error(r, 'it matches', 'tally-test.elf')

    def test_folded(self):
        cap = self.write('c', recording())
        r = self.run_tool('folded', capture=cap)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = {}
        for line in r.stdout.strip().split('\n'):
            stack, _, weight = line.rpartition(' ')
            got[stack] = int(weight)
        self.assertEqual(got, FOLDED)
        self.assertEqual(sum(got.values()), sum(s[3] for s in SAMPLES))

    def test_folded_of_one_event(self):
        cap = self.write('c', group_recording())
        for name, (_, count) in GROUP_DELIVERED.items():
            r = self.run_tool('folded', '--event', name, capture=cap)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, 'work;outer;middle;leaf %d\n' % count)
        r = self.run_tool('folded', '--event', 'nope', capture=cap)
        self.assert_one_line_error(r, "no event 'nope'",
                                   'cpu-clock,cs,interrupts')

    def test_flamegraph_per_event(self):
        cap = self.write('c', group_recording())
        r = self.run_tool('flamegraph', '-o', self.path('f.svg'),
                          capture=cap)
        self.assertEqual(r.returncode, 0, r.stderr)
        for name, (nr, _) in GROUP_DELIVERED.items():
            self.assertIn(', %s -> f-%s.svg (%d samples, 1 stacks)'
                          % (name, name, nr), r.stdout)
            _, boxes = self.flame_boxes(self.path('f-%s.svg' % name))
            self.assertEqual(max(b[3] for b in boxes), nr)
        self.assertFalse(os.path.exists(self.path('f.svg')))
        r = self.run_tool('flamegraph', '--event', 'cs', '-o',
                          self.path('one.svg'), capture=cap)
        self.assertIn('-> one.svg (2 samples, 1 stacks)', r.stdout)

    def flame_boxes(self, path):
        """The boxes of a flame graph: (depth, x, w, samples, name, rect
        x, rect width), as its SVG holds them."""
        ns = '{http://www.w3.org/2000/svg}'
        svg = ET.parse(path).getroot()
        boxes = []
        for g in svg.iter(ns + 'g'):
            if g.get('class') != 'f':
                continue
            rect = g.find(ns + 'rect')
            boxes.append((int(g.get('data-d')), float(g.get('data-x')),
                          float(g.get('data-w')), int(g.get('data-n')),
                          g.get('data-name'), float(rect.get('x')),
                          float(rect.get('width')),
                          g.find(ns + 'title').text))
        return svg, boxes

    def test_flamegraph(self):
        cap = self.write('c', recording())
        r = self.run_tool('flamegraph', '-o', self.path('f.svg'),
                          capture=cap)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('-> f.svg (6 samples, 3 stacks)', r.stdout)
        svg, boxes = self.flame_boxes(self.path('f.svg'))
        # Each box's path: the boxes below it that hold its middle.
        got = {}
        for d, x, w, n, name, px, pw, title in boxes:
            path = []
            for depth in range(1, d):
                below = [b for b in boxes if b[0] == depth
                         and b[1] <= x + w / 2 <= b[1] + b[2]]
                self.assertEqual(len(below), 1, (name, depth))
                path.append(below[0][4])
            if d > 0:
                got[';'.join(path + [name])] = n
            # As wide as its samples, drawn so.
            self.assertAlmostEqual(w, n / 6, places=6)
            self.assertAlmostEqual(pw, w * pd.flamegraph.FLAME_WIDTH - 0.5, places=1)
            self.assertAlmostEqual(px, pd.flamegraph.FLAME_PAD + x * pd.flamegraph.FLAME_WIDTH,
                                   places=1)
            self.assertTrue(title.startswith('%s (%d sample' % (name, n)),
                            title)
        # Every prefix of every folded stack, with the samples through it.
        want = {}
        for stack, n in {'work;outer;middle;leaf': 4, 'work;outer;middle': 1,
                         ':4;leaf': 1}.items():
            frames = stack.split(';')
            for i in range(1, len(frames) + 1):
                key = ';'.join(frames[:i])
                want[key] = want.get(key, 0) + n
        self.assertEqual(got, want)
        root = [b for b in boxes if b[0] == 0]
        self.assertEqual([(b[1], b[2], b[3], b[4]) for b in root],
                         [(0.0, 1.0, 6, 'all')])
        # Siblings side by side, inside their parent, never overlapping.
        for d in range(1, max(b[0] for b in boxes) + 1):
            row = sorted((b[1], b[1] + b[2]) for b in boxes if b[0] == d)
            for (a0, a1), (b0, b1) in zip(row, row[1:]):
                self.assertLessEqual(a1, b0 + 1e-9)
        # Self-contained: zoom and search in its own script, nothing
        # fetched.
        with open(self.path('f.svg')) as f:
            text = f.read()
        self.assertIn('function zoom(', text)
        self.assertIn('function search(', text)
        self.assertNotIn('href', text)
        self.assertEqual(re.findall(r'https?://[^"\s]*', text),
                         ['http://www.w3.org/2000/svg'])

    def test_flamegraph_escapes_and_refuses_nothing(self):
        cap = self.write('c', recording(comms=((3, 'a<b&"c'),)))
        r = self.run_tool('flamegraph', '-o', self.path('f.svg'),
                          capture=cap)
        self.assertEqual(r.returncode, 0, r.stderr)
        _, boxes = self.flame_boxes(self.path('f.svg'))
        self.assertIn('a<b&"c', [b[4] for b in boxes])
        cap = self.write('e', recording(samples=[]))
        r = self.run_tool('flamegraph', '-o', self.path('g.svg'),
                          capture=cap)
        self.assert_one_line_error(r, 'no samples')
        self.assertFalse(os.path.exists(self.path('g.svg')))

    def test_perf_missing_is_said(self):
        cap = self.write('c', recording())
        env = dict(os.environ, PATH=self.tmp)
        r = subprocess.run([sys.executable, PERFDATA, 'report', '--capture',
                            cap, '--elf', self.elf], capture_output=True,
                           text=True, env=env)
        self.assert_one_line_error(r, 'perf not found', 'linux-perf')


@unittest.skipUnless(PERF, 'perf not installed: install Debian\'s linux-perf '
                     '(tools/deps does, as root)')
class PerfReadsItTest(Workspace):
    """The real perf reads every perf.data the tool writes."""

    def perf(self, *argv):
        r = subprocess.run([PERF] + list(argv), capture_output=True,
                           text=True, stdin=subprocess.DEVNULL, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, '')
        return r.stdout

    def convert(self, data):
        cap = self.write('c', data)
        out = self.path('perf.data')
        r = self.run_tool('convert', '-o', out, capture=cap)
        self.assertEqual(r.returncode, 0, r.stderr)
        return out

    def report(self, out, *more):
        return self.perf('report', '-i', out, '-k', self.elf, '--stdio',
                         *more)

    def test_report_and_script(self):
        # Few enough lost (under 5%) that perf does not warn about them.
        out = self.convert(recording(samples=SAMPLES * 20, lost_samples=3))
        rep = self.report(out, '--no-children', '--sort', 'comm,sym')
        self.assertIn("# Samples: 120  of event 'cpu-clock'", rep)
        self.assertIn('# Event count (approx.): %d'
                      % (20 * sum(s[3] for s in SAMPLES)), rep)
        self.assertIn('# Total Lost Samples: 3', rep)
        for comm_sym, weight in (('work +\\[k\\] leaf', 400),
                                 ('work +\\[k\\] middle', 50),
                                 (':4 +\\[k\\] leaf', 7)):
            self.assertRegex(rep, r'\n +%.2f%% +%s\n'
                             % (100.0 * weight / 457, comm_sym))
        script = self.perf('script', '-i', out, '-k', self.elf)
        self.assertEqual(script.count(' cpu-clock:'), 120)
        self.assertIn('leaf+0x4 ([kernel.kallsyms])', script)
        self.assertIn('middle+0x8 ([kernel.kallsyms])', script)

    def test_several_events_and_a_group_read(self):
        out = self.convert(group_recording())
        rep = self.report(out, '--no-children')
        for name, (nr, count) in GROUP_DELIVERED.items():
            self.assertIn("# Samples: %d  of event '%s'\n"
                          "# Event count (approx.): %d\n" % (nr, name, count),
                          rep)
        script = self.perf('script', '-i', out, '-k', self.elf, '-F',
                           'event,period,sym')
        got = [(e, n) for n, e in re.findall(r'^\s*(\d+)\s+(\S+):', script,
                                             re.M)]
        self.assertEqual(got, [('cpu-clock', '1000'), ('cs', '3'),
                               ('interrupts', '3'), ('cpu-clock', '2000'),
                               ('cpu-clock', '500'), ('cs', '2'),
                               ('interrupts', '3')])

    def test_header_features(self):
        out = self.convert(recording())
        head = self.perf('report', '-i', out, '--header-only')
        for line in ('# hostname : tally', '# os release : tally 0.1',
                     '# arch : x86_64', '# nrcpus online : 2',
                     '# cmdline : perfmon record -g -- work',
                     '# event : name = cpu-clock,',
                     '# time of first sample : 0.000001',
                     '# time of last sample : 0.000002'):
            self.assertIn(line, head)

    def test_cut_short(self):
        out = self.convert(recording(end=False)[:-11])
        self.assertIn('# Samples: 5 ', self.report(out))

    def test_zero_samples(self):
        out = self.convert(recording(samples=[]))
        self.perf('script', '-i', out, '-k', self.elf)

    def test_second_of_two(self):
        cap = self.write('c', recording() + recording(samples=SAMPLES[4:]))
        r = self.run_tool('report', capture=cap)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('# Samples: 2 ', r.stdout)

    def test_branch_stacks_open_in_branch_view(self):
        out = self.convert(recording(branches=True))
        rep = self.report(out)
        self.assertIn('Source Symbol', rep)
        self.assertRegex(rep, r'\[k\] outer\s+\[k\] leaf')

    def test_annotate(self):
        if shutil.which('objdump') is None:
            self.skipTest('objdump not installed (binutils)')
        cap = self.write('c', recording())
        r = self.run_tool('annotate', 'leaf', capture=cap)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('leaf', r.stdout)


if __name__ == '__main__':
    unittest.main()
