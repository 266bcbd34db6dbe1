#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of the interactive shell on one CPU: the kernel must reach the
# "tally> " prompt, list its commands, show the options passed through
# fw_cfg, report free memory, survive bad input (unknown command, overlong
# line, control characters, binary garbage, Ctrl-C on a half-typed line),
# each time answering a following "help" normally, and power off with exit
# status 33.  Prints TAP; exits 1 on any failure.
#

import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402

COMMANDS = ('help', 'log', 'mem', 'cmdline', 'reboot', 'poweroff')
MARKER = 'shelltest=7'      # an option only this test passes
CMD_TIMEOUT = 30


def lists_commands(out):
    words = set(re.findall(r'[A-Za-z_]+', out))
    return [c for c in COMMANDS if c not in words]


def main():
    t = tallyqemu.BootTest(__doc__)
    with t.shell(timeout=CMD_TIMEOUT, smp=1, cmdline=MARKER) as sh:
        q = sh.q

        def help_works():
            out = sh.run('help')
            missing = lists_commands(out)
            if missing:
                return 'help does not list: %s\nhelp output:\n%s' \
                    % (' '.join(missing), out)
            return None

        def expect_error(data, needle):
            """Type data, press Enter, expect needle before the next prompt."""
            def check():
                q.skip_output()
                q.send(data + b'\r')
                out = sh.reply()
                if needle not in out:
                    return '%r not in the reply %r' % (needle, out)
                return None
            return check

        def ctrl_c():
            q.skip_output()
            q.send(b'hel')
            q.wait_for(re.escape('hel'), CMD_TIMEOUT)
            q.send(b'\x03')
            q.wait_for(re.compile(r'\^C.*?' + re.escape(tallyqemu.PROMPT),
                                  re.DOTALL), CMD_TIMEOUT)
            # The half-typed line must be gone: "p" alone is not "help".
            out = sh.run('p')
            if 'unknown command' not in out:
                return 'after ^C, "p" gave %r: old input kept?' % out
            return None

        def cmdline():
            out = sh.run('cmdline')
            missing = [o for o in ('panic=exit', MARKER) if o not in out]
            return 'cmdline output %r lacks %s' % (out, missing) \
                if missing else None

        def mem():
            out = sh.run('mem')
            return None if 'free' in out else 'mem output %r lacks "free"' % out

        sh.step('reaches the prompt with -smp 1', sh.prompt)
        sh.step('help lists ' + ', '.join(COMMANDS), help_works)
        sh.step('cmdline shows the fw_cfg options', cmdline)
        sh.step('mem reports free memory', mem)
        bad = [
            ('unknown command', b'frobnicate', 'unknown command'),
            ('overlong line (300 chars)', b'x' * 300, 'line too long'),
            ('control characters', b'\x01\x02abc', 'non-printable'),
            ('binary garbage', bytes(range(0x80, 0x100)) + b'\x00',
             'non-printable'),
        ]
        for name, data, needle in bad:
            sh.step('%s is rejected' % name, expect_error(data, needle))
            sh.step('help works after %s' % name, help_works)
        sh.step('Ctrl-C discards a half-typed line', ctrl_c)
        sh.step('help works after Ctrl-C', help_works)
        sh.step('poweroff exits with 33', sh.poweroff)
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
