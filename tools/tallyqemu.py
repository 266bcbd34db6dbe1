#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# QEMU driver shared by tools/qemu and the boot tests (tests/boot/*.py).
# Qemu boots the GRUB ISO (QEMU cannot load a multiboot2 kernel with -kernel)
# with the serial console on pipes, an isa-debug-exit device through which
# the kernel reports its verdict as the exit status, and extra kernel options
# passed through the fw_cfg file opt/tally/cmdline.  A second serial port,
# COM2, writes to a file: recordings leave the guest there in perf's pipe
# format (kern/perfmon/cmd/perfmon_stream.h; tools/perfdata reads it).  A reader thread
# copies every serial byte to a log file and to a buffer that wait_for() and
# command() search.  kvm_usable() decides whether KVM really works here by
# booting a 64 KiB firmware that only writes to isa-debug-exit; the verdict
# is cached per host boot in build/.  The end of the file is what the boot
# tests share around their own checks: BootTest (the command line, TAP, one
# serial log per boot), Shell (a session at the prompt and the checks made
# in several), BootRun and BootTest.run_suites (a boot that runs to QEMU's
# exit, an in-kernel KTAP run in particular).
#
# Exit statuses (value written to port 0xf4 is V, QEMU exits (V << 1) | 1):
# 33 success, 35 test failure, 37 kernel panic, 0 guest reset (with
# -no-reboot a triple fault ends QEMU with status 0).
#

import argparse
import contextlib
import ctypes
import json
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import ktap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, 'build')
DEFAULT_ISO = os.path.join(BUILD, 'tally.iso')
# The same kernel with the in-kernel tests linked in (`test` boots).
DEFAULT_TEST_ISO = os.path.join(BUILD, 'tally-test.iso')
# Where `make run` has the guest's COM2 write (tools/perfdata's default).
DEFAULT_COM2 = os.path.join(BUILD, 'perf.stream')
QEMU = 'qemu-system-x86_64'
PROMPT = 'tally> '

EXIT_SUCCESS = 33
EXIT_TEST_FAILURE = 35
EXIT_PANIC = 37
EXIT_RESET = 0

# Generous: nested KVM spends ~28 s in GRUB, and the boot tests run two at a
# time on machines with as few as two cores.
BOOT_TIMEOUT_KVM = 180
BOOT_TIMEOUT_TCG = 120
TAIL_LINES = 30

# CPU models tried under KVM, best first.  Some nested hypervisors refuse the
# IA32_ARCH_CAPABILITIES MSR that "host" exposes, and QEMU aborts.
_KVM_CPUS = ('host', 'host,-arch-capabilities')

# Where the host's MSRs, CPUID and CPU flags are read (tests point them
# elsewhere).
HOST_MSR = '/dev/cpu/0/msr'
HOST_CPUID = '/dev/cpu/0/cpuid'
HOST_CPUINFO = '/proc/cpuinfo'

# The host's CPUID leaves a PMU bug report needs (Intel SDM vol. 2A; AMD APM
# vol. 3 appendix E): vendor, version and features, structured features
# (Arch LBR), perfmon, Arch LBR, the extended range, AMD's PerfMonV2.
REPORT_CPUID_LEAVES = (0x0, 0x1, 0x7, 0xa, 0x1c, 0x80000000, 0x80000001,
                       0x80000022)

# IA32_PERF_CAPABILITIES; bits 5:0 are the legacy LBR format (Intel SDM vol.
# 3B, "LBR Stack": the format field).
MSR_IA32_PERF_CAPABILITIES = 0x345
LBR_FORMAT_MASK = 0x3f

# Terminal escapes (GRUB clears the screen): dropped from error messages.
_ANSI_RE = re.compile(r'\x1b\[[0-9;?]*[A-Za-z]')


def describe_exit(code):
    """A one-line explanation of a QEMU exit status."""
    if code == EXIT_SUCCESS:
        return 'success (exit 33)'
    if code == EXIT_TEST_FAILURE:
        return 'kernel reported test failure (exit 35)'
    if code == EXIT_PANIC:
        return 'kernel panic (exit 37)'
    if code == EXIT_RESET:
        return 'guest reset (triple fault?) (exit 0)'
    if code is None:
        return 'still running'
    if code < 0:
        return 'qemu killed by signal %d' % -code
    return 'qemu exited with %d' % code


class QemuExited(Exception):
    """QEMU ended while we were waiting for output."""

    def __init__(self, code, tail):
        super().__init__('%s; last serial lines:\n%s'
                         % (describe_exit(code), tail))
        self.code = code
        self.tail = tail


def _probe_image():
    """Write the probe firmware: at the reset vector, out 0xf4 <- 0x10."""
    path = os.path.join(BUILD, 'kvm-probe.bin')
    img = bytearray(b'\xf4' * 65536)            # hlt everywhere
    code = bytes([0xb0, 0x10,                   # mov al, 0x10
                  0xe6, 0xf4,                   # out 0xf4, al
                  0xf4, 0xeb, 0xfd])            # hlt; jmp back to hlt
    img[0xfff0:0xfff0 + len(code)] = code
    os.makedirs(BUILD, exist_ok=True)
    tmp = '%s.%d' % (path, os.getpid())
    with open(tmp, 'wb') as f:
        f.write(img)
    os.replace(tmp, path)
    return path


