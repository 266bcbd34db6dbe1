#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Tests of the model event tables (arch/x86/pmu_evtab_data.c) and their
# generator (tools/genevents.py).
#
# The committed tables are checked on their own: every index points into
# its table, names are unique within a model, the CPUID boxes do not
# overlap, the upstream commit and Intel's notice are there.
#
# With the vendors' lists at hand (TALLY_INTEL_EVENTS: a checkout of
# intel/perfmon; TALLY_AMD_EVENTS: Linux's tools/perf/pmu-events/arch/x86)
# every event of every model read back from the committed file must equal
# the event in the lists, and regenerating must reproduce the file byte
# for byte.  Without them those two tests are skipped, saying so.
#

import importlib.util
import os
import re
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, 'arch', 'x86', 'pmu_evtab_data.c')

_spec = importlib.util.spec_from_file_location(
    'genevents', os.path.join(ROOT, 'tools', 'genevents.py'))
genevents = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(genevents)

INTEL = os.environ.get('TALLY_INTEL_EVENTS')
AMD = os.environ.get('TALLY_AMD_EVENTS')
NO_LISTS = ('set TALLY_INTEL_EVENTS (an intel/perfmon checkout) and '
            'TALLY_AMD_EVENTS (Linux tools/perf/pmu-events/arch/x86) to '
            'check the tables against the lists')


def read_data():
    with open(DATA, encoding='utf-8') as f:
        return f.read()


class TablesTest(unittest.TestCase):
    """The committed tables, without the lists."""

    @classmethod
    def setUpClass(cls):
        cls.text = read_data()
        cls.models, cls.boxes, cls.names, cls.metrics = \
            genevents.parse_c(cls.text)

    def test_every_vendor_and_many_models(self):
        self.assertTrue(any(n.startswith('amdzen') for n in self.names))
        self.assertGreater(len(self.names), 30)
        self.assertEqual(set(self.names), set(self.models))

    def test_names_unique_within_a_model(self):
        for model, events in self.models.items():
            lower = [e['name'].lower() for e in events]
            self.assertEqual(len(lower), len(set(lower)), model)
            self.assertGreater(len(events), 10, model)

    def test_events_sane(self):
        for model, events in self.models.items():
            for e in events:
                where = '%s %s' % (model, e['name'])
                self.assertTrue(re.fullmatch(r'[\w.:=-]+', e['name']), where)
                self.assertNotEqual(e['counters'], 0, where)
                self.assertEqual(e['flags'] & ~0x3f, 0, where)
                self.assertLess(e['codes'][0], 4096, where)
                if model.startswith('amdzen'):
                    self.assertEqual(e['counters'], 0x3f, where)
                    self.assertEqual(e['msrs'], [], where)

    def test_boxes_disjoint_and_cover_every_model(self):
        cells = {}
        for vendor, family, mlo, mhi, slo, shi, model in self.boxes:
            self.assertLessEqual(mlo, mhi)
            self.assertLessEqual(slo, shi)
            self.assertLess(model, len(self.names))
            for m in range(mlo, mhi + 1):
                for s in range(slo, shi + 1):
                    key = (vendor, family, m, s)
                    self.assertNotIn(key, cells)
                    cells[key] = self.names[model]
        used = set(cells.values())
        # Hybrid parts' small cores are listed too (alderlake_gracemont
        # is also a model of its own); every table is somebody's.
        self.assertEqual(used, set(self.names))
        # Stepping decides between Skylake-SP and Cascade Lake.
        self.assertEqual(cells[(0, 6, 0x55, 4)], 'skylakex')
        self.assertEqual(cells[(0, 6, 0x55, 7)], 'cascadelakex')
        self.assertEqual(cells[(1, 25, 0x01, 1)], 'amdzen3')
        self.assertEqual(cells[(1, 25, 0x11, 0)], 'amdzen4')

    def test_sources_and_notice(self):
        self.assertRegex(self.text, r'intel/perfmon, commit [0-9a-f]{40}')
        self.assertIn('Copyright (c) 2021, Intel Corporation', self.text)
        self.assertIn('Redistribution and use in source and binary forms',
                      self.text)
        self.assertRegex(self.text, r'amdzen6/\S+ commit [0-9a-f]{40}')

    def test_no_description_text(self):
        # Only facts: names, numbers, formulas.  A description would need
        # quotes around words with spaces.
        body = self.text[self.text.index('pmu_evtab_data_names'):
                         self.text.index('pmu_evtab_data_formulas')]
        self.assertNotRegex(body, r'"[^"\n]* [^"\n]*"')

    def test_metrics_use_their_models_events(self):
        self.assertTrue(self.metrics)
        for model, metrics in self.metrics.items():
            events = {e['name'] for e in self.models[model]}
            for name, formula in metrics:
                self.assertRegex(name, r'^[a-z0-9_.]+$')
                tokens = re.findall(r'[A-Za-z_][\w.:-]*', formula)
                for t in tokens:
                    self.assertIn(t, events, '%s %s' % (model, name))
        # TopDown level 1 from general counters where the lists give it.
        sky = dict(self.metrics['skylakex'])
        for m in ('frontend_bound', 'bad_speculation', 'backend_bound',
                  'retiring'):
            self.assertIn(m, sky)
        self.assertIn('frontend_bound', dict(self.metrics['amdzen4']))


@unittest.skipUnless(INTEL and AMD, NO_LISTS)
class AgainstListsTest(unittest.TestCase):
    """The committed tables against the vendors' lists."""

    def test_every_event_round_trips(self):
        models, boxes, names, metrics = genevents.parse_c(read_data())
        want, patterns = genevents.load(INTEL, AMD)
        self.assertEqual(sorted(want), sorted(models))
        for model in want:
            key = lambda e: e['name'].lower()
            self.assertEqual(sorted(models[model], key=key),
                             sorted(want[model], key=key), model)
        self.assertEqual(boxes, genevents.expand(patterns, sorted(want)))
        want_metrics = genevents.intel_metrics(INTEL, want)
        want_metrics.update(genevents.amd_metrics(AMD, want))
        self.assertEqual(metrics, {k: v for k, v in want_metrics.items()
                                   if v})

    def test_regenerating_reproduces_the_file(self):
        with open(os.path.join(INTEL, 'LICENSE'), encoding='utf-8') as f:
            notice = f.read()
        text = genevents.generate(INTEL, AMD,
                                  genevents.source_line(INTEL, None),
                                  genevents.source_line(AMD, None), notice)
        self.assertTrue(text == read_data(),
                        'arch/x86/pmu_evtab_data.c differs from what '
                        'tools/genevents.py makes of the lists')


if __name__ == '__main__':
    unittest.main()
