#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# The call sites of the kernel's ELF, read from `objdump -d`, to judge a
# sampled call chain: every frame after the first must name the last byte
# of a call instruction (the chain holds return addresses minus one), and
# a direct call must go to the function of the frame before it.  A frame
# that fails is one the unwinder invented.
#

import bisect
import re
import subprocess

_INSN_RE = re.compile(r'^\s*([0-9a-f]+):\t(\S+)\s*(.*)$')
_FUNC_RE = re.compile(r'^([0-9a-f]+) <([^>]+)>:$')
_TARGET_RE = re.compile(r'^([0-9a-f]+) <')


class Calls:
    """Call instructions by last byte, and function starts, of one ELF."""

    def __init__(self, elf):
        out = subprocess.run(['objdump', '-d', '--no-show-raw-insn', elf],
                             check=True, capture_output=True,
                             text=True).stdout
        self.calls = {}         # last byte -> target address, None: indirect
        self.starts = []
        self.names = []
        prev = None             # (address, mnemonic, operand)
        for line in out.splitlines():
            m = _FUNC_RE.match(line)
            if m:
                self.starts.append(int(m.group(1), 16))
                self.names.append(m.group(2))
                continue
            m = _INSN_RE.match(line)
            if not m:
                continue
            addr = int(m.group(1), 16)
            if prev is not None and prev[1].startswith('call'):
                t = _TARGET_RE.match(prev[2])
                self.calls[addr - 1] = int(t.group(1), 16) if t else None
            prev = (addr, m.group(2), m.group(3))

    def func_of(self, addr):
        """The start of the function holding addr, or None."""
        i = bisect.bisect_right(self.starts, addr) - 1
        return self.starts[i] if i >= 0 else None

    def name_of(self, addr):
        i = bisect.bisect_right(self.starts, addr) - 1
        return self.names[i] if i >= 0 else None

    def check_chain(self, addrs):
        """None when every caller in the chain is real, else why not."""
        for i in range(1, len(addrs)):
            a = addrs[i]
            if a not in self.calls:
                return 'frame %d, %x (%s), follows no call' \
                    % (i, a, self.name_of(a))
            target = self.calls[a]
            callee = self.func_of(addrs[i - 1])
            if target is not None and target != callee:
                return 'frame %d, %x (%s), calls %s, not %s' \
                    % (i, a, self.name_of(a), self.name_of(target),
                       self.name_of(addrs[i - 1]))
        return None
