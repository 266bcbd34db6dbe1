#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Flame graphs for tools/perfdata: folded stacks ({"comm;root;...;leaf":
# samples}) to one self-contained SVG file.  Python 3 standard library only.
#

import zlib

# One SVG file that needs nothing else: a box per frame (the thread's name at
# the bottom, the sampled function on top), as wide as the samples that went
# through it, its children above it in name order; a title on each box with
# its count and share; a script for click-to-zoom (a box fills the width,
# its ancestors too, the rest is hidden) and search (a regular expression:
# matching boxes turn purple, their share of the samples is said).  The
# layout is Brendan Gregg's flame graph, written anew here.

FLAME_WIDTH = 1200          # pixels, the boxes' span
FLAME_FRAME = 16            # pixels, a box's height
FLAME_TOP = 48              # room for the title and the buttons
FLAME_BOTTOM = 24           # room for the details line
FLAME_PAD = 10
FLAME_CHAR = 7              # pixels per character at the font size used

FLAME_SCRIPT = r"""
var W = %(width)d, PAD = %(pad)d, CHAR = %(char)d;
var boxes = [], zoomed = null, details, matched;
function init() {
  var gs = document.querySelectorAll('g.f');
  for (var i = 0; i < gs.length; i++) {
    var g = gs[i];
    boxes.push({g: g, x: +g.dataset.x, w: +g.dataset.w, d: +g.dataset.d,
                name: g.dataset.name, n: +g.dataset.n, title: g.dataset.title,
                rect: g.querySelector('rect'), text: g.querySelector('text'),
                fill: g.querySelector('rect').getAttribute('fill')});
    g.onclick = (function (b) { return function () { zoom(b); }; })(boxes[i]);
    g.onmouseover = (function (b) {
      return function () { details.textContent = b.title; };
    })(boxes[i]);
    g.onmouseout = function () { details.textContent = ' '; };
  }
  details = document.getElementById('details');
  matched = document.getElementById('matched');
  draw(0, 1);
}
function fit(b, px) {
  var n = Math.floor((px - 6) / CHAR);
  if (n < 3) { return ''; }
  return b.name.length <= n ? b.name : b.name.substr(0, n - 2) + '..';
}
function draw(x0, w0) {
  for (var i = 0; i < boxes.length; i++) {
    var b = boxes[i], inside = b.x >= x0 - 1e-9 && b.x + b.w <= x0 + w0 + 1e-9;
    var below = zoomed !== null && b.d < zoomed.d && b.x <= x0 + 1e-9
                && b.x + b.w >= x0 + w0 - 1e-9;
    if (!inside && !below) { b.g.style.display = 'none'; continue; }
    b.g.style.display = '';
    var x = below ? 0 : (b.x - x0) / w0 * W, w = below ? W : b.w / w0 * W;
    b.rect.setAttribute('x', PAD + x);
    b.rect.setAttribute('width', Math.max(w - 0.5, 0.1));
    b.text.setAttribute('x', PAD + x + 3);
    b.text.textContent = fit(b, w);
  }
}
function zoom(b) {
  zoomed = b.d === 0 && b.w === 1 ? null : b;
  document.getElementById('unzoom').style.opacity = zoomed ? 1 : 0.3;
  draw(b.x, b.w);
}
function unzoom() {
  zoomed = null;
  document.getElementById('unzoom').style.opacity = 0.3;
  draw(0, 1);
}
function search() {
  var re = prompt('Search for (a regular expression; empty: clear):', '');
  if (re === null) { return; }
  var rx, hit = [], sum = 0;
  try { rx = new RegExp(re); } catch (e) { alert(e); return; }
  for (var i = 0; i < boxes.length; i++) {
    var b = boxes[i], on = re !== '' && rx.test(b.name);
    b.rect.setAttribute('fill', on ? 'rgb(230,0,230)' : b.fill);
    if (on) { hit.push(b); }
  }
  /* A match inside another is not counted twice. */
  hit.sort(function (a, b) { return a.x - b.x || a.d - b.d; });
  var end = -1;
  for (var j = 0; j < hit.length; j++) {
    if (hit[j].x >= end - 1e-12) { sum += hit[j].w; end = hit[j].x + hit[j].w; }
  }
  matched.textContent = re === '' ? ' '
    : 'Matched: ' + (100 * sum).toFixed(1) + '%%';
}
"""


class FlameNode:
    """A frame: its name, its samples (through it), its children by name."""

    def __init__(self, name):
        self.name = name
        self.samples = 0
        self.children = {}


