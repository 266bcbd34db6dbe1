#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Tests of `make help` (tools/makehelp), which lists the Makefile's targets
# and variables from the "## text" lines above them.  The first test reads
# the .PHONY list and the ?= variables out of the real Makefile by itself
# and checks that `make help` lists each one with a text, so that a new
# target or variable without a help line fails here instead of going
# unlisted.  The others feed makehelp small Makefiles.
#

import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MAKEHELP = os.path.join(ROOT, 'tools', 'makehelp')


def run(argv, cwd=ROOT):
    # As typed at a shell, not as a sub-make of `make check`.
    env = {k: v for k, v in os.environ.items()
           if k not in ('MAKEFLAGS', 'MFLAGS', 'MAKELEVEL')}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)


def makefile_lines():
    """The Makefile's logical lines (backslash continuations joined)."""
    with open(os.path.join(ROOT, 'Makefile'), encoding='utf-8') as f:
        return re.sub(r'\\\n', ' ', f.read()).split('\n')


def sections(help_text):
    """{first word of a section heading: [its lines]}."""
    out, current = {}, None
    for line in help_text.split('\n'):
        if line and not line.startswith(' '):
            current = out.setdefault(line.split()[0], [])
        elif current is not None and line.strip():
            current.append(line)
    return out


class MakeHelpTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.result = run(['make', '--no-print-directory', '-s', 'help'])
        cls.sections = sections(cls.result.stdout)

    def test_make_help_succeeds_quietly(self):
        self.assertEqual((self.result.returncode, self.result.stderr),
                         (0, ''))

    def test_every_phony_target_has_a_help_line(self):
        phony = []
        for line in makefile_lines():
            if line.startswith('.PHONY:'):
                phony += line.split(':', 1)[1].split()
        self.assertIn('help', phony)
        listed = self.sections.get('Targets', [])
        missing = [t for t in phony
                   if not any(re.match(r'  %s\s+\S' % re.escape(t), ln)
                              for ln in listed)]
        self.assertEqual(missing, [], '.PHONY targets without a "##" line '
                         'above them in the Makefile')

    def test_every_variable_is_listed_with_its_default(self):
        variables = [m.groups() for m in
                     (re.match(r'^(\w+)\s*\?=\s*(.*?)\s*$', ln)
                      for ln in makefile_lines()) if m]
        names = [name for name, _ in variables]
        for name in ('SMP', 'MEM', 'KVM', 'V', 'TEST'):
            self.assertIn(name, names)
        listed = self.sections.get('Variables', [])
        missing = ['%s=%s' % v for v in variables
                   if not any(re.match(r'  %s=%s\s+\S' % tuple(map(
                       re.escape, v)), ln) for ln in listed)]
        self.assertEqual(missing, [], '?= variables missing from make help '
                         'or listed with another default')


class MakehelpToolTest(unittest.TestCase):

    def makehelp(self, text):
        with tempfile.NamedTemporaryFile('w', suffix='.mk',
                                         delete=False) as f:
            f.write(text)
        try:
            return run([MAKEHELP, f.name])
        finally:
            os.unlink(f.name)

    def test_targets_variables_and_continued_text(self):
        r = self.makehelp('## cores\nN ?= 2\nX := 1\n\n'
                          '## build it\n## from a and b\nall: a b\n\ta\n'
                          'hidden:\n## remove\nclean:\n')
        self.assertEqual(r.returncode, 0, r.stderr)
        s = sections(r.stdout)
        self.assertEqual([ln.split() for ln in s['Targets']],
                         [['all', 'build', 'it'], ['from', 'a', 'and', 'b'],
                          ['clean', 'remove']])
        self.assertEqual([ln.split() for ln in s['Variables']],
                         [['N=2', 'cores']])

    def test_help_text_above_nothing_is_an_error(self):
        r = self.makehelp('all:\n\n## lost\n\nclean:\n## also lost\n')
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.splitlines(), [
            'makehelp: %s:3: "##" help text above neither a target nor '
            'a ?= variable' % r.args[1],
            'makehelp: %s:6: "##" help text at the end of the file'
            % r.args[1]])

    def test_missing_makefile_is_one_line(self):
        r = run([MAKEHELP, '/nonexistent/Makefile'])
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, 'makehelp: /nonexistent/Makefile: '
                         'No such file or directory\n')


if __name__ == '__main__':
    sys.exit(unittest.main())
