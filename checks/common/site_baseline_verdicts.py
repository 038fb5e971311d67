"""The site baseline's verdict on each metric of a test, and the
performance stage's verdict: the one judge (config/results/rows/judge.py)
on every value the test measured; BenchmarkTest fails the test where it
says 'fail'. No ReFrame here.

With ``CLUSTERPROOF_BASELINES`` set, every metric that has a reference key
(sku_references.py) and a baseline entry for its cluster, test class, key
and device is checked against the entry's two-sided bounds, beside the
published reference (both are checked; neither replaces the other). A
metric outside them fails the test case with a reason naming the basis
(``site baseline: triad_bw 10382.9 MB/s: 16.1% below ...``), and its row
says ``fail`` with ``verdict_basis = site_baseline`` (each measurement
carries its baseline verdict: BenchmarkTest.test_facts reads
:meth:`BenchmarkTest.site_baseline_verdicts`).
"""
from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys

from . import site_baseline

JUDGE_FILE = os.path.realpath(os.path.join(
    os.path.dirname(__file__), '..', '..', 'config', 'results', 'rows',
    'judge.py'))
_judges = []


def the_judge():
    """The judge module the row builder asks, found by its file: ReFrame
    loads the configuration (and with it the builder) under a name of its
    own, ``config@<hash>.results.rows.judge``, and the checks under another,
    so an import from here would make a second copy of the one judge."""
    if not _judges:
        found = [module for module in list(sys.modules.values())
                 if (getattr(module, '__file__', None) or '').endswith(
                     'judge.py')
                 and os.path.realpath(module.__file__) == JUDGE_FILE]
        if not found:       # no configuration loaded: load it once
            spec = importlib.util.spec_from_file_location(
                'clusterproof_row_judge', JUDGE_FILE)
            found = [importlib.util.module_from_spec(spec)]
            spec.loader.exec_module(found[0])
        _judges.append(found[0])
    return _judges[0]


def baseline_verdicts(perfvalues: dict, keys: dict, devices: dict,
                      cluster: str, test: str) -> dict[str, dict]:
    """Perf variable -> what the site baseline says of its value:
    {'fail', 'reason', 'value', 'lower', 'upper', 'source', 'spread'}; only
    the variables that have an entry. *perfvalues* as ReFrame's
    (``'target:var'`` -> (value, ...)), *keys* and *devices* by perf
    variable."""
    layer = site_baseline.current()
    if not layer.entries:
        return {}
    found = {}
    for name, info in perfvalues.items():
        var, value = name.split(':')[-1], info[0]
        if value is None or var not in keys:
            continue
        entry = layer.find(cluster, test, keys[var], devices.get(var))
        if entry is None:
            continue
        # the row carries the entry's source (reference_source)
        why = site_baseline.missed(float(value), entry, source=False)
        unit = f' {entry.unit}' if entry.unit else ''
        found[var] = {
            'fail': bool(why),
            'reason': (f'{site_baseline.LABEL}: {var} {value:g}{unit}: '
                       f'{why}' if why else ''),
            'value': entry.value, 'lower': entry.lower,
            'upper': entry.upper, 'source': entry.source,
            # the healthy spread relative to the value: peers' floor
            # (scripts/comparison/peers.py, row column verdict_spread)
            'spread': (entry.spread / abs(entry.value)
                       if entry.value and entry.spread else None)}
    return found


def judged(test) -> dict[str, dict]:
    """:func:`baseline_verdicts` of *test*'s values, judged once per set of
    values (its ``site_baseline_judged``): the performance stage and the
    rows ask alike. Known once the performance stage evaluated them."""
    values = dict(test.perfvalues or {})
    measured = tuple((name, info[0]) for name, info in values.items())
    if test.site_baseline_judged and \
            test.site_baseline_judged[0] == measured:
        return test.site_baseline_judged[1]
    found = baseline_verdicts(
        values, test.metric_reference_keys, test.metric_devices,
        site_baseline.cluster_of(test.current_system.name),
        test.display_name.split(' ')[0])
    test.site_baseline_judged = [measured, found]
    return found


def failures(measured) -> list[str]:
    """The one judge's reasons for every failing value of *measured* (the
    test's Measurements), each once; a health sample never fails a job."""
    judge = the_judge()
    failed = []
    for measurement in measured:
        if measurement.sample is not None:
            continue
        verdict = judge.measured_verdict(dataclasses.asdict(measurement))
        if verdict['check_perf_result'] == 'fail' and \
                verdict['check_fail_reason'] not in failed:
            failed.append(verdict['check_fail_reason'])
    return failed
