#!/usr/bin/env python3
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
# Generate the kernel's tables of model-specific core events
# (arch/x86/pmu_evtab_data.c) from the vendors' published event lists:
#
#   genevents.py --intel DIR --amd DIR [-o FILE]
#   genevents.py --intel DIR --amd DIR --check FILE
#
# DIR for Intel is a checkout of github.com/intel/perfmon (mapfile.csv and
# each model's */events/*_core.json); for AMD, Linux's
# tools/perf/pmu-events/arch/x86/ (mapfile.csv and amdzen*/).  A
# SOURCE.txt beside the lists, when there is one, names the upstream
# commit; --intel-commit and --amd-commit say it otherwise.  --check
# regenerates and compares with FILE (exit 1 when they differ).
#
# Only facts go into the tables: names, event codes, unit masks, counter
# masks, flags, counters, extra MSRs.  Descriptions are left out.  Each
# name is stored once across every model, each distinct event once, and
# a model is a list of indexes into them.
#
# load() and parse_c() are also the round-trip test's
# (tests/tools/test_genevents.py): what the inputs say, and what a
# generated file says, in the same shape.
import argparse
import csv
import glob
import json
import os
import re
import sys

VENDORS = ('GenuineIntel', 'AuthenticAMD')

# Flag bits, as kern/perfmon_evtab.h defines them.
F_INV, F_EDGE, F_ANY, F_PRECISE, F_DEPRECATED, F_MERGE = 1, 2, 4, 8, 16, 32

# AMD core counters: the lists name none, every core counter counts.
AMD_COUNTERS = (1 << 6) - 1
INTEL_FIXED_BASE = 32

# AMD files whose events are not the core PMU's (data fabric, L3 and
# memory controller units are other PMUs); their events carry a Unit.
AMD_SKIP_FILES = ('data-fabric.json',)


def num(text):
    text = str(text).strip()
    return int(text, 0) if text.lower().startswith('0x') else int(text)


def num_list(text):
    return [num(t) for t in str(text).split(',') if t.strip()]


def counters_mask(text):
    """'0,1,2,3' or 'Fixed counter 1' as a mask of hw ids."""
    mask = 0
    for part in str(text).split(','):
        part = part.strip()
        m = re.fullmatch(r'(?i)fixed counter (\d+)', part)
        if m:
            mask |= 1 << (INTEL_FIXED_BASE + int(m.group(1)))
        elif part:
            mask |= 1 << int(part)
    return mask


def events_of(path):
    with open(path, encoding='utf-8') as f:
        data = json.load(f)
    return data['Events'] if isinstance(data, dict) else data


def intel_event(e):
    """An Intel list's event as the tables hold it."""
    codes, umasks = num_list(e['EventCode']), num_list(e['UMask'])
    msrs = [m for m in num_list(e.get('MSRIndex', '0')) if m != 0]
    value = num(e.get('MSRValue', '0') or '0')
    flags = 0
    flags |= F_INV if num(e.get('Invert', 0)) else 0
    flags |= F_EDGE if num(e.get('EdgeDetect', 0)) else 0
    flags |= F_ANY if num(e.get('AnyThread', 0)) else 0
    pebs = num(e.get('PEBS', 0)) or num(e.get('Precise', 0))
    flags |= F_PRECISE if pebs else 0
    flags |= F_DEPRECATED if num(e.get('Deprecated', 0)) else 0
    return {
        'name': e['EventName'],
        'codes': codes,
        'umasks': umasks,
        'umask_ext': num(e.get('UMaskExt', '0') or '0'),
        'cmask': num(e.get('CounterMask', 0)),
        'flags': flags,
        'counters': counters_mask(e['Counter']),
        'msrs': msrs,
        'msr_value': value if msrs else 0,
        'topic': '',
    }


# Retired SSE/AVX FLOPs (PMCx003) count up to 64 a cycle on every Zen, so
# need the pair there too where a list's prose does not say so (Zen 4 on):
# the PPRs count it with the Merge event, and Linux pairs it on all of
# family 17h on (arch/x86/events/amd/core.c, amd_is_pair_event_code).
AMD_PAIR_CODES = (0x003,)


