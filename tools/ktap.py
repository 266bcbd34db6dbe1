#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# KTAP/TAP parser for noisy serial logs.  The kernel's test mode prints KTAP
# version 1 on the same console as everything else, so the report is found by
# its "KTAP version N" (or "TAP version N") line, possibly behind a constant
# prefix or a "[  1.234]" timestamp, and every line that is not KTAP syntax is
# ignored.  Nested suites are recognized by deeper indentation; their results
# belong to the next result line of the enclosing level.  Structural problems
# (no version line, no plan, fewer results than planned, out-of-order numbers)
# are reported as errors rather than exceptions, so that a crashed run still
# yields the results it printed.
#
# Library use: report = ktap.parse(text); report.errors, report.results,
# report.leaves(), report.ok.  Command line: tools/ktap.py LOG prints one line
# per leaf test and exits 1 if the run failed.
#

import dataclasses
import re
import sys

_VERSION_RE = re.compile(r'(K?TAP) version (\d+)\s*$')
_TIMESTAMP_RE = re.compile(r'^\s*\[\s*\d+(?:\.\d+)?\]\s?')
_PLAN_RE = re.compile(r'^1\.\.(\d+)\s*(?:#.*)?$')
_RESULT_RE = re.compile(r'^(not ok|ok)\s+(\d+)\b\s*(?:-\s*)?(.*)$')
_DIRECTIVE_RE = re.compile(r'(?:^|\s)#\s*(SKIP|TODO)\b\s*(.*)$', re.IGNORECASE)
_SUBTEST_RE = re.compile(r'^#\s*Subtest:\s*(.*)$')
_DIAG_RE = re.compile(r'^#\s?(.*)$')


@dataclasses.dataclass
class Result:
    """One result line, with the nested suite it closes, if any."""
    number: int
    name: str
    ok: bool
    skip: bool = False
    skip_reason: str = ''
    diagnostics: list = dataclasses.field(default_factory=list)
    subtests: list = dataclasses.field(default_factory=list)

    @property
    def passed(self):
        """A skipped test neither passed nor failed: it is not a failure."""
        return self.ok or self.skip


@dataclasses.dataclass
class Report:
    """Everything parsed from one log."""
    version: str = ''
    results: list = dataclasses.field(default_factory=list)
    errors: list = dataclasses.field(default_factory=list)
    diagnostics: list = dataclasses.field(default_factory=list)

    def leaves(self):
        """Flatten to (path, result) pairs, path like "suite.test".

        A suite appears through its subtests; it also appears itself when it
        failed although none of its subtests did (e.g. its setup failed).
        """
        out = []

        def walk(results, prefix):
            for r in results:
                path = prefix + r.name if r.name else prefix + str(r.number)
                if not r.subtests:
                    out.append((path, r))
                    continue
                before = len(out)
                walk(r.subtests, path + '.')
                child_failed = any(not x.passed for _, x in out[before:])
                if not r.passed and not child_failed:
                    out.append((path, r))
        walk(self.results, '')
        return out

    @property
    def ok(self):
        return (not self.errors and bool(self.version)
                and all(r.passed for _, r in self.leaves()))


class _Frame:
    """One (sub)suite being parsed: its indentation and what it has seen."""

    def __init__(self, indent, name=''):
        self.indent = indent
        self.name = name
        self.plan = None
        self.results = []
        self.pending_diags = []
        self.pending_child = None   # finished nested suite awaiting its line
        self.has_version = False

    def fresh(self):
        return self.plan is None and not self.results


def _split_lines(text):
    return text.replace('\r\n', '\n').replace('\r', '\n').split('\n')


def _find_start(lines):
    """Return (index of the version line, prefix stripper) or (None, None)."""
    for i, line in enumerate(lines):
        m = _VERSION_RE.search(line)
        if not m:
            continue
        prefix = line[:m.start()]
        if prefix.strip() == '':
            # Pure indentation in front of the top level: keep it as part of
            # the line so relative indentation still works.
            return i, m.group(1), int(m.group(2)), lambda s: s
        ts = _TIMESTAMP_RE.match(prefix)
        if ts:
            # A timestamp differs on every line; what follows it must not.
            rest = prefix[ts.end():]

            def strip_ts(s, rest=rest):
                t = _TIMESTAMP_RE.match(s)
                if not t or not s.startswith(rest, t.end()):
                    return None
                return s[t.end() + len(rest):]
            return i, m.group(1), int(m.group(2)), strip_ts

        def strip_prefix(s, p=prefix):
            return s[len(p):] if s.startswith(p) else None
        return i, m.group(1), int(m.group(2)), strip_prefix
    return None, None, None, None


def _indent_of(s):
    return len(s) - len(s.lstrip(' \t'))


def _frame_path(stack, frame):
    names = [f.name for f in stack if f.name]
    if frame.name and frame not in stack:
        names.append(frame.name)
    return '.'.join(names)