def _probe_cpu(image, cpu):
    try:
        r = subprocess.run([QEMU, '-accel', 'kvm', '-cpu', cpu,
                            '-machine', 'pc', '-nodefaults',
                            '-display', 'none', '-monitor', 'none',
                            '-serial', 'none', '-no-reboot', '-bios', image,
                            '-device', 'isa-debug-exit,iobase=0xf4,iosize=0x04'],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == EXIT_SUCCESS


def _boot_id():
    try:
        with open('/proc/sys/kernel/random/boot_id') as f:
            return f.read().strip()
    except OSError:
        return ''


def _cpuinfo_flags(path):
    """The vendor and the flags of the first CPU in a /proc/cpuinfo."""
    vendor, flags = '', set()
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(':')
                key = key.strip()
                if key == 'vendor_id' and not vendor:
                    vendor = value.strip()
                elif key == 'flags':
                    flags = set(value.split())
                    break
    except OSError:
        pass
    return vendor, flags


def host_lbr(cpuinfo=None, msr=None):
    """The host's legacy LBR format, for QEMU's lbr-fmt: (format, note).

    QEMU 7.2 shows a KVM guest the legacy LBR only when told the host's
    format (-cpu host,pmu=on,lbr-fmt=N, N the format field of the host's
    IA32_PERF_CAPABILITIES, which KVM checks), and KVM gives legacy LBR only
    on a host without Arch LBR.  format is None where there is none to
    pass; note says, in a few words, what was found or why nothing.
    """
    vendor, flags = _cpuinfo_flags(cpuinfo or HOST_CPUINFO)
    if vendor in ('AuthenticAMD', 'HygonGenuine'):
        return None, 'an AMD host: KVM passes no LbrExtV2 branch stack'
    if vendor != 'GenuineIntel':
        return None, 'not an Intel or AMD host'
    if 'arch_lbr' in flags:
        return None, ('the host has Architectural LBR, which KVM does not '
                      'pass to guests')
    if 'pdcm' not in flags:
        return None, 'the host has no IA32_PERF_CAPABILITIES (PDCM clear)'
    path = msr or HOST_MSR
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            raw = os.pread(fd, 8, MSR_IA32_PERF_CAPABILITIES)
        finally:
            os.close(fd)
    except OSError as e:
        return None, ('cannot read the host\'s LBR format from %s (%s; '
                      'needs root and "modprobe msr")'
                      % (path, e.strerror or e))
    if len(raw) != 8:
        return None, 'cannot read the host\'s LBR format from %s' % path
    fmt = int.from_bytes(raw, 'little') & LBR_FORMAT_MASK
    if fmt == 0:
        return None, 'the host reports LBR format 0 (none to pass)'
    return fmt, 'lbr-fmt=%#x, the host\'s LBR format' % fmt


def host_cpuid(leaf, subleaf=0, path=None):
    """The host CPU 0's CPUID leaf as (eax, ebx, ecx, edx), through the
    cpuid driver (the file's offset is the leaf, its high half the
    subleaf); None where it cannot be read."""
    try:
        fd = os.open(path or HOST_CPUID, os.O_RDONLY | os.O_CLOEXEC)
        try:
            raw = os.pread(fd, 16, leaf | subleaf << 32)
        finally:
            os.close(fd)
    except (OSError, OverflowError):
        return None
    if len(raw) != 16:
        return None
    return tuple(int.from_bytes(raw[i:i + 4], 'little')
                 for i in range(0, 16, 4))


def host_report(cpuinfo=None, cpuid=None, msr=None):
    """Lines that describe the host for a bug report: the CPU, the PMU
    CPUID leaves, and what its branch records give a guest."""
    path = cpuinfo or HOST_CPUINFO
    lines = []
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(':')
                if key.strip() in ('vendor_id', 'cpu family', 'model',
                                   'model name', 'stepping', 'microcode'):
                    lines.append('host %s: %s' % (key.strip(), value.strip()))
                elif not line.strip():
                    break
    except OSError as e:
        lines.append('host cpu: cannot read %s (%s)' % (path, e.strerror))
    _, flags = _cpuinfo_flags(path)
    pmu_flags = sorted(flags & {'hypervisor', 'pdcm', 'arch_lbr',
                                'arch_perfmon', 'perfctr_core', 'perfmon_v2',
                                'amd_lbr_v2', 'hybrid_cpu'})
    lines.append('host flags: %s' % (' '.join(pmu_flags) or '(none of the '
                                     'PMU flags)'))
    for leaf in REPORT_CPUID_LEAVES:
        regs = host_cpuid(leaf, path=cpuid)
        if regs is None:
            lines.append('host cpuid: cannot read %s (needs root and '
                         '"modprobe cpuid")' % (cpuid or HOST_CPUID))
            break
        lines.append('host cpuid %#010x: eax=%#010x ebx=%#010x ecx=%#010x '
                     'edx=%#010x' % ((leaf,) + regs))
    lines.append('host LBR: ' + host_lbr(cpuinfo, msr)[1])
    return lines


def kvm_cpu_candidates(lbr_format):
    """-cpu models to try under KVM, best first: with the PMU on and the
    host's LBR format where there is one, then without it."""
    out = []
    for base in _KVM_CPUS:
        if lbr_format:
            out.append('%s,pmu=on,lbr-fmt=%#x' % (base, lbr_format))
        out.append(base)
    return out


def choose_cpu(candidates, probe):
    """The first of candidates that probe(model) accepts, or None."""
    for model in candidates:
        if probe(model):
            return model
    return None


def branch_records_note(cpu, lbr=None):
    """One line for the KVM line of `make run`: what the guest gets of the
    host's branch records under the -cpu model cpu."""
    fmt, note = lbr if lbr is not None else host_lbr()
    if cpu and 'lbr-fmt=' in cpu:
        return 'branch records: ' + note
    if fmt:
        return ('branch records: none (QEMU or KVM refused lbr-fmt=%#x)'
                % fmt)
    return 'branch records: none (%s)' % note


# `make run`'s vCPUs when SMP= does not say.
RUN_SMP = 4


def run_smp(kvm, smp=None, host_cpus=None):
    """`make run`'s vCPUs and how the KVM line says it: (count, words).

    An explicit smp wins.  Under KVM the default is no more vCPUs than the
    host has (QEMU warns when there are more than KVM recommends); under
    TCG it is RUN_SMP.
    """
    if smp is not None:
        return smp, '%d CPU%s' % (smp, '' if smp == 1 else 's')
    if not kvm:
        return RUN_SMP, '%d CPUs' % RUN_SMP
    host = host_cpus if host_cpus is not None else (os.cpu_count() or 1)
    if host >= RUN_SMP:
        return RUN_SMP, '%d CPUs' % RUN_SMP
    return host, ('%d CPU%s, as many as the host has (SMP= sets more)'
                  % (host, '' if host == 1 else 's'))


def kvm_cpu():
    """The -cpu model that works under KVM here, or None without KVM."""
    try:
        fd = os.open('/dev/kvm', os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None
    os.close(fd)
    cache = os.path.join(BUILD, 'kvm-probe.json')
    lbr_format, _ = host_lbr()
    try:
        qemu_path = subprocess.run(['sh', '-c', 'command -v ' + QEMU],
                                   capture_output=True, text=True).stdout
        qemu_path = qemu_path.strip()
        key = [_boot_id(), qemu_path, os.stat(qemu_path).st_mtime,
               lbr_format]
    except OSError:
        return None
    try:
        with open(cache) as f:
            saved = json.load(f)
        if saved.get('key') == key:
            return saved.get('cpu')
    except (OSError, ValueError, AttributeError):
        pass
    image = _probe_image()
    cpu = choose_cpu(kvm_cpu_candidates(lbr_format),
                     lambda model: _probe_cpu(image, model))
    tmp = '%s.%d' % (cache, os.getpid())
    try:
        with open(tmp, 'w') as f:
            json.dump({'key': key, 'cpu': cpu}, f)
        os.replace(tmp, cache)
    except OSError:
        pass
    return cpu


def kvm_usable():
    """True when /dev/kvm opens read-write and a tiny guest runs under it."""
    return kvm_cpu() is not None


def _die_with_parent():
    """preexec_fn: have the kernel SIGKILL the child if we die first.

    The child runs in its own session, out of reach of a signal to our
    process group, so without this a killed test would leave QEMU running.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)      # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _opt_escape(s):
    # QEMU option values double commas to keep them literal.
    return s.replace(',', ',,')


def com2_args(path):
    """QEMU arguments giving the guest a COM2 that writes to path.

    A file chardev is 8-bit clean (no newline translation) and is truncated
    when QEMU starts; it is the second -serial, so the guest sees it at
    0x2f8 while the console stays on COM1.
    """
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    return ['-chardev', 'file,id=com2,path=' + _opt_escape(path),
            '-serial', 'chardev:com2']


def com2_path_for(log_path):
    """Where a boot test's COM2 goes: beside its serial log."""
    return os.path.splitext(log_path)[0] + '.perf.stream'


def qemu_args(iso, smp=1, mem='256M', kvm=False, cmdline='', gdb=False,
              serial=('-serial', 'stdio'), no_reboot=True, extra_args=(),
              com2=None, tcg_cpu='max'):
    """Build QEMU's argument list.  kvm: False, or the -cpu model for KVM;
    tcg_cpu: the -cpu model under TCG (a named model such as
    Skylake-Server or EPYC-Milan sets vendor, family and model).

    no_reboot=True makes a guest reset (reboot command, triple fault) end
    QEMU with status 0 instead of restarting the guest.  com2: a file for
    the guest's COM2, or None for a machine without one.
    """
    opts = 'panic=exit'
    if cmdline:
        opts += ' ' + cmdline.strip()
    args = [QEMU, '-display', 'none', '-monitor', 'none']
    if no_reboot:
        args.append('-no-reboot')
    args += ['-device', 'isa-debug-exit,iobase=0xf4,iosize=0x04',
             '-cdrom', iso, '-boot', 'd', '-m', str(mem), '-smp', str(smp),
             '-fw_cfg', 'name=opt/tally/cmdline,string=' + _opt_escape(opts)]
    args += list(serial)
    if com2:
        args += com2_args(com2)
    if kvm:
        args += ['-enable-kvm', '-cpu', kvm if isinstance(kvm, str) else 'host']
    else:
        args += ['-accel', 'tcg', '-cpu', tcg_cpu]
    if gdb:
        args += ['-s', '-S']
    args += list(extra_args)
    return args


def resolve_kvm(kvm, notice=sys.stderr):
    """Map 'auto'/True/False to a -cpu model string or False.

    With 'auto', an unusable KVM prints a one-line notice to notice (if not
    None) and falls back to TCG.  True insists on KVM; if the probe found no
    working model it still tries "host" so that QEMU explains what fails.
    """
    if kvm in (False, 0, '0', 'no', 'off'):
        return False
    cpu = kvm_cpu()
    if kvm in (True, 1, '1', 'yes', 'on'):
        return cpu or 'host'
    if cpu is None and notice is not None:
        print('qemu: /dev/kvm not usable, using TCG (slower)', file=notice)
    return cpu or False


class Qemu:
    """One QEMU guest with its serial console on pipes (or a pty).

    All methods are for one thread; the reader threads only append to the
    buffers under self._cond.
    """

    def __init__(self, log=None, name='qemu'):
        self.name = name
        self.log_path = log
        self.com2_path = None
        self.proc = None
        self.kvm = False
        self._buf = ''          # all serial output so far, latin-1 decoded
        self._pos = 0           # wait_for() searches from here
        self._stderr = ''
        self._cond = threading.Condition()
        self._eof = False
        self._threads = []
        self._log = None
        self._in_fd = None
        self._out_fd = None

    # ---- lifetime --------------------------------------------------------

    def start(self, iso=DEFAULT_ISO, smp=1, mem='256M', kvm='auto', cmdline='',
              gdb=False, extra_args=(), log=None, com2='auto', tcg_cpu='max'):
        """Boot iso.  com2: a file for the guest's COM2; 'auto' puts it
        beside the serial log (com2_path_for()); None gives no COM2.
        tcg_cpu: the -cpu model under TCG (qemu_args())."""
        if self.proc is not None:
            raise RuntimeError('qemu already started')
        if not os.path.exists(iso):
            raise FileNotFoundError('ISO not found: %s (run make)' % iso)
        self.kvm = resolve_kvm(kvm)
        if log is not None:
            self.log_path = log
        if com2 == 'auto':
            com2 = com2_path_for(self._default_log())
        self.com2_path = com2
        self.args = qemu_args(iso, smp=smp, mem=mem, kvm=self.kvm,
                              cmdline=cmdline, gdb=gdb, extra_args=extra_args,
                              com2=com2, tcg_cpu=tcg_cpu)
        return self.spawn(self.args)

    def spawn(self, argv, use_pty=False, cwd=None, env=None):
        """Run argv with its console on pipes, or on a pseudo-terminal.

        start() uses this for QEMU itself; a test of `make run` uses it with
        use_pty=True to drive whatever ends up running QEMU.  The process
        gets its own session so that kill() reaches all its children.
        """
        if self.proc is not None:
            raise RuntimeError('already started')
        if self._log is None:
            self._default_log()
            os.makedirs(os.path.dirname(os.path.abspath(self.log_path)),
                        exist_ok=True)
            self._log = open(self.log_path, 'wb')
        if use_pty:
            master, slave = pty.openpty()
            try:
                self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave,
                                             stderr=slave, cwd=cwd, env=env,
                                             start_new_session=True,
                                             preexec_fn=_die_with_parent)
            finally:
                os.close(slave)
            self._out_fd = master
            self._in_fd = master
            readers = ((self._read_serial, master),)
        else:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, bufsize=0,
                                         cwd=cwd, env=env,
                                         start_new_session=True,
                                         preexec_fn=_die_with_parent)
            self._out_fd = self.proc.stdout.fileno()
            self._in_fd = self.proc.stdin.fileno()
            readers = ((self._read_serial, self._out_fd),
                       (self._read_stderr, self.proc.stderr.fileno()))
        for target, fd in readers:
            t = threading.Thread(target=target, args=(fd,), daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def _default_log(self):
        """The serial log's path, chosen now if the caller gave none."""
        if self.log_path is None:
            self.log_path = os.path.join(
                BUILD, 'logs', '%s-%s-%d.txt'
                % (self.name, time.strftime('%Y%m%d-%H%M%S'), os.getpid()))
        return self.log_path

    @property
    def boot_timeout(self):
        return BOOT_TIMEOUT_KVM if self.kvm else BOOT_TIMEOUT_TCG

    def _read_serial(self, fd):
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:     # EIO: the pty's other side is all closed
                chunk = b''
            if chunk:
                self._log.write(chunk)
                self._log.flush()
            with self._cond:
                if not chunk:
                    self._eof = True
                    self._cond.notify_all()
                    return
                self._buf += chunk.decode('latin-1')
                self._cond.notify_all()

    def _read_stderr(self, fd):
        for raw in iter(lambda: os.read(fd, 4096), b''):
            with self._cond:
                self._stderr += raw.decode('utf-8', 'replace')

    def kill(self):
        """Stop QEMU (if running) and close the log.  Idempotent."""
        if self.proc is None:
            return
        # Only while unreaped: after wait() the process group id may be
        # reused.  The group is the whole session spawn() created, so it
        # also holds a QEMU started by make.
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for t in self._threads:
            t.join(timeout=5)
        if self._out_fd is not None and self.proc.stdout is None:
            os.close(self._out_fd)      # the pty master
        self._out_fd = self._in_fd = None
        for s in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if s is not None:
                    s.close()
            except OSError:
                pass
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()
        return False

    # ---- output ----------------------------------------------------------

    @property
    def output(self):
        """All serial output so far (latin-1 decoded, \\r kept)."""
        with self._cond:
            return self._buf

    @property
    def stderr(self):
        with self._cond:
            return self._stderr

    def tail(self, n=TAIL_LINES):
        """The last n serial lines, for error messages."""
        text = _ANSI_RE.sub('', self.output.replace('\r', ''))
        lines = text.split('\n')[-n:]
        out = '\n'.join('    | ' + ln for ln in lines)
        err = self.stderr.strip()
        if err:
            out += '\n    qemu stderr: ' + err.replace('\n', '\n    ')
        return out

    def wait_for(self, pattern, timeout):
        """Wait until pattern matches serial output not yet consumed.

        Returns the re.Match (against self.output) and consumes output up to
        its end.  Raises TimeoutError, or QemuExited if QEMU ends first;
        both carry the last serial lines.
        """
        rx = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                m = rx.search(self._buf, self._pos)
                if m:
                    self._pos = m.end()
                    return m
                if self._eof:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, 1.0))
        if self._eof:
            code = self._reap(10)
            raise QemuExited(code, self.tail())
        raise TimeoutError('timeout after %gs waiting for %r; last serial '
                           'lines:\n%s' % (timeout, rx.pattern, self.tail()))

    def skip_output(self):
        """Consume everything received so far."""
        with self._cond:
            self._pos = len(self._buf)

    # ---- input -----------------------------------------------------------

    def send(self, data):
        """Send raw bytes (or a latin-1 str) to the serial console."""
        if isinstance(data, str):
            data = data.encode('latin-1')
        try:
            while data:
                data = data[os.write(self._in_fd, data):]
        except (OSError, TypeError):
            code = self._reap(10)
            raise QemuExited(code, self.tail()) from None

    def send_line(self, line):
        """Type a line and press Enter (the terminal sends \\r)."""
        self.send(line + '\r')

    def wait_prompt(self, timeout=None):
        """Wait for the shell prompt; default timeout covers a whole boot."""
        return self.wait_for(re.escape(PROMPT),
                             self.boot_timeout if timeout is None else timeout)

    def command(self, line, timeout=30):
        """Run a shell command; return its output with \\r removed.

        The output is what lies between the echoed line and the next prompt.
        """
        self.skip_output()
        self.send_line(line)
        m = self.wait_for(re.compile(re.escape(line) + r'\r*\n(.*?)'
                                     + re.escape(PROMPT), re.DOTALL),
                          timeout)
        return m.group(1).replace('\r', '')

    def reply(self, timeout):
        """Wait for the next prompt; return what came before it, \\r removed.

        For what command() cannot type: raw bytes, a Ctrl-C, a line whose
        echo differs from what was sent.  It reads from the output not yet
        consumed (skip_output() first to start from now).
        """
        m = self.wait_for(re.compile(r'(.*?)' + re.escape(PROMPT), re.DOTALL),
                          timeout)
        return m.group(1).replace('\r', '')

    # ---- exit ------------------------------------------------------------

    def _reap(self, timeout):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def wait_exit(self, timeout):
        """Wait for QEMU to exit and return its status (see describe_exit).

        Raises TimeoutError, with the last serial lines, if it does not.
        """
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError('timeout after %gs waiting for qemu to exit; '
                               'last serial lines:\n%s'
                               % (timeout, self.tail())) from None
        for t in self._threads:
            t.join(timeout=5)
        return code