def flame_tree(stacks):
    """The tree of {stack: samples}, under a root named "all"."""
    root = FlameNode('all')
    for stack, n in stacks.items():
        root.samples += n
        node = root
        for frame in stack.split(';'):
            node = node.children.setdefault(frame, FlameNode(frame))
            node.samples += n
    return root


def flame_color(name):
    """A warm colour that depends on the name only, so that a function
    keeps its colour in every graph."""
    h = zlib.crc32(name.encode())
    return 'rgb(%d,%d,%d)' % (205 + h % 50, 80 + (h >> 8) % 130,
                              (h >> 16) % 55)


def xml_escape(text):
    return (text.replace('&', '&amp;').replace('<', '&lt;')
            .replace('>', '&gt;').replace('"', '&quot;'))


def flamegraph_svg(stacks, title):
    """The SVG text of a flame graph of {stack: samples}."""
    root = flame_tree(stacks)
    total = max(root.samples, 1)
    boxes = []

    def depth_of(node):
        return 1 + max((depth_of(c) for c in node.children.values()),
                       default=0)

    levels = depth_of(root)
    height = FLAME_TOP + levels * FLAME_FRAME + FLAME_BOTTOM
    pending = [(root, 0, 0)]             # node, first sample, depth
    while pending:
        node, first, depth = pending.pop()
        boxes.append((node, first, depth))
        at = first
        for name in sorted(node.children):
            child = node.children[name]
            pending.append((child, at, depth + 1))
            at += child.samples

    out = ['<?xml version="1.0" standalone="no"?>',
           '<svg version="1.1" xmlns="http://www.w3.org/2000/svg" '
           'width="%d" height="%d" viewBox="0 0 %d %d" onload="init()">'
           % (FLAME_WIDTH + 2 * FLAME_PAD, height,
              FLAME_WIDTH + 2 * FLAME_PAD, height),
           '<style>text { font-family: monospace; font-size: 12px; } '
           'g.f:hover rect { stroke: black; stroke-width: 0.5; } '
           'g.f { cursor: pointer; } .button { cursor: pointer; }</style>',
           '<script type="text/ecmascript"><![CDATA[%s]]></script>'
           % (FLAME_SCRIPT % {'width': FLAME_WIDTH, 'pad': FLAME_PAD,
                              'char': FLAME_CHAR}),
           '<rect x="0" y="0" width="100%" height="100%" '
           'fill="rgb(248,248,240)"/>',
           '<text x="%d" y="20" text-anchor="middle" '
           'style="font-size: 15px">%s</text>'
           % (FLAME_PAD + FLAME_WIDTH // 2, xml_escape(title)),
           '<text id="unzoom" class="button" x="%d" y="38" '
           'style="opacity: 0.3" onclick="unzoom()">Reset zoom</text>'
           % FLAME_PAD,
           '<text id="search" class="button" x="%d" y="38" '
           'text-anchor="end" onclick="search()">Search</text>'
           % (FLAME_PAD + FLAME_WIDTH),
           '<text id="matched" x="%d" y="%d" text-anchor="end"> </text>'
           % (FLAME_PAD + FLAME_WIDTH, height - 8),
           '<text id="details" x="%d" y="%d"> </text>'
           % (FLAME_PAD, height - 8)]
    for node, first, depth in boxes:
        x = first / total
        w = node.samples / total
        label = '%s (%d sample%s, %.2f%%)' % (
            node.name, node.samples, '' if node.samples == 1 else 's',
            100.0 * node.samples / total)
        px, pw = FLAME_PAD + x * FLAME_WIDTH, w * FLAME_WIDTH
        y = height - FLAME_BOTTOM - (depth + 1) * FLAME_FRAME
        n = int((pw - 6) // FLAME_CHAR)
        text = '' if n < 3 else (node.name if len(node.name) <= n
                                 else node.name[:n - 2] + '..')
        out.append('<g class="f" data-x="%.9f" data-w="%.9f" data-d="%d" '
                   'data-n="%d" data-name="%s" data-title="%s">'
                   '<title>%s</title>'
                   '<rect x="%.2f" y="%d" width="%.2f" height="%d" '
                   'fill="%s" rx="2"/>'
                   '<text x="%.2f" y="%d">%s</text></g>'
                   % (x, w, depth, node.samples, xml_escape(node.name),
                      xml_escape(label), xml_escape(label), px, y,
                      max(pw - 0.5, 0.1), FLAME_FRAME - 1,
                      flame_color(node.name), px + 3, y + FLAME_FRAME - 4,
                      xml_escape(text)))
    out.append('</svg>')
    return '\n'.join(out) + '\n'