def amd_needs_merge(e):
    """Whether an AMD list says the event needs a counter pair (a
    large-increment event, counted with the Merge event on the odd
    counter beside it; Zen PPRs, "Large Increment per Cycle Events").  The
    lists say so only in their prose, which is read here and not kept:
    Zen 3's name the Merge event, Zen 1's and 2's say the event "can count
    above 15" (per cycle, more than one counter's increment holds); the
    codes of AMD_PAIR_CODES everywhere."""
    text = e.get('BriefDescription', '') + e.get('PublicDescription', '')
    return ('MergeEvent' in text or 'count above 15' in text
            or num(e['EventCode']) in AMD_PAIR_CODES)


def amd_event(e, topic):
    return {
        'name': e['EventName'],
        'codes': [num(e['EventCode'])],
        'umasks': [num(e.get('UMask', '0'))],
        'umask_ext': 0,
        'cmask': num(e.get('CounterMask', 0)),
        'flags': ((F_INV if num(e.get('Invert', 0)) else 0)
                  | (F_EDGE if num(e.get('EdgeDetect', 0)) else 0)
                  | (F_DEPRECATED if num(e.get('Deprecated', 0)) else 0)
                  | (F_MERGE if amd_needs_merge(e) else 0)),
        'counters': AMD_COUNTERS,
        'msrs': [],
        'msr_value': 0,
        'topic': topic,
    }


def source_line(directory, override):
    """The upstream commits the lists come from: --intel-commit or
    --amd-commit, else what SOURCE.txt beside them names ("at commit
    HASH", or one "PATH HASH ..." line per file)."""
    if override:
        return override
    path = os.path.join(directory, 'SOURCE.txt')
    if not os.path.exists(path):
        sys.exit('genevents: %s has no SOURCE.txt: say which upstream '
                 'commit it is (--intel-commit, --amd-commit)' % directory)
    with open(path, encoding='utf-8') as f:
        text = f.read()
    m = re.search(r'at commit ([0-9a-f]{7,40})', text)
    if m:
        return 'commit ' + m.group(1)
    files = re.findall(r'^\S*?/x86/(\S+) ([0-9a-f]{40})', text, re.M)
    if not files:
        sys.exit('genevents: %s names no commit' % path)
    return '\n'.join('%s commit %s' % f for f in files)


def mapfile(directory):
    with open(os.path.join(directory, 'mapfile.csv'), encoding='utf-8') as f:
        return list(csv.DictReader(f))


def intel_models(directory):
    """[(pattern, model name, events file)] in the map's order: the core
    list of each CPUID pattern (a hybrid part's big cores)."""
    out = []
    for row in mapfile(directory):
        kind = row['EventType']
        if kind == 'hybridcore' and row.get('Core Role Name') != 'Core':
            continue
        if kind not in ('core', 'hybridcore'):
            continue
        path = row['Filename'].lstrip('/')
        name = os.path.basename(path)[:-len('_core.json')].lower()
        out.append((row['Family-model'], name, path))
    return out


def amd_models(directory):
    out = []
    for row in mapfile(directory):
        if row['EventType'] == 'core' and row['Family-model'].startswith(
                'AuthenticAMD'):
            out.append((row['Family-model'], row['Filename'],
                        row['Filename']))
    return out


def load(intel_dir, amd_dir):
    """{model name: [event dict]} and [(pattern, model name)], in the
    map's order, for both vendors."""
    models, patterns = {}, []
    for pattern, name, path in intel_models(intel_dir):
        patterns.append((pattern, name))
        if name not in models:
            evs = [intel_event(e) for e in events_of(
                os.path.join(intel_dir, path))]
            models[name] = evs
    for pattern, name, subdir in amd_models(amd_dir):
        patterns.append((pattern, name))
        if name in models:
            continue
        evs, seen = [], set()
        for path in sorted(glob.glob(os.path.join(amd_dir, subdir,
                                                  '*.json'))):
            if os.path.basename(path) in AMD_SKIP_FILES:
                continue
            topic = os.path.basename(path)[:-len('.json')]
            for e in events_of(path):
                if 'EventName' not in e or 'Unit' in e:
                    continue
                ev = amd_event(e, topic)
                # recommended.json repeats some events of the other files.
                if ev['name'].lower() in seen:
                    continue
                seen.add(ev['name'].lower())
                evs.append(ev)
        models[name] = evs
    return models, patterns


