#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Tests of tools/mkiso, run on a stand-in kernel (any file will do: mkiso
# only copies it).  The ISO must hold the kernel, its grub.cfg and GRUB's
# own files, nothing else: mkiso once wrote grub-mkrescue's log into the
# tree being packed, which shipped a stray /log in every ISO and now and
# then failed the build when xorriso saw the log grow while packing it.
# "GRUB's own files" are what grub-mkrescue puts in an ISO made from an
# empty folder, so the test follows whatever GRUB platforms are installed.
# The test image (mkiso --test) holds tally-test.elf and boots it with
# `test`; the user image's menu has no `test` at all.
#

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, 'tools'))

import tallyqemu  # noqa: E402

MKISO = os.path.join(ROOT, 'tools', 'mkiso')
HAVE_TOOLS = all(shutil.which(p) for p in ('grub-mkrescue', 'xorriso'))


@unittest.skipUnless(HAVE_TOOLS, 'grub-mkrescue or xorriso missing: '
                     'run make deps')
class MkisoTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix='test_mkiso.')
        empty = os.path.join(cls.tmp, 'empty')
        os.mkdir(empty)
        ref = os.path.join(cls.tmp, 'grub-only.iso')
        subprocess.run(['grub-mkrescue', '-o', ref, empty], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cls.grub_files = set(tallyqemu.iso_list(ref))
        # A kernel-sized stand-in whose every byte is checked on the way out.
        cls.kernel_bytes = bytes(range(256)) * 1024 + b'tally'
        cls.kernel = os.path.join(cls.tmp, 'kernel.elf')
        with open(cls.kernel, 'wb') as f:
            f.write(cls.kernel_bytes)
        cls.iso = os.path.join(cls.tmp, 'tally.iso')
        subprocess.run([MKISO, cls.kernel, cls.iso], check=True)
        cls.files = set(tallyqemu.iso_list(cls.iso))
        cls.test_iso = os.path.join(cls.tmp, 'tally-test.iso')
        subprocess.run([MKISO, '--test', cls.kernel, cls.test_iso],
                       check=True)
        cls.test_files = set(tallyqemu.iso_list(cls.test_iso))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_grub_reference_is_not_empty(self):
        # Guards the tests below: xorriso lists nothing, with status 0,
        # for a file that is not an ISO.
        self.assertIn('/boot/grub/i386-pc/multiboot2.mod', self.grub_files)

    def test_holds_kernel_config_and_grub_files_only(self):
        want = self.grub_files | {'/boot/tally.elf', '/boot/grub/grub.cfg'}
        self.assertEqual(sorted(self.files - want), [],
                         'files in the ISO that should not be there')
        self.assertEqual(sorted(want - self.files), [],
                         'files missing from the ISO')

    def test_test_image_holds_the_test_kernel_only(self):
        want = self.grub_files | {'/boot/tally-test.elf',
                                  '/boot/grub/grub.cfg'}
        self.assertEqual(sorted(self.test_files ^ want), [],
                         'files extra or missing in the test ISO')

    def entries(self, iso):
        """The multiboot2 lines of the menu, default entry first."""
        cfg = tallyqemu.iso_read(iso, '/boot/grub/grub.cfg').decode()
        self.assertIn('set default=0', cfg)
        return re.findall(r'^\s*multiboot2 (.*)$', cfg, re.M)

    def test_user_menu_boots_without_test(self):
        self.assertEqual(self.entries(self.iso), ['/boot/tally.elf'])

    def test_test_menu_runs_the_tests(self):
        self.assertEqual(self.entries(self.test_iso),
                         ['/boot/tally-test.elf test panic=exit'])

    def test_usage(self):
        r = subprocess.run([MKISO, self.kernel], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr, 'usage: mkiso [--test] KERNEL.elf '
                         'OUT.iso\n')

    def test_kernel_is_copied_intact(self):
        self.assertEqual(tallyqemu.iso_read(self.iso, '/boot/tally.elf'),
                         self.kernel_bytes)
        self.assertEqual(tallyqemu.iso_read(self.test_iso,
                                            '/boot/tally-test.elf'),
                         self.kernel_bytes)

    def test_menu_boots_the_kernel_on_the_serial_console(self):
        cfg = tallyqemu.iso_read(self.iso, '/boot/grub/grub.cfg').decode()
        self.assertIn('multiboot2 /boot/tally.elf', cfg)
        self.assertIn('terminal_output serial', cfg)

    def test_failure_prints_one_line_then_the_log(self):
        out = os.path.join(self.tmp, 'no-such-dir', 'x.iso')
        r = subprocess.run([MKISO, self.kernel, out], capture_output=True,
                           text=True)
        self.assertNotEqual(r.returncode, 0)
        lines = r.stderr.splitlines()
        self.assertTrue(lines and lines[0].startswith(
            'mkiso: grub-mkrescue failed to build %s' % out), r.stderr)
        self.assertIn('xorriso', r.stderr, 'the log should follow')
        self.assertFalse(os.path.exists(out))


if __name__ == '__main__':
    unittest.main()
