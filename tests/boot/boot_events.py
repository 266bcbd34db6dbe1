#!/usr/bin/env python3
#
# Copyright (c) 2026 The Tally authors.  BSD-2-Clause.
#
#
# Boot test of the model-specific event tables under TCG, where QEMU's
# named CPU models set the vendor, family and model but show no PMU: on
# Skylake-Server (GenuineIntel 6-55-4) and EPYC-Milan (AuthenticAMD
# 19h-01h) `perfmon list` shows that model's events with their encodings
# and counters (and `perfmon list -j` all of them, parsed as JSON),
# `perfmon list --model` shows the other vendor's, an event
# the list names (any case, with modifiers) or perf's cpu/.../ terms
# parse and count as <not supported> rather than as unknown events, a
# misspelt name gets the closest names of the model, a bad term is
# refused pointing at the term, and `perfmon list metrics` and `-M` name
# the model's metrics (TopDown level 1 on Skylake-SP).  Prints TAP; exits 1 on any failure.
#

import json
import os
import re
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', '..', 'tools'))

import tallyqemu  # noqa: E402

CMD_TIMEOUT = 60
BAD_RE = re.compile(r'panic: |backtrace:|unclaimed NMI')


def expect(out, *patterns):
    for p in patterns:
        if not re.search(p, out):
            return 'no %r in:\n%s' % (p, out)
    return None


def absent(out, *patterns):
    for p in patterns:
        if re.search(p, out):
            return 'unexpected %r in:\n%s' % (p, out)
    return None


def metric_json(out):
    """-j -M frontend_bound: each object parses, the metric is its first
    event's, with no value (no PMU under TCG)."""
    objs = [json.loads(line) for line in out.splitlines()
            if line.startswith('{')]
    by_event = {o.get('event'): o for o in objs}
    first = by_event.get('IDQ_UOPS_NOT_DELIVERED.CORE')
    if first is None or len(objs) != 2:
        return 'want the metric\'s two events in:\n%s' % out
    if first['metric-unit'] != 'frontend_bound' \
            or first['metric-value'] is not None:
        return 'metric not in its first event\'s object: %r' % first
    return None


def list_json(sh):
    """perfmon list -j parses, and holds the model's events as perfmon
    list shows them: all of them (the count of its heading), with their
    topic, encoding and counters."""
    out = sh.run('perfmon list -j')
    try:
        events = json.loads(out)
    except ValueError as e:
        return 'perfmon list -j: %s:\n%s' % (e, out[:2000])
    model = [e for e in events if e['Unit'] == 'intel']
    ev = {e['EventName']: e for e in model}.get('MEM_LOAD_RETIRED.L3_MISS')
    want = {'Topic': 'MEM_LOAD_RETIRED', 'Encoding': 'event=0xd1,umask=0x20',
            'Counters': '0-3', 'Notes': 'precise'}
    if ev is None or any(ev.get(k) != v for k, v in want.items()):
        return 'perfmon list -j: MEM_LOAD_RETIRED.L3_MISS is %r' % ev
    m = re.search(r'skylakex events \(GenuineIntel\): (\d+)',
                  sh.run('perfmon list INST_RETIRED.ANY'))
    if m is None or int(m.group(1)) != len(model):
        return 'perfmon list -j: %d model events, perfmon list says %s' \
            % (len(model), m and m.group(1))
    return None


def session(t, cpu, checks):
    with t.shell(cpu, CMD_TIMEOUT, kvm=False, tcg_cpu=cpu) as sh:
        sh.step('%s: reaches the prompt' % cpu, sh.prompt)
        for desc, line, check in checks:
            sh.step('%s: %s' % (cpu, desc),
                    lambda line=line, check=check:
                    check(sh) if line is None else check(sh.run(line)))
        sh.step('%s: no crash or fault reported' % cpu,
                lambda: absent(sh.q.output, BAD_RE.pattern))
        sh.step('%s: poweroff exits with 33' % cpu, sh.poweroff)


