#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Tests of tools/gensyms' function map (kern/symtab.h), the table the
# kernel finds a function's start in with one read and the call-chain
# walk checks its frames with: on random texts and symbols, each granule
# names the function that holds every one of its bytes in the text (the
# last symbol at or before the byte, as the kernel's search finds it),
# and is FUNC_MIXED exactly where its bytes are not all of one function;
# the last granule may be partial, and its bytes past the text do not
# count.  A wrong entry would make the walk take a frame whose call went
# elsewhere, or miss one.
#

import contextlib
import importlib.machinery
import importlib.util
import io
import os
import random
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def load_gensyms():
    path = os.path.join(ROOT, 'tools', 'gensyms')
    loader = importlib.machinery.SourceFileLoader('gensyms', path)
    spec = importlib.util.spec_from_loader('gensyms', loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


gensyms = load_gensyms()


def func_start(syms, addr):
    """The kernel's search: the last symbol at or before addr, or None."""
    found = None
    for a, _ in syms:
        if a <= addr:
            found = a
    return found


class FuncMapTest(unittest.TestCase):

    def check(self, syms, start, end):
        fmap = gensyms.func_map(syms, (start, end))
        size = 1 << gensyms.GRANULE_SHIFT
        if not syms:
            self.assertEqual(fmap, [])      # the kernel searches then
            return
        self.assertEqual(len(fmap), (end - start + size - 1) // size)
        for g, entry in enumerate(fmap):
            lo = start + g * size
            owners = {func_start(syms, b)
                      for b in range(lo, min(lo + size, end))}
            if len(owners) == 1 and None not in owners:
                self.assertEqual(entry, owners.pop() - start,
                                 'granule %d of %r' % (g, syms))
            else:
                self.assertEqual(entry, gensyms.FUNC_MIXED,
                                 'granule %d of %r' % (g, syms))

    def test_random_texts(self):
        rnd = random.Random(26)
        for _ in range(400):
            start = 0xffffffff80200000 + rnd.randrange(0, 64)
            end = start + rnd.randrange(1, 400)
            syms = sorted((rnd.randrange(start - 8, end + 8), 'f%d' % k)
                          for k in range(rnd.randrange(0, 12)))
            # Aligned starts too, as most functions have.
            syms += [(start + 16 * k, 'a%d' % k)
                     for k in range(rnd.randrange(0, 4))]
            self.check(sorted(syms), start, end)

    def test_shapes(self):
        start = 0xffffffff80200000
        # One function over all: every granule, the partial last one too.
        self.assertEqual(gensyms.func_map([(start, 'f')], (start, start + 40)),
                         [0, 0, 0])
        # A start inside a granule, and none before the first symbol.
        self.assertEqual(gensyms.func_map([(start + 20, 'f')],
                                          (start, start + 48)),
                         [gensyms.FUNC_MIXED, gensyms.FUNC_MIXED, 20])
        # A symbol at a granule's first byte leaves it whole.
        self.assertEqual(gensyms.func_map([(start, 'f'), (start + 16, 'g')],
                                          (start, start + 32)),
                         [0, 16])
        # No table for the first link.
        self.assertEqual(gensyms.func_map([], (start, start + 32)), [])

    def test_emit(self):
        out = io.StringIO()
        start = 0xffffffff80200000
        with contextlib.redirect_stdout(out):
            gensyms.emit([(start, 'f'), (start + 20, 'g')],
                         (start, start + 40))
        text = out.getvalue()
        self.assertIn('symtab_nr_func_map SYMTAB_SECTION = 3;', text)
        self.assertIn('0x0, 0xffffffff, 0x14,', text)
        self.assertIn('SYMTAB_GRANULE_SHIFT == %d' % gensyms.GRANULE_SHIFT,
                      text)


if __name__ == '__main__':
    unittest.main()