def _close(frame, report, where):
    """Check a finished frame's plan against its results."""
    label = (where + ': ') if where else ''
    last = frame.results[-1].number if frame.results else 0
    if frame.plan is None:
        report.errors.append(label + 'missing plan')
    elif len(frame.results) < frame.plan:
        report.errors.append('%scrashed after test %d of %d'
                             % (label, last, frame.plan))
    elif len(frame.results) > frame.plan:
        report.errors.append('%s%d results but the plan says %d'
                             % (label, len(frame.results), frame.plan))


def parse(text):
    """Parse the first KTAP/TAP report found in text into a Report."""
    report = Report()
    lines = _split_lines(text)
    start, kind, version, strip = _find_start(lines)
    if start is None:
        report.errors.append('no KTAP/TAP version line found')
        return report
    report.version = '%s version %d' % (kind, version)
    root = _Frame(_indent_of(strip(lines[start]) or ''))
    root.has_version = True
    stack = [root]

    def pop():
        frame = stack.pop()
        parent = stack[-1]
        _close(frame, report, _frame_path(stack, frame) or 'subtest')
        parent.pending_diags.extend(frame.pending_diags)
        if parent.pending_child is not None:
            report.errors.append('%s: subtest without a result line'
                                 % (_frame_path(stack, parent.pending_child)
                                    or 'subtest'))
        parent.pending_child = frame

    for raw in lines[start + 1:]:
        line = strip(raw)
        if line is None:
            continue
        line = line.rstrip()
        body = line.lstrip(' \t')
        if not body:
            continue
        indent = _indent_of(line)

        if _VERSION_RE.match(body):
            if indent <= root.indent:
                report.errors.append('second version line at top level '
                                     '(guest restarted?)')
                break
            while len(stack) > 1 and stack[-1].indent > indent:
                pop()
            top = stack[-1]
            if top.indent == indent and top.fresh() and not top.has_version \
                    and len(stack) > 1:
                top.has_version = True
                continue
            if top.indent == indent and len(stack) > 1:
                pop()
            frame = _Frame(indent)
            frame.has_version = True
            stack.append(frame)
            continue

        m = _SUBTEST_RE.match(body)
        if m:
            top = stack[-1]
            if indent > top.indent:
                stack.append(_Frame(indent, m.group(1).strip()))
            elif indent == top.indent and len(stack) > 1 and top.fresh():
                top.name = m.group(1).strip()
            else:
                top.pending_diags.append(body[1:].strip())
            continue

        m = _DIAG_RE.match(body)
        if m:
            # Diagnostics never change the structure: attach them to the
            # deepest open suite whose indentation they reach.
            target = root
            for f in stack:
                if f.indent <= indent:
                    target = f
            target.pending_diags.append(m.group(1))
            continue

        plan = _PLAN_RE.match(body)
        result = _RESULT_RE.match(body)
        if not plan and not result:
            continue    # noise from the rest of the kernel

        if indent < root.indent:
            continue    # not ours: the report is indented, this is not
        while len(stack) > 1 and stack[-1].indent > indent:
            pop()
        top = stack[-1]
        if indent > top.indent:
            stack.append(_Frame(indent))
            top = stack[-1]

        if plan:
            n = int(plan.group(1))
            if top.plan is not None:
                report.errors.append('%s: second plan line'
                                     % (_frame_path(stack, top) or 'top'))
            elif top.results and n != len(top.results):
                top.plan = n    # trailing plan; _close reports the mismatch
            else:
                top.plan = n
            continue

        ok = result.group(1) == 'ok'
        number = int(result.group(2))
        rest = result.group(3)
        skip, reason = False, ''
        d = _DIRECTIVE_RE.search(rest)
        if d:
            rest = rest[:d.start()]
            if d.group(1).upper() == 'SKIP':
                skip, reason = True, d.group(2).strip()
        name = rest.strip()
        if not name and skip:
            name = reason
        expected = len(top.results) + 1
        if number != expected:
            report.errors.append('%s: test number %d out of order '
                                 '(expected %d)'
                                 % (_frame_path(stack, top) or 'top',
                                    number, expected))
        r = Result(number=number, name=name, ok=ok, skip=skip,
                   skip_reason=reason, diagnostics=top.pending_diags)
        top.pending_diags = []
        if top.pending_child is not None:
            child = top.pending_child
            r.subtests = child.results
            if not r.name:
                r.name = child.name
            top.pending_child = None
        top.results.append(r)

    while len(stack) > 1:
        pop()
    if root.pending_child is not None:
        report.errors.append('%s: subtest without a result line'
                             % (root.pending_child.name or 'subtest'))
    _close(root, report, '')
    report.results = root.results
    report.diagnostics = root.pending_diags
    return report


def main(argv):
    if len(argv) != 2:
        print('usage: %s LOG' % argv[0], file=sys.stderr)
        return 2
    with open(argv[1], encoding='utf-8', errors='replace') as f:
        report = parse(f.read())
    for path, r in report.leaves():
        status = 'ok' if r.ok else 'not ok'
        extra = ' # SKIP ' + r.skip_reason if r.skip else ''
        print('%s %s%s' % (status, path, extra))
    for e in report.errors:
        print('error: ' + e)
    return 0 if report.ok else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