# ---- metrics ---------------------------------------------------------------

class Unsupported(Exception):
    pass


def formula_text(node, names, metrics):
    """A formula's AST as the kernel's evaluator reads it: numbers, event
    names, + - * / and parentheses; `a if smt_on else b` is b (Tally
    counts per thread), d_ratio(a, b) is a / b (the evaluator gives 0 for
    a zero divisor).  names maps an alias or name to the event's name;
    metrics, a metric's name to its formula.  Anything else: Unsupported."""
    import ast
    if isinstance(node, ast.Expression):
        return formula_text(node.body, names, metrics)
    if isinstance(node, ast.BinOp) and type(node.op) in (
            ast.Add, ast.Sub, ast.Mult, ast.Div):
        op = {ast.Add: '+', ast.Sub: '-', ast.Mult: '*',
              ast.Div: '/'}[type(node.op)]
        return '(%s %s %s)' % (formula_text(node.left, names, metrics), op,
                               formula_text(node.right, names, metrics))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return '(0 - %s)' % formula_text(node.operand, names, metrics)
    if isinstance(node, ast.Constant) and isinstance(node.value,
                                                     (int, float)):
        text = repr(node.value)
        if 'e' in text or len(text.split('.')[-1]) > 6:
            raise Unsupported(text)
        return text
    if isinstance(node, ast.IfExp) and isinstance(node.test, ast.Name) \
            and node.test.id == 'smt_on':
        return formula_text(node.orelse, names, metrics)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id == 'd_ratio' and len(node.args) == 2:
        return '(%s / %s)' % (formula_text(node.args[0], names, metrics),
                              formula_text(node.args[1], names, metrics))
    if isinstance(node, (ast.Name, ast.Attribute)):
        dotted = dotted_name(node)
        if dotted in metrics:
            return metrics[dotted]
        if dotted.lower() in names:
            return names[dotted.lower()]
    raise Unsupported(ast.dump(node))


def dotted_name(node):
    import ast
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return dotted_name(node.value) + '.' + node.attr
    raise Unsupported(ast.dump(node))


def countable(ev):
    """Whether general-purpose or fixed counters count ev, alone."""
    return ev['counters'] != 0 and not ev['msrs']


def parse_formula(text, names, metrics):
    import ast
    try:
        tree = ast.parse(text.strip(), mode='eval')
    except SyntaxError as e:
        raise Unsupported(str(e))
    return formula_text(tree, names, metrics)


def intel_metrics(intel_dir, models):
    """{model: [(metric name, formula)]}: the metrics of each model whose
    events its table has, countable by general or fixed counters."""
    rows = mapfile(intel_dir)
    core = {}
    for pattern, name, _ in intel_models(intel_dir):
        core.setdefault(pattern, name)
    out = {}
    for row in rows:
        if row['EventType'] != 'metrics' or row['Family-model'] not in core:
            continue
        model = core[row['Family-model']]
        if model in out:
            continue
        path = os.path.join(intel_dir, row['Filename'].lstrip('/'))
        with open(path, encoding='utf-8') as f:
            data = json.load(f)
        events = {e['name'].lower(): e for e in models[model]}
        found = []
        for m in data['Metrics']:
            names = {}
            try:
                for e in m.get('Events', []):
                    ev = events.get(e['Name'].lower())
                    if ev is None or not countable(ev):
                        raise Unsupported(e['Name'])
                    names[e['Alias'].lower()] = ev['name']
                formula = parse_formula(m['Formula'], names, {})
            except Unsupported:
                continue
            found.append((m['MetricName'].lower(), formula))
        out[model] = found
    return out


