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
    args = tallyqemu.boot_test_args(__doc__)
    tap = tallyqemu.Tap()
    log = args.log or os.path.join(tallyqemu.BUILD, 'logs',
                                   'serial-boot_shell.txt')
    with tallyqemu.Qemu(log=log, name='boot_shell') as q:
        q.start(args.iso, smp=1, kvm=args.kvm_mode, cmdline=MARKER)
        tap.diag('qemu: %s; serial log %s'
                 % ('KVM' if q.kvm else 'TCG', q.log_path))

        def help_works():
            out = q.command('help', CMD_TIMEOUT)
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
                m = q.wait_for(re.compile(r'(.*?)' + re.escape(
                    tallyqemu.PROMPT), re.DOTALL), CMD_TIMEOUT)
                if needle not in m.group(1):
                    return '%r not in the reply %r' % (needle, m.group(1))
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
            out = q.command('p', CMD_TIMEOUT)
            if 'unknown command' not in out:
                return 'after ^C, "p" gave %r: old input kept?' % out
            return None

        def cmdline():
            out = q.command('cmdline', CMD_TIMEOUT)
            missing = [o for o in ('panic=exit', MARKER) if o not in out]
            return 'cmdline output %r lacks %s' % (out, missing) \
                if missing else None

        def mem():
            out = q.command('mem', CMD_TIMEOUT)
            return None if 'free' in out else 'mem output %r lacks "free"' % out

        try:
            tap.step('reaches the prompt with -smp 1',
                     lambda: q.wait_prompt() and None)
            tap.step('help lists ' + ', '.join(COMMANDS), help_works)
            tap.step('cmdline shows the fw_cfg options', cmdline)
            tap.step('mem reports free memory', mem)
            bad = [
                ('unknown command', b'frobnicate', 'unknown command'),
                ('overlong line (300 chars)', b'x' * 300, 'line too long'),
                ('control characters', b'\x01\x02abc', 'non-printable'),
                ('binary garbage', bytes(range(0x80, 0x100)) + b'\x00',
                 'non-printable'),
            ]
            for name, data, needle in bad:
                tap.step('%s is rejected' % name, expect_error(data, needle))
                tap.step('help works after %s' % name, help_works)
            tap.step('Ctrl-C discards a half-typed line', ctrl_c)
            tap.step('help works after Ctrl-C', help_works)
            tap.step('poweroff exits with 33', lambda: tallyqemu.poweroff(q))
        except tallyqemu.Stop:
            pass
    return tap.finish()


if __name__ == '__main__':
    sys.exit(main())