def main():
    t = tallyqemu.BootTest(__doc__)
    session(t, 'Skylake-Server', [
        ('perfmon info names the table chosen by family, model, stepping',
         'perfmon info',
         lambda out: expect(out, r'cpu: GenuineIntel family 0x6 model 0x55 '
                                 r'stepping 0x4',
                            r'model events: skylakex, \d+ events, \d+ '
                            r'metrics')),
        ('perfmon list shows the Skylake-SP events, grouped',
         'perfmon list mem_load_retired.l3',
         lambda out: expect(
             out, r'skylakex events \(GenuineIntel\): \d{3,}, <not supported>',
             r'(?m)^ MEM_LOAD_RETIRED:$',
             r'MEM_LOAD_RETIRED\.L3_MISS +event=0xd1,umask=0x20 +0-3 +'
             r'precise')),
        ('perfmon list -j has all the model\'s events, as perfmon list '
         'shows them', None, list_json),
        ('fixed counters and extra MSRs are listed',
         'perfmon list OFFCORE_RESPONSE.ALL_DATA_RD.L3_MISS.ANY_SNOOP',
         lambda out: expect(out, r'msr 0x1a6\+=0x')),
        ('perfmon list --model shows an AMD table',
         'perfmon list --model AuthenticAMD-25-1 ex_ret_instr',
         lambda out: expect(out, r'amdzen3 events \(AuthenticAMD\)',
                            r'ex_ret_instr +event=0xc0,umask=0 +0-5')),
        ('perfmon list --model refuses an unknown model',
         'perfmon list --model GenuineIntel-6-1',
         lambda out: expect(out, r"no event list for 'GenuineIntel-6-1'")),
        ('a named event with a modifier is <not supported>, not unknown',
         'perfmon stat -e mem_load_retired.L3_MISS:u,INST_RETIRED.ANY spin 1',
         lambda out: expect(out, r'<not supported> +mem_load_retired\.L3_MISS'
                                 r':u', r'<not supported> +INST_RETIRED\.ANY')
         or absent(out, 'unknown event')),
        ('perf terms are <not supported>, named by name=',
         'perfmon stat -e cpu/event=0xd1,umask=0x20,cmask=1,inv,name=l3m/ '
         'spin 1',
         lambda out: expect(out, r'<not supported> +l3m')),
        ('a bad term is refused, pointing at it',
         'perfmon stat -e cycles,cpu/event=0xd1,bogus=1/ spin 1',
         lambda out: expect(out, r"unknown term .*\('bogus=1'\) at "
                                 r"character 23")),
        ('perfmon list metrics shows TopDown level 1 and the generic ones',
         'perfmon list metrics',
         lambda out: expect(out, r'(?m)^  ipc +instructions / cycles$',
                            r'skylakex metrics \(GenuineIntel\), '
                            r'<not supported>',
                            r'(?m)^  frontend_bound +\(100 \* '
                            r'\(IDQ_UOPS_NOT_DELIVERED\.CORE /',
                            r'(?m)^  retiring ', r'(?m)^  bad_speculation ',
                            r'(?m)^  backend_bound ')),
        ('-M names the model\'s metric beside its first event, '
         '<not supported>',
         'perfmon stat -M frontend_bound,ipc spin 1',
         lambda out: expect(out, r'(?m)^ +<not supported> +'
                                 r'IDQ_UOPS_NOT_DELIVERED\.CORE +'
                                 r'# <not supported> frontend_bound$',
                            r'(?m)^ +<not supported> +CPU_CLK_UNHALTED\.'
                            r'THREAD$',
                            r'(?m)^ +<not supported> +instructions +'
                            r'# <not supported> ipc$')),
        ('-M -x: the metric in perf\'s metric-value and metric-unit fields',
         'perfmon stat -x, -M frontend_bound spin 1',
         lambda out: expect(out, r'(?m)^<not supported>,,IDQ_UOPS_NOT_'
                                 r'DELIVERED\.CORE,0,[\d.]+,,frontend_bound$',
                            r'(?m)^<not supported>,,CPU_CLK_UNHALTED\.THREAD,'
                            r'0,[\d.]+,,$')),
        ('-M -j: the metric in the first event\'s object, null without '
         'a value',
         'perfmon stat -j -M frontend_bound spin 1', metric_json),
        ('-M refuses a metric the model does not have, by name',
         'perfmon stat -M tma_info_nonesuch spin 1',
         lambda out: expect(out, r"unknown metric 'tma_info_nonesuch' on "
                                 r"skylakex")),
        ('a misspelt name gets the model\'s closest names',
         'perfmon stat -e mem_load_retired.l3_misss spin 1',
         lambda out: expect(out, r"unknown event 'mem_load_retired\.l3_misss'"
                                 r"; did you mean 'MEM_LOAD_RETIRED\.L3_MISS'")),
    ])
    session(t, 'EPYC-Milan', [
        ('perfmon info names the Zen 3 table',
         'perfmon info',
         lambda out: expect(out, r'cpu: AuthenticAMD family 0x19 model 0x1 ',
                            r'model events: amdzen3, ')),
        ('perfmon list shows the Zen 3 events, grouped',
         'perfmon list ls_dmnd_fills_from_sys',
         lambda out: expect(
             out, r'amdzen3 events \(AuthenticAMD\): \d{3,}',
             r'(?m)^ memory:$',
             r'ls_dmnd_fills_from_sys\.mem_io_remote +event=0x43,umask=0x40'
             r' +0-5')),
        ('perfmon list --model shows an Intel table by CPUID',
         'perfmon list --model GenuineIntel-6-55-7 INST_RETIRED.ANY',
         lambda out: expect(out, r'cascadelakex events',
                            r'INST_RETIRED\.ANY +event=0,umask=0x1 +fixed 0')),
        ('a named event is <not supported>, not unknown',
         'perfmon stat -e LS_DMND_FILLS_FROM_SYS.MEM_IO_REMOTE:k spin 1',
         lambda out: expect(out, r'<not supported> +LS_DMND_FILLS_FROM_SYS'
                                 r'\.MEM_IO_REMOTE:k')
         or absent(out, 'unknown event')),
        ('-M names Zen 3\'s metrics',
         'perfmon stat -M branch_misprediction_ratio spin 1',
         lambda out: expect(out, r'(?m)^ +<not supported> +ex_ret_brn_misp '
                                 r'+# <not supported> '
                                 r'branch_misprediction_ratio$')),
        ('another vendor\'s name stays unknown',
         'perfmon stat -e MEM_LOAD_RETIRED.L3_MISS spin 1',
         lambda out: expect(out, r"unknown event 'MEM_LOAD_RETIRED")),
    ])
    return t.finish()


if __name__ == '__main__':
    sys.exit(main())