def amd_metrics(amd_dir, models):
    out = {}
    for pattern, name, subdir in amd_models(amd_dir):
        if name in out:
            continue
        exprs, found = {}, []
        events = {e['name'].lower(): e['name'] for e in models[name]}
        entries = []
        for path in sorted(glob.glob(os.path.join(amd_dir, subdir,
                                                  '*.json'))):
            for e in events_of(path):
                if 'MetricName' in e and 'MetricExpr' in e:
                    entries.append(e)
        # Metrics may use metrics defined in any of the files.
        for _ in range(2):
            for e in entries:
                try:
                    exprs[e['MetricName']] = parse_formula(
                        e['MetricExpr'], events, exprs)
                except Unsupported:
                    pass
        seen = set()
        for e in entries:
            if e['MetricName'] in exprs and e['MetricName'] not in seen:
                seen.add(e['MetricName'])
                found.append((e['MetricName'].lower(),
                              exprs[e['MetricName']]))
        out[name] = found
    return out


# ---- CPUID patterns ------------------------------------------------------

def expand(patterns, model_names):
    """The map's patterns as disjoint boxes (vendor, family, model_lo,
    model_hi, step_lo, step_hi, model index): each (model, stepping) goes
    to the first pattern that matches it, as perf's lookup does."""
    claimed, boxes = set(), []
    for pattern, name in patterns:
        vendor, family, rest = pattern.split('-', 2)
        vendor, family = VENDORS.index(vendor), int(family)
        rest = rest.replace('[[:xdigit:]]', '[0-9A-Fa-f]')
        # A '-' outside brackets starts the stepping part.
        depth, cut = 0, None
        for i, c in enumerate(rest):
            depth += (c == '[') - (c == ']')
            if c == '-' and depth == 0:
                cut = i
                break
        model_re = re.compile(rest if cut is None else rest[:cut])
        step_re = None if cut is None else re.compile(rest[cut + 1:])
        per_model = []
        for model in range(256):
            if not model_re.fullmatch('%X' % model):
                continue
            steps = [s for s in range(16)
                     if (step_re is None or step_re.fullmatch('%X' % s))
                     and (vendor, family, model, s) not in claimed]
            for s in steps:
                claimed.add((vendor, family, model, s))
            per_model.append((model, ranges(steps)))
        index = model_names.index(name)
        # Merge neighbouring models with the same stepping ranges.
        i = 0
        while i < len(per_model):
            j = i
            while (j + 1 < len(per_model)
                   and per_model[j + 1][0] == per_model[j][0] + 1
                   and per_model[j + 1][1] == per_model[i][1]):
                j += 1
            for lo, hi in per_model[i][1]:
                boxes.append((vendor, family, per_model[i][0],
                              per_model[j][0], lo, hi, index))
            i = j + 1
    return boxes


def ranges(values):
    out = []
    for v in values:
        if out and out[-1][1] == v - 1:
            out[-1] = (out[-1][0], v)
        else:
            out.append((v, v))
    return out


# ---- output --------------------------------------------------------------

class Pool:
    """Strings stored once, NUL-terminated, by offset."""

    def __init__(self):
        self.offsets, self.strings, self.size = {}, [], 0

    def add(self, s):
        if s not in self.offsets:
            self.offsets[s] = self.size
            self.strings.append(s)
            self.size += len(s) + 1
        return self.offsets[s]


def event_key(ev):
    return (ev['name'], tuple(ev['codes']), tuple(ev['umasks']),
            ev['umask_ext'], ev['cmask'], ev['flags'], ev['counters'],
            tuple(ev['msrs']), ev['msr_value'], ev['topic'])


def check_event(model, ev):
    """Exit unless the event fits the tables' fields."""
    codes, umasks, msrs = ev['codes'], ev['umasks'], ev['msrs']
    ok = (1 <= len(codes) <= 2 and 1 <= len(umasks) <= 4
          and codes[0] < 4096 and all(c < 256 for c in codes[1:])
          and all(u < 256 for u in umasks) and ev['umask_ext'] < 256
          and ev['cmask'] < 256 and len(msrs) <= 4
          and (not msrs or msrs == list(range(msrs[0],
                                              msrs[0] + len(msrs)))))
    if not ok:
        sys.exit('genevents: %s: %s does not fit the tables'
                 % (model, ev['name']))


def cname(model):
    """A model's name as part of a C identifier."""
    return model.replace('-', '_')