# ---- ISO contents ------------------------------------------------------------

def _xorriso(iso, *commands):
    """Run xorriso on iso; return its stdout.  Raises OSError on failure."""
    if not os.path.isfile(iso):
        # xorriso takes a missing file for a blank medium and succeeds.
        raise FileNotFoundError('ISO not found: %s' % iso)
    r = subprocess.run(['xorriso', '-abort_on', 'FAILURE', '-indev', iso]
                       + list(commands), stdin=subprocess.DEVNULL,
                       capture_output=True, text=True)
    if r.returncode != 0:
        # The reason is on its FAILURE (or SORRY) line, amid banner lines.
        lines = r.stderr.strip().split('\n')
        why = [ln for ln in lines if ' : FAILURE : ' in ln
               or ' : SORRY : ' in ln] or lines[-1:]
        raise OSError('xorriso failed on %s: %s' % (iso, why[0]))
    return r.stdout


def iso_list(iso):
    """Every regular file's path in an ISO image, sorted."""
    out = _xorriso(iso, '-find', '/', '-type', 'f')
    # One quoted path a line; a quote inside a name would come as '"'"'.
    return sorted(line[1:-1].replace("'\"'\"'", "'")
                  for line in out.split('\n') if line.startswith("'"))


def iso_read(iso, path):
    """The bytes of one file of an ISO image."""
    tmp = tempfile.mkdtemp(prefix='tally-iso.')
    try:
        dest = os.path.join(tmp, 'file')
        _xorriso(iso, '-osirrox', 'on', '-extract', path, dest)
        with open(dest, 'rb') as f:
            return f.read()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---- helpers for tests/boot/*.py -------------------------------------------

class Tap:
    """Minimal TAP producer: "ok N - name" lines, plan printed at the end."""

    def __init__(self, out=sys.stdout):
        self.out = out
        self.count = 0
        self.failed = 0

    def result(self, ok, name, detail=''):
        self.count += 1
        if not ok:
            self.failed += 1
        print('%s %d - %s' % ('ok' if ok else 'not ok', self.count, name),
              file=self.out)
        if detail:
            for line in str(detail).rstrip('\n').split('\n'):
                print('# ' + line, file=self.out)
        self.out.flush()
        return ok

    def ok(self, name):
        return self.result(True, name)

    def fail(self, name, detail=''):
        return self.result(False, name, detail)

    def diag(self, text):
        for line in str(text).rstrip('\n').split('\n'):
            print('# ' + line, file=self.out)
        self.out.flush()

    def finish(self):
        """Print the plan and return the script's exit status."""
        print('1..%d' % self.count, file=self.out)
        self.out.flush()
        return 1 if self.failed or self.count == 0 else 0

    def step(self, name, fn):
        """Run one check of a live guest: fn() returns None or an error.

        A timeout or the guest's exit fails the check and raises Stop,
        since the checks after it cannot run.
        """
        try:
            err = fn()
        except (TimeoutError, QemuExited) as e:
            self.fail(name, str(e))
            raise Stop() from None
        if err:
            self.fail(name, err)
        else:
            self.ok(name)


class Stop(Exception):
    """The guest is gone or wedged: later steps cannot run."""


# ---- `perfmon stat` output, as a user reads it ---------------------------

def stat_count(out, event):
    """The count printed for event (grouped digits), or None."""
    m = re.search(r'^\s*([\d,]+)\s+' + re.escape(event) + r'(?=\s|$)',
                  out, re.M)
    return int(m.group(1).replace(',', '')) if m else None


def stat_msec(out, event):
    """The msec printed for a clock event, or None."""
    m = re.search(r'^\s*([\d,]+\.\d+) msec ' + re.escape(event) + r'\b',
                  out, re.M)
    return float(m.group(1).replace(',', '')) if m else None


def stat_elapsed(out):
    """The seconds time elapsed, or None."""
    m = re.search(r'^\s*([\d,]+\.\d{9}) seconds time elapsed', out, re.M)
    return float(m.group(1).replace(',', '')) if m else None


def slept_ms(out):
    """The milliseconds the shell's sleep says it slept, or None."""
    m = re.search(r'^sleep: asked \d+ ms, slept ([\d,]+\.\d+) ms', out, re.M)
    return float(m.group(1).replace(',', '')) if m else None


def stat_utilized(out):
    """Every "N CPUs utilized" figure, in order."""
    return [float(v.replace(',', '')) for v in
            re.findall(r'#\s+([\d,]+\.\d+) CPUs utilized', out)]


def poweroff(q, timeout=60):
    """Power the guest off from its prompt: None, or what went wrong."""
    q.skip_output()
    q.send_line('poweroff')
    code = q.wait_exit(timeout)
    if code != EXIT_SUCCESS:
        return 'poweroff: %s' % describe_exit(code)
    return None


def boot_test_args(description, argv=None):
    """Common command line of a boot test.

    --iso ISO --test-iso ISO [--kvm] [--log LOG]: --iso is the user image
    (shell sessions), --test-iso the one with the in-kernel tests, for any
    boot with `test` on the command line.
    """
    p = argparse.ArgumentParser(description=description)
    p.add_argument('--iso', default=DEFAULT_ISO,
                   help='user image (default %(default)s)')
    p.add_argument('--test-iso', default=DEFAULT_TEST_ISO,
                   help='image with the in-kernel tests (default %(default)s)')
    p.add_argument('--kvm', action='store_true',
                   help='boot under KVM when usable (default: TCG)')
    p.add_argument('--log', default=None, help='serial log file')
    args = p.parse_args(argv)
    args.kvm_mode = 'auto' if args.kvm else False
    install_sigterm_exit()
    return args


def install_sigterm_exit():
    """Turn SIGTERM into SystemExit so that `with Qemu()` cleans up."""
    def handler(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, handler)


# ---- boot tests: a test's boots, shell sessions and in-kernel test runs ----
#
# A boot test script is mostly its own checks; what every one of them does
# around those checks is here, so that all do it the same way: the command
# line and the TAP output (BootTest), one boot with its serial log and the
# diagnostic line saying where that log is (BootTest.boot), a session at
# the shell prompt with the checks several tests make (Shell), and a boot
# that runs to QEMU's exit, an in-kernel KTAP run in particular (BootRun,
# BootTest.run_suites).

class Shell:
    """A boot test's session at the guest's shell prompt.

    q is the Qemu, tap the test's Tap, timeout the seconds a command may
    take.  prompt, expect(...), no_leak and poweroff are checks for step()
    (Tap.step): each returns None or what is wrong, and a timeout or the
    guest's exit stops the session.  BootTest.shell() makes one.
    """

    def __init__(self, q, tap, timeout=30):
        self.q = q
        self.tap = tap
        self.timeout = timeout

    def step(self, name, fn):
        """One TAP line for the check fn (Tap.step)."""
        self.tap.step(name, fn)

    def run(self, line, timeout=None):
        """Run a command; its output, \\r removed (Qemu.command)."""
        return self.q.command(line, self.timeout if timeout is None
                              else timeout)

    def reply(self):
        """What comes before the next prompt (Qemu.reply)."""
        return self.q.reply(self.timeout)

    def interrupt(self, line, delay, started=None):
        """Type line, and once started (default: its echo) has come and
        delay seconds more have passed, press Ctrl-C; return what the
        command printed up to the next prompt."""
        self.q.skip_output()
        self.q.send_line(line)
        self.q.wait_for(re.escape(line if started is None else started),
                        self.timeout)
        time.sleep(delay)
        self.q.send(b'\x03')
        return self.reply()

    def prompt(self):
        """Check: the prompt comes, within the time a whole boot may take."""
        self.q.wait_prompt()
        return None

    def expect(self, line, needles):
        """A check: the reply to line holds every one of needles."""
        def check():
            out = self.run(line)
            missing = [n for n in needles if n not in out]
            if missing:
                return '%r not in the reply to %r:\n%s' % (missing, line, out)
            return None
        return check

    def no_leak(self):
        """Check: `perfmon info` shows no counter in use, and a device with
        none of its counters allocated (a leak shows in either)."""
        out = self.run('perfmon info')
        if 'counters in use: none' not in out:
            return 'perfmon info shows counters in use:\n' + out
        if not re.search(r'in use: 0 of \d+', out):
            return 'a device still has counters allocated:\n' + out
        return None

    def poweroff(self):
        """Check: `poweroff` ends QEMU with 33 (poweroff())."""
        return poweroff(self.q)


class BootRun:
    """How a boot that runs to its end went (BootTest.run_to_exit).

    code: QEMU's exit status, or None when it did not exit in time; why
    then says so, with the last serial lines.  output: all serial output
    (text: the same without \\r).  report: the KTAP report in the output
    (tools/ktap.py), parsed when first asked for.
    """

    def __init__(self, code, why, output, tail, kvm=False):
        self.code = code
        self.why = why
        self.output = output
        self.tail = tail
        self.kvm = kvm
        self._report = None

    @classmethod
    def wait(cls, q, timeout):
        """Wait up to timeout seconds for q's QEMU to exit; the BootRun."""
        try:
            code, why = q.wait_exit(timeout), ''
        except TimeoutError as e:
            code, why = None, str(e)
        return cls(code, why, q.output, q.tail(), q.kvm)

    @property
    def text(self):
        return self.output.replace('\r', '')

    @property
    def report(self):
        if self._report is None:
            self._report = ktap.parse(self.output)
        return self._report

    def leaves(self):
        """The report's (path, result) pairs (ktap.Report.leaves)."""
        return self.report.leaves()

    def exit_problem(self, want=EXIT_SUCCESS):
        """None when QEMU exited with want; else why not, with the tail."""
        if self.code is None:
            return self.why
        if self.code != want:
            return '%s; last serial lines:\n%s' % (describe_exit(self.code),
                                                   self.tail)
        return None

    def report_exit(self, tap, name, want=EXIT_SUCCESS):
        """One TAP line on how QEMU ended: "NAME with WANT", or "NAME"
        failing when it did not exit in time.  Returns whether it exited."""
        if self.code is None:
            tap.fail(name, self.why)
            return False
        end = self.exit_problem(want)
        tap.result(end is None, '%s with %d' % (name, want), end or '')
        return True

    def report_problems(self):
        """What makes the KTAP report incomplete: its structural errors (no
        version line, no plan, fewer results than planned...), or a plan of
        1..0; then any diagnostics after the last result, which say why."""
        r = self.report
        problems = list(r.errors)
        if r.version and not r.errors and not r.results:
            problems.append('the plan is 1..0: no kernel test ran')
        if problems and r.diagnostics:
            problems.append('diagnostics after the last result:\n'
                            + '\n'.join(r.diagnostics))
        return problems

    def failures(self):
        """A line and the diagnostics of each leaf test that failed."""
        return ['\n'.join(['not ok ' + path] + r.diagnostics)
                for path, r in self.leaves() if not r.passed]

    def problems(self, want=EXIT_SUCCESS, failures=True):
        """Everything wrong with a run meant to exit with want and print a
        complete report, with every test passing unless failures is False
        (a run that fails tests on purpose); [] when all is well."""
        end = self.exit_problem(want)
        return (([end] if end else []) + self.report_problems()
                + (self.failures() if failures else []))


def report_leaves(tap, report, prefix='ktap: ', skip_fails=False):
    """One TAP line per leaf test of a KTAP report: "PREFIXsuite.test".

    Its diagnostics follow it.  A skipped test is "ok ... # SKIP why",
    unless skip_fails (a run whose tests must all really run): then it
    fails, saying why it was skipped.
    """
    for path, r in report.leaves():
        name = prefix + path
        ok = r.passed
        detail = list(r.diagnostics)
        if r.skip and skip_fails:
            ok = False
            detail.insert(0, 'skipped: ' + r.skip_reason)
        elif r.skip:
            name += ' # SKIP ' + r.skip_reason
        tap.result(ok, name, '\n'.join(detail))


class BootTest:
    """One boot test (tests/boot/*.py): its command line (boot_test_args),
    its TAP output (tap) and its boots.

    name, by default the script's file name without .py, names the QEMU
    guests and their serial logs (log_path).  Each boot prints a TAP
    diagnostic saying KVM or TCG, the CPUs, the options and where its
    serial log is, so that a failure can be followed into the log.
    """

    def __init__(self, doc, name=None, argv=None):
        self.args = boot_test_args(doc, argv)
        self.tap = Tap()
        self.name = name or os.path.splitext(os.path.basename(sys.argv[0]))[0]

    def log_path(self, what=None):
        """The serial log of the boot what: the test's main boot (what
        None) logs to --log or build/logs/serial-NAME.txt, another to
        build/logs/serial-NAME-WHAT.txt."""
        if what is None and self.args.log:
            return self.args.log
        return os.path.join(BUILD, 'logs', 'serial-%s%s.txt'
                            % (self.name, '-' + what if what else ''))

    @contextlib.contextmanager
    def boot(self, what=None, iso=None, smp=1, cmdline='', kvm=None,
             com2='auto', tcg_cpu='max'):
        """Boot iso (default: the user image, --iso) and yield its Qemu,
        killed on the way out.  kvm None follows --kvm; False or True
        force TCG or KVM (resolve_kvm).  com2 and tcg_cpu as for
        Qemu.start()."""
        with Qemu(log=self.log_path(what), name=self.name) as q:
            q.start(self.args.iso if iso is None else iso, smp=smp,
                    kvm=self.args.kvm_mode if kvm is None else kvm,
                    cmdline=cmdline, com2=com2, tcg_cpu=tcg_cpu)
            self.tap.diag('qemu: %s, -smp %d%s; serial log %s'
                          % ('KVM' if q.kvm else 'TCG', smp,
                             ', options "%s"' % cmdline if cmdline else '',
                             q.log_path))
            yield q

    @contextlib.contextmanager
    def shell(self, what=None, timeout=30, **boot):
        """boot() (same keywords) and yield a Shell whose commands may take
        timeout seconds.  A Stop ends the session quietly: the step that
        raised it has already failed and said why."""
        with self.boot(what, **boot) as q:
            try:
                yield Shell(q, self.tap, timeout)
            except Stop:
                pass

    def run_to_exit(self, what=None, timeout=BOOT_TIMEOUT_TCG,
                    kvm_timeout=None, **boot):
        """boot() (same keywords) and wait for QEMU to exit, up to timeout
        seconds, or kvm_timeout under KVM if given; the BootRun."""
        with self.boot(what, **boot) as q:
            if q.kvm and kvm_timeout is not None:
                timeout = kvm_timeout
            return BootRun.wait(q, timeout)

    def run_suites(self, cmdline, what=None, prefix='ktap: ',
                   skip_fails=False, **run):
        """Boot the test image (--test-iso) with cmdline, whose test=...
        says which in-kernel tests run, wait for QEMU to exit
        (run_to_exit(), same keywords), and report each leaf test of its
        KTAP report (report_leaves(); prefix None: no line).  Returns the
        BootRun: the verdict on the run as a whole is the caller's, most
        often from its problems()."""
        run.setdefault('iso', self.args.test_iso)
        r = self.run_to_exit(what, cmdline=cmdline, **run)
        if prefix is not None:
            report_leaves(self.tap, r.report, prefix, skip_fails)
        return r

    def finish(self):
        """Print the plan; the script's exit status (Tap.finish)."""
        return self.tap.finish()
