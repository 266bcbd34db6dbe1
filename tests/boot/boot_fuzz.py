#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of the guest perfmon API fuzzer (tests/kernel/perfmon_fuzz.c,
# driven by tools/guestfuzz.py), bounded: one run with a fixed seed (the
# 16-bit software PMU in nmi mode, where wraps are most frequent, with 2
# counters, so that events take turns) and one
# with a seed drawn now and printed, whose width and overflow mode follow
# from it.  Each run must end with perfmon.fuzz passing: no call
# returned what its contract forbids, no count went back, the counter
# users matched the attached events, nothing leaked.  A failure prints
# the command that replays it.  `make fuzz` runs it longer.
#

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import guestfuzz  # noqa: E402
import tallyqemu  # noqa: E402

SECONDS = 8
FIXED_SEED = 1


def main():
    t = tallyqemu.BootTest(__doc__)
    guestfuzz.run(t.tap, t.args.test_iso, SECONDS, seed=FIXED_SEED, width=16,
                  overflow='nmi', counters=2, kvm=t.args.kvm_mode)
    guestfuzz.run(t.tap, t.args.test_iso, SECONDS, kvm=t.args.kvm_mode)
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