def extra_of(ev):
    """What an event has beyond one code and unit mask (None: nothing):
    (first MSR, MSRs, second code, unit masks, MSR value)."""
    if ev is None or (not ev['msrs'] and len(ev['codes']) == 1
                      and len(ev['umasks']) == 1):
        return (0, 0, 0, (), 0)
    msrs = ev['msrs']
    return (msrs[0] if msrs else 0, len(msrs),
            ev['codes'][1] if len(ev['codes']) > 1 else 0,
            tuple(ev['umasks']), ev['msr_value'])


def generate(intel_dir, amd_dir, intel_source, amd_source, license_text):
    models, patterns = load(intel_dir, amd_dir)
    names = sorted(models)
    pool, topics, counters, extras = Pool(), [''], [], [extra_of(None)]
    events, event_index = [], {}
    model_rows = []
    for name in names:
        rows = []
        seen = set()
        for ev in models[name]:
            check_event(name, ev)
            if ev['name'].lower() in seen:
                sys.exit('genevents: %s: %s twice' % (name, ev['name']))
            seen.add(ev['name'].lower())
            key = event_key(ev)
            if key not in event_index:
                event_index[key] = len(events)
                events.append(ev)
            rows.append(event_index[key])
        # As perf lists them: by topic, then by name.
        rows.sort(key=lambda i: (events[i]['topic'],
                                 events[i]['name'].lower()))
        model_rows.append((name, rows))
    for ev in events:
        pool.add(ev['name'])
        if ev['topic'] not in topics:
            topics.append(ev['topic'])
        if ev['counters'] not in counters:
            counters.append(ev['counters'])
        if extra_of(ev) not in extras:
            extras.append(extra_of(ev))
    metrics = intel_metrics(intel_dir, models)
    metrics.update(amd_metrics(amd_dir, models))
    formulas = Pool()
    for name in names:
        for metric, formula in metrics.get(name, []):
            pool.add(metric)
            formulas.add(formula)
    if len(events) > 65535 or len(topics) > 255 or len(counters) > 255 \
            or len(extras) > 65535:
        sys.exit('genevents: the inputs outgrow the tables\' index types')
    boxes = expand(patterns, names)

    out = []
    w = out.append
    w('/*')
    w(' * Generated by tools/genevents.py: do not edit.')
    w(' *')
    w(' * Model-specific core events of Intel and AMD processors, from the')
    w(' * vendors\' published lists (names, codes, unit masks, counter masks,')
    w(' * counters and extra MSRs only: see kern/perfmon_evtab.h).')
    w(' *')
    w(' * Intel: github.com/intel/perfmon, %s.' % intel_source.strip())
    w(' *')
    w(' * The Intel lists are distributed under this licence:')
    w(' *')
    for line in license_text.strip().splitlines():
        w((' * ' + line).rstrip())
    w(' *')
    w(' * AMD: Linux, tools/perf/pmu-events/arch/x86/ (amdzen1 to amdzen6).')
    for line in amd_source.strip().splitlines():
        w((' *   ' + line).rstrip())
    w(' */')
    w('')
    w('#include <stddef.h>')
    w('#include <stdint.h>')
    w('')
    w('#include "kern/macros.h"')
    w('#include "kern/perfmon_evtab.h"')
    w('')
    w('static const char pmu_evtab_data_names[] =')
    for s in pool.strings:
        w('    "%s\\0"' % s)
    w('    ;')
    w('')
    w('static const char *const pmu_evtab_data_topics[] = {')
    for t in topics:
        w('    "%s",' % t)
    w('};')
    w('')
    w('static const uint64_t pmu_evtab_data_counters[] = {')
    for c in counters:
        w('    %#x,' % c)
    w('};')
    w('')
    w('/* { msr, nr_msrs, code2, nr_umasks, { umasks 2-4 }, value }; '
      '0: none. */')
    w('static const struct perfmon_evtab_extra pmu_evtab_data_extras[] = {')
    for msr, nr, code2, umasks, value in extras:
        alt = list(umasks[1:]) + [0] * (4 - len(umasks))
        w('    { %#x, %d, %#x, %d, { %#x, %#x, %#x }, %#x },'
          % (msr, nr, code2, len(umasks), alt[0], alt[1], alt[2], value))
    w('};')
    w('')
    w('/* { name, code, extra, umask, umask_ext, cmask, flags, counters, '
      'topic } */')
    w('static const struct perfmon_evtab_event pmu_evtab_data_events[] = {')
    for ev in events:
        w('    { %d, %#x, %d, %#x, %#x, %d, %#x, %d, %d },' % (
            pool.offsets[ev['name']], ev['codes'][0],
            extras.index(extra_of(ev)), ev['umasks'][0], ev['umask_ext'],
            ev['cmask'], ev['flags'], counters.index(ev['counters']),
            topics.index(ev['topic'])))
    w('};')
    w('')
    w('static const char pmu_evtab_data_formulas[] =')
    for s in formulas.strings:
        w('    "%s\\0"' % s)
    w('    ;')
    w('')
    for name in names:
        if not metrics.get(name):
            continue
        w('/* { name, formula } */')
        w('static const struct perfmon_evtab_metric pmu_evtab_data_m_%s[] = {'
          % cname(name))
        for metric, formula in metrics[name]:
            w('    { %d, %d },' % (pool.offsets[metric],
                                  formulas.offsets[formula]))
        w('};')
        w('')
    for name, rows in model_rows:
        w('static const uint16_t pmu_evtab_data_%s[] = {' % cname(name))
        for i in range(0, len(rows), 12):
            w('    ' + ' '.join('%d,' % r for r in rows[i:i + 12]))
        w('};')
        w('')
    w('static const struct perfmon_evtab_model pmu_evtab_data_models[] = {')
    for name, rows in model_rows:
        vendor = 1 if name.startswith('amdzen') else 0
        w('    { "%s", %d, pmu_evtab_data_%s, ARRAY_SIZE(pmu_evtab_data_%s),'
          % (name, vendor, cname(name), cname(name)))
        if metrics.get(name):
            w('      pmu_evtab_data_m_%s, ARRAY_SIZE(pmu_evtab_data_m_%s) },'
              % (cname(name), cname(name)))
        else:
            w('      NULL, 0 },')
    w('};')
    w('')
    w('/* { vendor, family, model_lo, model_hi, step_lo, step_hi, model } */')
    w('static const struct perfmon_evtab_match pmu_evtab_data_matches[] = {')
    for box in boxes:
        w('    { %d, %d, %#x, %#x, %d, %d, %d },' % box)
    w('};')
    w('')
    w('const struct perfmon_evtab_catalog pmu_evtab_catalog = {')
    w('    .names = pmu_evtab_data_names,')
    w('    .names_size = sizeof(pmu_evtab_data_names),')
    w('    .formulas = pmu_evtab_data_formulas,')
    w('    .topics = pmu_evtab_data_topics,')
    w('    .nr_topics = ARRAY_SIZE(pmu_evtab_data_topics),')
    w('    .counters = pmu_evtab_data_counters,')
    w('    .nr_counters = ARRAY_SIZE(pmu_evtab_data_counters),')
    w('    .extras = pmu_evtab_data_extras,')
    w('    .nr_extras = ARRAY_SIZE(pmu_evtab_data_extras),')
    w('    .events = pmu_evtab_data_events,')
    w('    .nr_events = ARRAY_SIZE(pmu_evtab_data_events),')
    w('    .models = pmu_evtab_data_models,')
    w('    .nr_models = ARRAY_SIZE(pmu_evtab_data_models),')
    w('    .matches = pmu_evtab_data_matches,')
    w('    .nr_matches = ARRAY_SIZE(pmu_evtab_data_matches),')
    w('};')
    return '\n'.join(out) + '\n'


