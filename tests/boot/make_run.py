#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of the developer path: `make run SMP=1 KVM=0` on a
# pseudo-terminal, as a person would type it.  It must print which
# accelerator it uses and where the guest's COM2 goes, reach the "tally> "
# prompt, answer "help" with the command list, show the CMDLINE options
# after panic=exit, and end cleanly (make's status 0) after "poweroff".
# COM2 goes to a file of its own here, not to the build/perf.stream a
# developer may still want.  Prints TAP; exits 1 on any failure.
#

import argparse
import os
import re
import shlex
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402

COMMANDS = ('help', 'log', 'mem', 'cmdline', 'reboot', 'poweroff')
# make may first have to build the ISO.
PROMPT_TIMEOUT = 300


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument('--iso', help='ignored: make run boots build/tally.iso')
    p.add_argument('--test-iso', help='ignored: make run boots no tests')
    p.add_argument('--kvm', action='store_true',
                   help='KVM=auto instead of KVM=0')
    p.add_argument('--log', default=None)
    p.add_argument('--make-command', default=None,
                   help='command to run instead of make run (for testing '
                   'this script)')
    args = p.parse_args()
    tallyqemu.install_sigterm_exit()
    stream = os.path.join(tallyqemu.BUILD, 'logs', 'make_run.perf.stream')
    argv = shlex.split(args.make_command) if args.make_command else \
        ['make', '--no-print-directory', 'run', 'SMP=1',
         'KVM=' + ('auto' if args.kvm else '0'), 'PERFSTREAM=' + stream,
         'CMDLINE=softpmu.width=40 perfmon.hook=on']
    tap = tallyqemu.Tap()
    log = args.log or os.path.join(tallyqemu.BUILD, 'logs',
                                   'serial-make_run.txt')
    with tallyqemu.Qemu(log=log, name='make_run') as q:
        # As typed at a shell: not as a sub-make of `make check`.
        env = {k: v for k, v in os.environ.items()
               if k not in ('MAKEFLAGS', 'MFLAGS', 'MAKELEVEL')}
        q.spawn(argv, use_pty=True, cwd=tallyqemu.ROOT, env=env)
        tap.diag('running %s on a pty; log %s' % (' '.join(argv), log))
        try:
            m = q.wait_for(r'qemu: (using KVM|/dev/kvm not usable, using TCG'
                           r'|using TCG)[^\r\n]*Ctrl-A x', PROMPT_TIMEOUT)
            tap.ok('make run says which accelerator: ' + m.group(1))
            q.wait_for(r'qemu: recordings \(COM2\) go to \S*make_run\.perf'
                       r'\.stream', PROMPT_TIMEOUT)
            tap.ok('make run says where COM2 goes')
            q.wait_prompt(PROMPT_TIMEOUT)
            tap.ok('make run reaches the prompt')
            out = q.command('help', 30)
            words = set(re.findall(r'[A-Za-z_]+', out))
            missing = [c for c in COMMANDS if c not in words]
            tap.result(not missing, 'help answers with the command list',
                       'missing: %s\nhelp output: %r' % (missing, out)
                       if missing else '')
            out = q.command('cmdline', 30)
            want = 'panic=exit softpmu.width=40 perfmon.hook=on'
            tap.result(want in out, 'CMDLINE reaches the kernel after '
                       'panic=exit', 'cmdline said: %r' % out)
            q.skip_output()
            q.send_line('poweroff')
            code = q.wait_exit(60)
            tap.result(code == 0, 'make run ends with status 0 after poweroff',
                       'make exited with %s; last lines:\n%s'
                       % (code, q.tail()) if code != 0 else '')
        except TimeoutError as e:
            tap.fail('make run session', str(e))
        except tallyqemu.QemuExited as e:
            tap.fail('make run session', 'make run ended early with status '
                     '%s; last lines:\n%s' % (e.code, e.tail))
    return tap.finish()


if __name__ == '__main__':
    sys.exit(main())
