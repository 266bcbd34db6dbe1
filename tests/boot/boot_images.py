#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of the two images make builds from the same objects: the user
# ISO's kernel carries no in-kernel test (its ktest_cases section, which
# KTEST_DEFINE fills, is empty) while the test ISO's does; and the user
# kernel booted with `test` says in one line that it has no tests and
# which ISO has them, then exits QEMU with the failure status (35) instead
# of printing an empty, passing KTAP report or starting the shell.  Prints
# TAP.
#

import os
import re
import struct
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402

TIMEOUT = 120
NO_TESTS_LINE = ('ktest: this kernel has no in-kernel tests; '
                 'boot build/tally-test.iso to run them')
KTEST_SIZE = 32             # struct ktest: two pointers, a function, a flag


def section_sizes(elf):
    """{name: size} of an ELF64 little-endian file's sections."""
    if elf[:4] != b'\x7fELF' or elf[4] != 2 or elf[5] != 1:
        raise ValueError('not an ELF64 little-endian file')
    shoff, = struct.unpack_from('<Q', elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', elf, 0x3a)

    def header(i):
        # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size
        return struct.unpack_from('<IIQQQQ', elf, shoff + i * shentsize)

    strtab_off = header(shstrndx)[4]
    sizes = {}
    for i in range(shnum):
        name_off, _, _, _, _, size = header(i)
        start = strtab_off + name_off
        name = elf[start:elf.index(b'\0', start)].decode('ascii', 'replace')
        sizes[name] = size
    return sizes


def result(tap, ok, name, detail):
    """A TAP line, with its detail only when it failed."""
    tap.result(ok, name, '' if ok else detail)


def check_kernels(tap, args):
    for what, iso, path, want_tests in (
            ('user', args.iso, '/boot/tally.elf', False),
            ('test', args.test_iso, '/boot/tally-test.elf', True)):
        try:
            sizes = section_sizes(tallyqemu.iso_read(iso, path))
        except (OSError, ValueError) as e:
            tap.fail('%s image: %s readable' % (what, path), str(e))
            continue
        n = sizes.get('ktest_cases', 0)
        if want_tests:
            result(tap, n > 0 and n % KTEST_SIZE == 0,
                       'test image: %s holds the in-kernel tests' % path,
                       'ktest_cases is %d bytes' % n)
        else:
            result(tap, n == 0, 'user image: %s holds no in-kernel test'
                       % path, 'ktest_cases is %d bytes (%d tests)'
                       % (n, n // KTEST_SIZE))


def check_user_kernel_with_test(t):
    tap = t.tap
    run = t.run_to_exit(smp=2, cmdline='test', timeout=TIMEOUT)
    if not run.report_exit(tap, 'user image with test: QEMU exits',
                           tallyqemu.EXIT_TEST_FAILURE):
        return
    out = run.text
    lines = [ln for ln in out.split('\n') if 'ktest:' in ln]
    result(tap, len(lines) == 1 and lines[0].endswith(NO_TESTS_LINE),
               'user image with test: one line says it has no tests and '
               'names build/tally-test.iso',
               'ktest lines: %r' % lines)
    found = re.search(r'KTAP version|^\d+\.\.\d+$|' + re.escape(
        tallyqemu.PROMPT), out, re.M)
    result(tap, found is None,
               'user image with test: no KTAP report, no shell',
               'found %r' % (found.group(0) if found else None))


def main():
    t = tallyqemu.BootTest(__doc__)
    check_kernels(t.tap, t.args)
    check_user_kernel_with_test(t)
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