# ---- reading a generated file back ---------------------------------------

def parse_c(text):
    """A generated file's tables: {model name: [event dict]} (in its
    order) and the match boxes, for the round-trip test."""
    def block(start):
        i = text.index(start)
        return text[i:text.index('};', i)]

    names_part = text[text.index('pmu_evtab_data_names[] ='):]
    names_part = names_part[:names_part.index(';')]
    strings = re.findall(r'"((?:[^"\\]|\\.)*)\\0"', names_part)
    offsets, off = {}, 0
    for s in strings:
        offsets[off] = s
        off += len(s) + 1
    topics = re.findall(r'"([^"]*)",', block('pmu_evtab_data_topics[]'))
    counters = [int(c, 0) for c in re.findall(
        r'(0x[0-9a-f]+|0),', block('pmu_evtab_data_counters[]'))]
    extras = [tuple(int(x, 0) for x in m) for m in re.findall(
        r'\{ (\w+), (\d+), (\w+), (\d+), \{ (\w+), (\w+), (\w+) \}, (\w+) \}',
        block('pmu_evtab_data_extras[]'))]
    rows = [tuple(int(x, 0) for x in m.split(', ')) for m in re.findall(
        r'\{ ([0-9a-fx, ]+) \},', block('pmu_evtab_data_events[]'))]
    events = []
    for (name, code, extra, umask, umask_ext, cmask, flags, ctr,
         topic) in rows:
        msr, nr, code2, nr_umasks, u2, u3, u4, value = extras[extra]
        events.append({
            'name': offsets[name],
            'codes': [code] + ([code2] if code2 else []),
            'umasks': [umask, u2, u3, u4][:max(nr_umasks, 1)],
            'umask_ext': umask_ext, 'cmask': cmask, 'flags': flags,
            'counters': counters[ctr],
            'msrs': list(range(msr, msr + nr)), 'msr_value': value,
            'topic': topics[topic],
        })
    fpart = text[text.index('pmu_evtab_data_formulas[] ='):]
    fpart = fpart[:fpart.index(';')]
    fstrings, foffsets, off = re.findall(r'"((?:[^"\\]|\\.)*)\\0"', fpart), {}, 0
    for f in fstrings:
        foffsets[off] = f
        off += len(f) + 1
    metrics = {}
    for m in re.finditer(r'pmu_evtab_data_m_(\w+)\[\] = \{([^}]*(?:\}[^;][^}]*)*)\};',
                         text):
        metrics[m.group(1)] = [(offsets[int(a)], foffsets[int(b)])
                               for a, b in re.findall(r'\{ (\d+), (\d+) \}',
                                                      m.group(2))]
    models = {}
    for m in re.finditer(r'\{ "([\w-]+)", (\d), pmu_evtab_data_(\w+), ',
                         block('pmu_evtab_data_models[]')):
        idx = [int(x) for x in re.findall(r'\d+', block(
            'pmu_evtab_data_%s[] =' % m.group(3)).split('=', 1)[1])]
        models[m.group(1)] = [events[i] for i in idx]
    boxes = [tuple(int(x, 0) for x in m) for m in re.findall(
        r'\{ (\d+), (\d+), (\w+), (\w+), (\d+), (\d+), (\d+) \}',
        block('pmu_evtab_data_matches[]'))]
    model_names = re.findall(r'\{ "([\w-]+)", \d, ',
                             block('pmu_evtab_data_models[]'))
    by_cname = {cname(n): n for n in model_names}
    metrics = {by_cname[k]: v for k, v in metrics.items()}
    return models, boxes, model_names, metrics


def main():
    ap = argparse.ArgumentParser(description='Generate the model event '
                                 'tables from Intel\'s and AMD\'s lists.')
    ap.add_argument('--intel', required=True, help='intel/perfmon checkout')
    ap.add_argument('--amd', required=True,
                    help="Linux's tools/perf/pmu-events/arch/x86")
    ap.add_argument('--intel-commit', help='upstream commit of --intel')
    ap.add_argument('--amd-commit', help='upstream commit of --amd')
    ap.add_argument('-o', '--output', help='file to write (default stdout)')
    ap.add_argument('--check', metavar='FILE',
                    help='compare with FILE instead of writing')
    args = ap.parse_args()
    with open(os.path.join(args.intel, 'LICENSE'), encoding='utf-8') as f:
        license_text = f.read()
    text = generate(args.intel, args.amd,
                    source_line(args.intel, args.intel_commit),
                    source_line(args.amd, args.amd_commit), license_text)
    if args.check:
        with open(args.check, encoding='utf-8') as f:
            if f.read() != text:
                sys.exit('genevents: %s differs from what the lists give: '
                         'regenerate it' % args.check)
        return
    if args.output:
        with open(args.output, 'w', encoding='utf-8') as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == '__main__':
    main()
